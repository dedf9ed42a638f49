// Attention blocks of TransformerOps: GQA/MHA or multi-head latent attention (MLA), with flash
// attention on one rank or context-parallel ring attention (Transformer Engine's
// AttnFuncWithCPAndKVP2P) over the cp ranks, and selective recompute of the core attention.
#include <utility>

#include "workloads/transformer_constants.hpp"
#include "workloads/transformer_ops.hpp"

namespace clustersim::workloads {
namespace {

using sim::CollectiveKind;
using sim::MemKernel;

sim::AttentionShape core_shape(const RankShapes& s, std::int64_t seq_q, std::int64_t seq_kv,
                               bool causal, bool backward) {
  sim::AttentionShape a;
  a.batch = s.micro_batch;
  a.heads = s.heads;
  // MLA expands keys and values per head (Megatron-core MLA runs core attention as MHA).
  a.kv_heads = s.q_up_out > 0 ? s.heads : s.kv_heads;
  a.seq_q = seq_q;
  a.seq_kv = seq_kv;
  a.head_dim = s.head_dim;
  a.head_dim_v = s.v_head_dim;
  a.causal = causal;
  a.backward = backward;
  a.dtype = s.attention_dtype;  // TE keeps attention in BF16 unless fp8_dot_product_attention
  a.kernel = s.attention_kernel;
  return a;
}

}  // namespace

// Local K and V of one microbatch on this rank: what one ring step moves.
double TransformerOps::kv_block_bytes() const {
  const std::int64_t kv = s_.q_up_out > 0 ? s_.heads : s_.kv_heads;
  return act_bytes(s_.tokens, kv * (s_.head_dim + s_.v_head_dim));
}

// Flash attention reads q, k, v and writes o. With context parallelism each rank holds two
// load-balanced chunks of every sequence (chunks i and 2cp-1-i) and the K/V blocks travel
// around the CP ring: step 0 attends its own block causally, each of the cp-1 later steps
// attends half of the pairs (seq/cp x seq/(2cp)) without a mask, so every rank does the same
// causal share; the transfer of the next block (on the cp_comm stream, a ring_shift op of the
// block's bytes: Transformer Engine's isend to the next and irecv from the previous CP rank;
// before 2026-12-06 an all-gather op of block*cp/(cp-1) bytes, whose ring spread the hop
// between NVLink domains over every member's NIC) overlaps the current step. A final correction merges
// the per-step outputs with their softmax statistics.
void TransformerOps::attention_core_forward() {
  const std::int64_t qo_cols = s_.heads * (s_.head_dim + s_.v_head_dim);
  const double full_bytes = act_bytes(s_.tokens, qo_cols) + kv_block_bytes();
  if (s_.cp == 1) {
    b_.attention("attn", core_shape(s_, s_.seq, s_.seq, true, false), full_bytes);
    return;
  }
  if (s_.cp_a2a) {
    // Ulysses (Transformer Engine's AttnFuncWithCPAndQKVOA2A): q, k and v exchanged for the
    // whole sequence of heads / cp heads, the attention, the output exchanged back.
    const std::int64_t qk = s_.heads * s_.head_dim, kv = s_.kv_heads * s_.head_dim;
    cp_a2a_exchange("cp_qkv", {qk, kv, s_.kv_heads * s_.v_head_dim});
    b_.attention("attn", cp_a2a_shape(false), full_bytes);
    cp_a2a_exchange("cp_out", {s_.heads * s_.v_head_dim});
    return;
  }
  const double block = kv_block_bytes();
  std::vector<std::uint32_t> launch = b_.after_last_compute();
  if (s_.cp_all_gather) {
    // All-gather CP: the whole K/V first (exposed: attention needs it), then the same work.
    b_.defer(b_.collective("cp_kv_allgather", CollectiveKind::AllGather, sim::GroupKind::CP,
                           sim::Stream::CpComm, block * s_.cp, launch));
    cp_attention_steps(false, full_bytes, act_bytes(s_.tokens, qo_cols) + block / 2);
  } else {
    cp_ring_forward(launch, full_bytes, qo_cols);
  }
  // Merge the cp partial outputs: read each with its log-sum-exp, write the result.
  b_.mem("cp_out_correction", MemKernel::Elementwise,
         3.0 * act_bytes(s_.tokens, s_.heads * s_.v_head_dim));
}

// The attention work of one rank under context parallelism: its own block causally, then half
// of the (query, key) pairs of each of the cp - 1 other blocks without a mask.
void TransformerOps::cp_attention_steps(bool backward, double own_bytes, double other_bytes) {
  b_.attention(backward ? "attn_bwd" : "attn", core_shape(s_, s_.seq, s_.seq, true, backward), own_bytes);
  for (int j = 1; j < s_.cp; ++j) {
    b_.attention(backward ? "attn_bwd" : "attn", core_shape(s_, s_.seq, s_.seq / 2, false, backward),
                 other_bytes);
  }
}

void TransformerOps::cp_ring_forward(const std::vector<std::uint32_t>& launch, double full_bytes,
                                     std::int64_t qo_cols) {
  const double block = kv_block_bytes();
  std::optional<std::uint32_t> previous;
  for (int j = 0; j < s_.cp; ++j) {
    std::optional<std::uint32_t> next;
    if (j + 1 < s_.cp) {
      next = b_.collective("cp_kv", CollectiveKind::RingShift, sim::GroupKind::CP,
                           sim::Stream::CpComm, block, j == 0 ? launch : std::vector<std::uint32_t>{});
    }
    if (previous) b_.defer(*previous);
    if (j == 0) {
      b_.attention("attn", core_shape(s_, s_.seq, s_.seq, true, false), full_bytes);
    } else {
      b_.attention("attn", core_shape(s_, s_.seq, s_.seq / 2, false, false),
                   act_bytes(s_.tokens, qo_cols) + block / 2);
    }
    previous = next;
  }
}

// Backward: the ring runs again; the transfer launched with step j carries the K/V block of
// step j+1 and the dK/dV accumulated so far (one block at the first step), overlapping step j;
// after the last step one more transfer returns the accumulated dK/dV to their owner, and the
// input-gradient consumers wait for it. The dK/dV a transfer carries are step j-1's: from j = 1
// on it starts once that step's kernel is done (Transformer Engine's AttnFuncWithCPAndKVP2P
// sends the accumulated dK/dV after the step that added to them; before 2026-12-05 it waited
// only for the previous transfer, and could carry gradients not yet computed).
void TransformerOps::attention_core_backward() {
  const std::int64_t qo_cols = s_.heads * (s_.head_dim + s_.v_head_dim);
  const double full_bytes = 2.0 * (act_bytes(s_.tokens, qo_cols) + kv_block_bytes());
  if (s_.cp == 1) {
    b_.attention("attn_bwd", core_shape(s_, s_.seq, s_.seq, true, true), full_bytes);
    return;
  }
  if (s_.cp_a2a) {
    // The saved output and its gradient exchanged to the heads layout, the backward kernel, the
    // q, k, v gradients exchanged back (AttnFuncWithCPAndQKVOA2A.backward).
    cp_a2a_exchange("cp_out_dout", {s_.heads * s_.v_head_dim, s_.heads * s_.v_head_dim});
    b_.attention("attn_bwd", cp_a2a_shape(true), full_bytes);
    cp_a2a_exchange("cp_dqkv", {s_.heads * s_.head_dim, s_.kv_heads * s_.head_dim,
                                s_.kv_heads * s_.v_head_dim});
    return;
  }
  const double block = kv_block_bytes();
  std::vector<std::uint32_t> launch = b_.after_last_compute();
  if (s_.cp_all_gather) {
    // K/V gathered again (Transformer Engine keeps only the local shard), the work, then the
    // K/V gradients reduce-scattered to their owners; the input-gradient consumers wait for it.
    b_.defer(b_.collective("cp_kv_allgather", CollectiveKind::AllGather, sim::GroupKind::CP,
                           sim::Stream::CpComm, block * s_.cp, launch));
    cp_attention_steps(true, full_bytes, 2.0 * act_bytes(s_.tokens, qo_cols) + block);
    const std::uint32_t last_step = *b_.last_compute();
    b_.defer(b_.collective("cp_dkv_reduce_scatter", CollectiveKind::ReduceScatter, sim::GroupKind::CP,
                           sim::Stream::CpComm, block * s_.cp, {last_step}));
    return;
  }
  std::optional<std::uint32_t> previous;
  for (int j = 0; j < s_.cp; ++j) {
    std::optional<std::uint32_t> next;
    if (j + 1 < s_.cp) {
      next = b_.collective("cp_kv_dkv", CollectiveKind::RingShift, sim::GroupKind::CP,
                           sim::Stream::CpComm, (j == 0 ? 1.0 : 2.0) * block,
                           j == 0 ? launch : b_.after_last_compute());
    }
    if (previous) b_.defer(*previous);
    if (j == 0) {
      b_.attention("attn_bwd", core_shape(s_, s_.seq, s_.seq, true, true), full_bytes);
    } else {
      b_.attention("attn_bwd", core_shape(s_, s_.seq, s_.seq / 2, false, true),
                   2.0 * act_bytes(s_.tokens, qo_cols) + block);
    }
    previous = next;
  }
  const std::uint32_t last_step = *b_.last_compute();
  b_.defer(b_.collective("cp_dkv", CollectiveKind::RingShift, sim::GroupKind::CP, sim::Stream::CpComm,
                         block, {last_step}));
}

// The attention of cp_comm_type a2a: the whole sequence (seq_length, causal) for heads / cp
// query and kv_heads / cp key-value heads of the rank's TP shard.
sim::AttentionShape TransformerOps::cp_a2a_shape(bool backward) const {
  const std::int64_t seq = s_.seq * s_.cp;
  sim::AttentionShape a = core_shape(s_, seq, seq, true, backward);
  a.heads /= s_.cp;
  a.kv_heads /= s_.cp;
  return a;
}

// One all-to-all over CP per tensor (all_to_all_single of the rank's tokens x `width` columns,
// BF16), launched after the last compute op on the cp_comm stream, one after another as Transformer
// Engine's flash_attn_a2a_communicate issues them; the next compute op waits for them. Around
// each, the layout changes TE makes with copies: in Megatron's sbhd layout (sequence first) two
// passes that read and write the tensor (before attention a movedim + contiguous before the
// exchange and the load-balancing index_select after it; after attention the index_select
// before and a movedim + contiguous after; the movedims to and from the sequence dimension are
// no-ops there). Costed on the compute stream after the exchanges, where TE runs some on
// cp_stream beside the next exchange: a slight overstatement of the exposed time.
void TransformerOps::cp_a2a_exchange(const std::string& label,
                                     const std::vector<std::int64_t>& widths) {
  std::vector<std::uint32_t> launch = b_.after_last_compute();
  double bytes = 0.0;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    const double tensor = act_bytes(s_.tokens, widths[i]);
    bytes += tensor;
    std::vector<std::uint32_t> deps = i == 0 ? launch : std::vector<std::uint32_t>{};
    b_.defer(b_.collective(label + "_a2a", CollectiveKind::AllToAll, sim::GroupKind::CP,
                           sim::Stream::CpComm, tensor, std::move(deps)));
  }
  b_.mem(label + "_a2a_reorder", MemKernel::Copy, 2.0 * 2.0 * bytes);
}

