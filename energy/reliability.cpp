#include "energy/reliability.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <limits>
#include <queue>
#include <random>
#include <sstream>
#include <stdexcept>

namespace clustersim::energy {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

long long units_of(UnitKind kind, const RunShape& s) {
  switch (kind) {
    case UnitKind::Gpu:
      return s.gpus;
    case UnitKind::Node:  // part of one node counts as that node
      return (s.gpus + s.gpus_per_node - 1) / s.gpus_per_node;
    case UnitKind::Domain:
      return (s.gpus + s.gpus_per_domain - 1) / s.gpus_per_domain;
    case UnitKind::Job:
      return 1;
  }
  return 0;
}

// Any positive shape: a job packed onto its nodes and NVLink domains is exposed to every unit
// it touches, a partial one included (units_of rounds up; e.g. 16 GPUs of a 72-GPU rack, or
// 100 GPUs over two racks, are exposed to one and two racks' failures).
void check_shape(const RunShape& s) {
  if (s.gpus <= 0 || s.gpus_per_node <= 0 || s.gpus_per_domain <= 0) {
    throw std::invalid_argument("run shape: gpus, gpus_per_node and gpus_per_domain must be positive");
  }
}

// Uniform in [0, 1) from the top 53 bits: the same sequence on every platform for a seed.
double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

double exponential(std::mt19937_64& rng, double rate) {
  return rate > 0 ? -std::log1p(-uniform(rng)) / rate : kInf;
}

// Nodes or domains a job can restart on: free spares plus failed units coming back from repair.
class SparePool {
 public:
  explicit SparePool(int spares) : free_(spares) {}
  // A unit failed at time t and goes to repair; returns when a healthy unit is available.
  double replace(double t, double repair_s) {
    if (free_ < 0) return t;  // unlimited spares
    while (!returns_.empty() && returns_.top() <= t) {
      returns_.pop();
      ++free_;
    }
    returns_.push(t + repair_s);
    if (free_ > 0) {
      --free_;
      return t;
    }
    const double ready = returns_.top();
    returns_.pop();
    return std::max(ready, t);
  }

