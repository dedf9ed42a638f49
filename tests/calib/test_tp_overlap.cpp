// Tests of GEMMs under Transformer Engine's TP overlap: the run-12 tables
// (load_tp_overlap_series, calib/data/h200/gemm_tp_overlap_*.csv) and the factor the measured
// cost model applies to split and SM-limited GEMMs (calib/tp_overlap_factor).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

#include "calib/measured_cost_model.hpp"
#include "calib/tables.hpp"
#include "calib/tp_overlap_factor.hpp"
#include "calib_test_util.hpp"
#include "sim/spec_error.hpp"

namespace clustersim::calib {
namespace {

namespace fs = std::filesystem;
using testing::gpu;

const char* kFwdWgrad = "gemm_tp_overlap_fwd_wgrad.csv";
const char* kDgradFp8 = "gemm_tp_overlap_dgrad_fp8.csv";

// A fresh temporary directory of this process (ctest runs each test in its own process, in
// parallel).
fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// time_s of the row of a TP-overlap table with these values.
double tp_time(const std::string& file, const std::string& dtype, const std::string& layout,
               int m, int n, int k, const std::string& variant, int chunks, int margin) {
  return testing::measured_time(
      file, {{"dtype", dtype}, {"layout", layout}, {"m", std::to_string(m)}, {"n", std::to_string(n)},
             {"k", std::to_string(k)}, {"variant", variant}, {"chunks", std::to_string(chunks)},
             {"sm_margin", std::to_string(margin)}});
}

sim::Op gemm(std::int64_t m, std::int64_t n, std::int64_t k, sim::DType dt, int splits,
             int margin, sim::Phase phase = sim::Phase::Forward) {
  return testing::gemm_op(m, n, k, dt, splits, margin, 0, phase);
}

class TpOverlapCost : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tables_ = MeasuredTables::load(default_measured_dir());
    // An older data directory: the H200 tables without run 12's files.
    const fs::path dir = temp_dir("clustersim_no_tp_overlap");
    for (const auto& e : fs::directory_iterator(default_measured_dir())) {
      const auto name = e.path().filename();
      if (name != kFwdWgrad && name != kDgradFp8) fs::copy(e.path(), dir / name);
    }
    older_ = MeasuredTables::load(dir.string());
    fs::remove_all(dir);
  }
  // The model's factor: the time of the op over the time of the same GEMM run plainly.
  double factor(const MeasuredCostModel& model, std::int64_t m, std::int64_t n, std::int64_t k,
                sim::DType dt, int splits, int margin, sim::Phase phase = sim::Phase::Forward) {
    return model.compute_time(gemm(m, n, k, dt, splits, margin, phase)) /
           model.compute_time(gemm(m, n, k, dt, 1, 0, phase));
  }
  double factor(std::int64_t m, std::int64_t n, std::int64_t k, sim::DType dt, int splits,
                int margin, sim::Phase phase = sim::Phase::Forward) {
    return factor(h200_, m, n, k, dt, splits, margin, phase);
  }
  static std::shared_ptr<const MeasuredTables> tables_, older_;
  MeasuredCostModel h200_{gpu("H200-SXM", 4.8), tables_};
};
std::shared_ptr<const MeasuredTables> TpOverlapCost::tables_;
std::shared_ptr<const MeasuredTables> TpOverlapCost::older_;

TEST_F(TpOverlapCost, TheH200DirectoryHasRun42sSeries) {
  for (const char* key : {"gemm_tp/bf16/fwd/full_1_0", "gemm_tp/bf16/fwd/split_4_0",
                          "gemm_tp/bf16/fwd/margin_1_24", "gemm_tp/bf16/dgrad/split_4_16",
                          "gemm_tp/bf16/wgrad/margin_1_1", "gemm_tp/fp8/tn/margin_1_24",
                          "gemm_tp/fp8/tn/split_8_0"}) {
    EXPECT_TRUE(tables_->has(key)) << key;
  }
  int tp_keys = 0;
  for (const auto& key : tables_->keys()) {
    EXPECT_NE(key.rfind("gemm_tp/bf16/wgrad/split_", 0), 0u) << key;  // TE never splits a wgrad
    if (key.rfind("gemm_tp/", 0) == 0) {
      ++tp_keys;
      EXPECT_EQ(tables_->grid(key).size(), 343u) << key;  // m, n, k in 2k-16k, 1.5x steps (run 42)
    }
  }
  EXPECT_EQ(tp_keys, 3 * 13 + 8);  // fwd, dgrad, fp8: full + 7 margins + 5 splits; wgrad: 8
  for (const auto& key : older_->keys()) EXPECT_NE(key.rfind("gemm_tp/", 0), 0u) << key;
}

