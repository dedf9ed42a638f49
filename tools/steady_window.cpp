#include "tools/steady_window.hpp"

#include <stdexcept>
#include <string>

namespace clustersim::tools {

std::optional<workloads::SteadyWindow> window_for(const workloads::WorkloadSpec& spec) {
  const auto& p = spec.parallel;
  const workloads::SteadyWindow w = workloads::steady_state_window(p.schedule, p.pp, p.vp);
  // The step's own per-step work (the last gradient reductions, the optimizer) is played in
  // both windows, so a window pays only from several times their length on.
  if (spec.num_microbatches() < kWindowsPerStep * static_cast<std::int64_t>(w.second)) return std::nullopt;
  return w;
}

workloads::WorkloadSpec with_microbatches(const workloads::WorkloadSpec& spec, int microbatches) {
  if (microbatches < 1) {
    throw std::invalid_argument("with_microbatches: " + std::to_string(microbatches) +
                                " microbatches per pipeline");
  }
  workloads::WorkloadSpec out = spec;
  out.training.global_batch_size =
      static_cast<std::int64_t>(microbatches) * spec.parallel.dp * spec.training.micro_batch_size;
  return out;
}

sim::StepResult extend_window(const sim::StepResult& a, const sim::StepResult& b,
                              const workloads::SteadyWindow& window, std::int64_t microbatches) {
  if (window.second <= window.first) {
    throw std::invalid_argument("extend_window: the second window (" + std::to_string(window.second) +
                                ") must hold more microbatches than the first (" +
                                std::to_string(window.first) + ")");
  }
  const double f = static_cast<double>(microbatches - window.first) /
                   static_cast<double>(window.second - window.first);
  auto line = [f](double x, double y) { return x + f * (y - x); };
  sim::StepResult r = b;
  r.step_time_s = line(a.step_time_s, b.step_time_s);
  r.breakdown.compute_s = line(a.breakdown.compute_s, b.breakdown.compute_s);
  r.breakdown.exposed_comm_s = line(a.breakdown.exposed_comm_s, b.breakdown.exposed_comm_s);
  r.breakdown.bubble_s = line(a.breakdown.bubble_s, b.breakdown.bubble_s);
  for (std::size_t g = 0; g < r.breakdown.exposed_by_group_s.size(); ++g) {
    r.breakdown.exposed_by_group_s[g] =
        line(a.breakdown.exposed_by_group_s[g], b.breakdown.exposed_by_group_s[g]);
  }
  r.breakdown.exposed_other_s = line(a.breakdown.exposed_other_s, b.breakdown.exposed_other_s);
  r.events = a.events + b.events;
  r.sim_wall_s = a.sim_wall_s + b.sim_wall_s;
  r.timeline.clear();
  return r;
}

}  // namespace clustersim::tools
