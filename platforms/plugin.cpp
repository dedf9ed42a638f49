// SimGrid platform plugin: any SimGrid program can load a clustersim cluster with
//   engine.load_platform("libclustersim_platform_plugin.so");
// CLUSTERSIM_PLATFORM names the platform (catalog name or .yaml path) and CLUSTERSIM_GPUS the
// GPU count. The network configuration (CM02, no crosstraffic, no TCP gamma, weight-S) is set
// as clustersim sets it.
#include <simgrid/s4u/Engine.hpp>

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "platforms/builder.hpp"
#include "platforms/cluster_spec.hpp"
#include "sim/platform.hpp"

namespace {

std::string require_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0')
    throw std::invalid_argument(std::string("clustersim platform plugin: set ") + name);
  return value;
}

}  // namespace

/// Entry point SimGrid calls from Engine::load_platform("...so"). @throws clustersim::SpecError
/// for a bad platform file, std::invalid_argument for missing or bad environment variables.
extern "C" void load_platform(const simgrid::s4u::Engine& /*engine*/) {
  const std::string platform = require_env("CLUSTERSIM_PLATFORM");
  const std::string gpus_text = require_env("CLUSTERSIM_GPUS");
  int gpus = 0;
  const auto [end, error] = std::from_chars(gpus_text.data(), gpus_text.data() + gpus_text.size(), gpus);
  if (error != std::errc() || end != gpus_text.data() + gpus_text.size())
    throw std::invalid_argument("CLUSTERSIM_GPUS: not an integer: " + gpus_text);
  auto builder = clustersim::platforms::make_platform_builder(clustersim::platforms::load_platform(platform), gpus);
  simgrid::s4u::Engine& engine = *simgrid::s4u::Engine::get_instance();
  clustersim::sim::apply_network_config(engine);
  builder->build(engine);
}
