#include "sim/rank_layout.hpp"

#include <algorithm>

namespace clustersim::sim {
namespace {

// Dimension slots of the mixed-radix numbering.
constexpr int kTp = 0, kCp = 1, kEp = 2, kDp = 3, kPp = 4;

std::array<GroupKind, 5> insert_ep(const std::array<GroupKind, 4>& order) {
  // Megatron's default order is tp-cp-ep-dp-pp: EP sits just before DP.
  std::array<GroupKind, 5> out{};
  std::size_t i = 0;
  for (GroupKind k : order) {
    if (k == GroupKind::DP) out[i++] = GroupKind::EP;
    out[i++] = k;
  }
  if (i != 5) throw std::invalid_argument("rank order must name each of tp, cp, dp, pp once");
  return out;
}

}  // namespace

RankLayout::RankLayout(int tp, int cp, int dp, int pp, std::array<GroupKind, 4> order)
    : RankLayout(tp, cp, dp, pp, 1, 1, insert_ep(order)) {}

RankLayout::RankLayout(int tp, int cp, int dp, int pp, int ep, int etp,
                       std::array<GroupKind, 5> order)
    : order_(order), tp_(tp), cp_(cp), dp_(dp), pp_(pp), ep_(ep), etp_(etp) {
  for (int s : {tp, cp, dp, pp, ep, etp}) {
    if (s < 1) throw std::invalid_argument("parallel sizes must be >= 1");
  }
  std::array<bool, 5> seen{};
  for (GroupKind k : order_) {
    const int s = slot(k);
    if (s < 0 || seen[static_cast<std::size_t>(s)]) {
      throw std::invalid_argument("rank order must name each of tp, cp, ep, dp, pp once");
    }
    seen[static_cast<std::size_t>(s)] = true;
  }
  const int stage_ranks = tp * cp * dp;
  if (stage_ranks % (ep * etp) != 0) {
    throw std::invalid_argument("etp*ep = " + std::to_string(etp * ep) +
                                " does not divide tp*cp*dp = " + std::to_string(stage_ranks));
  }
  edp_ = stage_ranks / (ep * etp);
  world_ = stage_ranks * pp;
  std::size_t d = 0;
  for (GroupKind k : order_) {
    if (k != GroupKind::EP) dense_order_[d++] = k;
  }
  dense_ = make_radix({tp, cp, 1, dp, pp});
  expert_ = make_radix({etp, 1, ep, edp_, pp});
  if (dense_.stride[kPp] != expert_.stride[kPp]) {
    throw std::invalid_argument(
        "the rank order gives expert and dense layers different pipeline groups (Megatron-core "
        "requires them to coincide); move pp after the dimensions that differ");
  }
}

int RankLayout::slot(GroupKind kind) {
  switch (kind) {
    case GroupKind::TP: return kTp;
    case GroupKind::CP: return kCp;
    case GroupKind::EP: return kEp;
    case GroupKind::DP: return kDp;
    case GroupKind::PP: return kPp;
    default: return -1;
  }
}

RankLayout::Radix RankLayout::make_radix(const std::array<int, 5>& sizes) const {
  Radix r;
  r.size = sizes;
  int stride = 1;
  for (GroupKind k : order_) {
    const auto s = static_cast<std::size_t>(slot(k));
    r.stride[s] = stride;
    stride *= sizes[s];
  }
  return r;
}

int RankLayout::size(GroupKind kind) const {
  switch (kind) {
    case GroupKind::TP: return tp_;
    case GroupKind::CP: return cp_;
    case GroupKind::DP: return dp_;
    case GroupKind::PP: return pp_;
    case GroupKind::EP: return ep_;
    case GroupKind::ETP: return etp_;
    case GroupKind::EDP: return edp_;
    case GroupKind::DPCP: return dp_ * cp_;
    case GroupKind::EMB: return pp_ > 1 ? 2 : 1;
    case GroupKind::AMAX: return tp_ * cp_ * dp_;
  }
  return 1;
}

void RankLayout::check_rank(int rank) const {
  if (rank < 0 || rank >= world_) throw std::out_of_range("rank out of range");
}

int RankLayout::digit(const Radix& radix, int rank, int s) const {
  const auto i = static_cast<std::size_t>(s);
  return (rank / radix.stride[i]) % radix.size[i];
}

// The slots sorted fastest-varying first (their order in the layout).
std::vector<int> RankLayout::ordered_slots(std::vector<int> slots) const {
  std::sort(slots.begin(), slots.end(), [&](int a, int b) {
    return dense_.stride[static_cast<std::size_t>(a)] < dense_.stride[static_cast<std::size_t>(b)] ||
           (dense_.stride[static_cast<std::size_t>(a)] == dense_.stride[static_cast<std::size_t>(b)] &&
            a < b);
  });
  return slots;
}

// Index of `rank` among the ranks that differ from it only in `slots` (fastest first).
int RankLayout::index_in(const Radix& radix, int rank, const std::vector<int>& slots) const {
  int index = 0;
  int scale = 1;
  for (int s : slots) {
    index += digit(radix, rank, s) * scale;
    scale *= radix.size[static_cast<std::size_t>(s)];
  }
  return index;
}

// The ranks that differ from `rank` only in `slots`, ordered by index_in().
std::vector<int> RankLayout::vary(const Radix& radix, int rank, const std::vector<int>& slots) const {
  int base = rank;
  int count = 1;
  for (int s : slots) {
    base -= digit(radix, rank, s) * radix.stride[static_cast<std::size_t>(s)];
    count *= radix.size[static_cast<std::size_t>(s)];
  }
  std::vector<int> out(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    int r = base;
    int rest = i;
    for (int s : slots) {
      const auto si = static_cast<std::size_t>(s);
      r += (rest % radix.size[si]) * radix.stride[si];
      rest /= radix.size[si];
    }
    out[static_cast<std::size_t>(i)] = r;
  }
  return out;
}

int RankLayout::coord(int rank, GroupKind kind) const {
  check_rank(rank);
  switch (kind) {
    case GroupKind::TP: return digit(dense_, rank, kTp);
    case GroupKind::CP: return digit(dense_, rank, kCp);
    case GroupKind::DP: return digit(dense_, rank, kDp);
    case GroupKind::PP: return digit(dense_, rank, kPp);
    case GroupKind::EP: return digit(expert_, rank, kEp);
    case GroupKind::ETP: return digit(expert_, rank, kTp);
    case GroupKind::EDP: return digit(expert_, rank, kDp);
    case GroupKind::DPCP: return index_in(dense_, rank, ordered_slots({kCp, kDp}));
    case GroupKind::EMB: return pp_ > 1 && digit(dense_, rank, kPp) == pp_ - 1 ? 1 : 0;
    case GroupKind::AMAX: return index_in(dense_, rank, ordered_slots({kTp, kCp, kDp}));
  }
  return 0;
}

std::vector<int> RankLayout::group(int rank, GroupKind kind) const {
  check_rank(rank);
  switch (kind) {
    case GroupKind::TP: return vary(dense_, rank, {kTp});
    case GroupKind::CP: return vary(dense_, rank, {kCp});
    case GroupKind::DP: return vary(dense_, rank, {kDp});
    case GroupKind::PP: return vary(dense_, rank, {kPp});
    case GroupKind::EP: return vary(expert_, rank, {kEp});
    case GroupKind::ETP: return vary(expert_, rank, {kTp});
    case GroupKind::EDP: return vary(expert_, rank, {kDp});
    case GroupKind::DPCP: return vary(dense_, rank, ordered_slots({kCp, kDp}));
    case GroupKind::AMAX: return vary(dense_, rank, ordered_slots({kTp, kCp, kDp}));
    case GroupKind::EMB: {
      const int stage = digit(dense_, rank, kPp);
      if (pp_ == 1 || (stage != 0 && stage != pp_ - 1)) return {rank};
      const int first = rank - stage * dense_.stride[kPp];
      return {first, first + (pp_ - 1) * dense_.stride[kPp]};
    }
  }
  return {rank};
}

int RankLayout::pp_peer(int rank, Peer peer) const {
  if (peer == Peer::None) return -1;
  const int c = coord(rank, GroupKind::PP);
  const int next = peer == Peer::NextStage ? (c + 1) % pp_ : (c + pp_ - 1) % pp_;
  return rank + (next - c) * dense_.stride[kPp];
}

}  // namespace clustersim::sim
