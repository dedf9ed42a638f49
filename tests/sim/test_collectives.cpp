// Flow plans of the collective algorithms (sim/detail/collectives.hpp): what each rank sends,
// checked over whole groups, and the engine's time for them on a star of known link rates.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <string_view>
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
  const detail::CollectiveAlgorithm* found = nullptr;
  for (const auto& a : detail::collective_algorithms()) {
    if (std::string_view(a.name) == "pairwise") found = &a;
  }
  EXPECT_NE(found, nullptr);
  const auto& pairwise = *found;
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

// Every member's NVLink and NIC bytes, out and in, are those of the per-peer pattern (bytes/p to
// each other member: (L-1) x bytes/p over NVLink, (p-L) x bytes/p over the NIC, L the members of
// its domain), and the receives each member expects match the flows that reach it, lane by lane.
// Returns the flows played.
size_t expect_per_peer_link_loads(const GroupPlans& g, int domain, double bytes) {
  const double p = static_cast<double>(g.members.size());
  std::map<int, int> members_of_domain;
  for (int r : g.members) ++members_of_domain[r / domain];
  std::map<int, double> net_in, net_out, nvl_in, nvl_out;
  std::map<int, std::map<int, int>> lane_in;  // rank -> lane -> incoming flows
  size_t flows = 0;
  for (size_t i = 0; i < g.members.size(); ++i) {
    const int me = g.members[i];
    EXPECT_EQ(g.plans[i].phases.size(), 1u);
    for (const auto& f : g.plans[i].phases[0].sends) {
      const bool nvlink = f.to / domain == me / domain;
      EXPECT_NE(f.to, me);
      EXPECT_EQ(f.lane, nvlink ? 0 : 1);
      (nvlink ? nvl_in : net_in)[f.to] += f.bytes;
      (nvlink ? nvl_out : net_out)[me] += f.bytes;
      ++lane_in[f.to][f.lane];
      ++flows;
    }
  }
  for (size_t i = 0; i < g.members.size(); ++i) {
    const int r = g.members[i];
    const double l = members_of_domain[r / domain];
    EXPECT_NEAR(nvl_out[r], (l - 1) * bytes / p, 1e-6) << r;
    EXPECT_NEAR(nvl_in[r], (l - 1) * bytes / p, 1e-6) << r;
    EXPECT_NEAR(net_out[r], (p - l) * bytes / p, 1e-6) << r;
    EXPECT_NEAR(net_in[r], (p - l) * bytes / p, 1e-6) << r;
    std::map<int, int> expected;
    for (int lane : g.plans[i].phases[0].receive_lanes) ++expected[lane];
    EXPECT_EQ(expected, lane_in[r]) << r;
  }
  return flows;
}

