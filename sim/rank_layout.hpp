// Placement of parallel groups on ranks, as Megatron-LM does it: the rank is a mixed-radix
// number over the parallel dimensions, fastest-varying first (default order tp-cp-dp-pp, so a
// TP group is consecutive ranks inside a node and DP peers sit on the same local GPU of
// different nodes: the same rail). Rank r runs on GPU r of the platform.
#pragma once

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/trace.hpp"

namespace clustersim::sim {

/// Sizes of the parallel dimensions and their order.
class RankLayout {
 public:
  /// @param order dimensions fastest-varying first, e.g. {TP, CP, DP, PP}; must be a
  ///        permutation of the four GroupKinds. @throws std::invalid_argument otherwise or
  ///        when a size is < 1.
  RankLayout(int tp, int cp, int dp, int pp,
             std::array<GroupKind, 4> order = {GroupKind::TP, GroupKind::CP, GroupKind::DP,
                                               GroupKind::PP});

  int size(GroupKind kind) const { return sizes_[static_cast<int>(kind)]; }
  int world() const { return sizes_[0] * sizes_[1] * sizes_[2] * sizes_[3]; }
  const std::array<GroupKind, 4>& order() const { return order_; }

  /// Coordinate of `rank` along `kind`. @throws std::out_of_range for a bad rank.
  int coord(int rank, GroupKind kind) const;
  /// The ranks of rank's group of `kind`, ordered by their coordinate along `kind`.
  std::vector<int> group(int rank, GroupKind kind) const;
  /// Rank of the pipeline neighbour (wrapping around: stage 0's previous is the last stage),
  /// or -1 for Peer::None.
  int pp_peer(int rank, Peer peer) const;

 private:
  int stride(GroupKind kind) const;
  std::array<int, 4> sizes_{};
  std::array<GroupKind, 4> order_{};
};

}  // namespace clustersim::sim
