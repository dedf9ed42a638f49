// Engine entry points: costing, planning programs into units, and running one simulation in
// a child process (SimGrid 3.32 allows one engine per process).
#include "sim/engine.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <xbt/log.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

#include "sim/detail/engine_impl.hpp"
#include "sim/log.hpp"

namespace clustersim::sim {
namespace detail {

ProgramPlan plan_program(const Program& program) {
  const auto n = static_cast<std::uint32_t>(program.ops.size());
  std::vector<std::uint16_t> waiters(n, 0);  // streams (bit mask) awaiting each op
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t d : program.ops[i].deps) {
      if (d >= i) {
        throw std::invalid_argument("op " + std::to_string(i) + " depends on op " +
                                    std::to_string(d) + ", which is not earlier in the program");
      }
      if (program.ops[d].stream != program.ops[i].stream) {
        waiters[d] |= static_cast<std::uint16_t>(1u << static_cast<unsigned>(program.ops[i].stream));
      }
    }
  }
  ProgramPlan plan;
  std::vector<int> stream_slot(kStreamCount, -1);
  for (std::uint32_t i = 0; i < n; ++i) {
    const Op& op = program.ops[i];
    const int s = static_cast<int>(op.stream);
    if (stream_slot[s] < 0) {
      stream_slot[s] = static_cast<int>(plan.streams.size());
      plan.streams.push_back(StreamPlan{op.stream, {}, {}});
    }
    StreamPlan& sp = plan.streams[static_cast<size_t>(stream_slot[s])];
    const auto pos = static_cast<std::uint32_t>(sp.ops.size());
    sp.ops.push_back(i);
    std::vector<std::uint32_t> cross;
    for (std::uint32_t d : op.deps) {
      if (program.ops[d].stream != op.stream) cross.push_back(d);
    }
    if (op.is_compute() && op.duration_s < 0.0) {
      throw std::invalid_argument("op " + std::to_string(i) + " was not costed");
    }
    // Fuse into the current compute run unless this op waits on another stream or the run's
    // last op is awaited by another stream (its completion time must then be exact).
    const bool fuse = op.is_compute() && !sp.units.empty() && sp.units.back().compute &&
                      cross.empty() && sp.units.back().waiters == 0;
    if (fuse) {
      Unit& u = sp.units.back();
      u.end = pos + 1;
      u.duration_s += op.duration_s;
    } else {
      Unit u;
      u.begin = pos;
      u.end = pos + 1;
      u.compute = op.is_compute();
      u.duration_s = op.is_compute() ? op.duration_s : 0.0;
      u.deps = std::move(cross);
      sp.units.push_back(std::move(u));
    }
    sp.units.back().waiters = waiters[i];
  }
  return plan;
}

}  // namespace detail

std::string replica_reduction_problem(const Workload& workload) {
  return detail::replica_reduction_problem(workload);
}

int replica_representative(const Workload& workload, int rank) {
  return detail::replica_source(workload, rank);
}

namespace {

// A DeepEP token exchange on the ep_comm stream runs beside compute (combined 1F1B).
bool has_side_token_exchange(const Program& program) {
  for (const Op& op : program.ops) {
    const auto* c = std::get_if<CollectiveSpec>(&op.shape);
    if (c != nullptr && c->kind == CollectiveKind::TokenExchange && op.stream == Stream::EpComm) return true;
  }
  return false;
}

void check_held(double slowdown) {
  if (!(slowdown >= 1.0)) {
    throw std::invalid_argument("cost model returned a held-SM slowdown below 1 (" +
                                std::to_string(slowdown) + ")");
  }
}

}  // namespace

