#include "tools/simulate.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "calib/measured_cost_model.hpp"
#include "sim/cost_corner.hpp"
#include "platforms/builder.hpp"
#include "tools/accuracy_notes.hpp"
#include "tools/fabric_notes.hpp"
#include "tools/steady_window.hpp"
#include "workloads/generator.hpp"

namespace clustersim::tools {

void override_replicas(SimulateOptions& options, const std::string& replicas) {
  options.replicas = replicas;
  options.replicas_at.reset();
}

SimulateOptions options_from_job(const Job& job) {
  SimulateOptions o;
  o.replicas = job.simulation.replicas;
  o.replicas_at = job.simulation.replicas_at;
  o.cost = job.simulation.cost;
  o.nccl_algo = job.simulation.nccl_algo;
  o.interference = job.simulation.interference;
  o.nccl_proto = job.simulation.nccl_proto;
  o.cost_isolated_tp = job.simulation.cost_isolated_tp;
  o.fold_tp = job.simulation.fold_tp;
  o.power_state = job.simulation.power_state;
  o.microbatches = job.simulation.microbatches;
  return o;
}

namespace {

// The measured model's out-of-grid notes and the table that served each op class.
void add_cost_sources(RunReport& report, const sim::CostModel& cost) {
  if (const auto* corner = dynamic_cast<const sim::CornerCostModel*>(&cost)) {
    add_cost_sources(report, corner->inner());
    return;
  }
  const auto* measured = dynamic_cast<const calib::MeasuredCostModel*>(&cost);
  if (measured == nullptr) return;
  for (const auto& o : measured->out_of_grid()) {
    report.cost_notes.push_back(o.what + " (" + std::to_string(o.count) + " ops)");
  }
  report.cost_tables = measured->table_sources();
  // Each line of a derived GPU ends with the whole derivation rule, which `cost_model`
  // already states once: shorten it to a reference.
  const std::string rule = "derived from H200 (" + measured->rule().basis + ")";
  for (auto& line : report.cost_tables) {
    const auto at = line.rfind(rule);
    if (at != std::string::npos) line.replace(at, rule.size(), "derived from H200 (rule in cost_model)");
  }
}

struct PowerStateSummary {
  double share = 0.0;  ///< rank 0's compute-bound share, each op at its sustained time
  double boost = 1.0;  ///< its GEMMs' and attention's time before / after
  std::vector<double> shares;  ///< every program's share (empty when not applied)
};

// Applies the power state (sim::apply_power_state) when `on`, and summarizes it for rank 0.
PowerStateSummary power_state(sim::Workload& workload, const sim::CostModel& cost, bool on) {
  PowerStateSummary out;
  if (workload.program_of_rank.empty()) return out;
  const sim::Program& rank0 = workload.program(0);
  out.share = sim::power_state_share(rank0, cost);
  const double before = sim::compute_bound_seconds(rank0);
  if (on) {
    out.shares = sim::power_state_shares(workload, cost);
    sim::apply_power_state(workload, cost, out.shares);
  }
  const double after = sim::compute_bound_seconds(rank0);
  if (after > 0.0) out.boost = before / after;
  return out;
}

// Plays the step whole (`window` empty), or as the two steady-state windows of `window` extended
// to the step's microbatches. Each window is generated and costed as the step is, its power
// state taken at the whole step's shares.
sim::StepResult play_step(const Job& job, const std::optional<workloads::SteadyWindow>& window,
                          const sim::Workload& workload, const PowerStateSummary& power,
                          const sim::PlatformBuilder& platform, const sim::CostModel& cost,
                          const sim::EngineOptions& engine) {
  if (!window) return sim::simulate_step(workload, platform, cost, engine);
  sim::StepResult steps[2];
  const int counts[2] = {window->first, window->second};
  for (int i = 0; i < 2; ++i) {
    sim::Workload w = workloads::generate_workload(with_microbatches(job.workload, counts[i]));
    w.accounting = workload.accounting;
    sim::cost_workload(w, cost);
    if (!power.shares.empty()) sim::apply_power_state(w, cost, power.shares);
    steps[i] = sim::simulate_step(w, platform, cost, engine);
  }
  return extend_window(steps[0], steps[1], *window, job.workload.num_microbatches());
}

// The engine's options for `workload` from the run's (`--replicas` checked here).
// @throws std::invalid_argument for a bad replicas value, or identical replicas the workload
// cannot take.
sim::EngineOptions engine_options_for(const SimulateOptions& options, const sim::Workload& workload,
                                      bool all_to_alls_on_oversubscribed) {
  sim::EngineOptions engine_options;
  engine_options.record_timeline = options.timeline || options.profile_rank.has_value();
  engine_options.timeline_ranks = options.timeline ? options.timeline_ranks : std::vector<int>{};
  if (options.profile_rank && (!options.timeline || !options.timeline_ranks.empty())) {
    engine_options.timeline_ranks.push_back(*options.profile_rank);
  }
  engine_options.nccl_algo = options.nccl_algo;
  engine_options.interference = options.interference;
  engine_options.cost_isolated_tp = options.cost_isolated_tp;
  engine_options.fold_tp = options.fold_tp;
  engine_options.nccl_proto = nccl_protocol(options.nccl_proto);
  if (options.replicas != "auto" && options.replicas != "full" && options.replicas != "identical") {
    throw std::invalid_argument("replicas must be auto, full or identical, not '" +
                                options.replicas + "'");
  }
  const bool large = workload.layout.world() > kAutoReplicaThreshold;
  const std::string problem = sim::replica_reduction_problem(workload);
  if (options.replicas == "identical" && !problem.empty()) {
    // The job's simulation.replicas (unless the command line replaced it), else --replicas.
    if (options.replicas_at) throw options.replicas_at->error("identical: " + problem);
    throw SpecError("<command line>", 0, "--replicas", "identical: " + problem);
  }
  // `auto` plays every replica of an expert-parallel job whose fabric has an oversubscribed
  // tier: the replicas' all-to-alls share its uplinks (0.294 s identical against 0.379 s full
  // for a 1,024-GPU EP64 job behind 4:1 leaves), and with ep > 1 the expert-data-parallel
  // replicas are few (dp / ep), so playing them all stays cheap.
  const bool auto_identical = large && !all_to_alls_on_oversubscribed;
  engine_options.identical_dp_replicas =
      problem.empty() && (options.replicas == "identical" || (options.replicas == "auto" && auto_identical));
  return engine_options;
}

// Step rates of `report` from its step time and the workload's FLOP and token accounting.
void fill_rates(RunReport& report, const sim::Workload& workload) {
  report.gpus = workload.layout.world();
  const auto& acc = workload.accounting;
  const double gpu_seconds = report.step.step_time_s * report.gpus;
  report.mfu = acc.model_flops / (gpu_seconds * acc.peak_flops_per_gpu);
  report.achieved_tflops_per_gpu = acc.hardware_flops / gpu_seconds / 1e12;
  report.mfu_convention = acc.mfu_convention;
  report.peak_tflops = acc.peak_flops_per_gpu / 1e12;
  report.tflops_per_gpu = acc.model_flops / gpu_seconds / 1e12;
  report.tokens_per_s_per_gpu = acc.tokens / gpu_seconds;
  report.tokens_per_step = acc.tokens;
}

// Profiles options.profile_rank into report.profile, then drops its intervals from the
// timeline unless the trace asked for them. @throws std::invalid_argument as profile_rank.
void keep_profile(RunReport& report, const sim::Workload& workload, const SimulateOptions& options) {
  const int rank = *options.profile_rank;
  report.profile = profile_rank(workload, report.step, rank);
  const auto& traced = options.timeline_ranks;
  if (options.timeline && (traced.empty() || std::count(traced.begin(), traced.end(), rank) > 0)) return;
  std::erase_if(report.step.timeline, [rank](const sim::TimelineEvent& e) { return e.rank == rank; });
}

// The replica reduction used and the report's caveats: the reduction's and the fabric's notes and
// the model's known limits for the job.
void add_notes(RunReport& report, const Job& job, const TierOversubscription& tiers, bool identical,
               const std::string& cost) {
  report.replicas = identical ? "identical" : "full";
  report.replicas_note = replicas_note(job, tiers, identical);
  report.fabric_note = fabric_note(job, tiers);
  report.mfu_note = mfu_note(job.workload);
  report.accuracy_notes = accuracy_notes(
      job.workload, derives_across_architectures(cost, job.cluster.platform.gpu.name)
                        ? job.cluster.platform.gpu.name
                        : std::string());
}

}  // namespace

RunReport simulate_job(const Job& job, const SimulateOptions& options) {
  auto platform = platforms::make_platform_builder(job.cluster.platform, job.cluster.gpus);
  sim::Workload workload = workloads::generate_workload(job.workload);
  const sim::DType dtype = workloads::compute_dtype(job.workload);
  workload.accounting.peak_flops_per_gpu = platform->gpu().peak(dtype);
  if (!costs_flash2(options.cost) &&
      job.workload.training.attention_backend == sim::AttentionKernel::Flash2) {
    throw job.attention_backend_at.error(
        "flash2 needs the measured cost model (the default): the roofline model holds "
        "FlashAttention-3's published rates only");
  }
  const auto cost_model = make_cost_model(options.cost, job.cluster.platform, options.corner);
  const sim::CostModel& cost = *cost_model;
  sim::cost_workload(workload, cost);
  const PowerStateSummary power = power_state(workload, cost, options.power_state);

  const TierOversubscription tiers = tier_oversubscription(job);
  const sim::EngineOptions engine_options =
      engine_options_for(options, workload, job.workload.parallel.ep > 1 && tiers.any());
  if (options.profile_rank) {
    check_profiled_rank(workload, *options.profile_rank, engine_options.identical_dp_replicas);
  }
  RunReport report;
  if (options.microbatches != "auto" && options.microbatches != "all") {
    throw std::invalid_argument("microbatches must be auto or all, not '" + options.microbatches + "'");
  }
  // The windows `auto` plays; never with a timeline, which must show the step itself.
  const auto window = window_for(job.workload);
  const bool windowed = window && options.microbatches == "auto" && !engine_options.record_timeline;
  report.auto_overridden_by_timeline = window && options.microbatches == "auto" && !windowed;
  report.step = play_step(job, windowed ? window : std::nullopt, workload, power, *platform, cost,
                          engine_options);
  report.microbatches = job.workload.num_microbatches();
  if (window && !engine_options.record_timeline) {
    (windowed ? report.microbatches_played : report.microbatches_window) = {window->first, window->second};
  }
  if (options.profile_rank) keep_profile(report, workload, options);
  report.job_description = workload.description + " on " + platform->describe();
  report.cost_model = cost.describe();
  add_cost_sources(report, cost);
  try {
    report.memory = memory_fit(job);
  } catch (const std::invalid_argument&) {
    // the memory model rejects a spec the generator accepted: no verdict to report
  }
  add_notes(report, job, tiers, engine_options.identical_dp_replicas, options.cost);
  report.interference = engine_options.interference;
  report.power_state = options.power_state && cost.has_power_state();
  report.power_state_measured = cost.has_power_state();
  report.compute_bound_share = power.share;
  report.compute_bound_boost = power.boost;
  fill_rates(report, workload);
  report.memory_bound_share = memory_bound_share(workload);
  report.energy = evaluate_energy(job,
                                  {report.step.breakdown, report.tokens_per_s_per_gpu,
                                   report.memory_bound_share, report.gpus},
                                  std::nullopt, false);
  return report;
}

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
/// Rows of the op profile the text report shows (the JSON holds all).
constexpr std::size_t kProfileRowsShown = 20;

nlohmann::ordered_json memory_json(const MemoryFit& m) {
  nlohmann::ordered_json j;
  j["fits"] = m.fits;
  j["peak_gib"] = m.peak_bytes / kGiB;
  j["capacity_gib"] = m.capacity_bytes / kGiB;
  j["reserved_gib"] = m.reserved_bytes / kGiB;
  j["worst_rank"] = m.worst_rank;
  j["worst_stage"] = m.worst_stage;
  j["largest_component"] = m.largest_component;
  j["largest_component_gib"] = m.largest_component_bytes / kGiB;
  if (!m.fits) j["oom"] = m.message;
  return j;
}

std::string memory_text(const MemoryFit& m) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << "memory        peak " << m.peak_bytes / kGiB
      << " GiB of " << m.capacity_bytes / kGiB << " GiB HBM (rank " << m.worst_rank
      << ", pipeline stage " << m.worst_stage << "; largest: " << m.largest_component << " "
      << m.largest_component_bytes / kGiB << " GiB): ";
  if (m.fits) {
    out << "fits\n";
  } else {
    out << "OUT OF MEMORY, over by " << (m.peak_bytes - m.capacity_bytes) / kGiB << " GiB\n";
  }
  return out.str();
}

