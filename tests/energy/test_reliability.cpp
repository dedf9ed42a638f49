// Reliability: Young/Daly, the Llama 3 failure catalog, and the Monte-Carlo against closed forms.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "energy/failure_catalog.hpp"
#include "energy/reliability.hpp"

namespace clustersim::energy {
namespace {

FailureMode restart_mode(double mtbf_h) {
  FailureMode m;
  m.name = "transient";
  m.unit = UnitKind::Gpu;
  m.mtbf_h = mtbf_h;
  m.recovery = Recovery::Restart;
  return m;
}

ReliabilityInputs base_inputs() {
  ReliabilityInputs in;
  in.recovery.detection_s = 60;
  in.recovery.restart_s = 240;
  in.checkpoint.bytes = 1e12;
  in.checkpoint.write_bandwidth = 1e10;  // 100 s per write
  in.checkpoint.read_bandwidth = 2e10;   // 50 s per reload
  in.trials = 2000;
  in.seed = 7;
  return in;
}

TEST(Reliability, YoungDalyInterval) {
  EXPECT_DOUBLE_EQ(young_daly_interval(60.0, 14400.0), std::sqrt(2.0 * 60 * 14400) - 60);
  EXPECT_DOUBLE_EQ(young_daly_interval(5000.0, 8000.0), 8000.0);  // C >= M/2: checkpoint each MTBF
  EXPECT_THROW(young_daly_interval(0.0, 10.0), std::invalid_argument);
}

TEST(Reliability, Llama3CatalogReproducesTable5InterruptionCount) {
  const auto modes = llama3_failure_modes();
  const RunShape llama{16384, 8, 8, 1.0};
  const double expected = job_failure_rate(modes, llama) * kLlama3Hours * 3600.0;
  EXPECT_NEAR(expected, kLlama3Interruptions, 1e-9);
  // Half the GPUs: the per-GPU and per-server modes halve, the per-job one stays (47).
  const RunShape half{8192, 8, 8, 1.0};
  EXPECT_NEAR(job_failure_rate(modes, half) * kLlama3Hours * 3600.0, (466 - 47) / 2.0 + 47, 1e-9);
}

// A job that fills part of a node or rack is exposed to the whole unit: 16 GPUs of a 72-GPU
// NVL72 rack to one rack's failures, 100 GPUs (25 trays) to two racks'.
TEST(Reliability, PartialNodesAndDomainsCountWhole) {
  const std::vector<FailureMode> modes = {{"rack", UnitKind::Domain, 1000.0, Recovery::ReplaceDomain, ""},
                                          {"tray", UnitKind::Node, 500.0, Recovery::ReplaceNode, ""}};
  const double per_hour = 3600.0;
  EXPECT_NEAR(job_failure_rate(modes, RunShape{16, 4, 72, 1.0}) * per_hour, 1 / 1000.0 + 4 / 500.0, 1e-15);
  EXPECT_NEAR(job_failure_rate(modes, RunShape{100, 4, 72, 1.0}) * per_hour, 2 / 1000.0 + 25 / 500.0, 1e-15);
  EXPECT_NEAR(job_failure_rate(modes, RunShape{2, 4, 72, 1.0}) * per_hour, 1 / 1000.0 + 1 / 500.0, 1e-15);
  EXPECT_THROW(job_failure_rate(modes, RunShape{0, 4, 72, 1.0}), std::invalid_argument);
}

TEST(Reliability, WithoutFailuresTheRunPaysOnlyItsCheckpoints) {
  ReliabilityInputs in = base_inputs();
  in.checkpoint.interval_s = 1000;
  const RunShape shape{64, 8, 8, 10500};
  const RunReliability r = simulate_run(in, shape);
  // 11 segments (10 of 1000 s, one of 500 s), a checkpoint after each but the last.
  EXPECT_DOUBLE_EQ(r.wall_s.mean, 10500 + 10 * 100.0);
  EXPECT_DOUBLE_EQ(r.wall_s.ci95_low, r.wall_s.ci95_high);
  EXPECT_DOUBLE_EQ(r.failures.mean, 0.0);
  EXPECT_DOUBLE_EQ(r.checkpointing_s, 1000.0);
}

// Expected time to get `s` seconds done uninterrupted with failure rate `rate` and a mean
// cost `d` after each failure: (e^{rate s} - 1)(1/rate + d).
double expected_segment(double s, double rate, double d) {
  return std::expm1(rate * s) * (1.0 / rate + d);
}

// Mean cost of a failure whose recovery is detection `det` (no failures counted while the hang is
// detected), then a restart and reload of `r` seconds that a failure sends back to detection:
// det e^{rate r} + (e^{rate r} - 1) / rate.
double expected_recovery(double det, double r, double rate) {
  return det * std::exp(rate * r) + std::expm1(rate * r) / rate;
}

TEST(Reliability, MonteCarloMatchesTheRenewalFormulaForRestartOnlyFailures) {
  ReliabilityInputs in = base_inputs();
  in.modes = {restart_mode(64.0 * 2.0)};  // 64 GPUs: job MTBF 2 h
  in.checkpoint.interval_s = 1800;
  const RunShape shape{64, 8, 8, 20 * 3600.0};
  const RunReliability r = simulate_run(in, shape);
  const double rate = 1.0 / (2 * 3600.0);
  const double d = expected_recovery(60, 240 + 50, rate);  // detection, restart + reload
  const double exact = 39 * expected_segment(1800 + 100, rate, d) + expected_segment(1800, rate, d);
  EXPECT_NEAR(r.system_mtbf_s, 2 * 3600.0, 1e-6);
  // Dropping any one cost (the 50 s reload over ~12 failures is 0.8%) leaves this interval.
  EXPECT_GT(exact, r.wall_s.ci95_low - 0.001 * exact);
  EXPECT_LT(exact, r.wall_s.ci95_high + 0.001 * exact);
  EXPECT_LT(r.goodput.mean, 1.0);
  EXPECT_LE(r.wall_s.p05, r.wall_s.mean);
  EXPECT_GE(r.wall_s.p95, r.wall_s.mean);
}

// Goodput is the failure-free time over the mean elapsed time, so that a run's cost with
// failures is its failure-free cost / goodput. With a long restart and about one failure per
// run the trials differ a lot (no failure: ~1; one: ~0.3) and the mean of their ratios lies
// far above work / mean elapsed.
// A restart and reload as long as the job's MTBF fail e times per recovery on average, each
// failure costing its detection again (Daly 2006 charges failures during restart).
TEST(Reliability, FailuresDuringTheRestartStartTheRecoveryAgain) {
  ReliabilityInputs in = base_inputs();
  in.modes = {restart_mode(64.0)};  // 64 GPUs: job MTBF 1 h
  in.recovery.restart_s = 3550;     // + 50 s reload: 1 h
  in.checkpoint.interval_s = 1800;
  const RunShape shape{64, 8, 8, 10 * 3600.0};
  const RunReliability r = simulate_run(in, shape);
  const double rate = 1.0 / 3600.0;
  const double d = expected_recovery(60, 3600, rate);
  const double exact = 19 * expected_segment(1800 + 100, rate, d) + expected_segment(1800, rate, d);
  EXPECT_GT(exact, r.wall_s.ci95_low - 0.002 * exact);
  EXPECT_LT(exact, r.wall_s.ci95_high + 0.002 * exact);
  // Interruptions: e per failure during training.
  const double first = 19 * std::expm1(rate * 1900) + std::expm1(rate * 1800);
  EXPECT_NEAR(r.failures.mean / (first * std::exp(1.0)), 1.0, 0.03);
}

TEST(Reliability, GoodputIsWorkOverTheMeanElapsedTime) {
  ReliabilityInputs in = base_inputs();
  in.recovery.restart_s = 24 * 3600.0;
  in.modes = {restart_mode(8.0 * 10.0)};  // 8 GPUs: job MTBF 10 h
  in.checkpoint.interval_s = 3600;
  const RunShape shape{8, 8, 8, 10 * 3600.0};
  const RunReliability r = simulate_run(in, shape);
  EXPECT_DOUBLE_EQ(r.goodput.mean, shape.work_s / r.wall_s.mean);
  EXPECT_DOUBLE_EQ(r.goodput.ci95_low, shape.work_s / r.wall_s.ci95_high);
  EXPECT_DOUBLE_EQ(r.goodput.p95, std::min(1.0, shape.work_s / r.wall_s.p05));
  EXPECT_LT(r.goodput.mean, 0.6);
  EXPECT_LT(r.goodput.p05, r.goodput.mean);
  EXPECT_GT(r.goodput.p95, r.goodput.mean);
}

TEST(Reliability, SameSeedSameRunsOtherSeedOtherRuns) {
  ReliabilityInputs in = base_inputs();
  in.modes = llama3_failure_modes();
  in.trials = 50;
  const RunShape shape{2048, 8, 8, 5 * 86400.0};
  const RunReliability a = simulate_run(in, shape);
  const RunReliability b = simulate_run(in, shape);
  EXPECT_EQ(a.wall_s.mean, b.wall_s.mean);
  EXPECT_EQ(a.failures_by_mode, b.failures_by_mode);
  in.seed = 8;
  EXPECT_NE(simulate_run(in, shape).wall_s.mean, a.wall_s.mean);
}

TEST(Reliability, DomainFailuresWithoutSpareWaitForTheirRepair) {
  ReliabilityInputs in = base_inputs();
  in.modes = {nvlink_domain_failure_mode(2000.0)};
  in.recovery.spare_domains = 0;
  in.recovery.domain_repair_s = 12 * 3600.0;
  in.trials = 200;
  const RunShape shape{576, 4, 72, 10 * 86400.0};  // 8 racks: job MTBF 250 h
  const RunReliability r = simulate_run(in, shape);
  ASSERT_GT(r.failures.mean, 0.0);
  const double per_failure = r.downtime_s / r.failures.mean;
  EXPECT_NEAR(per_failure, 60 + 240 + 50 + 12 * 3600.0, 1e-6 * per_failure);
  // One spare rack absorbs almost all of that wait (repairs finish long before the next failure).
  in.recovery.spare_domains = 1;
  const RunReliability spare = simulate_run(in, shape);
  EXPECT_LT(spare.downtime_s / spare.failures.mean, 60 + 240 + 50 + 0.2 * 12 * 3600.0);
  EXPECT_GT(spare.goodput.mean, r.goodput.mean);
}

TEST(Reliability, NodeFailuresUseSparesWhileTheyLast) {
  ReliabilityInputs in = base_inputs();
  FailureMode node = restart_mode(100.0);
  node.unit = UnitKind::Node;
  node.recovery = Recovery::ReplaceNode;
  in.modes = {node};
  in.recovery.node_repair_s = 48 * 3600.0;
  in.trials = 100;
  const RunShape shape{1024, 8, 8, 5 * 86400.0};  // 128 nodes: a node failure every ~47 min
  in.recovery.spare_nodes = -1;
  const double unlimited = simulate_run(in, shape).wall_s.mean;
  in.recovery.spare_nodes = 4;
  const double four = simulate_run(in, shape).wall_s.mean;
  in.recovery.spare_nodes = 0;
  const double none = simulate_run(in, shape).wall_s.mean;
  EXPECT_LT(unlimited, four);
  EXPECT_LT(four, none);
}

TEST(Reliability, FiftyFourDaysOnSixteenThousandGpusRunsFast) {
  ReliabilityInputs in = base_inputs();
  in.modes = llama3_failure_modes();
  in.trials = 1000;
  const RunShape shape{16384, 8, 8, 50 * 86400.0};
  const auto start = std::chrono::steady_clock::now();
  const RunReliability r = simulate_run(in, shape);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 3.0);
  EXPECT_GT(r.failures.mean, 300.0);
  EXPECT_LT(r.goodput.ci95_low, r.goodput.mean);
  EXPECT_GT(r.goodput.ci95_high, r.goodput.mean);
}

// A checkpoint write far longer than the job's MTBF: almost no segment completes, and the trials
// would play more interruptions than any run could (before the bound, without end).
TEST(Reliability, ARunThatCannotProgressIsRefusedAtOnce) {
  ReliabilityInputs in = base_inputs();
  in.modes = {restart_mode(1000.0)};  // 64 GPUs: a job MTBF of 15.6 h
  in.checkpoint.write_bandwidth = 1e6;  // 1e6 s per write
  const auto start = std::chrono::steady_clock::now();
  try {
    simulate_run(in, {64, 8, 8, 86400.0});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the run barely progresses"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  // Below the bound it still plays: 20 trials of a checkpoint write as long as the job MTBF.
  in.checkpoint.write_bandwidth = 1e12 / (15.6 * 3600);
  in.trials = 20;
  EXPECT_GT(simulate_run(in, {64, 8, 8, 86400.0}).failures.mean, 0.0);
}

TEST(Reliability, RejectsBadInputs) {
  ReliabilityInputs in = base_inputs();
  in.modes = {restart_mode(0.0)};
  EXPECT_THROW(simulate_run(in, {64, 8, 8, 100}), std::invalid_argument);
  in = base_inputs();
  EXPECT_THROW(simulate_run(in, {0, 8, 8, 100}), std::invalid_argument);
  EXPECT_THROW(simulate_run(in, {64, 0, 8, 100}), std::invalid_argument);
  in.checkpoint.bytes = 0;
  EXPECT_THROW(simulate_run(in, {64, 8, 8, 100}), std::invalid_argument);
}

}  // namespace
}  // namespace clustersim::energy

