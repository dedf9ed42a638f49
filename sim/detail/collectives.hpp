// Collective algorithms as flow plans, in a registry keyed by name (docs/engine.md). A plan is
// a list of phases; in each phase a rank sends some bytes to some peers and receives from a
// number of peers, all concurrently (a pipelined NCCL algorithm keeps every link of its pattern
// busy at once, so its steady state is these flows sharing the links), and phases run one
// after another. NCCL's latency terms are added analytically.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/cost_model.hpp"
#include "sim/trace.hpp"

namespace clustersim::sim::detail {

/// How a group sits on NVLink domains, seen from one member (computed once per rank and
/// communicator by group_shape()).
struct GroupShape {
  int p = 1;            ///< group size
  int domains = 1;      ///< distinct NVLink domains
  int local = 1;        ///< members per domain (when regular)
  int my_local = 1;     ///< members of my domain (regular or not)
  bool regular = true;  ///< every domain holds the same number of members
  int local_next = -1;  ///< next member in my domain (ring order inside the domain)
  int rail_next = -1;   ///< member of the next domain with my local index (regular only)
  std::vector<int> rail;  ///< members with my local index, one per domain, in domain order
  int rail_index = 0;   ///< my position in rail
  int min_local = 1;    ///< fewest members of any domain (the same for every member)
  /// Irregular groups: the member of the next domain (in domain order, wrapping) with my local
  /// index, when that domain holds one, else -1; the parallel crossings from my domain to it,
  /// min(my_local, its members); and whether the previous domain's member with my local index
  /// crosses to me.
  int cross_next = -1;
  int cross_width = 1;
  bool cross_in = false;
  /// Per-domain all-to-all peers (regular only): entry j-1 is the member of the domain at
  /// offset j (j = 1..domains-1) with local index (mine + j - 1) mod local.
  std::vector<int> domain_peers;
};

/// The shape of `members` (ring order) seen from members[index]; O(p).
GroupShape group_shape(const std::vector<int>& members, int index, int domain_size);

/// A position's links in NCCL's binary tree over positions 0..n-1 (src/graph/trees.cc,
/// ncclGetBtree), in order: a position's lowest set bit gives its level, its parent sets the
/// next bit, its children lie half a level either side, so most edges join neighbouring
/// positions (neighbouring domains of a rail, mostly under one leaf). -1: none.
struct TreeLinks {
  int up = -1;
  int down[2] = {-1, -1};
};

/// The links of position `q` (0 <= q < n) of the tree over `n` positions.
TreeLinks btree_links(int n, int q);

/// Where one member's traffic of a token exchange goes (DeepEP's normal kernels: a token crosses
/// to another NVLink domain once, to the member with the sender's local index, which forwards
/// it over NVLink to the domain's other members holding its experts; inside the sender's domain
/// it goes straight to each member holding one). Expectations per token of the sender, from
/// routing_hit_probability (sim/routing.hpp).
struct TokenFanout {
  /// NVLink copies per token this member sends: to the members of its domain its own tokens
  /// reach, and, for each member of another domain that lands tokens here, the copies it
  /// forwards (the same expectation per sender).
  double nvlink_copies = 0.0;
  /// Per other domain: the member that receives this member's tokens there, and the probability
  /// that a token goes to that domain (bytes on the network: that times Op::bytes).
  std::vector<std::pair<int, double>> remote;
  int remote_receives = 0;  ///< members of other domains that land their tokens on this one
};

/// The fanout of members[index] for routing `r` over `members` (group order = expert order).
/// @throws std::invalid_argument as check_routing.
TokenFanout token_fanout(const TokenRouting& r, const std::vector<int>& members, int index, int domain_size);

/// One collective call as one rank sees it.
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::AllReduce;
  double bytes = 0.0;                  ///< NCCL buffer size per rank (Op::bytes)
  const std::vector<int>* members = nullptr;  ///< group ranks in ring order
  int index = 0;                       ///< this rank's position in members
  int domain_size = 8;                 ///< GPUs per NVLink domain (rank / domain_size = domain)
  const GroupShape* shape = nullptr;   ///< group_shape(*members, index, domain_size)
  CollectiveParams nvl;                ///< cost parameters over NVLink
  CollectiveParams net;                ///< cost parameters across domains
  const TokenFanout* fanout = nullptr; ///< TokenExchange: token_fanout() of this member
};

/// One flow: to a rank, bytes on the wire, on a lane (flows of different lanes never match
/// each other, so that receives pair with the right senders in program order).
struct Flow {
  int to = 0;
  double bytes = 0.0;
  int lane = 0;
};

/// Flows of one phase for one rank: what it sends, and how many flows it receives per lane.
struct FlowPhase {
  std::vector<Flow> sends;
  std::vector<int> receive_lanes;  ///< one entry per incoming flow
};

/// Lanes per phase and phases per plan at most (mailbox addressing).
inline constexpr int kMaxLanes = 5;
inline constexpr int kMaxPhases = 3;

/// What one rank does for one call.
struct CollectivePlan {
  std::vector<FlowPhase> phases;
  double latency_s = 0.0;  ///< added after the flows
  const char* algorithm = "ring";
};

/// A registered algorithm.
struct CollectiveAlgorithm {
  const char* name;
  /// Whether it can run this call (kind and group layout).
  bool (*applicable)(const CollectiveCall&);
  /// This rank's plan.
  CollectivePlan (*plan)(const CollectiveCall&);
  /// NCCL-tuner-style time estimate (latency + bytes / algorithm bandwidth), seconds, for
  /// automatic selection; `link_bw` is the per-GPU bandwidth of NVLink and of the network.
  double (*estimate)(const CollectiveCall&, double nvlink_bw, double net_bw);
  /// Whether NCCL's tuner may pick it on its own (false: only when forced, `nccl_algo`).
  bool automatic = true;
};

/// All algorithms: ring, tree, hierarchical, nvls, pairwise (all-to-all), deepep (token
/// exchange), shift (ring shift).
const std::vector<CollectiveAlgorithm>& collective_algorithms();

/// The algorithm to use: `forced` if not empty ("ring", "tree", ...; falls back to ring, for
/// an all-to-all to pairwise, for a token exchange to deepep and for a ring shift to shift, when the forced one does not
/// apply to this call), else the applicable one with the lowest estimate. @throws std::invalid_argument for an unknown forced name.
const CollectiveAlgorithm& choose_algorithm(const CollectiveCall& call, std::string_view forced,
                                            double nvlink_bw, double net_bw);

}  // namespace clustersim::sim::detail
