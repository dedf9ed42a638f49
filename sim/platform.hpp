// What the engine needs from a platform: a SimGrid platform with one host per GPU.
// platforms/ implements PlatformBuilder for HGX nodes, rail-optimized fat-trees and NVL72 racks.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/cost_model.hpp"

namespace simgrid::s4u {
class Engine;
class Host;
class Link;
}  // namespace simgrid::s4u

namespace clustersim::sim {

/// A platform built inside a running SimGrid engine.
struct BuiltPlatform {
  std::vector<simgrid::s4u::Host*> gpus;  ///< GPU i (rank i runs on it)
  int gpus_per_node = 8;
  int nvlink_domain_size = 8;             ///< GPUs sharing one NVLink/NVSwitch domain
  double nvlink_bandwidth = 0.0;          ///< per GPU per direction, bytes/s (algorithm choice)
  double network_bandwidth = 0.0;         ///< scale-out NIC per GPU per direction, bytes/s
  /// Optional (empty when the platform cannot do it): prepares the platform for a simulation
  /// that plays only lane 0 of GPUs split into lanes running copies of one program on symmetric
  /// routes (EngineOptions::fold_tp). `lane_of_gpu[g]` is GPU g's lane, -1 for an idle GPU.
  /// Divides the bandwidth of every link that k lanes share by k, keeping every route's sharing
  /// weight equal (network/weight-S), fills `scaled` with the shared links and their k, and
  /// returns ""; or changes nothing and returns why it cannot. Call before Engine::run.
  std::function<std::string(const std::vector<int>& lane_of_gpu,
                            std::unordered_map<simgrid::s4u::Link*, int>& scaled)>
      fold_lanes;
};

/// Builds a platform into an engine. Implementations must be usable from a forked child
/// process (the engine runs each simulation in its own process; see engine.hpp).
class PlatformBuilder {
 public:
  virtual ~PlatformBuilder() = default;
  /// Creates zones, hosts and links in `engine` (before Engine::run) and seals them.
  virtual BuiltPlatform build(simgrid::s4u::Engine& engine) const = 0;
  /// Number of GPUs the built platform will have.
  virtual int gpu_count() const = 0;
  /// GPUs per NVLink domain (8 on HGX, 72 on NVL72).
  virtual int nvlink_domain_size() const = 0;
  /// GPU datasheet values.
  virtual const GpuSpec& gpu() const = 0;
  /// One line, e.g. "hgx_h100: 16 nodes x 8 H100-SXM, rail-optimized 2-tier fat-tree".
  virtual std::string describe() const = 0;
};

/// SimGrid configuration every clustersim engine uses (../shared/notes/simgrid-3.32.md):
/// CM02 max-min sharing without TCP artefacts, so a flow takes latency + size / bandwidth.
void apply_network_config(simgrid::s4u::Engine& engine);

}  // namespace clustersim::sim
