// Multi-token prediction depths of TransformerOps, as Megatron-core's MultiTokenPredictionLayer
// runs them (megatron/core/transformer/multi_token_prediction.py, the DeepSeek-V3 report's
// Sec. 2.2): on the last pipeline stage, after the decoder, each depth embeds the input tokens
// shifted one further ahead with the model's (shared) embedding, normalizes that embedding
// (enorm) and the previous depth's hidden states (hnorm), concatenates them and projects the
// [tokens, 2h] result back to h with eh_proj (a column-parallel linear inside the FP8 autocast,
// its output gathered over TP, then scattered to the sequence-parallel layout), and runs one
// transformer layer; its final norm, the shared output head and the loss follow
// (head_forward with prefix "mtp_"). Under full recompute Megatron checkpoints the projection
// and the layer together (_checkpointed_forward), so both run again before the backward.
#include <utility>

#include "workloads/transformer_constants.hpp"
#include "workloads/transformer_ops.hpp"

namespace clustersim::workloads {

using sim::CollectiveKind;
using sim::MemKernel;

// enorm, hnorm, the concatenation and eh_proj with its gathers, at the layer set.
void TransformerOps::mtp_projection_forward() {
  const double x = act_bytes(s_.sp_tokens, s_.hidden);
  b_.mem("mtp_enorm", s_.norm_kernel, 2.0 * x);
  b_.mem("mtp_hnorm", s_.norm_kernel, 2.0 * x);
  // torch.cat of the two normalized tensors: read both, write [tokens, 2h].
  b_.mem("mtp_concat", MemKernel::Copy, 4.0 * x);
  // eh_proj is not one of Transformer Engine's userbuffer roles: its sequence gather blocks
  // (a TE linear's: FP8 under a per-tensor recipe).
  gather_sequence(2 * s_.hidden, "mtp_eh_proj", s_.linear_dtype);
  fp8_quantize("mtp_eh_proj_fp8_cast", s_.tokens, 2 * s_.hidden, kFp8CastTransposeBytes, s_.linear_dtype);
  b_.gemm("mtp_eh_proj", s_.tokens, s_.hidden / spec_.parallel.tp, 2 * s_.hidden, s_.linear_dtype, kOutBytes);
  // gather_from_tensor_model_parallel_region: the h/tp output columns gathered over TP (its
  // backward is a split); the scatter to the sequence-parallel layout is a slice.
  if (s_.tp_comm) tp_blocking("tp_ag", CollectiveKind::AllGather, act_bytes(s_.tokens, s_.hidden));
}

void TransformerOps::mtp_forward(int depth, std::vector<std::uint32_t> param_deps,
                                 std::vector<std::uint32_t> embedding_deps) {
  const int layer = static_cast<int>(spec_.model.layers) + depth;
  b_.set_layer(layer);
  embedding_forward(std::move(embedding_deps), "mtp_");
  for (std::uint32_t dep : param_deps) b_.defer(dep);  // the depth's parameters gathered
  mtp_projection_forward();
  layer_forward(layer, {});
}

void TransformerOps::mtp_backward(int depth, GradSink* sink, GradSink* embedding_sink) {
  const int layer = static_cast<int>(spec_.model.layers) + depth;
  b_.set_layer(layer);
  if (spec_.training.recompute == Recompute::Full) {
    b_.set_recompute(true);
    mtp_projection_forward();
    b_.set_recompute(false);
  }
  layer_backward(layer, sink, {}, spec_.training.recompute == Recompute::Full);
  b_.set_layer(layer);
  // The backward of the scatter to the sequence-parallel layout gathers the gradient.
  gather_sequence();
  const double x = act_bytes(s_.sp_tokens, s_.hidden);
  auto comm = column_backward("mtp_eh_proj", 2 * s_.hidden, s_.hidden / spec_.parallel.tp,
                              s_.linear_dtype, ParamGroup::Mtp, layer, nullptr);
  b_.mem("mtp_concat_bwd", MemKernel::Copy, 4.0 * x, std::move(comm));
  norm_backward("mtp_enorm_bwd", {});
  const std::uint32_t norms = norm_backward("mtp_hnorm_bwd", {});
  // enorm, hnorm, eh_proj and the depth's final norm (whose backward ran in its head's).
  if (sink != nullptr) sink->gradient_ready(ParamGroup::Mtp, layer, norms);
  embedding_backward(embedding_sink, "mtp_");
}

}  // namespace clustersim::workloads
