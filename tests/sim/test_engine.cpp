// Engine tests on a star platform whose flow times are known exactly (zero latency links).
#include <gtest/gtest.h>

#include <cstring>

#include "fake_platform.hpp"
#include "sim/detail/engine_impl.hpp"
#include "sim/engine.hpp"

namespace clustersim::sim {
namespace {

Op gemm(double flops, Stream s = Stream::Compute, std::vector<std::uint32_t> deps = {}) {
  Op op;
  op.shape = GemmShape{1, 1, 1, DType::BF16};
  op.flops = flops;
  op.stream = s;
  op.deps = std::move(deps);
  return op;
}

Op coll(CollectiveKind kind, GroupKind group, double bytes, Stream s = Stream::Compute) {
  Op op;
  op.shape = CollectiveSpec{kind, group, {}};
  op.bytes = bytes;
  op.stream = s;
  return op;
}

Op p2p(Peer send, Peer recv, double bytes) {
  Op op;
  op.shape = P2PSpec{send, recv};
  op.bytes = bytes;
  return op;
}

Workload single_program(RankLayout layout, std::vector<Op> ops) {
  Workload w;
  w.layout = layout;
  Program p;
  p.labels = {"op"};
  p.ops = std::move(ops);
  w.programs.push_back(std::move(p));
  w.program_of_rank.assign(static_cast<size_t>(layout.world()), 0);
  return w;
}

StepResult run(Workload w, const test::StarPlatform& platform, const test::SimpleCost& cost,
               bool timeline = false) {
  cost_workload(w, cost);
  EngineOptions opt;
  opt.record_timeline = timeline;
  return simulate_step(w, platform, cost, opt);
}

TEST(Engine, ComputeOpsRunBackToBack) {
  test::StarPlatform platform(1, 1e9);
  test::SimpleCost cost;
  auto r = run(single_program(RankLayout(1, 1, 1, 1), {gemm(1e12), gemm(1e12), gemm(2e12)}),
               platform, cost);
  EXPECT_DOUBLE_EQ(r.step_time_s, 4e-3);
  EXPECT_DOUBLE_EQ(r.breakdown.compute_s, 4e-3);
  EXPECT_DOUBLE_EQ(r.breakdown.exposed_comm_s, 0.0);
  EXPECT_DOUBLE_EQ(r.breakdown.bubble_s, 0.0);
  EXPECT_EQ(r.events, 1u);  // three ops fused into one simulated interval
}

TEST(Engine, RingAllReduceTakesTwiceTheRingShareOverTheLink) {
  test::StarPlatform platform(4, 1e9);
  test::SimpleCost cost(10e-6, 1e-6);
  auto r = run(single_program(RankLayout(4, 1, 1, 1),
                              {coll(CollectiveKind::AllReduce, GroupKind::TP, 4e6)}),
               platform, cost);
  // 2 (p-1)/p * 4 MB = 6 MB at 1 GB/s, then base + 2(p-1) steps of latency.
  EXPECT_NEAR(r.step_time_s, 6e-3 + 10e-6 + 6 * 1e-6, 1e-12);
  EXPECT_NEAR(r.breakdown.exposed_comm_s, r.step_time_s, 1e-12);
}

// NCCL's latency terms include the wire latency that the flows already carry, so a phase nets
// the route latency of its comm that finished last, and a receive carries the route latency from
// its sender. Ring of three whose GPU 2 has links of D: 0 -> 1 carries 0, 1 -> 2 and 2 -> 0 carry
// D, so every phase takes D and each rank's last comm carried D (rank 0's is its receive from 2,
// whereas it sends over a route of 0). Netted right, the all-reduce takes the plan's latency
// (base + 4 steps) and the bytes' time; netting rank 0's receive by its own send route (0) made
// it D longer (2026-12-05, the engine mutated so).
TEST(Engine, APhaseNetsTheRouteLatencyItsLastCommCarriedFromItsSender) {
  const double d = 10e-6;
  test::StarPlatform platform(3, 1e12, 8, {0.0, 0.0, d});
  test::SimpleCost cost(200e-6, 1e-6);
  auto r = run(single_program(RankLayout(3, 1, 1, 1), {coll(CollectiveKind::AllReduce, GroupKind::TP, 3e3)}),
               platform, cost);
  // 2 (p-1)/p * 3 kB at 1 TB/s per phase chain: 4 ns; base 200 us + 2(p-1) steps of 1 us.
  EXPECT_NEAR(r.step_time_s, 200e-6 + 4 * 1e-6, 1e-8);
}

TEST(Engine, AllToAllFlowsShareTheNic) {
  test::StarPlatform platform(3, 1e9);
  test::SimpleCost cost;
  auto r = run(single_program(RankLayout(3, 1, 1, 1),
                              {coll(CollectiveKind::AllToAll, GroupKind::TP, 3e6)}),
               platform, cost);
  // Each rank sends 1 MB to each of 2 peers: two flows share each up and each down link.
  EXPECT_NEAR(r.step_time_s, 2e-3, 1e-12);
}

TEST(Engine, CrossStreamDependencyWaitsAndCountsAsExposed) {
  test::StarPlatform platform(4, 1e9);
  test::SimpleCost cost;
  auto r = run(single_program(RankLayout(4, 1, 1, 1),
                              {coll(CollectiveKind::AllReduce, GroupKind::TP, 4e6, Stream::TpComm),
                               gemm(1e12), gemm(1e12, Stream::Compute, {0})}),
               platform, cost);
  EXPECT_NEAR(r.step_time_s, 7e-3, 1e-12);
  EXPECT_NEAR(r.breakdown.compute_s, 2e-3, 1e-12);
  EXPECT_NEAR(r.breakdown.exposed_comm_s, 5e-3, 1e-12);
}

TEST(Engine, PipelineSendRecvAndBubble) {
  test::StarPlatform platform(2, 1e9);
  test::SimpleCost cost;
  Workload w;
  w.layout = RankLayout(1, 1, 1, 2);
  Program first, last;
  first.labels = last.labels = {"op"};
  first.ops = {gemm(1e12), p2p(Peer::NextStage, Peer::None, 1e6)};
  last.ops = {p2p(Peer::None, Peer::PrevStage, 1e6), gemm(1e12)};
  w.programs = {first, last};
  w.program_of_rank = {0, 1};
  auto r = run(w, platform, cost);
  EXPECT_NEAR(r.step_time_s, 3e-3, 1e-12);
  EXPECT_NEAR(r.breakdown.compute_s, 1e-3, 1e-12);
  EXPECT_NEAR(r.breakdown.bubble_s, 2e-3, 1e-12);
  EXPECT_NEAR(r.breakdown.compute_s + r.breakdown.exposed_comm_s + r.breakdown.bubble_s,
              r.step_time_s, 1e-12);
}

// The tied embedding's all-reduce (EMB: first and last stage) on the compute stream: the last
// stage reaches it 10 ms before the first, which is still computing. That wait is pipeline time
// (bubble); only the all-reduce itself (1 ms at 1 GB/s) is exposed. Over a TP group the same
// wait for a peer of the same stage stays exposed.
TEST(Engine, WaitForTheOtherStageAtAnEmbeddingAllReduceIsBubble) {
  test::StarPlatform platform(2, 1e9);
  test::SimpleCost cost;
  auto two_programs = [](RankLayout layout, GroupKind group) {
    Workload w;
    w.layout = layout;
    Program late, early;
    late.labels = early.labels = {"op"};
    late.ops = {gemm(1e13), coll(CollectiveKind::AllReduce, group, 1e6)};
    early.ops = {coll(CollectiveKind::AllReduce, group, 1e6)};
    w.programs = {late, early};
    w.program_of_rank = {0, 1};
    return w;
  };
  const auto emb = run(two_programs(RankLayout(1, 1, 1, 2), GroupKind::EMB), platform, cost);
  const double transfer = emb.step_time_s - 10e-3;
  EXPECT_NEAR(transfer, 1e-3, 1e-4);
  EXPECT_NEAR(emb.breakdown.bubble_s, 10e-3 / 2, 1e-12);
  EXPECT_NEAR(emb.breakdown.exposed_comm_s, transfer, 1e-12);
  EXPECT_NEAR(emb.breakdown.exposed_by_group_s[static_cast<size_t>(GroupKind::EMB)], transfer, 1e-12);
  const auto tp = run(two_programs(RankLayout(2, 1, 1, 1), GroupKind::TP), platform, cost);
  EXPECT_NEAR(tp.step_time_s, emb.step_time_s, 1e-12);
  EXPECT_NEAR(tp.breakdown.bubble_s, 0.0, 1e-12);
  EXPECT_NEAR(tp.breakdown.exposed_comm_s, transfer + 10e-3 / 2, 1e-12);
}

TEST(Engine, DeadlockIsReportedNotHung) {
  test::StarPlatform platform(2, 1e9);
  test::SimpleCost cost;
  Workload w;
  w.layout = RankLayout(1, 1, 1, 2);
  Program first, last;
  first.labels = last.labels = {"op"};
  first.ops = {gemm(1e12)};
  last.ops = {p2p(Peer::None, Peer::PrevStage, 1e6)};
  w.programs = {first, last};
  w.program_of_rank = {0, 1};
  try {
    run(w, platform, cost);
    FAIL() << "expected a deadlock error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
  }
}

TEST(Engine, SameJobTwiceGivesBitIdenticalResults) {
  test::StarPlatform platform(4, 1e9);
  test::SimpleCost cost(3e-6, 1e-6);
  auto w = single_program(RankLayout(2, 1, 2, 1),
                          {coll(CollectiveKind::AllGather, GroupKind::DP, 3e6, Stream::DpComm),
                           gemm(1.3e12), coll(CollectiveKind::ReduceScatter, GroupKind::TP, 5e6),
                           gemm(0.7e12, Stream::Compute, {0})});
  auto a = run(w, platform, cost, true);
  auto b = run(w, platform, cost, true);
  EXPECT_EQ(std::memcmp(&a.step_time_s, &b.step_time_s, sizeof(double)), 0);
  EXPECT_EQ(a.events, b.events);
  ASSERT_EQ(a.timeline.size(), b.timeline.size());
  for (size_t i = 0; i < a.timeline.size(); ++i) {
    EXPECT_EQ(a.timeline[i].rank, b.timeline[i].rank);
    EXPECT_EQ(a.timeline[i].start_s, b.timeline[i].start_s);
  }
}

// The power state: GEMMs and attention are divided by the model's boost at the rank's
// compute-bound share (host-side ops left out of the share); memory-bound ops are untouched.
class BoostCost : public test::SimpleCost {
 public:
  double clock_boost(const Op& op, double share) const override {
    last_share = share;
    return std::holds_alternative<GemmShape>(op.shape) ? 1.25 : 1.0;
  }
  mutable double last_share = -1.0;
};

TEST(PowerState, DividesComputeBoundOpsByTheBoostAtTheRanksShare) {
  Op add;
  add.shape = MemBoundShape{MemKernel::Elementwise};
  add.flops = 1e12;  // SimpleCost: 1 ms
  Op host;
  host.shape = MemBoundShape{MemKernel::HostOptimizer};
  host.flops = 5e12;
  Workload w = single_program(RankLayout(1, 1, 1, 1), {gemm(3e12), add, host});
  BoostCost cost;
  cost_workload(w, cost);
  EXPECT_DOUBLE_EQ(power_state_share(w.programs[0], cost), 0.75);  // 3 ms of 4, host left out
  apply_power_state(w, cost);
  EXPECT_DOUBLE_EQ(cost.last_share, 0.75);
  EXPECT_DOUBLE_EQ(w.programs[0].ops[0].duration_s, 3e-3 / 1.25);
  EXPECT_DOUBLE_EQ(w.programs[0].ops[1].duration_s, 1e-3);
  EXPECT_DOUBLE_EQ(w.programs[0].ops[2].duration_s, 5e-3);
}

// With a sustained-state ratio k (the op's rate alone over its costed rate), the boost curve's
// share counts GEMMs at their sustained time (duration / k) and each GEMM takes
// duration / (k x boost); a ratio outside (0, 2] is an error.
class StateCost : public BoostCost {
 public:
  explicit StateCost(double k) : k_(k) {}
  double sustained_state(const Op& op) const override {
    return std::holds_alternative<GemmShape>(op.shape) ? k_ : 1.0;
  }

