// Where one rank's simulated step goes, op label by op label (`clustersim run --profile`): the
// intervals the engine played on each of the rank's streams, summed per label, with the FLOPs
// and bytes of those ops, as a GPU profiler's kernel summary would list them. Documented in
// docs/outputs.md ("Op profile").
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine.hpp"
#include "sim/workload.hpp"

namespace clustersim::tools {

/// The ops of one label, kind and stream of one rank, summed over the step.
struct OpProfileRow {
  std::string label;       ///< the program's label ("fc1", "attn_bwd", "dp_rs", ...)
  std::string kind;        ///< gemm, attention, memory-bound, host, collective or p2p
  std::string stream;      ///< the stream it ran on (sim::to_string(Stream))
  bool recompute = false;  ///< recomputed forward work (activation recomputation)
  std::int64_t calls = 0;  ///< ops played
  double busy_s = 0.0;     ///< their simulated intervals summed, s
  double flops = 0.0;      ///< FLOPs they execute
  double bytes = 0.0;      ///< HBM traffic (compute ops) or message bytes (communication), bytes
};

/// One rank's step by op label.
struct OpProfile {
  int rank = 0;
  int pipeline_stage = 0;
  double step_s = 0.0;           ///< the step's time, s
  /// The rank's compute stream running compute ops (its share of Breakdown::compute_s), s.
  double compute_busy_s = 0.0;
  /// compute_busy_s by phase: forward (recompute excluded), backward, optimizer, and
  /// recomputed forwards, s.
  std::array<double, 4> compute_by_phase_s{};
  /// compute_busy_s by kind: gemm, attention, memory-bound, host, s.
  std::array<double, 4> compute_by_kind_s{};
  std::vector<OpProfileRow> rows;  ///< longest first (ties by label, kind, stream)
};

/// Checks, before simulating, that `rank` can be profiled: a rank of the workload, and with the
/// identical-replica reduction one that is played in full.
/// @throws SpecError (at `--profile-rank`) otherwise, naming the rank played in its place.
void check_profiled_rank(const sim::Workload& workload, int rank, bool identical_replicas);

/// The profile of `rank` from a step simulated with its timeline recorded.
/// @throws std::invalid_argument if rank is outside the workload, the timeline holds no compute
/// interval of it (not recorded, or not played in full), or an interval names no op.
OpProfile profile_rank(const sim::Workload& workload, const sim::StepResult& step, int rank);

/// Report lines: the rank's compute by kind and phase, then the `top` longest rows.
std::string op_profile_text(const OpProfile& profile, std::size_t top);

/// The `profile` object of run's JSON (docs/outputs.md).
nlohmann::ordered_json op_profile_json(const OpProfile& profile);

}  // namespace clustersim::tools
