// What a cluster is made of, in numbers (`clustersim platform show`), and the same cluster as a
// SimGrid XML platform that stock SimGrid tools load (routes listed pair by pair, so only for
// small clusters).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "platforms/platform_spec.hpp"

namespace clustersim::platforms {

/// One class of modelled links (each SimGrid link is one direction of a cable or port group).
struct LinkTierSummary {
  std::string name;          ///< "nvlink", "host", "nic", "leaf-spine", "spine-core"
  int links = 0;             ///< SimGrid links of this class (both directions)
  double bandwidth = 0.0;    ///< per link, bytes/s
};

/// Topology figures of `gpus` GPUs of a platform. Bandwidths in bytes/s, one direction.
struct TopologySummary {
  std::string platform, description, gpu_name, fabric_kind;
  int gpus = 0, nodes = 0, gpus_per_node = 0, nvlink_domains = 0, nvlink_domain_size = 0;
  int scalable_units = 0;      ///< rail_optimized only (0 otherwise)
  int tiers = 0, switch_radix = 0, leaf_switches = 0, spine_switches = 0, core_switches = 0;
  double oversubscription_leaf = 1.0, oversubscription_spine = 1.0;  ///< as requested
  /// As built with whole uplink ports (built_oversubscription); equal to the requested ratios
  /// when they divide switch_radix/2.
  double built_leaf = 1.0, built_spine = 1.0;
  double nvlink_bandwidth_per_gpu = 0.0;   ///< NVLink per GPU
  double injection_bandwidth_per_gpu = 0.0;///< scale-out NIC bandwidth per GPU
  double nvlink_bisection_per_domain = 0.0;///< half a domain's GPUs x NVLink bandwidth
  /// Scale-out bisection: min(NICs/2 x NIC, leaves/2 x leaf uplink, spine groups/2 x group
  /// uplink), with leaves and groups counted as designed (whole scalable units).
  double bisection_bandwidth = 0.0;
  std::vector<LinkTierSummary> link_tiers;
  int simgrid_hosts = 0, simgrid_links = 0;
};

/// @throws std::invalid_argument when `gpus` does not fit the platform.
TopologySummary summarize(const PlatformSpec& spec, int gpus);

/// Human-readable report (several lines, ends with a newline).
std::string format_summary(const TopologySummary& summary);

/// Largest cluster write_simgrid_xml accepts (its routes are listed pair by pair).
inline constexpr int kMaxXmlGpus = 256;

/// Writes a SimGrid 3.32 XML platform equivalent to the built one: same hosts, links, routes
/// and network configuration (CM02, no crosstraffic, no TCP gamma, network/weight-S).
/// @throws std::invalid_argument when gpus does not fit or exceeds kMaxXmlGpus.
void write_simgrid_xml(const PlatformSpec& spec, int gpus, std::ostream& out);

}  // namespace clustersim::platforms
