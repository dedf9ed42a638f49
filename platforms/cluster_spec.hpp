// The `cluster:` section of a job: which platform, how many GPUs, and any figure overridden.
//   cluster: {platform: hgx_h100, gpus: 128}
//   cluster:
//     platform: my_cluster.yaml        # a platform file, relative to the job file
//     gpus: 1024
//     overrides: {nic_bandwidth: "800Gbps", oversubscription: {leaf: 2}}
#pragma once

#include "platforms/platform_spec.hpp"
#include "sim/yaml_spec.hpp"

namespace clustersim::platforms {

/// A platform and the number of GPUs used from it (rank i runs on GPU i).
struct ClusterSpec {
  PlatformSpec platform;
  int gpus = 0;
  /// Where the job names the platform (`cluster.platform`), for errors that the platform's
  /// choice causes in other sections; empty for a cluster not read from a file.
  SourceLocation platform_at;
};

/// Reads a job's `cluster:` mapping: `platform:` (a catalog name, or a path ending in .yaml,
/// relative to the job file's directory), `gpus:` (a multiple of gpus_per_node, at least 8, at
/// most what the fabric holds) and optional `overrides:` (see apply_overrides). Calls finish().
/// @throws SpecError with the job's file:line (or the platform file's) for any problem.
ClusterSpec parse_cluster_section(YamlMap& cluster);

/// Loads a platform given as on the command line or in a job: a catalog name, or a path to a
/// .yaml file (relative paths resolved against `base_dir` when it is not empty).
/// @throws SpecError.
PlatformSpec load_platform(const std::string& name_or_path, const std::string& base_dir = "");

}  // namespace clustersim::platforms
