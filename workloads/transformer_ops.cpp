#include "workloads/transformer_ops.hpp"

#include <utility>

#include "workloads/flops.hpp"

namespace clustersim::workloads {
namespace {

using sim::CollectiveKind;
using sim::MemKernel;

// Activations, activation gradients and pipeline messages are BF16 (Megatron --bf16; with
// fp8, Transformer Engine casts inside its GEMM modules and hands BF16 tensors between them).
constexpr double kActivationBytes = 2.0;
// GEMM outputs written as BF16, except weight gradients: Megatron's gradient accumulation
// fusion (on by default) has the wgrad GEMM accumulate into the FP32 main_grad buffer, which it
// reads and writes.
constexpr double kOutBytes = 2.0;
constexpr double kWgradOutBytes = 8.0;
constexpr double kFp32Bytes = 4.0;
// Vocab-parallel cross entropy, unfused (megatron/core/tensor_parallel/cross_entropy.py), per
// logit: cast BF16 -> FP32 (2 + 4), max (4), subtract max in place (8), exp in place (8), sum
// (4), divide into the softmax kept for backward (8) = 38 bytes. Backward: scale the softmax in
// place (8), cast the gradient to BF16 for the output layer (4 + 2) = 14 bytes.
constexpr double kCrossEntropyForwardBytes = 38.0;
constexpr double kCrossEntropyBackwardBytes = 14.0;
// Its forward all-reduces three FP32 values per token over TP: the max logit, the target
// logit and the sum of exponentials.
constexpr int kCrossEntropyAllReduces = 3;
// main_grad (FP32) += grad (BF16): read 4 + 2, write 4 bytes per element (Megatron DDP hook
// for parameters whose gradient is not fused into a GEMM, such as the embeddings).
constexpr double kMainGradAccumulateBytes = 10.0;

void ready(GradSink* sink, ParamGroup group, int layer, std::uint32_t op) {
  if (sink != nullptr) sink->gradient_ready(group, layer, op);
}

sim::AttentionShape attention_shape(const RankShapes& s, bool backward) {
  sim::AttentionShape a;
  a.batch = s.micro_batch;
  a.heads = s.heads;
  a.kv_heads = s.kv_heads;
  a.seq_q = s.seq;
  a.seq_kv = s.seq;
  a.head_dim = s.head_dim;
  a.head_dim_v = s.head_dim;
  a.causal = true;
  a.backward = backward;
  a.dtype = sim::DType::BF16;  // TE keeps attention in BF16 unless fp8_dot_product_attention
  return a;
}

}  // namespace

RankShapes RankShapes::of(const WorkloadSpec& spec) {
  const ModelSpec& m = spec.model;
  const int tp = spec.parallel.tp;
  RankShapes s;
  s.micro_batch = spec.training.micro_batch_size;
  s.seq = spec.training.seq_length;
  s.tokens = s.micro_batch * s.seq;
  s.tp_comm = tp > 1;
  s.sequence_parallel = spec.parallel.sequence_parallel && tp > 1;
  s.sp_tokens = s.sequence_parallel ? s.tokens / tp : s.tokens;
  s.hidden = m.hidden;
  s.heads = m.heads / tp;
  s.kv_heads = m.kv_heads / tp;
  s.head_dim = m.head_dim;
  s.qkv_out = (s.heads + 2 * s.kv_heads) * s.head_dim;
  s.attn_out = s.heads * s.head_dim;
  s.ffn = m.ffn / tp;
  s.fc1_out = s.ffn * (m.activation == Activation::Swiglu ? 2 : 1);
  s.vocab = padded_vocab(m.vocab, tp) / tp;
  s.position_rows = m.position == PositionKind::Learned ? m.max_position_embeddings : 0;
  s.linear_dtype = compute_dtype(spec);
  return s;
}

TransformerOps::TransformerOps(ProgramBuilder& builder, const WorkloadSpec& spec)
    : b_(builder), spec_(spec), s_(RankShapes::of(spec)) {}

double TransformerOps::act_bytes(std::int64_t rows, std::int64_t cols) const {
  return static_cast<double>(rows) * static_cast<double>(cols) * kActivationBytes;
}

double TransformerOps::pipeline_message_bytes() const {
  // Megatron's get_tensor_shapes: [seq / tp (with SP), mbs, hidden] in the pipeline dtype.
  return act_bytes(s_.sp_tokens, s_.hidden);
}

void TransformerOps::tp_blocking(const std::string& label, CollectiveKind kind, double bytes) {
  b_.collective(label, kind, sim::GroupKind::TP, sim::Stream::Compute, bytes);
}

// SP: all-gather the sequence shards before a column-parallel GEMM (forward), or the output
// gradient before a row-parallel dgrad (backward of the forward reduce-scatter).
void TransformerOps::gather_sequence() {
  if (s_.sequence_parallel) {
    tp_blocking("tp_ag", CollectiveKind::AllGather, act_bytes(s_.tokens, s_.hidden));
  }
}

// Sum of a row-parallel GEMM's partial outputs: reduce-scatter with SP, all-reduce without.
void TransformerOps::reduce_output() {
  if (!s_.tp_comm) return;
  const double bytes = act_bytes(s_.tokens, s_.hidden);
  if (s_.sequence_parallel) {
    tp_blocking("tp_rs", CollectiveKind::ReduceScatter, bytes);
  } else {
    tp_blocking("tp_ar", CollectiveKind::AllReduce, bytes);
  }
}

// Backward of a column-parallel linear (Megatron LinearWithGradAccumulationAndAsyncCommunication,
// megatron/core/tensor_parallel/layers.py; TE's Linear does the same): with SP the input shard
// is all-gathered again for the wgrad on the communication stream while the dgrad runs, then
// the input gradient is reduce-scattered asynchronously, overlapping the wgrad GEMM; without SP
// the input gradient is all-reduced asynchronously, overlapping the wgrad. Returns the
// communication op the consumer of the input gradient must wait for.
std::vector<std::uint32_t> TransformerOps::column_backward(const std::string& name,
                                                          std::int64_t in, std::int64_t out,
                                                          sim::DType dtype, ParamGroup group,
                                                          int layer, GradSink* sink) {
  const double full = act_bytes(s_.tokens, s_.hidden);
  std::vector<std::uint32_t> wgrad_deps;
  if (s_.sequence_parallel) {
    std::vector<std::uint32_t> launch;
    if (auto last = b_.last_compute()) launch.push_back(*last);
    wgrad_deps.push_back(b_.collective("tp_ag", CollectiveKind::AllGather, sim::GroupKind::TP,
                                       sim::Stream::TpComm, full, std::move(launch)));
  }
  const std::uint32_t dgrad = b_.gemm(name + "_dgrad", s_.tokens, in, out, dtype, kOutBytes);
  std::vector<std::uint32_t> consumer_deps;
  if (s_.tp_comm) {
    const auto kind = s_.sequence_parallel ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce;
    consumer_deps.push_back(b_.collective(s_.sequence_parallel ? "tp_rs" : "tp_ar", kind,
                                          sim::GroupKind::TP, sim::Stream::TpComm, full, {dgrad}));
  }
  const std::uint32_t wgrad =
      b_.gemm(name + "_wgrad", in, out, s_.tokens, dtype, kWgradOutBytes, std::move(wgrad_deps));
  ready(sink, group, layer, wgrad);
  return consumer_deps;
}

// Backward of a row-parallel linear: with SP its forward reduce-scatter becomes a (blocking)
// all-gather of the output gradient; without SP the forward all-reduce's backward is identity.
void TransformerOps::row_backward(const std::string& name, std::int64_t in, std::int64_t out,
                                  ParamGroup group, int layer, GradSink* sink) {
  gather_sequence();
  b_.gemm(name + "_dgrad", s_.tokens, in, out, s_.linear_dtype, kOutBytes);
  const std::uint32_t wgrad =
      b_.gemm(name + "_wgrad", in, out, s_.tokens, s_.linear_dtype, kWgradOutBytes);
  ready(sink, group, layer, wgrad);
}

// Norm backward: read input and output gradient, write input gradient.
std::uint32_t TransformerOps::norm_backward(const std::string& label,
                                            std::vector<std::uint32_t> deps) {
  return b_.mem(label, MemKernel::Norm, 3.0 * act_bytes(s_.sp_tokens, s_.hidden), std::move(deps));
}

// Dense embedding gradient (PyTorch embedding backward): zero-fill the BF16 table gradient,
// index-add the token gradients (read them, read and write the rows), then accumulate the table
// gradient into main_grad.
double TransformerOps::dense_embedding_grad_bytes(std::int64_t rows) const {
  const double table = static_cast<double>(rows) * static_cast<double>(s_.hidden);
  return table * kActivationBytes + 3.0 * act_bytes(s_.tokens, s_.hidden) +
         table * kMainGradAccumulateBytes;
}

void TransformerOps::embedding_forward(std::vector<std::uint32_t> param_deps) {
  b_.set_layer(-1);
  const double full = act_bytes(s_.tokens, s_.hidden);
  // Row gather from the local vocab shard: read the rows, write [tokens, hidden].
  b_.mem("embedding", MemKernel::Copy, 2.0 * full, std::move(param_deps));
  if (s_.tp_comm) {
    // Partial embeddings are summed over TP: reduce-scattered straight into the SP layout when
    // there is no position table to add (LanguageModelEmbedding.reduce_scatter_embeddings),
    // else all-reduced (the SP scatter after the position add is a slice, no communication).
    if (s_.sequence_parallel && s_.position_rows == 0) {
      tp_blocking("tp_rs", CollectiveKind::ReduceScatter, full);
    } else {
      tp_blocking("tp_ar", CollectiveKind::AllReduce, full);
    }
  }
  if (s_.position_rows > 0) b_.mem("pos_embedding", MemKernel::Elementwise, 3.0 * full);
}

void TransformerOps::layer_forward(int layer, std::vector<std::uint32_t> param_deps) {
  b_.set_layer(layer);
  const ModelSpec& m = spec_.model;
  const double x = act_bytes(s_.sp_tokens, s_.hidden);  // one residual-stream tensor on this rank
  const sim::DType dt = s_.linear_dtype;
  b_.mem("norm", MemKernel::Norm, 2.0 * x, std::move(param_deps));  // read x, write y
  gather_sequence();
  b_.gemm("qkv", s_.tokens, s_.qkv_out, s_.hidden, dt, kOutBytes);
  if (m.position == PositionKind::Rope) {  // rotate q and k: read and write both
    b_.mem("rope", MemKernel::Rope, 2.0 * act_bytes(s_.tokens, (s_.heads + s_.kv_heads) * s_.head_dim));
  }
  // Flash attention reads q, k, v and writes o.
  b_.attention("attn", attention_shape(s_, false),
               act_bytes(s_.tokens, 2 * (s_.heads + s_.kv_heads) * s_.head_dim));
  b_.gemm("proj", s_.tokens, s_.hidden, s_.attn_out, dt, kOutBytes);
  reduce_output();
  b_.mem("residual", MemKernel::Elementwise, 3.0 * x);  // read two tensors, write one
  b_.mem("norm", MemKernel::Norm, 2.0 * x);
  gather_sequence();
  b_.gemm("fc1", s_.tokens, s_.fc1_out, s_.hidden, dt, kOutBytes);
  // GeLU reads and writes [tokens, ffn]; SwiGLU reads gate and up, writes their product.
  const double act_passes = m.activation == Activation::Swiglu ? 3.0 : 2.0;
  b_.mem("act", MemKernel::Activation, act_passes * act_bytes(s_.tokens, s_.ffn));
  b_.gemm("fc2", s_.tokens, s_.hidden, s_.ffn, dt, kOutBytes);
  reduce_output();
  b_.mem("residual", MemKernel::Elementwise, 3.0 * x);
}

void TransformerOps::head_forward(std::vector<std::uint32_t> param_deps) {
  b_.set_layer(-1);
  b_.mem("final_norm", MemKernel::Norm, 2.0 * act_bytes(s_.sp_tokens, s_.hidden),
         std::move(param_deps));
  gather_sequence();
  // The output layer is a Megatron ColumnParallelLinear outside Transformer Engine's FP8
  // autocast: BF16 with fp8 too.
  b_.gemm("head", s_.tokens, s_.vocab, s_.hidden, sim::DType::BF16, kOutBytes);
  const double logits = static_cast<double>(s_.tokens) * static_cast<double>(s_.vocab);
  b_.mem("cross_entropy", MemKernel::CrossEntropy, kCrossEntropyForwardBytes * logits);
  if (s_.tp_comm) {
    for (int i = 0; i < kCrossEntropyAllReduces; ++i) {
      tp_blocking("tp_ar_ce", CollectiveKind::AllReduce, kFp32Bytes * static_cast<double>(s_.tokens));
    }
  }
}

void TransformerOps::head_backward(GradSink* sink) {
  b_.set_layer(-1);
  const double logits = static_cast<double>(s_.tokens) * static_cast<double>(s_.vocab);
  b_.mem("cross_entropy_bwd", MemKernel::CrossEntropy, kCrossEntropyBackwardBytes * logits);
  auto comm = column_backward("head", s_.hidden, s_.vocab, sim::DType::BF16,
                              ParamGroup::OutputHead, -1, sink);
  ready(sink, ParamGroup::FinalNorm, -1, norm_backward("final_norm_bwd", std::move(comm)));
}

void TransformerOps::layer_backward(int layer, GradSink* sink) {
  b_.set_layer(layer);
  const ModelSpec& m = spec_.model;
  const double x = act_bytes(s_.sp_tokens, s_.hidden);
  // MLP block, last op first.
  row_backward("fc2", s_.ffn, s_.hidden, ParamGroup::Fc2, layer, sink);
  // GeLU: read input and gradient, write gradient; SwiGLU: read gate, up and gradient, write
  // the gate and up gradients.
  const double act_passes = m.activation == Activation::Swiglu ? 5.0 : 3.0;
  b_.mem("act_bwd", MemKernel::Activation, act_passes * act_bytes(s_.tokens, s_.ffn));
  auto comm = column_backward("fc1", s_.hidden, s_.fc1_out, s_.linear_dtype, ParamGroup::Fc1,
                              layer, sink);
  ready(sink, ParamGroup::Norm2, layer, norm_backward("norm_bwd", std::move(comm)));
  b_.mem("residual_bwd", MemKernel::Elementwise, 3.0 * x);  // add the branch gradient
  // Attention block.
  row_backward("proj", s_.attn_out, s_.hidden, ParamGroup::Proj, layer, sink);
  // Flash attention backward reads q, k, v, o and do, writes dq, dk, dv.
  b_.attention("attn_bwd", attention_shape(s_, true),
               act_bytes(s_.tokens, 4 * (s_.heads + s_.kv_heads) * s_.head_dim));
  if (m.position == PositionKind::Rope) {
    b_.mem("rope_bwd", MemKernel::Rope,
           2.0 * act_bytes(s_.tokens, (s_.heads + s_.kv_heads) * s_.head_dim));
  }
  comm = column_backward("qkv", s_.hidden, s_.qkv_out, s_.linear_dtype, ParamGroup::Qkv, layer, sink);
  ready(sink, ParamGroup::Norm1, layer, norm_backward("norm_bwd", std::move(comm)));
  b_.mem("residual_bwd", MemKernel::Elementwise, 3.0 * x);
}

void TransformerOps::embedding_backward(GradSink* sink) {
  b_.set_layer(-1);
  // SP: the backward of the forward reduce-scatter (or of the scatter after the all-reduce)
  // is an all-gather; without SP the all-reduce's backward is the identity.
  gather_sequence();
  if (s_.position_rows > 0) {
    ready(sink, ParamGroup::PositionEmbedding, -1,
          b_.mem("pos_embedding_bwd", MemKernel::Elementwise,
                 dense_embedding_grad_bytes(s_.position_rows)));
  }
  ready(sink, ParamGroup::WordEmbedding, -1,
        b_.mem("embedding_bwd", MemKernel::Elementwise, dense_embedding_grad_bytes(s_.vocab)));
}

}  // namespace clustersim::workloads