// Breakdown::exposed_by_group_s by communicator name ("tp", "dp_cp", ...), then "other".
nlohmann::ordered_json exposed_parts_json(const sim::Breakdown& b) {
  nlohmann::ordered_json j;
  for (int g = 0; g < sim::kGroupKindCount; ++g) {
    j[sim::to_string(static_cast<sim::GroupKind>(g))] = b.exposed_by_group_s[static_cast<size_t>(g)];
  }
  j["other"] = b.exposed_other_s;
  return j;
}

// "tp 0.300 s, dp_cp 0.120 s": the parts of the exposed communication above 0.5 ms, largest first.
std::string exposed_parts_text(const sim::Breakdown& b) {
  std::vector<std::pair<double, std::string>> parts;
  for (int g = 0; g < sim::kGroupKindCount; ++g) {
    parts.emplace_back(b.exposed_by_group_s[static_cast<size_t>(g)], sim::to_string(static_cast<sim::GroupKind>(g)));
  }
  parts.emplace_back(b.exposed_other_s, "other");
  std::stable_sort(parts.begin(), parts.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::ostringstream out;
  out << std::fixed << std::setprecision(3);
  for (const auto& [s, name] : parts) {
    if (s < 5e-4) continue;
    out << (out.tellp() > 0 ? ", " : "") << name << " " << s << " s";
  }
  return out.str();
}

// The documented `breakdown` object (docs/outputs.md).
nlohmann::ordered_json breakdown_object(const sim::Breakdown& b) {
  return {{"compute_s", b.compute_s},
          {"exposed_comm_s", b.exposed_comm_s},
          {"bubble_s", b.bubble_s},
          {"exposed_comm_by_group_s", exposed_parts_json(b)}};
}

}  // namespace

