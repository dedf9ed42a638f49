// Memory-bound kernels of the membound probe (see membound_kernels.cuh).
#include "membound_kernels.cuh"
#include "probe_common.cuh"

namespace probes::mem {
namespace {

constexpr int kThreads = 256;

__device__ inline void load8(const __nv_bfloat16* p, float (&f)[8]) {
  const uint4 v = *reinterpret_cast<const uint4*>(p);
  const auto* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 t = __bfloat1622float2(h[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}

__device__ inline void store8(__nv_bfloat16* p, const float (&f)[8]) {
  uint4 v;
  auto* h = reinterpret_cast<__nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
  *reinterpret_cast<uint4*>(p) = v;
}

unsigned grid_for(std::size_t items) {
  return static_cast<unsigned>(std::min<std::size_t>((items + kThreads - 1) / kThreads, 132 * 32));
}

__device__ inline float block_sum(float v, float* shm) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) shm[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = 0.0f;
  for (int i = 0; i < kThreads / 32; ++i) r += shm[i];
  __syncthreads();
  return r;
}

__global__ void copy_k(const uint4* x, uint4* y, std::size_t n16) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x; i < n16;
       i += static_cast<std::size_t>(gridDim.x) * kThreads)
    y[i] = x[i];
}

__global__ void gelu_k(const __nv_bfloat16* x, __nv_bfloat16* y, std::size_t n8) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x; i < n8;
       i += static_cast<std::size_t>(gridDim.x) * kThreads) {
    float f[8];
    load8(x + 8 * i, f);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float u = 0.7978845608f * (f[j] + 0.044715f * f[j] * f[j] * f[j]);
      f[j] = 0.5f * f[j] * (1.0f + tanhf(u));
    }
    store8(y + 8 * i, f);
  }
}

__global__ void swiglu_k(const __nv_bfloat16* x, __nv_bfloat16* y, std::size_t rows, int f) {
  const std::size_t per_row = f / 8, n8 = rows * per_row;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x; i < n8;
       i += static_cast<std::size_t>(gridDim.x) * kThreads) {
    const std::size_t r = i / per_row, c = (i % per_row) * 8;
    float g[8], u[8];
    load8(x + r * 2 * f + c, g);
    load8(x + r * 2 * f + f + c, u);
#pragma unroll
    for (int j = 0; j < 8; ++j) g[j] = g[j] / (1.0f + __expf(-g[j])) * u[j];
    store8(y + r * f + c, g);
  }
}

constexpr int kNormVec = kHidden / (8 * kThreads);  // 16-byte vectors per thread per row

__global__ void norm_k(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* b,
                       __nv_bfloat16* y, bool layer) {
  __shared__ float shm[kThreads / 32];
  const std::size_t row = blockIdx.x;
  float v[kNormVec][8];
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kNormVec; ++k) {
    load8(x + row * kHidden + (k * kThreads + threadIdx.x) * 8, v[k]);
#pragma unroll
    for (int j = 0; j < 8; ++j) sum += layer ? v[k][j] : v[k][j] * v[k][j];
  }
  const float mean = layer ? block_sum(sum, shm) / kHidden : 0.0f;
  float sq = 0.0f;
  if (layer) {
#pragma unroll
    for (int k = 0; k < kNormVec; ++k)
#pragma unroll
      for (int j = 0; j < 8; ++j) sq += (v[k][j] - mean) * (v[k][j] - mean);
  } else {
    sq = sum;
  }
  const float inv = rsqrtf(block_sum(sq, shm) / kHidden + 1e-5f);
#pragma unroll
  for (int k = 0; k < kNormVec; ++k) {
    const int c = (k * kThreads + threadIdx.x) * 8;
    float wf[8], bf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    load8(w + c, wf);
    if (layer) load8(b + c, bf);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[k][j] = (v[k][j] - mean) * inv * wf[j] + bf[j];
    store8(y + row * kHidden + c, v[k]);
  }
}

__global__ void rope_k(const __nv_bfloat16* x, const float* cs, const float* sn, __nv_bfloat16* y,
                       std::size_t tokens, int heads) {
  constexpr int kChunks = kHeadDim / 16;  // 8-element chunks in one half of a head
  const std::size_t n = tokens * heads * kChunks;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * kThreads) {
    const std::size_t th = i / kChunks;              // token * heads + head
    const int c = static_cast<int>(i % kChunks) * 8;  // offset in the first half
    const std::size_t pos = (th / heads) % kRopePositions;
    float a[8], b[8], oa[8], ob[8];
    load8(x + th * kHeadDim + c, a);
    load8(x + th * kHeadDim + kHeadDim / 2 + c, b);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float co = cs[pos * (kHeadDim / 2) + c + j], si = sn[pos * (kHeadDim / 2) + c + j];
      oa[j] = a[j] * co - b[j] * si;
      ob[j] = b[j] * co + a[j] * si;
    }
    store8(y + th * kHeadDim + c, oa);
    store8(y + th * kHeadDim + kHeadDim / 2 + c, ob);
  }
}