// MLA's query path after its down projection: the latent's norm and the up projection (or the
// whole query projection without a query latent).
void TransformerOps::mla_q_up_forward() {
  if (s_.q_lora > 0) {
    b_.mem("q_norm", MemKernel::Norm, 2.0 * act_bytes(s_.sp_tokens, s_.q_lora));
    linear_in("q_up", s_.q_up_out, s_.q_lora, s_.linear_dtype);
  } else {
    linear_in("q_proj", s_.q_up_out, s_.hidden, s_.linear_dtype);
  }
}

// MLA's key-value path after its down projection: the latent's norm, the up projection, the
// shared RoPE key's gather (with `gather_rope_key`) and the rotation of q and k.
void TransformerOps::mla_kv_up_forward(bool gather_rope_key) {
  b_.mem("kv_norm", MemKernel::Norm, 2.0 * act_bytes(s_.sp_tokens, s_.kv_lora));
  linear_in("kv_up", s_.kv_up_out, s_.kv_lora, s_.linear_dtype);
  // The shared RoPE key (k_pos_emb, rope_dim wide) is split off the down projection's output
  // on the sequence shard and gathered over TP too (Megatron-core MLASelfAttention:
  // gather_from_sequence_parallel_region(k_pos_emb)); its backward reduce-scatters.
  if (s_.sequence_parallel && gather_rope_key) {
    tp_blocking("k_pos_emb_ag", CollectiveKind::AllGather, act_bytes(s_.tokens, s_.rope_dim));
  }
  b_.mem("rope", MemKernel::Rope, 2.0 * act_bytes(s_.tokens, (s_.heads + 1) * s_.rope_dim));
}

