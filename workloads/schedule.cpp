#include "workloads/schedule.hpp"

#include <algorithm>
#include <map>

namespace clustersim::workloads {
namespace {

// Megatron-LM forward_backward_pipelining_without_interleaving
// (megatron/core/pipeline_parallel/schedules.py): warmup = min(pp - stage - 1, m) forwards,
// then recv_forward once, then 1F1B steady state (forward, send_forward_recv_backward,
// backward, send_backward_recv_forward -- send_backward on the last iteration), then the
// cooldown backwards (recv_backward, backward, send_backward). With pp == 1 this is the
// sequence of forward_backward_no_pipelining (every P2P call is a no-op).
std::vector<ScheduleStep> one_f_one_b(int pp, int stage, int num_microbatches) {
  const int warmup = std::min(pp - stage - 1, num_microbatches);
  const int remaining = num_microbatches - warmup;
  std::vector<ScheduleStep> steps;
  steps.reserve(static_cast<std::size_t>(num_microbatches) * 4 + 1);
  int fwd = 0;
  int bwd = 0;
  for (int i = 0; i < warmup; ++i, ++fwd) {
    steps.push_back({StepKind::RecvForward, -1, fwd});
    steps.push_back({StepKind::Forward, fwd, -1});
    steps.push_back({StepKind::SendForward, fwd, -1});
  }
  if (remaining > 0) steps.push_back({StepKind::RecvForward, -1, fwd});
  for (int i = 0; i < remaining; ++i) {
    const bool last_iteration = i == remaining - 1;
    steps.push_back({StepKind::Forward, fwd, -1});
    steps.push_back({StepKind::SendForwardRecvBackward, fwd, bwd});
    ++fwd;
    steps.push_back({StepKind::Backward, bwd, -1});
    if (last_iteration) {
      steps.push_back({StepKind::SendBackward, bwd, -1});
    } else {
      steps.push_back({StepKind::SendBackwardRecvForward, bwd, fwd});
    }
    ++bwd;
  }
  for (int i = 0; i < warmup; ++i, ++bwd) {
    steps.push_back({StepKind::RecvBackward, -1, bwd});
    steps.push_back({StepKind::Backward, bwd, -1});
    steps.push_back({StepKind::SendBackward, bwd, -1});
  }
  return steps;
}

const std::map<std::string, PipelineSchedule>& registry() {
  static const std::map<std::string, PipelineSchedule> kSchedules = {
      {"1f1b", one_f_one_b},
  };
  return kSchedules;
}

}  // namespace

const PipelineSchedule* find_pipeline_schedule(const std::string& name) {
  const auto& schedules = registry();
  auto it = schedules.find(name);
  return it == schedules.end() ? nullptr : &it->second;
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
    case StepKind::RecvForward: return "recv_forward";
    case StepKind::SendForward: return "send_forward";
    case StepKind::SendForwardRecvBackward: return "send_forward_recv_backward";
    case StepKind::SendBackwardRecvForward: return "send_backward_recv_forward";
    case StepKind::RecvBackward: return "recv_backward";
    case StepKind::SendBackward: return "send_backward";
  }
  return "?";
}

}  // namespace clustersim::workloads
