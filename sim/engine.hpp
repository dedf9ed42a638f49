// The engine: plays a costed Workload on a platform inside SimGrid and measures one training
// step. SimGrid 3.32 allows one engine per process, so simulate_step() runs the simulation in a
// forked child and returns its result; the caller's process never holds a SimGrid engine.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/cost_model.hpp"
#include "sim/platform.hpp"
#include "sim/workload.hpp"

namespace clustersim::sim {

/// One interval of one stream of one rank, for the Chrome/Perfetto trace.
struct TimelineEvent {
  std::int32_t rank = 0;
  Stream stream = Stream::Compute;
  std::string name;    ///< op label; collectives add "kind group bytes", e.g. "tp_ag all_gather tp 37.7MB"
  double start_s = 0.0;
  double end_s = 0.0;
  /// Index of the op in the rank's program (Workload::program(rank).ops); -1 for none.
  std::int32_t op = -1;
};

/// Engine options.
struct EngineOptions {
  bool record_timeline = false;  ///< keep every op interval (memory grows with ops x ranks)
  /// With record_timeline: the ranks to record (empty: all), so large runs keep small traces.
  std::vector<int> timeline_ranks;
  bool in_process = false;       ///< run in this process (only once per process; for plugins)
  /// Reduction "identical data-parallel replicas" (docs/engine.md): only the replica with DP
  /// coordinate 0 (EDP coordinate 0 with expert parallelism, whose all-to-alls tie DP ranks
  /// together) plays its whole program; the ranks of the other replicas play only their
  /// data-parallel collectives (as flows, contending on the fabric like the real ones), timed by
  /// the representative's compute. Exact when replicas interact only through DP collectives on
  /// streams of their own (checked; std::invalid_argument otherwise).
  bool identical_dp_replicas = false;
  /// Collective algorithm for every collective ("ring", "tree", "hierarchical", "nvls",
  /// "pairwise"), as NCCL_ALGO forces it; empty: chosen per call by NCCL's cost model
  /// (docs/engine.md). A forced algorithm that cannot run a call falls back to ring/pairwise.
  std::string nccl_algo;
  /// NCCL protocol of collectives over NVLink (NCCL_PROTO): Default is the one NCCL picked on the
  /// calibration machine at each size; LL, LL128, Simple force one; Auto takes the fastest of
  /// the cost model's per-protocol figures at each size (docs/engine.md).
  NcclProtocol nccl_proto = NcclProtocol::Default;
  /// Compute/communication interference (docs/engine.md): while a communication op runs on a
  /// rank's communication stream, its compute runs CostModel::interference's compute_slowdown
  /// times slower, and a collective that starts while the rank computes moves its NVLink bytes
  /// comm_slowdown times slower. false: compute and communication overlap for free.
  bool interference = true;
  /// Charge tensor-parallel collectives the NCCL-tuner estimate of their algorithm instead of
  /// playing them as flows when nothing else can share their links: every TP group lies inside
  /// one NVLink domain and every other communicator has its members in distinct domains, so
  /// only TP traffic crosses NVLink (docs/engine.md). The TP ranks run one program in lock
  /// step, so the estimate is what each waits; at 16,384 GPUs TP collectives are most of the
  /// flows. Needs BuiltPlatform::nvlink_bandwidth > 0. false: play them (tests compare the two).
  bool cost_isolated_tp = true;
  /// With TP collectives estimated (cost_isolated_tp applied), play one rank per TP group (TP
  /// coordinate 0) and give the others its results: the TP ranks then run one program without
  /// touching each other, and their other traffic runs on rails of its own. Links that several
  /// TP coordinates' traffic shares (spine-group uplinks, leaves serving several rails) carry
  /// 1/k of their bandwidth for the one played coordinate, k the coordinates sharing them, so
  /// max-min sharing gives every flow the rate it has in the full simulation (docs/engine.md).
  /// Applied only when the workload is symmetric under a shift of the TP coordinate (same
  /// program, every other communicator within one coordinate, groups mapped onto groups);
  /// a route that breaks the symmetry stops the simulation with std::runtime_error.
  bool fold_tp = true;
};

/// Time accounting of a step, averaged over ranks. compute + exposed_comm + bubble equals the
/// step time for every rank, hence for the average:
///  - compute: the rank's compute stream busy;
///  - bubble: the compute stream waiting on pipeline point-to-point exchanges (that is the
///    pipeline fill/drain plus the transfers) or idle after the rank's last op;
///  - exposed_comm: the compute stream waiting on any other communication.
///  exposed_comm is split by what the compute stream waited for: the communicator
///  (GroupKind) of the collective it ran or whose completion let it go on last, or, in
///  exposed_other_s, a wait on other work of another stream (a host copy, a host optimizer
///  step); the parts add up to exposed_comm_s.
struct Breakdown {
  double compute_s = 0.0;
  double exposed_comm_s = 0.0;
  double bubble_s = 0.0;
  std::array<double, kGroupKindCount> exposed_by_group_s{};  ///< indexed by GroupKind
  double exposed_other_s = 0.0;
};

/// Result of simulating one training step.
struct StepResult {
  double step_time_s = 0.0;
  Breakdown breakdown;
  std::uint64_t events = 0;       ///< simulated activities (computes + flows) completed
  /// TP collectives were charged NCCL's estimate instead of played (EngineOptions::cost_isolated_tp).
  bool tp_estimated = false;
  /// One rank per TP group was played (EngineOptions::fold_tp).
  bool tp_folded = false;
  double sim_wall_s = 0.0;        ///< wall-clock time of the simulation itself
  std::vector<TimelineEvent> timeline;
  /// Collectives that could not run EngineOptions::nccl_algo and what ran instead, with the
  /// number of calls (counted at each group's first member): "tree forced, all_reduce of group
  /// amax over 2 NVLink domain(s): ring (16 calls)". Empty without a forced algorithm.
  std::vector<std::string> algorithm_fallbacks;
};

/// Why EngineOptions::identical_dp_replicas cannot apply to `workload` (a collective spanning
/// replicas shares a stream with other ops, or there is one replica); "" when it can.
std::string replica_reduction_problem(const Workload& workload);

/// The rank that EngineOptions::identical_dp_replicas plays in full in `rank`'s place (`rank`
/// itself when it is played in full): its replica group's member of data-parallel coordinate 0
/// (expert-data-parallel with expert parallelism). @throws std::out_of_range for a bad rank.
int replica_representative(const Workload& workload, int rank);

/// Fills Op::duration_s of every compute op of every program from `cost`, and Op::held_slowdown
/// of GEMMs with busy SMs (CostModel::held_sm_slowdown).
/// @throws std::invalid_argument if the cost model returns a held-SM slowdown below 1.
void cost_workload(Workload& workload, const CostModel& cost);

/// Seconds of a program's compute-bound ops (GEMMs and attention) at their costed durations.
double compute_bound_seconds(const Program& program);

/// The share of a program's GPU compute time (host-side ops excluded) in compute-bound ops,
/// GEMMs and attention, each at its sustained state (its costed duration /
/// CostModel::sustained_state): the share the power state's boost curves are indexed by; 0 for
/// a program without compute.
/// @throws std::invalid_argument if the model returns a state ratio outside (0, 2].
double power_state_share(const Program& program, const CostModel& cost);

/// The power state (docs/cost-model.md): on each rank, divides the duration of every GEMM and
/// attention op by CostModel::sustained_state x CostModel::clock_boost at the rank's
/// power_state_share. Call after cost_workload. Deterministic. @throws std::invalid_argument
/// if the model returns a boost below 1 or a state ratio outside (0, 2].
void apply_power_state(Workload& workload, const CostModel& cost);

/// power_state_share of each of the workload's programs, in Workload::programs order.
/// @throws std::invalid_argument as power_state_share.
std::vector<double> power_state_shares(const Workload& workload, const CostModel& cost);

/// apply_power_state with the given share for each program instead of the program's own: a
/// shortened step (docs/engine.md, "Steady-state window") takes the shares of the whole step.
/// @throws std::invalid_argument as apply_power_state, or if `shares` does not hold one share
/// per program.
void apply_power_state(Workload& workload, const CostModel& cost, const std::vector<double>& shares);

/// Simulates one step of a costed workload. Ranks map to platform GPUs one to one.
/// @throws std::invalid_argument if the workload has more ranks than the platform has GPUs
/// or is not costed; std::runtime_error if the simulation deadlocks or the child dies.
StepResult simulate_step(const Workload& workload, const PlatformBuilder& platform,
                         const CostModel& cost, const EngineOptions& options = {});

/// Runs `fn` in a forked child process and returns the bytes it produced. Exceptions in the
/// child come back as std::runtime_error with their message. Each child can host one SimGrid
/// engine, so tests and sweeps can run many simulations from one process.
std::string run_in_subprocess(const std::function<std::string()>& fn);

/// A forked child running a function: its process id and the read end of the pipe on which
/// it writes a status byte ('O' ok, 'E' error) followed by the result or the error message.
struct Subprocess {
  int pid = -1;
  int fd = -1;
};

/// What a child produced, once its pipe reached end of file and it was waited for.
struct SubprocessResult {
  bool ok = false;       ///< the function returned (else `payload` is the error message)
  std::string payload;   ///< the function's bytes, or why it failed or died
  double cpu_s = 0.0;    ///< the child's user + system CPU time, s
};

/// Forks a child that runs `fn`, writes its outcome to the pipe and exits. `who` names the
/// child in error messages ("simulation process"). @throws std::runtime_error if pipe or fork
/// fails.
Subprocess spawn_subprocess(const std::function<std::string()>& fn, const std::string& who);

/// Closes the child's pipe, waits for it and decodes `data` (everything read from the pipe).
/// A child that wrote nothing died: the payload says how. Never throws.
SubprocessResult reap_subprocess(const Subprocess& child, const std::string& data,
                                 const std::string& who);

}  // namespace clustersim::sim
