#include "workloads/schedule.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <stdexcept>

namespace clustersim::workloads {
namespace {

// A P2P step of the 1F1B schedule with its transfers, the ends of the pipeline dropping the
// transfers that have no peer (Megatron's p2p calls are no-ops there).
ScheduleStep p2p(StepKind kind, int sent, int received, bool first, bool last) {
  std::uint8_t bits = 0;
  switch (kind) {
    case StepKind::RecvForward: bits = kRecvForward; break;
    case StepKind::SendForward: bits = kSendForward; break;
    case StepKind::SendForwardRecvBackward: bits = kSendForward | kRecvBackward; break;
    case StepKind::SendBackwardRecvForward: bits = kSendBackward | kRecvForward; break;
    case StepKind::RecvBackward: bits = kRecvBackward; break;
    case StepKind::SendBackward: bits = kSendBackward; break;
    default: break;
  }
  if (first) bits &= static_cast<std::uint8_t>(~(kRecvForward | kSendBackward));
  if (last) bits &= static_cast<std::uint8_t>(~(kSendForward | kRecvBackward));
  return {kind, sent, received, 0, bits};
}

// Megatron-LM forward_backward_pipelining_without_interleaving
// (megatron/core/pipeline_parallel/schedules.py): warmup = min(pp - stage - 1, m) forwards,
// then recv_forward once, then 1F1B steady state (forward, send_forward_recv_backward,
// backward, send_backward_recv_forward -- send_backward on the last iteration), then the
// cooldown backwards (recv_backward, backward, send_backward). With pp == 1 this is the
// sequence of forward_backward_no_pipelining (every P2P call is a no-op).
std::vector<ScheduleStep> one_f_one_b(int pp, int stage, int num_microbatches, int /*vp*/) {
  const bool first = stage == 0, last = stage == pp - 1;
  const int warmup = std::min(pp - stage - 1, num_microbatches);
  const int remaining = num_microbatches - warmup;
  std::vector<ScheduleStep> steps;
  steps.reserve(static_cast<std::size_t>(num_microbatches) * 4 + 1);
  int fwd = 0;
  int bwd = 0;
  for (int i = 0; i < warmup; ++i, ++fwd) {
    steps.push_back(p2p(StepKind::RecvForward, -1, fwd, first, last));
    steps.push_back({StepKind::Forward, fwd, -1, 0, 0});
    steps.push_back(p2p(StepKind::SendForward, fwd, -1, first, last));
  }
  if (remaining > 0) steps.push_back(p2p(StepKind::RecvForward, -1, fwd, first, last));
  for (int i = 0; i < remaining; ++i) {
    const bool last_iteration = i == remaining - 1;
    steps.push_back({StepKind::Forward, fwd, -1, 0, 0});
    steps.push_back(p2p(StepKind::SendForwardRecvBackward, fwd, bwd, first, last));
    ++fwd;
    steps.push_back({StepKind::Backward, bwd, -1, 0, 0});
    if (last_iteration) {
      steps.push_back(p2p(StepKind::SendBackward, bwd, -1, first, last));
    } else {
      steps.push_back(p2p(StepKind::SendBackwardRecvForward, bwd, fwd, first, last));
    }
    ++bwd;
  }
  for (int i = 0; i < warmup; ++i, ++bwd) {
    steps.push_back(p2p(StepKind::RecvBackward, -1, bwd, first, last));
    steps.push_back({StepKind::Backward, bwd, -1, 0, 0});
    steps.push_back(p2p(StepKind::SendBackward, bwd, -1, first, last));
  }
  return steps;
}

// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, arXiv 2401.10241, Sec. 3.1)
// as the authors' patch of Megatron's 1F1B runs it (sail-sg/zero-bubble-pipeline-parallelism,
// branch zb-h1-quick-start: forward_backward_pipelining_without_interleaving with a
// WeightGradStore): the steps, warmup and P2P calls of one_f_one_b; on a stage s > 0 the first s
// steady-state backwards, the last one and every cooldown backward compute only the input
// gradients (B) and queue their weight gradients (W); the last steady-state iteration runs the
// oldest queued W after its send_backward once it has run s steady iterations, each cooldown
// iteration does so after its send_backward once s backwards have run, and the queue is emptied
// at the end. Stage 0 runs 1F1B unchanged. The queued Ws fill what 1F1B leaves idle while a
// stage waits for gradients: the bubble shrinks from (p-1)(F+B+W) to about (p-1)(F+B-W).
std::vector<ScheduleStep> zb_h1(int pp, int stage, int num_microbatches, int vp) {
  std::vector<ScheduleStep> steps = one_f_one_b(pp, stage, num_microbatches, vp);
  if (stage == 0) return steps;
  const int warmup = std::min(pp - stage - 1, num_microbatches);
  const int remaining = num_microbatches - warmup;
  std::vector<ScheduleStep> out;
  out.reserve(steps.size() + static_cast<std::size_t>(num_microbatches));
  std::deque<int> queued;
  auto run_oldest = [&] {
    out.push_back({StepKind::WeightGrad, queued.front(), -1, 0, 0});
    queued.pop_front();
  };
  int backwards = 0;  // backwards so far; the first `remaining` are the steady-state ones
  for (std::size_t i = 0; i < steps.size(); ++i) {
    ScheduleStep step = steps[i];
    if (step.kind != StepKind::Backward) {
      out.push_back(step);
      continue;
    }
    const int k = backwards++;
    const bool steady = k < remaining;
    step.defer_wgrad = !steady || k < stage || k == remaining - 1;
    out.push_back(step);
    if (step.defer_wgrad) queued.push_back(step.microbatch);
    // The P2P call that ends this backward's iteration, then the W that iteration runs.
    if (i + 1 < steps.size()) out.push_back(steps[++i]);
    const bool pops = steady ? (k == remaining - 1 && k >= stage) : k >= stage;
    if (pops && !queued.empty()) run_oldest();
  }
  while (!queued.empty()) run_oldest();
  return out;
}

// Megatron-LM forward_backward_pipelining_with_interleaving (schedules.py, without
// overlap_p2p_comm; microbatch groups of pp). Iteration k of the vp*m passes runs model chunk
// (k mod pp*vp) / pp (reversed for backward) on microbatch (k / (pp*vp)) * pp + k mod pp. The
// send/receive conditions are Megatron's: the last stage does not send its last chunk's output
// (the loss) and stage 0 does not send its first chunk's input gradient; transfers between the
// last stage and stage 0 wrap around the pipeline ring between chunks.
class Interleaved {
 public:
  // `combined`: Megatron-core's combined 1F1B adds one warmup forward on every stage
  // (pipeline_steps) and pairs each steady-state forward with the backward after it.
  Interleaved(int pp, int stage, int m, int vp, bool combined = false)
      : pp_(pp), vp_(vp), total_(m * vp), first_(stage == 0), last_(stage == pp - 1),
        combined_(combined) {
    if (m == pp) {
      warmup_ = total_;
      all_warmup_ = true;
    } else {
      warmup_ = std::min((pp - stage - 1) * 2 + (vp - 1) * pp + (combined ? 1 : 0), total_);
    }
  }

