#include "calib/tables.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "sim/spec_error.hpp"

namespace clustersim::calib {
namespace {

std::vector<std::string> split_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

void add_provenance(CsvTable& t, const std::string& line) {
  std::string body = line.substr(1);
  if (!body.empty() && body.front() == ' ') body.erase(0, 1);
  const auto colon = body.find(": ");
  if (colon == std::string::npos) {
    t.provenance.emplace_back("", body);
  } else {
    t.provenance.emplace_back(body.substr(0, colon), body.substr(colon + 2));
  }
}

// Throws when a row's correctness spot check (column max_rel_err) exceeds `tolerance`.
void check_spot(const CsvTable& t, std::size_t row, std::size_t col, double tolerance) {
  const double err = t.number(row, col);
  if (err > tolerance) {
    std::ostringstream why;
    why << "spot check failed: relative error " << err << " exceeds " << tolerance
        << " (the probe's result was wrong; re-measure)";
    throw SpecError(t.path, t.lines[row], t.columns[col], why.str());
  }
}

// Groups rows into series by a key built from the row; coordinates from `axis_cols`.
template <typename KeyFn, typename CoordFn>
std::vector<MeasuredSeries> group(const CsvTable& t, const std::vector<std::string>& axes,
                                  double tolerance, KeyFn key_of, CoordFn coords_of) {
  const std::size_t time_col = t.column("time_s");
  const std::size_t err_col = t.column("max_rel_err");
  std::map<std::string, MeasuredSeries> by_key;
  std::vector<std::string> order;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    check_spot(t, r, err_col, tolerance);
    const std::string key = key_of(r);
    auto [it, fresh] = by_key.try_emplace(key);
    if (fresh) {
      it->second.key = key;
      it->second.file = t.path;
      it->second.axes = axes;
      order.push_back(key);
    }
    const double time = t.number(r, time_col);
    // No kernel or collective of a training step takes an hour: a larger time is a corrupt cell
    // (1e308 s printed 80-digit errors), as is a coordinate outside (0, 1e15].
    if (time <= 0.0 || time > 3600.0) throw SpecError(t.path, t.lines[r], "time_s", "must lie in (0, 3600] s");
    std::vector<double> coords = coords_of(r);
    for (std::size_t a = 0; a < coords.size(); ++a) {
      if (!(coords[a] > 0.0 && coords[a] <= 1e15)) {
        throw SpecError(t.path, t.lines[r], axes[a], "must lie in (0, 1e15]");
      }
    }
    it->second.points.push_back({std::move(coords), time, t.lines[r]});
  }
  std::vector<MeasuredSeries> out;
  for (const auto& k : order) out.push_back(std::move(by_key[k]));
  return out;
}

// A cell that must be an integer of at least `min` (a count of chunks or SMs).
int count_cell(const CsvTable& t, std::size_t row, std::size_t col, int min) {
  const double v = t.number(row, col);
  if (v != std::floor(v) || v < min || v > 1e6) {
    throw SpecError(t.path, t.lines[row], t.columns[col],
                    "'" + t.text(row, col) + "' is not an integer >= " + std::to_string(min));
  }
  return static_cast<int>(v);
}

// "<variant>_<chunks>_<sm_margin>" of a TP-overlap row, checking that the variant agrees with
// its chunks and margin (full: 1 and 0; margin: 1 and > 0; split: > 1).
std::string tp_variant(const CsvTable& t, std::size_t r, std::size_t var, std::size_t ch,
                       std::size_t sm) {
  const std::string& v = t.text(r, var);
  const int chunks = count_cell(t, r, ch, 1), margin = count_cell(t, r, sm, 0);
  const bool ok = (v == "full" && chunks == 1 && margin == 0) ||
                  (v == "margin" && chunks == 1 && margin > 0) || (v == "split" && chunks > 1);
  if (!ok) {
    throw SpecError(t.path, t.lines[r], "variant",
                    "'" + v + "' with chunks " + std::to_string(chunks) + " and sm_margin " +
                        std::to_string(margin) +
                        " (full: 1 and 0; margin: 1 and > 0; split: chunks > 1)");
  }
  return v + "_" + std::to_string(chunks) + "_" + std::to_string(margin);
}

}  // namespace

std::size_t CsvTable::column(const std::string& name) const {
  const auto it = std::find(columns.begin(), columns.end(), name);
  if (it == columns.end()) throw SpecError(path, header_line, name, "missing column");
  return static_cast<std::size_t>(it - columns.begin());
}

