// cuBLASLt GEMM plans shared by the GEMM probes: see gemm_lt.cuh.
#include "gemm_lt.cuh"

#include <chrono>
#include <iostream>

namespace probes {
namespace {

__device__ inline float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline float to_f(__nv_fp8_e4m3 v) { return static_cast<float>(v); }

// Recomputes `count` sampled entries of C in double precision, one warp per entry; writes each
// entry's error relative to max(|ref|, sqrt(sum of squared products)).
template <typename T, typename TC>
__global__ void check_kernel(const T* a, const T* b, const TC* c, Problem pr,
                             float scale, int count, unsigned long long seed, float* err) {
  const int s = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (s >= count) return;
  const long long i = static_cast<long long>(mix64(seed + 2 * s) % pr.m);
  const long long j = static_cast<long long>(mix64(seed + 2 * s + 1) % pr.n);
  double acc = 0.0, norm = 0.0;
  for (long long p = lane; p < pr.k; p += 32) {
    const double t = static_cast<double>(to_f(a[a_index(pr.layout, i, p, pr.m, pr.k)])) *
                     to_f(b[b_index(pr.layout, p, j, pr.n, pr.k)]);
    acc += t;
    norm += t * t;
  }
  for (int o = 16; o > 0; o >>= 1) {
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
    norm += __shfl_xor_sync(0xffffffffu, norm, o);
  }
  if (lane != 0) return;
  acc *= scale;
  const double got = static_cast<float>(c[i * pr.n + j]);
  const double ref = fmax(fmax(fabs(acc), sqrt(norm) * scale), 1e-6);
  err[s] = isfinite(got) ? static_cast<float>(fabs(got - acc) / ref) : 1e30f;
}

__global__ void fill_fp8_kernel(__nv_fp8_e4m3* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = __nv_fp8_e4m3(rand_val(seed, i));
}

}  // namespace

void fill(Dt d, void* p, std::size_t n, std::uint64_t seed) {
  if (d == Dt::BF16) {
    fill_bf16(static_cast<__nv_bfloat16*>(p), n, seed);
  } else {
    fill_fp8_kernel<<<2112, 256>>>(static_cast<__nv_fp8_e4m3*>(p), n, seed);
    PROBE_LAUNCH();
  }
}

Slots make_slots(const Context& cx, const Problem& p) {
  Slots s;
  s.off_b = align_up(static_cast<std::size_t>(p.m * p.k) * elem(p.dt));
  s.off_c = s.off_b + align_up(static_cast<std::size_t>(p.k * p.n) * elem(p.dt));
  // FP8 reserves 4 bytes per output element in case only the FP32-output variant runs.
  s.stride = s.off_c + align_up(static_cast<std::size_t>(p.m * p.n) * (p.dt == Dt::FP8 || cx.accumulate == 1 ? 4 : 2));
  if (s.stride > cx.pool_bytes) throw std::runtime_error("problem larger than the pool");
  const std::size_t want = ((512u << 20) + s.stride - 1) / s.stride;
  s.count = static_cast<int>(std::clamp<std::size_t>(std::min(want, cx.pool_bytes / s.stride), 1, 16));
  return s;
}

namespace {

template <typename TC>
void launch_check(const Problem& p, bool scaled, const char* base, const Slots& sl, float* err) {
  constexpr int kCount = 64;
  const float scale = scaled ? 0.5f * 0.25f : 1.0f;
  const auto* c = reinterpret_cast<const TC*>(base + sl.off_c);
  if (p.dt == Dt::BF16)
    check_kernel<<<kCount / 4, 128>>>(reinterpret_cast<const __nv_bfloat16*>(base),
                                      reinterpret_cast<const __nv_bfloat16*>(base + sl.off_b), c,
                                      p, scale, kCount, 12345, err);
  else
    check_kernel<<<kCount / 4, 128>>>(reinterpret_cast<const __nv_fp8_e4m3*>(base),
                                      reinterpret_cast<const __nv_fp8_e4m3*>(base + sl.off_b), c,
                                      p, scale, kCount, 12345, err);
  PROBE_LAUNCH();
}

}  // namespace

float spot_check(const Context& cx, const Problem& p, const LtPlan& plan, const Slots& sl) {
  constexpr int kCount = 64;
  char* base = cx.pool;
  // Garbage (NaN) in C, except for the accumulating plan, which adds A B to what C holds: zero.
  PROBE_CUDA(cudaMemset(base + sl.off_c, plan.accumulates() ? 0 : 0xFF,
                        static_cast<std::size_t>(p.m * p.n) * (plan.out_f32() ? 4 : 2)));
  plan.run(base, base + sl.off_b, base + sl.off_c, cx.ws, nullptr);
  if (plan.out_f32())
    launch_check<float>(p, plan.scaled(), base, sl, cx.err);
  else
    launch_check<__nv_bfloat16>(p, plan.scaled(), base, sl, cx.err);
  std::vector<float> e(kCount);
  PROBE_CUDA(cudaMemcpy(e.data(), cx.err, sizeof(float) * kCount, cudaMemcpyDeviceToHost));
  return *std::max_element(e.begin(), e.end());
}

const char* variant_name(int v) {
  const char* names[] = {"std", "no_fast_accum_attr", "fp32_out", "unscaled", "accum_f32", "accum_bf16"};
  return names[v];
}

std::unique_ptr<LtPlan> make_plan(Context& cx, const Problem& p, const Slots& sl, int sm_count) {
  char* base = cx.pool;
  const int variants = cx.accumulate != 0 ? 1 : (p.dt == Dt::FP8 ? 4 : 1);
  for (int i = 0; i < variants; ++i) {
    const int v = cx.accumulate != 0 ? 3 + cx.accumulate : (cx.first_variant + i) % variants;
    auto plan = std::make_unique<LtPlan>(cx.lt, p, cx.scales, cx.ws_bytes, cx.fast_accum, v, sm_count,
                                         p.dt == Dt::FP8 ? cx.block : 0, cx.block_scales);
    if (plan->select(base, base + sl.off_b, base + sl.off_c, cx.ws)) {
      if (p.dt == Dt::FP8 && cx.accumulate == 0) cx.first_variant = v;
      return plan;
    }
    cudaGetLastError();
    std::cerr << "cuBLASLt: no algorithm runs for " << name(p.dt) << " " << p.m << "x" << p.n
              << "x" << p.k << " variant " << variant_name(v) << "\n";
  }
  return nullptr;
}

void prepare(const Context& cx, const Problem& p, const Slots& sl) {
  for (int s = 0; s < sl.count; ++s) {
    char* base = cx.pool + s * sl.stride;
    fill(p.dt, base, static_cast<std::size_t>(p.m * p.k), 1000 + s);
    fill(p.dt, base + sl.off_b, static_cast<std::size_t>(p.k * p.n), 2000 + s);
  }
  PROBE_CUDA(cudaDeviceSynchronize());
}

Heater::Heater(Context& cx) : cx_(cx) {
  const Problem heat{Dt::BF16, Layout::Fwd, 8192, 8192, 8192};
  slots_ = make_slots(cx, heat);
  slots_.count = 1;
  PROBE_CUDA(cudaMalloc(&base_, slots_.stride));
  fill(Dt::BF16, base_, static_cast<std::size_t>(heat.m * heat.k), 77);
  fill(Dt::BF16, base_ + slots_.off_b, static_cast<std::size_t>(heat.k * heat.n), 78);
  plan_ = std::make_unique<LtPlan>(cx.lt, heat, cx.scales, cx.ws_bytes, false, 0);
  if (!plan_->select(base_, base_ + slots_.off_b, base_ + slots_.off_c, cx.ws))
    throw std::runtime_error("no cuBLASLt algorithm for the heater GEMM");
}

Heater::~Heater() { cudaFree(base_); }

void Heater::run() const { plan_->run(base_, base_ + slots_.off_b, base_ + slots_.off_c, cx_.ws, nullptr); }

void Heater::run_for(double seconds) const {
  for (const auto t0 = std::chrono::steady_clock::now();
       std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds;) {
    for (int i = 0; i < 64; ++i) run();
    PROBE_CUDA(cudaDeviceSynchronize());
  }
}

void open_context(Context& cx, const Args& args) {
  cx.device = static_cast<int>(args.num("device", 0));
  PROBE_CUDA(cudaSetDevice(cx.device));
  cx.pool_bytes = static_cast<std::size_t>(args.num("pool-gib", 12.0) * (1ull << 30));
  PROBE_CUDA(cudaMalloc(&cx.pool, cx.pool_bytes));
  PROBE_CUDA(cudaMalloc(&cx.ws, cx.ws_bytes));
  PROBE_CUDA(cudaMalloc(&cx.scales, 128 * sizeof(float)));
  PROBE_CUDA(cudaMalloc(&cx.err, 1024 * sizeof(float)));
  const float sa = 0.5f, sb = 0.25f;
  PROBE_CUDA(cudaMemcpy(cx.scales, &sa, sizeof sa, cudaMemcpyHostToDevice));
  PROBE_CUDA(cudaMemcpy(cx.scales + 64, &sb, sizeof sb, cudaMemcpyHostToDevice));
  cx.block = static_cast<int>(args.num("block-scaling", 0));
  if (cx.block != 0) {
    // One FP32 scale per 128 elements of operands up to 64k x 64k (and then some): 64 Mi floats.
    const std::size_t count = 64ull << 20;
    const std::vector<float> values[2] = {std::vector<float>(count, sa), std::vector<float>(count, sb)};
    for (int i = 0; i < 2; ++i) {
      PROBE_CUDA(cudaMalloc(&cx.block_scales[i], count * sizeof(float)));
      PROBE_CUDA(cudaMemcpy(cx.block_scales[i], values[i].data(), count * sizeof(float), cudaMemcpyHostToDevice));
    }
  }
  PROBE_LT(cublasLtCreate(&cx.lt));
}

void close_context(Context& cx) {
  cublasLtDestroy(cx.lt);
  cudaFree(cx.pool);
  cudaFree(cx.ws);
  cudaFree(cx.scales);
  cudaFree(cx.block_scales[0]);
  cudaFree(cx.block_scales[1]);
  cudaFree(cx.err);
}

std::vector<std::array<long long, 3>> parse_shapes(const std::string& text) {
  std::vector<std::array<long long, 3>> shapes;
  for (const std::string& s : parse_list_names(text)) {
    std::array<long long, 3> v{};
    if (std::sscanf(s.c_str(), "%lld:%lld:%lld", &v[0], &v[1], &v[2]) != 3)
      throw std::runtime_error("bad shape " + s);
    shapes.push_back(v);
  }
  return shapes;
}

}  // namespace probes
