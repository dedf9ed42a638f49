// sim::CornerCostModel: the inner model's times moved to one end of its stated uncertainty.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

#include "fake_platform.hpp"
#include "sim/cost_corner.hpp"
#include "sim/engine.hpp"

namespace clustersim::sim {
namespace {

// SimpleCost with a stated uncertainty and non-trivial ratio answers, to check forwarding.
class BoundedCost : public test::SimpleCost {
 public:
  explicit BoundedCost(CostUncertainty u) : test::SimpleCost(5e-6, 1e-6), u_(std::move(u)) {}
  CostUncertainty uncertainty() const override { return u_; }
  Interference interference(ComputeClass, double) const override { return {1.2, 1.3}; }
  double held_sm_slowdown(const Op&) const override { return 1.1; }
  double clock_boost(const Op&, double) const override { return 1.05; }
  double sustained_state(const Op&) const override { return 0.95; }
  CollectiveParams collective_params(CollectiveKind, double, int, LinkClass) const override {
    return {5e-6, 1e-6, 0.8};
  }

 private:
  CostUncertainty u_;
};

CostUncertainty stated() {
  CostUncertainty u;
  u.stated = true;
  u.compute = {RelativeBounds{-0.02, 0.03}, RelativeBounds{-0.30, 0.20}, RelativeBounds{-0.01, 0.01}};
  u.memory_bound_small = {-0.07, 0.07};
  u.small_bytes = 8.0 * 1024 * 1024;
  u.network = {-0.02, 0.05};
  return u;
}

Op compute(OpShape shape, double flops, double bytes = 0.0) {
  Op op;
  op.shape = shape;
  op.flops = flops;
  op.bytes = bytes;
  return op;
}

CornerCostModel corner(CostCorner c, CostUncertainty u = stated()) {
  return CornerCostModel(std::make_unique<BoundedCost>(std::move(u)), c);
}

TEST(CostCorner, EachComputeClassTakesItsOwnBoundAtEachEnd) {
  const Op g = compute(GemmShape{1, 1, 1, DType::BF16}, 1e12);  // 1 ms inner
  const Op a = compute(AttentionShape{}, 1e12);
  const Op big = compute(MemBoundShape{MemKernel::Norm}, 1e12, 64.0 * 1024 * 1024);
  const Op small = compute(MemBoundShape{MemKernel::Norm}, 1e12, 1024.0 * 1024);
  const auto fast = corner(CostCorner::Fast), slow = corner(CostCorner::Slow);
  EXPECT_DOUBLE_EQ(fast.compute_time(g), 1e-3 * 0.98);
  EXPECT_DOUBLE_EQ(slow.compute_time(g), 1e-3 * 1.03);
  EXPECT_DOUBLE_EQ(fast.compute_time(a), 1e-3 * 0.70);
  EXPECT_DOUBLE_EQ(slow.compute_time(a), 1e-3 * 1.20);
  EXPECT_DOUBLE_EQ(fast.compute_time(big), 1e-3 * 0.99);
  EXPECT_DOUBLE_EQ(slow.compute_time(small), 1e-3 * 1.07);
  EXPECT_DOUBLE_EQ(fast.compute_time(small), 1e-3 * 0.93);
}

TEST(CostCorner, HostKernelsKeepTheInnerTime) {
  const Op host = compute(MemBoundShape{MemKernel::HostOptimizer}, 1e12, 1024.0);
  EXPECT_DOUBLE_EQ(corner(CostCorner::Slow).compute_time(host), 1e-3);
  EXPECT_DOUBLE_EQ(corner(CostCorner::Fast).compute_time(host), 1e-3);
}

TEST(CostCorner, OnlyNetworkTransfersChangeTheirBandwidthTerm) {
  const auto slow = corner(CostCorner::Slow), fast = corner(CostCorner::Fast);
  const auto net = slow.collective_params(CollectiveKind::AllReduce, 1e6, 8, LinkClass::Network);
  EXPECT_DOUBLE_EQ(net.bandwidth_efficiency, 0.8 / 1.05);
  EXPECT_DOUBLE_EQ(net.base_latency_s, 5e-6);
  EXPECT_DOUBLE_EQ(net.step_latency_s, 1e-6);
  EXPECT_DOUBLE_EQ(
      fast.protocol_collective_params(CollectiveKind::AllGather, 1e6, 8, LinkClass::Network,
                                      NcclProtocol::Simple)
          .bandwidth_efficiency,
      0.8 / 0.98);
  EXPECT_DOUBLE_EQ(slow.p2p_params(1e6, LinkClass::Network).bandwidth_efficiency, 1.0 / 1.05);
  EXPECT_DOUBLE_EQ(
      slow.collective_params(CollectiveKind::AllReduce, 1e6, 8, LinkClass::NVLink).bandwidth_efficiency,
      0.8);
  EXPECT_DOUBLE_EQ(slow.p2p_params(1e6, LinkClass::NVLink).bandwidth_efficiency, 1.0);
}

TEST(CostCorner, RatiosAreTheInnerModels) {
  const auto slow = corner(CostCorner::Slow);
  const Op g = compute(GemmShape{1, 1, 1, DType::BF16}, 1e12);
  EXPECT_DOUBLE_EQ(slow.interference(ComputeClass::Gemm, 1e6).compute_slowdown, 1.2);
  EXPECT_DOUBLE_EQ(slow.held_sm_slowdown(g), 1.1);
  EXPECT_DOUBLE_EQ(slow.clock_boost(g, 0.5), 1.05);
  EXPECT_DOUBLE_EQ(slow.sustained_state(g), 0.95);
  EXPECT_NE(slow.describe().find("slow end"), std::string::npos);
  EXPECT_TRUE(slow.uncertainty().stated);
}

TEST(CostCorner, RefusesAModelWithoutStatedBoundsOrWithInvertedOnes) {
  EXPECT_THROW(CornerCostModel(std::make_unique<test::SimpleCost>(), CostCorner::Slow),
               std::invalid_argument);
  EXPECT_THROW(CornerCostModel(nullptr, CostCorner::Slow), std::invalid_argument);
  CostUncertainty inverted = stated();
  inverted.compute[0] = {0.02, 0.03};  // lo above 0: the fast end would be slower
  EXPECT_THROW(corner(CostCorner::Fast, inverted), std::invalid_argument);
  CostUncertainty vanishing = stated();
  vanishing.network = {-1.0, 0.0};  // zero time at the fast end
  EXPECT_THROW(corner(CostCorner::Fast, vanishing), std::invalid_argument);
}

TEST(CostCorner, AStepIsLongerAtTheSlowEndThanAtTheFastEnd) {
  test::StarPlatform platform(2, 1e9);
  Workload w;
  w.layout = RankLayout(2, 1, 1, 1);
  Program p;
  p.labels = {"op"};
  p.ops.push_back(compute(GemmShape{1, 1, 1, DType::BF16}, 1e12));
  w.programs.push_back(p);
  w.program_of_rank.assign(2, 0);
  double t[2];
  for (const CostCorner c : {CostCorner::Fast, CostCorner::Slow}) {
    const auto cost = corner(c);
    Workload copy = w;
    cost_workload(copy, cost);
    t[static_cast<int>(c)] = simulate_step(copy, platform, cost, EngineOptions{}).step_time_s;
  }
  EXPECT_NEAR(t[0], 0.98e-3, 1e-12);
  EXPECT_NEAR(t[1], 1.03e-3, 1e-12);
}

}  // namespace
}  // namespace clustersim::sim
