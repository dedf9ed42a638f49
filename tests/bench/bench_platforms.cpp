// Build time and memory of every catalog platform at 1,024, 4,096 and 16,384 GPUs. Each build
// runs in its own forked process (one SimGrid engine per process); the time reported is the
// builder's alone (manual time), with the process's peak RSS and the RSS the build added.
#include <benchmark/benchmark.h>
#include <simgrid/s4u/Engine.hpp>
#include <xbt/log.h>

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "platforms/builder.hpp"
#include "platforms/platform_spec.hpp"
#include "sim/engine.hpp"
#include "sim/platform.hpp"

namespace {

double current_rss_mb() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / 1e6;
}

double peak_rss_mb() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1e3;  // kB
}

// In a child process: builds the platform, returns "seconds peak_mb added_mb hosts links".
std::string build_once(const clustersim::platforms::PlatformSpec& spec, int gpus) {
  return clustersim::sim::run_in_subprocess([&] {
    int argc = 1;
    char arg0[] = "bench_platforms";
    char* argv[] = {arg0, nullptr};
    simgrid::s4u::Engine engine(&argc, argv);
    xbt_log_control_set("root.thresh:critical");
    clustersim::sim::apply_network_config(engine);
    auto builder = clustersim::platforms::make_platform_builder(spec, gpus);
    const double rss_before = current_rss_mb();
    const auto start = std::chrono::steady_clock::now();
    builder->build(engine);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::ostringstream out;
    out << seconds << " " << peak_rss_mb() << " " << current_rss_mb() - rss_before << " "
        << engine.get_host_count() << " " << engine.get_link_count();
    return out.str();
  });
}

void BM_BuildPlatform(benchmark::State& state, const std::string& name) {
  const auto spec = clustersim::platforms::find_platform(name);
  const int gpus = static_cast<int>(state.range(0));
  double peak = 0, added = 0, hosts = 0, links = 0;
  for (auto _ : state) {
    double seconds = 0;
    std::istringstream in(build_once(spec, gpus));
    in >> seconds >> peak >> added >> hosts >> links;
    state.SetIterationTime(seconds);
  }
  state.counters["peak_rss_MB"] = peak;
  state.counters["build_MB"] = added;
  state.counters["hosts"] = hosts;
  state.counters["links"] = links;
}

void register_all() {
  for (const auto& name : clustersim::platforms::catalog_platforms()) {
    benchmark::RegisterBenchmark(("build/" + name).c_str(), BM_BuildPlatform, name)
        ->Arg(1024)->Arg(4096)->Arg(16384)
        ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
