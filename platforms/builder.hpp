// Builds a cluster of any catalog (or user) platform into a SimGrid engine: one netzone whose
// routes are computed from GPU indices (platforms/topology.hpp), one host per GPU ("gpu<i>",
// speed = the GPU's dense BF16 peak) and one per node ("cpu<n>", the end of the GPU host links).
// 16,384 GPUs build in well under a second (docs/platforms.md has the measurements).
#pragma once

#include <memory>

#include "platforms/platform_spec.hpp"
#include "sim/platform.hpp"

namespace clustersim::platforms {

/// SimGrid's `network/weight-S` value the builder sets (bytes). CM02 divides a link among its
/// flows in proportion to 1 / (route latency + weight-S x sum of 1/bandwidth over the route);
/// with this S the latency term is below 1e-6 of the sum, and every route of a class has the same
/// sum (topology.hpp's stand-in links), so sharing is fair whatever the latencies.
inline constexpr double kWeightS = 1e12;

/// A PlatformBuilder for `gpus` GPUs of `spec`. build() must run before anything else creates a
/// netzone in the engine (it sets network/weight-S, which SimGrid freezes at the first zone),
/// and after sim::apply_network_config.
/// @throws std::invalid_argument when `gpus` does not fit (Topology::check gives the reason).
std::unique_ptr<sim::PlatformBuilder> make_platform_builder(const PlatformSpec& spec, int gpus);

}  // namespace clustersim::platforms
