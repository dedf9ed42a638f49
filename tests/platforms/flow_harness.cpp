#include "tests/platforms/flow_harness.hpp"

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "platforms/builder.hpp"
#include "platforms/summary.hpp"
#include "sim/engine.hpp"
#include "sim/platform.hpp"

namespace clustersim::platforms::test {
namespace sg4 = simgrid::s4u;
namespace {

// A fresh engine with clustersim's network configuration and the platform loaded as asked.
std::unique_ptr<sg4::Engine> make_engine(const PlatformSpec& spec, int gpus, Loader loader) {
  static int argc = 1;
  static char arg0[] = "platform_test";
  static char* argv[] = {arg0, nullptr};
  auto engine = std::make_unique<sg4::Engine>(&argc, argv);
  xbt_log_control_set("root.thresh:critical");
  sim::apply_network_config(*engine);
#ifdef CLUSTERSIM_SANITIZE
  // Sanitizers cannot follow SimGrid's hand-made stack switching; use system threads.
  engine->set_config("contexts/factory:thread");
#endif
  if (loader == Loader::Builder) {
    make_platform_builder(spec, gpus)->build(*engine);
  } else if (loader == Loader::Xml) {
    const std::string path = "/tmp/clustersim_platform_test_" + std::to_string(::getpid()) + ".xml";
    {
      std::ofstream out(path);
      write_simgrid_xml(spec, gpus, out);
    }
    engine->load_platform(path);
    std::remove(path.c_str());
  } else {
    ::setenv("CLUSTERSIM_PLATFORM", spec.source_file.c_str(), 1);
    ::setenv("CLUSTERSIM_GPUS", std::to_string(gpus).c_str(), 1);
    engine->load_platform(CLUSTERSIM_PLUGIN_PATH);
  }
  return engine;
}

}  // namespace

std::string gpu(int i) { return "gpu" + std::to_string(i); }

std::vector<double> run_flows(const PlatformSpec& spec, int gpus, const std::vector<Flow>& flows, Loader loader) {
  const std::string text = sim::run_in_subprocess([&] {
    auto engine = make_engine(spec, gpus, loader);
    std::vector<double> done(flows.size(), -1.0);
    // One actor starts every transfer and records completions (one actor: cheap under the
    // sanitizers' thread contexts too).
    sg4::Actor::create("driver", engine->get_all_hosts().front(), [&flows, &done, &engine] {
      std::vector<sg4::CommPtr> comms;
      std::vector<size_t> ids;
      for (size_t i = 0; i < flows.size(); ++i) {
        comms.push_back(sg4::Comm::sendto_async(engine->host_by_name(flows[i].src),
                                                engine->host_by_name(flows[i].dst), flows[i].bytes));
        ids.push_back(i);
      }
      while (!comms.empty()) {
        const auto at = static_cast<size_t>(sg4::Comm::wait_any(comms));
        done[ids[at]] = sg4::Engine::get_clock();
        comms.erase(comms.begin() + static_cast<std::ptrdiff_t>(at));
        ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(at));
      }
    });
    engine->run();
    std::ostringstream out;
    out.precision(17);
    for (double t : done) out << t << "\n";
    return out.str();
  });
  std::vector<double> times;
  std::istringstream in(text);
  for (double t; in >> t;) times.push_back(t);
  return times;
}

RouteView simgrid_route(const PlatformSpec& spec, int gpus, const std::string& src, const std::string& dst) {
  const std::string text = sim::run_in_subprocess([&] {
    auto engine = make_engine(spec, gpus, Loader::Builder);
    std::vector<sg4::Link*> links;
    double latency = 0.0;
    engine->host_by_name(src)->route_to(engine->host_by_name(dst), links, &latency);
    std::ostringstream out;
    out.precision(17);
    out << latency;
    for (auto* l : links) out << " " << l->get_name();
    return out.str();
  });
  RouteView view;
  std::istringstream in(text);
  in >> view.latency;
  for (std::string name; in >> name;) view.links.push_back(name);
  return view;
}

}  // namespace clustersim::platforms::test
