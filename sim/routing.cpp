// Hit probabilities of balanced top-k routing (sim/routing.hpp). A token's experts are a
// uniform draw without replacement, so the chance that none lies in a set of s of the n
// candidate experts is the hypergeometric C(n - s, k) / C(n, k); node-limited routing
// (DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv 2412.19437, Sec. 2.1.2: each token goes
// to at most M nodes; Megatron-core's group-limited top-k, moe_router_num_groups /
// moe_router_group_topk) first draws the token's groups, uniformly when routing is balanced.
#include "sim/routing.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace clustersim::sim {

namespace {

std::string str(long long v) { return std::to_string(v); }

// C(n - s, k) / C(n, k): no expert of the s marked ones among k drawn from n.
double miss_probability(int n, int s, int k) {
  if (n - s < k) return 0.0;
  double p = 1.0;
  for (int i = 0; i < k; ++i) p *= static_cast<double>(n - s - i) / static_cast<double>(n - i);
  return p;
}

}  // namespace

void check_routing(const TokenRouting& r, int members) {
  if (members < 1) throw std::invalid_argument("token routing over an empty group");
  if (r.experts < 1) throw std::invalid_argument("token routing needs experts >= 1");
  if (r.experts % members != 0) {
    throw std::invalid_argument("token routing: " + str(r.experts) + " experts do not split evenly over " +
                                str(members) + " members");
  }
  if (r.top_k < 1 || r.top_k > r.experts) {
    throw std::invalid_argument("token routing: top_k " + str(r.top_k) + " outside [1, experts]");
  }
  if (r.groups == 0) {
    if (r.group_topk != 0) throw std::invalid_argument("token routing: group_topk without groups");
    return;
  }
  if (r.groups < 0 || r.experts % r.groups != 0) {
    throw std::invalid_argument("token routing: " + str(r.groups) + " router groups do not divide " +
                                str(r.experts) + " experts");
  }
  if (r.group_topk < 1 || r.group_topk > r.groups) {
    throw std::invalid_argument("token routing: group_topk " + str(r.group_topk) + " outside [1, groups]");
  }
  if (static_cast<long long>(r.group_topk) * (r.experts / r.groups) < r.top_k) {
    throw std::invalid_argument("token routing: " + str(r.group_topk) + " groups of " +
                                str(r.experts / r.groups) + " experts hold fewer than top_k = " +
                                str(r.top_k));
  }
}

double routing_hit_probability(const TokenRouting& r, int members, const std::vector<int>& positions) {
  check_routing(r, members);
  const int per_member = r.experts / members;
  const int groups = r.groups > 0 ? r.groups : 1;
  const int chosen = r.groups > 0 ? r.group_topk : 1;
  const int per_group = r.experts / groups;
  std::vector<int> overlap(static_cast<size_t>(groups), 0);  // marked experts per router group
  int marked = 0;
  for (int pos : positions) {
    if (pos < 0 || pos >= members) {
      throw std::invalid_argument("token routing: member position " + str(pos) + " out of range");
    }
    for (int x = pos * per_member; x < (pos + 1) * per_member; ++x) ++overlap[static_cast<size_t>(x / per_group)];
    marked += per_member;
  }
  // ways[j][s]: subsets of j groups holding s marked experts (counts as doubles: C(64, 32) fits).
  std::vector<std::vector<double>> ways(static_cast<size_t>(chosen) + 1,
                                        std::vector<double>(static_cast<size_t>(marked) + 1, 0.0));
  ways[0][0] = 1.0;
  for (int g = 0; g < groups; ++g) {
    const int o = overlap[static_cast<size_t>(g)];
    for (int j = std::min(chosen, g + 1); j >= 1; --j) {
      auto& row = ways[static_cast<size_t>(j)];
      const auto& prev = ways[static_cast<size_t>(j - 1)];
      for (int s = marked; s >= o; --s) row[static_cast<size_t>(s)] += prev[static_cast<size_t>(s - o)];
    }
  }
  double total = 0.0, miss = 0.0;
  for (int s = 0; s <= marked; ++s) {
    const double w = ways[static_cast<size_t>(chosen)][static_cast<size_t>(s)];
    total += w;
    miss += w * miss_probability(chosen * per_group, s, r.top_k);
  }
  return 1.0 - miss / total;
}

}  // namespace clustersim::sim