double CsvTable::number(std::size_t row, std::size_t col) const {
  const std::string& cell = rows[row][col];
  std::size_t used = 0;
  double v = 0.0;
  try {
    v = std::stod(cell, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (cell.empty() || used != cell.size() || !std::isfinite(v)) {
    throw SpecError(path, lines[row], columns[col], "'" + cell + "' is not a finite number");
  }
  // No probe writes a magnitude outside [1e-30, 1e18] but 0 (the committed tables span
  // 4.3e-08 .. 5.6e15): a 1e308 or denormal cell is corrupt, and as a rate or a factor it
  // would make times infinite or print as hundreds of digits.
  if (std::abs(v) > 1e18 || (v != 0.0 && std::abs(v) < 1e-30)) {
    throw SpecError(path, lines[row], columns[col], "'" + cell + "' is outside the magnitudes a probe writes (0, or 1e-30 .. 1e18)");
  }
  return v;
}

std::string CsvTable::provenance_value(const std::string& key) const {
  for (const auto& [k, v] : provenance) {
    if (k == key) return v;
  }
  return "";
}

CsvTable read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw SpecError(path, 0, "", "cannot open the table");
  CsvTable t;
  t.path = path;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line.front() == '#') {
      add_provenance(t, line);
    } else if (t.columns.empty()) {
      t.columns = split_cells(line);
      t.header_line = n;
    } else {
      auto cells = split_cells(line);
      if (cells.size() != t.columns.size()) {
        throw SpecError(path, n, "", "row has " + std::to_string(cells.size()) +
                                         " cells, the header has " +
                                         std::to_string(t.columns.size()));
      }
      t.rows.push_back(std::move(cells));
      t.lines.push_back(n);
    }
  }
  if (t.columns.empty()) throw SpecError(path, 0, "", "no header row");
  if (t.rows.empty()) throw SpecError(path, t.header_line, "", "no data rows");
  return t;
}

// The GEMM probes' dtypes and layouts (calib/probes/gemm.cu: the forward, data-gradient and
// weight-gradient layouts of a BF16 linear; FP8's TN layout with its accumulation and scaling
// variants). Another name would make a series no cost-model lookup reads, reported only as a
// missing grid, so it is an error at its row.
namespace {
void check_gemm_names(const CsvTable& t, std::size_t dt, std::size_t lay) {
  static const std::set<std::string> dtypes{"bf16", "fp8"};
  static const std::set<std::string> layouts{"fwd",        "dgrad",        "wgrad",       "tn",
                                             "tn_fastacc", "tn_block1d1d", "tn_block2d1d"};
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (!dtypes.count(t.text(r, dt))) {
      throw SpecError(t.path, t.lines[r], "dtype", "'" + t.text(r, dt) + "' (bf16 or fp8)");
    }
    if (!layouts.count(t.text(r, lay))) {
      throw SpecError(t.path, t.lines[r], "layout",
                      "'" + t.text(r, lay) +
                          "' (fwd, dgrad, wgrad, tn, tn_fastacc, tn_block1d1d or tn_block2d1d)");
    }
  }
}
}  // namespace

// The series of a GEMM table: key "<prefix><dtype>/<layout><suffix(row)>", axes m, n, k,
// spot-check tolerance 2%.
template <typename SuffixFn>
std::vector<MeasuredSeries> group_gemm(const CsvTable& t, const std::string& prefix,
                                       SuffixFn suffix) {
  const std::size_t dt = t.column("dtype"), lay = t.column("layout");
  const std::size_t m = t.column("m"), n = t.column("n"), k = t.column("k");
  check_gemm_names(t, dt, lay);
  return group(
      t, {"m", "n", "k"}, 0.02,
      [&](std::size_t r) { return prefix + t.text(r, dt) + "/" + t.text(r, lay) + suffix(r); },
      [&](std::size_t r) {
        return std::vector<double>{t.number(r, m), t.number(r, n), t.number(r, k)};
      });
}

std::vector<MeasuredSeries> load_gemm_series(const std::string& path) {
  const CsvTable t = read_csv(path);
  return group_gemm(t, "gemm/", [](std::size_t) { return std::string(); });
}

std::vector<MeasuredSeries> load_tp_overlap_series(const std::string& path) {
  const CsvTable t = read_csv(path);
  const std::size_t var = t.column("variant"), ch = t.column("chunks"), sm = t.column("sm_margin");
  return group_gemm(t, "gemm_tp/",
                    [&](std::size_t r) { return "/" + tp_variant(t, r, var, ch, sm); });
}

