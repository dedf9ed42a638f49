// `clustersim platform show NAME --gpus N [--xml FILE]` and `clustersim platform list`
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "platforms/cluster_spec.hpp"
#include "platforms/summary.hpp"
#include "platforms/topology.hpp"
#include "sim/spec_error.hpp"
#include "tools/commands.hpp"

namespace clustersim::tools {
namespace {

struct ShowArgs {
  std::string platform;
  int gpus = 0;
  std::string xml;
};

// The platform the command line names: an unknown catalog name is the command line's error,
// a platform file's own errors stay at their file and line.
platforms::PlatformSpec command_line_platform(const std::string& name) {
  try {
    return platforms::load_platform(name);
  } catch (const SpecError& e) {
    if (e.field() != "platform" || e.line() != 0) throw;
    throw SpecError("<command line>", 0, "platform", e.reason());
  }
}

int show_command(const ShowArgs& args) {
  const platforms::PlatformSpec spec = command_line_platform(args.platform);
  const std::string problem = platforms::Topology::check(spec, args.gpus);
  if (!problem.empty()) throw SpecError("<command line>", 0, "--gpus", problem);
  // Every check before the summary, so that a refused --xml prints nothing else.
  if (!args.xml.empty() && args.gpus > platforms::kMaxXmlGpus) {
    throw SpecError("<command line>", 0, "--xml",
                    "the XML platform lists every route; it is written for at most " +
                        std::to_string(platforms::kMaxXmlGpus) + " GPUs");
  }
  std::ofstream out;
  if (!args.xml.empty()) {
    out.open(args.xml);
    if (!out) throw std::runtime_error("cannot write --xml file '" + args.xml + "'");
  }
  std::cout << platforms::format_summary(platforms::summarize(spec, args.gpus));
  if (args.xml.empty()) return 0;
  platforms::write_simgrid_xml(spec, args.gpus, out);
  out.close();
  if (!out) throw std::runtime_error("failed writing --xml file '" + args.xml + "'");
  std::cout << "xml               " << args.xml << " (SimGrid 3.32 platform, Full routing)\n";
  return 0;
}

int list_command() {
  for (const auto& name : platforms::catalog_platforms()) {
    std::cout << name << "  " << platforms::find_platform(name).description << "\n";
  }
  return 0;
}

}  // namespace

void register_platform_command(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand("platform", "Inspect the cluster platforms (docs/platforms.md)");
  cmd->require_subcommand(1);

  auto args = std::make_shared<ShowArgs>();
  CLI::App* show = cmd->add_subcommand(
      "show", "Print a cluster's topology: GPUs, nodes, NVLink domains, fabric tiers and switches, "
              "links per tier, per-GPU injection and bisection bandwidth, oversubscription");
  show->add_option("platform", args->platform, "Catalog name (see 'platform list') or a platform YAML file")
      ->required();
  show->add_option("--gpus", args->gpus, "Number of GPUs: a multiple of the GPUs per node, or a divisor of it (part of one node), up to what the fabric holds")
      ->required()
      ->check(decimal_integer());
  show->add_option("--xml", args->xml,
                   "Also write an equivalent SimGrid XML platform to FILE (at most 256 GPUs)");
  show->callback([args, &exit_code] { exit_code = run_guarded([&] { return show_command(*args); }); });

  CLI::App* list = cmd->add_subcommand("list", "List the catalog platforms");
  list->callback([&exit_code] { exit_code = run_guarded(list_command); });
}

}  // namespace clustersim::tools
