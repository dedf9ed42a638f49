// One rank's simulated step by op label (tools/op_profile.hpp).
#include "tools/op_profile.hpp"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <variant>

#include "sim/spec_error.hpp"

namespace clustersim::tools {
namespace {

constexpr std::array<const char*, 4> kComputeKinds = {"gemm", "attention", "memory-bound", "host"};
constexpr std::array<const char*, 4> kPhases = {"forward", "backward", "optimizer", "recompute"};

// Index into kComputeKinds of a compute op, or -1 for communication.
int compute_kind(const sim::Op& op) {
  if (std::holds_alternative<sim::GemmShape>(op.shape)) return 0;
  if (std::holds_alternative<sim::AttentionShape>(op.shape)) return 1;
  if (const auto* m = std::get_if<sim::MemBoundShape>(&op.shape)) {
    return sim::is_host_kernel(m->kernel) ? 3 : 2;
  }
  return -1;
}

std::string kind_name(const sim::Op& op) {
  const int k = compute_kind(op);
  if (k >= 0) return kComputeKinds[static_cast<std::size_t>(k)];
  return op.is_p2p() ? "p2p" : "collective";
}

using RowKey = std::tuple<std::string, std::string, std::string, bool>;  // label kind stream rc

void add_event(OpProfile& p, std::map<RowKey, OpProfileRow>& rows, const sim::Program& program,
               const sim::TimelineEvent& e) {
  if (e.op < 0 || static_cast<std::size_t>(e.op) >= program.ops.size()) {
    throw std::invalid_argument("timeline event of rank " + std::to_string(e.rank) +
                                " names no op of its program");
  }
  const sim::Op& op = program.ops[static_cast<std::size_t>(e.op)];
  const double busy = e.end_s - e.start_s;
  const std::string kind = kind_name(op);
  const std::string stream = sim::to_string(e.stream);
  const std::string& label = program.labels.at(op.label);
  OpProfileRow& row = rows[RowKey{label, kind, stream, op.recompute}];
  row.label = label;
  row.kind = kind;
  row.stream = stream;
  row.recompute = op.recompute;
  ++row.calls;
  row.busy_s += busy;
  row.flops += op.flops;
  row.bytes += op.bytes;
  const int k = compute_kind(op);
  if (e.stream != sim::Stream::Compute || k < 0) return;
  p.compute_busy_s += busy;
  p.compute_by_kind_s[static_cast<std::size_t>(k)] += busy;
  const std::size_t phase = op.recompute ? 3 : static_cast<std::size_t>(op.phase);
  p.compute_by_phase_s[phase] += busy;
}

std::string percent(double part, double whole) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << (whole > 0 ? 100.0 * part / whole : 0.0) << "%";
  return out.str();
}

// "gemm 5.123 s (71.9%), attention ..." over the non-zero entries of `seconds`.
template <std::size_t N>
std::string shares(const std::array<const char*, N>& names, const std::array<double, N>& seconds,
                   double whole) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(3);
  for (std::size_t i = 0; i < N; ++i) {
    if (seconds[i] <= 0.0) continue;
    out << (out.tellp() > 0 ? ", " : "") << names[i] << " " << seconds[i] << " s ("
        << percent(seconds[i], whole) << ")";
  }
  return out.str();
}

}  // namespace

void check_profiled_rank(const sim::Workload& workload, int rank, bool identical_replicas) {
  const int world = workload.layout.world();
  if (rank < 0 || rank >= world) {
    throw SpecError("--profile-rank", 0, "", std::to_string(rank) + " is not a rank of this " +
                                                 std::to_string(world) + "-GPU job");
  }
  const int played = sim::replica_representative(workload, rank);
  if (!identical_replicas || played == rank) return;
  throw SpecError("--profile-rank", 0, "",
                  "rank " + std::to_string(rank) + " plays only its data-parallel collectives "
                  "under the identical-replica reduction (docs/engine.md): profile rank " +
                  std::to_string(played) + ", which holds its place in the replica played in "
                  "full, or simulate with --replicas full");
}

