#include "calib/calib_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "calib/tables.hpp"

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

// A catalog GEMM as the model costs it. The catalog shapes are forward GEMMs, but its FP8 rows
// ran with split accumulation, which the model gives the backward GEMMs only (forward FP8 uses
// the fast-accumulation table).
sim::Op catalog_gemm(double m, double n, double k, sim::DType dtype, bool split_fp8) {
  sim::Op op;
  op.shape = sim::GemmShape{static_cast<std::int64_t>(m), static_cast<std::int64_t>(n),
                            static_cast<std::int64_t>(k), dtype};
  op.phase = dtype == sim::DType::FP8 && split_fp8 ? sim::Phase::Backward : sim::Phase::Forward;
  return op;
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
    const sim::Op op = catalog_gemm(p.coords[0], p.coords[1], p.coords[2], dtype_of(s.key),
                                    s.key.find("fastacc") == std::string::npos);
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

// Errors of one row as they come, and the point of the largest (described only when it is).
class Tally {
 public:
  explicit Tally(CheckRow& row) : row_(row) {}
  template <typename Where>
  void add(double e, Where where) {
    errs_.push_back(e);
    if (e > worst_) {
      worst_ = e;
      row_.worst = where();
    }
  }
  void done() { finish(row_, errs_); }

 private:
  CheckRow& row_;
  std::vector<double> errs_;
  double worst_ = -1.0;
};

// The model's time of one point of a beyond-the-grid series, in its grid's layout, and whether
// the point lies inside that grid. GEMM series are read through their own table; attention
// points are costed as a causal cuDNN op of batch 1 (the series' heads the batch x heads axis)
// with the set's kv_heads (gqa heads / 8, mha and mla heads) and head dims (mla 192/128).
std::pair<double, bool> beyond_prediction(const MeasuredTables& tables,
                                          const MeasuredCostModel& model,
                                          const MeasuredSeries& s, const MeasuredPoint& p) {
  if (s.key.rfind("gemm/", 0) == 0) {
    const double m = p.coords[0], n = p.coords[1], k = p.coords[2];
    return {model.table_gemm_time(s.key, m, n, k), tables.grid(s.key).contains(p.coords)};
  }
  // attention/cudnn/SET/DIR: the set's heads-to-kv_heads rule and head dims (calib/probes/attention.py).
  const bool gqa = s.key.rfind("attention/cudnn/gqa/", 0) == 0;
  const bool mha = s.key.rfind("attention/cudnn/mha/", 0) == 0;
  const bool mla = s.key.rfind("attention/cudnn/mla/", 0) == 0;
  if (!gqa && !mha && !mla) {
    throw std::invalid_argument(s.file + ": beyond-the-grid series " + s.key +
                                " (expected gemm/... or attention/cudnn/{gqa,mha,mla}/...)");
  }
  sim::AttentionShape a;
  a.batch = 1;
  a.heads = static_cast<std::int64_t>(p.coords[1]);
  a.kv_heads = gqa ? std::max<std::int64_t>(1, a.heads / 8) : a.heads;
  a.seq_q = a.seq_kv = static_cast<std::int64_t>(p.coords[0]);
  a.head_dim = mla ? 192 : 128;
  a.head_dim_v = 128;
  a.backward = s.key.substr(s.key.rfind('/') + 1) == "bwd";
  sim::Op op;
  op.shape = a;
  op.phase = a.backward ? sim::Phase::Backward : sim::Phase::Forward;
  return {model.compute_time(op), tables.grid(s.key).contains(p.coords)};
}

// Model against one beyond-the-grid series: a row beyond the grid, a row for the points the
// grid covers (its edge, or nodes measured since).
std::vector<CheckRow> beyond_rows(const MeasuredTables& tables, const MeasuredCostModel& model,
                                  const MeasuredSeries& s) {
  CheckRow beyond, inside;
  beyond.table = s.key + " (beyond grid)";
  inside.table = s.key + " (in grid, this run)";
  beyond.file = inside.file = s.file;
  Tally out(beyond), in(inside);
  for (const auto& p : s.points) {
    const auto [t, covered] = beyond_prediction(tables, model, s, p);
    (covered ? in : out).add(std::fabs(t - p.time_s) / p.time_s, [&] {
      std::ostringstream w;
      for (std::size_t d = 0; d < p.coords.size(); ++d) {
        w << (d ? " " : "") << s.axes[d] << "=" << p.coords[d];
      }
      return w.str();
    });
  }
  out.done();
  in.done();
  return {beyond, inside};
}

// Leave-one-out of grid `key`'s ratio to its reference grid `ref` at the nodes both hold.
CheckRow factor_row(const LogGrid& g, const LogGrid& ref) {
  CheckRow r;
  r.table = g.key() + " / " + ref.key().substr(ref.key().rfind('/') + 1);
  r.file = g.file();
  Tally tally(r);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const std::size_t j = ref.node_at(g.node_coords(i));
    if (j == ref.size()) continue;
    const double pg = g.loo_predict(i), pr = ref.loo_predict(j);
    if (std::isnan(pg) || std::isnan(pr)) continue;
    const double measured = g.node_time(i) / ref.node_time(j);
    tally.add(std::fabs((pg / pr) / measured - 1.0), [&] { return g.node_text(i); });
  }
  tally.done();
  return r;
}

