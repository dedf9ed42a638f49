#include "tools/scale.hpp"

#include <algorithm>
#include <stdexcept>

#include "sim/spec_error.hpp"
#include "sim/units.hpp"

namespace clustersim::tools {

ScaleMode parse_scale_mode(const std::string& text) {
  if (text == "weak") return ScaleMode::Weak;
  if (text == "strong") return ScaleMode::Strong;
  throw std::invalid_argument("scale mode must be weak or strong, not '" + text + "'");
}

const char* to_string(ScaleMode mode) { return mode == ScaleMode::Weak ? "weak" : "strong"; }

ScalePoint scale_point(const Job& base, std::int64_t gpus, ScaleMode mode) {
  const auto& p = base.workload.parallel;
  const auto& t = base.workload.training;
  const std::int64_t model_parallel = std::int64_t{p.tp} * p.cp * p.pp;
  ScalePoint point;
  point.gpus = gpus;
  if (gpus <= 0 || gpus % model_parallel != 0) {
    point.invalid = count_noun(gpus, "GPU", "GPUs") + (gpus == 1 ? " is" : " are") + " not a multiple of tp*cp*pp = " +
                    std::to_string(model_parallel);
    return point;
  }
  point.dp = gpus / model_parallel;
  if (mode == ScaleMode::Weak) {
    // The base batch divides by dp * micro batch (the job reader checks it), so this is exact.
    point.global_batch = t.global_batch_size / p.dp * point.dp;
    return point;
  }
  point.global_batch = t.global_batch_size;
  if (t.global_batch_size % (point.dp * t.micro_batch_size) != 0) {
    point.invalid = "strong scaling keeps the global batch " +
                    std::to_string(t.global_batch_size) + ", not divisible by dp*micro_batch = " +
                    std::to_string(point.dp) + "*" + std::to_string(t.micro_batch_size);
  }
  return point;
}

std::vector<Override> scale_overrides(const ScalePoint& point) {
  return {{"cluster.gpus", std::to_string(point.gpus)},
          {"parallelism.dp", std::to_string(point.dp)},
          {"training.global_batch_size", std::to_string(point.global_batch)},
          {"training.gradient_accumulation_steps", ""}};
}

const ScaleRow* efficiency_base(const std::vector<ScaleRow>& rows) {
  const ScaleRow* first = nullptr;
  for (const auto& r : rows) {
    if (r.figures && (first == nullptr || r.point.gpus < first->point.gpus)) first = &r;
  }
  return first;
}

void compute_efficiency(std::vector<ScaleRow>& rows) {
  const ScaleRow* first = efficiency_base(rows);
  if (first == nullptr || first->figures->tokens_per_s_per_gpu <= 0.0) return;
  const double base = first->figures->tokens_per_s_per_gpu;
  for (auto& r : rows) {
    if (r.figures) r.efficiency = r.figures->tokens_per_s_per_gpu / base;
  }
}

CsvTable scale_csv(const std::vector<ScaleRow>& rows) {
  CsvTable t;
  t.header = {"gpus",           "dp",          "global_batch_size", "step_time_s",
              "mfu",            "tflops_per_gpu", "tokens_per_s_per_gpu", "scaling_efficiency",
              "compute_s",      "exposed_comm_s", "bubble_s",          "peak_memory_gib"};
  const auto& energy = energy_and_failure_columns();
  t.header.insert(t.header.end(), energy.begin(), energy.end());
  const auto& band = band_columns();
  t.header.insert(t.header.end(), band.begin(), band.end());
  for (const char* c : {"replicas", "status", "reason"}) t.header.emplace_back(c);
  // dp 0: the GPU count does not divide into replicas, so neither dp nor the batch exists.
  const auto count = [](std::int64_t v) { return v > 0 ? std::to_string(v) : std::string(); };
  for (const auto& r : rows) {
    std::vector<std::string> row = {std::to_string(r.point.gpus), count(r.point.dp),
                                    count(r.point.global_batch)};
    if (r.figures) {
      const auto& f = *r.figures;
      for (const double v : {f.step_time_s, f.mfu, f.tflops_per_gpu, f.tokens_per_s_per_gpu,
                             r.efficiency, f.compute_s, f.exposed_comm_s, f.bubble_s}) {
        row.push_back(csv_number(v, 4));
      }
    } else {
      row.insert(row.end(), 8, "");
    }
    row.push_back(r.memory ? csv_number(r.memory->peak_bytes / (1024.0 * 1024 * 1024), 2) : "");
    const StepFigures none;
    const auto e = energy_and_failure_fields(r.figures ? *r.figures : none);
    row.insert(row.end(), e.begin(), e.end());
    const auto b = band_fields(r.figures ? *r.figures : none);
    row.insert(row.end(), b.begin(), b.end());
    row.push_back(r.figures ? r.figures->replicas : "");
    row.push_back(r.status);
    row.push_back(r.reason);
    t.rows.push_back(std::move(row));
  }
  return t;
}

namespace {

// The number in a scale CSV cell, the whole cell read. @throws SpecError at the cell.
double csv_cell_number(const std::string& origin, int line, const std::string& column, const std::string& cell) {
  const std::optional<double> v = parse_number(cell);
  if (!v) throw SpecError(origin, line, column, "'" + cell + "' is not a number (not a scale CSV?)");
  return *v;
}

}  // namespace

std::vector<ScaleRow> scale_rows_from_csv(const CsvTable& table, const std::string& origin) {
  for (const char* name : {"gpus", "dp", "global_batch_size", "status", "reason", "step_time_s", "mfu",
                           "tflops_per_gpu", "tokens_per_s_per_gpu", "replicas"}) {
    if (std::find(table.header.begin(), table.header.end(), name) == table.header.end()) {
      throw SpecError(origin, 1, name, "no such column: not a CSV written by clustersim scale");
    }
  }
  const auto col = [&](const char* name) { return table.column(name); };
  std::vector<ScaleRow> rows;
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    const auto& r = table.rows[i];
    const int line = i < table.row_lines.size() ? table.row_lines[i] : 0;
    const auto number = [&](const char* name) { return csv_cell_number(origin, line, name, r[col(name)]); };
    // dp and global_batch_size are empty where the GPU count gives none (scale_csv).
    const auto count = [&](const char* name) {
      return r[col(name)].empty() ? std::int64_t{0} : static_cast<std::int64_t>(number(name));
    };
    ScaleRow row;
    row.point = ScalePoint{count("gpus"), count("dp"), count("global_batch_size"), ""};
    row.status = r[col("status")];
    row.reason = r[col("reason")];
    if (row.status == "ok") {
      StepFigures f;
      f.step_time_s = number("step_time_s");
      f.mfu = number("mfu");
      f.tflops_per_gpu = number("tflops_per_gpu");
      f.tokens_per_s_per_gpu = number("tokens_per_s_per_gpu");
      f.replicas = r[col("replicas")];
      try {
        read_energy_and_failure_fields(table.header, r, f);
        read_band_fields(table.header, r, f);
      } catch (const std::exception& e) {
        throw SpecError(origin, line, "", std::string("not a scale CSV: ") + e.what());
      }
      row.figures = f;
    }
    rows.push_back(std::move(row));
  }
  compute_efficiency(rows);
  return rows;
}

