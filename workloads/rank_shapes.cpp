// RankShapes::of: the per-rank tensor dimensions and kernel choices of one job
// (workloads/transformer_ops.hpp), split from the ops that use them.
#include <tuple>
#include <utility>

#include "workloads/flops.hpp"
#include "workloads/transformer_constants.hpp"
#include "workloads/transformer_ops.hpp"

namespace clustersim::workloads {
namespace {

// The loss kernels' bytes per logit, forward and backward, by implementation
// (workloads/transformer_constants.hpp).
std::pair<double, double> loss_bytes(CrossEntropy ce) {
  switch (ce) {
    case CrossEntropy::Unfused: return {kCrossEntropyForwardBytes, kCrossEntropyBackwardBytes};
    case CrossEntropy::Fused: return {kFusedCrossEntropyForwardBytes, kFusedCrossEntropyBackwardBytes};
    case CrossEntropy::Chunked: return {kChunkedCrossEntropyForwardBytes, kChunkedCrossEntropyBackwardBytes};
    case CrossEntropy::Eager: return {kEagerCrossEntropyForwardBytes, kEagerCrossEntropyBackwardBytes};
  }
  return {kCrossEntropyForwardBytes, kCrossEntropyBackwardBytes};
}

}  // namespace

RankShapes RankShapes::of(const WorkloadSpec& spec) {
  const ModelSpec& m = spec.model;
  const ParallelSpec& p = spec.parallel;
  const TrainingSpec& t = spec.training;
  const int tp = p.tp;
  const std::int64_t gate = m.activation == Activation::Swiglu ? 2 : 1;
  RankShapes s;
  s.micro_batch = t.micro_batch_size;
  s.cp = p.cp;
  s.seq = t.seq_length / p.cp;
  s.tokens = s.micro_batch * s.seq;
  s.tp_comm = tp > 1;
  s.sequence_parallel = p.sequence_parallel && tp > 1;
  s.tp_overlap = p.tp_comm_overlap && s.sequence_parallel;
  s.cp_all_gather = p.cp_comm_type == CpCommType::AllGather;
  s.cp_a2a = p.cp_comm_type == CpCommType::A2a;
  s.tp_backward_blocking = s.tp_comm && p.tp_backward_comm == TpBackwardComm::Blocking;
  if (t.elementwise == Elementwise::Eager) {  // Hugging Face transformers' eager Llama modules
    if (m.norm == NormKind::RmsNorm) s.norm_kernel = sim::MemKernel::RmsNormEager;
    s.rope_kernel = sim::MemKernel::RopeEager;
    if (m.activation == Activation::Swiglu) s.act_kernel = sim::MemKernel::SwigluEager;
    s.transpose_attn_out = true;
  }
  std::tie(s.ce_forward_bytes, s.ce_backward_bytes) = loss_bytes(t.cross_entropy);
  s.sp_tokens = s.sequence_parallel ? s.tokens / tp : s.tokens;
  s.hidden = m.hidden;
  s.heads = m.heads / tp;
  s.kv_heads = m.kv_heads / tp;
  s.head_dim = m.head_dim;
  s.v_head_dim = m.value_head_dim();
  s.qkv_out = (s.heads + 2 * s.kv_heads) * s.head_dim;
  s.attn_out = s.heads * s.v_head_dim;
  s.ffn = m.ffn / tp;
  s.fc1_out = s.ffn * gate;
  s.vocab = padded_vocab(m.vocab, tp) / tp;
  s.position_rows = m.position == PositionKind::Learned ? m.max_position_embeddings : 0;
  s.linear_dtype = compute_dtype(spec);
  s.attention_dtype = t.fp8_attention ? sim::DType::FP8 : sim::DType::BF16;
  s.attention_kernel = t.attention_backend;
  if (p.gradient_accumulation_fusion) {
    s.wgrad_accum = p.grad_reduce_in_fp32 ? sim::GradAccum::F32 : sim::GradAccum::BF16;
  }
  if (m.attention == AttentionKind::Mla) {
    s.q_lora = m.q_lora_rank;
    s.kv_lora = m.kv_lora_rank;
    s.rope_dim = m.rope_head_dim;
    s.q_up_out = s.heads * m.head_dim;
    s.kv_up_out = s.heads * (m.head_dim - m.rope_head_dim + s.v_head_dim);
  }
  s.fp8_current_scaling = spec.training.precision == Precision::FP8 &&
                          spec.training.fp8_recipe == Fp8Recipe::Tensorwise;
  s.fp8_shard_gather = spec.training.precision == Precision::FP8 &&
                       spec.training.fp8_recipe != Fp8Recipe::Blockwise;
  if (m.experts > 0) s.set_moe(spec, gate);
  return s;
}

}  // namespace clustersim::workloads
