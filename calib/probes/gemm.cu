// GEMM probe: cuBLASLt BF16 and FP8 (e4m3, per-tensor scales, BF16 output) over a grid of
// (m, n, k), in the layouts of the forward GEMM and of both backward GEMMs of a linear layer.
//
// Shapes follow the trace: C[m,n] = A[m,k] * B[k,n], row-major, with the operands stored as a
// training framework stores them (Y = X W^T for a weight W[out,in]):
//   fwd   (Y = X W^T):    A = X[m,k],   B = W[n,k]   -> cuBLASLt "TN"
//   dgrad (dX = dY W):    A = dY[m,k],  B = W[k,n]   -> "NN"
//   wgrad (dW = dY^T X):  A = dY[k,m],  B = X[k,n]   -> "NT"
// Hopper FP8 GEMMs in cuBLASLt need the TN layout, so FP8 is measured as "tn" only (Transformer
// Engine transposes FP8 operands for dgrad and wgrad before the GEMM).
//
// Modes: --mode grid (table), --mode burst (short runs after idle), --mode sustained (one
// shape run continuously, telemetry per window). See docs/calibration.md.
#include <cublasLt.h>
#include <cuda_fp8.h>

#include <array>
#include <chrono>
#include <memory>
#include <cmath>
#include <iostream>
#include <thread>

#include "probe_common.cuh"

namespace probes {
namespace {

#define PROBE_LT(call)                                                                    \
  do {                                                                                    \
    cublasStatus_t st_ = (call);                                                          \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                     \
      throw std::runtime_error(std::string(#call) + " failed with status " +              \
                               std::to_string(static_cast<int>(st_)));                    \
  } while (0)

enum class Dt { BF16, FP8 };
enum class Layout { Fwd, Dgrad, Wgrad };

struct Problem {
  Dt dt = Dt::BF16;
  Layout layout = Layout::Fwd;
  long long m = 0, n = 0, k = 0;
};

const char* name(Dt d) { return d == Dt::BF16 ? "bf16" : "fp8"; }
const char* name(Dt d, Layout l) {
  if (d == Dt::FP8) return "tn";
  return l == Layout::Fwd ? "fwd" : (l == Layout::Dgrad ? "dgrad" : "wgrad");
}
std::size_t elem(Dt d) { return d == Dt::BF16 ? 2 : 1; }
std::size_t align_up(std::size_t x) { return (x + 255) / 256 * 256; }

// Element (i,p) of A and (p,j) of B in the stored layouts described at the top of the file.
__host__ __device__ inline long long a_index(Layout l, long long i, long long p, long long m,
                                             long long k) {
  return l == Layout::Wgrad ? p * m + i : i * k + p;
}
__host__ __device__ inline long long b_index(Layout l, long long p, long long j, long long n,
                                             long long k) {
  return l == Layout::Fwd ? j * k + p : p * n + j;
}

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

void fill(Dt d, void* p, std::size_t n, std::uint64_t seed) {
  if (d == Dt::BF16) {
    fill_bf16(static_cast<__nv_bfloat16*>(p), n, seed);
  } else {
    fill_fp8_kernel<<<2112, 256>>>(static_cast<__nv_fp8_e4m3*>(p), n, seed);
    PROBE_LAUNCH();
  }
}

// One planned cuBLASLt matmul: descriptors and up to 8 algorithms from the heuristic, of which
// select() keeps the first that runs. Variants (FP8 only, tried in order until one runs):
// 0 = BF16 output with the FAST_ACCUM attribute set, 1 = BF16 output without that attribute,
// 2 = FP32 output, 3 = BF16 output without scale pointers (scales 1; recorded in the table's
// `variant` column).
class LtPlan {
 public:
  LtPlan(cublasLtHandle_t h, const Problem& p, float* scales, std::size_t ws, bool fast_accum,
         int variant)
      : h_(h), p_(p), ws_(ws), variant_(variant) {
    const cudaDataType_t in = p.dt == Dt::BF16 ? CUDA_R_16BF : CUDA_R_8F_E4M3;
    const cudaDataType_t out = variant == 2 ? CUDA_R_32F : CUDA_R_16BF;
    PROBE_LT(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = p.layout == Layout::Fwd ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = p.layout == Layout::Wgrad ? CUBLAS_OP_T : CUBLAS_OP_N;
    set(CUBLASLT_MATMUL_DESC_TRANSA, ta);
    set(CUBLASLT_MATMUL_DESC_TRANSB, tb);
    if (p.dt == Dt::FP8 && variant != 3) {
      // Each scale on its own 256-byte boundary: cuBLASLt refused every algorithm when the
      // second scale sat 4 bytes after the first (first full run, 2026-11-29).
      void* sa = scales;       // cuBLASLt's A is our B
      void* sb = scales + 64;  // cuBLASLt's B is our A
      set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, sa);
      set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, sb);
      const std::int8_t fa = fast_accum ? 1 : 0;
      if (variant != 1 || fast_accum) set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, fa);
    }
    const auto n = static_cast<std::uint64_t>(p.n), m = static_cast<std::uint64_t>(p.m),
               k = static_cast<std::uint64_t>(p.k);
    if (ta == CUBLAS_OP_T)
      PROBE_LT(cublasLtMatrixLayoutCreate(&a_, in, k, n, static_cast<std::int64_t>(k)));
    else
      PROBE_LT(cublasLtMatrixLayoutCreate(&a_, in, n, k, static_cast<std::int64_t>(n)));
    if (tb == CUBLAS_OP_N)
      PROBE_LT(cublasLtMatrixLayoutCreate(&b_, in, k, m, static_cast<std::int64_t>(k)));
    else
      PROBE_LT(cublasLtMatrixLayoutCreate(&b_, in, m, k, static_cast<std::int64_t>(m)));
    PROBE_LT(cublasLtMatrixLayoutCreate(&c_, out, n, m, static_cast<std::int64_t>(n)));
    cublasLtMatmulPreference_t pref;
    PROBE_LT(cublasLtMatmulPreferenceCreate(&pref));
    PROBE_LT(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t res[8] = {};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h_, op_, a_, b_, c_, c_, pref, 8, res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st == CUBLAS_STATUS_SUCCESS)
      for (int i = 0; i < found; ++i)
        if (res[i].state == CUBLAS_STATUS_SUCCESS) algos_.push_back(res[i].algo);
  }
  ~LtPlan() {
    cublasLtMatrixLayoutDestroy(a_);
    cublasLtMatrixLayoutDestroy(b_);
    cublasLtMatrixLayoutDestroy(c_);
    cublasLtMatmulDescDestroy(op_);
  }
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  bool out_f32() const { return variant_ == 2; }
  bool scaled() const { return p_.dt == Dt::FP8 && variant_ != 3; }
  int variant() const { return variant_; }

