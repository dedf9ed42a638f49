// GEMMs as Transformer Engine's userbuffers TP overlap runs them (issue 5; docs/calibration.md,
// "TP-overlap GEMMs"). TE (transformer_engine/common/comm_gemm_overlap/comm_gemm_overlap.cpp)
// changes a layer's GEMM in two ways that the plain grid (gemm.cu) does not see:
//   - split: ring-exchange and pipelined overlaps run the GEMM as N chunk GEMMs of m/N rows
//     (N = tp for ring exchange, num_splits for the pipeline), issued round-robin on up to three
//     compute streams (TE's default num_max_streams), so chunk GEMMs may run concurrently;
//   - SM margin: with set_sm_margin TE passes sm_count - num_sm to cuBLASLt
//     (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET) and leaves num_sm SMs to its communication kernel.
// For every shape this probe times, in one pass and at the sustained state of the grid (heater
// GEMMs before every sample): the plain GEMM (variant "full"), the GEMM planned for fewer SMs
// ("margin", sm_margin S), the split GEMM ("split", chunks N, all SMs) and the pipelined split
// with a margin ("split" with both), and writes each time with its ratio to "full". No
// communication runs: the ring exchange's copy-engine transfers and the pipeline's
// reduce-scatter kernels are the engine's business (they are timed as collectives there).
// Variants "busy:S" and "busymargin:S" (run 18) time the GEMM while S SMs are held by another
// kernel for its whole duration, as TE's userbuffers kernels hold num_sm SMs: planned for all
// SMs (set_sm_margin false, the bulk overlaps of NeMo's configurations) or for sm_count - S.
// A holding block takes a whole SM (all its shared memory), so no GEMM CTA (which needs most of
// an SM's registers and shared memory) can share it. Each call also runs two one-thread
// kernels (wait until the S blocks run; release them after the GEMM) and a hand-over from a
// side stream; "busy:0" does the same hand-over with one block that holds nothing, and is the
// reference of the busy ratios (busy:S / busy:0).
//
// Usage: probe_gemm_tp_overlap --shapes m:n:k,... --combos bf16:fwd,bf16:dgrad,bf16:wgrad,fp8:tn
//        --variants full,margin:8,split:4,split:4:16,... --out FILE
#include <array>
#include <iostream>

#include "gemm_lt.cuh"