 private:
  int free_;
  std::priority_queue<double, std::vector<double>, std::greater<>> returns_;
};

struct TrialResult {
  double wall = 0, failures = 0, lost = 0, down = 0, checkpointing = 0;
};

struct Plan {
  std::vector<double> cumulative_rate;  // per mode, for picking the failing mode
  double rate = 0;                      // job failure rate, 1/s
  double tau = 0, write = 0, reload = 0;
};

// The recovery from a failure at `t` (advanced to the end of the recovery): waiting for a spare
// where the failed unit needs one, detection, then the restart and the checkpoint's reload, during
// which the job runs on the whole allocation again and can fail again, which starts another
// recovery (Daly 2006, doi:10.1016/j.future.2004.11.016, charges failures during restart; the
// catalog's rates are interruptions per wall-clock hour). Returns the time to the next failure
// after the recovery.
double recover(const ReliabilityInputs& in, const Plan& p, std::mt19937_64& rng, SparePool& nodes,
               SparePool& domains, std::vector<double>& by_mode, double& t, TrialResult& r) {
  const double start = t;
  while (true) {
    r.failures += 1;
    const double pick = uniform(rng) * p.rate;
    const auto it = std::upper_bound(p.cumulative_rate.begin(), p.cumulative_rate.end(), pick);
    const std::size_t m = std::min(static_cast<std::size_t>(it - p.cumulative_rate.begin()), in.modes.size() - 1);
    by_mode[m] += 1;
    const FailureMode& mode = in.modes[m];
    double ready = t;
    if (mode.recovery == Recovery::ReplaceNode) ready = nodes.replace(t, in.recovery.node_repair_s);
    if (mode.recovery == Recovery::ReplaceDomain) ready = domains.replace(t, in.recovery.domain_repair_s);
    t = ready + in.recovery.detection_s;
    const double restart = in.recovery.restart_s + p.reload;
    const double ttf = exponential(rng, p.rate);
    if (ttf >= restart) {
      t += restart;
      r.down += t - start;
      return ttf - restart;
    }
    t += ttf;  // failed again while restarting
  }
}

// One simulated training run.
TrialResult run_trial(const ReliabilityInputs& in, const RunShape& shape, const Plan& p,
                      std::mt19937_64& rng, std::vector<double>& by_mode) {
  SparePool nodes(in.recovery.spare_nodes), domains(in.recovery.spare_domains);
  TrialResult r;
  double done = 0, t = 0, ttf = exponential(rng, p.rate);
  const double cycle = p.tau + p.write;
  while (done < shape.work_s) {
    const double remaining = shape.work_s - done;
    // Whole checkpointed segments before the last one that end before the next failure.
    const double before_last = remaining > p.tau ? std::ceil(remaining / p.tau) - 1 : 0;
    const double k = std::min(before_last, std::floor(ttf / cycle));
    if (k > 0) {
      t += k * cycle;
      ttf -= k * cycle;
      done += k * p.tau;
      r.checkpointing += k * p.write;
      continue;
    }
    const double seg = std::min(p.tau, remaining);
    const bool last = seg >= remaining;
    const double need = seg + (last ? 0 : p.write);
    if (ttf >= need) {
      t += need;
      ttf -= need;
      done += seg;
      r.checkpointing += last ? 0 : p.write;
      continue;
    }
    t += ttf;  // failure: the segment's work is lost
    r.lost += std::min(ttf, seg);
    ttf = recover(in, p, rng, nodes, domains, by_mode, t, r);
  }
  r.wall = t;
  return r;
}

Estimate estimate(std::vector<double> v) {
  Estimate e;
  const double n = static_cast<double>(v.size());
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  e.mean = sum / n;
  for (double x : v) sq += (x - e.mean) * (x - e.mean);
  const double half = v.size() > 1 ? 1.96 * std::sqrt(sq / (n - 1)) / std::sqrt(n) : 0.0;
  e.ci95_low = e.mean - half;
  e.ci95_high = e.mean + half;
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) { return v[static_cast<std::size_t>(std::ceil(q * n)) - 1]; };
  e.p05 = rank(0.05);
  e.p95 = rank(0.95);
  return e;
}

Plan make_plan(const ReliabilityInputs& in, const RunShape& shape) {
  const auto& c = in.checkpoint;
  if (!(c.bytes > 0) || !(c.write_bandwidth > 0) || !(c.read_bandwidth > 0) || c.interval_s < 0) {
    throw std::invalid_argument("checkpoint size and storage bandwidths must be positive");
  }
  if (in.trials <= 0 || !(shape.work_s > 0)) {
    throw std::invalid_argument("need a positive number of trials and of work seconds");
  }
  const auto& r = in.recovery;
  if (r.detection_s < 0 || r.restart_s < 0 || r.node_repair_s < 0 || r.domain_repair_s < 0 ||
      r.spare_nodes < -1 || r.spare_domains < -1) {
    throw std::invalid_argument("recovery times must be non-negative, spares >= -1");
  }
  Plan p;
  double acc = 0;
  for (const auto& m : in.modes) {
    acc += static_cast<double>(units_of(m.unit, shape)) / (m.mtbf_h * 3600.0);
    p.cumulative_rate.push_back(acc);
  }
  p.rate = job_failure_rate(in.modes, shape);
  p.write = c.bytes / c.write_bandwidth;
  p.reload = c.bytes / c.read_bandwidth;
  if (c.interval_s > 0) {
    p.tau = c.interval_s;
  } else {
    p.tau = p.rate > 0 ? young_daly_interval(p.write, 1.0 / p.rate) : shape.work_s;
  }
  // A segment of tau + write survives with probability exp(-rate (tau + write)), so a run of
  // ceil(work / tau) segments expects that many times expm1(rate (tau + write)) interruptions,
  // and each recovery, restarted until a restart and reload of R survive, exp(rate R) failures.
  const double segments = std::ceil(shape.work_s / p.tau);
  const double restart = in.recovery.restart_s + p.reload;
  const double expected =
      segments * std::expm1(p.rate * (p.tau + p.write)) * std::exp(p.rate * restart) * in.trials;
  if (!(expected <= kMaxExpectedFailures)) {
    std::ostringstream why;
    why << std::setprecision(3) << "the run barely progresses: a checkpoint interval plus its write ("
        << p.tau + p.write << " s) and a restart plus reload (" << restart << " s) against a job MTBF of "
        << 1.0 / p.rate << " s expect " << expected << " interruptions over the " << in.trials
        << " trials (at most " << kMaxExpectedFailures
        << " are played); lengthen the MTBFs, raise the storage bandwidth, shorten the checkpoint "
           "interval or the restart, or train fewer tokens";
    throw std::invalid_argument(why.str());
  }
  return p;
}

}  // namespace

