// Real training steps on H200 beside the simulator (calibration run 23, calib/probes/
// step_check.py, calib/data/h200/run23/step_*.csv; docs/validation.md "Real steps on H200"): a
// 4-layer Llama-3-8B-shaped transformers model (eager modules, sdpa attention, the transformers
// loss), micro batch 1, on one H200, and on two with DDP (ZeRO 0, BF16 gradients all-reduced in
// Megatron-sized buckets) and FSDP2 (ZeRO 3), at 4k, 8k and 16k tokens; and the same shape
// (run 26) and two Llama3-70B-shaped layers (run 27) with Megatron's tensor parallelism over
// the two GPUs (calib/probes/tp_model.py), and those two layers on one GPU and with DDP over two
// (run 30), two-stage pipelines, 1F1B (run 31) and interleaved (run 33), TP2 with sequence
// parallelism (run 34), and context parallelism over the two GPUs with the all-gather K/V
// exchange (run 37) and with Transformer Engine's P2P ring (run 38; calib/probes/cp_model.py,
// 8k-32k tokens), and Mixtral-shaped layers with expert parallelism over the two GPUs (run 39,
// calib/probes/moe_model.py; its GEMMs and memory are checked, its whole step is not, below).
// The measurement is not
// an input. The forward + backward (gradient reduction included) is compared: the probe's
// optimizer (FP32 masters, per-tensor copies) is not Megatron's fused step the simulator costs.
// The TP probes' jobs run the probe's autograd backward order (tp_backward_comm: blocking).
// Stated tolerance: 10%, 12% for CP2 (2026-12-02, against the model with its power state, runs
// 24-25 and 49-51: run 23 -5.9..+0.8%, runs 26-27 (TP) -5.2..-3.9%, run 30 -5.8..-4.1%, runs
// 31 and 33 (pipelines) -7.0..-0.2%, run 34 (TP + SP) -3.3..-1.3%, runs 37-38 (CP2)
// -10.8..-7.2%, run 55 -2.6..-0.7%; at the tables' speed, without it, -2.0..+5.6%,
// -1.1..+1.7%, -1.8..+1.2%, -3.5..+3.0%, +0.4..+4.3%, -7.2..-5.6% and +1.2..+4.2%). Run 101
// (2026-12-06, a fifth H100, held out): -6.5..-2.7% (-0.1..+1.5% without the power state).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <variant>
#include <string>
#include <vector>

#include "calib/tables.hpp"
#include "tools/job.hpp"
#include "tools/simulate.hpp"
#include "workloads/generator.hpp"
#include "workloads/memory.hpp"

#ifndef CLUSTERSIM_SOURCE_DIR
#error "CLUSTERSIM_SOURCE_DIR must name the source tree"
#endif