std::string breakdown_json(const sim::Breakdown& b) { return breakdown_object(b).dump(); }

std::string report_json(const RunReport& r) {
  nlohmann::ordered_json j;
  j["step_time_s"] = r.step.step_time_s;
  j["mfu"] = r.mfu;
  j["mfu_convention"] = r.mfu_convention;
  j["peak_tflops_per_gpu"] = r.peak_tflops;
  j["achieved_tflops_per_gpu"] = r.achieved_tflops_per_gpu;
  j["tflops_per_gpu"] = r.tflops_per_gpu;
  j["tokens_per_s_per_gpu"] = r.tokens_per_s_per_gpu;
  j["breakdown"] = breakdown_object(r.step.breakdown);
  j["gpus"] = r.gpus;
  j["tokens_per_step"] = r.tokens_per_step;
  j["job"] = r.job_description;
  j["cost_model"] = r.cost_model;
  j["replicas"] = r.replicas;
  if (!r.replicas_note.empty()) j["replicas_note"] = r.replicas_note;
  if (!r.fabric_note.empty()) j["fabric_note"] = r.fabric_note;
  if (!r.mfu_note.empty()) j["mfu_note"] = r.mfu_note;
  j["interference"] = r.interference;
  j["power_state"] = {{"applied", r.power_state},
                      {"compute_bound_share", r.compute_bound_share},
                      {"compute_bound_boost", r.compute_bound_boost}};
  j["tp_collectives"] = r.step.tp_estimated ? "estimated" : "played";
  j["tp_ranks_played"] = r.step.tp_folded ? "one per group" : "all";
  j["nccl_algo_fallbacks"] = r.step.algorithm_fallbacks;
  j["cost_notes"] = r.cost_notes;
  j["accuracy_notes"] = r.accuracy_notes;
  j["cost_tables"] = r.cost_tables;
  if (r.memory) j["memory"] = memory_json(*r.memory);
  nlohmann::ordered_json played = "all";
  if (!r.microbatches_played.empty()) played = r.microbatches_played;
  j["microbatches"] = {{"per_pipeline", r.microbatches}, {"played", played}};
  j["sim_wall_s"] = r.step.sim_wall_s;
  j["events"] = r.step.events;
  if (r.energy) add_energy_json(j, *r.energy);
  if (r.failures) j["reliability"] = reliability_json(*r.failures);
  if (r.profile) j["profile"] = op_profile_json(*r.profile);
  return j.dump(2) + "\n";
}