  std::vector<ScheduleStep> steps() {
    if (!first_) add_p2p(StepKind::RecvForward, -1, mb(0), kRecvForward);
    for (int k = 0; k < warmup_; ++k) warmup_step(k);
    const int remaining = total_ - warmup_;
    for (int k = 0; k < remaining; ++k) steady_step(k, k == remaining - 1);
    if (all_warmup_ && !last_) add_p2p(StepKind::RecvBackward, -1, mb(0), kRecvBackward);
    for (int k = remaining; k < total_; ++k) cooldown_step(k);
    return std::move(steps_);
  }

 private:
  int mod(int k) const { return ((k % (pp_ * vp_)) + pp_ * vp_) % (pp_ * vp_); }
  int chunk(int k, bool forward) const {
    const int c = mod(k) / pp_;
    return forward ? c : vp_ - c - 1;
  }
  int mb(int k) const { return k / (pp_ * vp_) * pp_ + k % pp_; }
  bool sends_forward(int k) const { return !(last_ && chunk(k, true) == vp_ - 1); }
  bool sends_backward(int k) const { return !(first_ && chunk(k, false) == 0); }

  void add_p2p(StepKind kind, int sent, int received, int bits) {
    steps_.push_back({kind, sent, received, 0, static_cast<std::uint8_t>(bits)});
  }
  void compute(StepKind kind, int k) {
    steps_.push_back({kind, mb(k), -1, chunk(k, kind == StepKind::Forward), 0});
  }