PlotSpec scale_plot(const std::vector<ScaleRow>& rows, ScaleMode mode, const std::string& title,
                    const std::vector<MeasuredMfu>& measured, const std::string& measured_label) {
  PlotSpec spec;
  spec.title = title;
  spec.x_label = "GPUs";
  spec.y_label = "fraction";
  spec.log2_x = true;
  spec.y_percent = true;
  PlotSeries mfu{"simulated MFU", {}, "#1f77b4", true, true, false};
  PlotSeries eff{std::string(to_string(mode)) + " scaling efficiency", {}, "#2ca02c", true, true,
                 false};
  // With a reliability section: the run's goodput (useful fraction of elapsed time, failures
  // counted) on the same axis.
  PlotSeries goodput{"goodput with failures", {}, "#ff7f0e", true, true, false};
  // With --uncertainty: MFU at the two ends of the cost model's stated uncertainty, unmarked.
  PlotSeries fast{"MFU, fast end of stated uncertainty", {}, "#9ecae1", true, false, false};
  PlotSeries slow{"MFU, slow end of stated uncertainty", {}, "#9ecae1", true, false, false};
  for (const auto& r : rows) {
    if (!r.figures) continue;
    const double g = static_cast<double>(r.point.gpus);
    mfu.points.emplace_back(g, r.figures->mfu);
    eff.points.emplace_back(g, r.efficiency);
    if (r.figures->goodput) goodput.points.emplace_back(g, *r.figures->goodput);
    if (r.figures->mfu_fast && r.figures->mfu_slow) {
      fast.points.emplace_back(g, *r.figures->mfu_fast);
      slow.points.emplace_back(g, *r.figures->mfu_slow);
    }
  }
  if (mfu.points.empty()) throw std::invalid_argument("no simulated point to plot");
  spec.series = {mfu, eff};
  if (!fast.points.empty()) spec.series.insert(spec.series.end(), {fast, slow});
  if (!goodput.points.empty()) spec.series.push_back(goodput);
  if (!measured.empty()) {
    PlotSeries m{measured_label, {}, "#d62728", false, true, true};
    for (const auto& p : measured) m.points.emplace_back(static_cast<double>(p.gpus), p.mfu);
    spec.series.push_back(m);
  }
  return spec;
}

}  // namespace clustersim::tools
