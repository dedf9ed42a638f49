#include "platforms/cluster_spec.hpp"

#include <filesystem>

#include "platforms/topology.hpp"

namespace clustersim::platforms {
namespace {

bool is_path(const std::string& name) {
  return name.size() > 5 && name.compare(name.size() - 5, 5, ".yaml") == 0;
}

}  // namespace

PlatformSpec load_platform(const std::string& name_or_path, const std::string& base_dir) {
  if (!is_path(name_or_path)) return find_platform(name_or_path);
  std::filesystem::path path(name_or_path);
  if (path.is_relative() && !base_dir.empty()) path = std::filesystem::path(base_dir) / path;
  return load_platform_file(path.string());
}

ClusterSpec parse_cluster_section(YamlMap& cluster) {
  ClusterSpec out;
  const std::string name = cluster.get_string("platform");
  out.platform_at = cluster.location("platform");
  const std::string job_dir = std::filesystem::path(cluster.file()).parent_path().string();
  try {
    out.platform = load_platform(name, job_dir);
  } catch (const SpecError& e) {
    // An unknown catalog name or an unreadable file is the job's error: report it at the job's
    // line. Errors inside a platform file keep that file's line.
    if (!is_path(name) && e.field() == "platform")
      throw cluster.error("platform", e.reason() + "; or give a path ending in .yaml");
    if (is_path(name) && e.line() == 0) throw cluster.error("platform", e.what());
    throw;
  }
  if (auto overrides = cluster.get_map_opt("overrides")) apply_overrides(out.platform, *overrides);
  out.gpus = static_cast<int>(cluster.get_int("gpus", 1, kMaxClusterGpus));
  const std::string problem = Topology::check(out.platform, out.gpus);
  if (!problem.empty()) throw cluster.error("gpus", problem);
  cluster.finish();
  return out;
}

}  // namespace clustersim::platforms