const char* to_string(UnitKind kind) {
  switch (kind) {
    case UnitKind::Gpu:
      return "gpu";
    case UnitKind::Node:
      return "node";
    case UnitKind::Domain:
      return "domain";
    case UnitKind::Job:
      return "job";
  }
  return "?";
}

const char* to_string(Recovery recovery) {
  switch (recovery) {
    case Recovery::Restart:
      return "restart";
    case Recovery::ReplaceNode:
      return "replace_node";
    case Recovery::ReplaceDomain:
      return "replace_domain";
  }
  return "?";
}

double young_daly_interval(double checkpoint_s, double mtbf_s) {
  if (!(checkpoint_s > 0) || !(mtbf_s > 0)) {
    throw std::invalid_argument("Young/Daly needs a positive checkpoint cost and MTBF");
  }
  if (checkpoint_s >= mtbf_s / 2) return mtbf_s;
  return std::sqrt(2.0 * checkpoint_s * mtbf_s) - checkpoint_s;
}

double job_failure_rate(const std::vector<FailureMode>& modes, const RunShape& shape) {
  check_shape(shape);
  double rate = 0;
  for (const auto& m : modes) {
    if (!(m.mtbf_h > 0)) {
      throw std::invalid_argument("failure mode '" + m.name + "': MTBF must be positive");
    }
    rate += static_cast<double>(units_of(m.unit, shape)) / (m.mtbf_h * 3600.0);
  }
  return rate;
}

RunReliability simulate_run(const ReliabilityInputs& in, const RunShape& shape) {
  const Plan plan = make_plan(in, shape);
  RunReliability out;
  out.system_mtbf_s = plan.rate > 0 ? 1.0 / plan.rate : kInf;
  out.checkpoint_write_s = plan.write;
  out.checkpoint_reload_s = plan.reload;
  out.checkpoint_interval_s = plan.tau;
  out.trials = in.trials;
  out.failures_by_mode.assign(in.modes.size(), 0.0);
  std::mt19937_64 rng(in.seed);
  std::vector<double> wall, failures;
  double lost = 0, down = 0, ckpt = 0;
  for (int i = 0; i < in.trials; ++i) {
    const TrialResult r = run_trial(in, shape, plan, rng, out.failures_by_mode);
    wall.push_back(r.wall);
    failures.push_back(r.failures);
    lost += r.lost;
    down += r.down;
    ckpt += r.checkpointing;
  }
  const double n = in.trials;
  for (double& f : out.failures_by_mode) f /= n;
  out.lost_work_s = lost / n;
  out.downtime_s = down / n;
  out.checkpointing_s = ckpt / n;
  out.wall_s = estimate(std::move(wall));
  // Goodput is failure-free time over the expected elapsed time (a ratio of means), so that the
  // cost of a run with failures is its failure-free cost / goodput. The mean of each trial's
  // ratio overstated it wherever trials differ much (runs of a few failures: 0.81 where the
  // mean times give 0.56). work / wall falls as wall grows: the interval and the percentiles
  // map over, swapped.
  const double w = shape.work_s;
  auto ratio = [w](double elapsed) { return elapsed > w ? w / elapsed : 1.0; };
  out.goodput.mean = ratio(out.wall_s.mean);
  out.goodput.ci95_low = ratio(out.wall_s.ci95_high);
  out.goodput.ci95_high = ratio(out.wall_s.ci95_low);
  out.goodput.p05 = ratio(out.wall_s.p95);
  out.goodput.p95 = ratio(out.wall_s.p05);
  out.failures = estimate(std::move(failures));
  return out;
}

}  // namespace clustersim::energy