void cost_workload(Workload& workload, const CostModel& cost) {
  for (Program& program : workload.programs) {
    const bool deepep_beside = has_side_token_exchange(program);
    for (Op& op : program.ops) {
      if (!op.is_compute()) continue;
      op.duration_s = cost.compute_time(op);
      const auto* g = std::get_if<GemmShape>(&op.shape);
      if (g != nullptr && g->busy_sms > 0) op.held_slowdown = cost.held_sm_slowdown(op);
      check_held(op.held_slowdown);
      if (g != nullptr && deepep_beside) {
        // The same GEMM with DeepEP's SMs held instead (its own plan and margin kept).
        Op held = op;
        std::get<GemmShape>(held.shape).busy_sms = kDeepEpSms;
        op.ep_held_slowdown = cost.held_sm_slowdown(held);
        check_held(op.ep_held_slowdown);
      }
    }
  }
}

namespace {

bool on_host(const Op& op) {
  const auto* m = std::get_if<MemBoundShape>(&op.shape);
  return m != nullptr && is_host_kernel(m->kernel);
}

bool power_limited(const Op& op) {
  return op.is_compute() && compute_class(op) != ComputeClass::MemoryBound;
}

double checked_state(const CostModel& cost, const Op& op) {
  const double k = cost.sustained_state(op);
  if (!(k > 0.0 && k <= 2.0)) {
    throw std::invalid_argument("cost model returned a sustained-state ratio outside (0, 2] (" +
                                std::to_string(k) + ")");
  }
  return k;
}

}  // namespace

double compute_bound_seconds(const Program& program) {
  double bound = 0.0;
  for (const Op& op : program.ops) {
    if (power_limited(op)) bound += op.duration_s;
  }
  return bound;
}

double power_state_share(const Program& program, const CostModel& cost) {
  double bound = 0.0, all = 0.0;
  for (const Op& op : program.ops) {
    if (!op.is_compute() || on_host(op)) continue;
    if (power_limited(op)) {
      const double t = op.duration_s / checked_state(cost, op);
      bound += t;
      all += t;
    } else {
      all += op.duration_s;
    }
  }
  return all > 0.0 ? bound / all : 0.0;
}

std::vector<double> power_state_shares(const Workload& workload, const CostModel& cost) {
  std::vector<double> shares;
  shares.reserve(workload.programs.size());
  for (const Program& program : workload.programs) shares.push_back(power_state_share(program, cost));
  return shares;
}

void apply_power_state(Workload& workload, const CostModel& cost) {
  apply_power_state(workload, cost, power_state_shares(workload, cost));
}

void apply_power_state(Workload& workload, const CostModel& cost, const std::vector<double>& shares) {
  if (shares.size() != workload.programs.size()) {
    throw std::invalid_argument("apply_power_state: " + std::to_string(shares.size()) +
                                " shares for " + std::to_string(workload.programs.size()) + " programs");
  }
  for (std::size_t p = 0; p < workload.programs.size(); ++p) {
    Program& program = workload.programs[p];
    const double share = shares[p];
    for (Op& op : program.ops) {
      if (!power_limited(op)) continue;
      const double boost = cost.clock_boost(op, share);
      if (!(boost >= 1.0)) {
        throw std::invalid_argument("cost model returned a clock boost below 1 (" +
                                    std::to_string(boost) + ")");
      }
      op.duration_s /= checked_state(cost, op) * boost;
    }
  }
}

