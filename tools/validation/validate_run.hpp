// Runs every measured point of a reference set through the simulator and compares: the engine
// of `clustersim validate` and of the `validation` ctest. Points whose job cannot be built or
// simulated (a feature not implemented yet, an inconsistent case) are reported with the reason
// and counted apart, never dropped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/validation/reference_set.hpp"
#include "tools/validation/step_decomposition.hpp"
#include "tools/worker_pool.hpp"

namespace clustersim::tools::validation {

/// The outcome of one measured point.
struct PointOutcome {
  std::string id;            ///< case id
  std::int64_t gpus = 0;
  std::int64_t seq = 0;      ///< sequence length of the job (0 if the job was not built)
  std::string platform;      ///< catalog name or platform file of the job
  Metric metric = Metric::Mfu;
  double measured = 0.0;
  bool simulated = false;
  double simulated_value = 0.0;
  double rel_error = 0.0;    ///< (simulated - measured) / measured
  std::string reason;        ///< why it was not simulated
  std::string family;        ///< recipe family
  std::string replicas;      ///< reduction the engine used ("full" / "identical")
  double sim_wall_s = 0.0;   ///< wall time of the simulation
  double step_time_s = 0.0;  ///< simulated step time
  /// The simulated step's breakdown as `clustersim run --json` writes it (JSON text; empty if
  /// not simulated): where the time of a missed point goes.
  std::string breakdown_json;
  double cpu_s = 0.0;        ///< CPU time of the point's worker (job build and simulation)
  std::optional<double> measured_peak_gib;
  std::optional<double> estimated_peak_gib;  ///< the memory model's per-GPU peak, if available
  /// The memory model's figure in the measurement's metric (peak_memory_metric): the peak, or
  /// what max_memory_reserved would report.
  std::optional<double> estimated_compared_gib;
  std::string peak_memory_metric = "device";  ///< of measured_peak_gib
  std::optional<double> capacity_gib;        ///< HBM of one GPU of the job's platform, GiB
  std::string job_yaml;      ///< the job the point became (empty if it could not be built)
  /// With ValidateOptions::uncertainty: the simulated value with every kernel class and network
  /// transfer at the fast end, then the slow end, of the cost model's stated uncertainty.
  std::optional<std::pair<double, double>> band;
  /// Where the source decomposes the step (MeasuredPoint::buckets): its figures, and the
  /// simulated step split the same way (rank 0 profiled; docs/validation.md).
  std::optional<MeasuredBuckets> measured_buckets;
  std::optional<StepSplit> simulated_split;
  std::string split_error;  ///< why the simulated step could not be split (split_step's reason)
};

/// All outcomes and the error statistics over the simulated points.
struct ValidationSummary {
  std::string reference;                  ///< the reference file
  std::vector<PointOutcome> points;       ///< in file order
  /// Defaults applied per case: "key=value [CITE]" (values of all points joined by '/').
  std::vector<std::pair<std::string, std::vector<std::string>>> defaults;
  /// Measured figures of the selected cases that validate reads but does not compare, per case
  /// id ("energy: not compared by validate", ...).
  std::vector<std::pair<std::string, std::vector<std::string>>> not_compared;
  std::size_t simulated = 0;
  double mean_abs_error = 0.0;            ///< over simulated points (0 if none)
  double max_abs_error = 0.0;
  std::string max_point;                  ///< "id @ N GPUs" of the largest error
  std::size_t band_points = 0;            ///< simulated points with a band
  std::size_t within_band = 0;            ///< of those, measured between the band's ends
};

/// Options of a validation run.
struct ValidateOptions {
  int jobs = 1;                        ///< worker processes
  std::string replicas;                ///< reduction for every point; empty: auto
  std::int64_t max_gpus = 0;           ///< skip points above this many GPUs (0: no limit)
  std::vector<std::string> cases;      ///< only these case ids (empty: all)
  bool dry_run = false;                ///< build and check every job, simulate nothing
  /// Also simulate every point at both ends of the cost model's stated uncertainty
  /// (PointOutcome::band; 3x the time).
  bool uncertainty = false;
  ProgressFn progress;                 ///< called after each simulated point
};

/// Number of points run_validation will try to simulate (for progress bars).
std::size_t count_points(const ReferenceSet& set, const ValidateOptions& options);

/// Builds, simulates and compares every point. @throws SpecError only for an unknown case id
/// in options.cases; problems of single points become outcomes with a reason.
ValidationSummary run_validation(const ReferenceSet& set, const ValidateOptions& options);

/// The human-readable report: defaults per case, the table, the statistics, the points not
/// simulated with their reasons, the citations of the defaults.
std::string validation_text(const ValidationSummary& summary);

/// The JSON report: {"cases": [{"id", "gpus", "metric", "measured", "simulated",
/// "rel_error", ...}], "mean_abs_error", "max_abs_error", "not_simulated": [...], ...}.
std::string validation_json(const ValidationSummary& summary);

}  // namespace clustersim::tools::validation
