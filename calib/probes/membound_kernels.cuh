// The memory-bound kernels the membound probe times: our own straightforward CUDA kernels with
// 16-byte accesses and FP32 arithmetic, one per kernel family of sim::MemKernel. They are what a
// fused framework kernel does (one read of each input, one write of each output); they are not
// copies of any framework's kernels. Shapes: bf16 activations, FP32 optimizer state.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace probes::mem {

constexpr int kHidden = 8192;        // norm width: Llama3-70B hidden size
constexpr int kHeadDim = 128;        // RoPE head dimension
constexpr int kRopePositions = 8192; // rows of the cos/sin table

/// AdamW hyper-parameters of the probe (Llama 3 recipe values; the cost does not depend on them).
struct AdamW {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, wd = 0.1f;
  float c1 = 0.0f, c2 = 0.0f;  // 1 - beta^step, bias corrections
};

void copy(const __nv_bfloat16* x, __nv_bfloat16* y, std::size_t n, cudaStream_t s);
void gelu(const __nv_bfloat16* x, __nv_bfloat16* y, std::size_t n, cudaStream_t s);
/// y[r, c] = silu(x[r, c]) * x[r, f + c] for x [rows, 2f], y [rows, f].
void swiglu(const __nv_bfloat16* x, __nv_bfloat16* y, std::size_t rows, int f, cudaStream_t s);
/// RMSNorm over rows of width kHidden, weight w.
void rmsnorm(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, std::size_t rows,
             cudaStream_t s);
/// LayerNorm over rows of width kHidden, weight w, bias b.
void layernorm(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* b,
               __nv_bfloat16* y, std::size_t rows, cudaStream_t s);
/// Rotate-half RoPE on x [tokens, heads, kHeadDim]; cos/sin [kRopePositions, kHeadDim/2] FP32.
void rope(const __nv_bfloat16* x, const float* cs, const float* sn, __nv_bfloat16* y,
          std::size_t tokens, int heads, cudaStream_t s);
/// Fused softmax cross-entropy forward + backward: loss[r] and dlogits = softmax - onehot.
void cross_entropy(const __nv_bfloat16* logits, const int* labels, float* loss,
                   __nv_bfloat16* grad, std::size_t rows, int vocab, cudaStream_t s);
/// In-place AdamW on FP32 p, m, v with FP32 gradient g; also writes the BF16 copy of p.
void adamw(float* p, const float* g, float* m, float* v, __nv_bfloat16* p16, std::size_t n,
           const AdamW& h, cudaStream_t s);
/// labels[r] = mix64(seed + r) % vocab.
void fill_labels(int* labels, std::size_t rows, int vocab, std::uint64_t seed, cudaStream_t s);

}  // namespace probes::mem
