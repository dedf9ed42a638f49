// The arithmetic of a cluster built from a PlatformSpec: which NIC, leaf and spine group each
// GPU sits under, which links a transfer crosses, and what each link can carry. Used by the
// SimGrid zone (routes computed per transfer, no tables), by the XML export and by the summary,
// so the three can never disagree. No SimGrid here.
//
// Links, each one direction of a full-duplex cable or port group (bandwidths per direction):
//   nvl_up_g / nvl_down_g     GPU g's NVLink ports into / out of the NVSwitch fabric
//   host_up_g / host_down_g   GPU g -> its CPU / CPU -> GPU g (PCIe Gen5 or NVLink-C2C)
//   nic_up_k / nic_down_k     NIC k -> its leaf / leaf -> NIC k
//   leaf_up_l / leaf_down_l   all of leaf l's spine-facing ports, aggregated (ideal load balance)
//   pod_up_p / pod_down_p     all core-facing ports of spine group p (3 tiers only)
//   pad_*                     FATPIPE stand-ins for tiers a path does not climb (see path())
//   hbm_copy                  FATPIPE, a GPU sending to itself (device-to-device copy)
#pragma once

#include <array>
#include <string>
#include <vector>

#include "platforms/platform_spec.hpp"

namespace clustersim::platforms {

/// Speed of the CPU hosts (flop/s). They only terminate host-link transfers; nothing runs on
/// them, so this is not a hardware figure and no cost model reads it.
inline constexpr double kCpuHostSpeed = 1.0;

/// How far a transfer between two endpoints climbs.
enum class PathClass {
  Local,   ///< same GPU (device-to-device copy)
  NVLink,  ///< same NVLink domain
  Host,    ///< GPU <-> CPU of its node
  Leaf,    ///< turns around at a leaf switch (same rail of the same scalable unit)
  Spine,   ///< turns around at a spine (cross rail, or another scalable unit)
  Core,    ///< turns around at a core switch (another spine group; 3 tiers only)
};

/// Kinds of link, in creation order.
enum class LinkKind {
  NvlUp, NvlDown, HostUp, HostDown, NicUp, NicDown, LeafUp, LeafDown, PodUp, PodDown,
  PadLeafUp, PadLeafDown, PadPodUp, PadPodDown, HbmCopy,
};
inline constexpr int kLinkKinds = 15;

/// One link: its kind and index within the kind.
struct LinkRef {
  LinkKind kind = LinkKind::HbmCopy;
  int index = 0;
};

/// The links of one route, in order, without heap allocation.
struct Path {
  PathClass cls = PathClass::Local;
  int switch_hops = 0;  ///< switches crossed (an NVSwitch counts as one)
  int count = 0;
  std::array<LinkRef, 8> links{};
};

/// Properties shared by all links of a kind.
struct LinkClassInfo {
  const char* prefix = "";  ///< link name is prefix + "_" + index, or prefix alone when count == 1
  int count = 0;            ///< links of this kind in the platform (0: not built)
  double bandwidth = 0.0;   ///< bytes/s per direction
  double latency = 0.0;     ///< s
  bool fatpipe = false;     ///< each flow gets the full bandwidth (no sharing)
};

/// How many lanes share each scale-out tier's links when the GPUs are split into lanes that run
/// copies of one program on symmetric routes (the TP coordinates of a job whose TP traffic stays
/// inside NVLink domains; sim::EngineOptions::fold_tp). A simulation that plays one lane gives
/// each tier's links 1/k of their bandwidth.
struct LaneSharing {
  int nic = 1;   ///< lanes per NIC (above 1 when GPUs of different lanes share a NIC)
  int leaf = 1;  ///< lanes per leaf switch (several rails on one leaf, or a non-rail leaf)
  int pod = 1;   ///< lanes per spine group (3 tiers)
  std::string problem;  ///< why the lanes are not shared evenly ("" when they are)
};

/// Most GPUs a cluster may have (a job's `cluster.gpus`, `--gpus`).
inline constexpr int kMaxClusterGpus = 1 << 20;

/// The uplink (next-tier-facing) ports of a switch of `switch_radix` ports, half facing down,
/// built for a requested oversubscription: whole ports, ceil(radix/2 / requested) of them and
/// at least one (3:1 on 64 ports: 32 down, 11 up). The one rounding that link bandwidths
/// (built_oversubscription) and switch counts (summarize) share. `requested` in [1, radix/2],
/// as the platform loader checks.
int uplink_ports(int switch_radix, double requested);

/// The oversubscription a switch of `switch_radix` ports is built with for a requested ratio:
/// radix/2 / uplink_ports, so a ratio that does not divide radix/2 rounds to the next whole
/// port (3:1 on 64 ports: 32 / 11 = 2.91:1).
double built_oversubscription(int switch_radix, double requested);

/// The cluster: `gpus` GPUs of `spec`, GPU i on node i / gpus_per_node.
class Topology {
 public:
  /// @throws std::invalid_argument when `gpus` does not fit the platform (see check()).
  Topology(const PlatformSpec& spec, int gpus);

