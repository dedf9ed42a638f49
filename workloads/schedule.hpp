// Pipeline schedules: for one pipeline stage, the ordered sequence of forward and backward
// passes and of the point-to-point calls that Megatron-LM makes between them. Schedules are
// kept in a registry keyed by the name used in job files (`parallelism.schedule`): "1f1b" is
// Megatron's non-interleaved one-forward-one-backward schedule, "interleaved" its
// forward_backward_pipelining_with_interleaving (vp model chunks per stage), "zb_h1" the
// zero-bubble ZB-H1 schedule (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024,
// arXiv 2401.10241) as its authors' patch of Megatron's 1F1B runs it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace clustersim::workloads {

/// What a schedule step does. The P2P kinds are Megatron's p2p_communication calls; each is
/// one batched exchange whose active transfers are in ScheduleStep::transfers (a call can
/// have none at the ends of the pipeline).
enum class StepKind : std::uint8_t {
  Forward,                  ///< forward pass of `microbatch` through model chunk `chunk`
  Backward,                 ///< backward pass of `microbatch` through model chunk `chunk`
  /// the weight gradients (W pass) of a backward whose ScheduleStep::defer_wgrad was set,
  /// run now (zero-bubble schedules)
  WeightGrad,
  RecvForward,              ///< recv_forward
  SendForward,              ///< send_forward
  SendForwardRecvBackward,  ///< send_forward_recv_backward (next stage both ways)
  SendBackwardRecvForward,  ///< send_backward_recv_forward (previous stage both ways)
  RecvBackward,             ///< recv_backward
  SendBackward,             ///< send_backward
  SendForwardRecvForward,   ///< send_forward_recv_forward (interleaved warmup)
  SendBackwardRecvBackward, ///< send_backward_recv_backward (interleaved cooldown)
  SendForwardBackwardRecvForwardBackward  ///< the interleaved steady-state exchange
};

/// Transfer bits of a P2P step: activations go to the next stage and come from the previous
/// one, gradients the other way (Megatron's ring: the last stage's next is stage 0).
enum TransferBits : std::uint8_t {
  kSendForward = 1,   ///< send activations to the next stage
  kRecvForward = 2,   ///< receive activations from the previous stage
  kSendBackward = 4,  ///< send gradients to the previous stage
  kRecvBackward = 8   ///< receive gradients from the next stage
};

/// One step of a stage's schedule.
struct ScheduleStep {
  StepKind kind = StepKind::Forward;
  int microbatch = -1;       ///< computed or sent microbatch; -1 for a pure receive
  int recv_microbatch = -1;  ///< received microbatch; -1 when the step receives nothing
  int chunk = 0;             ///< model chunk of the computed microbatch (0 without vp)
  std::uint8_t transfers = 0;  ///< TransferBits of a P2P step that actually move data
  /// Forward steps only: run together with the Backward step that follows it (Megatron-core's
  /// combined 1F1B, `pipeline_steps` with `combined`): the two passes' layers interleave so
  /// that each one's expert exchanges overlap the other's compute.
  bool combined = false;
  /// Backward steps only: the pass computes the input gradients (B) and leaves its weight
  /// gradients (W) for the WeightGrad step of the same microbatch and chunk later in the
  /// schedule (zero-bubble schedules; WeightGrad steps run the deferred passes first in, first out).
  bool defer_wgrad = false;
};

/// A schedule: the steps of pipeline stage `stage` of `pp`, for `num_microbatches` and `vp`
/// model chunks per stage.
using PipelineSchedule =
    std::function<std::vector<ScheduleStep>(int pp, int stage, int num_microbatches, int vp)>;

/// The schedule registered under `name`, or nullptr.
const PipelineSchedule* find_pipeline_schedule(const std::string& name);

/// The steps of schedule `name` for stage `stage` of `pp`, `num_microbatches` and `vp` chunks.
/// With `combined`, Megatron-core's combined 1F1B (--overlap-moe-expert-parallel-comm,
/// megatron/core/pipeline_parallel/combined_1f1b.py): without a pipeline (pp 1, schedule
/// 1f1b) the forward of microbatch i+1 runs with the backward of microbatch i; with one
/// (schedule interleaved) each stage runs one more warmup forward, so that every steady-state
/// forward and backward are independent, and runs them together. The paired Forward step is
/// marked `combined` and directly followed by its Backward step.
/// @throws std::invalid_argument for an unregistered schedule, or `combined` with 1f1b at
/// pp > 1 (Megatron needs virtual pipeline stages for it).
std::vector<ScheduleStep> pipeline_steps(const std::string& name, int pp, int stage,
                                         int num_microbatches, int vp, bool combined);

/// Two microbatch counts per pipeline, first < second, from which a schedule's step grows by
/// the same steady-state passes with every further microbatch: the step of m >= first
/// microbatches is the schedule's fill and drain plus (m - first) of those periods, so a step
/// of many microbatches follows from two short ones (docs/engine.md, "Steady-state window").
struct SteadyWindow {
  int first = 0;
  int second = 0;
};

/// The steady-state window of schedule `name` at `pp` stages and `vp` chunks per stage.
/// @throws std::invalid_argument for a schedule that is not registered.
SteadyWindow steady_state_window(const std::string& name, int pp, int vp);

/// What a job's checks need to know of a schedule beside its steps.
struct ScheduleTraits {
  /// Runs vp >= 2 model chunks per stage (Megatron's interleaved schedule): the only one that
  /// takes vp > 1, overlaps its pipeline transfers, and pairs forwards with backwards for the
  /// combined 1F1B at pp > 1.
  bool model_chunks = false;
  /// Defers weight gradients past the input gradients (zero-bubble ZB-H1, the authors' patch of
  /// Megatron's 1F1B), which rules out the features that pair with an undeferred W.
  bool defers_weight_grads = false;
};

/// The traits of schedule `name`.
/// @throws std::invalid_argument for a schedule that is not registered.
const ScheduleTraits& schedule_traits(const std::string& name);

/// Registered schedule names, sorted (for error messages and docs).
std::vector<std::string> pipeline_schedule_names();

/// Name of a step kind as Megatron calls it ("send_forward_recv_backward", ...).
const char* to_string(StepKind kind);

}  // namespace clustersim::workloads
