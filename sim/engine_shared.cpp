// What the engine's actors share, looked up once per rank and cached (sim/detail/engine_state.hpp):
// platform route latencies, each communication op's cost-model parameters, and each rank's
// communicator groups with their NVLink-domain shape.
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim/detail/engine_state.hpp"

namespace clustersim::sim::detail {

namespace sg4 = simgrid::s4u;

// Latency of the platform route between two ranks' GPUs (cached per pair).
double Shared::route_latency(int from, int to) {
  auto& cache = ranks[static_cast<size_t>(from)].route_latency;
  auto it = cache.find(to);
  if (it != cache.end()) return it->second;
  std::vector<sg4::Link*> links;
  double latency = 0.0;
  platform->gpus[static_cast<size_t>(from)]->route_to(platform->gpus[static_cast<size_t>(to)], links, &latency);
  if (fold > 1) fold_route(from, to);
  cache.emplace(to, latency);
  return latency;
}

const CommParams& Shared::params(int rank, const Op& op) {
  const RankState& r = ranks[static_cast<size_t>(rank)];
  const auto prog = workload->program_of_rank[static_cast<size_t>(rank)];
  auto& table = comm_params[prog];
  if (table.empty()) table.resize(r.program->ops.size());
  CommParams& c = table[static_cast<size_t>(&op - r.program->ops.data())];
  if (!c.ready) {
    const auto* spec = std::get_if<CollectiveSpec>(&op.shape);
    if (spec != nullptr && spec->kind != CollectiveKind::RingShift) {
      const int p = group(rank, spec->group).size;
      // A token exchange (DeepEP) has no table of its own: its links run at the efficiency of
      // NCCL's all-to-all at the size the all-to-all dispatcher would send (top_k copies).
      const bool tokens = spec->kind == CollectiveKind::TokenExchange;
      const CollectiveKind kind = tokens ? CollectiveKind::AllToAll : spec->kind;
      const double bytes = tokens ? op.bytes * spec->routing.top_k : op.bytes;
      c.nvl = cost->protocol_collective_params(kind, bytes, p, LinkClass::NVLink, options->nccl_proto);
      c.net = cost->collective_params(kind, bytes, p, LinkClass::Network);
    } else {  // point-to-point transfers, and the point-to-point sends of a ring shift
      c.nvl = cost->p2p_params(op.bytes, LinkClass::NVLink);
      c.net = cost->p2p_params(op.bytes, LinkClass::Network);
    }
    if (options->interference) {
      for (int k = 0; k < kComputeClassCount; ++k) {
        c.overlap[static_cast<size_t>(k)] = cost->interference(static_cast<ComputeClass>(k), op.bytes);
        c.interferes = c.interferes || c.overlap[static_cast<size_t>(k)].compute_slowdown > 1.0;
      }
    }
    c.ready = true;
  }
  return c;
}

const GroupInfo& Shared::group(int rank, GroupKind kind) {
  auto& slot = ranks[static_cast<size_t>(rank)].groups[static_cast<size_t>(kind)];
  if (!slot) {
    auto g = std::make_unique<GroupInfo>();
    g->members = workload->layout.group(rank, kind);
    g->size = static_cast<int>(g->members.size());
    g->index = workload->layout.coord(rank, kind);
    g->next = g->members[static_cast<size_t>((g->index + 1) % g->size)];
    g->prev = g->members[static_cast<size_t>((g->index + g->size - 1) % g->size)];
    std::set<int> doms;
    for (int m : g->members) doms.insert(domain(m));
    g->domains = static_cast<int>(doms.size());
    g->shape = group_shape(g->members, g->index, platform->nvlink_domain_size);
    slot = std::move(g);
  }
  return *slot;
}

const TokenFanout& Shared::fanout(int rank, GroupKind kind, const TokenRouting& routing) {
  group(rank, kind);
  GroupInfo& g = *ranks[static_cast<size_t>(rank)].groups[static_cast<size_t>(kind)];
  for (const auto& [r, f] : g.fanouts) {
    if (r == routing) return f;
  }
  g.fanouts.emplace_back(routing, token_fanout(routing, g.members, g.index, platform->nvlink_domain_size));
  return g.fanouts.back().second;
}

// The step's breakdown, averaged over ranks (docs/engine.md, "Breakdown").
Breakdown account(Shared& sh, double& step) {
  step = 0.0;
  // A mirror's compute stream is its representative's (it plays only its DP streams); a folded
  // rank plays nothing and takes TP coordinate 0's times. Mirrors first: a folded rank's
  // coordinate 0 may be a mirror.
  auto take_times = [&sh](RankState& r, int source) {
    const RankState& src = sh.ranks[static_cast<size_t>(source)];
    r.busy = src.busy;
    r.exposed = src.exposed;
    r.exposed_by_group = src.exposed_by_group;
    r.exposed_other = src.exposed_other;
    r.bubble = src.bubble;
    r.compute_end = src.compute_end;
    r.end = std::max(r.end, src.end);
  };
  for (RankState& r : sh.ranks) {
    if (r.mirror) take_times(r, r.source);
  }
  for (RankState& r : sh.ranks) {
    if (r.folded_to >= 0) take_times(r, r.folded_to);
  }
  for (const RankState& r : sh.ranks) step = std::max(step, r.end);
  Breakdown b;
  for (const RankState& r : sh.ranks) {
    b.compute_s += r.busy;
    b.exposed_comm_s += r.exposed;
    for (size_t g = 0; g < r.exposed_by_group.size(); ++g) b.exposed_by_group_s[g] += r.exposed_by_group[g];
    b.exposed_other_s += r.exposed_other;
    b.bubble_s += r.bubble + (step - r.compute_end);
  }
  const auto n = static_cast<double>(sh.ranks.size());
  b.compute_s /= n;
  b.exposed_comm_s /= n;
  for (double& g : b.exposed_by_group_s) g /= n;
  b.exposed_other_s /= n;
  b.bubble_s /= n;
  return b;
}

std::string describe_blocked(const Shared& sh) {
  for (const RankState& r : sh.ranks) {
    for (size_t s = 0; s < r.current_op.size(); ++s) {
      if (r.current_op[s] < 0) continue;
      const Op& op = r.program->ops[static_cast<size_t>(r.current_op[s])];
      return "rank " + std::to_string(r.rank) + " stream " + to_string(r.plan->streams[s].stream) +
             " never finished op " + std::to_string(r.current_op[s]) + " (" +
             r.program->labels.at(op.label) + ")";
    }
  }
  return "no blocked actor found";
}

}  // namespace clustersim::sim::detail