// The engine addresses a phase's flows by mailbox slot: phase x lane within kMaxPhases x
// kMaxLanes (engine_actors.cpp, collective_slot). A plan past either bound would make flows of
// different phases or lanes meet in one mailbox and pair with the wrong senders, silently. Every
// registered algorithm, for every kind it takes, over groups inside one domain, over 2 and 8
// domains, strided across domains (a DP group of one rank per node) and uneven (12 ranks over
// domains of 8), keeps its plans within both bounds and sends only to other members.
TEST(CollectiveAlgorithms, EveryPlanStaysWithinTheEnginesPhaseAndLaneSlots) {
  std::vector<std::vector<int>> groups = {std::vector<int>(8), std::vector<int>(16), std::vector<int>(64),
                                          std::vector<int>(12)};
  for (auto& g : groups) std::iota(g.begin(), g.end(), 0);
  std::vector<int> strided;
  for (int r = 0; r < 64; r += 8) strided.push_back(r);
  groups.push_back(strided);
  const CollectiveKind kinds[] = {CollectiveKind::AllReduce, CollectiveKind::AllGather,
                                  CollectiveKind::ReduceScatter, CollectiveKind::AllToAll,
                                  CollectiveKind::TokenExchange, CollectiveKind::RingShift};
  std::map<std::string, int> plans_of;
  for (const auto& members : groups) {
    for (CollectiveKind kind : kinds) {
      for (int i = 0; i < static_cast<int>(members.size()); ++i) {
        const GroupShape shape = detail::group_shape(members, i, 8);
        // 192 experts top-8: every group size here divides them.
        const auto fanout = detail::token_fanout({192, 8, 0, 0}, members, i, 8);
        CollectiveCall c;
        c.kind = kind;
        c.bytes = 64e6;
        c.members = &members;
        c.index = i;
        c.domain_size = 8;
        c.shape = &shape;
        c.fanout = &fanout;
        c.nvl.bandwidth_efficiency = c.net.bandwidth_efficiency = 1.0;
        for (const auto& a : detail::collective_algorithms()) {
          if (!a.applicable(c)) continue;
          const CollectivePlan plan = a.plan(c);
          ++plans_of[a.name];
          ASSERT_LE(plan.phases.size(), static_cast<size_t>(detail::kMaxPhases)) << a.name;
          for (const auto& ph : plan.phases) {
            for (const auto& f : ph.sends) {
              EXPECT_TRUE(f.lane >= 0 && f.lane < detail::kMaxLanes) << a.name << " lane " << f.lane;
              EXPECT_NE(f.to, members[static_cast<size_t>(i)]) << a.name;
            }
            for (int lane : ph.receive_lanes) {
              EXPECT_TRUE(lane >= 0 && lane < detail::kMaxLanes) << a.name << " receive lane " << lane;
            }
          }
        }
      }
    }
  }
  // Each algorithm met at least one call (the registry's six, NVLS included on one domain).
  EXPECT_EQ(plans_of.size(), detail::collective_algorithms().size());
}

// NCCL runs its double binary tree over any number of nodes from two (its tuning model only
// changes the tree's per-channel bandwidth cap at two): an all-reduce over two NVLink domains
// may take it; inside one domain it is a ring (until 2026-12-05 it took 3 or more domains).
TEST(DoubleBinaryTree, AllReducesFromTwoDomains) {
  const detail::CollectiveAlgorithm* tree = nullptr;
  for (const auto& a : detail::collective_algorithms()) {
    if (std::string_view(a.name) == "tree") tree = &a;
  }
  ASSERT_NE(tree, nullptr);
  auto applies = [&](std::vector<int> members, CollectiveKind kind) {
    const GroupShape shape = detail::group_shape(members, 0, 8);
    CollectiveCall c;
    c.kind = kind;
    c.bytes = 1e6;
    c.members = &members;
    c.index = 0;
    c.domain_size = 8;
    c.shape = &shape;
    return tree->applicable(c);
  };
  std::vector<int> two(16), one(8);
  std::iota(two.begin(), two.end(), 0);
  std::iota(one.begin(), one.end(), 0);
  EXPECT_TRUE(applies(two, CollectiveKind::AllReduce));
  EXPECT_FALSE(applies(one, CollectiveKind::AllReduce));
  EXPECT_FALSE(applies(two, CollectiveKind::AllGather));
}

// NCCL's in-order binary tree (ncclGetBtree): one root, every other position's parent lists it
// as a child, n-1 edges, and most edges join neighbouring positions (a heap's children 2q+1,
// 2q+2 would send most edges far away, over the spine of a rail-optimized fabric).
TEST(DoubleBinaryTree, TheTreeIsNcclsInOrderTree) {
  for (const int n : {2, 3, 5, 6, 8, 13, 16, 128}) {
    int edges = 0, near = 0;
    for (int q = 0; q < n; ++q) {
      const detail::TreeLinks t = detail::btree_links(n, q);
      EXPECT_EQ(t.up < 0, q == 0) << n << " " << q;
      if (t.up >= 0) {
        const detail::TreeLinks parent = detail::btree_links(n, t.up);
        EXPECT_TRUE(parent.down[0] == q || parent.down[1] == q) << n << " " << q;
        ++edges;
        near += std::abs(t.up - q) <= 2 ? 1 : 0;
      }
      for (const int c : t.down) {
        if (c >= 0) {
          EXPECT_EQ(detail::btree_links(n, c).up, q) << n << " " << q;
        }
      }
    }
    EXPECT_EQ(edges, n - 1) << n;
    EXPECT_GE(near, (n - 1) * 3 / 4) << n;  // a heap tree over 128: 3 of 127 edges this short
  }
  // ncclGetBtree over 8: 0 -> 4; 4 -> 2, 6; 2 -> 1, 3; 6 -> 5, 7.
  EXPECT_EQ(detail::btree_links(8, 0).down[1], 4);
  EXPECT_EQ(detail::btree_links(8, 4).down[0], 2);
  EXPECT_EQ(detail::btree_links(8, 4).down[1], 6);
  EXPECT_EQ(detail::btree_links(8, 7).up, 6);
}

