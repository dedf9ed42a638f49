// calib check's rows for points measured beyond the grids (gemm_long_tokens.csv,
// attention_long.csv): each point against the model's fallback there, the points at the grid's
// own nodes in a row of their own.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <string>

#include "calib/calib_check.hpp"
#include "calib_test_util.hpp"
#include "calib/measured_cost_model.hpp"
#include "calib/measured_tables.hpp"

namespace clustersim::calib {
namespace {

namespace fs = std::filesystem;

sim::GpuSpec h200() { return testing::gpu("H200-SXM", 4.8); }

const CheckRow& row(const CheckReport& r, const std::string& table) {
  for (const auto& x : r.beyond) {
    if (x.table == table) return x;
  }
  throw std::runtime_error("no row " + table + "\n" + format_check_report(r));
}

// A copy of the H200 tables with two beyond-the-grid files whose times are set from the model
// itself: a GEMM 20% slower than its fallback, one at a grid node at the grid's time, and an
// attention point at its fallback's time.
TEST(CalibCheckBeyond, EachPointAgainstTheFallbackAndTheSeamApart) {
  const fs::path dir = fs::temp_directory_path() / "clustersim_beyond";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(default_measured_dir())) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name != "gemm_long_tokens.csv" && name != "attention_long.csv") {
      fs::copy(e.path(), dir / name);
    }
  }
  const auto base = MeasuredTables::load(dir.string());
  EXPECT_TRUE(base->beyond().empty());
  const MeasuredCostModel m0(h200(), base);
  const double beyond = m0.table_gemm_time("gemm/bf16/wgrad", 4096, 4096, 262144);
  const double seam = base->grid("gemm/bf16/wgrad").time_at({4096, 4096, 32768});
  EXPECT_FALSE(base->grid("gemm/bf16/wgrad").contains({4096, 4096, 262144}));
  std::ofstream(dir / "gemm_long_tokens.csv")
      << std::setprecision(17)
      << "# probe: test\ndtype,layout,m,n,k,time_s,max_rel_err\n"
      << "bf16,wgrad,4096,4096,262144," << 1.2 * beyond << ",0.001\n"
      << "bf16,wgrad,4096,4096,32768," << seam << ",0.001\n";
  const double fwd = m0.compute_time(testing::attention_op(32, 262144, false));
  std::ofstream(dir / "attention_long.csv")
      << std::setprecision(17)
      << "# probe: test\nbackend,set,direction,batch,heads,kv_heads,seq,time_s,max_rel_err\n"
      << "cudnn,gqa,fwd,1,32,8,262144," << fwd << ",0.003\n";

  const auto tables = MeasuredTables::load(dir.string());
  ASSERT_EQ(tables->beyond().size(), 2u);
  const MeasuredCostModel model(h200(), tables);
  const CheckReport r = run_calib_check(*tables, model);
  const CheckRow& g = row(r, "gemm/bf16/wgrad (beyond grid)");
  EXPECT_EQ(g.points, 1u);
  EXPECT_NEAR(g.median, 0.2 / 1.2, 1e-9);  // |fallback - measured| / measured
  EXPECT_FALSE(g.meets_goal());
  EXPECT_EQ(g.worst, "m=4096 n=4096 k=262144");
  const CheckRow& s = row(r, "gemm/bf16/wgrad (in grid, this run)");
  EXPECT_EQ(s.points, 1u);
  EXPECT_NEAR(s.max, 0.0, 1e-9);
  const CheckRow& at = row(r, "attention/cudnn/gqa/fwd (beyond grid)");
  EXPECT_NEAR(at.max, 0.0, 1e-9);
  EXPECT_NE(format_check_report(r).find("beyond the grids"), std::string::npos);
  // The check-only files cost nothing: the model's times are those without them.
  EXPECT_DOUBLE_EQ(model.table_gemm_time("gemm/bf16/wgrad", 4096, 4096, 262144), beyond);
  fs::remove_all(dir);
}

// The derived H100 against an H100's own runs (calib/data/h100/run85): one row per GEMM dtype of
// the catalog and per memory-bound kernel, errors of the H100's model (not the H200's: against
// the H200 model the copies of >= 256 MiB would be ~40% off); the memory-bound rows marked in
// sample (the H100's own table averages run 85 with others); refused for the measured GPU's
// model; a run without its files is an error naming the file.
TEST(CalibCheckDerived, AnH100RunAgainstTheH100sModel) {
  const auto tables = MeasuredTables::load(default_measured_dir());
  const MeasuredCostModel h100(testing::gpu("H100-SXM", 3.35), tables);
  const std::string run = default_measured_dir() + "/../h100/run85";
  CheckReport r;
  check_derived_gpu(r, h100, run + "/");
  // bf16, fp8; adamw, copy, cross_entropy, gelu, layernorm, rmsnorm, rope, swiglu
  ASSERT_EQ(r.derived.size(), 10u);
  EXPECT_EQ(r.derived[0].table, "run85 gemm/bf16 (catalog)");
  EXPECT_EQ(r.derived[0].points, 77u);
  EXPECT_LT(r.derived[0].median, 0.03);
  // Run 85 is one of the four runs the H100's own table averages: held out of it, predicted by
  // the other three (2026-12-05: median 1.05%, max 7.1%; against the whole table 0.8% / 5.3%).
  EXPECT_EQ(r.derived[3].table, "run85 membound/copy (held out)");
  EXPECT_EQ(r.derived[3].points, 35u);
  EXPECT_LT(r.derived[3].median, 0.03);
  EXPECT_GT(r.derived[3].median, 0.0);
  // The same files as a run the own table does not average: against the model's whole table.
  namespace fs = std::filesystem;
  const fs::path other = fs::path(::testing::TempDir()) / "run99";
  fs::create_directories(other);
  for (const char* f : {"gemm_catalog.csv", "membound.csv"}) {
    fs::copy_file(run + "/" + f, other / f, fs::copy_options::overwrite_existing);
  }
  CheckReport o;
  check_derived_gpu(o, h100, other.string());
  EXPECT_EQ(o.derived[3].table, "run99 membound/copy");
  EXPECT_NE(o.derived[3].median, r.derived[3].median);
  EXPECT_LT(o.derived[3].median, 0.01);
  fs::remove_all(other);
  const std::string text = format_check_report(r);
  EXPECT_NE(text.find("run85 membound/rmsnorm (held out)"), std::string::npos);
  const MeasuredCostModel h200_model(h200(), tables);
  CheckReport wrong;
  EXPECT_THROW(check_derived_gpu(wrong, h200_model, run), std::invalid_argument);
  try {
    check_derived_gpu(wrong, h100, ::testing::TempDir());
    ADD_FAILURE() << "a directory without gemm_catalog.csv was read";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("gemm_catalog.csv"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace clustersim::calib