OpProfile profile_rank(const sim::Workload& workload, const sim::StepResult& step, int rank) {
  const int world = workload.layout.world();
  if (rank < 0 || rank >= world) {
    throw std::invalid_argument("rank " + std::to_string(rank) + " is not in [0, " +
                                std::to_string(world - 1) + "]");
  }
  OpProfile p;
  p.rank = rank;
  p.pipeline_stage = workload.layout.coord(rank, sim::GroupKind::PP);
  p.step_s = step.step_time_s;
  const sim::Program& program = workload.program(rank);
  std::map<RowKey, OpProfileRow> rows;
  for (const sim::TimelineEvent& e : step.timeline) {
    if (e.rank == rank) add_event(p, rows, program, e);
  }
  if (p.compute_busy_s <= 0.0) {
    throw std::invalid_argument("rank " + std::to_string(rank) +
                                " ran no compute op in the recorded step");
  }
  for (auto& [key, row] : rows) p.rows.push_back(std::move(row));
  std::stable_sort(p.rows.begin(), p.rows.end(), [](const OpProfileRow& a, const OpProfileRow& b) {
    return a.busy_s > b.busy_s;
  });
  return p;
}

std::string op_profile_text(const OpProfile& p, std::size_t top) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(3);
  out << "op profile    rank " << p.rank << " (pipeline stage " << p.pipeline_stage
      << "): its streams' simulated intervals; compute stream computing " << p.compute_busy_s
      << " s of the " << p.step_s << " s step\n";
  out << "  by kind     " << shares(kComputeKinds, p.compute_by_kind_s, p.compute_busy_s) << "\n";
  out << "  by phase    " << shares(kPhases, p.compute_by_phase_s, p.compute_busy_s) << "\n";
  out << "  " << std::left << std::setw(24) << "label" << std::setw(13) << "kind" << std::setw(9)
      << "stream" << std::right << std::setw(8) << "calls" << std::setw(10) << "time s"
      << std::setw(8) << "share" << std::setw(10) << "TFLOP/s" << std::setw(10) << "GB/s" << "\n";
  const std::size_t shown = std::min(top, p.rows.size());
  for (std::size_t i = 0; i < shown; ++i) {
    const OpProfileRow& r = p.rows[i];
    const bool compute = r.stream == "compute" && r.kind != "collective" && r.kind != "p2p";
    out << "  " << std::left << std::setw(24) << (r.recompute ? r.label + " (rc)" : r.label)
        << std::setw(13) << r.kind << std::setw(9) << r.stream << std::right << std::setw(8)
        << r.calls << std::setw(10) << std::setprecision(3) << r.busy_s << std::setw(8)
        << percent(r.busy_s, compute ? p.compute_busy_s : p.step_s) << std::setprecision(1);
    if (r.flops > 0 && r.busy_s > 0) {
      out << std::setw(10) << r.flops / r.busy_s / 1e12;
    } else {
      out << std::setw(10) << "-";
    }
    if (r.bytes > 0 && r.busy_s > 0) out << std::setw(10) << r.bytes / r.busy_s / 1e9;
    out << "\n";
  }
  if (shown < p.rows.size()) {
    out << "  ... " << p.rows.size() - shown << " more rows (all in --json profile.rows)\n";
  }
  out << "  share: compute ops on the compute stream of its computing time, the other rows of the "
         "step (in flight, which is not exposed); GB/s: HBM traffic, or message bytes (algorithm "
         "bandwidth); (rc): recomputed forward\n";
  return out.str();
}

nlohmann::ordered_json op_profile_json(const OpProfile& p) {
  nlohmann::ordered_json j;
  j["rank"] = p.rank;
  j["pipeline_stage"] = p.pipeline_stage;
  j["step_time_s"] = p.step_s;
  j["compute_busy_s"] = p.compute_busy_s;
  nlohmann::ordered_json kinds;
  for (std::size_t i = 0; i < kComputeKinds.size(); ++i) kinds[kComputeKinds[i]] = p.compute_by_kind_s[i];
  j["compute_by_kind_s"] = kinds;
  nlohmann::ordered_json phases;
  for (std::size_t i = 0; i < kPhases.size(); ++i) phases[kPhases[i]] = p.compute_by_phase_s[i];
  j["compute_by_phase_s"] = phases;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const OpProfileRow& r : p.rows) {
    rows.push_back({{"label", r.label}, {"kind", r.kind}, {"stream", r.stream},
                    {"recompute", r.recompute}, {"calls", r.calls}, {"busy_s", r.busy_s},
                    {"flops", r.flops}, {"bytes", r.bytes}});
  }
  j["rows"] = rows;
  return j;
}

}  // namespace clustersim::tools