std::vector<MeasuredSeries> load_wgrad_accum_series(const std::string& path) {
  const CsvTable t = read_csv(path);
  const std::size_t var = t.column("variant");
  const auto output = [&](std::size_t r) -> std::string {
    const std::string& v = t.text(r, var);
    if (v == "std") return "/plain";
    if (v == "accum_f32") return "/f32";
    if (v == "accum_bf16") return "/bf16";
    throw SpecError(t.path, t.lines[r], "variant",
                    "'" + v + "' (std, accum_f32 or accum_bf16: the output written or added into)");
  };
  return group_gemm(t, "gemm_accum/", output);
}

std::vector<MeasuredSeries> load_fp8_block_series(const std::string& path) {
  const CsvTable t = read_csv(path);
  return group_gemm(t, "gemm_block/", [](std::size_t) { return std::string(); });
}

std::vector<MeasuredSeries> load_busy_sms_series(const std::string& path) {
  const CsvTable t = read_csv(path);
  const std::size_t var = t.column("variant"), ch = t.column("chunks"), sm = t.column("sm_margin");
  const std::size_t busy = t.column("sm_busy");
  const auto variant = [&](std::size_t r) {
    const std::string& v = t.text(r, var);
    const int chunks = count_cell(t, r, ch, 1), margin = count_cell(t, r, sm, 0),
              held = count_cell(t, r, busy, 0);
    const bool ok = chunks == 1 && ((v == "full" && margin == 0 && held == 0) ||
                                    (v == "margin" && margin > 0 && held == 0) || v == "busy");
    if (!ok) {
      throw SpecError(t.path, t.lines[r], "variant",
                      "'" + v + "' with chunks " + std::to_string(chunks) + ", sm_margin " +
                          std::to_string(margin) + " and sm_busy " + std::to_string(held) +
                          " (chunks 1; full: margin 0 and busy 0; margin: margin > 0 and busy 0; "
                          "busy: any)");
    }
    return "/" + v + "_" + std::to_string(margin) + "_" + std::to_string(held);
  };
  return group_gemm(t, "gemm_busy/", variant);
}

std::vector<MeasuredSeries> load_attention_series(const std::string& path) {
  const CsvTable t = read_csv(path);
  const std::size_t be = t.column("backend"), set = t.column("set"), dir = t.column("direction");
  const std::size_t seq = t.column("seq"), heads = t.column("heads"), batch = t.column("batch");
  return group(
      t, {"seq", "heads"}, 0.02,
      [&](std::size_t r) {
        return "attention/" + t.text(r, be) + "/" + t.text(r, set) + "/" + t.text(r, dir);
      },
      [&](std::size_t r) {
        return std::vector<double>{t.number(r, seq), t.number(r, batch) * t.number(r, heads)};
      });
}

std::vector<MeasuredSeries> load_attention_cp_series(const std::string& path) {
  const CsvTable t = read_csv(path);
  const std::size_t be = t.column("backend"), set = t.column("set"), dir = t.column("direction");
  const std::size_t sq = t.column("seq_q"), skv = t.column("seq_kv"), heads = t.column("heads");
  const std::size_t batch = t.column("batch"), causal = t.column("causal");
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (t.number(r, causal) != 0.0) throw SpecError(path, t.lines[r], "causal", "expected 0 (unmasked)");
  }
  return group(
      t, {"seq_q", "kv_ratio", "heads"}, 0.02,
      [&](std::size_t r) {
        return "attention_cp/" + t.text(r, be) + "/" + t.text(r, set) + "/" + t.text(r, dir);
      },
      [&](std::size_t r) {
        return std::vector<double>{t.number(r, sq), t.number(r, skv) / t.number(r, sq),
                                   t.number(r, batch) * t.number(r, heads)};
      });
}

// A name outside `known` makes a series no cost-model lookup reads: an error at its row.
void check_names(const CsvTable& t, std::size_t col, const std::set<std::string>& known, bool lowercase = false) {
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string name = lowercase ? lower(t.text(r, col)) : t.text(r, col);
    if (known.count(name) == 0) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw SpecError(t.path, t.lines[r], t.columns[col], "'" + t.text(r, col) + "' (one of " + list + ")");
    }
  }
}

std::vector<MeasuredSeries> load_membound_series(const std::string& path) {
  const CsvTable t = read_csv(path);
  const std::size_t kernel = t.column("kernel"), bytes = t.column("bytes");
  // calib/probes/membound.cu and calib/probes/eager_ops.py (Hugging Face's eager modules) write
  // these kernels.
  check_names(t, kernel, {"adamw", "copy", "cross_entropy", "gelu", "layernorm", "rmsnorm", "rope", "swiglu",
                          "rmsnorm_eager_fwd", "rmsnorm_eager_bwd", "rope_eager_fwd", "rope_eager_bwd",
                          "swiglu_eager_fwd", "swiglu_eager_bwd"});
  return group(
      t, {"bytes"}, 0.03, [&](std::size_t r) { return "membound/" + t.text(r, kernel); },
      [&](std::size_t r) { return std::vector<double>{t.number(r, bytes)}; });
}

