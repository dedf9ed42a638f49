// Reliability of a training run: failure processes per component, what a failure costs
// (detection, restart, checkpoint reload, lost work, waiting for a spare or a repair), the
// checkpoint interval (Young/Daly by default), and a seeded Monte-Carlo over a whole run that
// gives goodput, time and failure counts with confidence intervals. docs/energy.md documents
// the model and its simplifications.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace clustersim::energy {

/// What one failing unit of a failure mode is; the job has ceil(gpus / GPUs per unit) of them
/// (a unit it fills only in part counts whole).
enum class UnitKind : std::uint8_t {
  Gpu,     ///< one GPU (board, HBM, its NIC and link)
  Node,    ///< one server or compute tray
  Domain,  ///< one NVLink domain (an NVL72 rack: backplane, switch trays)
  Job      ///< the job as a whole (cluster-wide maintenance)
};

/// What the job needs before it can restart after a failure of this mode.
enum class Recovery : std::uint8_t {
  Restart,       ///< nothing: restart on the same hardware (software, transient faults)
  ReplaceNode,   ///< a healthy node: a spare, or the failed one back from repair
  ReplaceDomain  ///< a healthy NVLink domain: a spare, or the failed one back from repair
};

/// One failure process: independent units, each failing at exponential rate 1 / mtbf.
struct FailureMode {
  std::string name;  ///< e.g. "gpu", "hbm", "nvl_backplane"
  UnitKind unit = UnitKind::Gpu;
  double mtbf_h = 0.0;  ///< mean time between interruptions of one unit, hours
  Recovery recovery = Recovery::Restart;
  std::string source;  ///< where the figure comes from
};

/// Recovery costs and spares.
struct RecoveryInputs {
  double detection_s = 0.0;      ///< from the failure to the job noticing it, s
  double restart_s = 0.0;        ///< relaunch: scheduling, process start, communicator setup, s
  int spare_nodes = -1;          ///< hot spare nodes, -1 = as many as needed
  int spare_domains = 0;         ///< spare NVLink domains (racks), -1 = as many as needed
  double node_repair_s = 0.0;    ///< a failed node back in the pool, s (finite spares only)
  double domain_repair_s = 0.0;  ///< a failed NVLink domain back in the pool, s
};

/// Checkpointing: size and storage speed give the write and reload costs.
struct CheckpointInputs {
  double bytes = 0.0;            ///< checkpoint size (weights + optimizer state), bytes
  double write_bandwidth = 0.0;  ///< aggregate storage write bandwidth, bytes/s
  double read_bandwidth = 0.0;   ///< aggregate storage read bandwidth, bytes/s
  double interval_s = 0.0;       ///< work between checkpoints, s; 0 = Young/Daly optimum
};

/// Everything the reliability model needs besides the job's shape.
struct ReliabilityInputs {
  std::vector<FailureMode> modes;
  RecoveryInputs recovery;
  CheckpointInputs checkpoint;
  int trials = 1000;       ///< Monte-Carlo runs
  std::uint64_t seed = 1;  ///< the runs are a function of the seed (std::mt19937_64)
};

/// The job the Monte-Carlo runs.
struct RunShape {
  int gpus = 0;
  int gpus_per_node = 0;
  int gpus_per_domain = 0;
  double work_s = 0.0;  ///< failure-free training time (N tokens / throughput), s
};

/// Young/Daly checkpoint interval for checkpoint cost `checkpoint_s` and system MTBF `mtbf_s`
/// (Daly 2006, first order): sqrt(2 C M) - C when C < M / 2, else M. Seconds.
/// @throws std::invalid_argument unless both are positive.
double young_daly_interval(double checkpoint_s, double mtbf_s);

/// Failure rate of the whole job, 1/s: the sum over modes of units / mtbf.
/// Units a job only partly fills (a node, an NVLink domain) count whole: it is exposed to them.
/// @throws std::invalid_argument on a non-positive MTBF or a non-positive size in the shape.
double job_failure_rate(const std::vector<FailureMode>& modes, const RunShape& shape);

/// Mean and 95% interval of one quantity over the Monte-Carlo runs.
struct Estimate {
  double mean = 0.0;
  double ci95_low = 0.0;  ///< 95% confidence interval of the mean (normal approximation)
  double ci95_high = 0.0;
  double p05 = 0.0;  ///< 5th percentile over runs
  double p95 = 0.0;  ///< 95th percentile over runs
};

/// Result of the Monte-Carlo.
struct RunReliability {
  double system_mtbf_s = 0.0;            ///< 1 / job_failure_rate
  double checkpoint_write_s = 0.0;       ///< one checkpoint write (blocking), s
  double checkpoint_reload_s = 0.0;      ///< one reload, s
  double checkpoint_interval_s = 0.0;    ///< work between checkpoints used, s
  Estimate wall_s;                       ///< elapsed time to finish the work, s
  Estimate goodput;                      ///< work_s / mean elapsed (interval and percentiles: of elapsed, mapped)
  Estimate failures;                     ///< interruptions per run
  std::vector<double> failures_by_mode;  ///< mean interruptions per run, in `modes` order
  double lost_work_s = 0.0;              ///< mean recomputed work per run, s
  double downtime_s = 0.0;               ///< mean detection+restart+reload+waiting per run, s
  double checkpointing_s = 0.0;          ///< mean time writing checkpoints per run, s
  int trials = 0;
};

/// The most interruptions, expected over all trials, that simulate_run plays (about 0.1 us each).
inline constexpr double kMaxExpectedFailures = 1e8;

/// Runs `inputs.trials` simulated training runs of `shape.work_s` of work. Failures arrive as
/// a Poisson process (memoryless units); each one loses the work since the last checkpoint and
/// costs detection + restart + reload, plus waiting for a node or domain when its mode needs a
/// replacement and no spare is free. Failures while the job is down are not counted (the job
/// is not running). Deterministic for a given seed.
/// @throws std::invalid_argument on invalid inputs (non-positive sizes, bandwidths, trials), and
/// when the trials would hold more than kMaxExpectedFailures interruptions in all: a run whose
/// checkpoint interval plus write is many job MTBFs long barely progresses, and playing it
/// failure by failure would not end in useful time.
RunReliability simulate_run(const ReliabilityInputs& inputs, const RunShape& shape);

/// "gpu", "node", "domain", "job" / "restart", "replace_node", "replace_domain".
const char* to_string(UnitKind kind);
const char* to_string(Recovery recovery);

}  // namespace clustersim::energy
