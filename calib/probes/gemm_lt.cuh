// cuBLASLt GEMM plans shared by the GEMM probes (gemm.cu, gemm_tp_overlap.cu): problem shapes
// in the layouts of a linear layer's three GEMMs, one planned matmul (descriptors, heuristic,
// the first algorithm that runs), operand slots that defeat L2 reuse, random fills and the
// spot check against a double-precision recomputation.
//
// Shapes follow the trace: C[m,n] = A[m,k] * B[k,n], row-major, with the operands stored as a
// training framework stores them (Y = X W^T for a weight W[out,in]):
//   fwd   (Y = X W^T):    A = X[m,k],   B = W[n,k]   -> cuBLASLt "TN"
//   dgrad (dX = dY W):    A = dY[m,k],  B = W[k,n]   -> "NN"
//   wgrad (dW = dY^T X):  A = dY[k,m],  B = X[k,n]   -> "NT"
#pragma once

#include <cublasLt.h>
#include <cuda_fp8.h>

#include <array>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "probe_common.cuh"

namespace probes {

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

inline const char* name(Dt d) { return d == Dt::BF16 ? "bf16" : "fp8"; }
inline const char* name(Dt d, Layout l) {
  if (d == Dt::FP8) return "tn";
  return l == Layout::Fwd ? "fwd" : (l == Layout::Dgrad ? "dgrad" : "wgrad");
}
inline std::size_t elem(Dt d) { return d == Dt::BF16 ? 2 : 1; }
inline std::size_t align_up(std::size_t x) { return (x + 255) / 256 * 256; }

// Element (i,p) of A and (p,j) of B in the stored layouts described at the top of the file.
__host__ __device__ inline long long a_index(Layout l, long long i, long long p, long long m,
                                             long long k) {
  return l == Layout::Wgrad ? p * m + i : i * k + p;
}
__host__ __device__ inline long long b_index(Layout l, long long p, long long j, long long n,
                                             long long k) {
  return l == Layout::Fwd ? j * k + p : p * n + j;
}

// One planned cuBLASLt matmul: descriptors and up to 8 algorithms from the heuristic, of which
// select() keeps the first that runs. Variants (FP8 only, tried in order until one runs):
// 0 = BF16 output with the FAST_ACCUM attribute set, 1 = BF16 output without that attribute,
// 2 = FP32 output, 3 = BF16 output without scale pointers (scales 1; recorded in the table's
// `variant` column). Variants 4 and 5 (BF16 and FP8, only when asked: Context::accumulate)
// accumulate into the output (beta = 1), FP32 (4) or BF16 (5): the weight-gradient GEMM as
// Megatron's gradient_accumulation_fusion and Transformer Engine's fuse_wgrad_accumulation run
// it, adding into the main_grad buffer (FP32, or BF16 with grad_reduce_in_fp32 off).
// `block` (FP8 only): block scaling as Transformer Engine's Float8BlockScaling recipe runs it
// through cuBLASLt on Hopper (DeepSeek-V3's fine-grained FP8): 1 = weights (cuBLASLt's A, our B)
// in 128x128 blocks and activations (cuBLASLt's B, our A) in 1x128 blocks along k (forward and
// data gradient), 2 = both in 1x128 blocks (weight gradient); `block_scales` two float buffers
// (A, B) holding at least one scale per 128 elements of the operand, filled with the per-tensor
// values so that the result and its spot check are the per-tensor ones. 0: per-tensor scales.
// `sm_count` > 0 sets CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET: the heuristic
// and the kernel plan for that many SMs, as Transformer Engine's userbuffers overlap does when
// it leaves SMs to its communication kernels (`set_sm_margin`).
class LtPlan {
 public:
  LtPlan(cublasLtHandle_t h, const Problem& p, float* scales, std::size_t ws, bool fast_accum,
         int variant, int sm_count = 0, int block = 0, float* const* block_scales = nullptr)
      : h_(h), p_(p), ws_(ws), variant_(variant) {
    const cudaDataType_t in = p.dt == Dt::BF16 ? CUDA_R_16BF : CUDA_R_8F_E4M3;
    const cudaDataType_t out = variant == 2 || variant == 4 ? CUDA_R_32F : CUDA_R_16BF;
    PROBE_LT(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = p.layout == Layout::Fwd ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = p.layout == Layout::Wgrad ? CUBLAS_OP_T : CUBLAS_OP_N;
    set(CUBLASLT_MATMUL_DESC_TRANSA, ta);
    set(CUBLASLT_MATMUL_DESC_TRANSB, tb);
    if (sm_count > 0) set(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, static_cast<std::int32_t>(sm_count));
    if (p.dt == Dt::FP8 && variant != 3) {
      // Each scale on its own 256-byte boundary: cuBLASLt refused every algorithm when the
      // second scale sat 4 bytes after the first (first full run, 2026-11-29).
      void* sa = scales;       // cuBLASLt's A is our B
      void* sb = scales + 64;  // cuBLASLt's B is our A
      if (block > 0) {
        sa = block_scales[0];
        sb = block_scales[1];
        const std::int32_t mode_a = block == 1 ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
                                               : CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
        const std::int32_t mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
        set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode_a);
        set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode_b);
      }
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
  bool out_f32() const { return variant_ == 2 || variant_ == 4; }
  bool accumulates() const { return variant_ == 4 || variant_ == 5; }
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
    const float alpha = 1.0f, beta = variant_ == 4 || variant_ == 5 ? 1.0f : 0.0f;
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
  int block = 0;                     // --block-scaling 1 / 2: FP8 block scaling (LtPlan)
  float* block_scales[2] = {nullptr, nullptr};  // cuBLASLt's A (0.5) and B (0.25) block scales
  float* err = nullptr;
  bool fast_accum = false;
  int accumulate = 0;  // --accumulate 1 / 2: plan variant 4 / 5 only (FP32 / BF16 output, beta = 1)
  int device = 0;
  int first_variant = 0;  // FP8: the plan variant that ran last time is tried first
};

struct Slots {
  std::size_t stride = 0, off_b = 0, off_c = 0;
  int count = 1;
};

/// Selects the device of --device (default 0), allocates the operand pool (--pool-gib, default
/// 12), the workspace, the FP8 per-tensor scales (B 0.5 at [0], A 0.25 at [64]), with
/// --block-scaling 1|2 the block-scale buffers (64 Mi floats each, the same values), and the
/// spot-check buffer, and creates the cuBLASLt handle. Throws on a CUDA or cuBLASLt error.
void open_context(Context& cx, const Args& args);
/// Releases what open_context acquired.
void close_context(Context& cx);
/// Parses a shape list "m:n:k,m:n:k,...". Throws std::runtime_error naming a malformed shape.
std::vector<std::array<long long, 3>> parse_shapes(const std::string& text);

/// Places A, B, C back to back and repeats that block so that a run cycles through at least
/// 512 MiB (8x the 60 MB L2): consecutive calls never find their operands in L2.
Slots make_slots(const Context& cx, const Problem& p);
/// Fills n elements of type `d` at p with rand_val(seed, i) (FP8: converted to e4m3).
void fill(Dt d, void* p, std::size_t n, std::uint64_t seed);
/// Runs `plan` once on slot 0 and returns the largest relative error of 64 sampled outputs
/// against a double-precision recomputation.
float spot_check(const Context& cx, const Problem& p, const LtPlan& plan, const Slots& sl);
/// Name of an LtPlan variant for the tables' `variant` column.
const char* variant_name(int v);
/// The first plan variant (see LtPlan) with an algorithm that runs; nullptr if none does.
/// `sm_count` > 0: planned for that many SMs.
std::unique_ptr<LtPlan> make_plan(Context& cx, const Problem& p, const Slots& sl, int sm_count = 0);
/// Fills A and B of every slot with random data.
void prepare(const Context& cx, const Problem& p, const Slots& sl);
/// The heater: a BF16 8192^3 GEMM (~1.6 ms) on its own random operands, queued before every
/// timed sample (time_calls) so that the timed calls start at the sustained clocks and power
/// of a GPU that runs GEMMs back to back, as in training, and after the host has enqueued them.
class Heater {
 public:
  /// Allocates and fills the operands and plans the GEMM; throws if no algorithm runs.
  explicit Heater(Context& cx);
  ~Heater();
  Heater(const Heater&) = delete;
  Heater& operator=(const Heater&) = delete;
  /// Enqueues one heater GEMM on the legacy default stream.
  void run() const;
  /// Runs heater GEMMs back to back for `seconds` (wall clock) and waits for them: brings a GPU
  /// that idled to the sustained state before a probe's first timed shape (--heat-s).
  void run_for(double seconds) const;

 private:
  Context& cx_;
  Slots slots_;
  char* base_ = nullptr;
  std::unique_ptr<LtPlan> plan_;
};

/// 2 m n k.
inline double flops(const Problem& p) { return 2.0 * p.m * p.n * p.k; }

}  // namespace probes
