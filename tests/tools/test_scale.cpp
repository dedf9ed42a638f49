// Scale: weak/strong batch rules, derived jobs, efficiency, CSV columns, SVG well-formedness.
#include <gtest/gtest.h>

#include <regex>
#include <vector>

#include "sim/spec_error.hpp"
#include "tools/scale.hpp"
#include "tools/validation/case_plots.hpp"

namespace clustersim::tools {
namespace {

std::string data(const std::string& name) { return std::string(TEST_DATA_DIR) + "/" + name; }

// small_job.yaml: tp 2, pp 2, dp 4 on 16 GPUs, micro batch 1, global batch 32.
TEST(ScaleRules, WeakKeepsTheBatchPerReplica) {
  const JobTemplate tmpl = JobTemplate::load(data("small_job.yaml"));
  const ScalePoint p = scale_point(tmpl.base(), 64, ScaleMode::Weak);
  EXPECT_TRUE(p.invalid.empty()) << p.invalid;
  EXPECT_EQ(p.dp, 16);
  EXPECT_EQ(p.global_batch, 128);  // 32 / 4 replicas = 8 sequences per replica, x 16
  const Job job = tmpl.derive(scale_overrides(p));
  EXPECT_EQ(job.cluster.gpus, 64);
  EXPECT_EQ(job.workload.parallel.dp, 16);
  EXPECT_EQ(job.workload.parallel.tp, 2);
  EXPECT_EQ(job.workload.training.global_batch_size, 128);
  EXPECT_EQ(job.workload.num_microbatches(), 8);
}

TEST(ScaleRules, StrongKeepsTheGlobalBatch) {
  const JobTemplate tmpl = JobTemplate::load(data("small_job.yaml"));
  const ScalePoint p = scale_point(tmpl.base(), 32, ScaleMode::Strong);
  EXPECT_TRUE(p.invalid.empty()) << p.invalid;
  EXPECT_EQ(p.dp, 8);
  EXPECT_EQ(p.global_batch, 32);
  const Job job = tmpl.derive(scale_overrides(p));
  EXPECT_EQ(job.workload.num_microbatches(), 4);
}

TEST(ScaleRules, CountsThatCannotRunSayWhy) {
  const JobTemplate tmpl = JobTemplate::load(data("small_job.yaml"));
  const ScalePoint odd = scale_point(tmpl.base(), 18, ScaleMode::Weak);
  EXPECT_EQ(odd.invalid, "18 GPUs are not a multiple of tp*cp*pp = 4");
  EXPECT_EQ(scale_point(tmpl.base(), 1, ScaleMode::Weak).invalid, "1 GPU is not a multiple of tp*cp*pp = 4");
  // 256 GPUs: dp 64 does not divide the global batch of 32.
  const ScalePoint big = scale_point(tmpl.base(), 256, ScaleMode::Strong);
  EXPECT_NE(big.invalid.find("not divisible"), std::string::npos) << big.invalid;
  EXPECT_TRUE(scale_point(tmpl.base(), 256, ScaleMode::Weak).invalid.empty());
}

TEST(JobVariants, ErrorsOfReplacedKeysPointAtTheFile) {
  const JobTemplate tmpl = JobTemplate::load(data("small_job.yaml"));
  try {
    tmpl.derive({{"parallelism.tp", "3"}});
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), data("small_job.yaml"));
    EXPECT_GT(e.line(), 0);
    EXPECT_EQ(e.field().rfind("parallelism", 0), 0u) << e.field();
  }
  EXPECT_THROW(tmpl.derive({{"tp", "2"}}), std::invalid_argument);
}

ScaleRow row(std::int64_t gpus, double tokens, double mfu) {
  ScaleRow r;
  r.point = ScalePoint{gpus, gpus / 4, gpus * 2, ""};
  StepFigures f;
  f.tokens_per_s_per_gpu = tokens;
  f.mfu = mfu;
  f.step_time_s = 1.0;
  f.replicas = "full";
  r.figures = f;
  return r;
}

