// Per-layer activation terms of the memory model (docs/memory-model.md, "Activations"): what one
// transformer layer keeps for its backward, by tensor, and the gradient tensors alive at the peak
// of its backward; and the peak of what a stage holds over its pipeline schedule. Internal to
// workloads/ (memory.cpp); layer_activation_bytes, declared in workloads/memory.hpp, is the
// public face.
#pragma once

#include <vector>

#include "workloads/job_spec.hpp"
#include "workloads/transformer_ops.hpp"

namespace clustersim::workloads {

/// BF16 bytes per element.
inline constexpr double kBf16Bytes = 2.0;

/// One rank's activation shapes: its per-rank op shapes, tokens per microbatch (t), tokens of a
/// sequence shard (tsp: t / tp with sequence parallelism, else t) and hidden size (h).
struct LayerShape {
  RankShapes s;
  double t = 0, tsp = 0, h = 0;
  /// Rows kept of a column-parallel GEMM's input: tsp, or t with tp_backward_comm: blocking.
  double tin = 0;
};

/// The shapes of one rank of `spec`.
LayerShape layer_shape(const WorkloadSpec& spec);

/// Gradient tensors alive at the peak of layer `layer`'s backward (the MLP activation backward):
/// the residual-stream gradient, the gradients of the activation input and output, and with
/// sequence parallelism the re-gathered input for the weight gradient (not with
/// tp_backward_comm: blocking, which kept it). Bytes.
double backward_transients(const WorkloadSpec& spec, const LayerShape& x, int layer);

/// What a deferred weight-gradient pass (a zero-bubble W) keeps of layer `layer` between its
/// B and its W, which 1F1B's backward frees at once: every weight GEMM's input as the forward
/// kept it and the GEMM's output gradient (BF16). Bytes.
double deferred_wgrad_bytes(const WorkloadSpec& spec, const LayerShape& x, int layer);

/// What selective recompute's modules other than core_attn (training.recompute_modules) free
/// of layer `layer`'s activations and re-create in its backward, bytes per microbatch: on the
/// attention side (mla_up_proj, MLA's input norm) and on the MLP side (mlp, moe, moe_act,
/// shared_experts, a MoE layer's pre-MLP norm). Zero unless training.recompute is selective.
struct RecomputedBytes {
  double attention = 0.0;
  double mlp = 0.0;
};
RecomputedBytes recomputed_module_bytes(const WorkloadSpec& spec, const LayerShape& x, int layer);

/// Logits of the last stage, bytes per logit by loss implementation: `kept` from a
/// microbatch's forward to its backward, `peak` while its loss runs its backward (the largest
/// moment of either pass).
struct LogitBytes {
  double kept = 0.0;
  double peak = 0.0;
};

/// The bytes per logit of cross entropy `ce` (the implementations' code; the eager loss measured).
LogitBytes logit_bytes_per_element(CrossEntropy ce);

/// The FC2 input (or the expert FC2 input), freed by the FC2 weight gradient before the peak of
/// the layer's backward. Bytes.
double freed_before_peak(const WorkloadSpec& spec, const LayerShape& x, int layer);

/// The peak of what a stage's microbatches hold over its pipeline schedule (in_flight).
struct InFlight {
  double bytes = 0.0;        ///< activations and deferred weight-gradient inputs at the peak
  double wgrad_bytes = 0.0;  ///< of which kept for deferred weight gradients (zero-bubble W)
  int count = 0;             ///< microbatch-chunks held at that peak
  int last_chunk_max = 0;    ///< peak count of the stage's last chunk
};

/// Plays stage `stage`'s schedule and returns the peak, taken after every step (forward,
/// backward, W), of the sum over model chunks of (microbatches whose forward is done and
/// backward is not) x `per_chunk` bytes, plus (Ws waiting) x `per_chunk_w` bytes for the
/// backwards whose weight gradients are deferred (zero-bubble schedules).
InFlight in_flight(const WorkloadSpec& spec, int stage, const std::vector<double>& per_chunk,
                   const std::vector<double>& per_chunk_w = {});

}  // namespace clustersim::workloads