namespace {
// "failures      goodput 96.24% [..]: ..." for a run with a reliability section.
std::string failures_text(const RunWithFailures& f, const std::optional<EnergyReport>& energy) {
  const auto& r = f.reliability;
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << "failures      goodput " << 100 * r.goodput.mean
      << "% [95% CI of the mean " << 100 * r.goodput.ci95_low << ", " << 100 * r.goodput.ci95_high << "]: "
      << std::setprecision(1) << r.failures.mean << " interruptions, " << r.wall_s.mean / 86400
      << " days (failure-free " << f.shape.work_s / 86400 << "), job MTBF " << r.system_mtbf_s / 3600
      << " h, checkpoint every " << r.checkpoint_interval_s / 60 << " min (write "
      << r.checkpoint_write_s << " s); " << r.trials << " Monte-Carlo runs";
  if (energy && energy->pricing && r.goodput.mean > 0) {
    out << "; $" << std::setprecision(3) << energy->cost.usd_per_million_tokens / r.goodput.mean
        << " per million tokens with failures";
  }
  out << "\n";
  return out.str();
}
}  // namespace

void add_failures(RunReport& report, const Job& job) {
  report.failures = run_with_failures(job, report.tokens_per_s_per_gpu);
}

namespace {
// One report line per entry: the first after `first` (the 14-column label and any lead-in), the
// others under it, indented to the values' column; nothing for no entries.
std::string labelled_lines(const std::string& first, const std::vector<std::string>& lines) {
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    out += (i == 0 ? first : std::string(14, ' ')) + lines[i] + "\n";
  }
  return out;
}

