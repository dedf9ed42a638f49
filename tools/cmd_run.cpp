// `clustersim run [JOB.yaml] [--json FILE] [--trace FILE] [--ignore-oom]`
// Before simulating, the job is checked against its GPU's HBM with the workloads memory model;
// a job that does not fit is not simulated (exit code kExitOutOfMemory) unless --ignore-oom.
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "sim/spec_error.hpp"
#include "tools/commands.hpp"
#include "tools/reliability_report.hpp"
#include "tools/svg_plot.hpp"
#include "tools/simulate.hpp"
#include "tools/step_figures.hpp"
#include "tools/uncertainty.hpp"

namespace clustersim::tools {
namespace {

struct RunArgs {
  std::string job;
  std::string json;
  std::string trace;
  bool show_default = false;
  std::string replicas;
  std::string cost;
  std::string nccl_algo;
  std::string trace_ranks;
  bool ignore_oom = false;
  bool no_interference = false;
  bool no_power_state = false;
  std::string nccl_proto;
  std::string microbatches;
  bool uncertainty = false;
  bool profile = false;
  std::optional<int> profile_rank;
};

// Parses "0-7,64,128-131" into ranks. @throws SpecError on malformed text or ranks >= world.
std::vector<int> parse_rank_list(const std::string& text, int world) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto dash = item.find('-');
    try {
      size_t used = 0;
      const int first = std::stoi(item.substr(0, dash), &used);
      if (used != item.substr(0, dash).size()) throw std::invalid_argument(item);
      int last = first;
      if (dash != std::string::npos) {
        const std::string tail = item.substr(dash + 1);
        last = std::stoi(tail, &used);
        if (used != tail.size()) throw std::invalid_argument(item);
      }
      if (first < 0 || last < first || last >= world) throw std::out_of_range(item);
      for (int r = first; r <= last; ++r) out.push_back(r);
    } catch (const std::exception&) {
      throw SpecError("--trace-ranks", 0, "", "'" + item + "' is not a rank or range of ranks in [0, " +
                                                 std::to_string(world - 1) + "]");
    }
  }
  return out;
}