__global__ void ce_k(const __nv_bfloat16* logits, const int* labels, float* loss,
                     __nv_bfloat16* grad, int vocab) {
  __shared__ float shm_m[kThreads / 32], shm_s[kThreads / 32];
  const std::size_t row = blockIdx.x;
  const __nv_bfloat16* x = logits + row * vocab;
  float m = -1e30f, s = 0.0f;
  for (int c = threadIdx.x * 8; c < vocab; c += kThreads * 8) {
    float f[8];
    load8(x + c, f);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float nm = fmaxf(m, f[j]);
      s = s * __expf(m - nm) + __expf(f[j] - nm);
      m = nm;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {  // merge (max, sum) pairs across the warp
    const float om = __shfl_xor_sync(0xffffffffu, m, o), os = __shfl_xor_sync(0xffffffffu, s, o);
    const float nm = fmaxf(m, om);
    s = s * __expf(m - nm) + os * __expf(om - nm);
    m = nm;
  }
  if ((threadIdx.x & 31) == 0) {
    shm_m[threadIdx.x >> 5] = m;
    shm_s[threadIdx.x >> 5] = s;
  }
  __syncthreads();
  float gm = -1e30f, gs = 0.0f;
  for (int i = 0; i < kThreads / 32; ++i) gm = fmaxf(gm, shm_m[i]);
  for (int i = 0; i < kThreads / 32; ++i) gs += shm_s[i] * __expf(shm_m[i] - gm);
  const int label = labels[row];
  const float inv = 1.0f / gs;
  for (int c = threadIdx.x * 8; c < vocab; c += kThreads * 8) {
    float f[8];
    load8(x + c, f);
#pragma unroll
    for (int j = 0; j < 8; ++j) f[j] = __expf(f[j] - gm) * inv - (c + j == label ? 1.0f : 0.0f);
    store8(grad + row * vocab + c, f);
  }
  if (threadIdx.x == 0) loss[row] = logf(gs) + gm - __bfloat162float(x[label]);
}

__global__ void adamw_k(float4* p, const float4* g, float4* m, float4* v, uint2* p16,
                        std::size_t n4, AdamW h) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x; i < n4;
       i += static_cast<std::size_t>(gridDim.x) * kThreads) {
    float4 pp = p[i], gg = g[i], mm = m[i], vv = v[i];
    float* pf = &pp.x;
    const float* gf = &gg.x;
    float* mf = &mm.x;
    float* vf = &vv.x;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      mf[j] = h.beta1 * mf[j] + (1.0f - h.beta1) * gf[j];
      vf[j] = h.beta2 * vf[j] + (1.0f - h.beta2) * gf[j] * gf[j];
      const float upd = (mf[j] / h.c1) / (sqrtf(vf[j] / h.c2) + h.eps);
      pf[j] -= h.lr * (upd + h.wd * pf[j]);
    }
    p[i] = pp;
    m[i] = mm;
    v[i] = vv;
    uint2 o;
    auto* oh = reinterpret_cast<__nv_bfloat162*>(&o);
    oh[0] = __floats2bfloat162_rn(pp.x, pp.y);
    oh[1] = __floats2bfloat162_rn(pp.z, pp.w);
    p16[i] = o;
  }
}

__global__ void labels_k(int* labels, std::size_t rows, int vocab, std::uint64_t seed) {
  for (std::size_t r = blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x; r < rows;
       r += static_cast<std::size_t>(gridDim.x) * kThreads)
    labels[r] = static_cast<int>(mix64(seed + r) % static_cast<std::uint64_t>(vocab));
}

}  // namespace

void copy(const __nv_bfloat16* x, __nv_bfloat16* y, std::size_t n, cudaStream_t s) {
  copy_k<<<grid_for(n / 8), kThreads, 0, s>>>(reinterpret_cast<const uint4*>(x),
                                               reinterpret_cast<uint4*>(y), n / 8);
  PROBE_LAUNCH();
}
void gelu(const __nv_bfloat16* x, __nv_bfloat16* y, std::size_t n, cudaStream_t s) {
  gelu_k<<<grid_for(n / 8), kThreads, 0, s>>>(x, y, n / 8);
  PROBE_LAUNCH();
}
void swiglu(const __nv_bfloat16* x, __nv_bfloat16* y, std::size_t rows, int f, cudaStream_t s) {
  swiglu_k<<<grid_for(rows * f / 8), kThreads, 0, s>>>(x, y, rows, f);
  PROBE_LAUNCH();
}
void rmsnorm(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, std::size_t rows,
             cudaStream_t s) {
  norm_k<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, w, nullptr, y, false);
  PROBE_LAUNCH();
}
void layernorm(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* b,
               __nv_bfloat16* y, std::size_t rows, cudaStream_t s) {
  norm_k<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, w, b, y, true);
  PROBE_LAUNCH();
}
void rope(const __nv_bfloat16* x, const float* cs, const float* sn, __nv_bfloat16* y,
          std::size_t tokens, int heads, cudaStream_t s) {
  rope_k<<<grid_for(tokens * heads * (kHeadDim / 16)), kThreads, 0, s>>>(x, cs, sn, y, tokens, heads);
  PROBE_LAUNCH();
}
void cross_entropy(const __nv_bfloat16* logits, const int* labels, float* loss,
                   __nv_bfloat16* grad, std::size_t rows, int vocab, cudaStream_t s) {
  ce_k<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(logits, labels, loss, grad, vocab);
  PROBE_LAUNCH();
}
void adamw(float* p, const float* g, float* m, float* v, __nv_bfloat16* p16, std::size_t n,
           const AdamW& h, cudaStream_t s) {
  adamw_k<<<grid_for(n / 4), kThreads, 0, s>>>(
      reinterpret_cast<float4*>(p), reinterpret_cast<const float4*>(g),
      reinterpret_cast<float4*>(m), reinterpret_cast<float4*>(v), reinterpret_cast<uint2*>(p16),
      n / 4, h);
  PROBE_LAUNCH();
}
void fill_labels(int* labels, std::size_t rows, int vocab, std::uint64_t seed, cudaStream_t s) {
  labels_k<<<grid_for(rows), kThreads, 0, s>>>(labels, rows, vocab, seed);
  PROBE_LAUNCH();
}

}  // namespace probes::mem