std::vector<MeasuredSeries> load_nccl_series(const std::string& path) {
  const CsvTable t = read_csv(path);
  const std::size_t coll = t.column("collective"), algo = t.column("algo");
  const std::size_t proto = t.column("proto"), bytes = t.column("bytes");
  const std::size_t ranks = t.column("nranks");
  // calib/probes/nccl.cu's collectives, and the algorithms and protocols it forces or NCCL's
  // own choice ("default").
  check_names(t, coll, {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send", "sendrecv"});
  check_names(t, algo, {"default", "ring", "tree"}, true);
  check_names(t, proto, {"default", "ll", "ll128", "simple"}, true);
  count_cell(t, 0, ranks, 2);
  for (std::size_t r = 1; r < t.rows.size(); ++r) {
    if (t.text(r, ranks) != t.text(0, ranks)) {
      throw SpecError(path, t.lines[r], "nranks", "differs from the first row's " + t.text(0, ranks));
    }
  }
  return group(
      t, {"bytes"}, 1e-4,
      [&](std::size_t r) {
        return "nccl/" + lower(t.text(r, algo)) + "/" + lower(t.text(r, proto)) + "/" +
               t.text(r, coll);
      },
      [&](std::size_t r) { return std::vector<double>{t.number(r, bytes)}; });
}

std::vector<NcclChoice> load_nccl_choices(const std::string& path, int nranks) {
  static const std::map<std::string, std::pair<std::string, bool>> kNames = {
      {"AllReduce", {"all_reduce", false}},
      {"AllGather", {"all_gather", true}},
      {"ReduceScatter", {"reduce_scatter", true}},
  };
  const CsvTable t = read_csv(path);
  const std::size_t coll = t.column("collective"), bytes = t.column("bytes_logged");
  const std::size_t algo = t.column("algo"), proto = t.column("proto");
  std::vector<NcclChoice> out;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto it = kNames.find(t.text(r, coll));
    if (it == kNames.end()) {
      throw SpecError(path, t.lines[r], "collective", "unknown NCCL collective '" + t.text(r, coll) + "'");
    }
    const double scale = it->second.second ? static_cast<double>(nranks) : 1.0;
    out.push_back({it->second.first, t.number(r, bytes) * scale, lower(t.text(r, algo)),
                   lower(t.text(r, proto))});
  }
  return out;
}

std::vector<InterferencePoint> load_interference(const std::string& path) {
  const CsvTable t = read_csv(path);
  const std::size_t compute = t.column("compute"), ch = t.column("channels");
  const std::size_t bytes = t.column("bytes"), cs = t.column("compute_slowdown");
  const std::size_t ms = t.column("comm_slowdown"), err = t.column("check_err");
  std::map<std::tuple<std::string, std::string, double>, std::pair<InterferencePoint, int>> acc;
  std::vector<std::tuple<std::string, std::string, double>> order;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    check_spot(t, r, err, 1e-3);
    // A class no lookup reads would be dropped silently, a non-positive figure clamped.
    const std::string& kind = t.text(r, compute);
    if (kind != "gemm" && kind != "attention" && kind != "membound") {
      throw SpecError(t.path, t.lines[r], "compute", "'" + kind + "' is not gemm, attention or membound");
    }
    for (const std::size_t c : {bytes, cs, ms}) {
      if (!(t.number(r, c) > 0.0)) {
        throw SpecError(t.path, t.lines[r], t.columns[c], "'" + t.text(r, c) + "' must be positive");
      }
    }
    const auto key = std::make_tuple(t.text(r, compute), t.text(r, ch), t.number(r, bytes));
    auto [it, fresh] = acc.try_emplace(key);
    if (fresh) {
      order.push_back(key);
      it->second.first = {t.text(r, compute), t.text(r, ch), t.number(r, bytes), 0.0, 0.0};
    }
    it->second.first.compute_slowdown += t.number(r, cs);
    it->second.first.comm_slowdown += t.number(r, ms);
    ++it->second.second;
  }
  std::vector<InterferencePoint> out;
  for (const auto& key : order) {
    auto [p, count] = acc[key];
    p.compute_slowdown /= count;
    p.comm_slowdown /= count;
    out.push_back(p);
  }
  return out;
}

}  // namespace clustersim::calib