// The report's note lines: the replica reduction's and the fabric's caveats, the model's known
// limits for the job, and how the step's microbatches were played.
std::string notes_text(const RunReport& r) {
  std::ostringstream out;
  if (!r.replicas_note.empty()) out << "replicas note " << r.replicas_note << "\n";
  if (!r.fabric_note.empty()) out << "fabric note   " << r.fabric_note << "\n";
  out << labelled_lines("accuracy      ", r.accuracy_notes);
  if (r.microbatches_played.size() == 2) {
    out << "microbatches  " << r.microbatches << " per pipeline, played as steady-state windows of "
        << r.microbatches_played[0] << " and " << r.microbatches_played[1]
        << " extended linearly (docs/engine.md; simulation.microbatches: all plays every one)\n";
  } else if (r.auto_overridden_by_timeline) {
    out << "microbatches  " << r.microbatches << " per pipeline, all played: a timeline (--trace, "
        << "--profile) shows the step itself, not --microbatches auto's windows\n";
  } else if (r.microbatches_window.size() == 2) {
    out << "microbatches  " << r.microbatches << " per pipeline, all played (--microbatches auto "
        << "would play steady-state windows of " << r.microbatches_window[0] << " and "
        << r.microbatches_window[1] << ", docs/engine.md)\n";
  }
  return out.str();
}
}  // namespace