const std::string kNcclChoice = "nccl/nccl_choice/";

// NCCL's choice as the model reads it: each node predicted from its neighbours in the table of
// the algorithm and protocol NCCL chose at its size (the node's own time comes from there).
CheckRow nccl_choice_row(const MeasuredTables& tables, const LogGrid& g) {
  CheckRow r;
  const std::string collective = g.key().substr(kNcclChoice.size());
  r.table = g.key() + " / chosen protocol";
  r.file = g.file();
  Tally tally(r);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const auto x = g.node_coords(i);
    const std::string key = tables.nccl_chosen_table(collective, x[0]);
    const LogGrid& src = key.empty() ? g : tables.grid(key);
    const std::size_t node = src.node_at(x);
    if (node == src.size()) continue;
    const double p = src.loo_predict(node);
    if (std::isnan(p)) continue;
    tally.add(std::fabs(p - g.node_time(i)) / g.node_time(i),
              [&] { return "bytes=" + std::to_string(static_cast<long long>(x[0])); });
  }
  tally.done();
  return r;
}

void format_rows(std::ostringstream& s, const std::string& title, const std::vector<CheckRow>& rows) {
  s << title << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-52s %6s %8s %8s %5s %-4s  %s\n", "table", "points",
                "median%", "max%", ">10%", "goal", "worst point");
  s << line;
  for (const auto& r : rows) {
    if (r.points == 0) continue;
    std::snprintf(line, sizeof line, "  %-52s %6zu %8.2f %8.2f %5zu %-4s  %s\n", r.table.c_str(),
                  r.points, 100.0 * r.median, 100.0 * r.max, r.over_10pct,
                  r.meets_goal() ? "ok" : "MISS", r.worst.c_str());
    s << line;
  }
}

}  // namespace

std::string factor_reference_key(const std::string& key) {
  const bool tp = key.rfind("gemm_tp/", 0) == 0, busy = key.rfind("gemm_busy/", 0) == 0;
  if (!tp && !busy) return "";
  const auto slash = key.rfind('/');
  char kind[16] = {};
  int a = 0, b = 0;
  if (std::sscanf(key.substr(slash + 1).c_str(), "%15[a-z]_%d_%d", kind, &a, &b) != 3) return "";
  const std::string v = kind, dir = key.substr(0, slash + 1);
  if (tp) {
    if (v == "margin" || (v == "split" && b == 0)) return dir + "full_1_0";
    if (v == "split") return dir + "split_" + std::to_string(a) + "_0";
    return "";
  }
  if (v == "busy" && !(a == 0 && b == 0)) return dir + "busy_0_0";
  if (v == "margin") return dir + "full_0_0";
  return "";
}

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
    const std::string ref = factor_reference_key(key);
    if (!ref.empty() && tables.has(ref)) r.model_reads.push_back(factor_row(g, tables.grid(ref)));
    if (key.rfind(kNcclChoice, 0) == 0) r.model_reads.push_back(nccl_choice_row(tables, g));
  }
  for (const auto& s : tables.catalog()) {
    for (auto& row : catalog_rows(tables, model, s)) r.catalog.push_back(std::move(row));
  }
  for (const auto& s : tables.beyond()) {
    for (auto& row : beyond_rows(tables, model, s)) r.beyond.push_back(std::move(row));
  }
  return r;
}