namespace clustersim::tools {
namespace {

struct Measured {
  std::string layout;
  std::string model;  ///< catalog model whose layer shape ran
  int layers = 0;
  int gpus = 0;
  int tp = 1;  ///< tensor-parallel degree (the rest of the GPUs is data parallel)
  int pp = 1;  ///< pipeline stages (layout pp: one per GPU)
  int cp = 1;  ///< context-parallel ranks (layout cp: all the GPUs)
  bool cp_p2p = false;  ///< layout cp: the P2P ring (run 38), else all-gather K/V (run 37)
  int ep = 1;  ///< expert-parallel ranks (layout moe: all the GPUs, also data parallel)
  int vp = 1;  ///< model chunks per stage (> 1: interleaved schedule, blocking transfers)
  int microbatches = 1;
  bool sp = false;  ///< sequence parallelism (layout tp)
  int seq = 0;
  double fwd_bwd_s = 0.0;
  double peak_allocated = 0.0;  ///< max_memory_allocated over the timed steps, max over ranks, B
  double kernels_gemm_s = 0.0;  ///< GEMM kernel time of one profiled step, rank 0
  double kernels_attention_s = 0.0;  ///< attention kernel time of the same step, rank 0
  std::string attention = "cudnn";  ///< the SDPA kernel library the probe ran (run 54: flash2)
  std::string platform = "hgx_h200";  ///< the GPU it ran on (run 86: an H100)
  /// Run 101 on: one profiled forward + backward alone, rank 0: GEMM, attention and other
  /// kernel time, the union of its kernels' intervals (s), and its kernel count; -1 before.
  double fb_gemm_s = -1.0, fb_attention_s = -1.0, fb_other_s = -1.0, fb_busy_s = -1.0;
  int fb_kernels = -1;
};

// One measured file and the layout it ran.
struct Source {
  const char* file;
  const char* layout;
  const char* model;
  int tp;  ///< 0: over all the GPUs
  int vp;
  int microbatches;
  bool sp;
  const char* attention = "cudnn";  ///< attention_backend of the job (run 54 forced SDPA's)
  const char* platform = "hgx_h200";  ///< hgx_h100: the file is under calib/data/h100/
};

std::vector<Measured> measured_steps() {
  std::vector<Measured> out;
  const Source files[] = {
      {"run23/step_single.csv", "single", "llama3_8b", 1, 1, 1, false},
      {"run23/step_ddp.csv", "ddp", "llama3_8b", 1, 1, 1, false},
      {"run23/step_fsdp.csv", "fsdp", "llama3_8b", 1, 1, 1, false},
      {"run26/step_tp.csv", "tp", "llama3_8b", 0, 1, 1, false},
      {"run27/step_tp_70b.csv", "tp", "llama3_70b", 0, 1, 1, false},
      {"run30/step_tp1_70b.csv", "tp", "llama3_70b", 1, 1, 1, false},
      {"run30/step_tp1_dp2_70b.csv", "tp", "llama3_70b", 1, 1, 1, false},
      {"run31/step_pp2_m8.csv", "pp", "llama3_8b", 1, 1, 8, false},
      {"run31/step_pp2_m2.csv", "pp", "llama3_8b", 1, 1, 2, false},
      {"run33/step_pp2_vp2_m8.csv", "pp", "llama3_8b", 1, 2, 8, false},
      {"run33/step_pp2_vp2_m2.csv", "pp", "llama3_8b", 1, 2, 2, false},
      {"run34/step_tp2_sp.csv", "tp", "llama3_8b", 0, 1, 1, true},
      {"run34/step_tp2_sp_70b.csv", "tp", "llama3_70b", 0, 1, 1, true},
      {"run37/step_cp2.csv", "cp", "llama3_8b", 1, 1, 1, false},
      {"run38/step_cp2_p2p.csv", "cp", "llama3_8b", 1, 1, 1, false},
      {"run39/step_ep2.csv", "moe", "mixtral_8x7b", 1, 1, 1, false},
      {"run55/step_single_flash.csv", "single", "llama3_8b", 1, 1, 1, false, "flash2"},
      {"run55/step_single_cudnn.csv", "single", "llama3_8b", 1, 1, 1, false, "cudnn"},
      // Run 86 (2026-12-05): run 23's single-GPU step on an H100, against the H100's derived costs.
      {"run86/step_single.csv", "single", "llama3_8b", 1, 1, 1, false, "cudnn", "hgx_h100"},
      // Run 101 (2026-12-06): runs 86 and 30's single-GPU steps on a fifth H100 (70B-shaped at 4k
      // only: 8k does not fit 80 GB), with the forward + backward profiled alone.
      {"run101/step_single.csv", "single", "llama3_8b", 1, 1, 1, false, "cudnn", "hgx_h100"},
      {"run101/step_tp1_70b.csv", "tp", "llama3_70b", 1, 1, 1, false, "cudnn", "hgx_h100"}};
  for (const auto& [file, layout, model, tp, vp, microbatches, sp, attention, platform] : files) {
    const std::string dir = std::string(platform) == "hgx_h100" ? "/calib/data/h100/" : "/calib/data/h200/";
    const calib::CsvTable t = calib::read_csv(std::string(CLUSTERSIM_SOURCE_DIR) + dir + file);
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      const int gpus = static_cast<int>(t.number(r, t.column("gpus")));
      const bool pipelined = std::string(layout) == "pp", context = std::string(layout) == "cp";
      out.push_back({layout, model, static_cast<int>(t.number(r, t.column("layers"))), gpus,
                     tp == 0 ? gpus : tp, pipelined ? gpus : 1, context ? gpus : 1,
                     std::string(file).find("p2p") != std::string::npos,
                     std::string(layout) == "moe" ? gpus : 1, vp, microbatches, sp,
                     static_cast<int>(t.number(r, t.column("seq"))),
                     t.number(r, t.column("fwd_bwd_s")),
                     t.number(r, t.column("peak_allocated_bytes")),
                     t.number(r, t.column("kernels_gemm_s")),
                     t.number(r, t.column("kernels_attention_s")), attention, platform});
      if (std::find(t.columns.begin(), t.columns.end(), "fb_kernels") == t.columns.end()) continue;
      Measured& m = out.back();
      m.fb_gemm_s = t.number(r, t.column("fb_kernels_gemm_s"));
      m.fb_attention_s = t.number(r, t.column("fb_kernels_attention_s"));
      m.fb_other_s = t.number(r, t.column("fb_kernels_other_s"));
      m.fb_busy_s = t.number(r, t.column("fb_kernels_busy_s"));
      m.fb_kernels = static_cast<int>(t.number(r, t.column("fb_kernels")));
    }
  }
  return out;
}

// The job of a measured point (docs/validation.md, "Real steps on H200").
std::string job_path(const Measured& m) {
  const std::string path = ::testing::TempDir() + "/step_" + m.layout + std::to_string(m.tp) +
                           std::to_string(m.cp) + (m.cp_p2p ? "p2p" : "") + std::to_string(m.ep) +
                           std::to_string(m.vp) + std::to_string(m.microbatches) +
                           (m.sp ? "sp" : "") + m.model + m.attention + m.platform +
                           std::to_string(m.seq) + ".yaml";
  const int dp = m.gpus / (m.tp * m.pp * m.cp);
  std::ofstream(path) << "cluster: {platform: " << m.platform << ", gpus: " << m.gpus << "}\n"
                      << "model: {catalog: " << m.model << ", layers: " << m.layers << "}\n"
                      << "parallelism: {"
                      << (m.layout == "fsdp" ? "fsdp: true" : "zero_stage: 0")
                      << ", tp: " << m.tp << ", pp: " << m.pp << ", vp: " << m.vp
                      << (m.ep > 1 ? ", ep: " + std::to_string(m.ep) : "")
                      << (m.cp > 1 ? ", cp: " + std::to_string(m.cp) +
                                         (m.cp_p2p ? ", cp_comm_type: p2p" : ", cp_comm_type: all_gather")
                                   : "")
                      << (m.vp > 1 ? ", overlap_p2p_comm: false" : "")
                      << (m.sp ? ", sequence_parallel: true, tp_comm_overlap: false" : "")
                      // tp_model.py's TP regions are torch.autograd.Functions: the input
                      // gradient is reduced after both GEMMs of the linear's backward, on the
                      // compute stream, and with SP the gathered input is kept from the forward.
                      << (m.tp > 1 ? ", tp_backward_comm: blocking" : "")
                      // The probes are plain PyTorch: autograd writes each weight gradient.
                      << ", grad_reduce_in_fp32: false, gradient_accumulation_fusion: false}\n"
                      << "training: {seq_length: " << m.seq << ", micro_batch_size: 1, "
                      << "global_batch_size: " << m.microbatches * dp << ", "
                      << "precision: bf16, elementwise: eager, cross_entropy: "
                      << (m.layout == "tp" ? "unfused" : "eager")
                      << ", attention_backend: " << m.attention << "}\n";
  return path;
}

// The simulated forward + backward, the longest over the ranks (the probe reports the max over
// its ranks): up to the start of the optimizer step, less the gradient-buffer zeroing Megatron
// does at the start of a step (the probe zeroes after it).
double simulated_fwd_bwd(const Measured& m, bool power_state = true,
                         std::optional<sim::CostCorner> corner = std::nullopt) {
  const std::string path = job_path(m);
  SimulateOptions o;
  o.power_state = power_state;
  o.corner = corner;
  o.timeline = true;
  for (int rank = 0; rank < m.gpus; ++rank) o.timeline_ranks.push_back(rank);
  const RunReport r = simulate_job(load_job(path), o);
  std::vector<double> optimizer_start(m.gpus, -1.0), zeroing(m.gpus, 0.0);
  for (const auto& e : r.step.timeline) {
    if (e.stream != sim::Stream::Compute) continue;
    if (e.name == "optimizer") optimizer_start[e.rank] = e.start_s;
    if (e.name == "zero_grad") zeroing[e.rank] += e.end_s - e.start_s;
  }
  double longest = 0.0;
  for (int rank = 0; rank < m.gpus; ++rank) {
    EXPECT_GT(optimizer_start[rank], 0.0) << path << " rank " << rank;
    longest = std::max(longest, optimizer_start[rank] - zeroing[rank]);
  }
  return longest;
}

TEST(StepCheck, RealStepsOnOneAndTwoH200WithinTenPercent) {
  const auto steps = measured_steps();
  ASSERT_EQ(steps.size(), 53u);
  for (const Measured& m : steps) {
    if (m.layout == "moe") continue;  // its plumbing is the probe's own (next test)
    const double sim = simulated_fwd_bwd(m);
    // The context-parallel steps (runs 37-38) miss by 11-12% since the eager loss is costed as
    // run 29 measured it (it had been charged Megatron's unfused loss, 45% more, which hid part
    // of what their NCCL waits and launch gaps cost; docs/validation.md): held to 12%.
    const double tolerance = m.layout == "cp" ? 0.12 : 0.10;
    if (std::getenv("STEPCHECK_PRINT") != nullptr) {  // each point's miss, for docs/validation.md
      const double tables = simulated_fwd_bwd(m, false);
      std::fprintf(stderr, "%s %s%s tp%d pp%d vp%d x%d %s %s seq %d: measured %.1f ms, simulated "
                   "%.1f ms, %+.2f%%; no power state %.1f ms, %+.2f%%\n", m.platform.c_str(), m.layout.c_str(),
                   m.sp ? " sp" : "", m.tp, m.pp, m.vp, m.microbatches, m.model.c_str(),
                   m.attention.c_str(), static_cast<int>(m.seq), m.fwd_bwd_s * 1e3, sim * 1e3,
                   (sim / m.fwd_bwd_s - 1.0) * 100.0, tables * 1e3,
                   (tables / m.fwd_bwd_s - 1.0) * 100.0);
    }
    EXPECT_NEAR(sim, m.fwd_bwd_s, tolerance * m.fwd_bwd_s)
        << m.layout << (m.sp ? " sp" : "") << " tp " << m.tp << " pp " << m.pp << " vp " << m.vp
        << " x " << m.microbatches
        << " " << m.model << " seq " << m.seq << ": simulated " << sim;
  }
  // The power state is what brings the single-GPU steps in: at the tables' sustained speed
  // their GEMMs, 64% of the compute, run slower than the real step's.
  const Measured& single_4k = steps.front();
  ASSERT_EQ(single_4k.layout, "single");
  EXPECT_GT(simulated_fwd_bwd(single_4k, false), 1.04 * single_4k.fwd_bwd_s);  // +5.6%; -1.4% with it
}

// The stated uncertainty (docs/cost-model.md) on the real steps: each step simulated with every
// kernel class at the fast, then the slow end of its bounds. On one GPU (no communication) the
// band holds the simulated step and spans what the bounds give a step of GEMMs, attention and
// memory-bound kernels: 3.8-4.5% on the H200 (GEMM +-2.2%, attention +-3.1%, memory-bound +-1%,
// +-7% below 8 MiB), 4.2-5.1% on the H100 (2026-12-06). The measured step lies inside its band
// at 9 of the 50 steps (7 of the 18 on one GPU; the others' slow end is 0.1-4.4% short of the
// measured step, run 101's four 0.2-4.4%): the bounds cover the kernels' measured spread, not what the step does beside
// its kernels (docs/validation.md, "Real steps on H200"). STEPCHECK_PRINT=1 prints each band.
TEST(StepCheck, StatedUncertaintyBandOnTheRealSteps) {
  int inside = 0, points = 0;
  for (const Measured& m : measured_steps()) {
    if (m.layout == "moe") continue;
    const double fast = simulated_fwd_bwd(m, true, sim::CostCorner::Fast);
    const double slow = simulated_fwd_bwd(m, true, sim::CostCorner::Slow);
    const bool in = m.fwd_bwd_s >= fast && m.fwd_bwd_s <= slow;
    ++points;
    inside += in ? 1 : 0;
    if (std::getenv("STEPCHECK_PRINT") != nullptr) {
      std::fprintf(stderr, "%s %s%s gpus %d tp%d pp%d vp%d x%d %s %s seq %d: band %+.2f%%..%+.2f%%%s\n",
                   m.platform.c_str(), m.layout.c_str(), m.sp ? " sp" : "", m.gpus, m.tp, m.pp, m.vp,
                   m.microbatches, m.model.c_str(), m.attention.c_str(), static_cast<int>(m.seq),
                   (fast / m.fwd_bwd_s - 1.0) * 100.0, (slow / m.fwd_bwd_s - 1.0) * 100.0,
                   in ? " inside" : "");
    }
    if (m.gpus != 1) continue;
    const double nominal = simulated_fwd_bwd(m);
    EXPECT_LT(fast, nominal) << m.layout << " " << m.model << " seq " << m.seq;
    EXPECT_GT(slow, nominal) << m.layout << " " << m.model << " seq " << m.seq;
    const double width = (slow - fast) / nominal;
    EXPECT_GT(width, 0.03) << m.layout << " " << m.model << " " << m.platform << " seq " << m.seq;
    EXPECT_LT(width, 0.06) << m.layout << " " << m.model << " " << m.platform << " seq " << m.seq;
  }
  EXPECT_EQ(points, 50);
  if (std::getenv("STEPCHECK_PRINT") != nullptr) {
    std::fprintf(stderr, "inside their band: %d of %d steps\n", inside, points);
  }
}

// Where inside the real steps the model errs (`run --profile`, tools/op_profile.hpp): the
// profiler's GEMM and attention kernel time of one step of rank 0 (calib/probes/step_check.py,
// kernel_split: cuBLAS and cuDNN/flash kernels by name) against rank 0's simulated GEMM and
// attention time, with the power state. The optimizer runs neither, so both sides are the
// forward and backward. Stated tolerance: GEMMs 12%, cuDNN attention 15%, FlashAttention-2 20%
// (2026-12-06, the 50 steps but the expert-parallel ones: GEMMs -3.9..+10.9%, the simulated
// ones longer at 41 of 50, most in the pipelined steps, +5.6..+10.9%; on run 101's H100
// -3.9..+0.1%; cuDNN attention -12.4..+9.6%; FlashAttention-2 -16.7..-5.9%). Two profiled
// passes of one step differ by up to 4% (run 101). So the steps' misses (mostly short, CP2 by
// 7-11%) do not lie in their GEMM and attention kernels, which are mostly charged too long.
// Run 101 also profiled the forward + backward alone: its memory-bound kernels (all but GEMMs
// and attention) against the simulated ones, tolerance 12% (-10.3..-1.5%), and how long the GPU
// ran none of the pass's kernels (the timed pass less their union: 3.0, 5.2 and 3.0 ms of the
// 8B's 79-347 ms; the 70B-shaped pass's kernels took 2.4 ms longer than the timed pass,
// docs/validation.md, "Real steps on H200"). STEPCHECK_PRINT=1 prints each point.
TEST(StepCheck, GemmAndAttentionKernelTimeOfTheRealSteps) {
  int checked = 0, split = 0;
  for (const Measured& m : measured_steps()) {
    if (m.layout == "moe") continue;
    SimulateOptions o;
    o.profile_rank = 0;
    const RunReport r = simulate_job(load_job(job_path(m)), o);
    ASSERT_TRUE(r.profile.has_value());
    const double gemm = r.profile->compute_by_kind_s[0], attention = r.profile->compute_by_kind_s[1];
    const std::string what = m.platform + " " + m.layout + (m.sp ? " sp" : "") + " gpus " +
                             std::to_string(m.gpus) + " pp " + std::to_string(m.pp) + " x " +
                             std::to_string(m.microbatches) + " " + m.model + " " + m.attention +
                             " seq " + std::to_string(m.seq);
    if (std::getenv("STEPCHECK_PRINT") != nullptr) {
      std::fprintf(stderr, "%s: GEMM %.2f / %.2f ms %+.1f%%, attention %.2f / %.2f ms %+.1f%%\n",
                   what.c_str(), gemm * 1e3, m.kernels_gemm_s * 1e3,
                   (gemm / m.kernels_gemm_s - 1) * 100, attention * 1e3, m.kernels_attention_s * 1e3,
                   (attention / m.kernels_attention_s - 1) * 100);
    }
    EXPECT_NEAR(gemm, m.kernels_gemm_s, 0.12 * m.kernels_gemm_s) << what;
    const double tolerance = m.attention == "flash2" ? 0.20 : 0.15;
    EXPECT_NEAR(attention, m.kernels_attention_s, tolerance * m.kernels_attention_s) << what;
    ++checked;
    if (m.fb_kernels < 0) continue;
    // Run 101's forward + backward alone: the memory-bound kernels (all but GEMMs and
    // attention), the optimizer's left out on both sides (on one GPU its phase is memory-bound).
    const double memory = r.profile->compute_by_kind_s[2] - r.profile->compute_by_phase_s[2];
    if (std::getenv("STEPCHECK_PRINT") != nullptr) {
      std::fprintf(stderr, "%s forward + backward: GEMM %.2f / %.2f ms, attention %.2f / %.2f ms, "
                   "memory-bound %.2f / %.2f ms %+.1f%%; timed pass %.2f ms, its kernels' union "
                   "%.2f ms (%d kernels)\n", what.c_str(), gemm * 1e3, m.fb_gemm_s * 1e3,
                   attention * 1e3, m.fb_attention_s * 1e3, memory * 1e3, m.fb_other_s * 1e3,
                   (memory / m.fb_other_s - 1) * 100, m.fwd_bwd_s * 1e3, m.fb_busy_s * 1e3,
                   m.fb_kernels);
    }
    EXPECT_NEAR(memory, m.fb_other_s, 0.12 * m.fb_other_s) << what;
    ++split;
  }
  EXPECT_EQ(checked, 50);
  EXPECT_EQ(split, 4);
}

// FlashAttention-2 (run 55): run 23's single-GPU step with SDPA forced to FlashAttention-2 (the
// profiler shows PyTorch's flash kernels) and, as the control, to cuDNN (it repeats run 23 within
// 3%). Beside the 10% of the test above, what FA2 adds to the step must be what the measured
// model says it adds (attention_backend flash2 vs cudnn): measured 3.4, 10.2 and 35.3 ms at 4k,
// 8k and 16k tokens (run 54: 3.3, 12.9, 38.5); stated tolerance 30% of it or 3 ms (2026-12-02:
// simulated 3.4, 10.6 and 39.5 ms).
TEST(StepCheck, FlashAttention2CostsWhatItCostsInARealStep) {
  // The flash points and, right after them in measured_steps(), run 54's cuDNN control.
  const std::vector<Measured> steps = measured_steps();
  std::vector<Measured> flash, cudnn;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].attention != "flash2") continue;
    flash.push_back(steps[i]);
    cudnn.push_back(steps[i + 3]);
    ASSERT_EQ(cudnn.back().seq, steps[i].seq);
    ASSERT_EQ(cudnn.back().attention, "cudnn");
    ASSERT_EQ(cudnn.back().platform, "hgx_h200");
  }
  ASSERT_EQ(flash.size(), 3u);
  ASSERT_EQ(cudnn.size(), 3u);
  for (std::size_t i = 0; i < flash.size(); ++i) {
    const double measured = flash[i].fwd_bwd_s - cudnn[i].fwd_bwd_s;
    const double simulated = simulated_fwd_bwd(flash[i]) - simulated_fwd_bwd(cudnn[i]);
    EXPECT_GT(measured, 0.0) << flash[i].seq;
    EXPECT_NEAR(simulated, measured, std::max(0.3 * measured, 3e-3))
        << "seq " << flash[i].seq << ": FA2 adds " << measured << " s measured, " << simulated
        << " s simulated";
  }
}

