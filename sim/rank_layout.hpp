// Placement of parallel groups on ranks, as Megatron-core does it (parallel_state.py,
// RankGenerator): the rank is a mixed-radix number over the parallel dimensions,
// fastest-varying first (default order tp-cp-ep-dp-pp, so a TP group is consecutive ranks inside
// a node and DP peers sit on the same local GPU of different nodes: the same rail). Rank r runs
// on GPU r of the platform.
//
// Two generators share the ranks, as in Megatron-core: the dense one (sizes tp, cp, dp, pp; ep
// counts 1) and the expert one (sizes etp, ep, edp, pp with cp counting 1 and
// edp = tp*cp*dp / (etp*ep)), both over the same order. Pipeline groups must coincide.
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
  /// Dense layout (ep = etp = 1).
  /// @param order dimensions fastest-varying first, e.g. {TP, CP, DP, PP}; must be a
  ///        permutation of TP, CP, DP, PP. @throws std::invalid_argument otherwise or when a
  ///        size is < 1.
  RankLayout(int tp, int cp, int dp, int pp,
             std::array<GroupKind, 4> order = {GroupKind::TP, GroupKind::CP, GroupKind::DP,
                                               GroupKind::PP});
  /// Layout with expert parallelism: `ep` expert-parallel and `etp` expert-tensor-parallel
  /// ranks carved from the tp*cp*dp ranks of a stage.
  /// @param order permutation of TP, CP, EP, DP, PP, fastest first (Megatron's default
  ///        "tp-cp-ep-dp-pp"). @throws std::invalid_argument when a size is < 1, the order is
  ///        not a permutation, etp*ep does not divide tp*cp*dp, or the order places pp so that
  ///        dense and expert pipeline groups differ (Megatron-core asserts the same).
  RankLayout(int tp, int cp, int dp, int pp, int ep, int etp, std::array<GroupKind, 5> order);

  /// Size of a dimension or group kind: tp, cp, dp, pp, ep, etp, edp; DPCP is dp*cp; AMAX is
  /// tp*cp*dp; EMB is 2 with pipelining (first and last stage), else 1 (middle stages form
  /// groups of one).
  int size(GroupKind kind) const;
  /// Number of ranks: tp * cp * dp * pp.
  int world() const { return world_; }
  /// Dense dimensions in order, fastest first (EP left out).
  const std::array<GroupKind, 4>& order() const { return dense_order_; }
  /// All five dimensions in order, fastest first.
  const std::array<GroupKind, 5>& full_order() const { return order_; }

  /// Coordinate of `rank` along `kind`, i.e. its index in group(rank, kind).
  /// @throws std::out_of_range for a bad rank.
  int coord(int rank, GroupKind kind) const;
  /// The ranks of rank's group of `kind`, ordered by their coordinate along `kind`.
  /// @throws std::out_of_range for a bad rank.
  std::vector<int> group(int rank, GroupKind kind) const;
  /// Rank of the pipeline neighbour (wrapping around: stage 0's previous is the last stage),
  /// or -1 for Peer::None.
  int pp_peer(int rank, Peer peer) const;

 private:
  // A mixed-radix numbering of the ranks: sizes per dimension slot (TP, CP, EP, DP, PP).
  struct Radix {
    std::array<int, 5> size{};
    std::array<int, 5> stride{};
  };
  Radix make_radix(const std::array<int, 5>& sizes) const;
  static int slot(GroupKind kind);
  int digit(const Radix& radix, int rank, int slot) const;
  std::vector<int> vary(const Radix& radix, int rank, const std::vector<int>& slots) const;
  int index_in(const Radix& radix, int rank, const std::vector<int>& slots) const;
  std::vector<int> ordered_slots(std::vector<int> slots) const;
  void check_rank(int rank) const;

  std::array<GroupKind, 5> order_{};
  std::array<GroupKind, 4> dense_order_{};
  Radix dense_;
  Radix expert_;
  int tp_ = 1, cp_ = 1, dp_ = 1, pp_ = 1, ep_ = 1, etp_ = 1, edp_ = 1;
  int world_ = 1;
};

}  // namespace clustersim::sim