TEST(PairwiseAllToAll, AcrossDomainsOneFlowPerRemoteDomainWithThePerPeerNicLoads) {
  // 64 ranks on 8 domains of 8 (an EP group of 64 on 8 HGX nodes), 64 MB per rank.
  std::vector<int> members(64);
  std::iota(members.begin(), members.end(), 0);
  const double bytes = 64e6;
  const auto g = all_to_all_plans(members, 8, bytes);
  EXPECT_EQ(expect_per_peer_link_loads(g, 8, bytes), 64u * (1 + 7));  // 64 x 63 per peer
  double on_rail = 0.0, remote = 0.0;
  for (size_t i = 0; i < members.size(); ++i) {
    const int me = members[i];
    const auto& ph = g.plans[i].phases[0];
    EXPECT_EQ(ph.sends.size(), 1u + 7u);  // the NVLink bundle, one flow per remote domain
    for (const auto& f : ph.sends) {
      const bool nvlink = f.to / 8 == me / 8;
      EXPECT_DOUBLE_EQ(f.bytes, nvlink ? 7e6 : 8e6);  // 7 local peers, 8 members per domain
      if (nvlink) continue;
      remote += f.bytes;
      if (f.to % 8 == me % 8) on_rail += f.bytes;
    }
  }
  // One remote domain in seven is reached on the sender's rail (per peer: 7 of 56 = 1 in 8).
  EXPECT_NEAR(on_rail / remote, 1.0 / 7.0, 1e-12);
}

TEST(PairwiseAllToAll, IrregularAndSingleDomainGroupsKeepThePerPeerLinkLoadsInFewFlows) {
  // 12 ranks over domains of 8: 8 + 4 members.
  std::vector<int> twelve(12);
  std::iota(twelve.begin(), twelve.end(), 0);
  const auto irregular = all_to_all_plans(twelve, 8, 12e6);
  // NVLink: 12 bundles; remote: 4 senders into 8 members (4 + 8 - 1 = 11 overlaps at most, here
  // 8: each sender's 8 units go to two members) and 8 senders into 4 (each whole): 8 + 8.
  EXPECT_EQ(expect_per_peer_link_loads(irregular, 8, 12e6), 12u + 8u + 8u);  // 132 per peer
  // A stage of 64 ranks on NVL72 racks, split 8 + 56 (ranks 64-127): 64 + (8 + 56 - 1) x 2 at most.
  std::vector<int> stage(64);
  std::iota(stage.begin(), stage.end(), 64);
  const auto split = all_to_all_plans(stage, 72, 64e6);
  EXPECT_LE(expect_per_peer_link_loads(split, 72, 64e6), 64u + 2u * 63u);  // 64 x 63 per peer
  // Members scattered over three domains of 4 with 3, 1 and 2 of them, out of rank order.
  const auto scattered = all_to_all_plans({9, 0, 5, 1, 2, 10}, 4, 6e6);
  expect_per_peer_link_loads(scattered, 4, 6e6);
  // One domain: one bundle per member.
  const auto one_domain = all_to_all_plans({0, 1, 2, 3, 4, 5, 6, 7}, 8, 8e6);
  EXPECT_EQ(expect_per_peer_link_loads(one_domain, 8, 8e6), 8u);
}

