#include "sim/rank_layout.hpp"

#include <algorithm>

namespace clustersim::sim {

RankLayout::RankLayout(int tp, int cp, int dp, int pp, std::array<GroupKind, 4> order)
    : sizes_{tp, cp, dp, pp}, order_(order) {
  for (int s : sizes_) {
    if (s < 1) throw std::invalid_argument("parallel sizes must be >= 1");
  }
  std::array<bool, 4> seen{};
  for (GroupKind k : order_) seen[static_cast<int>(k)] = true;
  if (!std::all_of(seen.begin(), seen.end(), [](bool b) { return b; })) {
    throw std::invalid_argument("rank order must name each of tp, cp, dp, pp once");
  }
}

int RankLayout::stride(GroupKind kind) const {
  int s = 1;
  for (GroupKind k : order_) {
    if (k == kind) return s;
    s *= size(k);
  }
  return s;
}

int RankLayout::coord(int rank, GroupKind kind) const {
  if (rank < 0 || rank >= world()) throw std::out_of_range("rank out of range");
  return (rank / stride(kind)) % size(kind);
}

std::vector<int> RankLayout::group(int rank, GroupKind kind) const {
  const int base = rank - coord(rank, kind) * stride(kind);
  std::vector<int> out(static_cast<size_t>(size(kind)));
  for (int i = 0; i < size(kind); ++i) out[static_cast<size_t>(i)] = base + i * stride(kind);
  return out;
}

int RankLayout::pp_peer(int rank, Peer peer) const {
  if (peer == Peer::None) return -1;
  const int pp = size(GroupKind::PP);
  const int c = coord(rank, GroupKind::PP);
  const int next = peer == Peer::NextStage ? (c + 1) % pp : (c + pp - 1) % pp;
  return rank + (next - c) * stride(GroupKind::PP);
}

}  // namespace clustersim::sim