  /// Empty when `gpus` fits `spec`, else the reason (multiple of gpus_per_node, at least 8,
  /// at most what the fabric's tiers can hold).
  static std::string check(const PlatformSpec& spec, int gpus);
  /// Largest GPU count the fabric holds with `tiers` tiers (2 or 3).
  static long long max_gpus(const PlatformSpec& spec, int tiers);
  /// Largest GPU count the fabric holds with its own `tiers` (2 or 3; auto: the larger of the two).
  static long long max_gpus_any(const PlatformSpec& spec);

  /// The platform this topology was built from.
  const PlatformSpec& spec() const { return spec_; }
  /// GPUs of the job (the first `gpus` of the fabric, rank i on GPU i).
  int gpus() const { return gpus_; }
  /// Nodes holding those GPUs (gpus / gpus_per_node, rounded up: part of one node counts 1).
  int nodes() const { return nodes_; }
  int cpus() const { return nodes_; }  ///< one CPU host per node, named cpu<node>
  /// NVLink domains holding the GPUs; the last one partly filled where gpus is no multiple of
  /// the domain size.
  int domains() const { return domains_; }
  /// Scale-out NICs of those nodes (nics_per_node each).
  int nics() const { return nics_; }
  /// Fat-tree tiers built (2 or 3).
  int tiers() const { return tiers_; }
  /// Leaf switches built: whole scalable units on a rail-optimized fabric, the nodes' leaves
  /// otherwise.
  int leaves() const { return leaves_; }
  int pods() const { return pods_; }            ///< spine groups (1 with 2 tiers)
  /// Leaf switches per scalable unit.
  int leaves_per_su() const { return leaves_per_su_; }
  /// Leaf switches per spine group.
  int leaves_per_pod() const { return leaves_per_pod_; }

  /// Node of GPU `gpu`.
  int node_of(int gpu) const { return gpu / spec_.node.gpus_per_node; }
  /// NVLink domain of GPU `gpu`.
  int domain_of(int gpu) const { return gpu / spec_.node.nvlink_domain_size; }
  /// The NIC GPU `gpu` sends through: its node's NIC of its rail (gpus_per_node / nics_per_node
  /// GPUs share one).
  int nic_of(int gpu) const;
  /// The leaf switch NIC `nic` plugs into: its rail's leaf in its scalable unit (rail-optimized
  /// fabrics), or its node's leaf (non-rail).
  int leaf_of_nic(int nic) const;
  /// The spine group of leaf `leaf`.
  int pod_of_leaf(int leaf) const { return leaf / leaves_per_pod_; }

  /// Lanes sharing each tier's links. `lane_of_gpu[g]` is GPU g's lane, or -1 for a GPU the job
  /// leaves idle. Every link with a busy GPU beneath it must be shared by the same number of
  /// lanes as the others of its tier, else `problem` says which tier is uneven.
  LaneSharing lane_sharing(const std::vector<int>& lane_of_gpu) const;

  /// Route between endpoints: 0..gpus-1 are GPUs, gpus..gpus+cpus-1 the CPUs of nodes 0..
  /// @throws std::invalid_argument for a CPU and anything but a GPU of its own node.
  Path path(int src, int dst) const;
  /// Sum of the latencies of path(src, dst), s.
  double path_latency(int src, int dst) const;

  /// Count, bandwidth and latency of the links of `kind`.
  const LinkClassInfo& link_class(LinkKind kind) const { return classes_[static_cast<int>(kind)]; }
  /// SimGrid name of a link ("nic_up_12", "pad_leaf_up").
  std::string link_name(LinkRef link) const;
  /// SimGrid host name of GPU `gpu` ("gpu12").
  static std::string gpu_name(int gpu) { return "gpu" + std::to_string(gpu); }
  /// SimGrid host name of node `node`'s CPU ("cpu1").
  static std::string cpu_name(int node) { return "cpu" + std::to_string(node); }

  /// Aggregate spine-facing capacity of one leaf, bytes/s per direction.
  double leaf_uplink_bandwidth() const { return link_class(LinkKind::LeafUp).bandwidth; }
  /// Aggregate core-facing capacity of one spine group, bytes/s per direction.
  double pod_uplink_bandwidth() const { return link_class(LinkKind::PodUp).bandwidth; }

 private:
  void init_link_classes();
  void add_network_path(Path& p, int nic_s, int nic_d) const;

  PlatformSpec spec_;
  int gpus_ = 0, nodes_ = 0, domains_ = 0, nics_ = 0, nics_per_domain_ = 0;
  int tiers_ = 2, leaves_ = 0, pods_ = 1, leaves_per_su_ = 0, leaves_per_pod_ = 1;
  int rails_per_leaf_ = 1, nodes_per_leaf_ = 1;
  std::array<LinkClassInfo, kLinkKinds> classes_{};
};

/// Short name of a path class ("nvlink", "leaf", ...).
const char* to_string(PathClass cls);

}  // namespace clustersim::platforms
