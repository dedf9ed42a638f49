#include "calib/tp_overlap_factor.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace clustersim::calib {
namespace {

const std::string kPrefix = "gemm_tp/";
const std::string kNoTable =
    "GEMM under TP overlap: no gemm_tp_overlap table, costed as a plain GEMM";

}  // namespace

double piecewise_linear(const std::vector<std::pair<double, double>>& pts, double x) {
  if (pts.size() < 2) throw std::invalid_argument("piecewise_linear needs two points");
  std::size_t j = 0;
  while (j + 2 < pts.size() && pts[j + 1].first < x) ++j;
  const auto& [x0, y0] = pts[j];
  const auto& [x1, y1] = pts[j + 1];
  return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
}

std::vector<std::pair<std::string, std::vector<double>>> overlap_layouts(const sim::GemmShape& g,
                                                                         sim::Phase phase) {
  const double m = static_cast<double>(g.m), n = static_cast<double>(g.n),
               k = static_cast<double>(g.k);
  if (g.dtype == sim::DType::FP8) return {{"fp8/tn", {m, n, k}}};
  if (phase != sim::Phase::Backward) return {{"bf16/fwd", {m, n, k}}};
  if (g.splits > 1) return {{"bf16/dgrad", {m, n, k}}};  // TE never splits a wgrad
  return {{"bf16/dgrad", {m, n, k}}, {"bf16/wgrad", {n, m, k}}};
}

std::vector<OverlapGrid> overlap_grids(const MeasuredTables& tables, const std::string& prefix) {
  std::vector<OverlapGrid> out;
  for (const auto& key : tables.keys()) {
    if (key.rfind(prefix, 0) != 0) continue;
    const auto slash = key.rfind('/');
    char kind[16] = {};
    OverlapGrid o;
    if (std::sscanf(key.substr(slash + 1).c_str(), "%15[a-z]_%d_%d", kind, &o.a, &o.b) != 3) continue;
    o.layout = key.substr(prefix.size(), slash - prefix.size());
    o.variant = kind;
    o.grid = &tables.grid(key);
    out.push_back(std::move(o));
  }
  return out;
}

TpOverlapFactor::TpOverlapFactor(const MeasuredTables& tables) {
  // Keys: "gemm_tp/<dtype>/<layout>/<variant>_<chunks>_<margin>" (load_tp_overlap_series).
  for (const OverlapGrid& o : overlap_grids(tables, kPrefix)) {
    Layout& l = layouts_[o.layout];
    l.name = o.layout;
    const LogGrid* g = o.grid;
    const std::string& v = o.variant;
    const int chunks = o.a, margin = o.b;
    if (v == "full") {
      l.full = g;
    } else if (v == "margin") {
      l.margin[margin] = g;
    } else if (v == "split" && margin == 0) {
      l.split[chunks] = g;
    } else if (v == "split" && chunks == kPipelineChunks) {
      l.pipeline[margin] = g;
    }
  }
}

std::vector<std::string> TpOverlapFactor::files() const { return full_grid_files(layouts_); }

const TpOverlapFactor::Layout* TpOverlapFactor::usable(const std::string& name, int splits,
                                                       int margin) const {
  const auto it = layouts_.find(name);
  if (it == layouts_.end()) return nullptr;
  const Layout& l = it->second;
  const bool split = splits > 1, pipe = split && margin > 0;
  if (l.full == nullptr || (margin > 0 && l.margin.empty()) || (split && l.split.empty()) ||
      (pipe && (l.pipeline.empty() || l.split.count(kPipelineChunks) == 0))) {
    return nullptr;
  }
  return &l;
}

