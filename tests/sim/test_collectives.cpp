// Flow plans of the collective algorithms (sim/detail/collectives.hpp): what each rank sends,
// checked over whole groups, and the engine's time for them on a star of known link rates.
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <vector>

#include "fake_platform.hpp"
#include "sim/detail/collectives.hpp"
#include "sim/engine.hpp"

namespace clustersim::sim {
namespace {

using detail::CollectiveCall;
using detail::CollectivePlan;
using detail::GroupShape;

struct GroupPlans {
  std::vector<int> members;
  std::vector<GroupShape> shapes;
  std::vector<CollectivePlan> plans;
};

// The pairwise all-to-all plan of every member of `members` (domains of `domain` GPUs).
GroupPlans all_to_all_plans(std::vector<int> members, int domain, double bytes) {
  GroupPlans g;
  g.members = std::move(members);
  const auto& pairwise = detail::collective_algorithms().back();
  EXPECT_STREQ(pairwise.name, "pairwise");
  for (int i = 0; i < static_cast<int>(g.members.size()); ++i) {
    g.shapes.push_back(detail::group_shape(g.members, i, domain));
  }
  for (int i = 0; i < static_cast<int>(g.members.size()); ++i) {
    CollectiveCall c;
    c.kind = CollectiveKind::AllToAll;
    c.bytes = bytes;
    c.members = &g.members;
    c.index = i;
    c.domain_size = domain;
    c.shape = &g.shapes[static_cast<size_t>(i)];
    c.nvl.bandwidth_efficiency = c.net.bandwidth_efficiency = 1.0;
    g.plans.push_back(pairwise.plan(c));
  }
  return g;
}

TEST(PairwiseAllToAll, AcrossDomainsOneFlowPerRemoteDomainWithThePerPeerNicLoads) {
  // 64 ranks on 8 domains of 8 (an EP group of 64 on 8 HGX nodes), 64 MB per rank.
  std::vector<int> members(64);
  std::iota(members.begin(), members.end(), 0);
  const double bytes = 64e6;
  const auto g = all_to_all_plans(members, 8, bytes);
  std::map<int, double> net_in, net_out, nvl_in;
  std::map<int, std::map<int, int>> lane_in;  // rank -> lane -> incoming flows
  double on_rail = 0.0, remote = 0.0;
  for (size_t i = 0; i < members.size(); ++i) {
    const int me = members[i];
    ASSERT_EQ(g.plans[i].phases.size(), 1u);
    const auto& ph = g.plans[i].phases[0];
    EXPECT_EQ(ph.sends.size(), 7u + 7u);  // 7 NVLink peers, 7 remote domains (63 before)
    for (const auto& f : ph.sends) {
      const bool nvlink = f.to / 8 == me / 8;
      EXPECT_EQ(f.lane, nvlink ? 0 : 1);
      EXPECT_DOUBLE_EQ(f.bytes, nvlink ? 1e6 : 8e6);  // bytes/p per peer, L x that per domain
      (nvlink ? nvl_in[f.to] : net_in[f.to]) += f.bytes;
      if (!nvlink) {
        net_out[me] += f.bytes;
        remote += f.bytes;
        if (f.to % 8 == me % 8) on_rail += f.bytes;
      }
      ++lane_in[f.to][f.lane];
    }
  }
  for (size_t i = 0; i < members.size(); ++i) {
    const int r = members[i];
    // Every NIC sends and receives what the per-peer pattern puts on it: 56 peers x 1 MB.
    EXPECT_DOUBLE_EQ(net_out[r], 56e6);
    EXPECT_DOUBLE_EQ(net_in[r], 56e6);
    EXPECT_DOUBLE_EQ(nvl_in[r], 7e6);
    // The receives each rank expects match the flows that reach it, lane by lane.
    std::map<int, int> expected;
    for (int lane : g.plans[i].phases[0].receive_lanes) ++expected[lane];
    EXPECT_EQ(expected, lane_in[r]);
  }
  // One remote domain in seven is reached on the sender's rail (per peer: 7 of 56 = 1 in 8).
  EXPECT_NEAR(on_rail / remote, 1.0 / 7.0, 1e-12);
}

TEST(PairwiseAllToAll, IrregularOrSingleDomainGroupsSendToEveryPeer) {
  // 12 ranks over domains of 8: 8 + 4 members, irregular.
  std::vector<int> members(12);
  std::iota(members.begin(), members.end(), 0);
  const auto irregular = all_to_all_plans(members, 8, 12e6);
  for (const auto& plan : irregular.plans) {
    EXPECT_EQ(plan.phases[0].sends.size(), 11u);
    EXPECT_EQ(plan.phases[0].receive_lanes.size(), 11u);
    for (const auto& f : plan.phases[0].sends) EXPECT_DOUBLE_EQ(f.bytes, 1e6);
  }
  const auto one_domain = all_to_all_plans({0, 1, 2, 3, 4, 5, 6, 7}, 8, 8e6);
  for (const auto& plan : one_domain.plans) EXPECT_EQ(plan.phases[0].sends.size(), 7u);
}

Workload all_to_all_job(int ranks, double bytes) {
  Workload w;
  w.layout = RankLayout(ranks, 1, 1, 1);
  Program p;
  p.labels = {"a2a"};
  Op op;
  op.shape = CollectiveSpec{CollectiveKind::AllToAll, GroupKind::TP};
  op.bytes = bytes;
  op.stream = Stream::Compute;
  p.ops.push_back(op);
  w.programs.push_back(std::move(p));
  w.program_of_rank.assign(static_cast<size_t>(ranks), 0);
  return w;
}

TEST(PairwiseAllToAll, EngineTimeIsThePerPeerPatternsLinkLoad) {
  // A star (every flow crosses its sender's up link and its receiver's down link): 16 ranks in
  // 4 domains of 4, or irregular 12 in domains of 8; each link carries (p-1)/p of the buffer.
  for (const auto& [ranks, domain] : {std::pair{16, 4}, std::pair{12, 8}}) {
    test::StarPlatform platform(ranks, 1e9, domain);
    test::SimpleCost cost;
    Workload w = all_to_all_job(ranks, 16e6);
    cost_workload(w, cost);
    const StepResult r = simulate_step(w, platform, cost, EngineOptions{});
    const double expected = 16e6 * (ranks - 1) / ranks / 1e9;
    EXPECT_NEAR(r.step_time_s, expected, 1e-6 * expected) << ranks;  // flows are whole bytes
  }
}

}  // namespace
}  // namespace clustersim::sim
