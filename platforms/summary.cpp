#include "platforms/summary.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <limits>
#include <sstream>

#include "platforms/topology.hpp"
#include "sim/units.hpp"

namespace clustersim::platforms {
namespace {

int ceil_div(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

// Physical switch counts of the designed fabric (whole scalable units, every leaf with
// radix/2 NIC-facing ports and uplink_ports spine-facing ones, the ports the link bandwidths
// are built with).
void count_switches(const Topology& t, TopologySummary& s) {
  const auto& f = t.spec().fabric;
  const int radix = f.switch_radix, down = radix / 2;
  const int leaf_up_ports = uplink_ports(radix, f.oversubscription.leaf);
  s.leaf_switches = t.leaves();
  if (t.tiers() == 2) {
    s.spine_switches = ceil_div(static_cast<long long>(t.leaves()) * leaf_up_ports, radix);
    return;
  }
  const int spines_per_pod = ceil_div(static_cast<long long>(t.leaves_per_pod()) * leaf_up_ports, down);
  s.spine_switches = t.pods() * spines_per_pod;
  const int spine_up_ports = uplink_ports(radix, f.oversubscription.spine);
  s.core_switches = ceil_div(static_cast<long long>(s.spine_switches) * spine_up_ports, radix);
}

// Half of each tier's units (an odd count splits one unit between the halves, which then use
// half of its uplinks each: 3 spine groups give 1.5 groups' uplinks, not 1).
// Part of one node (1, 2 or 4 GPUs of an HGX node) counts only its own GPUs' NICs.
double bisection(const Topology& t, const NodeSpec& n) {
  const double inf = std::numeric_limits<double>::infinity();
  if (t.gpus() < 2) return 0.0;  // one GPU: nothing to cut in two
  const double nics = std::min<double>(t.nics(), static_cast<double>(t.gpus()) * n.nics_per_node / n.gpus_per_node);
  const double nic = nics / 2.0 * t.link_class(LinkKind::NicUp).bandwidth;
  const double leaf = t.leaves() >= 2 ? t.leaves() / 2.0 * t.leaf_uplink_bandwidth() : inf;
  const double pod = t.tiers() == 3 && t.pods() >= 2 ? t.pods() / 2.0 * t.pod_uplink_bandwidth() : inf;
  return std::min({nic, leaf, pod});
}

void add_tier(TopologySummary& s, const Topology& t, const char* name, LinkKind up, LinkKind down) {
  const int links = t.link_class(up).count + t.link_class(down).count;
  if (links > 0) s.link_tiers.push_back({name, links, t.link_class(up).bandwidth});
}

// Bytes/s to 4 significant digits with a decimal prefix, never in exponent notation: the prefix
// is picked after rounding (999.96 GB/s is "1 TB/s", not "1000 GB/s"), and figures past what
// the prefixes reach read "over 9999 EB/s" (a what-if "1e300Gbps" NIC; an overflow to inf too)
// or "under 0.0001 B/s" (where %g would have written "1.25e+293 PB/s" or "inf PB/s").
std::string rate(double bytes_per_s) {
  static constexpr std::array<const char*, 7> kUnits = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s", "EB/s"};
  if (!(bytes_per_s >= 0.0)) return "undefined";  // NaN or negative: never a built link
  if (bytes_per_s >= 9999.5e18) return "over 9999 EB/s";
  if (bytes_per_s > 0.0 && bytes_per_s < 1e-4) return "under 0.0001 B/s";
  double v = bytes_per_s;
  std::size_t u = 0;
  char buf[48];
  for (;;) {
    std::snprintf(buf, sizeof buf, "%.4g", v);
    if (u + 1 == kUnits.size() || std::strtod(buf, nullptr) < 1000.0) break;
    v /= 1000.0;
    ++u;
  }
  return std::string(buf) + " " + kUnits[u];
}

}  // namespace

TopologySummary summarize(const PlatformSpec& spec, int gpus) {
  const Topology t(spec, gpus);
  TopologySummary s;
  const auto& n = spec.node;
  s.platform = spec.name;
  s.description = spec.description;
  s.gpu_name = spec.gpu.name;
  s.fabric_kind = to_string(spec.fabric.kind);
  s.gpus = gpus;
  s.nodes = t.nodes();
  s.gpus_per_node = n.gpus_per_node;
  s.nvlink_domains = t.domains();
  s.nvlink_domain_size = n.nvlink_domain_size;
  if (spec.fabric.kind == FabricKind::RailOptimized) s.scalable_units = t.leaves() / t.leaves_per_su();
  s.tiers = t.tiers();
  s.switch_radix = spec.fabric.switch_radix;
  count_switches(t, s);
  s.oversubscription_leaf = spec.fabric.oversubscription.leaf;
  s.oversubscription_spine = spec.fabric.oversubscription.spine;
  s.built_leaf = built_oversubscription(spec.fabric.switch_radix, s.oversubscription_leaf);
  s.built_spine = built_oversubscription(spec.fabric.switch_radix, s.oversubscription_spine);
  s.nvlink_bandwidth_per_gpu = n.nvlink_bandwidth.value;
  s.injection_bandwidth_per_gpu = n.nic_bandwidth.value * n.nics_per_node / n.gpus_per_node;
  // Half of a domain's GPUs (of the job's GPUs when they fill part of one domain), an odd count
  // split like the scale-out tiers below.
  s.nvlink_bisection_per_domain =
      gpus < 2 ? 0.0 : std::min(gpus, n.nvlink_domain_size) / 2.0 * n.nvlink_bandwidth.value;
  s.bisection_bandwidth = bisection(t, n);
  add_tier(s, t, "nvlink", LinkKind::NvlUp, LinkKind::NvlDown);
  add_tier(s, t, "host", LinkKind::HostUp, LinkKind::HostDown);
  add_tier(s, t, "nic", LinkKind::NicUp, LinkKind::NicDown);
  add_tier(s, t, "leaf-spine", LinkKind::LeafUp, LinkKind::LeafDown);
  add_tier(s, t, "spine-core", LinkKind::PodUp, LinkKind::PodDown);
  s.simgrid_hosts = t.gpus() + t.cpus();
  for (int k = 0; k < kLinkKinds; ++k) s.simgrid_links += t.link_class(static_cast<LinkKind>(k)).count;
  return s;
}

std::string format_summary(const TopologySummary& s) {
  std::ostringstream o;
  o << "platform          " << s.platform << ": " << s.description << "\n";
  o << "gpus              " << s.gpus << " x " << s.gpu_name << " on " << count_noun(s.nodes, "node", "nodes")
    << " of " << s.gpus_per_node << "\n";
  o << "nvlink domains    " << s.nvlink_domains << " of " << count_noun(s.nvlink_domain_size, "GPU", "GPUs");
  // The last domain holds the GPUs left over when the count is not a multiple of its size.
  if (const int rest = s.gpus - (s.nvlink_domains - 1) * s.nvlink_domain_size; rest < s.nvlink_domain_size) {
    o << (s.nvlink_domains == 1 ? " (holding " : " (the last holds ") << rest << ")";
  }
  o << ", "
    << rate(s.nvlink_bandwidth_per_gpu) << " per GPU per direction, bisection "
    << rate(s.nvlink_bisection_per_domain) << " per domain\n";
  o << "fabric            " << s.fabric_kind << " fat-tree, " << s.tiers << " tiers of "
    << s.switch_radix << "-port switches: " << s.leaf_switches << " leaf, " << s.spine_switches
    << " spine";
  if (s.tiers == 3) o << ", " << s.core_switches << " core";
  if (s.scalable_units > 0) o << "; scalable units " << s.scalable_units;
  o << "\n";
  auto ratio = [&](double requested, double built) {
    o << requested << ":1";
    if (built != requested) o << " (built with whole uplink ports: " << std::setprecision(3) << built << ":1)" << std::setprecision(6);
  };
  o << "oversubscription  leaf ";
  ratio(s.oversubscription_leaf, s.built_leaf);
  if (s.tiers == 3) {
    o << ", spine ";
    ratio(s.oversubscription_spine, s.built_spine);
  }
  o << "\n";
  o << "injection         " << rate(s.injection_bandwidth_per_gpu) << " per GPU per direction\n";
  o << "bisection         " << rate(s.bisection_bandwidth) << " per direction (scale-out network)\n";
  o << "simgrid           " << s.simgrid_hosts << " hosts, " << s.simgrid_links
    << " links (one per direction)\n";
  o << "links per tier    ";
  bool first = true;
  for (const auto& tier : s.link_tiers) {
    o << (first ? "" : ", ") << tier.name << " " << tier.links << " x " << rate(tier.bandwidth);
    first = false;
  }
  o << "\n";
  return o.str();
}

}  // namespace clustersim::platforms