TEST(ScaleEfficiency, IsThroughputPerGpuOverTheSmallestCount) {
  std::vector<ScaleRow> rows = {row(128, 900.0, 0.45), row(64, 1000.0, 0.5)};
  ScaleRow invalid;
  invalid.point.gpus = 96;
  invalid.status = "invalid";
  rows.push_back(invalid);
  compute_efficiency(rows);
  EXPECT_DOUBLE_EQ(rows[1].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(rows[0].efficiency, 0.9);
  EXPECT_DOUBLE_EQ(rows[2].efficiency, 0.0);
}

TEST(ScaleCsv, HasTheDocumentedColumnsAndEmptyFieldsForInvalidRows) {
  std::vector<ScaleRow> rows = {row(64, 1000.0, 0.5)};
  ScaleRow invalid;
  invalid.point.gpus = 96;
  invalid.status = "invalid";
  invalid.reason = "96 GPUs are not a multiple of tp*cp*pp = 64";
  rows.push_back(invalid);
  compute_efficiency(rows);
  const CsvTable t = scale_csv(rows);
  for (const char* c : {"gpus", "step_time_s", "mfu", "tokens_per_s_per_gpu", "scaling_efficiency",
                        "compute_s", "exposed_comm_s", "bubble_s", "peak_memory_gib", "status"}) {
    EXPECT_NO_THROW(t.column(c)) << c;
  }
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0][t.column("mfu")], "0.5000");
  EXPECT_EQ(t.rows[0][t.column("scaling_efficiency")], "1.0000");
  EXPECT_EQ(t.rows[1][t.column("mfu")], "");
  EXPECT_EQ(t.rows[1][t.column("status")], "invalid");
  // 96 GPUs give no dp and no batch: empty, not a misleading 0.
  EXPECT_EQ(t.rows[1][t.column("dp")], "");
  EXPECT_EQ(t.rows[1][t.column("global_batch_size")], "");
  const CsvTable back = parse_csv(to_csv(t), "scale.csv");
  EXPECT_EQ(back.rows, t.rows);
  // Re-read for `scale plot`: the empty fields read back as no dp and no batch.
  const auto reread = scale_rows_from_csv(back, "scale.csv");
  ASSERT_EQ(reread.size(), 2u);
  EXPECT_EQ(reread[1].point.dp, 0);
  EXPECT_EQ(reread[1].point.global_batch, 0);
  EXPECT_FALSE(reread[1].figures.has_value());
  EXPECT_EQ(to_csv(scale_csv(reread)), to_csv(t));
}

TEST(ScaleCsv, EnergyColumnsRoundTripAndAbsentFiguresAreEmpty) {
  std::vector<ScaleRow> rows = {row(64, 1000.0, 0.5), row(128, 990.0, 0.49)};
  rows[0].figures->power_w_per_gpu = 1659.74;
  rows[0].figures->joules_per_token = 1.39652;
  rows[0].figures->energy_to_train_mwh = 387.93;
  rows[0].figures->usd_per_million_tokens = 0.33191;
  rows[0].figures->cost_to_train_usd = 331907.4;
  rows[1].figures->power_w_per_gpu = 1449.6;  // no price: no cost figures
  compute_efficiency(rows);
  const CsvTable t = scale_csv(rows);
  const auto cells = [&t](std::size_t row, std::vector<const char*> columns) {
    std::vector<std::string> v;
    for (const char* c : columns) v.push_back(t.rows[row][t.column(c)]);
    return v;
  };
  EXPECT_EQ(cells(0, {"power_w_per_gpu", "joules_per_token", "usd_per_million_tokens", "cost_to_train_usd"}),
            (std::vector<std::string>{"1659.7", "1.3965", "0.3319", "331907"}));
  EXPECT_EQ(cells(1, {"power_w_per_gpu", "joules_per_token", "usd_per_million_tokens"}),
            (std::vector<std::string>{"1449.6", "", ""}));
  const auto reread = scale_rows_from_csv(parse_csv(to_csv(t), "scale.csv"), "scale.csv");
  ASSERT_TRUE(reread[0].figures.has_value());
  EXPECT_DOUBLE_EQ(*reread[0].figures->joules_per_token, 1.3965);
  EXPECT_FALSE(reread[1].figures->usd_per_million_tokens.has_value());
  EXPECT_EQ(to_csv(scale_csv(reread)), to_csv(t));
  // A CSV of an earlier version, without the energy columns, still reads (scale plot).
  CsvTable old = t;
  for (const auto& name : energy_and_failure_columns()) {
    const std::size_t c = old.column(name);
    old.header.erase(old.header.begin() + static_cast<std::ptrdiff_t>(c));
    for (auto& r : old.rows) r.erase(r.begin() + static_cast<std::ptrdiff_t>(c));
  }
  const auto older = scale_rows_from_csv(old, "old.csv");
  ASSERT_TRUE(older[0].figures.has_value());
  EXPECT_FALSE(older[0].figures->joules_per_token.has_value());
  // A field that is not a number is an error naming the file.
  CsvTable bad = t;
  bad.rows[0][bad.column("joules_per_token")] = "1.2x";
  try {
    scale_rows_from_csv(bad, "bad.csv");
    FAIL() << "a malformed energy field was accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("joules_per_token"), std::string::npos) << e.what();
  }
}

// Every opening tag is closed in order (or self-closed): enough to catch broken output.
bool balanced_xml(const std::string& svg) {
  std::vector<std::string> stack;
  const std::regex tag("<(/?)([a-zA-Z]+)[^>]*?(/?)>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tag); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    if (m[3] == "/") continue;
    if (m[1] == "/") {
      if (stack.empty() || stack.back() != m[2]) return false;
      stack.pop_back();
    } else {
      stack.push_back(m[2]);
    }
  }
  return stack.empty();
}

