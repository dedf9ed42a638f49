// A real step beside host copies issued in pace (calibration run 84 on an H200, runs 88, 89, 91
// and 97 on H100s: calib/data/h200/run84/, calib/data/h100/run88/ ... run97/; calib/probes/
// copy_pace.py): the shares the cost model charges kernels beside copies (copy_pace_share.csv,
// measured inside those steps) against the call-by-call lines of runs 80-81, and the charge summed
// over one profiled paced step kernel by kernel as the engine charges it (docs/engine.md: each
// op's time x (1 + share + fixed / time) for the part of it that overlaps copies of each
// direction set) against the step's measured extra time.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
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

// Mean and standard error of the mean of `v` (at least two values).
std::pair<double, double> mean_se(const std::vector<double>& v) {
  double m = 0.0, ss = 0.0;
  for (double x : v) m += x / static_cast<double>(v.size());
  for (double x : v) ss += (x - m) * (x - m);
  return {m, std::sqrt(ss / static_cast<double>(v.size() - 1) / static_cast<double>(v.size()))};
}

// Inside the paced steps, per class over the 20 / 15 / 20 (run, chunk, seq) points of
// copy_pace_share.csv: GEMMs beside copies +1.1% +- 0.5%, attention -2.2% +- 1.7%, memory-bound
// -0.9% +- 0.4% (mean +- its standard error, 2026-12-06). The model charges these means (at least
// 0): attention nothing where runs 80-81, timing calls one by one beside a backlog of copies,
// measured 11.5-14% (more than 8 standard errors above what the steps show); memory-bound
// nothing where they measured 1.1-2.3%.
TEST(CopyPace, SharesAreTheSlowdownsMeasuredInsidePacedSteps) {
  const auto tables = MeasuredTables::load(default_measured_dir());
  const MeasuredCostModel h200(testing::gpu("H200-SXM", 4.8), tables);
  const CsvTable t = read_csv(default_measured_dir() + "/copy_pace_share.csv");
  const std::map<std::string, sim::ComputeClass> classes = {
      {"gemm", sim::ComputeClass::Gemm}, {"attention", sim::ComputeClass::Attention},
      {"other", sim::ComputeClass::MemoryBound}};
  for (const auto& [name, c] : classes) {
    std::vector<double> v;
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      if (t.text(r, t.column("class")) == name) v.push_back(t.number(r, t.column("slowdown")));
    }
    ASSERT_GE(v.size(), 12u) << name;
    const auto [mean, se] = mean_se(v);
    for (const int dirs : {1, 2, 3}) {
      const sim::CopyDelay d = h200.copy_kernel_delay(c, dirs & 1, dirs & 2);
      EXPECT_NEAR(d.share, std::max(0.0, mean), 1e-12) << name << " directions " << dirs;
      EXPECT_EQ(d.fixed_s, 0.0);
      // The call-by-call line of the same class and directions, for the record.
      const double line = tables->copy_delay().delay(c, dirs).share;
      if (c == sim::ComputeClass::Attention) {
        EXPECT_GT(line - mean, 5.0 * se) << dirs;
      }
    }
    if (c == sim::ComputeClass::Gemm) {
      EXPECT_GT(mean, 2.0 * se);
    } else {
      EXPECT_LT(mean, 0.0) << name;
    }
  }
}

// The step's extra time: run 84 charged by the H200's model, runs 88, 89, 91 and 97 by the
// H100's; at each chunk size and sequence length the mean of the five runs' measured extra times
// (each the median of 9 paced steps minus 9 alone; they spread over 0.7-2.7 ms, six of the twenty
// are negative). 2026-12-06: measured 0.42 +- 0.18, 0.27 +- 0.34, 0.34 +- 0.13 and -0.17 +- 0.52
// ms at 256 MiB 4k and 8k tokens, 64 MiB 4k and 8k (mean +- standard error); the model charges
// 0.29, 0.32, 0.07 and 0.08 ms. It never charges more than two standard errors above the
// measured; at 64 MiB and 4k tokens the steps cost 0.26 ms (2.0 standard errors, 0.3% of the 79
// ms step) more than the kernels beside the copies explain, a cost of the paced copies that the
// kernels do not show (not identified, not modelled: docs/cost-model.md); what the model leaves
// uncharged stays below 0.5% of the step at every point. (With runs 84-91 alone the charge lay
// within two standard errors of every mean.) The call-by-call line with its fixed 20-35 us per
// GEMM charges 2.0 and 1.5 ms at 256 MiB, more than two standard errors above. The steps are too
// noisy to tell the shares apart (the kernel-level check above does that).
TEST(CopyPace, KernelsBesideCopiesIssuedInPaceCostWhatTheModelCharges) {
  const auto tables = MeasuredTables::load(default_measured_dir());
  const MeasuredCostModel h200(testing::gpu("H200-SXM", 4.8), tables);
  const MeasuredCostModel h100(testing::gpu("H100-SXM", 3.35), tables);
  const DelayOf line = [&](sim::ComputeClass c, int dirs) { return tables->copy_delay().delay(c, dirs); };
  const std::string data = default_measured_dir() + "/../";
  const std::vector<std::pair<std::string, const MeasuredCostModel*>> runs = {
      {"h200/run84", &h200}, {"h100/run88", &h100}, {"h100/run89", &h100}, {"h100/run91", &h100},
      {"h100/run97", &h100}};
  int points = 0;
  for (const std::string mib : {"256", "64"}) {
    struct Point {
      std::vector<double> measured;
      double model = 0.0, line = 0.0, alone = 0.0;
    };
    std::map<std::string, Point> by_seq;  // seq: over the runs
    for (const auto& [run, model] : runs) {
      const DelayOf delay = [m = model](sim::ComputeClass c, int dirs) {
        return m->copy_kernel_delay(c, dirs & 1, dirs & 2);
      };
      const CsvTable steps = read_csv(data + run + "/copy_pace_" + mib + ".csv");
      const CsvTable kernels = read_csv(data + run + "/copy_pace_kernels_" + mib + ".csv");
      for (std::size_t r = 0; r < steps.rows.size(); ++r) {
        ASSERT_EQ(steps.number(r, steps.column("copy_check")), 1.0);
        const std::string seq = steps.text(r, steps.column("seq"));
        Point& p = by_seq[seq];
        p.measured.push_back(steps.number(r, steps.column("extra_s")));
        p.alone += steps.number(r, steps.column("fwd_bwd_alone_s")) / static_cast<double>(runs.size());
        p.model += charged(kernels, seq, delay) / static_cast<double>(runs.size());
        p.line += charged(kernels, seq, line) / static_cast<double>(runs.size());
      }
    }
    ASSERT_EQ(by_seq.size(), 2u) << mib;
    for (const auto& [seq, p] : by_seq) {
      ASSERT_EQ(p.measured.size(), runs.size());
      const auto [mean, se] = mean_se(p.measured);
      EXPECT_GT(p.model, 0.0) << mib << " MiB seq " << seq;
      EXPECT_LT(p.model - mean, 2.0 * se) << mib << " MiB seq " << seq;
      EXPECT_LT(mean - p.model, 0.005 * p.alone) << mib << " MiB seq " << seq;
      if (mib == "256") {
        EXPECT_GT(p.line - mean, 2.0 * se) << "seq " << seq;
      }
      ++points;
    }
  }
  EXPECT_EQ(points, 4);
}

}  // namespace
}  // namespace clustersim::calib