// GQA's queries and keys between the QKV projection and the core attention: with qk_layernorm
// their per-head norms (Megatron-core SelfAttention.get_query_key_value_tensors: q_layernorm on
// the rank's heads, then k_layernorm, each reading and writing its tensor), then RoPE, which
// rotates both (read and write).
void TransformerOps::gqa_qk_forward() {
  const ModelSpec& m = spec_.model;
  if (m.qk_layernorm) {
    b_.mem("q_layernorm", s_.norm_kernel, 2.0 * act_bytes(s_.tokens, s_.heads * s_.head_dim));
    b_.mem("k_layernorm", s_.norm_kernel, 2.0 * act_bytes(s_.tokens, s_.kv_heads * s_.head_dim));
  }
  if (m.position == PositionKind::Rope) {
    b_.mem("rope", s_.rope_kernel, 2.0 * act_bytes(s_.tokens, (s_.heads + s_.kv_heads) * s_.head_dim));
  }
}

// The backward of gqa_qk_forward, in reverse: RoPE's, then the key and query norms' (each reads
// its input and output gradient and writes the input gradient).
void TransformerOps::gqa_qk_backward() {
  const ModelSpec& m = spec_.model;
  if (m.position == PositionKind::Rope) {
    b_.mem("rope_bwd", s_.rope_kernel, 2.0 * act_bytes(s_.tokens, (s_.heads + s_.kv_heads) * s_.head_dim));
  }
  if (m.qk_layernorm) {
    b_.mem("k_layernorm_bwd", s_.norm_kernel, 3.0 * act_bytes(s_.tokens, s_.kv_heads * s_.head_dim));
    b_.mem("q_layernorm_bwd", s_.norm_kernel, 3.0 * act_bytes(s_.tokens, s_.heads * s_.head_dim));
  }
}