// Expert parallelism (run 39, calib/probes/moe_model.py): the probe moves tokens with eager
// PyTorch (index_select, index_add_, transposed copies, an FP32 softmax), not Megatron-core's
// fused permutation, so its whole step is not the simulated job's: the simulated forward +
// backward is 14-18% short of it (11-12% without the power state). What both run alike is the
// GEMMs: the experts' as one batched GEMM per linear (TE's GroupedLinear in Megatron, one bmm in
// the probe), attention's and the output layer's. The profiler's GEMM kernel time of a step
// (rank 0) against the simulated GEMM ops of rank 0 (with the power state), stated tolerance
// 10% (2026-11-30: -1.5..-0.2%).
TEST(StepCheck, ExpertParallelGemmTimeWithinTenPercent) {
  int checked = 0;
  for (const Measured& m : measured_steps()) {
    if (m.layout != "moe") continue;
    const Job job = load_job(job_path(m));
    const sim::Workload workload = workloads::generate_workload(job.workload);
    std::set<std::string> gemms;
    const sim::Program& program = workload.program(0);
    for (const sim::Op& op : program.ops) {
      if (std::holds_alternative<sim::GemmShape>(op.shape)) gemms.insert(program.labels[op.label]);
    }
    SimulateOptions o;
    o.timeline = true;
    o.timeline_ranks = {0};
    const RunReport r = simulate_job(job, o);
    double gemm_s = 0.0;
    for (const auto& e : r.step.timeline) {
      if (e.stream == sim::Stream::Compute && gemms.count(e.name) != 0) gemm_s += e.end_s - e.start_s;
    }
    EXPECT_NEAR(gemm_s, m.kernels_gemm_s, 0.10 * m.kernels_gemm_s) << "moe seq " << m.seq;
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

// Peak memory of the same steps: the memory model's tensor bytes (every component but the
// allocator's fragmentation, the CUDA context and NCCL, which max_memory_allocated does not see)
// plus what the probe keeps beyond Megatron: FP32 master gradients, 4 B per parameter of the
// rank (not with FSDP2, whose FP32 parameter shards are the masters; zero_impl: fsdp2,
// docs/memory-model.md). Stated tolerance: 3% (2026-11-30: -1.3..+1.5% over the 37 points
// without FSDP2, the expert-parallel ones +0.4..+1.5%); 4% for the three FSDP2 points (+2.9..+3.3%: the model also charges the BF16
// gradients of the unit in its backward, the output layer's 1.05 GB, which FSDP2 allocates
// only after the loss's backward has passed its peak; with DeepSpeed's ZeRO-3 accounting these
// points were +12..+24%). Run 55's steps peak at exactly run 23's bytes with either attention
// library (run 54's had kept transformers' BF16 logits alive across the backward, a probe bug).
TEST(StepCheck, PeakAllocatedMemoryWithinThreePercent) {
  int checked = 0;
  for (const Measured& m : measured_steps()) {
    const Job job = load_job(job_path(m));
    const auto report = workloads::estimate_memory(job.workload, 141.0 * 1024 * 1024 * 1024);
    double peak = 0.0;
    for (const auto& stage : report.stages) {
      double tensors = m.layout == "fsdp" ? 0.0 : 4.0 * stage.bytes("weights") / 2.0;
      for (const auto& c : stage.components) {
        if (c.name != "fragmentation" && c.name != "cuda_context" && c.name != "nccl") tensors += c.bytes;
      }
      peak = std::max(peak, tensors);
    }
    EXPECT_NEAR(peak / m.peak_allocated, 1.0, m.layout == "fsdp" ? 0.04 : 0.03)
        << m.layout << " tp " << m.tp << " pp " << m.pp << " x " << m.microbatches << " " << m.model
        << " seq " << m.seq << ": model " << peak << " B, measured " << m.peak_allocated << " B";
    ++checked;
  }
  EXPECT_EQ(checked, 53);  // the H100 steps of runs 86 and 101 peak as the H200 ones
}

}  // namespace
}  // namespace clustersim::tools
