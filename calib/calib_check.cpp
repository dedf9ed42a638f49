#include "calib/calib_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace clustersim::calib {
namespace {

CheckRow row_of(const LooStats& s) {
  return {s.key, s.file, s.points, s.median, s.max, s.over_10pct, s.worst};
}

// Catalog series "gemm/bf16/fwd" -> GEMM dtype and the grid that covers it.
sim::DType dtype_of(const std::string& key) {
  return key.find("/fp8/") != std::string::npos ? sim::DType::FP8 : sim::DType::BF16;
}

std::string grid_key_of(const MeasuredSeries& s) {
  return dtype_of(s.key) == sim::DType::FP8 ? "gemm/fp8/tn" : "gemm/bf16/fwd";
}

void finish(CheckRow& r, std::vector<double>& errs) {
  r.points = errs.size();
  if (errs.empty()) return;
  std::sort(errs.begin(), errs.end());
  const std::size_t n = errs.size();
  r.median = n % 2 == 1 ? errs[n / 2] : 0.5 * (errs[n / 2 - 1] + errs[n / 2]);
  r.max = errs.back();
  r.over_10pct = static_cast<std::size_t>(
      std::count_if(errs.begin(), errs.end(), [](double e) { return e > 0.10; }));
}

// Model against the measured catalog GEMMs of one series: one row for the shapes inside the
// grid, one for those outside (costed by the fallback).
std::vector<CheckRow> catalog_rows(const MeasuredTables& tables, const MeasuredCostModel& model,
                                   const MeasuredSeries& s) {
  const LogGrid& grid = tables.grid(grid_key_of(s));
  CheckRow in, out;
  in.table = s.key + " (catalog, in grid)";
  out.table = s.key + " (catalog, outside grid)";
  in.file = out.file = s.file;
  std::vector<double> err_in, err_out;
  double worst_in = -1.0, worst_out = -1.0;
  for (const auto& p : s.points) {
    sim::Op op;
    op.shape = sim::GemmShape{static_cast<std::int64_t>(p.coords[0]),
                              static_cast<std::int64_t>(p.coords[1]),
                              static_cast<std::int64_t>(p.coords[2]), dtype_of(s.key)};
    // The catalog shapes are forward GEMMs, but its FP8 rows ran with split accumulation, which
    // the model gives the backward GEMMs only (forward FP8 uses the fast-accumulation table).
    const bool split_fp8 = dtype_of(s.key) == sim::DType::FP8 && s.key.find("fastacc") == std::string::npos;
    op.phase = split_fp8 ? sim::Phase::Backward : sim::Phase::Forward;
    const double e = std::fabs(model.compute_time(op) - p.time_s) / p.time_s;
    const bool inside = grid.contains(p.coords);
    (inside ? err_in : err_out).push_back(e);
    double& worst = inside ? worst_in : worst_out;
    if (e > worst) {
      worst = e;
      std::ostringstream w;
      w << "m=" << p.coords[0] << " n=" << p.coords[1] << " k=" << p.coords[2];
      (inside ? in : out).worst = w.str();
    }
  }
  finish(in, err_in);
  finish(out, err_out);
  return {in, out};
}

void format_rows(std::ostringstream& s, const std::string& title, const std::vector<CheckRow>& rows) {
  s << title << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-44s %6s %8s %8s %5s %-4s  %s\n", "table", "points",
                "median%", "max%", ">10%", "goal", "worst point");
  s << line;
  for (const auto& r : rows) {
    if (r.points == 0) continue;
    std::snprintf(line, sizeof line, "  %-44s %6zu %8.2f %8.2f %5zu %-4s  %s\n", r.table.c_str(),
                  r.points, 100.0 * r.median, 100.0 * r.max, r.over_10pct,
                  r.meets_goal() ? "ok" : "MISS", r.worst.c_str());
    s << line;
  }
}

}  // namespace

CheckReport run_calib_check(const MeasuredTables& tables, const MeasuredCostModel& model,
                            double long_op_s) {
  if (!model.rule().measured) {
    throw std::invalid_argument("calib check needs the model of the measured GPU, not a derived one");
  }
  CheckReport r;
  r.long_op_s = long_op_s;
  for (const auto& key : tables.keys()) {
    const LogGrid& g = tables.grid(key);
    r.loo.push_back(row_of(leave_one_out(g)));
    r.loo_long.push_back(row_of(leave_one_out(g, long_op_s)));
  }
  for (const auto& s : tables.catalog()) {
    for (auto& row : catalog_rows(tables, model, s)) r.catalog.push_back(std::move(row));
  }
  return r;
}

std::string format_check_report(const CheckReport& report) {
  std::ostringstream s;
  format_rows(s, "Leave-one-out, every measured point (goal: median <= 3%, max <= 10%)", report.loo);
  std::ostringstream t;
  t << "Leave-one-out, points measured at >= " << report.long_op_s * 1e6 << " us";
  format_rows(s, t.str(), report.loo_long);
  format_rows(s, "Model vs GEMMs measured at the catalog models' shapes (off-grid validation)",
              report.catalog);
  return s.str();
}

}  // namespace clustersim::calib
