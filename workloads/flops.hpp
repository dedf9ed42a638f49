// FLOP accounting: model FLOPs under the MFU conventions the reference sources use, the
// hardware FLOPs a step executes (recompute included, for HFU), weight counts, and the FLOPs of
// one GEMM or attention op (used by the generator, so that the sum over a step's ops can be
// checked against the closed forms here).
#pragma once

#include <cstdint>

#include "sim/trace.hpp"
#include "workloads/job_spec.hpp"

namespace clustersim::workloads {

/// How model FLOPs count attention (docs: ../shared/notes/architecture.md).
enum class MfuConvention : std::uint8_t {
  Megatron,  ///< 6*N*s + 6*s^2*a*(d_qk + d_v)*L per sequence (12*s^2*d*L when d_qk = d_v):
             ///< attention counted as if unmasked
  Causal     ///< the same with the attention term halved by the causal mask
};

/// "megatron" or "causal".
const char* to_string(MfuConvention convention);
/// Parses "megatron" / "causal". @throws std::invalid_argument otherwise.
MfuConvention mfu_convention_from(const std::string& name);

/// Megatron's padded vocabulary: vocab rounded up to a multiple of 128 * tp
/// (make_vocab_size_divisible_by = 128, megatron/training/tokenizer _vocab_size_with_padding).
std::int64_t padded_vocab(std::int64_t vocab, int tp);

/// Linear weights of one attention block. GQA: h*(heads + 2*kv_heads)*head_dim +
/// heads*v_head_dim*h. MLA: q down/up (or one h x heads*head_dim projection without
/// q_lora_rank), kv down (h x (kv_lora_rank + rope_head_dim)), kv up (kv_lora_rank x
/// heads*(head_dim - rope_head_dim + v_head_dim)) and the output projection.
double attention_linear_weights(const ModelSpec& model);
/// Linear weights of an MLP of inner width `ffn`: (3 with SwiGLU, else 2) * h * ffn.
double mlp_weights(const ModelSpec& model, std::int64_t ffn);
/// Linear weights of one MTP depth's eh_proj: 2h x h (the embedding and the hidden state
/// concatenated, projected back to h).
double mtp_proj_weights(const ModelSpec& model);
/// Linear weights of a dense transformer layer: attention_linear_weights + mlp_weights(ffn).
double layer_linear_weights(const ModelSpec& model);
/// Linear weights one token passes through in layer `layer`: attention, then the dense MLP or,
/// in a MoE layer, top_k routed experts plus the shared experts (the router is left out, as
/// Megatron-LM's num_floating_point_operations leaves it out; DeepSeek-V3's 37B "activated"
/// parameters count the same way).
double active_layer_weights(const ModelSpec& model, std::int64_t layer);

/// N of the MFU formula: active linear weights of all layers plus the output head
/// (hidden * vocab, unpadded vocab as NeMo's flops formulas use it); with MTP each depth's
/// layer, eh_proj and one more head (Megatron-LM's num_floating_point_operations counts them).
double mfu_weight_count(const ModelSpec& model);

/// Model FLOPs of one training sequence of `seq` tokens (forward + backward, no recompute):
/// 6*N*s + attention, attention = 6*s^2*heads*(head_dim + v_head_dim)*L under megatron, half
/// of it under causal (L: the decoder's and the MTP layers).
double model_flops_per_sample(const ModelSpec& model, std::int64_t seq, MfuConvention convention);

/// Attention's share of model_flops_per_sample(model, seq, convention): its attention term over
/// the whole, in [0, 1). S3's step decomposition (tools/validation/step_decomposition.hpp) splits
/// a step's model FLOPs with it, as the source's bench_decompose.py does.
double attention_flop_share(const ModelSpec& model, std::int64_t seq, MfuConvention convention);

/// FLOPs the GPUs execute for one sequence with tensor parallel size `tp`, no recompute: the
/// GEMMs (6 * tokens * weights, MoE routers included, output head over the padded vocabulary)
/// plus causal flash attention (forward 2*s^2*heads*(d_qk + d_v)/2 per layer, backward
/// 2*s^2*heads*(3*d_qk + 2*d_v)/2: 2.5x the forward when d_qk == d_v).
double hardware_flops_per_sample(const ModelSpec& model, std::int64_t seq, int tp);

/// Same for a whole spec, recompute included (HFU): full recompute adds one more forward of
/// every layer (GEMMs and attention), selective one more attention forward per layer with
/// core_attn and the GEMMs of the other recompute_modules (up projections, dense MLPs, MoE
/// blocks, shared experts).
/// MoE layers execute top_k experts per token (scaled by min(1, capacity_factor) when tokens
/// are dropped). Equals the sum of Op::flops over all ranks of a step divided by the global
/// batch when moe_imbalance is 1.
double hardware_flops_per_sample(const WorkloadSpec& spec);

/// 2*m*n*k (a multiply-add counts 2).
double gemm_flops(const sim::GemmShape& shape);

/// FLOPs of a fused attention op: forward 2*b*h*sq*skv*(d + dv); backward
/// 2*b*h*sq*skv*(3*d + 2*dv): 5 matmuls (scores recomputed, then dV, dP, dQ, dK), i.e. 2.5x
/// the forward when dv == d, as FlashAttention-2 counts it (Dao 2023, arXiv 2307.08691,
/// Sec. 4.1); halved with the causal mask (sq == skv), as that paper does.
double attention_flops(const sim::AttentionShape& shape);

}  // namespace clustersim::workloads
