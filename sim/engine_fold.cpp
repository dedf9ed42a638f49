// Playing one rank per TP group (EngineOptions::fold_tp, docs/engine.md). With TP collectives
// estimated, the ranks of a TP group run one program and never exchange flows; every other
// communicator stays on one TP coordinate (tp_fold_problem), so the coordinates' traffic runs
// as copies of each other on the fabric. Links private to one coordinate (its GPU's NIC, the
// leaf of its rail) need nothing; a link k coordinates share (a spine group's core uplinks, a
// leaf serving several rails) would carry k copies of each played flow, so the platform gives
// it 1/k of its bandwidth (BuiltPlatform::fold_lanes): max-min sharing is invariant under that
// scaling of k identical flow sets. Here each played route is checked against the scaling.
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/detail/engine_state.hpp"

namespace clustersim::sim::detail {
namespace {

namespace sg4 = simgrid::s4u;

bool fatpipe(const sg4::Link* link) {
  return link->get_sharing_policy() == sg4::Link::SharingPolicy::FATPIPE;
}

[[noreturn]] void asymmetric(int from, int to, const sg4::Link* link) {
  throw std::runtime_error(
      "one rank per TP group cannot stand for the others: the routes of rank " +
      std::to_string(from) + " -> " + std::to_string(to) + " and of its TP images use link " +
      link->get_name() + " unlike the platform's scaling; set simulation.fold_tp: false");
}

}  // namespace

void Shared::fold_route(int from, int to) {
  std::vector<sg4::Link*> own;
  double latency = 0.0;
  platform->gpus[static_cast<size_t>(from)]->route_to(platform->gpus[static_cast<size_t>(to)], own, &latency);
  std::unordered_map<sg4::Link*, int> share;
  for (sg4::Link* l : own) share.emplace(l, 1);
  const std::vector<int>& src = group(from, GroupKind::TP).members;
  const std::vector<int>& dst = group(to, GroupKind::TP).members;
  std::vector<sg4::Link*> image;
  for (int t = 1; t < fold; ++t) {
    image.clear();
    platform->gpus[static_cast<size_t>(src[static_cast<size_t>(t)])]->route_to(
        platform->gpus[static_cast<size_t>(dst[static_cast<size_t>(t)])], image, &latency);
    for (sg4::Link* l : image) {
      auto it = share.find(l);
      if (it != share.end()) {
        ++it->second;
      } else if (!fatpipe(l)) {
        if (fold_seen.count(l) != 0) asymmetric(from, to, l);
        fold_images.insert(l);
      }
    }
  }
  // Each link of the played route must carry exactly the lanes the platform scaled it for.
  for (const auto& [link, k] : share) {
    if (fatpipe(link)) continue;
    if (fold_images.count(link) != 0) asymmetric(from, to, link);
    const auto it = fold_scaled.find(link);
    if (k != (it == fold_scaled.end() ? 1 : it->second)) asymmetric(from, to, link);
    fold_seen.insert(link);
  }
}

bool timeline_wanted(const EngineOptions& options, int rank) {
  const auto& only = options.timeline_ranks;
  return options.record_timeline &&
         (only.empty() || std::find(only.begin(), only.end(), rank) != only.end());
}

void unfold_timeline(Shared& sh) {
  std::vector<TimelineEvent> out;
  for (TimelineEvent& e : sh.timeline) {
    for (int m : sh.group(e.rank, GroupKind::TP).members) {
      if (m == e.rank || !timeline_wanted(*sh.options, m)) continue;
      TimelineEvent copy = e;
      copy.rank = m;
      out.push_back(std::move(copy));
    }
    if (timeline_wanted(*sh.options, e.rank)) out.push_back(std::move(e));
  }
  sh.timeline = std::move(out);
}

}  // namespace clustersim::sim::detail