void TransformerOps::attention_forward() {
  const ModelSpec& m = spec_.model;
  if (m.attention == AttentionKind::Gqa) {
    linear_in("qkv", s_.qkv_out, s_.hidden, s_.linear_dtype);
    gqa_qk_forward();
  } else {
    // MLA (Megatron-core MLASelfAttention): down projections with replicated weights on the
    // rank's sequence shard, norms of the compressed latents, then column-parallel up
    // projections that gather the (narrow) latents over TP. The down projections are Transformer
    // Engine Linears (parallel_mode "duplicated"): in FP8 each casts its input as the others do.
    if (s_.q_lora > 0) {
      fp8_quantize("q_down_fp8_cast", s_.sp_tokens, s_.hidden, kFp8CastTransposeBytes, s_.linear_dtype);
      b_.gemm("q_down", s_.sp_tokens, s_.q_lora, s_.hidden, s_.linear_dtype, kOutBytes);
    }
    mla_q_up_forward();
    fp8_quantize("kv_down_fp8_cast", s_.sp_tokens, s_.hidden, kFp8CastTransposeBytes, s_.linear_dtype);
    b_.gemm("kv_down", s_.sp_tokens, s_.kv_lora + s_.rope_dim, s_.hidden, s_.linear_dtype, kOutBytes);
    mla_kv_up_forward(true);
  }
  attention_core_forward();
  attn_out_transpose("attn_out_transpose");
  linear_out("proj", s_.hidden, s_.attn_out);
}