TEST(ScalePlot, IsWellFormedSvgWithBothCurvesAndMeasuredPoints) {
  std::vector<ScaleRow> rows = {row(64, 1000.0, 0.5), row(256, 950.0, 0.475),
                                row(2048, 900.0, 0.45)};
  compute_efficiency(rows);
  const PlotSpec spec = scale_plot(rows, ScaleMode::Weak, "A <title> & more", {{64, 0.545}, {2048, 0.537}},
                                   "measured MFU");
  ASSERT_EQ(spec.series.size(), 3u);
  EXPECT_TRUE(spec.log2_x);
  const std::string svg = render_svg(spec);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_TRUE(balanced_xml(svg)) << svg;
  EXPECT_NE(svg.find("A &lt;title&gt; &amp; more"), std::string::npos);
  // Quotes are escaped and control characters XML forbids replaced: the file stays well formed.
  PlotSpec odd = spec;
  odd.title = std::string("a\"b\x01" "c");
  EXPECT_NE(render_svg(odd).find("a&quot;b?c"), std::string::npos);
  // Two polylines (MFU, efficiency) of three points; measured points as hollow squares.
  const std::regex polyline("<polyline[^>]*points=\"([^\"]*)\"");
  int lines = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), polyline); it != std::sregex_iterator(); ++it) {
    const std::string pts = (*it)[1];
    EXPECT_EQ(std::count(pts.begin(), pts.end(), ','), 3) << pts;
    ++lines;
  }
  EXPECT_EQ(lines, 2);
  // log2 axis: ticks 64 ... 2048 are labelled.
  for (const char* tick : {">64<", ">128<", ">1024<", ">2048<"}) EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_EQ(render_svg(spec), svg) << "deterministic";
}

TEST(ScalePlot, RefusesAnEmptyStudy) {
  ScaleRow invalid;
  invalid.status = "invalid";
  EXPECT_THROW(scale_plot({invalid}, ScaleMode::Strong, "t", {}, ""), std::invalid_argument);
}

}  // namespace
}  // namespace clustersim::tools

namespace clustersim::tools::validation {
namespace {

PointOutcome outcome(std::int64_t seq, const std::string& platform, double measured, double sim,
                     double mem) {
  PointOutcome o;
  o.id = "s3";
  o.gpus = 8;
  o.seq = seq;
  o.platform = platform;
  o.metric = Metric::TflopsPerGpu;
  o.measured = measured;
  o.simulated = sim > 0;
  o.simulated_value = sim;
  o.measured_peak_gib = mem;
  o.estimated_peak_gib = mem * 1.1;
  return o;
}

TEST(CasePlots, SequenceSweepOnTwoPlatformsGivesMetricRatioAndMemoryCharts) {
  ValidationSummary s;
  s.points = {outcome(8192, "hgx_h200", 141, 150, 16.3), outcome(8192, "hgx_b200", 167, 200, 16.3),
              outcome(32768, "hgx_h200", 324, 300, 25.8), outcome(32768, "hgx_b200", 524, 0, 25.9)};
  const auto plots = case_plots(s, "s3");
  ASSERT_EQ(plots.size(), 3u);
  EXPECT_EQ(plots[0].first, "");
  EXPECT_EQ(plots[0].second.x_label, "sequence length (tokens)");
  EXPECT_EQ(plots[1].first, "_ratio");
  // Measured ratio at both lengths; simulated only where both platforms were simulated.
  const auto& ratio = plots[1].second.series;
  ASSERT_EQ(ratio.size(), 2u);
  ASSERT_EQ(ratio[0].points.size(), 1u);
  EXPECT_DOUBLE_EQ(ratio[0].points[0].second, 200.0 / 150.0);
  ASSERT_EQ(ratio[1].points.size(), 2u);
  EXPECT_DOUBLE_EQ(ratio[1].points[1].second, 524.0 / 324.0);
  EXPECT_EQ(plots[2].first, "_memory");
  for (const auto& [suffix, spec] : plots) EXPECT_NO_THROW(render_svg(spec)) << suffix;
  EXPECT_TRUE(case_plots(s, "other").empty());
}

// A case whose points give different metrics (a step time at one count, only an MFU at
// others) gets one chart per metric with two points or more, and no ratio chart; all on one
// axis, an MFU was drawn as seconds.
TEST(CasePlots, PointsOfDifferentMetricsAreChartedApart) {
  ValidationSummary s;
  s.points = {outcome(8192, "hgx_h200", 141, 150, 16.3), outcome(32768, "hgx_h200", 324, 300, 25.8),
              outcome(65536, "hgx_h200", 391, 380, 30.0), outcome(8192, "hgx_b200", 167, 200, 16.3)};
  s.points[0].metric = s.points[1].metric = Metric::StepTime;
  s.points[3].metric = Metric::Mfu;  // alone in its metric, as the one TFLOP/s point: no chart
  const auto plots = case_plots(s, "s3");
  std::vector<std::string> suffixes;
  for (const auto& [suffix, spec] : plots) suffixes.push_back(suffix);
  EXPECT_EQ(suffixes, (std::vector<std::string>{"_step_s", "_memory"}));
  EXPECT_EQ(plots[0].second.y_label, "step time (s)");
  ASSERT_FALSE(plots[0].second.series.empty());
  EXPECT_EQ(plots[0].second.series.back().points.size(), 2u);  // the two step times measured
}

}  // namespace
}  // namespace clustersim::tools::validation
