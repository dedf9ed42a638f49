#include "calib/copy_delay.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <vector>

#include "calib/tables.hpp"
#include "sim/spec_error.hpp"

namespace clustersim::calib {
namespace {

// Least-squares line y = fixed + share x through (x, y), both parts >= 0: with a negative
// share the mean of y alone, with a negative fixed part the line through the origin.
sim::CopyDelay fit(const std::vector<std::pair<double, double>>& xy) {
  const double n = static_cast<double>(xy.size());
  double mx = 0.0, my = 0.0;
  for (const auto& [x, y] : xy) {
    mx += x / n;
    my += y / n;
  }
  double sxx = 0.0, sxy = 0.0, xx = 0.0, x_y = 0.0;
  for (const auto& [x, y] : xy) {
    sxx += (x - mx) * (x - mx);
    sxy += (x - mx) * (y - my);
    xx += x * x;
    x_y += x * y;
  }
  sim::CopyDelay d;
  d.share = sxx > 0.0 ? sxy / sxx : 0.0;
  d.fixed_s = my - d.share * mx;
  if (d.share < 0.0) d = {my, 0.0};
  if (d.fixed_s < 0.0) d = {0.0, xx > 0.0 ? x_y / xx : 0.0};
  d.fixed_s = std::max(0.0, d.fixed_s);
  d.share = std::max(0.0, d.share);
  return d;
}

}  // namespace

CopyDelayTable CopyDelayTable::load(const std::string& path) {
  const CsvTable t = read_csv(path);
  const std::size_t kernel = t.column("kernel"), bg = t.column("background");
  const std::size_t alone = t.column("seconds_alone"), beside = t.column("seconds_beside");
  const std::size_t covered = t.column("covered"), check = t.column("check");
  const std::map<std::string, int> backgrounds = {
      {"d2h", kDeviceToHost}, {"h2d", kHostToDevice}, {"both", kDeviceToHost | kHostToDevice}};
  const std::map<std::string, sim::ComputeClass> classes = {
      {"gemm_", sim::ComputeClass::Gemm}, {"attention_", sim::ComputeClass::Attention},
      {"copy_", sim::ComputeClass::MemoryBound}};
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> extra;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto b = backgrounds.find(t.text(r, bg));
    if (b == backgrounds.end()) throw SpecError(path, t.lines[r], "background", "expected d2h, h2d or both");
    const auto c = std::find_if(classes.begin(), classes.end(), [&](const auto& kv) {
      return t.text(r, kernel).rfind(kv.first, 0) == 0;
    });
    if (c == classes.end()) {
      throw SpecError(path, t.lines[r], "kernel", "expected a name starting with gemm_, attention_ or copy_");
    }
    if (t.number(r, check) != 1.0) throw SpecError(path, t.lines[r], "check", "correctness check failed");
    if (t.number(r, covered) != 1.0) {
      throw SpecError(path, t.lines[r], "covered", "the copies did not run over the whole timed window");
    }
    const double a = t.number(r, alone), s = t.number(r, beside);
    if (a <= 0.0 || s <= 0.0) throw SpecError(path, t.lines[r], "seconds_alone", "times must be positive");
    extra[{static_cast<int>(c->second), b->second}].emplace_back(a, s - a);
  }
  CopyDelayTable table;
  table.file_ = path;
  for (const auto& [key, points] : extra) {
    table.delay_[static_cast<std::size_t>(key.first)][static_cast<std::size_t>(key.second)] = fit(points);
  }
  return table;
}

void CopyDelayTable::load_paced(const std::string& path) {
  const CsvTable t = read_csv(path);
  const std::size_t cls = t.column("class"), slowdown = t.column("slowdown");
  const std::map<std::string, sim::ComputeClass> classes = {
      {"gemm", sim::ComputeClass::Gemm}, {"attention", sim::ComputeClass::Attention},
      {"other", sim::ComputeClass::MemoryBound}};
  std::array<double, sim::kComputeClassCount> sum{};
  std::array<int, sim::kComputeClassCount> n{};
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto c = classes.find(t.text(r, cls));
    if (c == classes.end()) throw SpecError(path, t.lines[r], "class", "expected gemm, attention or other");
    const auto i = static_cast<std::size_t>(c->second);
    sum[i] += t.number(r, slowdown);
    ++n[i];
  }
  for (std::size_t i = 0; i < paced_share_.size(); ++i) {
    paced_share_[i] = n[i] > 0 ? std::max(0.0, sum[i] / static_cast<double>(n[i])) : 0.0;
  }
  paced_file_ = path;
}

sim::CopyDelay CopyDelayTable::delay(sim::ComputeClass compute, int directions) const {
  if (directions <= 0 || directions > 3) return {};
  return delay_[static_cast<std::size_t>(compute)][static_cast<std::size_t>(directions)];
}

}  // namespace clustersim::calib