namespace {

// "run85/membound.csv": a run file by its folder and name.
std::string run_name(const std::string& file) {
  const std::filesystem::path p = std::filesystem::path(file).lexically_normal();
  return p.parent_path().filename().string() + "/" + p.filename().string();
}

// The run files an own table averages (calib/scripts/mean_runs.py's line "... per point (A, B,
// C); ...", paths relative to the repository root, which holds calib/data), other than
// `run_file`; empty when the line does not name `run_file` (the table does not average it).
std::vector<std::string> other_runs(const std::string& own_file, const std::string& run_file) {
  if (own_file.empty()) return {};
  static constexpr std::string_view kList = "per point (";
  const std::string line = read_csv(own_file).provenance_value("mean_runs");
  const auto open = line.find(kList), close = line.find(')', open);
  if (open == std::string::npos || close == std::string::npos) return {};
  const std::filesystem::path root = std::filesystem::path(calib_data_dir()).parent_path().parent_path();
  std::vector<std::string> out;
  bool named = false;
  std::istringstream list(line.substr(open + kList.size(), close - open - kList.size()));
  for (std::string f; std::getline(list, f, ',');) {
    f.erase(0, f.find_first_not_of(' '));
    const std::string path = std::filesystem::path(f).is_absolute() ? f : (root / f).string();
    if (run_name(path) == run_name(run_file)) {
      named = true;
    } else {
      out.push_back(path);
    }
  }
  return named ? out : std::vector<std::string>{};
}

// Times by (kernel, bytes) of a membound.csv file.
std::map<std::pair<std::string, double>, double> membound_times(const std::string& file) {
  const CsvTable t = read_csv(file);
  std::map<std::pair<std::string, double>, double> out;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    out[{t.text(r, t.column("kernel")), t.number(r, t.column("bytes"))}] = t.number(r, t.column("time_s"));
  }
  return out;
}

}  // namespace

