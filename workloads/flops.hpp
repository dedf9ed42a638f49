// FLOP accounting: model FLOPs under the MFU conventions the reference sources use, the
// hardware FLOPs a step executes, and the FLOPs of one GEMM or attention op (used by the
// generator, so that the sum over a step's ops can be checked against the closed forms here).
#pragma once

#include <cstdint>

#include "sim/trace.hpp"
#include "workloads/job_spec.hpp"

namespace clustersim::workloads {

/// How model FLOPs count attention (docs: ../shared/notes/architecture.md).
enum class MfuConvention : std::uint8_t {
  Megatron,  ///< 6*N*s + 12*s^2*d*L per sequence: attention counted as if unmasked
  Causal     ///< 6*N*s + 6*s^2*d*L per sequence: the causal mask halves attention
};

/// "megatron" or "causal".
const char* to_string(MfuConvention convention);

/// Megatron's padded vocabulary: vocab rounded up to a multiple of 128 * tp
/// (make_vocab_size_divisible_by = 128, megatron/training/tokenizer _vocab_size_with_padding).
std::int64_t padded_vocab(std::int64_t vocab, int tp);

/// Weights of the linear layers of one transformer layer (QKV, output projection, FC1, FC2;
/// no biases, no norms): h*(heads + 2*kv_heads)*head_dim + heads*head_dim*h + (2|3)*h*ffn.
double layer_linear_weights(const ModelSpec& model);

/// N of the MFU formula: all transformer-layer linear weights plus the output head
/// (hidden * vocab, unpadded vocab as NeMo's flops formulas use it).
double mfu_weight_count(const ModelSpec& model);

/// Model FLOPs of one training sequence of `seq` tokens (forward + backward, no recompute):
/// 6*N*s + (12|6)*s^2*d*L with d = heads*head_dim.
double model_flops_per_sample(const ModelSpec& model, std::int64_t seq, MfuConvention convention);

/// FLOPs the GPUs execute for one sequence with tensor parallel size `tp`: the GEMMs
/// (6 * tokens * weights, output head over the padded vocabulary) plus causal flash
/// attention (forward 2*s^2*d per layer, backward 2.5x forward as FlashAttention-2 recomputes
/// the scores). Equals the sum of Op::flops over all ranks of a step divided by the global batch.
double hardware_flops_per_sample(const ModelSpec& model, std::int64_t seq, int tp);

/// 2*m*n*k (a multiply-add counts 2).
double gemm_flops(const sim::GemmShape& shape);

/// FLOPs of a fused attention op: forward 2*b*h*sq*skv*(d + dv); backward
/// 2*b*h*sq*skv*(3*d + 2*dv): 5 matmuls (scores recomputed, then dV, dP, dQ, dK), i.e. 2.5x
/// the forward when dv == d, as FlashAttention-2 counts it (Dao 2023, arXiv 2307.08691,
/// Sec. 4.1); halved with the causal mask (sq == skv), as that paper does.
double attention_flops(const sim::AttentionShape& shape);

}  // namespace clustersim::workloads