TEST(TpOverlapTable, VariantMustAgreeWithChunksAndMargin) {
  const fs::path dir = temp_dir("clustersim_test_tp_overlap");
  const std::string header = "dtype,layout,m,n,k,variant,chunks,sm_margin,time_s,max_rel_err\n";
  const auto write = [&](const std::string& name, const std::string& row) {
    const std::string p = (dir / name).string();
    std::ofstream(p) << header << "bf16,fwd,2048,2048,2048,full,1,0,2.5e-05,0.003\n" << row;
    return p;
  };
  const auto ok = load_tp_overlap_series(write("ok.csv", "bf16,fwd,2048,2048,2048,split,4,16,4e-05,0.003\n"));
  ASSERT_EQ(ok.size(), 2u);
  EXPECT_EQ(ok[1].key, "gemm_tp/bf16/fwd/split_4_16");
  EXPECT_EQ(ok[1].axes, (std::vector<std::string>{"m", "n", "k"}));
  for (const auto& [row, field] : std::vector<std::pair<std::string, std::string>>{
           {"bf16,fwd,2048,2048,2048,full,4,0,4e-05,0.003\n", "variant"},
           {"bf16,fwd,2048,2048,2048,margin,1,0,4e-05,0.003\n", "variant"},
           {"bf16,fwd,2048,2048,2048,split,1,8,4e-05,0.003\n", "variant"},
           {"bf16,fwd,2048,2048,2048,split,2.5,0,4e-05,0.003\n", "chunks"},
           {"bf16,fwd,2048,2048,2048,margin,1,-8,4e-05,0.003\n", "sm_margin"},
           {"bf16,fwd,2048,2048,2048,split,4,0,4e-05,0.03\n", "max_rel_err"}}) {
    const std::string p = write("bad.csv", row);
    try {
      load_tp_overlap_series(p);
      ADD_FAILURE() << "no SpecError for " << row;
    } catch (const SpecError& e) {
      EXPECT_EQ(e.line(), 3) << e.what();
      EXPECT_EQ(e.field(), field) << e.what();
    }
  }
  fs::remove_all(dir);
}

TEST_F(TpOverlapCost, AtAMeasuredNodeTheFactorIsTheMeasuredRatio) {
  const double full = tp_time(kFwdWgrad, "bf16", "fwd", 2048, 8192, 8192, "full", 1, 0);
  const double split4 = tp_time(kFwdWgrad, "bf16", "fwd", 2048, 8192, 8192, "split", 4, 0);
  EXPECT_NEAR(factor(2048, 8192, 8192, sim::DType::BF16, 4, 0) / (split4 / full), 1.0, 1e-9);
  // The factor multiplies the plain time of the main grid (gemm_bf16.csv), not run 12's.
  const sim::Op plain = gemm(2048, 8192, 8192, sim::DType::BF16, 1, 0);
  EXPECT_NEAR(h200_.compute_time(gemm(2048, 8192, 8192, sim::DType::BF16, 4, 0)) /
                  (h200_.compute_time(plain) * split4 / full), 1.0, 1e-12);
  // FP8, forward and backward alike: the TN table (the plain time differs by accumulation).
  const double f8 = tp_time(kDgradFp8, "fp8", "tn", 4096, 2048, 16384, "full", 1, 0);
  const double f8m = tp_time(kDgradFp8, "fp8", "tn", 4096, 2048, 16384, "margin", 1, 24);
  EXPECT_NEAR(factor(4096, 2048, 16384, sim::DType::FP8, 1, 24) / (f8m / f8), 1.0, 1e-9);
  EXPECT_NEAR(factor(4096, 2048, 16384, sim::DType::FP8, 1, 24, sim::Phase::Backward) / (f8m / f8),
              1.0, 1e-9);
  EXPECT_TRUE(h200_.out_of_grid().empty());
}

TEST_F(TpOverlapCost, APlainGemmIsUnchanged) {
  const MeasuredCostModel older(gpu("H200-SXM", 4.8), older_);
  for (auto phase : {sim::Phase::Forward, sim::Phase::Backward}) {
    for (auto dt : {sim::DType::BF16, sim::DType::FP8}) {
      for (const auto& [m, n, k] :
           std::vector<std::tuple<int, int, int>>{{2048, 8192, 8192}, {5000, 9216, 12288}}) {
        const sim::Op op = gemm(m, n, k, dt, 1, 0, phase);
        EXPECT_EQ(h200_.compute_time(op), older.compute_time(op)) << m << " " << n << " " << k;
      }
    }
  }
  EXPECT_TRUE(h200_.out_of_grid().empty());
  EXPECT_TRUE(older.out_of_grid().empty());
}