// A ring over a group split unevenly over NVLink domains (12 ranks over domains of 8: 8 + 4)
// crosses each domain boundary with one ring share, spread over as many members as both
// domains hold (4 NICs each way), not over one NIC; every receive matches a flow, lane by lane.
// Member `i`'s call of `kind` over `members` (domains of 8 GPUs), links at full efficiency.
CollectiveCall call(CollectiveKind kind, double bytes, const std::vector<int>& members, int i,
                    const GroupShape& shape) {
  CollectiveCall c;
  c.kind = kind;
  c.bytes = bytes;
  c.members = &members;
  c.index = i;
  c.domain_size = 8;
  c.shape = &shape;
  c.nvl.bandwidth_efficiency = c.net.bandwidth_efficiency = 1.0;
  return c;
}

TEST(RingAllReduce, AnUnevenGroupSpreadsEachBoundaryOverTheMembersBothDomainsHold) {
  const detail::CollectiveAlgorithm* ring = nullptr;
  for (const auto& a : detail::collective_algorithms()) {
    if (std::string_view(a.name) == "ring") ring = &a;
  }
  ASSERT_NE(ring, nullptr);
  std::vector<int> members(12);
  std::iota(members.begin(), members.end(), 0);
  const double bytes = 12e6;
  const double share = 2.0 * 11 / 12 * bytes;
  std::map<int, std::map<int, int>> lane_in;
  std::map<int, std::map<int, int>> expected_in;
  double crossing = 0.0;
  double largest_crossing = 0.0;
  for (int i = 0; i < 12; ++i) {
    const GroupShape shape = detail::group_shape(members, i, 8);
    EXPECT_FALSE(shape.regular);
    EXPECT_EQ(shape.min_local, 4);
    const CollectiveCall c = call(CollectiveKind::AllReduce, bytes, members, i, shape);
    const CollectivePlan plan = ring->plan(c);
    ASSERT_EQ(plan.phases.size(), 1u);
    for (const auto& f : plan.phases[0].sends) {
      ++lane_in[f.to][f.lane];
      if (f.to / 8 != i / 8) {
        crossing += f.bytes;
        largest_crossing = std::max(largest_crossing, f.bytes);
      } else {
        EXPECT_NEAR(f.bytes, share * (i < 8 ? 7.0 / 8 : 3.0 / 4), 1e-6) << i;
      }
    }
    for (int lane : plan.phases[0].receive_lanes) ++expected_in[i][lane];
  }
  EXPECT_NEAR(crossing, 2 * share, 1e-6);  // one share across each of the two boundaries
  EXPECT_NEAR(largest_crossing, share / 4, 1e-6);  // over 4 NICs, not the whole share on one
  EXPECT_EQ(lane_in, expected_in);
}

// A ring shift (context parallelism's K/V exchange) is one point-to-point send of the whole
// buffer to the next member: the member at an NVLink-domain boundary pushes it through its own
// NIC. Played as a ring all-gather (before 2026-12-06) it spread that hop over every member's NIC.
// Across domains the ring's NVLink leg runs beside its network leg (ring_plan): the estimate the
// algorithm choice compares must weigh it, as the tree's does, or a ring whose NVLink leg is the
// slower one looks faster than it plays.
TEST(RingAllReduce, TheEstimateAcrossDomainsWeighsTheNvlinkLeg) {
  const detail::CollectiveAlgorithm* ring = nullptr;
  for (const auto& a : detail::collective_algorithms()) {
    if (std::string_view(a.name) == "ring") ring = &a;
  }
  ASSERT_NE(ring, nullptr);
  std::vector<int> members(128);  // 16 domains of 8
  std::iota(members.begin(), members.end(), 0);
  const GroupShape shape = detail::group_shape(members, 0, 8);
  const double bytes = 1e9;
  CollectiveCall c = call(CollectiveKind::AllReduce, bytes, members, 0, shape);
  c.nvl.bandwidth_efficiency = 0.25;
  c.net.bandwidth_efficiency = 0.94;
  const double share = 2.0 * 127.0 / 128.0 * bytes;
  const double nvlink_leg = share * 7.0 / 8.0 / (0.25 * 450e9);
  const double network_leg = share / 8.0 / (0.94 * 50e9);
  ASSERT_GT(nvlink_leg, network_leg);
  const double latency = ring->plan(c).latency_s;
  EXPECT_NEAR(ring->estimate(c, 450e9, 50e9), latency + nvlink_leg, 1e-12);
  c.nvl.bandwidth_efficiency = 1.0;  // now the network leg is the slower one
  EXPECT_NEAR(ring->estimate(c, 450e9, 50e9), latency + network_leg, 1e-12);
}

