// The reference set's `collectives:` figures (tests/validation/measured.yaml: nccl-tests bus
// bandwidth inside one NVLink domain, cited there) against the engine's collectives, which the
// 2-GPU H200 NCCL tables parameterize (docs/calibration.md) and SimGrid plays as flows over the
// platform's NVSwitch links. The bounds are the accuracy recorded on 2026-12-06, with margins
// (docs/validation.md, "Collectives inside an NVLink domain"); they are not goals, and nothing
// in the model is fitted to these figures. A change that moves a figure past its bound updates
// it here and there in the same commit.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "platforms/builder.hpp"
#include "platforms/platform_spec.hpp"
#include "sim/engine.hpp"
#include "tools/simulate.hpp"

namespace clustersim::tools {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

YAML::Node collectives() { return YAML::LoadFile(REFERENCE_FILE)["collectives"]; }

// Bus bandwidth in GB/s of one collective of `bytes` (nccl-tests' size: the whole buffer) over
// all `gpus` GPUs of `platform`, as nccl-tests computes it: algbw = bytes / time, times
// 2(n-1)/n for all_reduce and (n-1)/n for all_gather and reduce_scatter. `algo`: "" for the
// engine's NCCL-style choice, else forced (sim::EngineOptions::nccl_algo).
double busbw(const std::string& platform, int gpus, sim::CollectiveKind kind, double bytes,
             const std::string& algo) {
  const auto builder = platforms::make_platform_builder(platforms::find_platform(platform), gpus);
  sim::Workload w;
  w.layout = sim::RankLayout(1, 1, gpus, 1);  // one communicator of every GPU, as nccl-tests
  sim::Program p;
  p.labels = {"collective"};
  sim::Op op;
  op.shape = sim::CollectiveSpec{kind, sim::GroupKind::DP, {}};
  op.bytes = bytes;
  p.ops.push_back(op);
  w.programs.push_back(p);
  w.program_of_rank.assign(static_cast<std::size_t>(gpus), 0);
  const auto cost = make_cost_model("measured", builder->gpu());
  sim::EngineOptions options;
  options.nccl_algo = algo;
  const double t = sim::simulate_step(w, *builder, *cost, options).step_time_s;
  const double n = gpus;
  const double factor = kind == sim::CollectiveKind::AllReduce ? 2.0 * (n - 1) / n : (n - 1) / n;
  return factor * bytes / t / 1e9;
}

// A busbw_by_bytes block: (size as written, MiB, measured GB/s) in file order.
struct SizePoint {
  std::string size;
  double mib = 0.0;
  double measured = 0.0;
};
std::vector<SizePoint> by_bytes(const YAML::Node& block) {
  std::vector<SizePoint> out;
  for (auto it = block.begin(); it != block.end(); ++it) {
    const std::string size = it->first.as<std::string>();
    const double mib = size.find("GiB") != std::string::npos ? 1024.0 * std::stod(size) : std::stod(size);
    out.push_back({size, mib, it->second.as<double>()});
  }
  return out;
}

double report(const std::string& what, double measured, double simulated) {
  const double err = simulated / measured - 1.0;
  std::printf("%-44s measured %6.1f  simulated %6.1f GB/s  %+6.1f%%\n", what.c_str(), measured,
              simulated, 100.0 * err);
  return err;
}

// 8 x H200, 16 GiB (stas00/ml-engineering, NCCL 2.27.7). The ring all-reduce is the one NCCL
// runs with NVLS off, as the simulator's jobs and our calibration do: -6.6%, the 2-GPU table's
// efficiency at its 4 GiB edge. All-gather and reduce-scatter reach 361-363 GB/s on 8 GPUs
// against 304 on our 2 GPUs at 4 GiB: simulated 18-23% slow, which 2-GPU tables cannot see.
TEST(CollectiveReference, EightH200Within25PercentAndSlowWithoutNvls) {
  const YAML::Node ref = collectives()["h200_8gpu_16GiB"]["busbw"];
  const double bytes = 16.0 * 1024 * kMiB;
  const double ring = report("h200 x8 all_reduce ring 16 GiB", ref["all_reduce_ring"].as<double>(),
                             busbw("hgx_h200", 8, sim::CollectiveKind::AllReduce, bytes, "ring"));
  EXPECT_LT(ring, 0.0);
  EXPECT_GT(ring, -0.10);
  for (const auto& [key, kind] : std::map<std::string, sim::CollectiveKind>{
           {"all_gather", sim::CollectiveKind::AllGather},
           {"reduce_scatter", sim::CollectiveKind::ReduceScatter}}) {
    const double err = report("h200 x8 " + key + " 16 GiB", ref[key].as<double>(),
                              busbw("hgx_h200", 8, kind, bytes, ""));
    EXPECT_LT(err, -0.10) << key;  // the 8-GPU gain the 2-GPU tables miss
    EXPECT_GT(err, -0.25) << key;
  }
  // NVLS (forced only, never NCCL's choice in the simulator): each GPU sends and receives the
  // buffer once at the 2-GPU ring's efficiency, +25% over the measured 480 GB/s.
  const double nvls = report("h200 x8 all_reduce nvls 16 GiB", ref["all_reduce_nvls"].as<double>(),
                             busbw("hgx_h200", 8, sim::CollectiveKind::AllReduce, bytes, "nvls"));
  EXPECT_GT(nvls, 0.15);
  EXPECT_LT(nvls, 0.35);
}

// DGX H100 with NVLS (the dgxc-benchmarking NCCL sample), 1 MiB - 8 GiB: the forced nvls
// algorithm is 14-24% fast from 64 MiB up and 49-76% fast below, where NVLS does not reach the
// rate the 2-GPU ring's latency and efficiency give it.
TEST(CollectiveReference, EightH100NvlsFastByAQuarterFrom64MiB) {
  const auto points = by_bytes(collectives()["h100_8gpu_all_reduce_nvls"]["busbw_by_bytes"]);
  ASSERT_EQ(points.size(), 8u);
  for (const SizePoint& p : points) {
    const double err = report("h100 x8 all_reduce nvls " + p.size, p.measured,
                              busbw("hgx_h100", 8, sim::CollectiveKind::AllReduce, p.mib * kMiB, "nvls"));
    EXPECT_GT(err, 0.10) << p.size;
    EXPECT_LT(err, p.mib >= 64.0 ? 0.35 : 0.90) << p.size;
  }
}

// GB200 NVL72, 72 GPUs (coreweave/nccl-tests, NCCL 2.26.2; which algorithm NCCL chose is not
// stated): the engine's choice (ring) is 25-32% slow, forced NVLS 38-82% fast, so the measured
// curve lies between the two.
TEST(CollectiveReference, Nvl72AllReduceBetweenRingAndNvls) {
  const auto points = by_bytes(collectives()["gb200_nvl72_all_reduce_72gpu"]["busbw_by_bytes"]);
  ASSERT_EQ(points.size(), 5u);
  for (const SizePoint& p : points) {
    const double bytes = p.mib * kMiB;
    const double ring = report("gb200 x72 all_reduce (ring) " + p.size, p.measured,
                               busbw("gb200_nvl72", 72, sim::CollectiveKind::AllReduce, bytes, ""));
    const double nvls = report("gb200 x72 all_reduce nvls " + p.size, p.measured,
                               busbw("gb200_nvl72", 72, sim::CollectiveKind::AllReduce, bytes, "nvls"));
    EXPECT_LT(ring, -0.15) << p.size;
    EXPECT_GT(ring, -0.35) << p.size;
    EXPECT_GT(nvls, 0.30) << p.size;
    EXPECT_LT(nvls, 0.95) << p.size;
  }
}

}  // namespace
}  // namespace clustersim::tools