TEST_F(TpOverlapCost, MarginOnlyIsLinearInSAndProportionalAboveTheLargestMeasured) {
  const int m = 4096, n = 4096, k = 8192;
  const double full = tp_time(kFwdWgrad, "bf16", "fwd", m, n, k, "full", 1, 0);
  const auto r = [&](int s) { return tp_time(kFwdWgrad, "bf16", "fwd", m, n, k, "margin", 1, s) / full; };
  const auto f = [&](int s) { return factor(m, n, k, sim::DType::BF16, 1, s); };
  EXPECT_NEAR(f(16) / r(16), 1.0, 1e-9);
  EXPECT_NEAR(f(20) / (0.5 * (r(16) + r(24))), 1.0, 1e-9);
  EXPECT_NEAR(f(18) / (0.75 * r(16) + 0.25 * r(24)), 1.0, 1e-9);
  EXPECT_GT(f(20), std::min(r(16), r(24)));
  EXPECT_LT(f(20), std::max(r(16), r(24)));
  // Between 0 and the first measured margin: from 1 at S = 0 (S = 1 measured, so S = 3 is
  // between 2 and 4).
  EXPECT_NEAR(f(3) / (0.5 * (r(2) + r(4))), 1.0, 1e-9);
  // Above the largest measured margin (32): the GEMM loses SMs in proportion.
  EXPECT_NEAR(f(40) / (r(32) * (132.0 - 32.0) / (132.0 - 40.0)), 1.0, 1e-9);
  EXPECT_NEAR(f(131) / (r(32) * 100.0), 1.0, 1e-9);
  EXPECT_THROW(f(132), std::invalid_argument);
  EXPECT_THROW(f(-1), std::invalid_argument);
  EXPECT_THROW(factor(m, n, k, sim::DType::BF16, 0, 0), std::invalid_argument);
  EXPECT_THROW(factor(m, n, k, sim::DType::BF16, -2, 8), std::invalid_argument);
}

TEST_F(TpOverlapCost, SplitOnlyIsLinearInLog2NAndHeldAboveTheLargestMeasured) {
  const int m = 8192, n = 2048, k = 4096;
  const double full = tp_time(kDgradFp8, "fp8", "tn", m, n, k, "full", 1, 0);
  const auto r = [&](int c) { return tp_time(kDgradFp8, "fp8", "tn", m, n, k, "split", c, 0) / full; };
  const auto f = [&](int c) { return factor(m, n, k, sim::DType::FP8, c, 0); };
  EXPECT_NEAR(f(8) / r(8), 1.0, 1e-9);
  EXPECT_NEAR(f(3) / (r(2) + (r(4) - r(2)) * (std::log2(3.0) - 1.0)), 1.0, 1e-9);
  EXPECT_NEAR(f(6) / (r(4) + (r(8) - r(4)) * (std::log2(6.0) - 2.0)), 1.0, 1e-9);
  EXPECT_TRUE(h200_.out_of_grid().empty());
  EXPECT_NEAR(f(16) / r(8), 1.0, 1e-9);
  ASSERT_EQ(h200_.out_of_grid().size(), 1u);
  EXPECT_NE(h200_.out_of_grid()[0].what.find("more than 8 splits"), std::string::npos);
}

TEST_F(TpOverlapCost, SplitWithAMarginTakesTheMeasuredMarginEffectOnASplitGemm) {
  const int m = 2048, n = 16384, k = 4096;
  const auto t = [&](const char* v, int c, int s) {
    return tp_time(kFwdWgrad, "bf16", "fwd", m, n, k, v, c, s);
  };
  const double full = t("full", 1, 0);
  const auto f = [&](int c, int s) { return factor(m, n, k, sim::DType::BF16, c, s); };
  EXPECT_NEAR(f(4, 16) / (t("split", 4, 16) / full), 1.0, 1e-9);
  EXPECT_NEAR(f(4, 24) / (t("split", 4, 24) / full), 1.0, 1e-9);
  const double i16 = t("split", 4, 16) / t("split", 4, 0), i24 = t("split", 4, 24) / t("split", 4, 0);
  EXPECT_NEAR(f(8, 16) / (t("split", 8, 0) / full * i16), 1.0, 1e-9);
  EXPECT_NEAR(f(2, 8) / (t("split", 2, 0) / full * (1.0 + (i16 - 1.0) * 0.5)), 1.0, 1e-9);
  // Above the largest pipeline margin: scaled as the unsplit GEMM's margin factor grows.
  const double rm24 = t("margin", 1, 24) / full, rm32 = t("margin", 1, 32) / full;
  EXPECT_NEAR(f(4, 32) / (t("split", 4, 0) / full * i24 * rm32 / rm24), 1.0, 1e-9);
}

