// `clustersim memory JOB.yaml [--json FILE]`: the per-GPU memory estimate of a job by component
// for the worst pipeline stage (and a one-line total for every stage), against the HBM capacity
// of the job's platform (docs/memory-model.md). Exit code 0 whether or not it fits; the verdict
// is printed (and in the JSON).
#include <nlohmann/json.hpp>

#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "platforms/builder.hpp"
#include "sim/spec_error.hpp"
#include "tools/commands.hpp"
#include "tools/svg_plot.hpp"
#include "tools/job.hpp"
#include "workloads/memory.hpp"

namespace clustersim::tools {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct MemoryArgs {
  std::string job;
  std::string json;
};

std::string gib(double bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << bytes / kGiB;
  return out.str();
}

std::string report_text(const workloads::MemoryReport& r, const std::string& job) {
  std::ostringstream out;
  const auto& w = r.worst();
  out << "job:       " << job << "\n";
  out << "worst:     pipeline stage " << w.stage << " (rank " << r.worst_rank << "), "
      << w.microbatches_in_flight << " microbatch-chunks of activations in flight\n\n";
  out << std::left << std::setw(24) << "component" << std::right << std::setw(10) << "GiB"
      << "  basis\n";
  for (const auto& c : w.components) {
    out << std::left << std::setw(24) << c.name << std::right << std::setw(10) << gib(c.bytes)
        << "  " << c.basis << "\n";
  }
  out << std::left << std::setw(24) << "total" << std::right << std::setw(10) << gib(w.total())
      << "  of " << gib(r.capacity_bytes) << " GiB HBM\n";
  out << std::left << std::setw(24) << "reserved" << std::right << std::setw(10)
      << gib(r.reserved_bytes())
      << "  PyTorch's max_memory_reserved: total less cuda_context and nccl\n\n";
  const auto& h = r.host_worst();
  if (h.host_bytes > 0.0) {
    out << std::left << std::setw(24) << "host (pinned)" << std::right << std::setw(10) << gib(h.host_bytes)
        << "  offloaded activations per GPU (pipeline stage " << h.stage << "), of "
        << (r.host_capacity_bytes > 0.0 ? gib(r.host_capacity_bytes) + " GiB, the GPU's share of its host"
                                         : std::string("an unknown host capacity (not checked)"))
        << "\n\n";
  }
  if (r.stages.size() > 1) {
    out << "per stage:";
    for (const auto& s : r.stages) out << " " << s.stage << ":" << gib(s.total());
    out << " GiB\n";
  }
  out << (r.fits() ? "fits" : "OUT OF MEMORY: " + r.oom_message()) << "\n";
  return out.str();
}

std::string report_json(const workloads::MemoryReport& r) {
  nlohmann::ordered_json j;
  j["capacity_bytes"] = r.capacity_bytes;
  j["fits"] = r.fits();
  j["worst_stage"] = r.worst_stage;
  j["worst_rank"] = r.worst_rank;
  j["peak_bytes"] = r.peak_bytes();
  j["reserved_bytes"] = r.reserved_bytes();
  j["host_capacity_bytes"] = r.host_capacity_bytes;
  if (!r.fits()) j["oom"] = r.oom_message();
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const auto& s : r.stages) {
    nlohmann::ordered_json st;
    st["stage"] = s.stage;
    st["total_bytes"] = s.total();
    st["microbatches_in_flight"] = s.microbatches_in_flight;
    st["host_pinned_bytes"] = s.host_bytes;
    for (const auto& c : s.components) st["components"][c.name] = c.bytes;
    stages.push_back(st);
  }
  j["stages"] = stages;
  return j.dump(2) + "\n";
}

int memory_command(const MemoryArgs& args) {
  check_output_paths({{"--json", args.json}}, {args.job});
  const Job job = load_job(args.job);
  const auto platform = platforms::make_platform_builder(job.cluster.platform, job.cluster.gpus);
  const auto report = workloads::estimate_memory(job.workload, platform->gpu().hbm_capacity.value,
                                                 platform->gpu().host_memory_per_gpu.value);
  std::cout << report_text(report, job.origin);
  if (!args.json.empty()) write_text_file(args.json, report_json(report));
  // As `run` stops on such a job (exit 3), so that a script can gate on either command.
  return report.fits() ? 0 : kExitOutOfMemory;
}

}  // namespace

void register_memory_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<MemoryArgs>();
  CLI::App* cmd = app.add_subcommand(
      "memory", "Estimate per-GPU peak memory of a job by component (weights, gradients, "
                "optimizer states, activations, buffers, overheads) and whether it fits");
  cmd->add_option("job", args->job, "Job YAML (docs/job-spec.md)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--json", args->json, "Also write the estimate as JSON to FILE");
  cmd->callback([args, &exit_code] { exit_code = run_guarded([&] { return memory_command(*args); }); });
}

}  // namespace clustersim::tools
