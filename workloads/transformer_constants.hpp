// Byte constants of the generated ops (internal to workloads/), with their sources.
#pragma once

namespace clustersim::workloads {

// Activations, activation gradients and pipeline messages are BF16 (Megatron --bf16; with
// fp8, Transformer Engine casts inside its GEMM modules and hands BF16 tensors between them).
inline constexpr double kActivationBytes = 2.0;
// FP8 GEMM operands (Transformer Engine, delayed scaling): a linear's BF16 input or output
// gradient is quantized by a cast-transpose kernel that reads it (2 bytes) and writes the FP8
// tensor and its FP8 transpose (1 + 1), the transpose being what the other backward GEMM needs
// (transformer_engine/pytorch/module/linear.py: fp8_cast_transpose_fused / cast with
// rowwise and columnwise usage). A LayerNormLinear (QKV, FC1 and Megatron's MLA up-projections,
// whose norm is fused into the linear) gets its input in FP8 from the norm kernel itself and
// only transposes it for the weight gradient: read 1, write 1.
inline constexpr double kFp8CastTransposeBytes = 4.0;
inline constexpr double kFp8TransposeBytes = 2.0;
// A linear that saved its BF16 input instead of the FP8 copy (Transformer Engine's
// save_original_input, which Megatron-core sets where an output-discarding recompute frees that
// input) quantizes it again in the backward for the weight gradient, columnwise only: read 2,
// write 1.
inline constexpr double kFp8SavedInputCastBytes = 3.0;
// The all-gathers Transformer Engine overlaps through userbuffers move FP8 when the recipe is
// FP8: its communicators of the all-gather roles (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad,
// and the bulk qkv_dgrad, fc1_dgrad that re-gather the input for the weight gradient) are
// allocated as uint8 buffers (transformer_engine/pytorch/module/base.py, initialize_ub:
// "AllGather buffers use fp8 when using fp8 recipe", fp8_buf = name in
// layers_all_gather_overlap), so the cast precedes the gather. Reduce-scatters stay BF16 (FP8
// only for a pipeline method with fp8_buf, which no configuration here uses).
inline constexpr double kFp8Bytes = 1.0;
// GEMM outputs written as BF16 (weight gradients: ProgramBuilder::wgrad, by where they go).
inline constexpr double kOutBytes = 2.0;
inline constexpr double kFp32Bytes = 4.0;
// Vocab-parallel cross entropy, unfused (megatron/core/tensor_parallel/cross_entropy.py), per
// logit: cast BF16 -> FP32 (2 + 4), max (4), subtract max in place (8), exp in place (8), sum
// (4), divide into the softmax kept for backward (8) = 38 bytes. Backward: scale the softmax in
// place (8), cast the gradient to BF16 for the output layer (4 + 2) = 14 bytes.
inline constexpr double kCrossEntropyForwardBytes = 38.0;
inline constexpr double kCrossEntropyBackwardBytes = 14.0;
// Fused softmax cross-entropy (training.cross_entropy: fused, Transformer Engine's Triton kernels,
// transformer_engine/pytorch/triton/cross_entropy.py: an online-softmax pass reading the BF16
// logits in the forward, a pass rewriting them in place with the gradient in the backward) moves
// what the calibration's fused kernel moves (calib/probes/membound_kernels.cu ce_k: the same two
// passes), 4 bytes per logit in its table's convention, one pass of three in the forward.
inline constexpr double kFusedCrossEntropyForwardBytes = 4.0 / 3.0;
inline constexpr double kFusedCrossEntropyBackwardBytes = 8.0 / 3.0;
// Chunked fused linear cross-entropy (cross_entropy: chunked, Liger-Kernel's): both passes in
// the forward, chunk by chunk; its backward only scales by the loss gradient, skipped when 1.
inline constexpr double kChunkedCrossEntropyForwardBytes = 4.0;
inline constexpr double kChunkedCrossEntropyBackwardBytes = 0.0;
// Hugging Face transformers' loss (cross_entropy: eager: logits.float(), then log_softmax and
// nll_loss, and their backwards) as measured by calibration run 29 (calib/data/h200/run29/
// eager_loss.csv, H200: 6.97 ms forward, 6.58 ms backward for 8,192 x 128,256 logits, per logit
// within 3% from 2k to 16k tokens), in bytes of the fused kernel's table at the bandwidth it
// measured at that size (2.78 TB/s, membound.csv): the time run 29 took.
inline constexpr double kEagerCrossEntropyForwardBytes = 18.4;
inline constexpr double kEagerCrossEntropyBackwardBytes = 17.4;
// Its forward all-reduces three FP32 values per token over TP: the max logit, the target
// logit and the sum of exponentials.
inline constexpr int kCrossEntropyAllReduces = 3;
// main_grad (FP32) += grad (BF16): read 4 + 2, write 4 bytes per element (Megatron DDP hook
// for parameters whose gradient is not fused into a GEMM, such as the embeddings).
inline constexpr double kMainGradAccumulateBytes = 10.0;
// Autograd's sum of two BF16 gradients of one parameter (read 2 + 2, write 2 bytes per element):
// the word embedding read by the model and by its MTP depth on one rank, whose AccumulateGrad,
// and with it Megatron's main_grad hook, runs once on the sum.
inline constexpr double kGradSumBytes = 6.0;
// MoE router: softmax (or sigmoid) over the expert logits in FP32 and top-k selection, per
// token and expert: read the logits, write the probabilities, read them for top-k (4 + 4 + 4).
inline constexpr double kRouterBytesPerLogit = 12.0;

}  // namespace clustersim::workloads