TEST_F(TpOverlapCost, BackwardBf16UsesDgradForSplitsAndBothGradientsForAMargin) {
  const int m = 4096, n = 2048, k = 8192;
  const auto r = [&](const char* file, const char* layout, int a, int b, const char* v, int c, int s) {
    return tp_time(file, "bf16", layout, a, b, k, v, c, s) / tp_time(file, "bf16", layout, a, b, k, "full", 1, 0);
  };
  const auto back = sim::Phase::Backward;
  EXPECT_NEAR(factor(m, n, k, sim::DType::BF16, 4, 0, back) / r(kDgradFp8, "dgrad", m, n, "split", 4, 0),
              1.0, 1e-9);
  // The trace writes wgrad as (in, out, tokens), the table as (out, in, tokens).
  const double dg = r(kDgradFp8, "dgrad", m, n, "margin", 1, 16);
  const double wg = r(kFwdWgrad, "wgrad", n, m, "margin", 1, 16);
  EXPECT_NEAR(factor(m, n, k, sim::DType::BF16, 1, 16, back) / std::sqrt(dg * wg), 1.0, 1e-9);
  // The forward table serves forward and recomputed GEMMs.
  EXPECT_NEAR(factor(m, n, k, sim::DType::BF16, 1, 16) / r(kFwdWgrad, "fwd", m, n, "margin", 1, 16),
              1.0, 1e-9);
}

TEST_F(TpOverlapCost, OutsideTheGridTheRatioOfTheNearestShapeIsUsedAndListed) {
  EXPECT_NEAR(factor(1024, 8192, 8192, sim::DType::BF16, 4, 0) /
                  factor(2048, 8192, 8192, sim::DType::BF16, 4, 0), 1.0, 1e-12);
  factor(1024, 4096, 8192, sim::DType::BF16, 4, 0);
  ASSERT_EQ(h200_.out_of_grid().size(), 1u);  // once per layout, counted
  EXPECT_NE(h200_.out_of_grid()[0].what.find("TP overlap bf16/fwd outside m 2048-16384"),
            std::string::npos) << h200_.out_of_grid()[0].what;
  EXPECT_EQ(h200_.out_of_grid()[0].count, 2u);
}

TEST_F(TpOverlapCost, WithoutTheTablesAGemmIsCostedPlainAndListed) {
  const MeasuredCostModel older(gpu("H200-SXM", 4.8), older_);
  EXPECT_EQ(factor(older, 2048, 8192, 8192, sim::DType::BF16, 4, 24), 1.0);
  EXPECT_EQ(factor(older, 8192, 8192, 8192, sim::DType::BF16, 1, 24, sim::Phase::Backward), 1.0);
  EXPECT_EQ(factor(older, 2048, 8192, 8192, sim::DType::FP8, 2, 0), 1.0);
  ASSERT_EQ(older.out_of_grid().size(), 1u);
  EXPECT_EQ(older.out_of_grid()[0].what,
            "GEMM under TP overlap: no gemm_tp_overlap table, costed as a plain GEMM");
  EXPECT_EQ(older.out_of_grid()[0].count, 3u);
  EXPECT_EQ(older.table_sources().size(), 15u);  // still with the held-SM, main_grad, FP8 block, TF32 and host-copy tables
  ASSERT_EQ(h200_.table_sources().size(), 16u);
  EXPECT_NE(h200_.table_sources()[2].find(kDgradFp8), std::string::npos);
  EXPECT_NE(h200_.table_sources()[2].find(kFwdWgrad), std::string::npos);
}

TEST_F(TpOverlapCost, DerivedGpusTakeTheRatioUnchanged) {
  const MeasuredCostModel b200(gpu("B200", 7.7), tables_);
  EXPECT_NEAR(factor(b200, 2048, 9216, 12288, sim::DType::BF16, 4, 24) /
                  factor(2048, 9216, 12288, sim::DType::BF16, 4, 24), 1.0, 1e-12);
  const sim::Op op = gemm(2048, 9216, 12288, sim::DType::BF16, 4, 24);
  EXPECT_NEAR(h200_.compute_time(op) / b200.compute_time(op), 1745.0 / 794.5, 1e-12);
  EXPECT_NE(b200.table_sources()[2].find("ratios applied unchanged"), std::string::npos);
}

}  // namespace
}  // namespace clustersim::calib
