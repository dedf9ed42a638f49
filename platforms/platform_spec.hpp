// What a platform is: the GPU (datasheet values the cost and memory models read), the node and
// its NVLink domain, and the scale-out fabric. Plain structs, loaded strictly from one YAML file
// per platform (platforms/catalog/*.yaml, or a user's own file). docs/platforms.md documents
// the format; every figure in the catalog files cites its source.
#pragma once

#include <string>
#include <vector>

#include "sim/cost_model.hpp"
#include "sim/units.hpp"
#include "sim/yaml_spec.hpp"

namespace clustersim::platforms {

/// How NICs attach to leaf switches.
enum class FabricKind {
  RailOptimized,  ///< NIC k of every NVLink domain of a scalable unit on the same leaf ("rail")
  NonRail,        ///< all NICs of a node on one leaf
};

/// The server (HGX baseboard, or a GB200 compute tray) and its NVLink domain.
struct NodeSpec {
  int gpus_per_node = 8;               ///< GPUs per server / compute tray
  int nvlink_domain_size = 8;          ///< GPUs per NVLink domain, a multiple of gpus_per_node
  BytesPerSecond nvlink_bandwidth;     ///< NVLink per GPU per direction, bytes/s
  Seconds nvlink_latency;              ///< one-way GPU -> NVSwitch -> GPU latency, s
  int nics_per_node = 8;               ///< scale-out NICs per node (gpus_per_node % nics == 0)
  BytesPerSecond nic_bandwidth;        ///< per NIC per direction, bytes/s
  Seconds nic_latency;                 ///< one NIC traversal (send or receive side), s
  BytesPerSecond host_link_bandwidth;  ///< GPU <-> CPU link per GPU per direction, bytes/s
  int host_cpu_cores = 0;              ///< physical CPU cores of the node's host (all sockets)
  BytesPerSecond host_memory_bandwidth;  ///< host DRAM peak of the node (all sockets), bytes/s
  /// Host DRAM of the node (all sockets), bytes; optional, 0 when not given (then the pinned
  /// host memory of activation offloading is not checked).
  Bytes host_memory_capacity;
};

/// Oversubscription (downlink : uplink capacity) of a switch tier; 1 = non-blocking.
struct Oversubscription {
  double leaf = 1.0;   ///< leaf switches: NIC-facing ports : spine-facing capacity
  double spine = 1.0;  ///< spine switches (3 tiers only): leaf-facing : core-facing capacity
};

/// The scale-out fabric: a fat-tree of leaf, spine and (beyond the spines' reach) core switches.
struct FabricSpec {
  FabricKind kind = FabricKind::RailOptimized;
  int domains_per_su = 32;  ///< NVLink domains (HGX nodes, NVL72 racks) per scalable unit
  int tiers = 0;            ///< 2 or 3; 0 = the fewest tiers that hold the cluster
  int switch_radix = 64;    ///< ports per switch
  Oversubscription oversubscription;
  Seconds switch_latency;   ///< port-to-port latency of one switch, s
};

/// Power figures (`power:`, optional; docs/energy.md): GPU board power per activity class, the
/// rest of a server, NICs, NVLink switch trays and scale-out switch ports. All W.
struct PowerFigures {
  bool present = false;      ///< false: the platform file has no `power:` (no energy outputs)
  Watts gpu_tensor;          ///< GPU running GEMMs/attention
  Watts gpu_memory_bound;    ///< GPU running memory-bound kernels
  Watts gpu_communication;   ///< GPU running NCCL collectives only
  Watts gpu_waiting;         ///< GPU idle or spinning on a peer, context alive
  Watts node_other;          ///< one server/compute tray without its GPUs, while training
  Watts node_rated;          ///< one server/compute tray at its rated maximum, GPUs included
  Watts nic;                 ///< one NIC not counted in the node figures
  Watts nvswitch_tray;       ///< one NVLink switch tray outside the nodes
  Watts switch_port;         ///< one scale-out switch port
  int nvswitch_trays_per_domain = 0;
};

/// Cost figures (`economics:`, optional; docs/energy.md). US dollars.
struct CostFigures {
  bool present = false;
  double capex_usd = 0.0;               ///< all-in capital cost of one capex unit
  /// "node" (a server or tray) or "domain" (an NVLink rack); a platform file may leave it out
  /// only where its node is its whole NVLink domain
  std::string capex_unit = "node";
  double rental_usd_per_gpu_hour = 0.0; ///< rental price; 0 when none is published
};

/// One platform: everything a cluster of these machines is made of.
struct PlatformSpec {
  std::string name;         ///< catalog name or file stem, e.g. "hgx_h100"
  std::string description;  ///< one line for reports
  std::string source_file;  ///< the YAML it came from (for messages)
  /// The figures a job's `cluster.overrides` changed, as given ("hbm_capacity=300GiB", ...), in
  /// the job's order; empty for the platform as its file states it. Reports name them.
  std::vector<std::string> overridden;
  sim::GpuSpec gpu;
  /// Where gpu.name was given (the platform file's `gpu.name`, or a job's
  /// `cluster.overrides.name`), for the error when no cost model knows that GPU.
  SourceLocation gpu_name_at;
  NodeSpec node;
  FabricSpec fabric;
  PowerFigures power;
  CostFigures cost;
};

/// Loads and validates a platform file. @throws SpecError (file:line, field, reason) on a
/// missing or unknown key, a malformed quantity or an inconsistent figure.
PlatformSpec load_platform_file(const std::string& path);

/// Loads a catalog platform by name ("hgx_h100", "gb200_nvl72", ...).
/// @throws SpecError naming the known platforms when `name` is not one of them.
PlatformSpec find_platform(const std::string& name);

/// Names of the catalog platforms, sorted.
std::vector<std::string> catalog_platforms();

/// Applies an `overrides:` mapping: any figure of the platform by its key name (power and
/// economics figures too, when the platform has those sections), e.g.
/// {nic_bandwidth: "800Gbps", oversubscription: {leaf: 2}}, then re-validates.
/// @throws SpecError at the offending key (unknown keys included).
void apply_overrides(PlatformSpec& spec, YamlMap& overrides);

/// The platform keys `overrides:` accepts (every figure of the gpu, node and fabric sections).
std::vector<std::string> overridable_keys();

/// Short name of a fabric kind ("rail_optimized", "non_rail").
const char* to_string(FabricKind kind);

}  // namespace clustersim::platforms