TEST(RingShift, EachMemberSendsTheWholeBufferToTheNextOverItsOwnLink) {
  const detail::CollectiveAlgorithm* shift = nullptr;
  for (const auto& a : detail::collective_algorithms()) {
    if (std::string_view(a.name) == "shift") shift = &a;
  }
  ASSERT_NE(shift, nullptr);
  const std::vector<int> members = {0, 4, 8, 12};  // TP4 x CP4 over two domains of 8: L = 2
  const double bytes = 8e6;
  for (int i = 0; i < 4; ++i) {
    const GroupShape shape = detail::group_shape(members, i, 8);
    CollectiveCall c = call(CollectiveKind::RingShift, bytes, members, i, shape);
    c.nvl.bandwidth_efficiency = 0.8;
    c.net.bandwidth_efficiency = 0.9;
    c.nvl.base_latency_s = 10e-6;
    c.net.base_latency_s = 15e-6;
    c.net.step_latency_s = 5e-6;
    ASSERT_TRUE(shift->applicable(c));
    EXPECT_EQ(&detail::choose_algorithm(c, "", 450e9, 50e9), shift);
    EXPECT_EQ(&detail::choose_algorithm(c, "ring", 450e9, 50e9), shift);  // ring does not apply
    const CollectivePlan plan = shift->plan(c);
    ASSERT_EQ(plan.phases.size(), 1u);
    ASSERT_EQ(plan.phases[0].sends.size(), 1u);
    const auto& f = plan.phases[0].sends[0];
    EXPECT_EQ(f.to, members[static_cast<size_t>((i + 1) % 4)]);
    const bool nic = i == 1 || i == 3;  // 4 -> 8 and 12 -> 0 cross domains
    EXPECT_DOUBLE_EQ(f.bytes, bytes / (nic ? 0.9 : 0.8)) << i;
    EXPECT_EQ(plan.phases[0].receive_lanes, std::vector<int>{f.lane});
    // Members sending or receiving across domains pay the network's point-to-point latency
    // (base + one step, as a pipeline transfer).
    EXPECT_DOUBLE_EQ(plan.latency_s, 20e-6) << i;
    EXPECT_NEAR(shift->estimate(c, 450e9, 50e9), 20e-6 + bytes / (nic ? 0.9 * 50e9 : 0.8 * 450e9), 1e-12);
  }
}

TEST(PairwiseAllToAll, EngineTimeIsThePerPeerPatternsLinkLoad) {
  // A star (every flow crosses its sender's up link and its receiver's down link): 16 ranks in
  // 4 domains of 4, or irregular 12 in domains of 8; each link carries (p-1)/p of the buffer.
  for (const auto& [ranks, domain] : {std::pair{16, 4}, std::pair{12, 8}}) {
    test::StarPlatform platform(ranks, 1e9, domain);
    test::SimpleCost cost;
    Workload w = test::one_collective_job(ranks, 16e6, CollectiveSpec{CollectiveKind::AllToAll, GroupKind::TP, {}});
    cost_workload(w, cost);
    const StepResult r = simulate_step(w, platform, cost, EngineOptions{});
    const double expected = 16e6 * (ranks - 1) / ranks / 1e9;
    EXPECT_NEAR(r.step_time_s, expected, 1e-6 * expected) << ranks;  // flows are whole bytes
  }
}

}  // namespace
}  // namespace clustersim::sim
