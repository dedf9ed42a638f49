// Collective algorithms as flow plans (see sim/detail/collectives.hpp and docs/engine.md).
// Traffic volumes follow the algorithms' textbook analyses (Thakur et al., "Optimization of
// collective communication operations in MPICH", IJHPCA 2005; NCCL's ring and double-binary-tree
// descriptions); step counts and latencies follow NCCL's tuning model (src/graph/tuning.cc).
#include "sim/detail/collectives.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "sim/routing.hpp"

namespace clustersim::sim::detail {

namespace {

using Shape = GroupShape;

double ring_factor(CollectiveKind k, int p) {
  return k == CollectiveKind::AllReduce ? 2.0 * (p - 1) / p : static_cast<double>(p - 1) / p;
}
int ring_steps(CollectiveKind k, int p) { return k == CollectiveKind::AllReduce ? 2 * (p - 1) : p - 1; }

double base_latency(const CollectiveCall& c, const Shape& s) {
  return s.domains > 1 ? c.net.base_latency_s : c.nvl.base_latency_s;
}

// --- ring: NCCL's rings, one per channel, cross domains at different GPUs, so the inter-domain
// hops of all channels together spread over every member's NIC: each rank sends (L-1)/L of its
// ring share to its domain neighbour over NVLink and 1/L to the same-rail member of the next
// domain (PXN/rail-aligned rings). A group split unevenly over domains (an NVL72 rack holding
// 36 of a group's members, the next 28) crosses each boundary with one ring share too, spread
// over as many members as both domains hold, min(L_d, L_d+1), each sending share / that to
// the member of the next domain with its local index; inside its domain each member sends
// (L_d - 1) / L_d of its share to its neighbour, as in the even case. ---
bool point_to_point_kind(CollectiveKind k) {
  return k == CollectiveKind::AllToAll || k == CollectiveKind::TokenExchange || k == CollectiveKind::RingShift;
}

bool ring_applicable(const CollectiveCall& c) { return !point_to_point_kind(c.kind); }

CollectivePlan ring_plan(const CollectiveCall& c) {
  const Shape& s = *c.shape;
  const double share = ring_factor(c.kind, s.p) * c.bytes;
  CollectivePlan plan;
  plan.algorithm = "ring";
  FlowPhase ph;
  const int next = (*c.members)[static_cast<size_t>((c.index + 1) % s.p)];
  if (s.domains == 1) {
    ph.sends.push_back({next, share / c.nvl.bandwidth_efficiency, 0});
    ph.receive_lanes = {0};
  } else if (!s.regular) {
    if (s.my_local > 1) {
      const double l = s.my_local;
      ph.sends.push_back({s.local_next, share * (l - 1) / l / c.nvl.bandwidth_efficiency, 0});
      ph.receive_lanes.push_back(0);
    }
    if (s.cross_next >= 0) ph.sends.push_back({s.cross_next, share / s.cross_width / c.net.bandwidth_efficiency, 1});
    if (s.cross_in) ph.receive_lanes.push_back(1);
  } else if (s.local == 1) {
    ph.sends.push_back({next, share / c.net.bandwidth_efficiency, 0});
    ph.receive_lanes = {0};
  } else {
    const double l = s.local;
    ph.sends.push_back({s.local_next, share * (l - 1) / l / c.nvl.bandwidth_efficiency, 0});
    ph.sends.push_back({s.rail_next, share / l / c.net.bandwidth_efficiency, 1});
    ph.receive_lanes = {0, 1};
  }
  plan.phases.push_back(std::move(ph));
  const int steps = ring_steps(c.kind, s.p);
  const int inter = s.domains > 1 ? ring_steps(c.kind, s.domains) : 0;
  plan.latency_s = base_latency(c, s) + (steps - inter) * c.nvl.step_latency_s + inter * c.net.step_latency_s;
  return plan;
}

double ring_estimate(const CollectiveCall& c, double nvlink_bw, double net_bw) {
  const Shape& s = *c.shape;
  const double share = ring_factor(c.kind, s.p) * c.bytes;
  if (s.domains == 1) return ring_plan(c).latency_s + share / (c.nvl.bandwidth_efficiency * nvlink_bw);
  double t = share / s.min_local / (c.net.bandwidth_efficiency * net_bw);
  // The NVLink leg runs beside the network leg (ring_plan), as tree_estimate weighs its
  // intra-domain exchange. Irregular groups' legs differ by member and every member must
  // choose alike, so only the network leg, which min_local makes the same for all, counts.
  if (s.regular && s.local > 1) {
    const double l = s.local;
    t = std::max(t, share * (l - 1) / l / (c.nvl.bandwidth_efficiency * nvlink_bw));
  }
  return ring_plan(c).latency_s + t;
}

// --- shift: a ring shift (context parallelism's K/V exchange, Transformer Engine's batched
// isend/irecv to the next and from the previous CP rank) is one point-to-point send of the
// whole buffer to the next member: a member at an NVLink-domain boundary pushes it through its
// own NIC (one send is not spread over the domain's NICs, as NCCL's channels spread a ring
// collective). Latency: a point-to-point transfer's (base + one step, as the engine charges a
// pipeline transfer) of the network where it sends or receives across domains, else NVLink's. ---
bool shift_applicable(const CollectiveCall& c) { return c.kind == CollectiveKind::RingShift; }

bool crosses_domain(const CollectiveCall& c, int offset) {
  const auto& m = *c.members;
  const int p = static_cast<int>(m.size());
  const int other = m[static_cast<size_t>((c.index + offset + p) % p)];
  return other / c.domain_size != m[static_cast<size_t>(c.index)] / c.domain_size;
}

CollectivePlan shift_plan(const CollectiveCall& c) {
  const auto& m = *c.members;
  const int p = static_cast<int>(m.size());
  const bool out = crosses_domain(c, 1), in = crosses_domain(c, -1);
  const CollectiveParams& send = out ? c.net : c.nvl;
  CollectivePlan plan;
  plan.algorithm = "shift";
  plan.phases.push_back(FlowPhase{
      {{m[static_cast<size_t>((c.index + 1) % p)], c.bytes / send.bandwidth_efficiency, 0}}, {0}});
  const CollectiveParams& lat = out || in ? c.net : c.nvl;
  plan.latency_s = lat.base_latency_s + lat.step_latency_s;
  return plan;
}

double shift_estimate(const CollectiveCall& c, double nvlink_bw, double net_bw) {
  const CollectivePlan plan = shift_plan(c);  // one flow, its bytes over the efficiency of its link
  return plan.latency_s + plan.phases[0].sends[0].bytes / (crosses_domain(c, 1) ? net_bw : nvlink_bw);
}

// --- pairwise all-to-all: every member sends bytes/p to every other member at once; each GPU's
// traffic leaves through its own NIC (a NIC cannot aggregate for other GPUs). The engine plays
// bundles of the per-peer flows that put exactly the per-peer pattern's bytes on every NVLink
// port and every NIC, out and in (docs/engine.md, "All-to-all"):
// - inside the domain, one flow carrying the bytes of all local peers ((L-1) x bytes/p) to the
//   next member of the domain: NVSwitch is non-blocking, so each GPU's up and down NVLink carry
//   what they carry per peer, and a domain plays L flows instead of L x (L - 1);
// - across domains of a regular group, one flow per remote domain carrying that domain's
//   members' share (L x bytes/p), to the member with local index li + j - 1 (mod L) of the
//   domain at offset j (the targets form a permutation per offset; offset 1 stays on the
//   sender's rail, the others cross rails, as 1 in L of the per-peer flows stays on it): D - 1
//   flows instead of (D - 1) x L;
// - across domains of an irregular group (an NVL72 rack split between stages), the n = p - L
//   senders into a domain of L members each supply L units of bytes/p and its members each take
//   n: laid out on one line (sender k covers [kL, (k+1)L), member j covers [jn, (j+1)n)), every
//   overlap is one flow, at most n + L - 1 flows per remote domain instead of n x L. ---
bool pairwise_applicable(const CollectiveCall& c) { return c.kind == CollectiveKind::AllToAll; }

/// Members grouped by NVLink domain in first-appearance order, and where `me` sits.
struct DomainGroups {
  std::vector<std::vector<int>> members;
  int mine = 0;   ///< my domain's slot
  int local = 0;  ///< my index in it
};

DomainGroups domain_groups(const std::vector<int>& members, int me, int domain_size) {
  DomainGroups g;
  std::unordered_map<int, int> slot;
  for (int r : members) {
    auto [it, fresh] = slot.emplace(r / domain_size, static_cast<int>(g.members.size()));
    if (fresh) g.members.emplace_back();
    if (r == me) {
      g.mine = it->second;
      g.local = static_cast<int>(g.members[static_cast<size_t>(it->second)].size());
    }
    g.members[static_cast<size_t>(it->second)].push_back(r);
  }
  return g;
}

// The irregular group's remote flows of this rank (lane 1) and the receives it expects.
void irregular_remote_flows(const CollectiveCall& c, double per_peer, FlowPhase& ph) {
  const int me = (*c.members)[static_cast<size_t>(c.index)];
  const DomainGroups g = domain_groups(*c.members, me, c.domain_size);
  const long long p = static_cast<long long>(c.members->size());
  long long before_mine = 0;  // members of the domains before mine
  for (int d = 0; d < g.mine; ++d) before_mine += static_cast<long long>(g.members[static_cast<size_t>(d)].size());
  for (size_t e = 0; e < g.members.size(); ++e) {
    if (static_cast<int>(e) == g.mine) continue;
    const auto& to = g.members[e];
    const long long l = static_cast<long long>(to.size());
    const long long n = p - l;
    const long long k = before_mine - (static_cast<int>(e) < g.mine ? l : 0) + g.local;  // my sender index
    for (long long j = k * l / n; j <= ((k + 1) * l - 1) / n; ++j) {
      const long long units = std::min((k + 1) * l, (j + 1) * n) - std::max(k * l, j * n);
      ph.sends.push_back({to[static_cast<size_t>(j)], per_peer * static_cast<double>(units) / c.net.bandwidth_efficiency, 1});
    }
  }
  const long long l = static_cast<long long>(g.members[static_cast<size_t>(g.mine)].size());
  const long long n = p - l;
  const long long from = g.local * n / l, to = ((g.local + 1) * n - 1) / l;
  for (long long k = from; k <= to; ++k) ph.receive_lanes.push_back(1);
}

CollectivePlan pairwise_plan(const CollectiveCall& c) {
  const Shape& s = *c.shape;
  CollectivePlan plan;
  plan.algorithm = "pairwise";
  FlowPhase ph;
  const double per_peer = c.bytes / s.p;
  if (s.my_local > 1) {  // my domain's share as one flow round the domain's members
    ph.sends.push_back({s.local_next, per_peer * (s.my_local - 1) / c.nvl.bandwidth_efficiency, 0});
    ph.receive_lanes.push_back(0);
  }
  if (s.domains > 1 && s.regular) {
    for (int to : s.domain_peers) {  // group_shape: one member of each other domain
      ph.sends.push_back({to, per_peer * s.local / c.net.bandwidth_efficiency, 1});
      ph.receive_lanes.push_back(1);
    }
  } else if (s.domains > 1) {
    irregular_remote_flows(c, per_peer, ph);
  }
  plan.phases.push_back(std::move(ph));
  plan.latency_s = base_latency(c, s) + (s.domains > 1 ? c.net.step_latency_s : c.nvl.step_latency_s);
  return plan;
}

double pairwise_estimate(const CollectiveCall& c, double nvlink_bw, double net_bw) {
  const Shape& s = *c.shape;
  const double bw = s.domains > 1 ? c.net.bandwidth_efficiency * net_bw : c.nvl.bandwidth_efficiency * nvlink_bw;
  return pairwise_plan(c).latency_s + c.bytes * (s.p - 1) / s.p / bw;
}

// --- hierarchical all-reduce / all-gather / reduce-scatter: intra-domain reduce-scatter, then
// the collective per rail across domains on 1/L of the data, then intra-domain all-gather. ---
bool hierarchical_applicable(const CollectiveCall& c) {
  if (point_to_point_kind(c.kind)) return false;
  const Shape& s = *c.shape;
  return s.domains > 1 && s.regular && s.local > 1;
}

CollectivePlan hierarchical_plan(const CollectiveCall& c) {
  const Shape& s = *c.shape;
  const double l = s.local, r = s.domains, b = c.bytes;
  const double intra = (l - 1) / l * b / c.nvl.bandwidth_efficiency;
  const double inter = ring_factor(c.kind, s.domains) * (b / l) / c.net.bandwidth_efficiency;
  auto phase = [](int to, double bytes) { return FlowPhase{{{to, bytes, 0}}, {0}}; };
  CollectivePlan plan;
  plan.algorithm = "hierarchical";
  if (c.kind != CollectiveKind::AllGather) plan.phases.push_back(phase(s.local_next, intra));
  plan.phases.push_back(phase(s.rail_next, inter));
  if (c.kind != CollectiveKind::ReduceScatter) plan.phases.push_back(phase(s.local_next, intra));
  const int intra_phases = c.kind == CollectiveKind::AllReduce ? 2 : 1;
  plan.latency_s = c.net.base_latency_s + intra_phases * (l - 1) * c.nvl.step_latency_s +
                   ring_steps(c.kind, static_cast<int>(r)) * c.net.step_latency_s;
  return plan;
}

double hierarchical_estimate(const CollectiveCall& c, double nvlink_bw, double net_bw) {
  const CollectivePlan plan = hierarchical_plan(c);
  double t = plan.latency_s;
  for (const FlowPhase& ph : plan.phases) {
    const int to = ph.sends[0].to;
    const int me = (*c.members)[static_cast<size_t>(c.index)];
    const bool nvlink = to / c.domain_size == me / c.domain_size;
    t += ph.sends[0].bytes / (nvlink ? nvlink_bw : net_bw);
  }
  return t;
}

// --- double binary tree all-reduce across domains (NCCL 2.4+): per rail, two binary trees over
// the domains, each carrying half the rail's 1/L of the data, reduce up and broadcast down,
// pipelined (all flows at once); inside a domain a ring exchange of the full buffer. ---
bool tree_applicable(const CollectiveCall& c) {
  if (c.kind != CollectiveKind::AllReduce) return false;
  const Shape& s = *c.shape;
  return s.domains >= 2 && s.regular;
}

// Flows of one of NCCL's two trees over the rail (ncclGetDtree: the second tree mirrors the
// first over an even number of positions and shifts it by one over an odd number). Lanes:
// first_lane for reduce (up), first_lane+1 for broadcast (down).
void add_tree_flows(FlowPhase& ph, const Shape& s, bool second, double bytes, int first_lane) {
  const int n = static_cast<int>(s.rail.size());
  const bool mirror = n % 2 == 0;
  // Position of rail member i in this tree, and back.
  auto to_pos = [&](int i) { return !second ? i : (mirror ? n - 1 - i : (i - 1 + n) % n); };
  auto member = [&](int q) {
    const int i = !second ? q : (mirror ? n - 1 - q : (q + 1) % n);
    return s.rail[static_cast<size_t>(i)];
  };
  const TreeLinks t = btree_links(n, to_pos(s.rail_index));
  if (t.up >= 0) {
    ph.sends.push_back({member(t.up), bytes, first_lane});  // reduce up
    ph.receive_lanes.push_back(first_lane + 1);             // broadcast down
  }
  for (const int child : t.down) {
    if (child < 0) continue;
    ph.sends.push_back({member(child), bytes, first_lane + 1});  // broadcast down
    ph.receive_lanes.push_back(first_lane);                     // reduce up
  }
}

CollectivePlan tree_plan(const CollectiveCall& c) {
  const Shape& s = *c.shape;
  const double l = s.local;
  const int n = s.domains;
  CollectivePlan plan;
  plan.algorithm = "tree";
  FlowPhase ph;
  const double half = c.bytes / l / 2.0 / c.net.bandwidth_efficiency;
  add_tree_flows(ph, s, false, half, 0);
  add_tree_flows(ph, s, true, half, 2);
  if (s.local > 1) {  // the intra-domain exchange on a lane of its own (lane 4)
    ph.sends.push_back({s.local_next, 2.0 * (l - 1) / l * c.bytes / c.nvl.bandwidth_efficiency, 4});
    ph.receive_lanes.push_back(4);
  }
  plan.phases.push_back(std::move(ph));
  const double depth = std::ceil(std::log2(static_cast<double>(n)));
  plan.latency_s = c.net.base_latency_s + 2.0 * ((l - 1) * c.nvl.step_latency_s + depth * c.net.step_latency_s);
  return plan;
}

double tree_estimate(const CollectiveCall& c, double nvlink_bw, double net_bw) {
  const Shape& s = *c.shape;
  const double l = s.local;
  // An interior node of one tree sends up once and down twice, a leaf of the other up once:
  // 4 halves of B/L per NIC and direction in total.
  const double inter = 2.0 * c.bytes / l / (c.net.bandwidth_efficiency * net_bw);
  const double intra = s.local > 1 ? 2.0 * (l - 1) / l * c.bytes / (c.nvl.bandwidth_efficiency * nvlink_bw) : 0.0;
  return tree_plan(c).latency_s + std::max(inter, intra);
}

// --- NVLS (NVLink SHARP): the NVSwitch reduces and multicasts, so each GPU sends and receives
// the buffer once instead of 2(p-1)/p times. Only inside one NVLink domain, and only when asked
// for (`nccl_algo: nvls`): whether a cluster enables it is a deployment choice
// (NCCL_NVLS_ENABLE); our H200 calibration ran with it off. ---
bool nvls_applicable(const CollectiveCall& c) {
  return c.kind == CollectiveKind::AllReduce && c.shape->domains == 1 && c.members->size() > 2;
}

CollectivePlan nvls_plan(const CollectiveCall& c) {
  CollectivePlan plan;
  plan.algorithm = "nvls";
  const auto& m = *c.members;
  plan.phases.push_back(FlowPhase{
      {{m[static_cast<size_t>((c.index + 1) % static_cast<int>(m.size()))], c.bytes / c.nvl.bandwidth_efficiency, 0}},
      {0}});
  plan.latency_s = c.nvl.base_latency_s + 2.0 * c.nvl.step_latency_s;
  return plan;
}

// The played plan's time: its latency and the buffer once over this GPU's NVLink. Used where the
// engine estimates a call instead of playing it (TP groups, amax reductions); never chosen
// automatically (`automatic` false below).
double nvls_estimate(const CollectiveCall& c, double nvlink_bw, double) {
  return nvls_plan(c).latency_s + c.bytes / (c.nvl.bandwidth_efficiency * nvlink_bw);
}

// --- deepep: a MoE token dispatch or combine as DeepEP's normal kernels run it (DeepSeek-AI,
// DeepEP, github.com/deepseek-ai/DeepEP, README "Normal kernels": intranode over NVLink,
// internode RDMA to the same-index GPU of each target node, then NVLink forwarding; Megatron-core
// MoEFlexTokenDispatcher with the deepep backend). A token goes once to each member holding one
// of its experts (not once per expert, as the all-to-all dispatcher's copies), and once to each
// other domain holding one. One phase: lane 0, the NVLink copies of this member (its own tokens
// to its domain, the forwarded ones) as one flow round the domain as pairwise bundles them;
// lane 1, a flow to each other domain's landing member. The combine sends the same volumes back
// (the landing member sums the domain's partial outputs before they cross), so it plays the same
// plan. ---
bool deepep_applicable(const CollectiveCall& c) {
  return c.kind == CollectiveKind::TokenExchange && c.fanout != nullptr;
}

const TokenFanout& fanout_of(const CollectiveCall& c) {
  if (c.fanout == nullptr) throw std::logic_error("token exchange without its fanout (token_fanout)");
  return *c.fanout;
}

CollectivePlan deepep_plan(const CollectiveCall& c) {
  const Shape& s = *c.shape;
  const TokenFanout& f = fanout_of(c);
  CollectivePlan plan;
  plan.algorithm = "deepep";
  FlowPhase ph;
  if (s.my_local > 1) {
    ph.sends.push_back({s.local_next, c.bytes * f.nvlink_copies / c.nvl.bandwidth_efficiency, 0});
    ph.receive_lanes.push_back(0);
  }
  for (const auto& [to, share] : f.remote) {
    ph.sends.push_back({to, c.bytes * share / c.net.bandwidth_efficiency, 1});
  }
  ph.receive_lanes.insert(ph.receive_lanes.end(), static_cast<size_t>(f.remote_receives), 1);
  plan.phases.push_back(std::move(ph));
  plan.latency_s = base_latency(c, s) + (s.domains > 1 ? c.net.step_latency_s : c.nvl.step_latency_s);
  return plan;
}

double deepep_estimate(const CollectiveCall& c, double nvlink_bw, double net_bw) {
  const TokenFanout& f = fanout_of(c);
  double remote = 0.0;
  for (const auto& entry : f.remote) remote += entry.second;
  const double nvl = c.bytes * f.nvlink_copies / (c.nvl.bandwidth_efficiency * nvlink_bw);
  const double net = c.bytes * remote / (c.net.bandwidth_efficiency * net_bw);
  return deepep_plan(c).latency_s + std::max(nvl, net);
}

const CollectiveAlgorithm& by_name(std::string_view name) {
  for (const auto& a : collective_algorithms()) {
    if (a.name == name) return a;
  }
  throw std::logic_error("collective algorithm registry lacks '" + std::string(name) + "'");
}

}  // namespace

TokenFanout token_fanout(const TokenRouting& r, const std::vector<int>& members, int index, int domain_size) {
  const int p = static_cast<int>(members.size());
  const int me = members[static_cast<size_t>(index)];
  const DomainGroups g = domain_groups(members, me, domain_size);
  std::unordered_map<int, int> position;  // rank -> index in group order (expert order)
  for (int i = 0; i < p; ++i) position.emplace(members[static_cast<size_t>(i)], i);
  const auto& mine = g.members[static_cast<size_t>(g.mine)];
  const int my_size = static_cast<int>(mine.size());
  TokenFanout f;
  double local_copies = 0.0;  // expected members of my domain other than me a token reaches
  for (int m : mine) {
    if (m != me) local_copies += routing_hit_probability(r, p, {position.at(m)});
  }
  for (size_t e = 0; e < g.members.size(); ++e) {
    if (static_cast<int>(e) == g.mine) continue;
    const auto& dom = g.members[e];
    const int size = static_cast<int>(dom.size());
    std::vector<int> positions;
    for (int m : dom) positions.push_back(position.at(m));
    f.remote.emplace_back(dom[static_cast<size_t>(g.local % size)], routing_hit_probability(r, p, positions));
    for (int j = 0; j < size; ++j) f.remote_receives += j % my_size == g.local ? 1 : 0;
  }
  f.nvlink_copies = local_copies * (1 + f.remote_receives);
  return f;
}

const std::vector<CollectiveAlgorithm>& collective_algorithms() {
  static const std::vector<CollectiveAlgorithm> kAlgorithms = {
      {"ring", ring_applicable, ring_plan, ring_estimate},
      {"tree", tree_applicable, tree_plan, tree_estimate},
      {"hierarchical", hierarchical_applicable, hierarchical_plan, hierarchical_estimate, false},
      {"nvls", nvls_applicable, nvls_plan, nvls_estimate, false},
      {"pairwise", pairwise_applicable, pairwise_plan, pairwise_estimate},
      {"deepep", deepep_applicable, deepep_plan, deepep_estimate},
      {"shift", shift_applicable, shift_plan, shift_estimate},
  };
  return kAlgorithms;
}

const CollectiveAlgorithm& choose_algorithm(const CollectiveCall& call, std::string_view forced,
                                            double nvlink_bw, double net_bw) {
  const auto& all = collective_algorithms();
  const CollectiveAlgorithm* fallback = &all.front();
  if (call.kind == CollectiveKind::AllToAll) fallback = &by_name("pairwise");
  if (call.kind == CollectiveKind::TokenExchange) fallback = &by_name("deepep");
  if (call.kind == CollectiveKind::RingShift) fallback = &by_name("shift");
  if (!forced.empty()) {
    for (const auto& a : all) {
      if (a.name == forced) return a.applicable(call) ? a : *fallback;
    }
    throw std::invalid_argument("unknown collective algorithm '" + std::string(forced) + "'");
  }
  // NCCL's tuner picks the algorithm with the lowest modelled time; "hierarchical" is not an
  // NCCL algorithm (it is what CollNet-less multi-level schemes do) and NVLS is a deployment
  // choice (NCCL_NVLS_ENABLE, off on our calibration machine), so both only when forced.
  const CollectiveAlgorithm* best = fallback;
  double best_t = std::numeric_limits<double>::infinity();
  for (const auto& a : all) {
    if (!a.automatic || !a.applicable(call)) continue;
    const double t = a.estimate(call, nvlink_bw, net_bw);
    if (t < best_t) {
      best_t = t;
      best = &a;
    }
  }
  return *best;
}

}  // namespace clustersim::sim::detail
