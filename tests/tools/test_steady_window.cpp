// The steady-state window (docs/engine.md, "Steady-state window"): a step of many microbatches
// played as two short steps of its schedule and extended linearly gives the step played whole,
// for every schedule and data-parallel scheme, at a fraction of the events.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "sim/yaml_spec.hpp"
#include "tools/job.hpp"
#include "tools/simulate.hpp"
#include "tools/steady_window.hpp"

namespace clustersim::tools {
namespace {

Job job_of(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/steady_window_" + name + ".yaml";
  std::ofstream(path) << text;
  return load_job(path);
}

RunReport run(const Job& job, const std::string& microbatches, bool timeline = false) {
  SimulateOptions o = options_from_job(job);
  o.microbatches = microbatches;
  o.timeline = timeline;
  if (timeline) o.timeline_ranks = {0};
  return simulate_job(job, o);
}

// Plays `text` whole and windowed; the two steps must agree part by part.
void expect_window_gives_whole_step(const std::string& name, const std::string& text,
                                    std::vector<int> played) {
  const Job job = job_of(name, text);
  const RunReport whole = run(job, "all");
  const RunReport windowed = run(job, "auto");
  EXPECT_TRUE(whole.microbatches_played.empty());
  EXPECT_EQ(whole.microbatches_window, played);  // the played-whole report names the windows
  EXPECT_EQ(windowed.microbatches_played, played);
  EXPECT_TRUE(windowed.microbatches_window.empty());
  EXPECT_NE(report_text(whole).find("all played (--microbatches auto would play"), std::string::npos);
  EXPECT_EQ(windowed.microbatches, whole.microbatches);
  const auto& a = whole.step.breakdown;
  const auto& b = windowed.step.breakdown;
  const double step = whole.step.step_time_s;
  EXPECT_NEAR(windowed.step.step_time_s / step, 1.0, 1e-9);
  EXPECT_NEAR(b.compute_s, a.compute_s, 1e-9 * step);
  EXPECT_NEAR(b.exposed_comm_s, a.exposed_comm_s, 1e-9 * step);
  EXPECT_NEAR(b.bubble_s, a.bubble_s, 1e-9 * step);
  for (std::size_t g = 0; g < a.exposed_by_group_s.size(); ++g) {
    EXPECT_NEAR(b.exposed_by_group_s[g], a.exposed_by_group_s[g], 1e-9 * step) << g;
  }
  // The throughput and energy follow from the whole step's tokens.
  EXPECT_NEAR(windowed.tokens_per_s_per_gpu / whole.tokens_per_s_per_gpu, 1.0, 1e-9);
  EXPECT_NEAR(windowed.mfu / whole.mfu, 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(windowed.memory_bound_share, whole.memory_bound_share);
  EXPECT_LT(windowed.step.events * 2, whole.step.events);
}

constexpr const char* kDense =
    "cluster: {platform: hgx_h100, gpus: 16}\n"
    "model: {catalog: llama3_8b, layers: 8}\n";

TEST(SteadyWindow, OneFOneBPipelineWithDataParallelism) {
  // pp 4, 24 microbatches per pipeline (>= kWindowsPerStep x 5): windows of 4 and 5.
  expect_window_gives_whole_step(
      "1f1b", std::string(kDense) +
                  "parallelism: {tp: 2, pp: 4, sequence_parallel: true}\n"
                  "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 48, "
                  "precision: bf16}\n",
      {4, 5});
}

TEST(SteadyWindow, ZeroBubblePipeline) {
  // ZB-H1 runs 1F1B's steps with the same split iterations at every m >= pp: windows of 4 and 5.
  expect_window_gives_whole_step(
      "zb_h1", std::string(kDense) +
                   "parallelism: {tp: 2, pp: 4, sequence_parallel: true, schedule: zb_h1}\n"
                   "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 48, "
                   "precision: bf16}\n",
      {4, 5});
}

TEST(SteadyWindow, InterleavedPipelineFp8) {
  // Megatron's interleaved schedule runs all forwards first at m == pp: windows of 2pp and 3pp.
  expect_window_gives_whole_step(
      "interleaved", std::string(kDense) +
                         "parallelism: {tp: 2, pp: 4, vp: 2, sequence_parallel: true}\n"
                         "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 96, "
                         "precision: fp8}\n",
      {8, 12});
}

TEST(SteadyWindow, GradientAccumulationWithZero2AndNoPipeline) {
  // ZeRO-2 reduce-scatters every microbatch's gradients over dp 8.
  expect_window_gives_whole_step(
      "zero2", std::string(kDense) +
                   "parallelism: {tp: 2, zero_stage: 2}\n"
                   "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 96, "
                   "precision: bf16}\n",
      {2, 3});
}

TEST(SteadyWindow, ExpertParallelAllToAlls) {
  expect_window_gives_whole_step(
      "moe",
      "cluster: {platform: hgx_h100, gpus: 32}\n"
      "model: {catalog: mixtral_8x7b, layers: 4}\n"
      "parallelism: {tp: 1, pp: 2, ep: 8}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 384, precision: bf16}\n",
      {2, 3});
}

TEST(SteadyWindow, ATimelineOrFewMicrobatchesPlayEveryMicrobatch) {
  const Job job = job_of("few", std::string(kDense) +
                                    "parallelism: {tp: 2, pp: 4}\n"
                                    "training: {seq_length: 4096, micro_batch_size: 1, "
                                    "global_batch_size: 38, precision: bf16}\n");
  EXPECT_EQ(job.workload.num_microbatches(), 19);  // < 4 x 5: windows would save little
  const RunReport few = run(job, "auto");
  EXPECT_TRUE(few.microbatches_played.empty());
  EXPECT_TRUE(few.microbatches_window.empty());
  EXPECT_EQ(report_text(few).find("microbatches  "), std::string::npos);
  const Job many = job_of("timeline", std::string(kDense) +
                                          "parallelism: {tp: 2, pp: 4}\n"
                                          "training: {seq_length: 4096, micro_batch_size: 1, "
                                          "global_batch_size: 48, precision: bf16}\n");
  const RunReport traced = run(many, "auto", true);
  EXPECT_TRUE(traced.microbatches_played.empty());
  EXPECT_TRUE(traced.microbatches_window.empty());  // a timeline plays the step whole anyway
  EXPECT_FALSE(traced.step.timeline.empty());
  // ... and the report says that it overrode auto (it had dropped the line silently).
  EXPECT_TRUE(traced.auto_overridden_by_timeline);
  EXPECT_NE(report_text(traced).find("microbatches  24 per pipeline, all played: a timeline"),
            std::string::npos) << report_text(traced);
  EXPECT_FALSE(run(many, "all", true).auto_overridden_by_timeline);
  EXPECT_FALSE(run(job, "auto", true).auto_overridden_by_timeline);  // auto would not window it either
}

TEST(SteadyWindow, ExtendsEveryTimeAlongTheLine) {
  sim::StepResult a, b;
  a.step_time_s = 1.0;
  a.breakdown.compute_s = 0.6;
  a.breakdown.bubble_s = 0.4;
  a.events = 100;
  a.sim_wall_s = 1.0;
  b.step_time_s = 1.5;
  b.breakdown.compute_s = 1.0;
  b.breakdown.bubble_s = 0.5;
  b.events = 120;
  b.sim_wall_s = 2.0;
  const sim::StepResult r = extend_window(a, b, {4, 5}, 10);
  EXPECT_DOUBLE_EQ(r.step_time_s, 4.0);
  EXPECT_DOUBLE_EQ(r.breakdown.compute_s, 3.0);
  EXPECT_DOUBLE_EQ(r.breakdown.bubble_s, 1.0);
  EXPECT_EQ(r.events, 220u);
  EXPECT_DOUBLE_EQ(r.sim_wall_s, 3.0);
  EXPECT_THROW(extend_window(a, b, {5, 5}, 10), std::invalid_argument);
  EXPECT_THROW(with_microbatches(load_default_job().workload, 0), std::invalid_argument);
  EXPECT_EQ(with_microbatches(load_default_job().workload, 12).num_microbatches(), 12);
}

TEST(SteadyWindow, UnknownSettingIsAnErrorAtItsLine) {
  const std::string path = ::testing::TempDir() + "/steady_window_bad.yaml";
  std::ofstream(path) << kDense
                      << "parallelism: {tp: 2, pp: 4}\n"
                         "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 48, "
                         "precision: bf16}\n"
                         "simulation: {microbatches: some}\n";
  try {
    load_job(path);
    FAIL() << "accepted microbatches: some";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find(":5:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("simulation.microbatches"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace clustersim::tools
