// clustersim: what will this training job do on that cluster?
#include <CLI/CLI.hpp>

#include <iostream>
#include <set>
#include <string>

#include "tools/commands.hpp"

namespace {

// CLI11 answers a command that requires a subcommand and is given an unknown word with "A
// subcommand is required", naming neither the word nor the commands. This names both: for each
// level that requires a subcommand, the next word must be one of its subcommands or an option.
// Returns the error message, or "" when the words are well formed so far.
std::string unknown_subcommand(const CLI::App& app, int argc, char** argv) {
  const CLI::App* level = &app;
  std::string path = "clustersim";
  for (int i = 1; i < argc && level->get_require_subcommand_min() > 0; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') return "";
    std::string known;
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : level->get_subcommands([](const CLI::App*) { return true; })) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
      if (sub->get_name() == word) next = sub;
    }
    if (next == nullptr) return path + ": unknown command '" + word + "' (known: " + known + ")";
    level = next;
    path += " " + word;
  }
  return "";
}

// Every output-file option (--json, --csv, --svg, --trace, --out, --xml, --plot) of every
// command refuses an empty path: the commands read "" as "not asked for" and wrote nothing.
void refuse_empty_output_paths(CLI::App& app) {
  static const std::set<std::string> kOutputs = {"--json", "--csv", "--svg", "--trace", "--out", "--xml", "--plot"};
  const CLI::Validator non_empty(
      [](std::string& text) { return text.empty() ? std::string("is an empty path") : std::string(); }, "PATH");
  for (CLI::Option* opt : app.get_options()) {
    for (const std::string& name : opt->get_lnames()) {
      if (kOutputs.count("--" + name) != 0) opt->check(non_empty);
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) refuse_empty_output_paths(*sub);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "clustersim: discrete-event simulator of GPU training clusters (SimGrid). Predicts step "
      "time, MFU, tokens/s/GPU and where the time goes for a model, a parallelism and a cluster."};
  app.require_subcommand(1);
  int exit_code = 0;
  clustersim::tools::register_run_command(app, exit_code);
  clustersim::tools::register_platform_command(app, exit_code);
  clustersim::tools::register_trace_command(app, exit_code);
  clustersim::tools::register_tco_command(app, exit_code);
  clustersim::tools::register_memory_command(app, exit_code);
  clustersim::tools::register_validate_command(app, exit_code);
  clustersim::tools::register_scale_command(app, exit_code);
  clustersim::tools::register_sweep_command(app, exit_code);
  clustersim::tools::register_calib_command(app, exit_code);
  refuse_empty_output_paths(app);
  if (const std::string unknown = unknown_subcommand(app, argc, argv); !unknown.empty()) {
    std::cerr << "error: " << unknown << "\nRun with --help for more information.\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return exit_code;
}
