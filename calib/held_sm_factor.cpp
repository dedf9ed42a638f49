#include "calib/held_sm_factor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace clustersim::calib {
namespace {

const std::string kPrefix = "gemm_busy/";

}  // namespace

HeldSmFactor::HeldSmFactor(const MeasuredTables& tables) {
  // Keys: "gemm_busy/<dtype>/<layout>/<variant>_<margin>_<busy>" (load_busy_sms_series).
  for (const OverlapGrid& o : overlap_grids(tables, kPrefix)) {
    Layout& l = layouts_[o.layout];
    l.name = o.layout;
    const LogGrid* g = o.grid;
    const std::string& v = o.variant;
    const int margin = o.a, busy = o.b;
    if (v == "full") {
      l.full = g;
    } else if (v == "margin") {
      l.margin[margin] = g;
    } else if (v == "busy" && margin == 0) {
      (busy == 0 ? l.busy0 : l.busy[busy]) = g;
    } else if (v == "busy" && margin == busy) {
      l.busy_margin[busy] = g;
    }
  }
}

std::vector<std::string> HeldSmFactor::files() const { return full_grid_files(layouts_); }

double HeldSmFactor::operator()(const sim::GemmShape& g, sim::Phase phase,
                                const OutOfGridNote& note) const {
  if (g.busy_sms < 0 || g.busy_sms >= kMeasuredSmCount) {
    throw std::invalid_argument("GEMM with busy_sms " + std::to_string(g.busy_sms) +
                                " outside 0-" + std::to_string(kMeasuredSmCount - 1) +
                                " (the measured H200 has 132 SMs)");
  }
  if (g.busy_sms == 0) return 1.0;
  const bool margin = g.sm_margin > 0;
  double log_sum = 0.0;
  const auto parts = overlap_layouts(g, phase);
  for (const auto& [name, x] : parts) {
    const auto it = layouts_.find(name);
    const bool usable = it != layouts_.end() && it->second.full != nullptr &&
                        it->second.busy0 != nullptr &&
                        !(margin ? it->second.busy_margin.empty() : it->second.busy.empty());
    if (!usable) {
      note("GEMM beside held SMs: no gemm_busy_sms table for " + name + ", not slowed");
      return 1.0;
    }
    if (!it->second.full->contains(x)) {  // LogGrid::time_at clamps
      note("GEMM beside held SMs " + name + " outside " + range_text(*it->second.full) +
           ": ratio of the nearest measured shape");
    }
    log_sum += std::log(layout_factor(it->second, x, g.busy_sms, margin));
  }
  return std::max(1.0, std::exp(log_sum / static_cast<double>(parts.size())));
}

double HeldSmFactor::layout_factor(const Layout& l, const std::vector<double>& x, int busy,
                                   bool margin) const {
  const double reference = l.busy0->time_at(x);
  std::vector<std::pair<double, double>> pts{{0.0, 1.0}};
  if (!margin) {
    for (const auto& [s, g] : l.busy) pts.emplace_back(s, g->time_at(x) / reference);
    const auto [s_max, r_max] = pts.back();
    if (busy > s_max) return r_max * (kMeasuredSmCount - s_max) / (kMeasuredSmCount - busy);
    return piecewise_linear(pts, busy);
  }
  const double full = l.full->time_at(x);
  for (const auto& [s, g] : l.busy_margin) {
    const auto idle = l.margin.find(s);
    if (idle == l.margin.end()) continue;
    pts.emplace_back(s, (g->time_at(x) / reference) / (idle->second->time_at(x) / full));
  }
  if (pts.size() < 2) return 1.0;
  if (busy > pts.back().first) return pts.back().second;
  return piecewise_linear(pts, busy);
}

}  // namespace clustersim::calib
