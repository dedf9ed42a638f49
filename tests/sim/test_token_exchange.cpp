// Token exchanges (CollectiveKind::TokenExchange, the deepep plan): routing probabilities against
// hand-computed hypergeometric values, every member's flows over whole groups (what leaves one
// member is what the others expect), and the engine's time on a star of known link rates.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "fake_platform.hpp"
#include "sim/detail/collectives.hpp"
#include "sim/engine.hpp"
#include "sim/routing.hpp"

namespace clustersim::sim {
namespace {

TEST(TokenRouting, HitProbabilitiesAreHypergeometric) {
  const TokenRouting r{16, 2, 0, 0};
  // A member of 16 holding 1 expert: 1 - C(15,2)/C(16,2) = 1 - 105/120.
  EXPECT_NEAR(routing_hit_probability(r, 16, {3}), 0.125, 1e-15);
  // A domain of 4 such members: 1 - C(12,2)/C(16,2) = 1 - 66/120.
  EXPECT_NEAR(routing_hit_probability(r, 16, {4, 5, 6, 7}), 0.45, 1e-15);
  EXPECT_DOUBLE_EQ(routing_hit_probability(r, 16, {}), 0.0);
  std::vector<int> all(16);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_DOUBLE_EQ(routing_hit_probability(r, 16, all), 1.0);
}

TEST(TokenRouting, GroupLimitedRoutingConfinesATokenToItsGroups) {
  // 8 experts in 4 groups of 2, one group per token, top 2: a token's experts are one group.
  const TokenRouting one_group{8, 2, 4, 1};
  EXPECT_NEAR(routing_hit_probability(one_group, 4, {0}), 0.25, 1e-15);     // experts 0-1 = group 0
  EXPECT_NEAR(routing_hit_probability(one_group, 2, {0}), 0.5, 1e-15);      // experts 0-3 = groups 0-1
  EXPECT_NEAR(routing_hit_probability(one_group, 8, {0}), 0.25, 1e-15);     // expert 0: both of group 0
  // DeepSeek-V3 over EP64 on 8 nodes (report Sec. 2.1.2; groups = nodes): a node is among the
  // token's 4 groups with probability 1/2, then holds one of its 8 experts drawn from 128 unless
  // all come from the other 96.
  const TokenRouting v3{256, 8, 8, 4};
  double miss = 1.0;
  for (int i = 0; i < 8; ++i) miss *= (96.0 - i) / (128.0 - i);
  EXPECT_NEAR(routing_hit_probability(v3, 64, {8, 9, 10, 11, 12, 13, 14, 15}), 0.5 * (1.0 - miss), 1e-12);
  // Without the limit the same node is hit more often (1 - C(224,8)/C(256,8)).
  double free_miss = 1.0;
  for (int i = 0; i < 8; ++i) free_miss *= (224.0 - i) / (256.0 - i);
  EXPECT_NEAR(routing_hit_probability({256, 8, 0, 0}, 64, {8, 9, 10, 11, 12, 13, 14, 15}), 1.0 - free_miss, 1e-12);
  EXPECT_GT(1.0 - free_miss, 0.5 * (1.0 - miss));
}

TEST(TokenRouting, InconsistentRoutingIsRejected) {
  EXPECT_THROW(check_routing({0, 1, 0, 0}, 1), std::invalid_argument);   // no experts
  EXPECT_THROW(check_routing({8, 9, 0, 0}, 1), std::invalid_argument);   // top_k > experts
  EXPECT_THROW(check_routing({8, 2, 0, 0}, 3), std::invalid_argument);   // 8 experts over 3
  EXPECT_THROW(check_routing({8, 2, 3, 1}, 1), std::invalid_argument);   // 3 groups of 8
  EXPECT_THROW(check_routing({8, 2, 4, 5}, 1), std::invalid_argument);   // group_topk > groups
  EXPECT_THROW(check_routing({8, 3, 4, 1}, 1), std::invalid_argument);   // 1 group of 2 < top 3
  EXPECT_THROW(check_routing({8, 2, 0, 1}, 1), std::invalid_argument);   // group_topk alone
  EXPECT_THROW(routing_hit_probability({8, 2, 0, 0}, 4, {4}), std::invalid_argument);
  EXPECT_NO_THROW(check_routing({256, 8, 8, 4}, 64));
}

const detail::CollectiveAlgorithm& deepep() {
  for (const auto& a : detail::collective_algorithms()) {
    if (std::string_view(a.name) == "deepep") return a;
  }
  throw std::logic_error("no deepep algorithm");
}

// Plays every member's plan and checks that each member receives, per lane, as many flows as
// it expects. Returns {rank -> NVLink bytes out, rank -> network bytes out}.
std::pair<std::map<int, double>, std::map<int, double>> play_group(const std::vector<int>& members,
                                                                   int domain, const TokenRouting& r,
                                                                   double bytes) {
  std::vector<detail::GroupShape> shapes;
  std::vector<detail::TokenFanout> fanouts;
  for (int i = 0; i < static_cast<int>(members.size()); ++i) {
    shapes.push_back(detail::group_shape(members, i, domain));
    fanouts.push_back(detail::token_fanout(r, members, i, domain));
  }
  std::map<int, double> nvl, net;
  std::map<int, std::map<int, int>> arriving, expected;
  for (int i = 0; i < static_cast<int>(members.size()); ++i) {
    detail::CollectiveCall c;
    c.kind = CollectiveKind::TokenExchange;
    c.bytes = bytes;
    c.members = &members;
    c.index = i;
    c.domain_size = domain;
    c.shape = &shapes[static_cast<size_t>(i)];
    c.fanout = &fanouts[static_cast<size_t>(i)];
    c.nvl.bandwidth_efficiency = c.net.bandwidth_efficiency = 1.0;
    EXPECT_TRUE(deepep().applicable(c));
    const detail::CollectivePlan plan = deepep().plan(c);
    const int me = members[static_cast<size_t>(i)];
    for (const auto& f : plan.phases.at(0).sends) {
      const bool nvlink = f.to / domain == me / domain;
      EXPECT_EQ(f.lane, nvlink ? 0 : 1);
      EXPECT_NE(f.to, me);
      EXPECT_NE(std::find(members.begin(), members.end(), f.to), members.end());
      (nvlink ? nvl : net)[me] += f.bytes;
      ++arriving[f.to][f.lane];
    }
    for (int lane : plan.phases[0].receive_lanes) ++expected[me][lane];
  }
  for (int m : members) EXPECT_EQ(arriving[m], expected[m]) << m;
  return {nvl, net};
}

TEST(DeepEpExchange, TokensCrossEachDomainOnceAndAreForwardedOverNvlink) {
  // 16 members in 4 domains of 4, 16 experts, top 2 (hit probabilities of the test above).
  std::vector<int> members(16);
  std::iota(members.begin(), members.end(), 0);
  const auto [nvl, net] = play_group(members, 4, {16, 2, 0, 0}, 1e6);
  for (int m : members) {
    // Network: 3 other domains, each reached with probability 0.45, to the same-index member.
    EXPECT_NEAR(net.at(m), 3 * 0.45 * 1e6, 1e-3) << m;
    // NVLink: 3 local peers at 0.125 each, for its own tokens and for the tokens of the 3
    // members of other domains that land on it.
    EXPECT_NEAR(nvl.at(m), 3 * 0.125 * 4 * 1e6, 1e-3) << m;
  }
  // Against the all-to-all dispatcher's copies (top_k per token, 12 of 16 experts remote): the
  // network carries 1.35 token sizes per token instead of 2 x 12/16 = 1.5.
  const auto fanout = detail::token_fanout({16, 2, 0, 0}, members, 0, 4);
  ASSERT_EQ(fanout.remote.size(), 3u);
  EXPECT_EQ(fanout.remote[0].first, 4);  // the member with the sender's local index
  EXPECT_EQ(fanout.remote_receives, 3);
}

TEST(DeepEpExchange, IrregularDomainsLandEveryFlowOnAMemberThatExpectsIt) {
  // 12 members over domains of 8 (8 + 4), and a scattered group over domains of 4.
  std::vector<int> twelve(12);
  std::iota(twelve.begin(), twelve.end(), 0);
  play_group(twelve, 8, {24, 4, 0, 0}, 1e6);
  play_group({9, 0, 5, 1, 2, 10}, 4, {12, 2, 6, 2}, 1e6);
  // A member alone in its domain sends nothing over NVLink.
  const auto [nvl, net] = play_group({0, 1, 2, 8}, 8, {4, 1, 0, 0}, 1e6);
  EXPECT_EQ(nvl.count(8), 0u);
  EXPECT_NEAR(net.at(8), 0.75e6, 1e-6);  // 3 of 4 experts in the other domain, top 1
}

TEST(DeepEpExchange, EngineTimeIsTheMembersLinkLoad) {
  // A star: every flow crosses its sender's up link and its receiver's down link at 1 GB/s;
  // each member sends 3 x 0.45 + 3 x 0.125 x 4 = 2.85 token sizes.
  test::StarPlatform platform(16, 1e9, 4);
  test::SimpleCost cost;
  Workload w = test::one_collective_job(16, 16e6, CollectiveSpec{CollectiveKind::TokenExchange, GroupKind::TP, {16, 2, 0, 0}});
  cost_workload(w, cost);
  const StepResult r = simulate_step(w, platform, cost, EngineOptions{});
  const double expected = 16e6 * 2.85 / 1e9;
  EXPECT_NEAR(r.step_time_s, expected, 1e-6 * expected);
}

}  // namespace
}  // namespace clustersim::sim
