// Compute/communication interference (docs/engine.md): while a communication op of a rank is in
// flight on one of its communication streams, the rank's compute runs at 1/compute_slowdown of
// its rate, piecewise exactly: the compute stream waits (on a semaphore, with a timeout) for the
// time its remaining work takes at the current rate and is woken whenever the rate changes. The factors are the cost model's
// (CostModel::interference; measured: calib/data/h200/interference.csv).
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <limits>

#include "sim/detail/engine_state.hpp"

namespace clustersim::sim::detail {
namespace {

namespace sg4 = simgrid::s4u;

/// How far a compute unit got: position in StreamPlan::ops and full-rate seconds left in it.
struct Progress {
  std::uint32_t pos = 0;
  double left = 0.0;
};

// The collective's factor for the op's class times, while a TP communication kernel holds SMs,
// the op's own held-SM factor (1 unless it is a GEMM with busy SMs), times, while a DeepEP
// exchange holds SMs, its factor for that. Each was measured alone; the product for several at
// once is an assumption (docs/engine.md).
double slowdown(const Rate& f, const Op& op) {
  double s = f.comm == nullptr ? 1.0 : f.comm->overlap[static_cast<size_t>(compute_class(op))].compute_slowdown;
  if (f.held) s *= op.held_slowdown;
  if (f.ep_held) s *= op.ep_held_slowdown;
  // A kernel beside host copies takes a fixed time and a share of its own longer (calibration
  // runs 80-81), charged over the op's duration.
  if (f.copy != nullptr && op.duration_s > 0.0) {
    const CopyDelay& d = (*f.copy)[static_cast<size_t>(compute_class(op))];
    s *= 1.0 + d.share + d.fixed_s / op.duration_s;
  }
  return s;
}

/// Wall time the rest of the unit takes at the rate `f` leaves.
double time_to_finish(const Progress& p, const RankState& r, const StreamPlan& sp, const Unit& u,
                      const Rate& f) {
  const auto& ops = r.program->ops;
  double t = p.left * slowdown(f, ops[sp.ops[p.pos]]);
  for (std::uint32_t i = p.pos + 1; i < u.end; ++i) t += ops[sp.ops[i]].duration_s * slowdown(f, ops[sp.ops[i]]);
  return t;
}

/// Advances `p` by `dt` wall seconds from time `t` at the rate `f` leaves; appends the end time
/// of every op completed to `ends`.
void advance(Progress& p, const RankState& r, const StreamPlan& sp, const Unit& u,
             const Rate& f, double t, double dt, std::vector<double>* ends) {
  const auto& ops = r.program->ops;
  while (p.pos < u.end) {
    const double s = slowdown(f, ops[sp.ops[p.pos]]);
    const double need = p.left * s;
    if (dt < need) {
      p.left -= dt / s;
      return;
    }
    dt -= need;
    t += need;
    if (ends != nullptr) ends->push_back(t);
    if (++p.pos < u.end) p.left = ops[sp.ops[p.pos]].duration_s;
  }
}

/// The rate in force: the in-flight op whose factors apply, the interfering one with the most
/// bytes (lowest slot on ties; several concurrent collectives are not measured, the largest
/// stands for them), and which SM holders have an op in flight.
Rate strongest(const OverlapState& st) {
  Rate best{nullptr, st.holding[static_cast<size_t>(SmHolder::Tp)] > 0,
            st.holding[static_cast<size_t>(SmHolder::DeepEp)] > 0, nullptr};
  const int copies = (st.copying[0] > 0 ? 1 : 0) | (st.copying[1] > 0 ? 2 : 0);
  if (copies != 0 && st.copy_delays != nullptr) best.copy = &(*st.copy_delays)[static_cast<size_t>(copies)];
  double bytes = -1.0;
  for (size_t s = 0; s < st.in_flight.size(); ++s) {
    const CommParams* c = st.in_flight[s];
    if (c != nullptr && c->interferes && st.in_flight_bytes[s] > bytes) {
      best.comm = c;
      bytes = st.in_flight_bytes[s];
    }
  }
  return best;
}

// Sets the rate in force to strongest(st) and wakes (or logs for) the compute stream if it
// changed.
void update_rate(OverlapState& st) {
  const Rate now = strongest(st);
  if (now == st.in_force) return;
  st.in_force = now;
  if (!st.computing) return;
  if (st.logging) {
    st.log.emplace_back(sg4::Engine::get_clock(), now);
  } else {
    st.wake->release();
  }
}

}  // namespace

void set_in_flight(RankState& r, int slot, const CommParams* prm, double bytes) {
  OverlapState& st = r.overlap;
  st.in_flight[static_cast<size_t>(slot)] = prm;
  st.in_flight_bytes[static_cast<size_t>(slot)] = bytes;
  update_rate(st);
}

void set_holding(RankState& r, SmHolder holder, bool start) {
  OverlapState& st = r.overlap;
  st.holding[static_cast<size_t>(holder)] += start ? 1 : -1;
  update_rate(st);
}

void set_copying(RankState& r, bool h2d, bool start) {
  OverlapState& st = r.overlap;
  st.copying[h2d ? 1 : 0] += start ? 1 : -1;
  update_rate(st);
}

double comm_slowdown(const RankState& compute_rank, const CommParams& prm) {
  const OverlapState& st = compute_rank.overlap;
  if (!st.computing) return 1.0;
  return prm.overlap[static_cast<size_t>(st.computing_class)].comm_slowdown;
}

void play_compute(RankState& r, const StreamPlan& sp, const Unit& u, std::vector<double>* ends) {
  OverlapState& st = r.overlap;
  const auto& ops = r.program->ops;
  Progress p{u.begin, ops[sp.ops[u.begin]].duration_s};
  double t = sg4::Engine::get_clock();
  st.computing = true;
  st.computing_class = compute_class(ops[sp.ops[u.begin]]);
  const double inf = std::numeric_limits<double>::infinity();
  if (st.in_force.full()) {
    // Full rate until some interfering communication starts, which is then only logged: a
    // plain sleep is cheaper than a timed wait, and slowdowns >= 1 never finish work earlier.
    st.logging = true;
    st.log.clear();
    sg4::this_actor::sleep_for(u.duration_s);
    st.logging = false;
    Rate f;
    for (const auto& [when, next] : st.log) {
      advance(p, r, sp, u, f, t, when - t, ends);
      t = when;
      f = next;
    }
    const double now = sg4::Engine::get_clock();
    advance(p, r, sp, u, f, t, st.log.empty() ? inf : now - t, ends);
    t = now;
    if (p.pos == u.end) {
      st.computing = false;
      return;
    }
  }
  while (p.pos < u.end) {
    const Rate f = st.in_force;
    st.computing_class = compute_class(ops[sp.ops[p.pos]]);
    const double left = time_to_finish(p, r, sp, u, f);
    const bool timeout = st.wake->acquire_timeout(left);
    const double now = sg4::Engine::get_clock();
    advance(p, r, sp, u, f, t, timeout ? inf : now - t, ends);
    t = now;
  }
  st.computing = false;
}

}  // namespace clustersim::sim::detail
