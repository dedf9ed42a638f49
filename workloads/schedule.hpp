// Pipeline schedules: for one pipeline stage, the ordered sequence of forward and backward
// passes and of the point-to-point calls that Megatron-LM makes between them. Schedules are
// kept in a registry keyed by the name used in job files (`parallelism.schedule`); "1f1b" is
// Megatron's non-interleaved one-forward-one-backward schedule. Interleaved (vp) and other
// schedules register here when they land.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace clustersim::workloads {

/// What a schedule step does. The P2P kinds are Megatron's p2p_communication calls; each is
/// one batched exchange, and at the ends of the pipeline a call has no peer (a no-op).
enum class StepKind : std::uint8_t {
  Forward,                  ///< forward pass of `microbatch`
  Backward,                 ///< backward pass of `microbatch`
  RecvForward,              ///< recv_forward: activations of `recv_microbatch` from the previous stage
  SendForward,              ///< send_forward: activations of `microbatch` to the next stage
  SendForwardRecvBackward,  ///< send_forward_recv_backward (next stage both ways)
  SendBackwardRecvForward,  ///< send_backward_recv_forward (previous stage both ways)
  RecvBackward,             ///< recv_backward: gradients of `recv_microbatch` from the next stage
  SendBackward              ///< send_backward: gradients of `microbatch` to the previous stage
};

/// One step of a stage's schedule.
struct ScheduleStep {
  StepKind kind = StepKind::Forward;
  int microbatch = -1;       ///< computed or sent microbatch; -1 for a pure receive
  int recv_microbatch = -1;  ///< received microbatch; -1 when the step receives nothing
};

/// A schedule: the steps of pipeline stage `stage` of `pp`, for `num_microbatches`.
using PipelineSchedule =
    std::function<std::vector<ScheduleStep>(int pp, int stage, int num_microbatches)>;

/// The schedule registered under `name`, or nullptr.
const PipelineSchedule* find_pipeline_schedule(const std::string& name);

/// Registered schedule names, sorted (for error messages and docs).
std::vector<std::string> pipeline_schedule_names();

/// Name of a step kind as Megatron calls it ("send_forward_recv_backward", ...).
const char* to_string(StepKind kind);

}  // namespace clustersim::workloads
