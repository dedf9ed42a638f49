// `clustersim scale --uncertainty`: every point also at both ends of the cost model's stated
// uncertainty, in the CSV, the table and the plot (docs/scaling-and-sweeps.md).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "../cli_test_util.hpp"
#include "tools/csv.hpp"

namespace {

using clustersim::cli_test::run_cli;
using clustersim::cli_test::slurp;

std::string data(const std::string& name) { return std::string(TEST_DATA_DIR) + "/" + name; }
std::string tmp(const std::string& name) { return clustersim::cli_test::scratch(name); }

double number(const clustersim::tools::CsvTable& t, std::size_t row, const char* column) {
  return std::stod(t.rows.at(row).at(t.column(column)));
}

TEST(ScaleUncertainty, EveryPointCarriesItsBandInCsvTableAndPlot) {
  const std::string csv = tmp("su.csv"), svg = tmp("su.svg");
  const auto r = run_cli("scale " + data("small_job.yaml") + " --gpus 16,32 --uncertainty -j 2 --csv " +
                         csv + " --svg " + svg);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("MFU band"), std::string::npos) << r.output;
  const auto t = clustersim::tools::parse_csv(slurp(csv), csv);
  ASSERT_EQ(t.rows.size(), 2u);
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const double step = number(t, i, "step_time_s"), mfu = number(t, i, "mfu");
    EXPECT_LT(number(t, i, "step_time_fast_s"), step);
    EXPECT_GT(number(t, i, "step_time_slow_s"), step);
    EXPECT_GT(number(t, i, "mfu_fast"), mfu);
    EXPECT_LT(number(t, i, "mfu_slow"), mfu);
    // The H100's bounds move no op by more than 7%, GEMMs by 2.5%.
    EXPECT_LT(number(t, i, "step_time_slow_s") / step, 1.07);
    EXPECT_GT(number(t, i, "step_time_fast_s") / step, 0.93);
  }
  EXPECT_NE(slurp(svg).find("fast end of stated uncertainty"), std::string::npos);
  // scale plot draws the band again from the CSV alone.
  const std::string replot = tmp("su_replot.svg");
  ASSERT_EQ(run_cli("scale plot " + csv + " --svg " + replot).exit_code, 0);
  EXPECT_NE(slurp(replot).find("slow end of stated uncertainty"), std::string::npos);
}

TEST(ScaleUncertainty, WithoutTheFlagTheBandColumnsAreEmptyAndTheRooflineIsRefused) {
  const std::string csv = tmp("snu.csv");
  ASSERT_EQ(run_cli("scale " + data("small_job.yaml") + " --gpus 16 --csv " + csv + " --svg " +
                    tmp("snu.svg"))
                .exit_code,
            0);
  const auto t = clustersim::tools::parse_csv(slurp(csv), csv);
  for (const char* c : {"step_time_fast_s", "step_time_slow_s", "mfu_fast", "mfu_slow"}) {
    EXPECT_EQ(t.rows.at(0).at(t.column(c)), "") << c;
  }
  const std::string job = tmp("roofline_job.yaml");
  std::ofstream(job) << slurp(data("small_job.yaml")) << "simulation:\n  cost_model: roofline\n";
  const auto r = run_cli("scale " + job + " --gpus 16 --uncertainty --csv " + tmp("sr.csv") +
                         " --svg " + tmp("sr.svg"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--uncertainty: the roofline cost model states no uncertainty"),
            std::string::npos)
      << r.output;
}

}  // namespace