namespace clustersim::energy {
namespace {

// The closing check of docs/energy.md: 16,384 H100 for 54 days with the default recovery
// (detection 10 min, restart 10 min), Llama3-405B checkpoints (405e9 x 14 B at 2 TB/s). The
// interruption count follows from the catalog by construction (466 in 54 days of running);
// the goodput is the model's own result, next to the paper's "higher than 90% effective
// training time".
TEST(Reliability, Llama3SixteenThousandGpusOverFiftyFourDays) {
  ReliabilityInputs in;
  in.modes = llama3_failure_modes();
  in.recovery.detection_s = 600;
  in.recovery.restart_s = 600;
  in.checkpoint.bytes = 405e9 * 14;
  in.checkpoint.write_bandwidth = 2e12;
  in.checkpoint.read_bandwidth = 2e12;
  in.trials = 1000;
  RunShape shape{16384, 8, 8, 54 * 86400.0};
  // Find the work that takes 54 days of wall time on average (goodput fixed point).
  for (int i = 0; i < 3; ++i) {
    const RunReliability r = simulate_run(in, shape);
    shape.work_s *= 54 * 86400.0 / r.wall_s.mean;
  }
  const RunReliability r = simulate_run(in, shape);
  std::printf(
      "16,384 H100, %.2f days: %.1f interruptions [%.1f, %.1f], goodput %.4f [%.4f, %.4f], "
      "checkpoint every %.1f min\n",
      r.wall_s.mean / 86400, r.failures.mean, r.failures.p05, r.failures.p95, r.goodput.mean,
      r.goodput.ci95_low, r.goodput.ci95_high, r.checkpoint_interval_s / 60);
  EXPECT_NEAR(r.wall_s.mean, 54 * 86400.0, 0.002 * 54 * 86400.0);
  // Failures arrive while the job runs on its allocation: training and restarting, not while
  // the hang is being detected (spares are unlimited here): 466 x that share of the 54 days.
  const double running = (r.wall_s.mean - r.failures.mean * in.recovery.detection_s) / (54 * 86400.0);
  EXPECT_NEAR(r.failures.mean, kLlama3Interruptions * running, 0.03 * kLlama3Interruptions);
  const double training = (r.wall_s.mean - r.downtime_s) / (54 * 86400.0);
  EXPECT_GT(r.failures.mean, kLlama3Interruptions * training + 0.03 * kLlama3Interruptions);
  EXPECT_GT(r.goodput.mean, 0.8);
  EXPECT_LT(r.goodput.mean, 0.95);
}

}  // namespace
}  // namespace clustersim::energy