  void warmup_step(int k) {
    compute(StepKind::Forward, k);
    bool recv_prev = !(first_ && chunk(k + 1, true) == 0) && k != total_ - 1;
    const int bits = (sends_forward(k) ? kSendForward : 0) | (recv_prev ? kRecvForward : 0);
    if (k == warmup_ - 1 && !all_warmup_) {
      const int recv_next = last_ ? 0 : kRecvBackward;
      add_p2p(StepKind::SendForwardBackwardRecvForwardBackward, mb(k), mb(k + 1), bits | recv_next);
    } else {
      add_p2p(StepKind::SendForwardRecvForward, mb(k), mb(k + 1), bits);
    }
  }

  void steady_step(int k, bool last_iteration) {
    const int fk = k + warmup_;
    compute(StepKind::Forward, fk);
    steps_.back().combined = combined_;
    compute(StepKind::Backward, k);
    bool recv_prev = !first_ || chunk(fk - (pp_ - 1), true) != vp_ - 1;
    const bool recv_next = !last_ || chunk(k - (pp_ - 1), false) != 0;
    if (last_iteration) recv_prev = false;
    const int bits = (sends_forward(fk) ? kSendForward : 0) | (sends_backward(k) ? kSendBackward : 0) |
                     (recv_prev ? kRecvForward : 0) | (recv_next ? kRecvBackward : 0);
    add_p2p(StepKind::SendForwardBackwardRecvForwardBackward, mb(fk), mb(fk + 1), bits);
  }

  void cooldown_step(int k) {
    compute(StepKind::Backward, k);
    bool recv_next = !(last_ && chunk(k + 1, false) == vp_ - 1);
    if (k == total_ - 1) recv_next = false;
    const int bits = (sends_backward(k) ? kSendBackward : 0) | (recv_next ? kRecvBackward : 0);
    add_p2p(StepKind::SendBackwardRecvBackward, mb(k), recv_next ? mb(k + 1) : -1, bits);
  }

