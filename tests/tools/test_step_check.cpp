// Real training steps on H200 beside the simulator (calibration run 23, calib/probes/
// step_check.py, calib/data/h200/run23/step_*.csv; docs/validation.md "Real steps on H200"): a
// 4-layer Llama-3-8B-shaped transformers model (eager modules, sdpa attention, the transformers
// loss), micro batch 1, on one H200, and on two with DDP (ZeRO 0, BF16 gradients all-reduced in
// Megatron-sized buckets) and FSDP2 (ZeRO 3), at 4k, 8k and 16k tokens; and the same shape
// (run 26) and two Llama3-70B-shaped layers (run 27) with Megatron's tensor parallelism over
// the two GPUs (calib/probes/tp_model.py). The measurement is not
// an input. The forward + backward (gradient reduction included) is compared: the probe's
// optimizer (FP32 masters, per-tensor copies) is not Megatron's fused step the simulator costs.
// Stated tolerance: 10% (against the model with its power state, runs 24-25: runs 23 -5.4..+3.7%,
// runs 26-27 (TP) -7.1..-8.1%; at the tables' sustained speed, without it, -0.9..+9.8% and
// -0.6..-3.0%).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "calib/tables.hpp"
#include "tools/job.hpp"
#include "tools/simulate.hpp"

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
  int seq = 0;
  double fwd_bwd_s = 0.0;
};

std::vector<Measured> measured_steps() {
  std::vector<Measured> out;
  const std::tuple<const char*, const char*, const char*> files[] = {
      {"run23/step_single.csv", "single", "llama3_8b"}, {"run23/step_ddp.csv", "ddp", "llama3_8b"},
      {"run23/step_fsdp.csv", "fsdp", "llama3_8b"},     {"run26/step_tp.csv", "tp", "llama3_8b"},
      {"run27/step_tp_70b.csv", "tp", "llama3_70b"}};
  for (const auto& [file, layout, model] : files) {
    const calib::CsvTable t =
        calib::read_csv(std::string(CLUSTERSIM_SOURCE_DIR) + "/calib/data/h200/" + file);
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      out.push_back({layout, model, static_cast<int>(t.number(r, t.column("layers"))),
                     static_cast<int>(t.number(r, t.column("gpus"))),
                     static_cast<int>(t.number(r, t.column("seq"))),
                     t.number(r, t.column("fwd_bwd_s"))});
    }
  }
  return out;
}

// The simulated forward + backward of rank 0: up to the start of the optimizer step, less the
// gradient-buffer zeroing Megatron does at the start of a step (the probe zeroes after it).
double simulated_fwd_bwd(const Measured& m, bool power_state = true) {
  const std::string path = ::testing::TempDir() + "/step_" + m.layout + m.model + std::to_string(m.seq) + ".yaml";
  std::ofstream(path) << "cluster: {platform: hgx_h200, gpus: " << m.gpus << "}\n"
                      << "model: {catalog: " << m.model << ", layers: " << m.layers << "}\n"
                      << "parallelism: {zero_stage: " << (m.layout == "fsdp" ? 3 : 0)
                      << ", tp: " << (m.layout == "tp" ? m.gpus : 1) << ", grad_reduce_in_fp32: false}\n"
                      << "training: {seq_length: " << m.seq << ", micro_batch_size: 1, "
                      << "precision: bf16, elementwise: eager, cross_entropy: eager}\n";
  SimulateOptions o;
  o.power_state = power_state;
  o.timeline = true;
  o.timeline_ranks = {0};
  const RunReport r = simulate_job(load_job(path), o);
  double optimizer_start = -1.0, zeroing = 0.0;
  for (const auto& e : r.step.timeline) {
    if (e.rank != 0 || e.stream != sim::Stream::Compute) continue;
    if (e.name == "optimizer") optimizer_start = e.start_s;
    if (e.name == "zero_grad") zeroing += e.end_s - e.start_s;
  }
  EXPECT_GT(optimizer_start, 0.0) << path;
  return optimizer_start - zeroing;
}

TEST(StepCheck, RealStepsOnOneAndTwoH200WithinTenPercent) {
  const auto steps = measured_steps();
  ASSERT_EQ(steps.size(), 14u);
  for (const Measured& m : steps) {
    const double sim = simulated_fwd_bwd(m);
    EXPECT_NEAR(sim, m.fwd_bwd_s, 0.10 * m.fwd_bwd_s) << m.layout << " seq " << m.seq;
  }
  // The power state is what brings the single-GPU steps in: at the tables' sustained speed
  // their GEMMs, 64% of the compute, run slower than the real step's.
  const Measured& single_4k = steps.front();
  ASSERT_EQ(single_4k.layout, "single");
  EXPECT_GT(simulated_fwd_bwd(single_4k, false), 1.07 * single_4k.fwd_bwd_s);
}

}  // namespace
}  // namespace clustersim::tools