void check_derived_gpu(CheckReport& report, const MeasuredCostModel& derived, const std::string& run_dir) {
  if (derived.rule().measured) throw std::invalid_argument("check_derived_gpu needs a derived GPU's model");
  std::string run = run_dir;
  while (!run.empty() && run.back() == '/') run.pop_back();
  run = run.substr(run.find_last_of('/') + 1);
  const CsvTable gemm = read_csv(run_dir + "/gemm_catalog.csv");
  for (const auto& [dtype, layout] : {std::pair<std::string, std::string>{"bf16", "fwd"}, {"fp8", "tn"}}) {
    CheckRow row;
    row.table = run + " gemm/" + dtype + " (catalog)";
    row.file = gemm.path;
    Tally tally(row);
    for (std::size_t r = 0; r < gemm.rows.size(); ++r) {
      if (gemm.text(r, gemm.column("dtype")) != dtype) continue;
      if (gemm.text(r, gemm.column("layout")) != layout) continue;
      const double m = gemm.number(r, gemm.column("m")), n = gemm.number(r, gemm.column("n")),
                   k = gemm.number(r, gemm.column("k"));
      const sim::Op op = catalog_gemm(m, n, k, dtype == "fp8" ? sim::DType::FP8 : sim::DType::BF16, true);
      const double measured = gemm.number(r, gemm.column("time_s"));
      tally.add(std::fabs(derived.compute_time(op) - measured) / measured, [&] {
        std::ostringstream w;
        w << "m=" << m << " n=" << n << " k=" << k;
        return w.str();
      });
    }
    tally.done();
    report.derived.push_back(std::move(row));
  }
  const CsvTable mem = read_csv(run_dir + "/membound.csv");
  std::map<std::string, std::vector<std::size_t>> rows_of;  // per measured kernel, in name order
  for (std::size_t r = 0; r < mem.rows.size(); ++r) rows_of[mem.text(r, mem.column("kernel"))].push_back(r);
  // A run that the GPU's own table averages is held out of it: predicted by the other runs'
  // geometric mean at its sizes (the table's nodes, where the model reads the mean as is). The
  // other runs' times, read once per own table file.
  std::map<std::string, std::vector<std::map<std::pair<std::string, double>, double>>> others_of;
  for (const auto& [kernel, rows] : rows_of) {
    const std::string own = derived.own_table_file("membound/" + kernel);
    const auto [it, first] = others_of.try_emplace(own);
    if (first) {
      for (const auto& f : other_runs(own, mem.path)) it->second.push_back(membound_times(f));
    }
    const auto& others = it->second;
    CheckRow row;
    row.table = run + " membound/" + kernel + (others.empty() ? "" : " (held out)");
    row.file = mem.path;
    Tally tally(row);
    for (std::size_t r : rows) {
      const double bytes = mem.number(r, mem.column("bytes")), measured = mem.number(r, mem.column("time_s"));
      std::vector<double> times;
      for (const auto& o : others) times.push_back(o.at({kernel, bytes}));
      const double predicted = others.empty() ? derived.table_membound_time(kernel, bytes) : geometric_mean(times);
      tally.add(std::fabs(predicted - measured) / measured,
                [&] { return "bytes=" + std::to_string(static_cast<long long>(bytes)); });
    }
    tally.done();
    report.derived.push_back(std::move(row));
  }
}

std::vector<CheckRow> as_the_model_reads(const CheckReport& report) {
  std::map<std::string, const CheckRow*> factor_of;
  for (const auto& f : report.model_reads) factor_of[f.table.substr(0, f.table.find(" / "))] = &f;
  std::vector<CheckRow> out;
  for (const auto& r : report.loo) {
    const auto it = factor_of.find(r.table);
    out.push_back(it == factor_of.end() ? r : *it->second);
  }
  return out;
}

std::string format_check_report(const CheckReport& report) {
  std::ostringstream s;
  format_rows(s, "Leave-one-out, every measured point (goal: median <= 3%, max <= 10%)", report.loo);
  std::ostringstream t;
  t << "Leave-one-out, points measured at >= " << report.long_op_s * 1e6 << " us";
  format_rows(s, t.str(), report.loo_long);
  format_rows(s,
              "Leave-one-out as the model reads the table (TP-overlap and held-SM grids: time / "
              "reference grid's time at the same shape, both held out; NCCL's choice: from the "
              "table of the algorithm and protocol NCCL chose at the size)",
              report.model_reads);
  format_rows(s, "Model vs GEMMs measured at the catalog models' shapes (off-grid validation)",
              report.catalog);
  if (!report.derived.empty()) {
    format_rows(s,
                "A derived GPU's model vs that GPU's own measurements (the H100's rule, "
                "calib/data/h100: catalog GEMMs at the tables' procedure; memory-bound kernels,"
                " each at every size; held out of the H100's own table where that averages the run)",
                report.derived);
  }
  if (!report.beyond.empty()) {
    format_rows(s,
                "Model vs points measured beyond the grids (fallbacks: GEMMs at the edge's rate, "
                "attention scaled by heads x seq^2; \"in grid\" rows: the same run's points "
                "that the grid covers)",
                report.beyond);
  }
  return s.str();
}

}  // namespace clustersim::calib