  // Keeps the first algorithm that runs on these operands; false if none does.
  bool select(const void* a, const void* b, void* c, void* ws) {
    for (std::size_t i = 0; i < algos_.size(); ++i) {
      chosen_ = static_cast<int>(i);
      if (launch(a, b, c, ws, nullptr) == CUBLAS_STATUS_SUCCESS &&
          cudaDeviceSynchronize() == cudaSuccess)
        return true;
      std::cerr << "cuBLASLt algorithm " << i << " refused (variant " << variant_ << ")\n";
    }
    chosen_ = -1;
    return false;
  }

  // Our A (m x k operand) and B (k x n operand) in their stored layouts; C is [m,n] row-major.
  void run(const void* a, const void* b, void* c, void* ws, cudaStream_t s) const {
    if (chosen_ < 0) throw std::runtime_error("LtPlan::run before a successful select()");
    PROBE_LT(launch(a, b, c, ws, s));
  }

 private:
  cublasStatus_t launch(const void* a, const void* b, void* c, void* ws, cudaStream_t s) const {
    const float alpha = 1.0f, beta = 0.0f;
    return cublasLtMatmul(h_, op_, &alpha, b, a_, a, b_, &beta, c, c_, c, c_,
                          &algos_[static_cast<std::size_t>(chosen_)], ws, ws_, s);
  }
  template <typename V>
  void set(cublasLtMatmulDescAttributes_t attr, const V& v) {
    PROBE_LT(cublasLtMatmulDescSetAttribute(op_, attr, &v, sizeof v));
  }
  cublasLtHandle_t h_;
  Problem p_;
  cublasLtMatmulDesc_t op_{};
  cublasLtMatrixLayout_t a_{}, b_{}, c_{};
  std::vector<cublasLtMatmulAlgo_t> algos_;
  int chosen_ = -1;
  std::size_t ws_ = 0;
  int variant_ = 0;
};

struct Context {
  cublasLtHandle_t lt{};
  char* pool = nullptr;
  std::size_t pool_bytes = 0;
  void* ws = nullptr;
  std::size_t ws_bytes = 32u << 20;  // 32 MiB, the workspace NVIDIA recommends for Hopper
  float* scales = nullptr;           // FP8 per-tensor scales: [0] of B, [64] of A
  float* err = nullptr;
  bool fast_accum = false;
  int device = 0;
  int first_variant = 0;  // FP8: the plan variant that ran last time is tried first
};

struct Slots {
  std::size_t stride = 0, off_b = 0, off_c = 0;
  int count = 1;
};

// Places A, B, C back to back and repeats that block so that a run cycles through at least
// 512 MiB (8x the 60 MB L2): consecutive calls never find their operands in L2.
Slots make_slots(const Context& cx, const Problem& p) {
  Slots s;
  s.off_b = align_up(static_cast<std::size_t>(p.m * p.k) * elem(p.dt));
  s.off_c = s.off_b + align_up(static_cast<std::size_t>(p.k * p.n) * elem(p.dt));
  // FP8 reserves 4 bytes per output element in case only the FP32-output variant runs.
  s.stride = s.off_c + align_up(static_cast<std::size_t>(p.m * p.n) * (p.dt == Dt::FP8 ? 4 : 2));
  if (s.stride > cx.pool_bytes) throw std::runtime_error("problem larger than the pool");
  const std::size_t want = ((512u << 20) + s.stride - 1) / s.stride;
  s.count = static_cast<int>(std::clamp<std::size_t>(std::min(want, cx.pool_bytes / s.stride), 1, 16));
  return s;
}

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

float spot_check(const Context& cx, const Problem& p, const LtPlan& plan, const Slots& sl) {
  constexpr int kCount = 64;
  char* base = cx.pool;
  PROBE_CUDA(cudaMemset(base + sl.off_c, 0xFF, static_cast<std::size_t>(p.m * p.n) * (plan.out_f32() ? 4 : 2)));
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
  const char* names[] = {"std", "no_fast_accum_attr", "fp32_out", "unscaled"};
  return names[v];
}

// The first plan variant (see LtPlan) with an algorithm that runs; nullptr if none does.
std::unique_ptr<LtPlan> make_plan(Context& cx, const Problem& p, const Slots& sl) {
  char* base = cx.pool;
  const int variants = p.dt == Dt::FP8 ? 4 : 1;
  for (int i = 0; i < variants; ++i) {
    const int v = (cx.first_variant + i) % variants;
    auto plan = std::make_unique<LtPlan>(cx.lt, p, cx.scales, cx.ws_bytes, cx.fast_accum, v);
    if (plan->select(base, base + sl.off_b, base + sl.off_c, cx.ws)) {
      if (p.dt == Dt::FP8) cx.first_variant = v;
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

double flops(const Problem& p) { return 2.0 * p.m * p.n * p.k; }

void run_grid(Context& cx, const Args& args, CsvWriter& csv) {
  const auto ms = parse_list(args.get("m", "1024,2048,4096,8192,16384,32768,65536"));
  const auto nks = parse_list(args.get("nk", "512,1024,2048,4096,8192,16384,32768"));
  // Either the cartesian grid m x nk x nk or an explicit list "--shapes m:n:k,m:n:k,...".
  std::vector<std::array<long long, 3>> shapes;
  if (args.has("shapes")) {
    for (const std::string& s : parse_list_names(args.get("shapes", ""))) {
      std::array<long long, 3> v{};
      if (std::sscanf(s.c_str(), "%lld:%lld:%lld", &v[0], &v[1], &v[2]) != 3)
        throw std::runtime_error("bad shape " + s);
      shapes.push_back(v);
    }
  } else {
    for (long long m : ms)
      for (long long n : nks)
        for (long long k : nks) shapes.push_back({m, n, k});
  }
  const std::string combos = args.get("combos", "bf16:fwd,bf16:dgrad,bf16:wgrad,fp8:tn");
  const double budget = args.num("point-budget", 0.3);
  // The heater: a BF16 8192^3 GEMM (~1.6 ms) on its own random operands, queued before every
  // sample so that the timed calls start at the sustained clocks and power of a GPU that runs
  // GEMMs back to back, as in training, and after the host has enqueued them.
  const Problem heat{Dt::BF16, Layout::Fwd, 8192, 8192, 8192};
  Slots hs = make_slots(cx, heat);
  hs.count = 1;
  char* hbase = nullptr;
  PROBE_CUDA(cudaMalloc(&hbase, hs.stride));
  fill(Dt::BF16, hbase, static_cast<std::size_t>(heat.m * heat.k), 77);
  fill(Dt::BF16, hbase + hs.off_b, static_cast<std::size_t>(heat.k * heat.n), 78);
  auto hplan = std::make_unique<LtPlan>(cx.lt, heat, cx.scales, cx.ws_bytes, false, 0);
  if (!hplan->select(hbase, hbase + hs.off_b, hbase + hs.off_c, cx.ws))
    throw std::runtime_error("no cuBLASLt algorithm for the heater GEMM");
  const std::function<void()> heater = [&] {
    hplan->run(hbase, hbase + hs.off_b, hbase + hs.off_c, cx.ws, nullptr);
  };
  csv.header({"dtype", "layout", "m", "n", "k", "flops", "time_s", "tflops", "min_s", "max_s",
              "samples", "calls", "slots", "max_rel_err", "sm_mhz", "power_w", "temp_c",
              "variant"});
  for (const char* combo : {"bf16:fwd", "bf16:dgrad", "bf16:wgrad", "fp8:tn"}) {
    if (combos.find(combo) == std::string::npos) continue;
    const std::string c = combo;
    const Dt dt = c.rfind("fp8", 0) == 0 ? Dt::FP8 : Dt::BF16;
    const Layout l = c == "bf16:dgrad" ? Layout::Dgrad : (c == "bf16:wgrad" ? Layout::Wgrad : Layout::Fwd);
    for (const auto& [m, n, k] : shapes) {
          const Problem p{dt, l, m, n, k};
          const Slots sl = make_slots(cx, p);
          prepare(cx, p, sl);
          const std::unique_ptr<LtPlan> pp = make_plan(cx, p, sl);
          if (!pp) continue;
          const LtPlan& plan = *pp;
          const float err = spot_check(cx, p, plan, sl);
          const Timing t = time_calls(nullptr, [&](int i) {
            char* base = cx.pool + (i % sl.count) * sl.stride;
            plan.run(base, base + sl.off_b, base + sl.off_c, cx.ws, nullptr);
          }, 21, 5, 5e-4, budget, &heater);
          const Telemetry tel = read_telemetry(cx.device);
          const std::string layout = std::string(name(dt, l)) + (cx.fast_accum ? "_fastacc" : "");
          csv.row({name(dt), layout, std::to_string(m), std::to_string(n), std::to_string(k),
                   fmt(flops(p)), fmt(t.median_s), fmt(flops(p) / t.median_s * 1e-12, 5),
                   fmt(t.min_s), fmt(t.max_s), std::to_string(t.samples),
                   std::to_string(t.calls_per_sample), std::to_string(sl.count), fmt(err, 3),
                   std::to_string(tel.sm_mhz), fmt(tel.power_w, 4), std::to_string(tel.temp_c),
                   variant_name(plan.variant())});
          if (err > 0.02f) std::cerr << "SPOT CHECK FAILED " << combo << " " << m << "x" << n << "x" << k << " err " << err << "\n";
        }
    std::cerr << "gemm grid " << combo << " done\n";
  }
  cudaFree(hbase);
}

// Burst: after `idle` seconds without work, 30 individually timed calls; sustained: the same
// call back to back for `seconds`, one row per ~0.5 s window with telemetry.
void run_power(Context& cx, const Args& args, CsvWriter& csv) {
  const auto sizes = parse_list(args.get("cubes", "4096,8192,16384"));
  const double idle = args.num("idle", 5.0), seconds = args.num("seconds", 15.0);
  const std::string mode = args.get("mode", "burst");
  csv.header({"mode", "dtype", "layout", "fast_accum", "m", "n", "k", "t_s", "time_s", "tflops",
              "sm_mhz", "mem_mhz", "power_w", "temp_c", "clock_event_reasons", "max_rel_err", "variant"});
  const std::string dtypes = args.get("dtypes", "bf16,fp8");
  for (Dt dt : {Dt::BF16, Dt::FP8})
    for (long long s : sizes) {
      if (dtypes.find(name(dt)) == std::string::npos) continue;
      for (int fa = 0; fa < (dt == Dt::FP8 && mode == "burst" ? 2 : 1); ++fa) {
        cx.fast_accum = fa == 1;
        const Problem p{dt, Layout::Fwd, s, s, s};
        const Slots sl = make_slots(cx, p);
        prepare(cx, p, sl);
        const std::unique_ptr<LtPlan> pp = make_plan(cx, p, sl);
        if (!pp) continue;
        const LtPlan& plan = *pp;
        const float err = spot_check(cx, p, plan, sl);
        std::this_thread::sleep_for(std::chrono::duration<double>(idle));
        cudaEvent_t a, b;
        PROBE_CUDA(cudaEventCreate(&a));
        PROBE_CUDA(cudaEventCreate(&b));
        const auto t0 = std::chrono::steady_clock::now();
        auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
        int call = 0;
        const int per_window = mode == "burst" ? 1 : std::max(1, static_cast<int>(0.5 / (flops(p) / 700e12 / (dt == Dt::FP8 ? 1.8 : 1.0))));
        for (int w = 0; mode == "burst" ? w < 30 : elapsed() < seconds; ++w) {
          PROBE_CUDA(cudaEventRecord(a));
          for (int i = 0; i < per_window; ++i, ++call) {
            char* base = cx.pool + (call % sl.count) * sl.stride;
            plan.run(base, base + sl.off_b, base + sl.off_c, cx.ws, nullptr);
          }
          PROBE_CUDA(cudaEventRecord(b));
          PROBE_CUDA(cudaEventSynchronize(b));
          float msf = 0.0f;
          PROBE_CUDA(cudaEventElapsedTime(&msf, a, b));
          const double per = msf * 1e-3 / per_window;
          const Telemetry tel = read_telemetry(cx.device);
          csv.row({mode, name(dt), name(dt, Layout::Fwd), std::to_string(fa), std::to_string(s),
                   std::to_string(s), std::to_string(s), fmt(elapsed(), 4), fmt(per),
                   fmt(flops(p) / per * 1e-12, 5), std::to_string(tel.sm_mhz),
                   std::to_string(tel.mem_mhz), fmt(tel.power_w, 4), std::to_string(tel.temp_c),
                   std::to_string(tel.throttle), fmt(err, 3), variant_name(plan.variant())});
        }
        cudaEventDestroy(a);
        cudaEventDestroy(b);
      }
    }
  cx.fast_accum = false;
}

int run(int argc, char** argv) {
  const Args args(argc, argv);
  Context cx;
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
  PROBE_LT(cublasLtCreate(&cx.lt));
  const std::string mode = args.get("mode", "grid");
  {
    CsvWriter csv(args.get("out", "gemm.csv"), "gemm (cuBLASLt)", {cx.device}, argc, argv,
                  {{"cublasLt", std::to_string(cublasLtGetVersion())},
                   {"workspace_bytes", std::to_string(cx.ws_bytes)},
                   {"timing", "CUDA events; median of samples of back-to-back calls; grid mode: each sample queued behind BF16 8192^3 heater GEMMs (host launch excluded, sustained power state); operands rotate over >=512 MiB"},
                   {"data", "uniform random in [-1,1); FP8 scales A=0.25 B=0.5; FP8 without fast accumulation unless fast_accum=1"},
                   {"mode", mode}});
    if (mode == "grid") {
      // --fast-accum 1: FP8 with CUBLASLT_MATMUL_DESC_FAST_ACCUM, as Transformer Engine runs
      // its forward GEMMs (layout written as "tn_fastacc").
      cx.fast_accum = args.num("fast-accum", 0) != 0;
      run_grid(cx, args, csv);
    }
    else
      run_power(cx, args, csv);
  }
  cublasLtDestroy(cx.lt);
  cudaFree(cx.pool);
  cudaFree(cx.ws);
  cudaFree(cx.scales);
  cudaFree(cx.err);
  return 0;
}

}  // namespace
}  // namespace probes

int main(int argc, char** argv) {
  try {
    return probes::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "gemm probe: " << e.what() << "\n";
    return 1;
  }
}
