// Where top-k routed MoE tokens go (balanced routing, optionally node-limited): the statistics
// a token exchange's traffic follows (sim::TokenRouting, docs/engine.md "Token exchange").
#pragma once

#include <vector>

#include "sim/trace.hpp"

namespace clustersim::sim {

/// Checks that `r` can route over a group of `members` members: experts >= 1 and divisible by
/// members; 1 <= top_k <= experts; with groups > 0: groups divides experts, 1 <= group_topk <=
/// groups and the group_topk groups hold at least top_k experts; with groups == 0, group_topk 0.
/// @throws std::invalid_argument naming the first violated condition.
void check_routing(const TokenRouting& r, int members);

/// Probability that one token reaches at least one expert held by the members at `positions`
/// (indices in group order, each in [0, members)), under TokenRouting's model: the token's
/// group_topk router groups uniformly among `groups`, then its top_k experts uniformly among
/// those groups' experts (all experts when groups == 0). Exact (hypergeometric over the
/// groups' overlaps with the members' experts), O(groups x group_topk x experts).
/// @throws std::invalid_argument as check_routing, or for a position out of range.
double routing_hit_probability(const TokenRouting& r, int members, const std::vector<int>& positions);

}  // namespace clustersim::sim
