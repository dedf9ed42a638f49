// A 2-GPU NVLink all_reduce played through the engine, on the hgx_h200 platform with the
// measured cost model, must reproduce the calibrated NCCL time within 5% from 1 MiB to 4 GiB
// (calib/data/h200: the algorithm/protocol NCCL chose at each size, timed with that choice
// forced, as docs/calibration.md describes).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "platforms/builder.hpp"
#include "platforms/platform_spec.hpp"
#include "sim/engine.hpp"
#include "tools/simulate.hpp"

namespace clustersim::tools {
namespace {

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<std::vector<std::string>> rows;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

// bytes -> measured seconds of a 2-rank all_reduce with NCCL's own algorithm/protocol choice.
std::map<double, double> measured_all_reduce() {
  const std::string dir = std::string(CLUSTERSIM_SOURCE_DIR) + "/calib/data/h200/";
  std::map<double, std::string> choice;  // bytes -> table name
  for (const auto& r : read_csv(dir + "nccl_default_algo_choice.csv")) {
    if (r.size() < 4 || r[0] != "AllReduce") continue;
    std::string algo = r[2], proto = r[3];
    for (auto& ch : algo) ch = static_cast<char>(std::tolower(ch));
    for (auto& ch : proto) ch = static_cast<char>(std::tolower(ch));
    choice[std::stod(r[1])] = "nccl_" + algo + "_" + proto + ".csv";
  }
  std::map<double, double> out;
  for (const auto& [bytes, table] : choice) {
    for (const auto& r : read_csv(dir + table)) {
      if (r[0] == "all_reduce" && r[3] == "2" && std::stod(r[4]) == bytes) out[bytes] = std::stod(r[5]);
    }
  }
  return out;
}

double simulate_all_reduce(double bytes) {
  const auto spec = platforms::find_platform("hgx_h200");
  auto platform = platforms::make_platform_builder(spec, 8);
  sim::Workload w;
  w.layout = sim::RankLayout(2, 1, 4, 1);  // TP pairs on NVLink, nothing else running
  sim::Program p;
  p.labels = {"all_reduce"};
  sim::Op op;
  op.shape = sim::CollectiveSpec{sim::CollectiveKind::AllReduce, sim::GroupKind::TP, {}};
  op.bytes = bytes;
  p.ops.push_back(op);
  w.programs.push_back(p);
  w.program_of_rank.assign(8, 0);
  const auto cost = make_cost_model("measured", platform->gpu());
  return sim::simulate_step(w, *platform, *cost).step_time_s;
}

TEST(NcclAgreement, TwoGpuNvlinkAllReduceMatchesTheCalibratedTableWithinFivePercent) {
  const auto measured = measured_all_reduce();
  int checked = 0;
  for (const auto& [bytes, seconds] : measured) {
    if (bytes < 1024.0 * 1024 || bytes > 4.0 * 1024 * 1024 * 1024) continue;
    const double simulated = simulate_all_reduce(bytes);
    EXPECT_NEAR(simulated, seconds, 0.05 * seconds) << bytes << " bytes";
    std::printf("%12.0f  measured %.4g  simulated %.4g  (%+.2f%%)\n", bytes, seconds, simulated, 100.0 * (simulated - seconds) / seconds);
    ++checked;
  }
  EXPECT_GE(checked, 12);  // 1 MiB .. 4 GiB in powers of two
}

}  // namespace
}  // namespace clustersim::tools
