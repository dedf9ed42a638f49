// One rank's program as JSON lines (docs/trace-format.md): a header line (format, version,
// rank, layout, coordinates, labels, op count) and one line per op. The reader is strict:
// unknown keys, wrong types, bad enum names, dependencies on later ops and a wrong op count
// are SpecErrors with file:line.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "sim/rank_layout.hpp"
#include "sim/trace.hpp"
#include "sim/workload.hpp"

namespace clustersim::workloads {

/// Version written in the header line. Version 2 added ep, etp and the five-dimension order to
/// the layout, and the expert, dp_cp and emb groups, the cp_comm stream and the host memory
/// kernels; version 3 the optional GEMM `splits` and `sm_margin`; version 4 the amax group
/// (and its coordinate in the header) and the amax_comm stream; version 5 the optional GEMM
/// `busy_sms`; version 6 the host kernels host_elementwise, host_cast and host_copy_pageable and
/// the optional `host_threads` of mem ops; version 7 the optional GEMM `grad_accum`; version 8
/// the optional attention `kernel`; version 9 the optional GEMM `groups` and `group_axis`;
/// version 10 the ep_comm stream; version 11 the token_exchange collective; version 12 the GEMM
/// `fp8_scaling`; version 13 the d2h and h2d copy streams (activation offloading); version 14
/// the ring_shift collective. The reader accepts versions 1 to 14 (version 1: ep = etp = 1).
inline constexpr int kTraceFormatVersion = 15;

/// A trace read back: which rank it was, its layout and its program.
struct RankTrace {
  int rank = 0;
  int program_index = 0;       ///< index of the program in the workload it came from
  std::string description;     ///< the workload's one-line description
  sim::RankLayout layout{1, 1, 1, 1};
  sim::Program program;
};

/// Writes the program of `rank` of `workload`. Deterministic.
/// @throws std::out_of_range for a rank outside the layout.
void write_rank_trace(std::ostream& out, const sim::Workload& workload, int rank);

/// Same, into a file. @throws std::runtime_error if the file cannot be written.
void write_rank_trace_file(const std::string& path, const sim::Workload& workload, int rank);

/// Reads a trace; `origin` names the input in errors. @throws SpecError (origin, line, field,
/// reason) on any malformed line.
RankTrace read_rank_trace(std::istream& in, const std::string& origin);

/// Same, from a file. @throws SpecError, also when the file cannot be opened.
RankTrace read_rank_trace_file(const std::string& path);

/// Assembles a playable workload from traces read back (generated here or brought from
/// elsewhere): the layout of the first trace, one program per pipeline stage taken from the
/// trace of any rank of that stage (ranks of a stage run the same program, as generated
/// workloads do), accounting from the ops (hardware FLOPs = sum over all ranks, model FLOPs
/// = hardware FLOPs minus recomputed ops, convention "trace"). Ops keep their duration_s.
/// @throws SpecError (origin of the offending trace) when layouts differ or a stage has no trace.
sim::Workload assemble_workload(const std::vector<RankTrace>& traces);

}  // namespace clustersim::workloads