  int pp_, vp_, total_;
  bool first_, last_, combined_;
  int warmup_ = 0;
  bool all_warmup_ = false;
  std::vector<ScheduleStep> steps_;
};

std::vector<ScheduleStep> interleaved(int pp, int stage, int num_microbatches, int vp) {
  return Interleaved(pp, stage, num_microbatches, vp).steps();
}

std::vector<ScheduleStep> interleaved_combined(int pp, int stage, int num_microbatches, int vp) {
  return Interleaved(pp, stage, num_microbatches, vp, true).steps();
}

// Megatron-core's combined 1F1B without a pipeline (combined_1f1b.py, pp 1): the first
// forward alone, then the forward of microbatch i+1 with the backward of microbatch i, then the
// last backward alone. No P2P calls.
std::vector<ScheduleStep> combined_no_pipelining(int pp, int /*stage*/, int num_microbatches, int /*vp*/) {
  if (pp > 1) {
    throw std::invalid_argument("combined 1F1B with a pipeline needs the interleaved schedule");
  }
  std::vector<ScheduleStep> steps;
  steps.reserve(static_cast<std::size_t>(num_microbatches) * 2);
  steps.push_back({StepKind::Forward, 0, -1, 0, 0});
  for (int i = 1; i < num_microbatches; ++i) {
    steps.push_back({StepKind::Forward, i, -1, 0, 0, true});
    steps.push_back({StepKind::Backward, i - 1, -1, 0, 0});
  }
  steps.push_back({StepKind::Backward, num_microbatches - 1, -1, 0, 0});
  return steps;
}

// 1F1B: stage s runs min(pp - s - 1, m) warmup forwards, so from m = pp on every stage has a
// steady phase and each further microbatch adds one forward-backward pair to it; windows of
// u = max(pp, 2) and 2u microbatches (two, so that the pair of windows spans whole pipeline
// rounds even without a pipeline).
SteadyWindow one_f_one_b_window(int pp, int /*vp*/) {
  const int u = std::max(pp, 2);
  return {u, u + 1};
}

// Interleaved: Megatron runs every forward first at m == pp (all warmup, the Interleaved
// constructor above) and needs m to be a multiple of pp; from m = 2pp stage 0's warmup,
// 2(pp - 1) + (vp - 1)pp forwards, is shorter than its m x vp passes, so 2pp and 3pp.
SteadyWindow interleaved_window(int pp, int /*vp*/) { return {2 * pp, 3 * pp}; }

struct Entry {
  PipelineSchedule steps;
  SteadyWindow (*window)(int pp, int vp);
  PipelineSchedule combined;  ///< the schedule as Megatron-core's combined 1F1B runs it
  ScheduleTraits traits;
};

const std::map<std::string, Entry>& registry() {
  static const std::map<std::string, Entry> kSchedules = {
      {"1f1b", {one_f_one_b, one_f_one_b_window, combined_no_pipelining, {}}},
      {"interleaved",
       {interleaved, interleaved_window, interleaved_combined, {.model_chunks = true}}},
      // Steady state as 1F1B's: from m = pp on every stage runs its split iterations and each
      // further microbatch adds one unsplit forward-backward pair.
      {"zb_h1",
       {zb_h1, one_f_one_b_window, combined_no_pipelining, {.defers_weight_grads = true}}},
  };
  return kSchedules;
}

}  // namespace

const PipelineSchedule* find_pipeline_schedule(const std::string& name) {
  const auto& schedules = registry();
  auto it = schedules.find(name);
  return it == schedules.end() ? nullptr : &it->second.steps;
}

std::vector<ScheduleStep> pipeline_steps(const std::string& name, int pp, int stage,
                                         int num_microbatches, int vp, bool combined) {
  const auto& schedules = registry();
  auto it = schedules.find(name);
  if (it == schedules.end()) throw std::invalid_argument("unknown pipeline schedule '" + name + "'");
  const Entry& e = it->second;
  return (combined ? e.combined : e.steps)(pp, stage, num_microbatches, vp);
}

SteadyWindow steady_state_window(const std::string& name, int pp, int vp) {
  const auto& schedules = registry();
  auto it = schedules.find(name);
  if (it == schedules.end()) throw std::invalid_argument("unknown pipeline schedule '" + name + "'");
  return it->second.window(pp, vp);
}

const ScheduleTraits& schedule_traits(const std::string& name) {
  const auto& schedules = registry();
  auto it = schedules.find(name);
  if (it == schedules.end()) throw std::invalid_argument("unknown pipeline schedule '" + name + "'");
  return it->second.traits;
}

std::vector<std::string> pipeline_schedule_names() {
  std::vector<std::string> names;
  for (const auto& [name, schedule] : registry()) names.push_back(name);
  return names;
}

const char* to_string(StepKind kind) {
  switch (kind) {
    case StepKind::Forward: return "forward";
    case StepKind::Backward: return "backward";
    case StepKind::WeightGrad: return "weight_grad";
    case StepKind::RecvForward: return "recv_forward";
    case StepKind::SendForward: return "send_forward";
    case StepKind::SendForwardRecvBackward: return "send_forward_recv_backward";
    case StepKind::SendBackwardRecvForward: return "send_backward_recv_forward";
    case StepKind::RecvBackward: return "recv_backward";
    case StepKind::SendBackward: return "send_backward";
    case StepKind::SendForwardRecvForward: return "send_forward_recv_forward";
    case StepKind::SendBackwardRecvBackward: return "send_backward_recv_backward";
    case StepKind::SendForwardBackwardRecvForwardBackward:
      return "send_forward_backward_recv_forward_backward";
  }
  return "?";
}

}  // namespace clustersim::workloads
