#include "platforms/topology.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/units.hpp"

namespace clustersim::platforms {
namespace {

constexpr int kMinGpus = 1;
constexpr long long kMaxGpus = kMaxClusterGpus;

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// Leaf and spine-group layout of `gpus` GPUs; `error` is set when they do not fit.
struct Layout {
  int nodes = 0, domains = 0, nics = 0, nics_per_domain = 0;
  int rails_per_leaf = 1, nodes_per_leaf = 1, leaves_per_su = 0;
  int leaves = 0, tiers = 2, leaves_per_pod = 1, pods = 1;
  std::string error;
};

// Leaves of a 3-tier spine group: as many whole scalable units (rail-optimized) or leaves
// (non-rail) as a spine's leaf-facing ports reach. 0 when one SU has more leaves than that.
int leaves_per_pod_3tier(const PlatformSpec& s, int leaves_per_su) {
  const int down = s.fabric.switch_radix / 2;
  if (s.fabric.kind == FabricKind::NonRail) return down;
  return (down / leaves_per_su) * leaves_per_su;
}

Layout make_layout(const PlatformSpec& s, long long gpus) {
  Layout l;
  const auto& n = s.node;
  const int down = s.fabric.switch_radix / 2;
  const int radix = s.fabric.switch_radix;
  l.nodes = static_cast<int>(ceil_div(gpus, n.gpus_per_node));
  l.domains = static_cast<int>(ceil_div(gpus, n.nvlink_domain_size));
  l.nics = l.nodes * n.nics_per_node;
  l.nics_per_domain = n.nics_per_node * (n.nvlink_domain_size / n.gpus_per_node);
  if (s.fabric.kind == FabricKind::RailOptimized) {
    l.rails_per_leaf = down / s.fabric.domains_per_su;
    l.leaves_per_su = l.nics_per_domain / l.rails_per_leaf;
    l.leaves = static_cast<int>(ceil_div(l.domains, s.fabric.domains_per_su)) * l.leaves_per_su;
  } else {
    l.nodes_per_leaf = down / n.nics_per_node;
    l.leaves = static_cast<int>(ceil_div(l.nodes, l.nodes_per_leaf));
  }
  const bool fits_two = l.leaves <= radix;
  l.tiers = s.fabric.tiers != 0 ? s.fabric.tiers : (fits_two ? 2 : 3);
  if (l.tiers == 2) {
    if (!fits_two) l.error = "needs more than 2 tiers";
    l.leaves_per_pod = l.leaves;
    return l;
  }
  l.leaves_per_pod = leaves_per_pod_3tier(s, l.leaves_per_su);
  if (l.leaves_per_pod == 0) {
    l.error = "a scalable unit has more leaves than a spine has leaf-facing ports";
    return l;
  }
  l.pods = static_cast<int>(ceil_div(l.leaves, l.leaves_per_pod));
  if (l.pods > radix) l.error = "needs more than 3 tiers";
  return l;
}

}  // namespace

int uplink_ports(int switch_radix, double requested) {
  const int down = switch_radix / 2;
  return std::max(1, static_cast<int>(std::ceil(down / requested - 1e-9)));
}

double built_oversubscription(int switch_radix, double requested) {
  return static_cast<double>(switch_radix / 2) / uplink_ports(switch_radix, requested);
}

const char* to_string(PathClass cls) {
  switch (cls) {
    case PathClass::Local: return "local";
    case PathClass::NVLink: return "nvlink";
    case PathClass::Host: return "host";
    case PathClass::Leaf: return "leaf";
    case PathClass::Spine: return "spine";
    case PathClass::Core: return "core";
  }
  return "?";
}

long long Topology::max_gpus(const PlatformSpec& s, int tiers) {
  const Layout one = make_layout(s, s.node.nvlink_domain_size);
  const long long radix = s.fabric.switch_radix;
  long long max_leaves = radix;
  if (tiers == 3) max_leaves = radix * leaves_per_pod_3tier(s, one.leaves_per_su);
  if (s.fabric.kind == FabricKind::NonRail)
    return max_leaves * one.nodes_per_leaf * s.node.gpus_per_node;
  const long long sus = max_leaves / one.leaves_per_su;
  return sus * s.fabric.domains_per_su * s.node.nvlink_domain_size;
}

long long Topology::max_gpus_any(const PlatformSpec& s) {
  if (s.fabric.tiers != 0) return max_gpus(s, s.fabric.tiers);
  return std::max(max_gpus(s, 2), max_gpus(s, 3));
}

std::string Topology::check(const PlatformSpec& s, int gpus) {
  const int per_node = s.node.gpus_per_node;
  if (gpus < kMinGpus || gpus > kMaxGpus)
    return "must be between " + std::to_string(kMinGpus) + " and " + std::to_string(kMaxGpus);
  // Part of one node (1, 2, 4 of an HGX node's 8 GPUs): its GPUs, their NICs and the node's host.
  if (gpus < per_node && per_node % gpus != 0)
    return "must divide gpus_per_node (" + std::to_string(per_node) + ") or be a multiple of it";
  if (gpus > per_node && gpus % per_node != 0)
    return "must be a multiple of gpus_per_node (" + std::to_string(per_node) + ")";
  const Layout l = make_layout(s, gpus);
  if (l.error.empty()) return "";
  // With tiers: auto the larger of the 2- and 3-tier capacities is the limit (a 3-tier fabric
  // can hold fewer GPUs than a 2-tier one when one scalable unit has more leaves than a spine
  // reaches).
  const int tiers = s.fabric.tiers;
  const std::string built = tiers == 0 ? "2- or 3-tier" : std::to_string(tiers) + "-tier";
  return count_noun(gpus, "GPU", "GPUs") + (gpus == 1 ? " does" : " do") + " not fit " + s.name + "'s " + built +
         " fabric of " +
         std::to_string(s.fabric.switch_radix) + "-port switches (" + l.error + "; at most " +
         count_noun(max_gpus_any(s), "GPU", "GPUs") + ")";
}

Topology::Topology(const PlatformSpec& spec, int gpus) : spec_(spec), gpus_(gpus) {
  const std::string problem = check(spec, gpus);
  if (!problem.empty()) throw std::invalid_argument("gpus: " + problem);
  const Layout l = make_layout(spec, gpus);
  nodes_ = l.nodes;
  domains_ = l.domains;
  nics_ = l.nics;
  nics_per_domain_ = l.nics_per_domain;
  rails_per_leaf_ = l.rails_per_leaf;
  nodes_per_leaf_ = l.nodes_per_leaf;
  leaves_per_su_ = l.leaves_per_su;
  leaves_ = l.leaves;
  tiers_ = l.tiers;
  leaves_per_pod_ = l.leaves_per_pod;
  pods_ = l.pods;
  init_link_classes();
}

void Topology::init_link_classes() {
  const auto& n = spec_.node;
  const double sw = spec_.fabric.switch_latency.value;
  const auto& f = spec_.fabric;
  const double leaf_bw = (f.switch_radix / 2) * n.nic_bandwidth.value /
                         built_oversubscription(f.switch_radix, f.oversubscription.leaf);
  const double pod_bw =
      leaves_per_pod_ * leaf_bw / built_oversubscription(f.switch_radix, f.oversubscription.spine);
  const bool leaf_links = leaves_ > 1;
  const bool pod_links = tiers_ == 3 && pods_ > 1;
  auto set = [this](LinkKind k, LinkClassInfo info) { classes_[static_cast<int>(k)] = info; };
  // A route's latency is 2 x nic_latency + (switches crossed) x switch_latency: nic_up carries
  // the sending NIC and the leaf it enters, each uplink/downlink the switch it leads into.
  set(LinkKind::NvlUp, {"nvl_up", gpus_, n.nvlink_bandwidth.value, n.nvlink_latency.value / 2, false});
  set(LinkKind::NvlDown, {"nvl_down", gpus_, n.nvlink_bandwidth.value, n.nvlink_latency.value / 2, false});
  set(LinkKind::HostUp, {"host_up", gpus_, n.host_link_bandwidth.value, 0.0, false});
  set(LinkKind::HostDown, {"host_down", gpus_, n.host_link_bandwidth.value, 0.0, false});
  set(LinkKind::NicUp, {"nic_up", nics_, n.nic_bandwidth.value, n.nic_latency.value + sw, false});
  set(LinkKind::NicDown, {"nic_down", nics_, n.nic_bandwidth.value, n.nic_latency.value, false});
  set(LinkKind::LeafUp, {"leaf_up", leaf_links ? leaves_ : 0, leaf_bw, sw, false});
  set(LinkKind::LeafDown, {"leaf_down", leaf_links ? leaves_ : 0, leaf_bw, sw, false});
  set(LinkKind::PodUp, {"pod_up", pod_links ? pods_ : 0, pod_bw, sw, false});
  set(LinkKind::PodDown, {"pod_down", pod_links ? pods_ : 0, pod_bw, sw, false});
  // Stand-ins: same bandwidth as the tier links they replace, never a constraint (FATPIPE, and
  // an uplink carries at least one NIC's bandwidth), so every network route has the same sum of
  // 1/bandwidth and the network/weight-S sharing penalty is the same for all (docs/platforms.md).
  // One per NIC and direction: a stand-in shared by all routes would couple every flow of the
  // cluster into one max-min system, re-solved at each completion (90% of the engine's time at
  // 4,096 GPUs when it was a single link); per NIC it couples only flows the NIC couples anyway.
  set(LinkKind::PadLeafUp, {"pad_leaf_up", leaf_links ? nics_ : 0, leaf_bw, 0.0, true});
  set(LinkKind::PadLeafDown, {"pad_leaf_down", leaf_links ? nics_ : 0, leaf_bw, 0.0, true});
  set(LinkKind::PadPodUp, {"pad_pod_up", pod_links ? nics_ : 0, pod_bw, 0.0, true});
  set(LinkKind::PadPodDown, {"pad_pod_down", pod_links ? nics_ : 0, pod_bw, 0.0, true});
  // A device-to-device copy reads and writes every byte: half the HBM bandwidth.
  set(LinkKind::HbmCopy, {"hbm_copy", 1, spec_.gpu.hbm_bandwidth.value / 2, 0.0, true});
}

int Topology::nic_of(int gpu) const {
  const auto& n = spec_.node;
  const int gpus_per_nic = n.gpus_per_node / n.nics_per_node;
  return node_of(gpu) * n.nics_per_node + (gpu % n.gpus_per_node) / gpus_per_nic;
}

int Topology::leaf_of_nic(int nic) const {
  if (spec_.fabric.kind == FabricKind::NonRail) return (nic / spec_.node.nics_per_node) / nodes_per_leaf_;
  const int domain = nic / nics_per_domain_;
  const int su = domain / spec_.fabric.domains_per_su;
  return su * leaves_per_su_ + (nic % nics_per_domain_) / rails_per_leaf_;
}

namespace {

// Distinct lanes under each unit (NIC, leaf or pod) given each busy GPU's unit; 0 for a unit
// with no busy GPU. Sets `k` to the common count, or returns false when units differ.
bool even_share(const std::vector<std::vector<int>>& lanes_by_unit, int& k) {
  k = 0;
  for (std::vector<int> lanes : lanes_by_unit) {
    std::sort(lanes.begin(), lanes.end());
    const int n = static_cast<int>(std::unique(lanes.begin(), lanes.end()) - lanes.begin());
    if (n == 0) continue;
    if (k != 0 && n != k) return false;
    k = n;
  }
  k = std::max(k, 1);
  return true;
}

}  // namespace

LaneSharing Topology::lane_sharing(const std::vector<int>& lane_of_gpu) const {
  std::vector<std::vector<int>> by_nic(static_cast<size_t>(nics_));
  std::vector<std::vector<int>> by_leaf(static_cast<size_t>(leaves_));
  std::vector<std::vector<int>> by_pod(static_cast<size_t>(pods_));
  for (int g = 0; g < gpus_ && g < static_cast<int>(lane_of_gpu.size()); ++g) {
    const int lane = lane_of_gpu[static_cast<size_t>(g)];
    if (lane < 0) continue;
    const int nic = nic_of(g);
    const int leaf = leaf_of_nic(nic);
    by_nic[static_cast<size_t>(nic)].push_back(lane);
    by_leaf[static_cast<size_t>(leaf)].push_back(lane);
    by_pod[static_cast<size_t>(pod_of_leaf(leaf))].push_back(lane);
  }
  LaneSharing out;
  if (!even_share(by_nic, out.nic)) out.problem = "NICs are shared by different numbers of lanes";
  if (!even_share(by_leaf, out.leaf)) out.problem = "leaves are shared by different numbers of lanes";
  if (!even_share(by_pod, out.pod)) out.problem = "spine groups are shared by different numbers of lanes";
  return out;
}

namespace {
void add_link(Path& p, LinkKind kind, int index) { p.links[static_cast<size_t>(p.count++)] = {kind, index}; }
}  // namespace

Path Topology::path(int src, int dst) const {
  Path p;
  const int endpoints = gpus_ + nodes_;
  if (src < 0 || dst < 0 || src >= endpoints || dst >= endpoints)
    throw std::invalid_argument("path: endpoint out of range");
  if (src >= gpus_ || dst >= gpus_) {
    const int gpu = src < gpus_ ? src : dst;
    const int cpu = (src < gpus_ ? dst : src) - gpus_;
    if (gpu >= gpus_ || node_of(gpu) != cpu)
      throw std::invalid_argument("path: a CPU host reaches only the GPUs of its own node");
    p.cls = PathClass::Host;
    add_link(p, src < gpus_ ? LinkKind::HostUp : LinkKind::HostDown, gpu);
  } else if (src == dst) {
    add_link(p, LinkKind::HbmCopy, 0);
  } else if (domain_of(src) == domain_of(dst)) {
    p.cls = PathClass::NVLink;
    p.switch_hops = 1;
    add_link(p, LinkKind::NvlUp, src);
    add_link(p, LinkKind::NvlDown, dst);
  } else {
    add_network_path(p, nic_of(src), nic_of(dst));
  }
  return p;
}

// NIC to NIC through the fat-tree. Tiers the path does not climb are crossed through their
// stand-ins, so that every network path has one link per tier and direction.
void Topology::add_network_path(Path& p, int nic_s, int nic_d) const {
  const int leaf_s = leaf_of_nic(nic_s), leaf_d = leaf_of_nic(nic_d);
  const bool pod_links = link_class(LinkKind::PodUp).count > 0;
  add_link(p, LinkKind::NicUp, nic_s);
  if (leaf_s == leaf_d) {
    p.cls = PathClass::Leaf;
    p.switch_hops = 1;
    if (link_class(LinkKind::LeafUp).count > 0) {
      add_link(p, LinkKind::PadLeafUp, nic_s);
      add_link(p, LinkKind::PadLeafDown, nic_d);
    }
  } else {
    add_link(p, LinkKind::LeafUp, leaf_s);
    p.cls = PathClass::Spine;
    p.switch_hops = 3;
    const int pod_s = pod_of_leaf(leaf_s), pod_d = pod_of_leaf(leaf_d);
    if (pod_s != pod_d) {
      p.cls = PathClass::Core;
      p.switch_hops = 5;
      add_link(p, LinkKind::PodUp, pod_s);
      add_link(p, LinkKind::PodDown, pod_d);
    }
  }
  if (pod_links && p.cls != PathClass::Core) {
    add_link(p, LinkKind::PadPodUp, nic_s);
    add_link(p, LinkKind::PadPodDown, nic_d);
  }
  if (leaf_s != leaf_d) add_link(p, LinkKind::LeafDown, leaf_d);
  add_link(p, LinkKind::NicDown, nic_d);
}

double Topology::path_latency(int src, int dst) const {
  const Path p = path(src, dst);
  double total = 0.0;
  for (int i = 0; i < p.count; ++i) total += link_class(p.links[static_cast<size_t>(i)].kind).latency;
  return total;
}

std::string Topology::link_name(LinkRef link) const {
  const LinkClassInfo& info = link_class(link.kind);
  const bool single = link.kind == LinkKind::HbmCopy;
  return single ? std::string(info.prefix) : std::string(info.prefix) + "_" + std::to_string(link.index);
}

}  // namespace clustersim::platforms
