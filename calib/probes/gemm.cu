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
#include <array>
#include <chrono>
#include <memory>
#include <cmath>
#include <iostream>
#include <thread>

#include "gemm_lt.cuh"

namespace probes {
namespace {

void run_grid(Context& cx, const Args& args, CsvWriter& csv) {
  const auto ms = parse_list(args.get("m", "1024,2048,4096,8192,16384,32768,65536"));
  const auto nks = parse_list(args.get("nk", "512,1024,2048,4096,8192,16384,32768"));
  // Either the cartesian grid m x nk x nk or an explicit list "--shapes m:n:k,m:n:k,...".
  std::vector<std::array<long long, 3>> shapes;
  if (args.has("shapes")) {
    shapes = parse_shapes(args.get("shapes", ""));
  } else {
    for (long long m : ms)
      for (long long n : nks)
        for (long long k : nks) shapes.push_back({m, n, k});
  }
  const std::string combos = args.get("combos", "bf16:fwd,bf16:dgrad,bf16:wgrad,fp8:tn");
  const double budget = args.num("point-budget", 0.3);
  const Heater heat(cx);
  const std::function<void()> heater = [&] { heat.run(); };
  // --heat-s S: S seconds of heater GEMMs before the first shape, so that the first rows are
  // measured at the sustained state too (without it a process's first ~2 s of rows run on a
  // GPU still warming up: run 44's telemetry, calib/data/h200/README.md).
  heat.run_for(args.num("heat-s", 0.0));
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
          std::string layout = std::string(name(dt, l)) + (cx.fast_accum ? "_fastacc" : "");
          if (dt == Dt::FP8 && cx.block != 0) layout += cx.block == 1 ? "_block2d1d" : "_block1d1d";
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
}

// The forward-layout shapes of the burst and sustained modes: "--shapes m:n:k,..." or the
// cubes of "--cubes" (default 4096, 8192, 16384).
std::vector<std::array<long long, 3>> power_shapes(const Args& args) {
  if (args.has("shapes")) return parse_shapes(args.get("shapes", ""));
  std::vector<std::array<long long, 3>> out;
  for (long long s : parse_list(args.get("cubes", "4096,8192,16384"))) out.push_back({s, s, s});
  return out;
}

// The fast-accumulation settings an FP8 shape runs with: burst both; sustained split
// accumulation, or only fast accumulation with --fast-accum 1 (run 49).
std::vector<int> fast_accum_settings(const Args& args, Dt dt, const std::string& mode) {
  if (dt != Dt::FP8) return {0};
  if (mode == "burst") return {0, 1};
  return {args.num("fast-accum", 0) != 0 ? 1 : 0};
}

// Burst: after `idle` seconds without work, 30 individually timed calls; sustained: the same
// call back to back for `seconds`, one row per ~0.5 s window with telemetry.
void run_power(Context& cx, const Args& args, CsvWriter& csv) {
  const auto shapes = power_shapes(args);
  const double idle = args.num("idle", 5.0), seconds = args.num("seconds", 15.0);
  const std::string mode = args.get("mode", "burst");
  csv.header({"mode", "dtype", "layout", "fast_accum", "m", "n", "k", "t_s", "time_s", "tflops",
              "sm_mhz", "mem_mhz", "power_w", "temp_c", "clock_event_reasons", "max_rel_err", "variant"});
  const std::string dtypes = args.get("dtypes", "bf16,fp8");
  for (Dt dt : {Dt::BF16, Dt::FP8})
    for (const auto& [m, n, k] : shapes) {
      if (dtypes.find(name(dt)) == std::string::npos) continue;
      for (int fa : fast_accum_settings(args, dt, mode)) {
        cx.fast_accum = fa == 1;
        const Problem p{dt, Layout::Fwd, m, n, k};
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
          csv.row({mode, name(dt), name(dt, Layout::Fwd), std::to_string(fa), std::to_string(m),
                   std::to_string(n), std::to_string(k), fmt(elapsed(), 4), fmt(per),
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
  open_context(cx, args);
  const std::string mode = args.get("mode", "grid");
  {
    CsvWriter csv(args.get("out", "gemm.csv"), "gemm (cuBLASLt)", {cx.device}, argc, argv,
                  {{"cublasLt", std::to_string(cublasLtGetVersion())},
                   {"workspace_bytes", std::to_string(cx.ws_bytes)},
                   {"timing", "CUDA events; median of samples of back-to-back calls; grid mode: each sample queued behind BF16 8192^3 heater GEMMs (host launch excluded, sustained power state); operands rotate over >=512 MiB"},
                   {"data", "uniform random in [-1,1); FP8 scales A=0.25 B=0.5 (block scaling: every block scale the same value); FP8 without fast accumulation unless fast_accum=1"},
                   {"mode", mode}});
    if (mode == "grid") {
      // --fast-accum 1: FP8 with CUBLASLT_MATMUL_DESC_FAST_ACCUM, as Transformer Engine runs
      // its forward GEMMs (layout written as "tn_fastacc").
      cx.fast_accum = args.num("fast-accum", 0) != 0;
      // --accumulate 1 / 2: FP32 / BF16 output accumulated into (beta = 1), as the
      // weight-gradient GEMM adds into Megatron's main_grad (variant "accum_f32" / "accum_bf16").
      cx.accumulate = static_cast<int>(args.num("accumulate", 0));
      if (cx.accumulate < 0 || cx.accumulate > 2) throw std::runtime_error("--accumulate: 0, 1 or 2");
      run_grid(cx, args, csv);
    }
    else
      run_power(cx, args, csv);
  }
  close_context(cx);
  return 0;
}

}  // namespace
}  // namespace probes

int main(int argc, char** argv) { return probes::probe_main("gemm", probes::run, argc, argv); }
