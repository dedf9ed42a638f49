// Tests of GEMMs beside SMs held by another kernel: the run-18 table (load_busy_sms_series,
// calib/data/h200/gemm_busy_sms.csv) and the factor the measured cost model answers for GEMMs
// with busy SMs (calib/held_sm_factor).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "calib/held_sm_factor.hpp"
#include "calib/measured_cost_model.hpp"
#include "calib/tables.hpp"
#include "calib_test_util.hpp"
#include "sim/spec_error.hpp"

namespace clustersim::calib {
namespace {

using testing::gpu;

const char* kBusy = "gemm_busy_sms.csv";

// time_s of the run-18 row with these values.
double busy_time(const std::string& dtype, const std::string& layout, int m, int n, int k,
                 const std::string& variant, int margin, int busy) {
  return testing::measured_time(
      kBusy, {{"dtype", dtype}, {"layout", layout}, {"m", std::to_string(m)},
              {"n", std::to_string(n)}, {"k", std::to_string(k)}, {"variant", variant},
              {"sm_margin", std::to_string(margin)}, {"sm_busy", std::to_string(busy)}});
}

sim::Op gemm(std::int64_t m, std::int64_t n, std::int64_t k, sim::DType dt, int margin, int busy,
             sim::Phase phase = sim::Phase::Forward) {
  return testing::gemm_op(m, n, k, dt, 1, margin, busy, phase);
}

class HeldSms : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tables_ = MeasuredTables::load(default_measured_dir()); }
  static std::shared_ptr<const MeasuredTables> tables_;
  MeasuredCostModel h200_{gpu("H200-SXM", 4.8), tables_};
};
std::shared_ptr<const MeasuredTables> HeldSms::tables_;

TEST_F(HeldSms, TheH200DirectoryHasRun43sGrids) {
  for (const char* layout : {"bf16/fwd", "bf16/dgrad", "bf16/wgrad", "fp8/tn"}) {
    for (const char* v : {"full_0_0", "margin_16_0", "busy_0_0", "busy_0_2", "busy_0_4",
                          "busy_0_16", "busy_16_16"}) {
      const std::string key = std::string("gemm_busy/") + layout + "/" + v;
      ASSERT_TRUE(tables_->has(key)) << key;
      EXPECT_EQ(tables_->grid(key).size(), 343u) << key;  // m, n, k in 2k-16k, 1.5x steps (run 43)
    }
  }
}

TEST_F(HeldSms, AtAMeasuredShapeTheFactorIsTheMeasuredRatio) {
  // Planned for every SM, 4 held: busy_0_4 / busy_0_0 of the same shape.
  const double r4 = busy_time("bf16", "fwd", 4096, 8192, 4096, "busy", 0, 4) /
                    busy_time("bf16", "fwd", 4096, 8192, 4096, "busy", 0, 0);
  EXPECT_NEAR(h200_.held_sm_slowdown(gemm(4096, 8192, 4096, sim::DType::BF16, 0, 4)),
              std::max(1.0, r4), 1e-9);
  // Planned for 116 SMs, 16 held: what holding adds to the idle 16-SM margin.
  const double held = busy_time("fp8", "tn", 8192, 8192, 8192, "busy", 16, 16) /
                      busy_time("fp8", "tn", 8192, 8192, 8192, "busy", 0, 0);
  const double idle = busy_time("fp8", "tn", 8192, 8192, 8192, "margin", 16, 0) /
                      busy_time("fp8", "tn", 8192, 8192, 8192, "full", 0, 0);
  EXPECT_NEAR(h200_.held_sm_slowdown(gemm(8192, 8192, 8192, sim::DType::FP8, 16, 16)),
              std::max(1.0, held / idle), 1e-9);
}

TEST_F(HeldSms, BetweenAndBeyondTheMeasuredCountsTheStatedRulesApply) {
  const auto f = [&](int margin, int busy) {
    return h200_.held_sm_slowdown(gemm(4096, 4096, 8192, sim::DType::BF16, margin, busy));
  };
  const double r2 = busy_time("bf16", "fwd", 4096, 4096, 8192, "busy", 0, 2) /
                    busy_time("bf16", "fwd", 4096, 4096, 8192, "busy", 0, 0);
  const double r4 = busy_time("bf16", "fwd", 4096, 4096, 8192, "busy", 0, 4) /
                    busy_time("bf16", "fwd", 4096, 4096, 8192, "busy", 0, 0);
  const double r16 = busy_time("bf16", "fwd", 4096, 4096, 8192, "busy", 0, 16) /
                     busy_time("bf16", "fwd", 4096, 4096, 8192, "busy", 0, 0);
  ASSERT_GT(r2, 1.0);
  ASSERT_GT(r16, r2);
  EXPECT_NEAR(f(0, 1), 1.0 + (r2 - 1.0) / 2, 1e-9);          // linear from (0, 1)
  EXPECT_NEAR(f(0, 3), (r2 + r4) / 2, 1e-9);                  // between measured counts
  EXPECT_NEAR(f(0, 24), r16 * (132.0 - 16) / (132.0 - 24), 1e-9);  // SMs shrink in proportion
  EXPECT_NEAR(f(24, 24), f(16, 16), 1e-12);  // with a margin: the 16-SM ratio held above 16
  EXPECT_DOUBLE_EQ(f(0, 0), 1.0);
  EXPECT_THROW(f(0, 132), std::invalid_argument);
}

TEST_F(HeldSms, TheFactorIsNeverBelowOne) {
  for (int m : {2048, 4096, 8192, 16384}) {
    for (int n : {2048, 16384}) {
      for (int busy : {2, 4, 16}) {
        EXPECT_GE(h200_.held_sm_slowdown(gemm(m, n, 4096, sim::DType::BF16, 0, busy,
                                              sim::Phase::Backward)), 1.0);
        EXPECT_GE(h200_.held_sm_slowdown(gemm(m, n, 4096, sim::DType::FP8, busy, busy)), 1.0);
      }
    }
  }
}

TEST_F(HeldSms, WithoutTheTableNothingIsSlowedAndTheOpIsListed) {
  const MeasuredCostModel older(gpu("H200-SXM", 4.8), testing::tables_without(kBusy));
  EXPECT_EQ(older.held_sm_slowdown(gemm(4096, 4096, 4096, sim::DType::BF16, 0, 4)), 1.0);
  ASSERT_EQ(older.out_of_grid().size(), 1u);
  EXPECT_NE(older.out_of_grid()[0].what.find("no gemm_busy_sms table"), std::string::npos);
  EXPECT_EQ(older.table_sources().size(), h200_.table_sources().size() - 1);
}

TEST(BusySmsTable, MalformedRowsNameTheFileLineAndColumn) {
  // A margin row without a margin.
  testing::expect_rejected_table(
      load_busy_sms_series,
      "dtype,layout,m,n,k,variant,chunks,sm_margin,sm_busy,streams,time_s,max_rel_err\n"
      "bf16,fwd,2048,2048,2048,full,1,0,0,1,2.5e-05,0.003\n"
      "bf16,fwd,2048,2048,2048,margin,1,0,4,1,2.5e-05,0.003\n",
      3, "variant");
}

}  // namespace
}  // namespace clustersim::calib