 private:
  double k_;
};

TEST(PowerState, SharesAndDurationsTakeTheSustainedStateRatio) {
  Op add;
  add.shape = MemBoundShape{MemKernel::Elementwise};
  add.flops = 1e12;  // SimpleCost: 1 ms
  Workload w = single_program(RankLayout(1, 1, 1, 1), {gemm(3e12), add});
  StateCost cost(0.8);
  cost_workload(w, cost);
  EXPECT_DOUBLE_EQ(power_state_share(w.programs[0], cost), 3.75 / 4.75);
  apply_power_state(w, cost);
  EXPECT_DOUBLE_EQ(cost.last_share, 3.75 / 4.75);
  EXPECT_DOUBLE_EQ(w.programs[0].ops[0].duration_s, 3e-3 / (0.8 * 1.25));
  EXPECT_DOUBLE_EQ(w.programs[0].ops[1].duration_s, 1e-3);
  for (double bad : {0.0, 2.5}) {
    Workload v = single_program(RankLayout(1, 1, 1, 1), {gemm(1e12)});
    StateCost c(bad);
    cost_workload(v, c);
    EXPECT_THROW(apply_power_state(v, c), std::invalid_argument) << bad;
  }
}

TEST(PowerState, ABoostBelowOneIsAnError) {
  class Slow : public test::SimpleCost {
    double clock_boost(const Op&, double) const override { return 0.9; }
  };
  Workload w = single_program(RankLayout(1, 1, 1, 1), {gemm(1e12)});
  Slow cost;
  cost_workload(w, cost);
  EXPECT_THROW(apply_power_state(w, cost), std::invalid_argument);
}

TEST(EnginePlan, FusesComputeRunsAndSplitsOnCrossStreamDeps) {
  Program p;
  p.labels = {"op"};
  p.ops = {gemm(1), gemm(1), coll(CollectiveKind::AllReduce, GroupKind::TP, 1, Stream::TpComm),
           gemm(1), gemm(1, Stream::Compute, {2}), gemm(1)};
  for (auto& op : p.ops) op.duration_s = op.is_compute() ? 1.0 : -1.0;
  const auto plan = detail::plan_program(p);
  ASSERT_EQ(plan.streams.size(), 2u);
  const auto& compute = plan.streams[0];
  ASSERT_EQ(compute.units.size(), 2u);
  EXPECT_DOUBLE_EQ(compute.units[0].duration_s, 3.0);  // ops 0, 1, 3
  EXPECT_EQ(compute.units[1].deps, std::vector<std::uint32_t>{2});
  EXPECT_EQ(plan.streams[1].units[0].waiters, 1u << static_cast<unsigned>(Stream::Compute));
}

TEST(EnginePlan, RejectsForwardDependencies) {
  Program p;
  p.labels = {"op"};
  p.ops = {gemm(1, Stream::Compute, {1}), gemm(1)};
  for (auto& op : p.ops) op.duration_s = 1.0;
  EXPECT_THROW(detail::plan_program(p), std::invalid_argument);
}

TEST(TpFold, DenseGroupsFoldExpertGroupsAcrossTpDoNot) {
  // Megatron's order: DP and PP peers share the TP coordinate, so TP coordinate 0 can stand
  // for its group.
  Workload dense = single_program(RankLayout(4, 1, 2, 2),
                                  {coll(CollectiveKind::AllReduce, GroupKind::DP, 1e6, Stream::DpComm),
                                   p2p(Peer::NextStage, Peer::None, 1e6)});
  EXPECT_EQ(detail::tp_fold_problem(dense), "");
  // ep 4 with etp 1 over tp 4: an expert group is a TP group's ranks, across TP coordinates.
  const RankLayout moe(4, 1, 2, 1, 4, 1,
                       {GroupKind::TP, GroupKind::CP, GroupKind::EP, GroupKind::DP, GroupKind::PP});
  Workload experts = single_program(moe, {coll(CollectiveKind::AllToAll, GroupKind::EP, 1e6)});
  EXPECT_NE(detail::tp_fold_problem(experts).find("span TP coordinates"), std::string::npos);
  // Different programs on the ranks of one TP group.
  Workload split = single_program(RankLayout(2, 1, 2, 1), {gemm(1e9)});
  split.programs.push_back(split.programs.front());
  split.program_of_rank = {0, 1, 0, 1};
  EXPECT_NE(detail::tp_fold_problem(split).find("different programs"), std::string::npos);
  EXPECT_EQ(detail::tp_fold_problem(single_program(RankLayout(1, 1, 4, 1), {gemm(1e9)})), "tp is 1");
}

TEST(Subprocess, ReturnsChildBytesAndChildErrors) {
  EXPECT_EQ(run_in_subprocess([] { return std::string("abc\0def", 7); }), std::string("abc\0def", 7));
  EXPECT_THROW(run_in_subprocess([]() -> std::string { throw std::runtime_error("boom"); }),
               std::runtime_error);
}

}  // namespace
}  // namespace clustersim::sim