namespace {

// --- Minimal binary serialization of StepResult across the pipe (exact doubles). ---
template <typename T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_string(std::string& out, const std::string& s) {
  put<std::uint64_t>(out, s.size());
  out += s;
}
template <typename T>
T get(const std::string& in, size_t& pos) {
  if (pos + sizeof(T) > in.size()) throw std::runtime_error("truncated simulation result");
  T v;
  std::memcpy(&v, in.data() + pos, sizeof v);
  pos += sizeof v;
  return v;
}
std::string get_string(const std::string& in, size_t& pos) {
  const auto n = get<std::uint64_t>(in, pos);
  if (pos + n > in.size()) throw std::runtime_error("truncated simulation result");
  std::string s = in.substr(pos, n);
  pos += n;
  return s;
}

std::string serialize(const StepResult& r) {
  std::string out;
  put(out, r.step_time_s);
  put(out, r.breakdown.compute_s);
  put(out, r.breakdown.exposed_comm_s);
  put(out, r.breakdown.bubble_s);
  for (double g : r.breakdown.exposed_by_group_s) put(out, g);
  put(out, r.breakdown.exposed_other_s);
  put(out, r.events);
  put(out, r.tp_estimated);
  put(out, r.tp_folded);
  put(out, r.sim_wall_s);
  put<std::uint64_t>(out, r.algorithm_fallbacks.size());
  for (const auto& f : r.algorithm_fallbacks) put_string(out, f);
  put<std::uint64_t>(out, r.timeline.size());
  for (const auto& e : r.timeline) {
    put(out, e.rank);
    put(out, e.stream);
    put_string(out, e.name);
    put(out, e.start_s);
    put(out, e.end_s);
    put(out, e.op);
  }
  return out;
}

StepResult deserialize(const std::string& in) {
  StepResult r;
  size_t pos = 0;
  r.step_time_s = get<double>(in, pos);
  r.breakdown.compute_s = get<double>(in, pos);
  r.breakdown.exposed_comm_s = get<double>(in, pos);
  r.breakdown.bubble_s = get<double>(in, pos);
  for (double& g : r.breakdown.exposed_by_group_s) g = get<double>(in, pos);
  r.breakdown.exposed_other_s = get<double>(in, pos);
  r.events = get<std::uint64_t>(in, pos);
  r.tp_estimated = get<bool>(in, pos);
  r.tp_folded = get<bool>(in, pos);
  r.sim_wall_s = get<double>(in, pos);
  const auto nf = get<std::uint64_t>(in, pos);
  for (std::uint64_t i = 0; i < nf; ++i) r.algorithm_fallbacks.push_back(get_string(in, pos));
  const auto n = get<std::uint64_t>(in, pos);
  r.timeline.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    TimelineEvent e;
    e.rank = get<std::int32_t>(in, pos);
    e.stream = get<Stream>(in, pos);
    e.name = get_string(in, pos);
    e.start_s = get<double>(in, pos);
    e.end_s = get<double>(in, pos);
    e.op = get<std::int32_t>(in, pos);
    r.timeline.push_back(std::move(e));
  }
  return r;
}

StepResult simulate_here(const Workload& workload, const PlatformBuilder& platform,
                         const CostModel& cost, const EngineOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  int argc = 1;
  char name[] = "clustersim";
  char* argv[] = {name, nullptr};
  // SimGrid prints configuration changes at INFO level; keep stderr for real problems.
  xbt_log_control_set("root.thresh:critical");
  simgrid::s4u::Engine engine(&argc, argv);
  apply_network_config(engine);
#ifdef CLUSTERSIM_SANITIZE
  // Sanitizers cannot follow SimGrid's hand-made stack switching (raw/ucontext); system
  // threads as actor contexts keep AddressSanitizer exact (slower, fine for tests).
  engine.set_config("contexts/factory:thread");
#endif
  const BuiltPlatform built = platform.build(engine);
  StepResult result;
  detail::play(engine, workload, built, cost, options, result);
  result.sim_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace

StepResult simulate_step(const Workload& workload, const PlatformBuilder& platform,
                         const CostModel& cost, const EngineOptions& options) {
  if (workload.layout.world() > platform.gpu_count()) {
    throw std::invalid_argument("the job has " + std::to_string(workload.layout.world()) +
                                " ranks but the platform only " +
                                std::to_string(platform.gpu_count()) + " GPUs");
  }
  if (workload.program_of_rank.size() != static_cast<size_t>(workload.layout.world())) {
    throw std::invalid_argument("program_of_rank must have one entry per rank");
  }
  for (const Program& p : workload.programs) (void)detail::plan_program(p);  // validate early
  if (options.in_process) return simulate_here(workload, platform, cost, options);
  return deserialize(run_in_subprocess(
      [&] { return serialize(simulate_here(workload, platform, cost, options)); }));
}

}  // namespace clustersim::sim