std::string report_text(const RunReport& r) {
  std::ostringstream out;
  const auto& b = r.step.breakdown;
  const double step = r.step.step_time_s;
  auto pct = [step](double v) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(1) << 100.0 * v / step << "%";
    return s.str();
  };
  out << "job:          " << r.job_description << "\n";
  out << "cost model:   " << r.cost_model << "\n\n";
  out << std::fixed;
  out << "step time     " << std::setprecision(3) << step << " s\n";
  out << "MFU           " << std::setprecision(1) << 100.0 * r.mfu << "% (" << r.mfu_convention
      << " convention, dense peak " << r.peak_tflops << " TFLOP/s)\n";
  if (!r.mfu_note.empty()) out << "MFU note      " << r.mfu_note << "\n";
  out << "TFLOP/s/GPU   " << std::setprecision(1) << r.tflops_per_gpu << " model, "
      << r.achieved_tflops_per_gpu << " executed (causal attention, recompute included)\n";
  out << "tokens/s/GPU  " << std::setprecision(1) << r.tokens_per_s_per_gpu << "\n";
  out << "breakdown     compute " << std::setprecision(3) << b.compute_s << " s (" << pct(b.compute_s)
      << "), exposed comm " << b.exposed_comm_s << " s (" << pct(b.exposed_comm_s)
      << "), bubble " << b.bubble_s << " s (" << pct(b.bubble_s) << ")\n";
  if (const std::string parts = exposed_parts_text(b); !parts.empty()) {
    out << "exposed by    " << parts << " (communicator the compute stream waited for)\n";
  }
  out << labelled_lines("forced algo   not applicable, fell back: ", r.step.algorithm_fallbacks);
  if (!r.cost_notes.empty()) {
    out << "cost notes    " << r.cost_notes.size()
        << " op classes costed outside the measured tables (listed in --json cost_notes)\n";
  }
  out << labelled_lines("cost tables   ", r.cost_tables);
  if (r.memory) out << memory_text(*r.memory);
  out << "simulator     " << std::setprecision(2) << r.step.sim_wall_s << " s wall, "
      << r.step.events << " events, replicas " << r.replicas << ", interference "
      << (r.interference ? "on" : "off") << ", TP collectives "
      << (r.step.tp_estimated ? "estimated" : "played")
      << (r.step.tp_folded ? ", one rank per TP group played" : "") << "\n";
  out << notes_text(r);
  out << "power state   "
      << (r.power_state ? "on" : r.power_state_measured ? "off" : "none (the cost model has no measured one for this GPU)")
      << ": GEMMs and attention "
      << std::fixed << std::setprecision(1) << r.compute_bound_share * 100.0
      << "% of rank 0's GPU compute in their sustained state, run " << std::setprecision(3)
      << r.compute_bound_boost << "x as fast as their tables (docs/cost-model.md)\n";
  if (r.energy) out << energy_text(*r.energy);
  if (r.failures) out << failures_text(*r.failures, r.energy);
  if (r.profile) out << op_profile_text(*r.profile, kProfileRowsShown);
  return out.str();
}

void write_perfetto_trace(const RunReport& r, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write trace file '" + path + "'");
  nlohmann::json events = nlohmann::json::array();
  std::map<int, bool> ranks;
  for (const auto& e : r.step.timeline) {
    ranks[e.rank] = true;
    events.push_back({{"name", e.name},
                      {"cat", sim::to_string(e.stream)},
                      {"ph", "X"},
                      {"ts", e.start_s * 1e6},
                      {"dur", (e.end_s - e.start_s) * 1e6},
                      {"pid", e.rank},
                      {"tid", static_cast<int>(e.stream)}});
  }
  for (const auto& [rank, unused] : ranks) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank},
                      {"args", {{"name", "rank " + std::to_string(rank)}}}});
    for (int s = 0; s < sim::kStreamCount; ++s) {
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", s},
                        {"args", {{"name", sim::to_string(static_cast<sim::Stream>(s))}}}});
    }
  }
  nlohmann::json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  out << doc.dump() << "\n";
  if (!out) throw std::runtime_error("failed writing trace file '" + path + "'");
}

}  // namespace clustersim::tools
