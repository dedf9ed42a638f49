// Runs transfers on a platform inside a forked SimGrid engine (one engine per process) and
// returns when each finished. Used by the flow tests of every platform.
#pragma once

#include <string>
#include <vector>

#include "platforms/platform_spec.hpp"

namespace clustersim::platforms::test {

/// One transfer between two hosts ("gpu3", "cpu0"), started at time 0.
struct Flow {
  std::string src;
  std::string dst;
  double bytes = 0.0;
};

/// How the platform is loaded in the child engine.
enum class Loader { Builder, Xml, Plugin };

/// Simulates `flows` on `gpus` GPUs of `spec` and returns each flow's completion time (s).
/// Loader::Xml writes the XML export to a temporary file and loads it with plain SimGrid;
/// Loader::Plugin loads libclustersim_platform_plugin.so with spec.source_file as platform.
std::vector<double> run_flows(const PlatformSpec& spec, int gpus, const std::vector<Flow>& flows,
                              Loader loader = Loader::Builder);

/// Route from SimGrid's view: link names and summed latency of gpu/cpu host `src` to `dst`.
struct RouteView {
  std::vector<std::string> links;
  double latency = 0.0;
};
RouteView simgrid_route(const PlatformSpec& spec, int gpus, const std::string& src, const std::string& dst);

/// "gpu<i>".
std::string gpu(int i);

}  // namespace clustersim::platforms::test
