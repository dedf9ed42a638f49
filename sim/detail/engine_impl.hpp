// Internals of the engine shared by engine.cpp (planning, process handling) and
// engine_actors.cpp (the SimGrid actors). Not part of the public API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine.hpp"

namespace clustersim::sim::detail {

/// A unit of execution on one stream: a run of consecutive compute ops fused into one simulated
/// interval (they would run back to back anyway), or a single communication op.
struct Unit {
  std::uint32_t begin = 0;      ///< first position in StreamPlan::ops
  std::uint32_t end = 0;        ///< one past the last position
  bool compute = true;          ///< compute run (else one communication op)
  double duration_s = 0.0;      ///< sum of op durations (compute runs)
  std::vector<std::uint32_t> deps;  ///< ops on other streams that must be done before the unit
  std::uint16_t waiters = 0;    ///< bit s set: an op of stream s depends on this unit's last op
};

/// The ops of one stream of a program, grouped into units.
struct StreamPlan {
  Stream stream = Stream::Compute;
  std::vector<std::uint32_t> ops;  ///< op indices of this stream in program order
  std::vector<Unit> units;
};

/// Execution plan of a program: one StreamPlan per stream that has ops.
struct ProgramPlan {
  std::vector<StreamPlan> streams;
};

/// Groups the ops of a costed program into units. @throws std::invalid_argument on a dep that
/// does not point to an earlier op or on an uncosted compute op.
ProgramPlan plan_program(const Program& program);

/// The dimension along which ranks are identical replicas for the identical-replica reduction:
/// DP, or with expert parallelism EDP (expert all-to-alls tie the EP data-parallel ranks of a
/// stage together; ranks that differ only in their expert-data-parallel coordinate run the same
/// program and meet only in expert and dense gradient collectives).
GroupKind replica_kind(const Workload& w);

/// The representative of rank's replica group, which the reduction plays in full: its member
/// with replica_kind coordinate 0.
int replica_source(const Workload& w, int rank);

/// Why the identical-replica reduction cannot run this workload ("" when it can).
std::string replica_reduction_problem(const Workload& workload);

/// For each program (seen from its first rank), which streams hold only collectives whose group
/// spans data-parallel replicas (played by the mirrors of the identical-replica reduction).
/// Sets `problem` to the reason when a stream mixes those with other ops; else leaves it.
std::vector<std::vector<bool>> replica_streams(const Workload& w,
                                               const std::vector<ProgramPlan>& plans,
                                               std::string& problem);

/// True if the expert-tensor-parallel groups are the TP groups (etp = tp, Megatron-core's
/// default): their collectives then run on the TP rings' links and are treated as TP ones.
bool etp_is_tp(const Workload& w);

/// True if every TP group lies inside one NVLink domain of `domain_size` GPUs and every other
/// communicator the programs use (AMAX aside, which is always costed; pipeline transfers count
/// as PP; ETP groups that are the TP groups count as TP) has its members in distinct domains: NVLink then carries TP traffic only (routes of
/// different classes never share a link, docs/platforms.md), and a TP collective contends with
/// nothing but its own ring (EngineOptions::cost_isolated_tp).
bool tp_isolated(const Workload& w, int domain_size);

/// Why one rank per TP group cannot stand for the others (EngineOptions::fold_tp), "" when it
/// can: a shift of the TP coordinate by t maps every rank to a rank running the same program,
/// and every communicator the programs play (TP and AMAX are estimated; pipeline transfers
/// count as PP) has its members on one TP coordinate and is mapped onto a communicator of the
/// same kind, member by member.
std::string tp_fold_problem(const Workload& w);

/// Plays the workload in an engine that already holds the platform; fills `result`.
/// Must run inside a process that owns no other SimGrid engine.
void play(simgrid::s4u::Engine& engine, const Workload& workload, const BuiltPlatform& platform,
          const CostModel& cost, const EngineOptions& options, StepResult& result);

}  // namespace clustersim::sim::detail