double TpOverlapFactor::operator()(const sim::GemmShape& g, sim::Phase phase,
                                   const OutOfGridNote& note) const {
  if (g.splits < 1) throw std::invalid_argument("GEMM with splits < 1");
  if (g.sm_margin < 0 || g.sm_margin >= kMeasuredSmCount) {
    throw std::invalid_argument("GEMM with sm_margin " + std::to_string(g.sm_margin) +
                                " outside 0-" + std::to_string(kMeasuredSmCount - 1) +
                                " (the measured H200 has 132 SMs)");
  }
  if (g.splits == 1 && g.sm_margin == 0) return 1.0;
  const auto parts = overlap_layouts(g, phase);
  double log_sum = 0.0;
  for (const auto& [name, x] : parts) {
    const Layout* l = usable(name, g.splits, g.sm_margin);
    if (l == nullptr) {
      note(kNoTable);
      return 1.0;
    }
    log_sum += std::log(layout_factor(*l, x, g.splits, g.sm_margin, note));
  }
  return std::exp(log_sum / static_cast<double>(parts.size()));
}

double TpOverlapFactor::layout_factor(const Layout& l, const std::vector<double>& x, int splits,
                                      int margin, const OutOfGridNote& note) const {
  if (!l.full->contains(x)) {  // LogGrid::time_at clamps: the ratio of the nearest shape
    note("GEMM under TP overlap " + l.name + " outside " + range_text(*l.full) +
         ": ratio of the nearest measured shape");
  }
  if (splits == 1) return margin_factor(l, x, margin);
  const double r = split_factor(l, x, splits, note);
  return margin == 0 ? r : r * pipeline_margin_impact(l, x, margin);
}

// Margin only: piecewise linear in S through (0, 1) and the measured margins; above the largest
// measured S_max the GEMM's SMs shrink in proportion, (132 - S_max) / (132 - S).
double TpOverlapFactor::margin_factor(const Layout& l, const std::vector<double>& x,
                                      int margin) const {
  if (margin == 0) return 1.0;
  const double full = l.full->time_at(x);
  std::vector<std::pair<double, double>> pts{{0.0, 1.0}};
  for (const auto& [s, g] : l.margin) pts.emplace_back(s, g->time_at(x) / full);
  const auto [s_max, r_max] = pts.back();
  if (margin > s_max) {
    return r_max * (kMeasuredSmCount - s_max) / (kMeasuredSmCount - margin);
  }
  return piecewise_linear(pts, margin);
}

// Split only: linear in log2 N through (1, 1) and the measured chunk counts; above the largest
// measured N, its ratio (noted).
double TpOverlapFactor::split_factor(const Layout& l, const std::vector<double>& x, int splits,
                                     const OutOfGridNote& note) const {
  const double full = l.full->time_at(x);
  std::vector<std::pair<double, double>> pts{{0.0, 1.0}};
  for (const auto& [c, g] : l.split) pts.emplace_back(std::log2(c), g->time_at(x) / full);
  const int n_max = l.split.rbegin()->first;
  if (splits > n_max) {
    note("GEMM under TP overlap " + l.name + " with more than " + std::to_string(n_max) +
         " splits: ratio of " + std::to_string(n_max));
    return pts.back().second;
  }
  return piecewise_linear(pts, std::log2(splits));
}

// What a margin adds to a split GEMM: I(S) = R(split_4_S) / R(split_4_0), piecewise linear in S
// from I(0) = 1 over the measured pipeline margins; above the largest S_p, I(S_p) scaled as the
// unsplit GEMM's margin factor grows from S_p to S.
double TpOverlapFactor::pipeline_margin_impact(const Layout& l, const std::vector<double>& x,
                                               int margin) const {
  const double split0 = l.split.at(kPipelineChunks)->time_at(x);
  std::vector<std::pair<double, double>> pts{{0.0, 1.0}};
  for (const auto& [s, g] : l.pipeline) pts.emplace_back(s, g->time_at(x) / split0);
  const auto [s_p, i_p] = pts.back();
  if (margin > s_p) {
    const int sp = static_cast<int>(s_p);
    return i_p * margin_factor(l, x, margin) / margin_factor(l, x, sp);
  }
  return piecewise_linear(pts, margin);
}

}  // namespace clustersim::calib