// The memory model's verdict, or nothing when it rejects the spec (the simulation then says why).
std::optional<MemoryFit> try_memory_fit(const Job& job) {
  try {
    return memory_fit(job);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

// The error (or, with --ignore-oom, the warning) for a job that does not fit: the worst rank,
// its peak against the capacity, the excess and the largest component, and what to do next.
std::string oom_text(const MemoryFit& m, const RunArgs& args) {
  std::ostringstream out;
  out << (args.ignore_oom ? "warning" : "error") << ": out of GPU memory (memory model): "
      << m.message << "\n";
  const double over = m.peak_bytes - m.capacity_bytes;
  if (over <= kMemoryModelMargin * m.capacity_bytes) {
    out << "  within " << std::fixed << std::setprecision(0) << 100 * kMemoryModelMargin
        << "% of capacity, where the model errs high for Megatron jobs (docs/memory-model.md): "
           "tight rather than certain\n";
  }
  const std::string job = args.job.empty() ? "JOB.yaml" : args.job;
  if (args.ignore_oom) {
    out << "  simulating anyway (--ignore-oom): the step time is that of GPUs with enough memory\n";
  } else {
    out << "  not simulated. Breakdown by component: clustersim memory " << job
        << (args.job.empty() ? " (after clustersim run --show-default > JOB.yaml)" : "")
        << "; simulate anyway: clustersim run " << (args.job.empty() ? "" : job + " ")
        << "--ignore-oom\n";
  }
  return out.str();
}

int run_command(const RunArgs& args) {
  if (args.show_default) {
    std::cout << default_job_yaml();
    return 0;
  }
  check_output_paths({{"--json", args.json}, {"--trace", args.trace}}, {args.job});
  const Job job = args.job.empty() ? load_default_job() : load_job(args.job);
  check_reliability_section(job);  // before a simulation that may take minutes
  SimulateOptions options = options_from_job(job);
  options.timeline = !args.trace.empty();
  if (!args.trace_ranks.empty()) {
    options.timeline_ranks = parse_rank_list(args.trace_ranks, job.workload.gpus());
  }
  if (args.profile || args.profile_rank) options.profile_rank = args.profile_rank.value_or(0);
  if (!args.replicas.empty()) override_replicas(options, args.replicas);
  if (!args.cost.empty()) options.cost = args.cost;
  if (!args.nccl_algo.empty()) options.nccl_algo = args.nccl_algo;
  if (const auto fit = try_memory_fit(job); fit && !fit->fits) {
    std::cerr << oom_text(*fit, args);
    if (!args.ignore_oom) return kExitOutOfMemory;
  }
  if (args.no_interference) options.interference = false;
  if (args.no_power_state) options.power_state = false;
  if (!args.nccl_proto.empty()) options.nccl_proto = args.nccl_proto;
  if (!args.microbatches.empty()) options.microbatches = args.microbatches;
  // The band first, so that a cost model with no stated uncertainty stops before any run.
  std::optional<UncertaintyBand> band;
  if (args.uncertainty) band = simulate_band(job, options);
  RunReport report = simulate_job(job, options);
  // A reliability section asks for the run with failures (docs/energy.md); without one, run
  // reports the failure-free step only and says so in its cost line.
  if (has_reliability_section(job)) add_failures(report, job);
  std::cout << report_text(report);
  if (band) std::cout << band_text(*band, report);
  if (!args.json.empty()) {
    std::string text = report_json(report);
    if (band) {
      auto doc = nlohmann::ordered_json::parse(text);
      doc["uncertainty"] = band_json(*band);
      text = doc.dump(2) + "\n";
    }
    write_text_file(args.json, text);
  }
  if (!args.trace.empty()) write_perfetto_trace(report, args.trace);
  return 0;
}

// The options that choose how the step is simulated (most override the job's `simulation:`).
void add_simulation_options(CLI::App& cmd, RunArgs& args) {
  cmd.add_option("--replicas", args.replicas,
                 "full: simulate every rank; identical: simulate one data-parallel replica in "
                 "full and only the data-parallel collectives of the others (docs/engine.md); "
                 "auto (default): identical above 256 GPUs, full for an expert-parallel job on an "
                 "oversubscribed fabric. Overrides the job's simulation.replicas")
      ->check(CLI::IsMember({"auto", "full", "identical"}));
  cmd.add_option("--cost", args.cost,
                 "Cost model: measured (default; kernel and NCCL tables measured on H200 in "
                 "calib/data, derived for other GPUs, docs/calibration.md) or roofline (datasheet "
                 "peaks x cited efficiencies, docs/cost-model.md)")
      ->check(CLI::IsMember(cost_model_names()));
  cmd.add_option("--nccl-algo", args.nccl_algo,
                 "Force one collective algorithm for all collectives, as NCCL_ALGO does (ring, "
                 "tree, hierarchical, nvls); collectives it cannot run use ring (pairwise for "
                 "all-to-all) and are listed in the report; default: chosen per call by NCCL's "
                 "cost model. nvls runs 14-76% faster than nccl-tests measure NVLS "
                 "(docs/validation.md)")
      ->check(CLI::IsMember({"ring", "tree", "hierarchical", "nvls"}));
  cmd.add_flag("--ignore-oom", args.ignore_oom,
               "Simulate even when the memory model says a rank's peak memory exceeds the GPU's "
               "HBM (by default such a job stops with exit code 3; docs/memory-model.md)");
  cmd.add_option("--nccl-proto", args.nccl_proto,
                 "NCCL protocol of collectives over NVLink, as NCCL_PROTO forces it (LL, LL128, "
                 "Simple), or auto: the fastest measured protocol at each size; default: the one "
                 "NCCL chose on the calibration machine. Overrides the job's simulation.nccl_proto")
      ->check(CLI::IsMember(nccl_protocol_names()));
  cmd.add_flag("--no-interference", args.no_interference,
               "Let compute and communication overlap without slowing each other (default: the "
               "cost model's measured interference, docs/engine.md); overrides the job's "
               "simulation.interference");
  cmd.add_flag("--no-power-state", args.no_power_state,
               "Run GEMMs and attention at their tables' speed (default: at each kind's own "
               "sustained state, faster when the rank also runs lower-power work, as measured "
               "under the power limit, docs/cost-model.md); overrides the job's "
               "simulation.power_state");
  cmd.add_option("--microbatches", args.microbatches,
                 "auto: a step with more microbatches per pipeline than two short "
                 "steady-state windows of its schedule is played as those windows and extended "
                 "linearly (docs/engine.md); all (default): play every microbatch (always with --trace "
                 "or --profile, whose timelines show the step itself). "
                 "Overrides the job's simulation.microbatches")
      ->check(CLI::IsMember({"auto", "all"}));
}

}  // namespace

void register_run_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Simulate one training step of a job and report step time, MFU, throughput and "
             "where the time goes");
  auto* job = cmd->add_option("job", args->job,
                  "Job YAML (docs/job-spec.md). Without it: the built-in default, GPT-3 175B on "
                  "128 H100, TP4 PP8 DP4, seq 2048, global batch 256, BF16")
      ->check(CLI::ExistingFile);
  cmd->add_option("--json", args->json,
                  "Also write the result as JSON to FILE (keys in docs/outputs.md)");
  auto* trace = cmd->add_option("--trace", args->trace,
                  "Also write a Chrome/Perfetto trace-event JSON of every rank's streams to FILE "
                  "(open in ui.perfetto.dev or chrome://tracing)");
  cmd->add_option("--trace-ranks", args->trace_ranks,
                  "With --trace: only these ranks, as a list of ranks and ranges (e.g. "
                  "0-7,128), so that traces of large jobs stay small")
      ->needs(trace)
      ->check(CLI::Validator(
          [](std::string& text) { return text.empty() ? std::string("is empty (ranks and ranges, e.g. 0-7,128)") : ""; },
          "RANKS"));
  add_simulation_options(*cmd, *args);
  cmd->add_flag("--uncertainty", args->uncertainty,
                "Also simulate the step with every kernel class and network transfer at the "
                "fast, then the slow end of the cost model's stated uncertainty, and report the "
                "ranges of step time, MFU, tokens/s/GPU and J/token (docs/outputs.md; 3x the "
                "run time; the measured cost model only)");
  cmd->add_flag("--profile", args->profile,
                "Also list where one rank's step goes, op label by op label: the simulated "
                "intervals of each stream summed per label, with calls, share, TFLOP/s and GB/s, "
                "and its compute by kind and phase (docs/outputs.md; plays every microbatch)");
  cmd->add_option("--profile-rank", args->profile_rank,
                  "The rank --profile lists (default 0; implies --profile)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_flag("--show-default", args->show_default, "Print the built-in default job's YAML and exit")
      ->excludes(job);
  cmd->callback([args, &exit_code] {
    exit_code = run_guarded([&] { return run_command(*args); });
  });
}

}  // namespace clustersim::tools
