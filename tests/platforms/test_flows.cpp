// Flows on the built SimGrid platforms: exact single-flow times per path class, sharing of a
// NIC, fairness whatever the route latency, bisection throughput and oversubscription.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "platforms/platform_spec.hpp"
#include "platforms/summary.hpp"
#include "platforms/topology.hpp"
#include "tests/platforms/flow_harness.hpp"

namespace clustersim::platforms {
namespace {

using test::Flow;
using test::gpu;
using test::run_flows;

constexpr double kGiB = 1024.0 * 1024 * 1024;

double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

class EachPlatform : public ::testing::TestWithParam<std::string> {};

// First GPU after GPU 0 whose path from GPU 0 is of class `cls`.
int first_of(const Topology& t, PathClass cls) {
  for (int g = 1; g < t.gpus(); ++g)
    if (t.path(0, g).cls == cls) return g;
  return -1;
}

// One flow takes exactly latency + size / bandwidth, on every path class.
TEST_P(EachPlatform, OneFlowTakesLatencyPlusSizeOverBandwidth) {
  PlatformSpec s = find_platform(GetParam());
  s.fabric.tiers = 3;  // with 2 spine groups, so that some paths reach the core
  const int su = s.node.nvlink_domain_size * s.fabric.domains_per_su;
  int gpus = su;
  while (Topology(s, gpus).pods() < 2) gpus += su;  // one SU into the second spine group
  const Topology t(s, gpus);
  ASSERT_EQ(t.pods(), 2);
  struct Case { std::string dst; double latency, bandwidth; };
  std::vector<Case> cases;
  for (PathClass cls : {PathClass::NVLink, PathClass::Leaf, PathClass::Spine, PathClass::Core}) {
    const int dst = first_of(t, cls);
    ASSERT_GT(dst, 0) << to_string(cls);
    const double bw = cls == PathClass::NVLink ? s.node.nvlink_bandwidth.value : s.node.nic_bandwidth.value;
    cases.push_back({gpu(dst), t.path_latency(0, dst), bw});
  }
  cases.push_back({Topology::cpu_name(0), 0.0, s.node.host_link_bandwidth.value});
  for (const Case& c : cases) {
    const double time = run_flows(s, gpus, {{gpu(0), c.dst, kGiB}})[0];
    const double expected = c.latency + kGiB / c.bandwidth;
    EXPECT_NEAR(time, expected, 1e-9 * expected) << GetParam() << " to " << c.dst;
  }
}

// SimGrid's route is Topology's path: same links, same latency.
TEST_P(EachPlatform, SimGridRouteIsTheTopologyPath) {
  const PlatformSpec s = find_platform(GetParam());
  const int gpus = 4 * s.node.nvlink_domain_size * 8;
  const Topology t(s, gpus);
  for (int dst : {1, s.node.nvlink_domain_size, gpus - 1}) {
    const test::RouteView r = test::simgrid_route(s, gpus, gpu(0), gpu(dst));
    const Path p = t.path(0, dst);
    ASSERT_EQ(r.links.size(), static_cast<size_t>(p.count));
    for (int i = 0; i < p.count; ++i) EXPECT_EQ(r.links[static_cast<size_t>(i)], t.link_name(p.links[static_cast<size_t>(i)]));
    EXPECT_DOUBLE_EQ(r.latency, t.path_latency(0, dst));
  }
}

// 8 flows from other domains into one GPU share its NIC, whatever their route: the NIC is busy
// from the first flow's arrival to the end, and no flow gets more than its share.
TEST_P(EachPlatform, EightFlowsIntoOneNicShareIt) {
  const PlatformSpec s = find_platform(GetParam());
  const int domain = s.node.nvlink_domain_size;
  const int gpus = 16 * domain;
  const Topology t(s, gpus);
  std::vector<Flow> flows;
  double first_arrival = 1.0;
  for (int i = 1; i <= 8; ++i) {
    const int src = i * domain + i - 1;  // domain i, local GPU i-1: same rail and cross rail
    flows.push_back({gpu(src), gpu(0), kGiB / 8});
    first_arrival = std::min(first_arrival, t.path_latency(src, 0));
  }
  const auto done = run_flows(s, gpus, flows);
  const double busy = kGiB / s.node.nic_bandwidth.value;
  EXPECT_NEAR(max_of(done), first_arrival + busy, 1e-9 * busy);
  EXPECT_GT(*std::min_element(done.begin(), done.end()), busy * (1 - 1e-3));
}

// All GPUs of the first half of the domains send to all GPUs of the second half: the NICs are
// the bottleneck and the aggregate reaches the summary's bisection bandwidth.
TEST_P(EachPlatform, AllToAllAcrossTheTreeReachesBisection) {
  const PlatformSpec s = find_platform(GetParam());
  const int domain = s.node.nvlink_domain_size;
  const int gpus = domain == 8 ? 64 : 2 * domain;
  const double bytes = 16e6;
  std::vector<Flow> flows;
  for (int a = 0; a < gpus / 2; ++a)
    for (int b = gpus / 2; b < gpus; ++b) flows.push_back({gpu(a), gpu(b), bytes});
  const auto done = run_flows(s, gpus, flows);
  const double throughput = bytes * static_cast<double>(flows.size()) / max_of(done);
  const double bisection = summarize(s, gpus).bisection_bandwidth;
  EXPECT_NEAR(throughput, bisection, 1e-3 * bisection) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Catalog, EachPlatform,
                         ::testing::Values("hgx_h100", "hgx_h200", "hgx_b200", "gb200_nvl72", "gb200_nvl36",
                                           "hgx_b300", "gb300_nvl72"));

// Two flows of one GPU, one turning at its leaf and one crossing the spine, share the NIC
// equally although their route latencies differ (CM02 alone would favour the shorter one).
TEST(Sharing, FairWhateverTheRouteLatency) {
  const PlatformSpec s = find_platform("hgx_h100");
  const Topology t(s, 2048);
  ASSERT_EQ(t.path(0, 8).cls, PathClass::Leaf);
  ASSERT_EQ(t.path(0, 9).cls, PathClass::Spine);
  const auto done = run_flows(s, 2048, {{gpu(0), gpu(8), kGiB}, {gpu(0), gpu(9), kGiB}});
  EXPECT_NEAR(done[0], done[1], 1e-6);
  EXPECT_NEAR(done[1], 2 * kGiB / s.node.nic_bandwidth.value, 2e-6);
}

// Every NIC of a full scalable unit sends across its leaf's uplinks: a 2:1 leaf halves the
// throughput; 2:1 at the spine tier halves traffic between spine groups.
TEST(Sharing, OversubscribedTierHalvesCrossTierThroughput) {
  PlatformSpec s = find_platform("hgx_h100");
  std::vector<Flow> flows;
  for (int g = 0; g < 256; ++g) flows.push_back({gpu(g), gpu((g + 128 + 4) % 256), 256e6});  // rail r -> r+4
  const double latency = Topology(s, 256).path_latency(0, 132);  // every flow crosses a spine
  const double full = max_of(run_flows(s, 256, flows)) - latency;
  EXPECT_NEAR(full, 256e6 / s.node.nic_bandwidth.value, 1e-9);  // non-blocking: NIC speed
  s.fabric.oversubscription.leaf = 2;
  EXPECT_NEAR((max_of(run_flows(s, 256, flows)) - latency) / full, 2.0, 1e-9);

  PlatformSpec spine = find_platform("hgx_h100");
  spine.fabric.tiers = 3;  // 2,048 GPUs = 2 spine groups of 4 SUs
  std::vector<Flow> cross;
  for (int g = 0; g < 2048; ++g) cross.push_back({gpu(g), gpu((g + 1024) % 2048), 64e6});
  const double core_latency = Topology(spine, 2048).path_latency(0, 1024);  // every flow crosses a core
  const double spine_full = max_of(run_flows(spine, 2048, cross)) - core_latency;
  spine.fabric.oversubscription.spine = 2;
  EXPECT_NEAR((max_of(run_flows(spine, 2048, cross)) - core_latency) / spine_full, 2.0, 1e-9);
}

}  // namespace
}  // namespace clustersim::platforms
