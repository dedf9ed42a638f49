#include "workloads/transformer_ops.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "workloads/flops.hpp"
#include "workloads/transformer_constants.hpp"

namespace clustersim::workloads {

using sim::CollectiveKind;
using sim::MemKernel;

namespace {

// Transformer Engine's overlapped linears by the labels of the layer's GEMMs (its userbuffers
// names qkv, proj, fc1, fc2; the shared experts' MLP runs as fc1/fc2): the role of each pass.
struct TeOverlapRoles {
  std::optional<TpOverlapRole> fprop, dgrad, wgrad;
};

const std::map<std::string, TeOverlapRoles>& te_overlap_roles() {
  using R = TpOverlapRole;
  static const std::map<std::string, TeOverlapRoles> kRoles = {
      {"qkv", {R::QkvFprop, R::QkvDgrad, R::QkvWgrad}},
      {"proj", {R::ProjFprop, R::ProjDgrad, std::nullopt}},
      {"fc1", {R::Fc1Fprop, R::Fc1Dgrad, R::Fc1Wgrad}},
      {"fc2", {R::Fc2Fprop, R::Fc2Dgrad, std::nullopt}},
      {"shared_fc1", {R::Fc1Fprop, R::Fc1Dgrad, R::Fc1Wgrad}},
      {"shared_fc2", {R::Fc2Fprop, R::Fc2Dgrad, std::nullopt}},
  };
  return kRoles;
}

}  // namespace

TransformerOps::TransformerOps(ProgramBuilder& builder, const WorkloadSpec& spec)
    : b_(builder), spec_(spec), s_(RankShapes::of(spec)) {
  b_.set_fp8_block_scaling(spec.training.precision == Precision::FP8 &&
                           spec.training.fp8_recipe == Fp8Recipe::Blockwise);
}

double TransformerOps::act_bytes(std::int64_t rows, std::int64_t cols) const {
  return static_cast<double>(rows) * static_cast<double>(cols) * kActivationBytes;
}

// Bytes of a TP all-gather of [rows, cols] for the linear `label` whose GEMM runs in `dtype`:
// FP8 where Transformer Engine gathers the quantized tensor (an FP8 userbuffer of one of its
// overlapped linears; over NCCL with a per-tensor recipe: LayerNormLinear's FP8 norm output,
// Linear's quantized input, grad_output_preprocess, the wgrad re-gather of the saved shard;
// block scaling gathers BF16, TE 2.x force_hp_input_gather), else BF16.
double TransformerOps::tp_gather_bytes(const std::string& label, std::int64_t rows,
                                       std::int64_t cols, sim::DType dtype) const {
  const bool fp8_ubuf = s_.tp_overlap && te_overlap_roles().count(label) != 0;
  const bool fp8 = dtype == sim::DType::FP8 && (fp8_ubuf || s_.fp8_shard_gather);
  return fp8 ? static_cast<double>(rows) * static_cast<double>(cols) * kFp8Bytes
             : act_bytes(rows, cols);
}

double TransformerOps::pipeline_message_bytes() const {
  // Megatron's get_tensor_shapes: [seq / cp (/ tp with SP), mbs, hidden] in the pipeline dtype.
  return act_bytes(s_.sp_tokens, s_.hidden);
}

void TransformerOps::tp_blocking(const std::string& label, CollectiveKind kind, double bytes) {
  b_.collective(label, kind, sim::GroupKind::TP, sim::Stream::Compute, bytes);
}

// SP: all-gather the sequence shards before a column-parallel GEMM (forward), or the output
// gradient before a row-parallel dgrad (backward of the forward reduce-scatter). Blocking; the
// Transformer Engine layers overlap theirs with tp_comm_overlap instead (linear_in). `label`
// and `dtype` name a TE linear (tp_gather_bytes); none: BF16 (output layer, embedding).
void TransformerOps::gather_sequence(std::int64_t cols, const std::string& label, sim::DType dtype) {
  if (!s_.sequence_parallel) return;
  const std::int64_t width = cols > 0 ? cols : s_.hidden;
  const double bytes = label.empty() ? act_bytes(s_.tokens, width)
                                     : tp_gather_bytes(label, s_.tokens, width, dtype);
  tp_blocking("tp_ag", CollectiveKind::AllGather, bytes);
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

// A column-parallel GEMM on the sequence-gathered input. With tp_comm_overlap (Transformer
// Engine userbuffers) the all-gather runs in chunks on the TP stream while the GEMM consumes
// them: modelled as the all-gather alongside the GEMM (both start after the previous op) and
// the next op waiting for both, i.e. max(all-gather, GEMM) -- ideal pipelining, which is
// optimistic by at most one chunk (1/tp of the smaller of the two).
void TransformerOps::linear_in(const std::string& label, std::int64_t n, std::int64_t k,
                               sim::DType dtype) {
  std::optional<std::uint32_t> overlapped;
  if (s_.tp_overlap) {
    std::vector<std::uint32_t> launch = b_.after_last_compute();
    overlapped = b_.collective("tp_ag", CollectiveKind::AllGather, sim::GroupKind::TP,
                               sim::Stream::TpComm, tp_gather_bytes(label, s_.tokens, k, dtype),
                               std::move(launch));
  } else {
    gather_sequence(k, label, dtype);
  }
  tp_overlap_gemm(b_.gemm(label, s_.tokens, n, k, dtype, kOutBytes), label, LinearPass::Fprop);
  fp8_quantize(label + "_fp8_transpose", s_.tokens, k, kFp8TransposeBytes, dtype, true);
  if (overlapped) b_.defer(*overlapped);
}

// With tp_comm_overlap, the GEMMs of the layer linears that Transformer Engine overlaps
// (te_overlap_roles) carry how TE runs them (workloads/tp_overlap.hpp). The MLA projections and
// the output layer are not among
// TE's ten overlaps and stay plain GEMMs.
void TransformerOps::tp_overlap_gemm(std::uint32_t gemm, const std::string& label, LinearPass pass) {
  if (!s_.tp_overlap) return;
  const auto& roles = te_overlap_roles();
  const auto it = roles.find(label);
  if (it == roles.end()) return;
  const std::optional<TpOverlapRole>& role = pass == LinearPass::Fprop   ? it->second.fprop
                                            : pass == LinearPass::Dgrad ? it->second.dgrad
                                                                        : it->second.wgrad;
  if (!role) return;
  const GemmExecution e = gemm_execution(spec_.parallel.tp_overlap_cfg, *role, spec_.parallel.tp);
  b_.set_gemm_execution(gemm, e.splits, e.sm_margin, e.busy_sms);
}

// Hugging Face's attention returns [b, heads, s, d] and transposes it to [b, s, heads * d] with
// .contiguous() before o_proj (its backward copies the gradient back): one copy of the
// attention output, read and written.
void TransformerOps::attn_out_transpose(const std::string& label) {
  if (s_.transpose_attn_out) b_.mem(label, MemKernel::Copy, 2.0 * act_bytes(s_.tokens, s_.attn_out));
}

// A row-parallel GEMM followed by the reduction of its output; with tp_comm_overlap the
// reduce-scatter is pipelined with the GEMM (same model as linear_in).
void TransformerOps::linear_out(const std::string& label, std::int64_t n, std::int64_t k) {
  fp8_quantize(label + "_fp8_cast", s_.tokens, k, kFp8CastTransposeBytes, s_.linear_dtype);
  std::vector<std::uint32_t> launch = b_.after_last_compute();
  tp_overlap_gemm(b_.gemm(label, s_.tokens, n, k, s_.linear_dtype, kOutBytes), label,
                  LinearPass::Fprop);
  if (s_.tp_overlap) {
    b_.defer(b_.collective("tp_rs", CollectiveKind::ReduceScatter, sim::GroupKind::TP,
                           sim::Stream::TpComm, act_bytes(s_.tokens, s_.hidden), std::move(launch)));
  } else {
    reduce_output();
  }
}

// Backward of a column-parallel linear with input width `in` (Megatron LinearWithGradAccumulationAndAsyncCommunication,
// megatron/core/tensor_parallel/layers.py; TE's Linear does the same): with SP the input shard
// is all-gathered again for the wgrad on the communication stream while the dgrad runs, then
// the input gradient is reduce-scattered asynchronously, overlapping the wgrad GEMM; without SP
// the input gradient is all-reduced asynchronously, overlapping the wgrad. Returns the
// communication op the consumer of the input gradient must wait for (none with
// tp_backward_comm: blocking, column_backward_blocking).
std::vector<std::uint32_t> TransformerOps::column_backward(const std::string& name,
                                                          std::int64_t in, std::int64_t out,
                                                          sim::DType dtype, ParamGroup group,
                                                          int layer, GradSink* sink) {
  const double full = act_bytes(s_.tokens, in);  // the layer input [tokens, in] and its gradient
  fp8_quantize(name + "_fp8_grad_cast", s_.tokens, out, kFp8CastTransposeBytes, dtype);
  if (s_.tp_backward_blocking) {
    column_backward_blocking(name, in, out, dtype, group, layer, sink, full);
    return {};
  }
  std::vector<std::uint32_t> wgrad_deps;
  if (s_.sequence_parallel) {
    // Only the weight gradient reads the gathered input: a deferred W gathers it itself (the
    // zero-bubble WeightGradStore runs the gather with the W).
    ProgramBuilder::WgradInputScope for_wgrad(b_);
    std::vector<std::uint32_t> launch = b_.after_last_compute();
    wgrad_deps.push_back(b_.collective("tp_ag", CollectiveKind::AllGather, sim::GroupKind::TP,
                                       sim::Stream::TpComm, tp_gather_bytes(name, s_.tokens, in, dtype),
                                       std::move(launch)));
  }
  const std::uint32_t dgrad = b_.gemm(name + "_dgrad", s_.tokens, in, out, dtype, kOutBytes);
  tp_overlap_gemm(dgrad, name, LinearPass::Dgrad);
  std::vector<std::uint32_t> consumer_deps;
  if (s_.tp_comm) {
    const auto kind = s_.sequence_parallel ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce;
    consumer_deps.push_back(b_.collective(s_.sequence_parallel ? "tp_rs" : "tp_ar", kind,
                                          sim::GroupKind::TP, sim::Stream::TpComm, full, {dgrad}));
  }
  const std::uint32_t wgrad =
      b_.wgrad(name + "_wgrad", in, out, s_.tokens, dtype, s_.wgrad_accum, std::move(wgrad_deps));
  tp_overlap_gemm(wgrad, name, LinearPass::Wgrad);
  if (sink != nullptr) sink->gradient_ready(group, layer, wgrad);
  return consumer_deps;
}

// The same in autograd order (tp_backward_comm: blocking): the linear's backward computes the
// data and the weight gradient, then the TP region's backward reduces the input gradient on the
// compute stream (reduce-scatter with SP, all-reduce without), as a torch.autograd.Function
// around the linear runs it (calib/probes/tp_model.py); with SP the forward's gathered input
// was kept for the weight gradient, so nothing is gathered again. `full`: bytes of the input
// gradient [tokens, in].
void TransformerOps::column_backward_blocking(const std::string& name, std::int64_t in,
                                              std::int64_t out, sim::DType dtype, ParamGroup group,
                                              int layer, GradSink* sink, double full) {
  b_.gemm(name + "_dgrad", s_.tokens, in, out, dtype, kOutBytes);
  const std::uint32_t wgrad = b_.wgrad(name + "_wgrad", in, out, s_.tokens, dtype, s_.wgrad_accum);
  if (sink != nullptr) sink->gradient_ready(group, layer, wgrad);
  if (s_.sequence_parallel) {
    tp_blocking("tp_rs", CollectiveKind::ReduceScatter, full);
  } else {
    tp_blocking("tp_ar", CollectiveKind::AllReduce, full);
  }
}

// Backward of a row-parallel linear: with SP its forward reduce-scatter becomes an all-gather
// of the output gradient (blocking, or overlapped with the dgrad GEMM with tp_comm_overlap);
// without SP the forward all-reduce's backward is identity.
void TransformerOps::row_backward(const std::string& name, std::int64_t in, std::int64_t out,
                                  ParamGroup group, int layer, GradSink* sink) {
  std::optional<std::uint32_t> overlapped;
  if (s_.tp_overlap) {
    std::vector<std::uint32_t> launch = b_.after_last_compute();
    overlapped = b_.collective("tp_ag", CollectiveKind::AllGather, sim::GroupKind::TP,
                               sim::Stream::TpComm,
                               tp_gather_bytes(name, s_.tokens, s_.hidden, s_.linear_dtype),
                               std::move(launch));
  } else {
    gather_sequence(s_.hidden, name, s_.linear_dtype);
  }
  fp8_quantize(name + "_fp8_grad_cast", s_.tokens, out, kFp8CastTransposeBytes, s_.linear_dtype, true);
  tp_overlap_gemm(b_.gemm(name + "_dgrad", s_.tokens, in, out, s_.linear_dtype, kOutBytes), name,
                  LinearPass::Dgrad);
  if (overlapped) b_.defer(*overlapped);
  const std::uint32_t wgrad =
      b_.wgrad(name + "_wgrad", in, out, s_.tokens, s_.linear_dtype, s_.wgrad_accum);
  if (sink != nullptr) sink->gradient_ready(group, layer, wgrad);
}

// Norm forward on the residual stream's sequence shard: read x, write y.
std::uint32_t TransformerOps::norm_forward(std::vector<std::uint32_t> deps) {
  return b_.mem("norm", s_.norm_kernel, 2.0 * act_bytes(s_.sp_tokens, s_.hidden), std::move(deps));
}

// Norm backward: read input and output gradient, write input gradient.
std::uint32_t TransformerOps::norm_backward(const std::string& label,
                                            std::vector<std::uint32_t> deps) {
  return b_.mem(label, s_.norm_kernel, 3.0 * act_bytes(s_.sp_tokens, s_.hidden), std::move(deps));
}

// Dense embedding gradient (PyTorch embedding backward): zero-fill the BF16 table gradient,
// index-add the token gradients (read them, read and write the rows), then accumulate it into
// main_grad, or with `summed` add it to the rank's other gradient of the table (MTP at pp 1).
double TransformerOps::dense_embedding_grad_bytes(std::int64_t rows, bool summed) const {
  const double table = static_cast<double>(rows) * static_cast<double>(s_.hidden);
  return table * kActivationBytes + 3.0 * act_bytes(s_.tokens, s_.hidden) +
         table * (summed ? kGradSumBytes : kMainGradAccumulateBytes);
}

void TransformerOps::embedding_forward(std::vector<std::uint32_t> param_deps, const std::string& prefix) {
  if (prefix.empty()) b_.set_layer(-1);
  const double full = act_bytes(s_.tokens, s_.hidden);
  // Row gather from the local vocab shard: read the rows, write [tokens, hidden].
  b_.mem(prefix + "embedding", MemKernel::Copy, 2.0 * full, std::move(param_deps));
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
  if (s_.position_rows > 0) b_.mem(prefix + "pos_embedding", MemKernel::Elementwise, 3.0 * full);
}

// A TP-sharded MLP on the sequence-parallel input: FC1 (column parallel), activation, FC2 (row
// parallel). Used for the dense MLP and for the shared experts of MoE layers.
void TransformerOps::mlp_fc1_forward(const std::string& prefix, std::int64_t fc1_out, std::int64_t ffn) {
  linear_in(prefix + "fc1", fc1_out, s_.hidden, s_.linear_dtype);
  // GeLU / squared ReLU read and write [tokens, ffn]; SwiGLU reads gate and up, writes their product.
  const double act_passes = spec_.model.activation == Activation::Swiglu ? 3.0 : 2.0;
  b_.mem(prefix + "act", s_.act_kernel, act_passes * act_bytes(s_.tokens, ffn));
}

void TransformerOps::mlp_forward(const std::string& prefix, std::int64_t fc1_out, std::int64_t ffn) {
  mlp_fc1_forward(prefix, fc1_out, ffn);
  linear_out(prefix + "fc2", s_.hidden, ffn);
}

void TransformerOps::mlp_fc2_backward(const std::string& prefix, std::int64_t ffn, ParamGroup fc2,
                                      int layer, GradSink* sink) {
  row_backward(prefix + "fc2", ffn, s_.hidden, fc2, layer, sink);
  // GeLU: read input and gradient, write gradient; SwiGLU: read gate, up and gradient, write
  // the gate and up gradients.
  const double act_passes = spec_.model.activation == Activation::Swiglu ? 5.0 : 3.0;
  b_.mem(prefix + "act_bwd", s_.act_kernel, act_passes * act_bytes(s_.tokens, ffn));
}

std::vector<std::uint32_t> TransformerOps::mlp_backward(const std::string& prefix,
                                                       std::int64_t fc1_out, std::int64_t ffn,
                                                       ParamGroup fc1, ParamGroup fc2, int layer,
                                                       GradSink* sink) {
  mlp_fc2_backward(prefix, ffn, fc2, layer, sink);
  return column_backward(prefix + "fc1", s_.hidden, fc1_out, s_.linear_dtype, fc1, layer, sink);
}

void TransformerOps::layer_forward(int layer, std::vector<std::uint32_t> param_deps) {
  layer_forward_ops(layer, std::move(param_deps));
}

void TransformerOps::layer_forward_ops(int layer, std::vector<std::uint32_t> param_deps) {
  layer_attention_forward(layer, std::move(param_deps));
  if (spec_.model.is_moe_layer(layer)) {
    moe_forward();
  } else {
    mlp_forward("", s_.fc1_out, s_.ffn);
  }
  b_.mem("residual", MemKernel::Elementwise, 3.0 * act_bytes(s_.sp_tokens, s_.hidden));
}
void TransformerOps::layer_attention_forward(int layer, std::vector<std::uint32_t> param_deps) {
  b_.set_layer(layer);
  const double x = act_bytes(s_.sp_tokens, s_.hidden);  // one residual-stream tensor on this rank
  norm_forward(std::move(param_deps));
  attention_forward();
  b_.mem("residual", MemKernel::Elementwise, 3.0 * x);  // read two tensors, write one
  norm_forward();
}
void TransformerOps::head_forward(std::vector<std::uint32_t> param_deps, const std::string& prefix) {
  if (prefix.empty()) b_.set_layer(-1);
  b_.mem(prefix + "final_norm", s_.norm_kernel, 2.0 * act_bytes(s_.sp_tokens, s_.hidden),
         std::move(param_deps));
  gather_sequence();
  // The output layer is a Megatron ColumnParallelLinear outside Transformer Engine's FP8
  // autocast: BF16 with fp8 too.
  b_.gemm(prefix + "head", s_.tokens, s_.vocab, s_.hidden, sim::DType::BF16, kOutBytes);
  const double logits = static_cast<double>(s_.tokens) * static_cast<double>(s_.vocab);
  b_.mem(prefix + "cross_entropy", MemKernel::CrossEntropy, s_.ce_forward_bytes * logits);
  if (s_.tp_comm) {
    for (int i = 0; i < kCrossEntropyAllReduces; ++i) {
      tp_blocking("tp_ar_ce", CollectiveKind::AllReduce, kFp32Bytes * static_cast<double>(s_.tokens));
    }
  }
}

void TransformerOps::head_backward(GradSink* sink, const std::string& prefix) {
  if (prefix.empty()) b_.set_layer(-1);
  const double logits = static_cast<double>(s_.tokens) * static_cast<double>(s_.vocab);
  if (s_.ce_backward_bytes > 0.0) {
    b_.mem(prefix + "cross_entropy_bwd", MemKernel::CrossEntropy, s_.ce_backward_bytes * logits);
  }
  auto comm = column_backward(prefix + "head", s_.hidden, s_.vocab, sim::DType::BF16,
                              ParamGroup::OutputHead, -1, sink);
  const std::uint32_t norm = norm_backward(prefix + "final_norm_bwd", std::move(comm));
  if (sink != nullptr) sink->gradient_ready(ParamGroup::FinalNorm, -1, norm);
}

void TransformerOps::layer_recompute(int layer, std::vector<std::uint32_t> param_deps) {
  b_.set_recompute(true);
  layer_forward_ops(layer, std::move(param_deps));
  b_.set_recompute(false);
}

void TransformerOps::layer_backward(int layer, GradSink* sink, std::vector<std::uint32_t> param_deps,
                                    bool recompute) {
  begin_layer_backward(layer, std::move(param_deps), recompute);
  std::vector<std::uint32_t> comm;
  if (spec_.model.is_moe_layer(layer)) {
    comm = moe_backward(layer, sink);
  } else {
    if (spec_.training.recomputes(RecomputeModule::Mlp)) {
      // mlp: the dense MLP (Transformer Engine's fc1 with the pre-MLP norm fused in) re-runs
      // from its checkpointed input, its TP exchanges included (tensor_parallel.checkpoint).
      b_.set_recompute(true);
      norm_forward();
      mlp_forward("", s_.fc1_out, s_.ffn);
      b_.set_recompute(false);
    }
    comm = mlp_backward("", s_.fc1_out, s_.ffn, ParamGroup::Fc1, ParamGroup::Fc2, layer, sink);
  }
  layer_attention_backward(layer, sink, std::move(comm));
}
void TransformerOps::begin_layer_backward(int layer, std::vector<std::uint32_t> param_deps,
                                          bool recompute) {
  if (recompute) {
    // Megatron's full recompute re-runs the layer forward from its checkpointed input,
    // collectives included, right before its backward.
    layer_recompute(layer, std::move(param_deps));
    param_deps.clear();
  }
  b_.set_layer(layer);
  for (std::uint32_t dep : param_deps) b_.defer(dep);  // parameters gathered for the backward
}
void TransformerOps::layer_attention_backward(int layer, GradSink* sink, std::vector<std::uint32_t> comm) {
  const double x = act_bytes(s_.sp_tokens, s_.hidden);
  const std::uint32_t norm2 = norm_backward("norm_bwd", std::move(comm));
  if (sink != nullptr) sink->gradient_ready(ParamGroup::Norm2, layer, norm2);
  b_.mem("residual_bwd", MemKernel::Elementwise, 3.0 * x);  // add the branch gradient
  if (spec_.model.attention == AttentionKind::Mla && spec_.training.recomputes(RecomputeModule::Layernorm)) {
    // layernorm: MLA's input norm (a module of its own) discarded its output after the down
    // projections' forward and re-runs when the attention output's gradient arrives.
    b_.set_recompute(true);
    norm_forward();
    b_.set_recompute(false);
    // The down projections saved its BF16 output (set_for_recompute_input_layernorm): each
    // weight gradient quantizes it.
    for (int i = s_.q_lora > 0 ? 2 : 1; i > 0; --i) {
      fp8_quantize("down_fp8_input_cast", s_.sp_tokens, s_.hidden, kFp8SavedInputCastBytes, s_.linear_dtype);
    }
  }
  comm = attention_backward(layer, sink);
  const std::uint32_t norm1 = norm_backward("norm_bwd", std::move(comm));
  if (sink != nullptr) sink->gradient_ready(ParamGroup::Norm1, layer, norm1);
  b_.mem("residual_bwd", MemKernel::Elementwise, 3.0 * x);
}

void TransformerOps::embedding_backward(GradSink* sink, const std::string& prefix) {
  if (prefix.empty()) b_.set_layer(-1);
  // SP: the backward of the forward reduce-scatter (or of the scatter after the all-reduce)
  // is an all-gather; without SP the all-reduce's backward is the identity.
  gather_sequence();
  if (s_.position_rows > 0) {
    const std::uint32_t op = b_.mem(prefix + "pos_embedding_bwd", MemKernel::Elementwise,
                                    dense_embedding_grad_bytes(s_.position_rows));
    if (sink != nullptr) sink->gradient_ready(ParamGroup::PositionEmbedding, -1, op);
  }
  // The MTP depth's embedding gradient on a rank that runs the model's embedding too (pp 1).
  const bool summed = !prefix.empty() && spec_.parallel.pp == 1;
  const std::uint32_t op = b_.mem(prefix + "embedding_bwd", MemKernel::Elementwise,
                                  dense_embedding_grad_bytes(s_.vocab, summed));
  if (sink != nullptr) sink->gradient_ready(ParamGroup::WordEmbedding, -1, op);
}

}  // namespace clustersim::workloads
