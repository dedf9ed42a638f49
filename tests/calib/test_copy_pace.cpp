// A real step beside host copies issued in pace (calibration runs 88, 89 and 91 on H100s,
// calib/data/h100/run88/, run89/, run91/; calib/probes/copy_pace.py): the measured cost model's
// charge for kernels beside copies, summed over one profiled paced step kernel by kernel as the
// engine charges it (docs/engine.md: each op's time x (1 + share + fixed / time) for the part of it
// that overlaps copies of each direction set), against the step's measured extra time.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "calib/copy_delay.hpp"
#include "calib/measured_cost_model.hpp"
#include "calib/tables.hpp"
#include "calib_test_util.hpp"

namespace clustersim::calib {
namespace {

using Interval = std::pair<double, double>;  // [start, end), us

// Microseconds of [a0, a1) covered by the union of `spans`.
double covered(double a0, double a1, std::vector<Interval> spans) {
  std::sort(spans.begin(), spans.end());
  double total = 0.0, last = a0;
  for (auto [s, e] : spans) {
    s = std::max(s, last);
    e = std::min(e, a1);
    if (e > s) {
      total += e - s;
      last = e;
    }
  }
  return total;
}

// (fixed, share) of a kernel class beside copies of directions `dirs` (bit 1 d2h, bit 2 h2d).
using DelayOf = std::function<sim::CopyDelay(sim::ComputeClass, int dirs)>;

// The extra seconds `delay` charges the paced step of `seq` in a kernels CSV: each kernel's time
// alone (the same kernel, by position, in the profiled step alone) times the delay for the
// share of it that overlapped copies of d2h only, h2d only or both.
double charged(const CsvTable& k, const std::string& seq, const DelayOf& delay_of) {
  const std::size_t seq_c = k.column("seq"), run = k.column("run"), kind = k.column("kind");
  const std::size_t name = k.column("name"), cls = k.column("class");
  const std::size_t start = k.column("start_us"), dur = k.column("dur_us");
  std::vector<std::size_t> alone, paced;
  std::array<std::vector<Interval>, 2> copies;  // d2h, h2d
  for (std::size_t r = 0; r < k.rows.size(); ++r) {
    if (k.text(r, seq_c) != seq) continue;
    const bool is_paced = k.text(r, run) == "paced";
    if (k.text(r, kind) == "kernel") (is_paced ? paced : alone).push_back(r);
    // The offloaded chunks (> 1 ms); the step's own small copies are part of both steps.
    if (k.text(r, kind) == "memcpy" && is_paced && k.number(r, dur) > 1000.0) {
      const double s = k.number(r, start);
      copies[k.text(r, name).find("DtoH") != std::string::npos ? 0 : 1].push_back({s, s + k.number(r, dur)});
    }
  }
  EXPECT_EQ(alone.size(), paced.size()) << k.path << " seq " << seq;
  EXPECT_FALSE(copies[0].empty() || copies[1].empty()) << k.path << " seq " << seq;
  std::vector<Interval> both;
  for (const auto& [a0, a1] : copies[0]) {
    for (const auto& [b0, b1] : copies[1]) {
      if (std::min(a1, b1) > std::max(a0, b0)) both.push_back({std::max(a0, b0), std::min(a1, b1)});
    }
  }
  const std::map<std::string, sim::ComputeClass> classes = {
      {"gemm", sim::ComputeClass::Gemm}, {"attention", sim::ComputeClass::Attention},
      {"other", sim::ComputeClass::MemoryBound}};
  double extra = 0.0;
  for (std::size_t i = 0; i < std::min(alone.size(), paced.size()); ++i) {
    const double s = k.number(paced[i], start), e = s + k.number(paced[i], dur);
    if (e <= s) continue;
    const double t = k.number(alone[i], dur) * 1e-6;
    const sim::ComputeClass c = classes.at(k.text(paced[i], cls));
    const double b = covered(s, e, both);
    const double parts[] = {covered(s, e, copies[0]) - b, covered(s, e, copies[1]) - b, b};
    for (int dirs = 1; dirs <= 3; ++dirs) {
      if (parts[dirs - 1] <= 0.0) continue;
      const sim::CopyDelay d = delay_of(c, dirs);
      extra += parts[dirs - 1] / (e - s) * (d.fixed_s + d.share * t);
    }
  }
  return extra;
}

// Runs 88, 89 and 91 ran the same probe on H100s: at each chunk size and sequence length the mean
// of their measured extra times (each the median of 9 paced steps minus 9 alone; the three runs
// spread over 0.7-0.8 ms, 2.7 ms at 64 MiB and 8k tokens, and four of the twelve are negative).
// What the data can tell: the table's whole line, a fixed 20-35 us per GEMM call beside copies
// included, charges 2.0 and 1.5 ms at 256 MiB, 1.8 and 0.7 ms more than measured; the share
// alone, what the model charges, is within 0.6 ms of every point (2026-12-05: measured 0.23,
// 0.79, 0.33 and -0.44 ms at 256 MiB 4k and 8k tokens, 64 MiB 4k and 8k; the share 0.24, 0.46,
// 0.12 and 0.04 ms). The share itself is barely resolved (charging nothing would miss only 256
// MiB at 8k, by 0.19 ms): it stays as runs 80-81 measured it per kernel.
TEST(CopyPace, KernelsBesideCopiesIssuedInPaceCostWhatTheModelCharges) {
  const auto tables = MeasuredTables::load(default_measured_dir());
  const MeasuredCostModel h100(testing::gpu("H100-SXM", 3.35), tables);
  const DelayOf model = [&](sim::ComputeClass c, int dirs) {
    return h100.copy_kernel_delay(c, dirs & 1, dirs & 2);
  };
  const DelayOf line = [&](sim::ComputeClass c, int dirs) { return tables->copy_delay().delay(c, dirs); };
  const std::string dir = default_measured_dir() + "/../h100/";
  int points = 0;
  for (const std::string mib : {"256", "64"}) {
    struct Point {
      double measured = 0.0, model = 0.0, line = 0.0;
    };
    std::map<std::string, Point> by_seq;  // seq: means over the three runs
    for (const std::string run : {"run88", "run89", "run91"}) {
      const CsvTable steps = read_csv(dir + run + "/copy_pace_" + mib + ".csv");
      const CsvTable kernels = read_csv(dir + run + "/copy_pace_kernels_" + mib + ".csv");
      for (std::size_t r = 0; r < steps.rows.size(); ++r) {
        ASSERT_EQ(steps.number(r, steps.column("copy_check")), 1.0);
        const std::string seq = steps.text(r, steps.column("seq"));
        Point& p = by_seq[seq];
        p.measured += steps.number(r, steps.column("extra_s")) / 3;
        p.model += charged(kernels, seq, model) / 3;
        p.line += charged(kernels, seq, line) / 3;
      }
    }
    ASSERT_EQ(by_seq.size(), 2u) << mib;
    for (const auto& [seq, p] : by_seq) {
      EXPECT_GT(p.model, 0.0) << mib << " MiB seq " << seq;
      EXPECT_NEAR(p.model, p.measured, 0.6e-3) << mib << " MiB seq " << seq;
      if (mib == "256") {
        EXPECT_GT(p.line - p.measured, 0.5e-3) << "seq " << seq;
      }
      ++points;
    }
  }
  EXPECT_EQ(points, 4);
}

}  // namespace
}  // namespace clustersim::calib
