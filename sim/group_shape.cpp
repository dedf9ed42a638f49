// The geometry of a collective's group: its members per NVLink domain, the rails across domains
// (sim/detail/collectives.hpp), and NCCL's binary tree over a rail.
#include <algorithm>
#include <unordered_map>
#include <vector>

#include "sim/detail/collectives.hpp"

namespace clustersim::sim::detail {

GroupShape group_shape(const std::vector<int>& members, int index, int domain_size) {
  GroupShape s;
  s.p = static_cast<int>(members.size());
  std::unordered_map<int, int> slot_of_domain;  // domain -> position in by_domain
  std::vector<std::vector<int>> by_domain;
  for (int r : members) {
    auto [it, fresh] = slot_of_domain.emplace(r / domain_size, static_cast<int>(by_domain.size()));
    if (fresh) by_domain.emplace_back();
    by_domain[static_cast<size_t>(it->second)].push_back(r);
  }
  s.domains = static_cast<int>(by_domain.size());
  s.local = static_cast<int>(by_domain[0].size());
  s.min_local = s.local;
  for (const auto& g : by_domain) {
    s.regular = s.regular && static_cast<int>(g.size()) == s.local;
    s.min_local = std::min(s.min_local, static_cast<int>(g.size()));
  }
  const int me = members[static_cast<size_t>(index)];
  const int my_dom = slot_of_domain.at(me / domain_size);
  const auto& mine = by_domain[static_cast<size_t>(my_dom)];
  const int li = static_cast<int>(std::find(mine.begin(), mine.end(), me) - mine.begin());
  s.my_local = static_cast<int>(mine.size());
  s.local_next = mine[static_cast<size_t>((li + 1) % s.my_local)];
  if (!s.regular) {
    const auto& next = by_domain[static_cast<size_t>((my_dom + 1) % s.domains)];
    const auto& prev = by_domain[static_cast<size_t>((my_dom + s.domains - 1) % s.domains)];
    s.cross_width = std::min(s.my_local, static_cast<int>(next.size()));
    if (li < s.cross_width) s.cross_next = next[static_cast<size_t>(li)];
    s.cross_in = li < static_cast<int>(prev.size());
  }
  if (s.regular) {
    for (const auto& g : by_domain) s.rail.push_back(g[static_cast<size_t>(li)]);
    s.rail_index = my_dom;
    s.rail_next = s.rail[static_cast<size_t>((my_dom + 1) % s.domains)];
    for (int j = 1; j < s.domains; ++j) {
      const auto& peers = by_domain[static_cast<size_t>((my_dom + j) % s.domains)];
      s.domain_peers.push_back(peers[static_cast<size_t>((li + j - 1) % s.local)]);
    }
  }
  return s;
}

TreeLinks btree_links(int n, int q) {
  TreeLinks t;
  int bit = 1;
  while (bit < n && (bit & q) == 0) bit <<= 1;
  if (q == 0) {  // the root: one child, the largest power of two below n
    t.down[1] = n > 1 ? bit >> 1 : -1;
    return t;
  }
  t.up = (q ^ bit) | (bit << 1);
  if (t.up >= n) t.up = q ^ bit;
  int low = bit >> 1;
  if (low == 0) return t;  // a leaf
  t.down[0] = q - low;
  while (low > 0 && q + low >= n) low >>= 1;
  t.down[1] = low > 0 ? q + low : -1;
  return t;
}

}  // namespace clustersim::sim::detail