namespace probes {
namespace {

constexpr int kMaxStreams = 3;  // TE's default num_max_streams (NVTE_COMM_OVERLAP_MAX_STREAMS)

struct Variant {
  std::string name;  // "full", "margin", "split" or "busy"
  int chunks = 1;
  int margin = 0;
  int busy = 0;      // SMs held by another kernel during the GEMM ("busy")
};

Variant parse_variant(const std::string& s) {
  Variant v;
  int a = 0, b = 0;
  if (s == "full") {
    v.name = "full";
  } else if (std::sscanf(s.c_str(), "margin:%d", &a) == 1) {
    v.name = "margin";
    v.margin = a;
  } else if (std::sscanf(s.c_str(), "split:%d:%d", &a, &b) == 2) {
    v.name = "split";
    v.chunks = a;
    v.margin = b;
  } else if (std::sscanf(s.c_str(), "split:%d", &a) == 1) {
    v.name = "split";
    v.chunks = a;
  } else if (std::sscanf(s.c_str(), "busymargin:%d", &a) == 1) {
    v.name = "busy";
    v.busy = v.margin = a;
  } else if (std::sscanf(s.c_str(), "busy:%d", &a) == 1) {
    v.name = "busy";
    v.busy = a;
  } else {
    throw std::runtime_error("bad variant " + s +
                             " (full, margin:S, split:N, split:N:S, busy:S, busymargin:S)");
  }
  return v;
}

// The compute streams and per-stream workspaces of the split variants (TE divides its workspace
// among its compute streams the same way).
struct Streams {
  std::array<cudaStream_t, kMaxStreams> s{};
  std::array<cudaEvent_t, kMaxStreams> done{};
  cudaEvent_t fork{};
  std::array<char*, kMaxStreams> ws{};
  std::size_t ws_bytes = 0;
  explicit Streams(std::size_t total_ws) : ws_bytes(total_ws / kMaxStreams / 256 * 256) {
    for (int i = 0; i < kMaxStreams; ++i) {
      PROBE_CUDA(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
      PROBE_CUDA(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming));
      PROBE_CUDA(cudaMalloc(&ws[i], ws_bytes));
    }
    PROBE_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  }
  ~Streams() {
    for (int i = 0; i < kMaxStreams; ++i) {
      cudaStreamDestroy(s[i]);
      cudaEventDestroy(done[i]);
      cudaFree(ws[i]);
    }
    cudaEventDestroy(fork);
  }
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;
};

// Holds an SM until *stop is set: one block with all of the SM's shared memory.
__global__ void hold_sm(int* started, volatile int* stop) {
  extern __shared__ char reserve[];
  if (threadIdx.x == 0) {
    reserve[0] = 0;
    atomicAdd(started, 1);
    while (*stop == 0) __nanosleep(200);
  }
}
// Waits until `count` holding blocks run, then rearms the counter for the next call.
__global__ void wait_held(volatile int* started, int count) {
  while (*started < count) __nanosleep(100);
  *started = 0;
}
__global__ void set_flag(int* flag, int value) { *flag = value; }
__global__ void tick(int* started) { atomicAdd(started, 1); }

// The kernels and flags of the busy variants: holders on a side stream, released on the
// timed stream after the GEMM.
struct Holder {
  int* flags = nullptr;  // [0] started, [1] stop
  cudaStream_t side{};
  cudaEvent_t released{};
  int smem = 0;
  explicit Holder(int device) {
    PROBE_CUDA(cudaMalloc(&flags, 2 * sizeof(int)));
    PROBE_CUDA(cudaMemset(flags, 0, 2 * sizeof(int)));
    PROBE_CUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    PROBE_CUDA(cudaEventCreateWithFlags(&released, cudaEventDisableTiming));
    PROBE_CUDA(cudaEventRecord(released, nullptr));
    PROBE_CUDA(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    PROBE_CUDA(cudaFuncSetAttribute(hold_sm, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  }
  ~Holder() {
    cudaFree(flags);
    cudaStreamDestroy(side);
    cudaEventDestroy(released);
  }
  Holder(const Holder&) = delete;
  Holder& operator=(const Holder&) = delete;
  // Around `gemm` on the legacy stream: `count` SMs held from before it starts to after it ends.
  void around(int count, const std::function<void()>& gemm) {
    // The same hand-over with no SM held (count 0): one block that counts itself and leaves.
    PROBE_CUDA(cudaStreamWaitEvent(side, released, 0));
    set_flag<<<1, 1, 0, side>>>(flags + 1, 0);
    if (count > 0) {
      hold_sm<<<count, 32, smem, side>>>(flags, flags + 1);
    } else {
      tick<<<1, 1, 0, side>>>(flags);
    }
    wait_held<<<1, 1, 0, nullptr>>>(flags, std::max(count, 1));
    gemm();
    set_flag<<<1, 1, 0, nullptr>>>(flags + 1, 1);
    PROBE_CUDA(cudaEventRecord(released, nullptr));
  }
};

int sm_count(int device) {
  int n = 0;
  PROBE_CUDA(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
  return n;
}

// Enqueues one call of the variant: the plain/margin GEMM on the legacy stream, or N chunk GEMMs
// (rows [i m/N, (i+1) m/N) of A and C) round-robin on the compute streams, forked from and
// joined back to the legacy stream.
void launch(const Context& cx, const Problem& p, const Variant& v, const LtPlan& plan,
            Streams& st, Holder& holder, char* base, const Slots& sl) {
  const auto whole = [&] { plan.run(base, base + sl.off_b, base + sl.off_c, cx.ws, nullptr); };
  if (v.name == "busy") {
    holder.around(v.busy, whole);
    return;
  }
  if (v.chunks == 1) {
    whole();
    return;
  }
  const long long rows = p.m / v.chunks;
  const std::size_t a_step = static_cast<std::size_t>(rows * p.k) * elem(p.dt);
  const std::size_t c_step = static_cast<std::size_t>(rows * p.n) * (plan.out_f32() ? 4 : 2);
  const int used = std::min(v.chunks, kMaxStreams);
  PROBE_CUDA(cudaEventRecord(st.fork, nullptr));
  for (int i = 0; i < used; ++i) PROBE_CUDA(cudaStreamWaitEvent(st.s[i], st.fork, 0));
  for (int c = 0; c < v.chunks; ++c) {
    const int i = c % kMaxStreams;
    plan.run(base + c * a_step, base + sl.off_b, base + sl.off_c + c * c_step, st.ws[i], st.s[i]);
  }
  for (int i = 0; i < used; ++i) {
    PROBE_CUDA(cudaEventRecord(st.done[i], st.s[i]));
    PROBE_CUDA(cudaStreamWaitEvent(nullptr, st.done[i], 0));
  }
}

// The problem one call of the variant plans: the chunk for split variants.
Problem planned(const Problem& p, const Variant& v) {
  Problem c = p;
  c.m = p.m / v.chunks;
  return c;
}

void run_shape(Context& cx, const Problem& p, const std::vector<Variant>& variants, Streams& st,
               Holder& holder, const std::function<void()>& heater, double budget, int sms,
               CsvWriter& csv) {
  const Slots sl = make_slots(cx, p);
  prepare(cx, p, sl);
  double full_s = 0.0;
  for (const Variant& v : variants) {
    if (p.layout == Layout::Wgrad && v.chunks > 1) continue;  // TE never splits a wgrad GEMM
    if (p.m % v.chunks != 0) continue;
    const Problem cp = planned(p, v);
    const int target = v.margin > 0 ? sms - v.margin : 0;
    Context pcx = cx;
    pcx.ws_bytes = v.chunks > 1 ? st.ws_bytes : cx.ws_bytes;
    const std::unique_ptr<LtPlan> plan = make_plan(pcx, cp, sl, target);
    if (!plan) continue;
    // The spot check reads the first chunk through the full problem's slot layout: for the fwd
    // and dgrad layouts the index of A and C does not depend on m.
    const float err = spot_check(cx, cp, *plan, sl);
    const Timing t = time_calls(nullptr, [&](int i) {
      launch(cx, p, v, *plan, st, holder, cx.pool + (i % sl.count) * sl.stride, sl);
    }, 15, 5, 5e-4, budget, &heater);
    if (v.name == "full") full_s = t.median_s;
    const Telemetry tel = read_telemetry(cx.device);
    csv.row({name(p.dt), std::string(name(p.dt, p.layout)) + (cx.fast_accum ? "_fastacc" : ""),
             std::to_string(p.m), std::to_string(p.n), std::to_string(p.k), v.name,
             std::to_string(v.chunks), std::to_string(v.margin), std::to_string(v.busy), std::to_string(std::min(v.chunks, kMaxStreams)),
             fmt(t.median_s), fmt(full_s > 0 ? t.median_s / full_s : 0.0, 5),
             fmt(flops(p) / t.median_s * 1e-12, 5), std::to_string(t.samples),
             std::to_string(t.calls_per_sample), fmt(err, 3), std::to_string(tel.sm_mhz),
             fmt(tel.power_w, 4), std::to_string(tel.temp_c), variant_name(plan->variant())});
    if (err > 0.02f)
      std::cerr << "SPOT CHECK FAILED " << p.m << "x" << p.n << "x" << p.k << " " << v.name << "\n";
  }
}

int run(int argc, char** argv) {
  const Args args(argc, argv);
  Context cx;
  open_context(cx, args);
  cx.fast_accum = args.num("fast-accum", 0) != 0;
  const int sms = sm_count(cx.device);
  std::vector<Variant> variants;
  for (const std::string& s : parse_list_names(args.get("variants", "full,margin:16,split:4")))
    variants.push_back(parse_variant(s));
  if (variants.empty() || variants.front().name != "full")
    throw std::runtime_error("--variants must start with full (the ratios' reference)");
  const auto shapes = parse_shapes(args.get("shapes", "8192:8192:8192"));
  const std::string combos = args.get("combos", "bf16:fwd,bf16:dgrad,bf16:wgrad,fp8:tn");
  const double budget = args.num("point-budget", 0.15);
  {
    CsvWriter csv(args.get("out", "gemm_tp_overlap.csv"), "gemm_tp_overlap (cuBLASLt)", {cx.device},
                  argc, argv,
                  {{"cublasLt", std::to_string(cublasLtGetVersion())},
                   {"sm_count", std::to_string(sms)},
                   {"compute_streams", std::to_string(kMaxStreams)},
                   {"timing", "CUDA events; median of samples of back-to-back calls, each sample queued behind BF16 8192^3 heater GEMMs; split variants fork to and join from the compute streams inside each call"},
                   {"data", "uniform random in [-1,1); FP8 scales A=0.25 B=0.5"}});
    csv.header({"dtype", "layout", "m", "n", "k", "variant", "chunks", "sm_margin", "sm_busy", "streams",
                "time_s", "ratio", "tflops", "samples", "calls", "max_rel_err", "sm_mhz",
                "power_w", "temp_c", "plan_variant"});
    Streams st(cx.ws_bytes);
    Holder holder(cx.device);
    const Heater heat(cx);
    const std::function<void()> heater = [&] { heat.run(); };
    // --heat-s S: S seconds of heater GEMMs first, so the first shapes are measured at the
    // sustained state too (run 45, calib/data/h200/README.md).
    heat.run_for(args.num("heat-s", 0.0));
    for (const char* combo : {"bf16:fwd", "bf16:dgrad", "bf16:wgrad", "fp8:tn"}) {
      if (combos.find(combo) == std::string::npos) continue;
      const std::string c = combo;
      const Dt dt = c.rfind("fp8", 0) == 0 ? Dt::FP8 : Dt::BF16;
      const Layout l = c == "bf16:dgrad" ? Layout::Dgrad : (c == "bf16:wgrad" ? Layout::Wgrad : Layout::Fwd);
      for (const auto& [m, n, k] : shapes) run_shape(cx, {dt, l, m, n, k}, variants, st, holder, heater, budget, sms, csv);
      std::cerr << "gemm_tp_overlap " << combo << " done\n";
    }
  }
  close_context(cx);
  return 0;
}

}  // namespace
}  // namespace probes

int main(int argc, char** argv) { return probes::probe_main("gemm_tp_overlap", probes::run, argc, argv); }