std::vector<std::uint32_t> TransformerOps::attention_backward(int layer, GradSink* sink) {
  const ModelSpec& m = spec_.model;
  row_backward("proj", s_.attn_out, s_.hidden, ParamGroup::Proj, layer, sink);
  attn_out_transpose("attn_out_transpose_bwd");
  b_.set_recompute(true);
  if (spec_.training.recomputes(RecomputeModule::MlaUpProj)) {
    // mla_up_proj: the up projections and RoPE (their outputs q, k, v discarded after the core
    // attention's forward) run again when the gradient of the attention output arrives
    // (MLASelfAttention's CheckpointWithoutOutput), their TP gathers included; the RoPE key was
    // gathered before the checkpoint, which keeps it.
    mla_q_up_forward();
    mla_kv_up_forward(false);
  }
  // Megatron's selective recompute (core_attn): the core attention forward runs again.
  if (spec_.training.recomputes(RecomputeModule::CoreAttn)) attention_core_forward();
  b_.set_recompute(false);
  attention_core_backward();
  if (m.attention == AttentionKind::Gqa) {
    gqa_qk_backward();
    return column_backward("qkv", s_.hidden, s_.qkv_out, s_.linear_dtype, ParamGroup::Qkv, layer, sink);
  }
  b_.mem("rope_bwd", MemKernel::Rope, 2.0 * act_bytes(s_.tokens, (s_.heads + 1) * s_.rope_dim));
  if (s_.sequence_parallel) {
    tp_blocking("k_pos_emb_rs", CollectiveKind::ReduceScatter, act_bytes(s_.tokens, s_.rope_dim));
  }
  auto comm = column_backward("kv_up", s_.kv_lora, s_.kv_up_out, s_.linear_dtype, ParamGroup::Qkv,
                              layer, nullptr);
  b_.mem("kv_norm_bwd", MemKernel::Norm, 3.0 * act_bytes(s_.sp_tokens, s_.kv_lora), std::move(comm));
  const std::int64_t kv_down = s_.kv_lora + s_.rope_dim;
  fp8_quantize("kv_down_fp8_grad_cast", s_.sp_tokens, kv_down, kFp8CastTransposeBytes, s_.linear_dtype);
  b_.gemm("kv_down_dgrad", s_.sp_tokens, s_.hidden, kv_down, s_.linear_dtype, kOutBytes);
  std::uint32_t last_wgrad =
      b_.wgrad("kv_down_wgrad", s_.hidden, kv_down, s_.sp_tokens, s_.linear_dtype, s_.wgrad_accum);
  if (s_.q_lora > 0) {
    comm = column_backward("q_up", s_.q_lora, s_.q_up_out, s_.linear_dtype, ParamGroup::Qkv, layer,
                           nullptr);
    b_.mem("q_norm_bwd", MemKernel::Norm, 3.0 * act_bytes(s_.sp_tokens, s_.q_lora), std::move(comm));
    fp8_quantize("q_down_fp8_grad_cast", s_.sp_tokens, s_.q_lora, kFp8CastTransposeBytes, s_.linear_dtype);
    b_.gemm("q_down_dgrad", s_.sp_tokens, s_.hidden, s_.q_lora, s_.linear_dtype, kOutBytes);
    last_wgrad =
        b_.wgrad("q_down_wgrad", s_.hidden, s_.q_lora, s_.sp_tokens, s_.linear_dtype, s_.wgrad_accum);
    comm.clear();
  } else {
    comm = column_backward("q_proj", s_.hidden, s_.q_up_out, s_.linear_dtype, ParamGroup::Qkv,
                           layer, nullptr);
    last_wgrad = b_.last_wgrad().value_or(last_wgrad);
  }
  if (sink != nullptr) sink->gradient_ready(ParamGroup::Qkv, layer, last_wgrad);
  return comm;
}

}  // namespace clustersim::workloads
