// One simulated training step of a job, with the derived metrics every command reports.
// Documented (JSON keys) in docs/outputs.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine.hpp"
#include "tools/cost_models.hpp"
#include "tools/energy_report.hpp"
#include "tools/job.hpp"
#include "tools/op_profile.hpp"
#include "tools/reliability_report.hpp"
#include "tools/step_figures.hpp"

namespace clustersim::tools {

/// A simulated step and its derived metrics.
struct RunReport {
  std::string job_description;   ///< workload and platform in one line
  std::string cost_model;        ///< CostModel::describe()
  std::string replicas;          ///< "full" or "identical" (the reduction actually used)
  /// What the identical-replica reduction leaves out that this platform makes matter (an
  /// oversubscribed fat-tree tier); empty otherwise.
  std::string replicas_note;
  /// A stated fabric oversubscription with no uplinks to act on at this size (fabric_note);
  /// empty otherwise.
  std::string fabric_note;
  bool interference = true;      ///< compute/communication interference was applied
  bool power_state = true;       ///< the power state's clock boost was applied
  /// The cost model holds a measured power state for the GPU (sim::CostModel::has_power_state);
  /// false where none exists to apply (Blackwell GPUs, the roofline model).
  bool power_state_measured = true;
  /// Rank 0: share of its GPU compute time in GEMMs and attention, each at its sustained time
  /// (sim::power_state_share), and how fast the power state made those ops against their
  /// tables (their time before / after; below 1 where the sustained-state ratio outweighs the
  /// boost; 1 when not applied).
  double compute_bound_share = 0.0;
  double compute_bound_boost = 1.0;
  std::vector<std::string> cost_notes;  ///< op classes costed outside the measured grids
  /// How to read MFU where it counts dropped tokens (tools/accuracy_notes.hpp mfu_note); empty
  /// otherwise.
  std::string mfu_note;
  /// Known limits of the model for this job (tools/accuracy_notes.hpp); empty when none applies.
  std::vector<std::string> accuracy_notes;
  /// Which table (or rule) served each op class, one line each; empty for the roofline model.
  std::vector<std::string> cost_tables;
  int gpus = 0;
  sim::StepResult step;
  std::int64_t microbatches = 0;  ///< per pipeline per step (global batch / (dp x micro batch))
  /// The steady-state windows played in place of the step's microbatches (two counts per
  /// pipeline); empty when every microbatch was played.
  std::vector<int> microbatches_played;
  /// The windows `microbatches: auto` would play where every microbatch was played instead
  /// (two counts; empty when auto would play the step whole too, or when it was windowed).
  std::vector<int> microbatches_window;
  /// `microbatches: auto` was asked for a step it would window, and every microbatch was played
  /// since a timeline (--trace, --profile) must show the step itself.
  bool auto_overridden_by_timeline = false;
  double mfu = 0.0;              ///< model FLOPs / (step time x GPUs x dense peak)
  std::string mfu_convention;
  double peak_tflops = 0.0;      ///< dense datasheet peak of the precision used, TFLOP/s
  double achieved_tflops_per_gpu = 0.0;  ///< FLOPs the kernels execute (causal attention,
                                         ///< recompute included) per second per GPU, in TFLOP/s
  double tflops_per_gpu = 0.0;   ///< model TFLOP/s per GPU
  double tokens_per_s_per_gpu = 0.0;
  double tokens_per_step = 0.0;
  double memory_bound_share = 0.0;    ///< of compute-stream busy time (energy model input)
  std::optional<EnergyReport> energy; ///< power, energy, cost; absent without platform power
  /// The memory model's verdict for the job (worst rank's peak vs HBM); absent when the memory
  /// model rejects the spec. simulate_job does not stop on it: `clustersim run` does.
  std::optional<MemoryFit> memory;
  /// The training run of energy.train_tokens with failures; `clustersim run` fills it when the
  /// job has a `reliability:` section (add_failures).
  std::optional<RunWithFailures> failures;
  /// One rank's step by op label; with SimulateOptions::profile_rank only.
  std::optional<OpProfile> profile;
};

/// Fills report.failures from the job's reliability section and the simulated throughput.
/// @throws SpecError as reliability_inputs.
void add_failures(RunReport& report, const Job& job);

/// Options of a simulation run.
struct SimulateOptions {
  bool timeline = false;  ///< keep every op interval (for --trace)
  std::vector<int> timeline_ranks;  ///< ranks whose ops are kept (empty: all)
  /// Also profile this rank (tools/op_profile.hpp, `run --profile`): its intervals are recorded
  /// (every microbatch played, as with `timeline`) into RunReport::profile, and stay in the
  /// step's timeline only where `timeline` and `timeline_ranks` ask for them.
  std::optional<int> profile_rank;
  /// Replica reduction (docs/engine.md): "full" plays every rank, "identical" plays one
  /// data-parallel replica in full and only the DP collectives of the others, "auto" picks
  /// "identical" above kAutoReplicaThreshold GPUs.
  std::string replicas = "auto";
  /// Where `replicas` was set when it is the job file's `simulation.replicas`, so that a
  /// reduction the workload cannot take is an error at that line; none: the command line or
  /// the default.
  std::optional<SourceLocation> replicas_at;
  /// Cost model: "measured" (calib/data tables, derived for non-H200 GPUs by the rules of
  /// docs/calibration.md) or "roofline" (datasheet peaks x cited efficiencies).
  std::string cost = "measured";
  /// Force one collective algorithm (ring, tree, hierarchical, nvls); empty: NCCL-style choice.
  std::string nccl_algo;
  /// NCCL protocol over NVLink: "" (NCCL's measured choice), LL, LL128, Simple or auto.
  std::string nccl_proto;
  /// Compute/communication interference from the cost model (docs/engine.md); false: overlap
  /// is free.
  bool interference = true;
  /// TP collectives charged their estimate where only TP traffic crosses NVLink
  /// (sim::EngineOptions::cost_isolated_tp); false: played as flows.
  bool cost_isolated_tp = true;
  /// One rank per TP group played where TP collectives are estimated (sim::EngineOptions::fold_tp).
  bool fold_tp = true;
  /// GEMMs and attention at their kinds' sustained state, faster when their rank also runs
  /// lower-power work (sim::apply_power_state, CostModel::sustained_state and clock_boost);
  /// false: at their tables' speed.
  bool power_state = true;
  /// "auto": a step with more microbatches per pipeline than its schedule's two steady-state
  /// windows together is played as those two windows and extended linearly (docs/engine.md,
  /// "Steady-state window"; not with `timeline`); "all": every microbatch is played.
  std::string microbatches = "all";
  /// Every kernel and network transfer at this end of the cost model's stated uncertainty
  /// (sim::CornerCostModel; `clustersim run --uncertainty`); none: the model's own times.
  std::optional<sim::CostCorner> corner;
};

/// Sets `options.replicas` from the command line (`--replicas`), which then owns any error about it.
void override_replicas(SimulateOptions& options, const std::string& replicas);


/// Options as the job's `simulation:` section sets them.
SimulateOptions options_from_job(const Job& job);

/// Above this many GPUs, replicas "auto" uses the identical-replica reduction.
inline constexpr int kAutoReplicaThreshold = 256;

/// Builds the platform, generates and costs the workload, simulates one step.
/// @throws SpecError for inconsistent jobs, std::runtime_error for simulation failures.
RunReport simulate_job(const Job& job, const SimulateOptions& options);

/// The step's `breakdown` object of report_json as JSON text (docs/outputs.md).
std::string breakdown_json(const sim::Breakdown& breakdown);
/// Writes `report` as the documented JSON object (keys step_time_s, mfu, ...).
std::string report_json(const RunReport& report);
/// Human-readable summary.
std::string report_text(const RunReport& report);
/// Writes a Chrome/Perfetto trace-event JSON of the timeline. @throws std::runtime_error.
void write_perfetto_trace(const RunReport& report, const std::string& path);

}  // namespace clustersim::tools
