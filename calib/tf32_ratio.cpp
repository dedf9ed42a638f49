#include "calib/tf32_ratio.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <vector>

#include "calib/tables.hpp"
#include "sim/spec_error.hpp"

namespace clustersim::calib {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

Tf32Ratio Tf32Ratio::load(const std::string& path) {
  const CsvTable t = read_csv(path);
  const std::size_t lay = t.column("layout"), tf32 = t.column("time_tf32_s"),
                    bf16 = t.column("time_bf16_s");
  std::map<std::string, std::vector<double>> ratios{{"fwd", {}}, {"dgrad", {}}, {"wgrad", {}}};
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto it = ratios.find(t.text(r, lay));
    if (it == ratios.end()) {
      throw SpecError(path, t.lines[r], "layout", "'" + t.text(r, lay) + "' (fwd, dgrad or wgrad)");
    }
    const double a = t.number(r, tf32), b = t.number(r, bf16);
    if (a <= 0.0) throw SpecError(path, t.lines[r], "time_tf32_s", "must be > 0");
    if (b <= 0.0) throw SpecError(path, t.lines[r], "time_bf16_s", "must be > 0");
    it->second.push_back(a / b);
  }
  for (const auto& [name, v] : ratios) {
    if (v.empty()) throw SpecError(path, t.header_line, "layout", "no '" + name + "' row");
  }
  Tf32Ratio out;
  out.fwd_ = median(ratios["fwd"]);
  out.dgrad_ = median(ratios["dgrad"]);
  out.wgrad_ = median(ratios["wgrad"]);
  out.file_ = path;
  return out;
}

double Tf32Ratio::ratio(sim::Phase phase) const {
  if (!loaded()) throw std::logic_error("Tf32Ratio::ratio without gemm_tf32.csv");
  return phase == sim::Phase::Backward ? std::sqrt(dgrad_ * wgrad_) : fwd_;
}

double Tf32Ratio::layout_median(const std::string& layout) const {
  if (!loaded()) throw std::logic_error("Tf32Ratio::layout_median without gemm_tf32.csv");
  if (layout == "fwd") return fwd_;
  if (layout == "dgrad") return dgrad_;
  if (layout == "wgrad") return wgrad_;
  throw std::invalid_argument("Tf32Ratio: unknown layout '" + layout + "'");
}

}  // namespace clustersim::calib
