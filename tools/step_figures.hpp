// The figures of one simulated step that scale and sweep tabulate, and their transport from a
// worker process back to the parent (JSON text), plus the memory estimate of a job.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tools/job.hpp"

namespace clustersim::tools {

/// What scale and sweep keep of a simulated step (docs/outputs.md for the meanings).
struct StepFigures {
  double step_time_s = 0.0;
  double mfu = 0.0;
  double tflops_per_gpu = 0.0;        ///< model TFLOP/s per GPU
  double tokens_per_s_per_gpu = 0.0;
  double compute_s = 0.0;             ///< breakdown, averaged over ranks
  double exposed_comm_s = 0.0;
  double bubble_s = 0.0;
  std::string replicas;               ///< reduction used: "full" or "identical"
  std::vector<std::string> accuracy_notes;  ///< RunReport::accuracy_notes (tools/accuracy_notes.hpp)
  // Energy and cost of the step (docs/energy.md, the `energy` and `cost` keys of
  // docs/outputs.md): absent when the platform states no power figures (energy) or no price
  // is known for the job (cost).
  std::optional<double> power_w_per_gpu;         ///< all-in (facility) W per GPU, activity view
  std::optional<double> joules_per_token;        ///< facility J per trained token
  std::optional<double> tokens_per_household_year;  ///< tokens on 10,791 kWh (docs/energy.md)
  std::optional<double> energy_to_train_mwh;     ///< facility MWh for energy.train_tokens
  std::optional<double> usd_per_million_tokens;  ///< at the job's pricing (rental or TCO)
  std::optional<double> cost_to_train_usd;       ///< energy.train_tokens, no failures
  // The training run of energy.train_tokens with failures (the Monte-Carlo `clustersim run`
  // reports, docs/energy.md): only for a job with a `reliability:` section.
  std::optional<double> goodput;                  ///< mean useful fraction of elapsed time
  std::optional<double> goodput_ci95_low;         ///< 95% confidence interval of the mean
  std::optional<double> goodput_ci95_high;
  std::optional<double> interruptions;            ///< mean per run
  std::optional<double> days_to_train;            ///< mean elapsed days, failures included
  std::optional<double> usd_per_million_tokens_with_failures;  ///< cost / goodput (priced jobs)
  // The step with every kernel class and network transfer at the fast, then the slow end of the
  // cost model's stated uncertainty (`scale --uncertainty`, docs/cost-model.md): only when asked.
  std::optional<double> step_time_fast_s;
  std::optional<double> step_time_slow_s;
  std::optional<double> mfu_fast;
  std::optional<double> mfu_slow;
};

/// Simulates `job` (simulate_job; call it in a worker process) with the options of its
/// `simulation:` section, `replicas` overriding its reduction unless empty; encodes the figures.
/// With `uncertainty`, also at both ends of the cost model's stated uncertainty (simulate_band).
/// @throws what simulate_job and simulate_band throw.
std::string simulate_figures(const Job& job, const std::string& replicas, bool uncertainty = false);

/// Decodes simulate_figures' text. @throws std::runtime_error when it is not such a text.
StepFigures parse_figures(const std::string& text);

/// Names of the energy, cost and failure columns of the scale and sweep CSVs, in order:
/// power_w_per_gpu, joules_per_token, tokens_per_household_year, energy_to_train_mwh,
/// usd_per_million_tokens, cost_to_train_usd, goodput, goodput_ci95_low, goodput_ci95_high,
/// interruptions, days_to_train, usd_per_million_tokens_with_failures
/// (docs/scaling-and-sweeps.md).
const std::vector<std::string>& energy_and_failure_columns();

/// The values of those columns for `f`, formatted; an empty field where the figure is absent.
std::vector<std::string> energy_and_failure_fields(const StepFigures& f);

/// Reads those columns from `fields` (a row of a table whose header is `header`) into `f`; a
/// column the header lacks (a CSV of an earlier version) or an empty field leaves the figure
/// absent. @throws std::invalid_argument for a field that is not a number.
void read_energy_and_failure_fields(const std::vector<std::string>& header,
                        const std::vector<std::string>& fields, StepFigures& f);

/// Names of the band columns of the scale CSV (`scale --uncertainty`), in order:
/// step_time_fast_s, step_time_slow_s, mfu_fast, mfu_slow.
const std::vector<std::string>& band_columns();

/// The values of those columns for `f`; empty fields where the band was not simulated.
std::vector<std::string> band_fields(const StepFigures& f);

/// Reads those columns as read_energy_and_failure_fields does. @throws std::invalid_argument
/// for a field that is not a number.
void read_band_fields(const std::vector<std::string>& header, const std::vector<std::string>& fields,
                      StepFigures& f);

/// The fraction of HBM within which an excess is tight rather than certain: the memory model
/// errs high by up to ~10% for Megatron jobs (docs/memory-model.md).
inline constexpr double kMemoryModelMargin = 0.10;

/// The memory model's verdict for a job (workloads/memory.hpp).
struct MemoryFit {
  double peak_bytes = 0.0;      ///< peak of the worst pipeline stage, per GPU
  double capacity_bytes = 0.0;  ///< HBM of one GPU
  bool fits = true;
  std::string message;          ///< why it does not fit (empty when it fits)
  int worst_rank = 0;           ///< first rank of the worst pipeline stage
  int worst_stage = 0;          ///< the pipeline stage with the largest peak
  std::string largest_component;       ///< the worst stage's largest component ("activations")
  double largest_component_bytes = 0.0;
  /// What torch.cuda.max_memory_reserved() would report: the peak less the CUDA context,
  /// cuBLAS's kernel images and NCCL (MemoryReport::reserved_bytes).
  double reserved_bytes = 0.0;
};

/// Estimates the job's per-GPU peak memory against its GPU's HBM with the workloads memory
/// model (deterministic, no simulation). @throws std::invalid_argument for a spec it rejects.
MemoryFit memory_fit(const Job& job);

}  // namespace clustersim::tools
