// Compute/communication interference in the engine (docs/engine.md): exact piecewise compute
// slowdown while a collective is in flight on another stream, the collective's NVLink slowdown
// when it starts during compute, and no effect without overlap.
#include <gtest/gtest.h>

#include <cstring>

#include "fake_platform.hpp"
#include "sim/engine.hpp"

namespace clustersim::sim {
namespace {

constexpr double kGemmSlow = 1.25;
constexpr double kAttnSlow = 1.5;
constexpr double kCommSlow = 2.0;
constexpr double kHeldSlow = 1.6;

/// SimpleCost with fixed interference factors (GEMM and memory-bound 1.25, attention 1.5,
/// collective 2.0), independent of the bytes.
class InterferingCost : public test::SimpleCost {
 public:
  Interference interference(ComputeClass c, double) const override {
    return {c == ComputeClass::Attention ? kAttnSlow : kGemmSlow, kCommSlow};
  }
  double compute_time(const Op& op) const override {
    if (std::holds_alternative<AttentionShape>(op.shape)) return op.flops / 1e15;
    return test::SimpleCost::compute_time(op);
  }
  /// Host copies beside kernels: GEMMs 20 us (one direction) or 30 us (both), memory-bound
  /// 5 us and 2% of their time.
  CopyDelay copy_kernel_delay(ComputeClass c, bool d2h, bool h2d) const override {
    if (!d2h && !h2d) return {};
    if (c == ComputeClass::MemoryBound) return {5e-6, 0.02};
    return {d2h && h2d ? 30e-6 : 20e-6, 0.0};
  }
  /// 1.6 for GEMMs beside held SMs (GemmShape::busy_sms > 0).
  double held_sm_slowdown(const Op& op) const override {
    const auto* g = std::get_if<GemmShape>(&op.shape);
    return g != nullptr && g->busy_sms > 0 ? kHeldSlow : 1.0;
  }
};

Op gemm(double flops, std::vector<std::uint32_t> deps = {}) {
  Op op;
  op.shape = GemmShape{1, 1, 1, DType::BF16};
  op.flops = flops;
  op.deps = std::move(deps);
  return op;
}

// A GEMM that a TP communication kernel overlaps while holding `sms` SMs.
Op busy_gemm(double flops, int sms = 4) {
  Op op = gemm(flops);
  std::get<GemmShape>(op.shape).busy_sms = sms;
  return op;
}

Op attention(double flops) {
  Op op = gemm(flops);
  op.shape = AttentionShape{};
  return op;
}

// An all-reduce over 4 ranks: 2 (p-1)/p x bytes over each 1 GB/s link.
Op all_reduce(double bytes, Stream s) {
  Op op;
  op.shape = CollectiveSpec{CollectiveKind::AllReduce, GroupKind::TP, {}};
  op.bytes = bytes;
  op.stream = s;
  return op;
}

StepResult run(std::vector<Op> ops, bool interference, bool timeline = false) {
  test::StarPlatform platform(4, 1e9);
  InterferingCost cost;
  Workload w;
  w.layout = RankLayout(4, 1, 1, 1);
  Program p;
  p.labels = {"op"};
  p.ops = std::move(ops);
  w.programs.push_back(std::move(p));
  w.program_of_rank.assign(4, 0);
  cost_workload(w, cost);
  EngineOptions opt;
  opt.interference = interference;
  opt.record_timeline = timeline;
  return simulate_step(w, platform, cost, opt);
}

TEST(Interference, FullyOverlappedComputeTakesTheSlowdownFactorLonger) {
  // The collective (12 ms) starts first (its stream comes first), so it is not slowed; the
  // 1 ms GEMM runs entirely under it.
  const std::vector<Op> ops{all_reduce(8e6, Stream::DpComm), gemm(1e12)};
  const auto off = run(ops, false);
  const auto on = run(ops, true);
  EXPECT_NEAR(off.breakdown.compute_s, 1e-3, 1e-12);
  EXPECT_NEAR(on.breakdown.compute_s, kGemmSlow * 1e-3, 1e-12);
  EXPECT_NEAR(on.step_time_s, 12e-3, 1e-12);
  EXPECT_NEAR(on.breakdown.compute_s / off.breakdown.compute_s, kGemmSlow, 0.01 * kGemmSlow);
}

TEST(Interference, PartialOverlapIsPiecewiseExactAcrossFusedOps) {
  // 6 ms collective; fused GEMM 4 ms + attention 6 ms. Until 6 ms: the GEMM takes 5 ms (4 x
  // 1.25), then 1 ms of attention at 1/1.5 covers 2/3 ms of its work; the remaining 16/3 ms
  // run at full rate: end at 6 + 16/3 ms.
  const std::vector<Op> ops{all_reduce(4e6, Stream::DpComm), gemm(4e12), attention(6e12)};
  const auto on = run(ops, true, true);
  EXPECT_NEAR(on.step_time_s, 6e-3 + 16e-3 / 3, 1e-12);
  ASSERT_FALSE(on.timeline.empty());
  double gemm_end = -1.0;
  for (const auto& e : on.timeline) {
    if (e.rank == 0 && e.stream == Stream::Compute && gemm_end < 0) gemm_end = e.end_s;
  }
  EXPECT_NEAR(gemm_end, 5e-3, 1e-12);
}

TEST(Interference, CollectiveStartedDuringComputeIsSlowedOnNvlink) {
  // Compute comes first: the 6 ms collective starts while the GPU computes and takes 12 ms;
  // the 20 ms GEMM covers 12 / 1.25 = 9.6 ms of work under it, then 10.4 ms at full rate.
  const std::vector<Op> ops{gemm(20e12), all_reduce(4e6, Stream::DpComm)};
  const auto on = run(ops, true);
  EXPECT_NEAR(on.step_time_s, 22.4e-3, 1e-12);
  const auto off = run(ops, false);
  EXPECT_NEAR(off.step_time_s, 20e-3, 1e-12);
}

TEST(Interference, WithoutOverlapTimesAreIdentical) {
  // No communication at all, and an exposed collective on the compute stream (nothing
  // computes while it runs): interference changes nothing, to the bit.
  for (const auto& ops : {std::vector<Op>{gemm(1e12), attention(2e12), gemm(3e12)},
                          std::vector<Op>{gemm(1e12), all_reduce(4e6, Stream::Compute), gemm(2e12)}}) {
    const auto off = run(ops, false);
    const auto on = run(ops, true);
    EXPECT_EQ(std::memcmp(&off.step_time_s, &on.step_time_s, sizeof(double)), 0);
    EXPECT_EQ(std::memcmp(&off.breakdown.compute_s, &on.breakdown.compute_s, sizeof(double)), 0);
  }
}

TEST(Interference, TwoRunsAreBitIdentical) {
  const std::vector<Op> ops{gemm(3e12), all_reduce(4e6, Stream::DpComm), attention(5e12),
                            all_reduce(2e6, Stream::TpComm), gemm(7e12, {1})};
  const auto a = run(ops, true, true);
  const auto b = run(ops, true, true);
  EXPECT_EQ(std::memcmp(&a.step_time_s, &b.step_time_s, sizeof(double)), 0);
  ASSERT_EQ(a.timeline.size(), b.timeline.size());
  for (size_t i = 0; i < a.timeline.size(); ++i) {
    EXPECT_EQ(std::memcmp(&a.timeline[i].end_s, &b.timeline[i].end_s, sizeof(double)), 0);
  }
  EXPECT_GT(a.step_time_s, run(ops, false).step_time_s);
}

TEST(Interference, HeldSmsSlowOnlyBusyGemmsWhileATpCollectiveRuns) {
  // A 12 ms TP all-reduce (its kernel holding SMs) beside a 1 ms GEMM with busy SMs: 1.6 ms;
  // beside a plain GEMM of the same userbuffers workload: 1 ms (TP collectives under
  // tp_comm_overlap carry no NCCL interference factors).
  const auto busy = run({all_reduce(8e6, Stream::TpComm), busy_gemm(1e12)}, true);
  EXPECT_NEAR(busy.breakdown.compute_s, kHeldSlow * 1e-3, 1e-12);
  const auto plain = run({all_reduce(8e6, Stream::TpComm), gemm(1e12), busy_gemm(1e9, 16)}, true);
  EXPECT_NEAR(plain.breakdown.compute_s, 1e-3 + kHeldSlow * 1e-6, 1e-12);  // the busy 1 us GEMM held
  // In a workload without userbuffers the TP stream's collectives are NCCL kernels (the
  // backward's asynchronous gathers and reductions): the measured interference, 1.25 ms.
  const auto nccl = run({all_reduce(8e6, Stream::TpComm), gemm(1e12)}, true);
  EXPECT_NEAR(nccl.breakdown.compute_s, kGemmSlow * 1e-3, 1e-12);
  // Without interference the engine applies neither.
  const auto off = run({all_reduce(8e6, Stream::TpComm), busy_gemm(1e12)}, false);
  EXPECT_NEAR(off.breakdown.compute_s, 1e-3, 1e-12);
}

TEST(Interference, HeldSmsApplyOnlyWhileTheTpCollectiveIsInFlight) {
  // 6 ms TP all-reduce, 20 ms busy GEMM: 6 ms at 1/1.6 do 3.75 ms of work, the other 16.25 ms
  // run at full rate. A busy GEMM after the collective is not slowed at all.
  const auto partial = run({all_reduce(4e6, Stream::TpComm), busy_gemm(20e12)}, true);
  EXPECT_NEAR(partial.step_time_s, 6e-3 + (20e-3 - 6e-3 / kHeldSlow), 1e-12);
  const auto after = run({all_reduce(4e6, Stream::TpComm), gemm(10e12), busy_gemm(1e12, 16)}, true);
  EXPECT_NEAR(after.step_time_s, 11e-3, 1e-12);
}

TEST(Interference, HeldSmsAndNcclInterferenceMultiply) {
  // A DP and a TP all-reduce in flight over the whole 1 ms busy GEMM: 1.25 x 1.6 (assumed:
  // each was measured alone).
  const auto both = run({all_reduce(8e6, Stream::DpComm), all_reduce(8e6, Stream::TpComm),
                         busy_gemm(1e12)}, true);
  EXPECT_NEAR(both.breakdown.compute_s, kGemmSlow * kHeldSlow * 1e-3, 1e-12);
}

// A DeepEP token exchange over 4 ranks (16 experts, top 2) on `s`.
Op token_exchange(double bytes, Stream s) {
  Op op;
  op.shape = CollectiveSpec{CollectiveKind::TokenExchange, GroupKind::TP, {16, 2, 0, 0}};
  op.bytes = bytes;
  op.stream = s;
  return op;
}

TEST(Interference, DeepEpExchangesBesideComputeHoldSmsOfEveryGemm) {
  // A token exchange on ep_comm (combined 1F1B) beside a 1 ms plain GEMM: the GEMM runs with
  // DeepEP's SMs held, at the cost model's held-SM factor (1.6 here); attention is not slowed.
  const auto side = run({token_exchange(8e6, Stream::EpComm), gemm(1e12)}, true);
  EXPECT_NEAR(side.breakdown.compute_s, kHeldSlow * 1e-3, 1e-12);
  const auto attn = run({token_exchange(8e6, Stream::EpComm), attention(1e12)}, true);
  EXPECT_NEAR(attn.breakdown.compute_s, 1e-3, 1e-12);
  // NCCL's all-to-all on ep_comm carries no measured factor; on the compute stream nothing runs
  // beside the exchange; without interference nothing is slowed.
  Op a2a = token_exchange(8e6, Stream::EpComm);
  std::get<CollectiveSpec>(a2a.shape) = CollectiveSpec{CollectiveKind::AllToAll, GroupKind::TP, {}};
  EXPECT_NEAR(run({a2a, gemm(1e12)}, true).breakdown.compute_s, 1e-3, 1e-12);
  const std::vector<Op> inline_ops{token_exchange(8e6, Stream::Compute), gemm(1e12)};
  EXPECT_NEAR(run(inline_ops, true).breakdown.compute_s, 1e-3, 1e-12);
  EXPECT_NEAR(run({token_exchange(8e6, Stream::EpComm), gemm(1e12)}, false).breakdown.compute_s, 1e-3, 1e-12);
}

TEST(Interference, HeldSlowdownBelowOneIsRejected) {
  class Faster : public test::SimpleCost {
   public:
    double held_sm_slowdown(const Op&) const override { return 0.9; }
  };
  Workload w;
  w.layout = RankLayout(1, 1, 1, 1);
  Program p;
  p.labels = {"op"};
  p.ops = {busy_gemm(1e12)};
  w.programs.push_back(p);
  w.program_of_rank = {0};
  EXPECT_THROW(cost_workload(w, Faster{}), std::invalid_argument);
}

TEST(Interference, DeadlockAfterATimedWaitIsReported) {
  // Rank 1 computes beside a receive that never completes (a timed wait), then waits on it.
  test::StarPlatform platform(2, 1e9);
  InterferingCost cost;
  Workload w;
  w.layout = RankLayout(1, 1, 1, 2);
  Program first, last;
  first.labels = last.labels = {"op"};
  first.ops = {gemm(1e12)};
  Op recv;
  recv.shape = P2PSpec{Peer::None, Peer::PrevStage};
  recv.bytes = 1e6;
  recv.stream = Stream::PpComm;
  last.ops = {recv, gemm(1e12), gemm(1e12, {0})};
  w.programs = {first, last};
  w.program_of_rank = {0, 1};
  cost_workload(w, cost);
  try {
    simulate_step(w, platform, cost);
    FAIL() << "expected a deadlock error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
  }
}

// A host copy of activation offloading (a compute unit on a copy stream, timed by its flops
// here) adds the cost model's delay to each kernel it runs beside, spread over the kernel's
// duration; kernels after it and copies with interference off are unaffected.
Op host_copy(double flops, Stream s) {
  Op op = gemm(flops);
  op.shape = MemBoundShape{MemKernel::HostCopy};
  op.stream = s;
  return op;
}

TEST(Interference, KernelsBesideHostCopiesTakeTheMeasuredDelayLonger) {
  // A 5 ms device-to-host copy beside two 1 ms GEMMs: each takes 20 us longer.
  const std::vector<Op> one{host_copy(5e12, Stream::D2H), gemm(1e12), gemm(1e12)};
  EXPECT_NEAR(run(one, false).breakdown.compute_s, 2e-3, 1e-12);
  EXPECT_NEAR(run(one, true).breakdown.compute_s, 2e-3 + 40e-6, 1e-12);
  // Both directions at once: 30 us per GEMM.
  const std::vector<Op> both{host_copy(5e12, Stream::D2H), host_copy(5e12, Stream::H2D), gemm(1e12)};
  EXPECT_NEAR(run(both, true).breakdown.compute_s, 1e-3 + 30e-6, 1e-12);
  // A 0.5 ms copy beside a 1 ms GEMM: the GEMM runs at 1/1.02 of its rate until the copy ends.
  const std::vector<Op> half{host_copy(0.5e12, Stream::D2H), gemm(1e12)};
  EXPECT_NEAR(run(half, true).step_time_s, 0.5e-3 + (1e-3 - 0.5e-3 / 1.02), 1e-12);
  // A memory-bound kernel: the fixed part and its share.
  Op add = gemm(1e12);
  add.shape = MemBoundShape{MemKernel::Elementwise};
  const std::vector<Op> mem{host_copy(5e12, Stream::H2D), add};
  EXPECT_NEAR(run(mem, true).breakdown.compute_s, 1e-3 * 1.02 + 5e-6, 1e-12);
}

}  // namespace
}  // namespace clustersim::sim
