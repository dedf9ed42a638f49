// Tests of weight-gradient GEMMs added into main_grad: the run-48 table
// (load_wgrad_accum_series, calib/data/h200/gemm_wgrad_accum.csv) and the extra time the
// measured cost model charges a GEMM with grad_accum (calib/wgrad_accum).
#include <gtest/gtest.h>

#include <string>

#include "calib/measured_cost_model.hpp"
#include "calib/tables.hpp"
#include "calib/wgrad_accum.hpp"
#include "calib_test_util.hpp"

namespace clustersim::calib {
namespace {

using testing::gpu;

const char* kAccum = "gemm_wgrad_accum.csv";

// time_s of the run-48 row (out, in, tokens) of this dtype and variant.
double accum_time(const std::string& dtype, int out, int in, int tokens, const std::string& variant) {
  return testing::measured_time(kAccum, {{"dtype", dtype}, {"m", std::to_string(out)},
                                         {"n", std::to_string(in)}, {"k", std::to_string(tokens)},
                                         {"variant", variant}});
}

// A weight-gradient op as the workloads write it: (in, out, tokens).
sim::Op wgrad(std::int64_t in, std::int64_t out, std::int64_t tokens, sim::DType dt,
              sim::GradAccum accum) {
  sim::Op op = testing::gemm_op(in, out, tokens, dt, 1, 0, 0, sim::Phase::Backward);
  std::get<sim::GemmShape>(op.shape).grad_accum = accum;
  return op;
}

class WgradAccum : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tables_ = MeasuredTables::load(default_measured_dir()); }
  static std::shared_ptr<const MeasuredTables> tables_;
  MeasuredCostModel h200_{gpu("H200-SXM", 4.8), tables_};
  MeasuredCostModel h100_{gpu("H100-SXM", 3.35), tables_};
  double extra(const MeasuredCostModel& m, std::int64_t in, std::int64_t out, std::int64_t tokens,
               sim::DType dt, sim::GradAccum accum) const {
    return m.compute_time(wgrad(in, out, tokens, dt, accum)) -
           m.compute_time(wgrad(in, out, tokens, dt, sim::GradAccum::None));
  }
};
std::shared_ptr<const MeasuredTables> WgradAccum::tables_;

TEST_F(WgradAccum, TheH200DirectoryHasRun48sGrids) {
  for (const char* layout : {"bf16/wgrad", "fp8/tn"}) {
    for (const char* out : {"plain", "f32", "bf16"}) {
      const std::string key = std::string("gemm_accum/") + layout + "/" + out;
      ASSERT_TRUE(tables_->has(key)) << key;
      EXPECT_EQ(tables_->grid(key).size(), 125u) << key;
    }
  }
  EXPECT_TRUE(WgradAccumCost(*tables_).loaded());
}

TEST_F(WgradAccum, AtANodeTheExtraIsTheMeasuredDifferenceOfTheSameRun) {
  // The trace's (in, out, tokens) = (8192, 4096, 2048) is the table's (out 4096, in 8192, 2048).
  for (const char* dt : {"bf16", "fp8"}) {
    const sim::DType dtype = std::string(dt) == "fp8" ? sim::DType::FP8 : sim::DType::BF16;
    const double plain = accum_time(dt, 4096, 8192, 2048, "std");
    const double f32 = accum_time(dt, 4096, 8192, 2048, "accum_f32");
    const double bf16 = accum_time(dt, 4096, 8192, 2048, "accum_bf16");
    ASSERT_GT(f32, plain) << dt;
    EXPECT_NEAR(extra(h200_, 8192, 4096, 2048, dtype, sim::GradAccum::F32), f32 - plain, 1e-9) << dt;
    EXPECT_NEAR(extra(h200_, 8192, 4096, 2048, dtype, sim::GradAccum::BF16),
                std::max(0.0, bf16 - plain), 1e-9) << dt;
  }
}

TEST_F(WgradAccum, FP32MainGradCostsMoreThanBF16AndTheExtraShrinksWithTokens) {
  for (sim::DType dt : {sim::DType::BF16, sim::DType::FP8}) {
    const double f32 = extra(h200_, 8192, 16384, 2048, dt, sim::GradAccum::F32);
    const double bf16 = extra(h200_, 8192, 16384, 2048, dt, sim::GradAccum::BF16);
    EXPECT_GT(f32, bf16);
    EXPECT_GE(bf16, 0.0);
    // Relative to the GEMM, the main_grad traffic matters less as the tokens (k) grow.
    const auto relative = [&](std::int64_t k) {
      return extra(h200_, 8192, 16384, k, dt, sim::GradAccum::F32) /
             h200_.compute_time(wgrad(8192, 16384, k, dt, sim::GradAccum::None));
    };
    EXPECT_GT(relative(1024), relative(4096));
    EXPECT_GT(relative(4096), relative(16384));
  }
}

TEST_F(WgradAccum, OutsideTheGridTheExtraScalesWithTheOutputElementsAndIsListed) {
  // 32768 is the grid's largest out/in width: 65536 x 32768 holds twice the elements.
  const double edge = extra(h200_, 32768, 32768, 4096, sim::DType::BF16, sim::GradAccum::F32);
  const double beyond = extra(h200_, 32768, 65536, 4096, sim::DType::BF16, sim::GradAccum::F32);
  EXPECT_NEAR(beyond / edge, 2.0, 1e-9);
  // Fewer tokens than measured: the extra per element of the nearest shape (k = 1024).
  EXPECT_NEAR(extra(h200_, 4096, 4096, 512, sim::DType::BF16, sim::GradAccum::F32),
              extra(h200_, 4096, 4096, 1024, sim::DType::BF16, sim::GradAccum::F32), 1e-12);
  bool listed = false;
  for (const auto& o : h200_.out_of_grid()) {
    listed = listed || o.what.find("main_grad") != std::string::npos;
  }
  EXPECT_TRUE(listed);
}

TEST_F(WgradAccum, DerivedGpusScaleTheExtraByHbmBandwidth) {
  // H100: the main_grad traffic scaled as memory-bound kernels (measured: 1.397x the H200's time).
  const double h200 = extra(h200_, 8192, 28672, 4096, sim::DType::BF16, sim::GradAccum::F32);
  const double h100 = extra(h100_, 8192, 28672, 4096, sim::DType::BF16, sim::GradAccum::F32);
  ASSERT_GT(h200, 0.0);
  EXPECT_NEAR(h100 / h200, 1.0 / derivation_rule("H100-SXM").memory, 1e-6);
}

TEST_F(WgradAccum, WithoutTheTableNothingIsChargedAndTheOpIsListed) {
  const MeasuredCostModel older(gpu("H200-SXM", 4.8), testing::tables_without(kAccum));
  EXPECT_EQ(older.compute_time(wgrad(4096, 4096, 4096, sim::DType::BF16, sim::GradAccum::F32)),
            older.compute_time(wgrad(4096, 4096, 4096, sim::DType::BF16, sim::GradAccum::None)));
  ASSERT_EQ(older.out_of_grid().size(), 1u);
  EXPECT_NE(older.out_of_grid()[0].what.find("no gemm_accum table"), std::string::npos);
  EXPECT_EQ(older.table_sources().size(), h200_.table_sources().size() - 1);
}

TEST(WgradAccumTable, AnUnknownVariantNamesTheFileLineAndColumn) {
  testing::expect_rejected_table(load_wgrad_accum_series,
                                 "dtype,layout,m,n,k,time_s,max_rel_err,variant\n"
                                 "bf16,wgrad,2048,2048,2048,2.5e-05,0.003,std\n"
                                 "bf16,wgrad,2048,2048,2048,2.6e-05,0.003,accum_fp16\n",
                                 3, "variant");
}

}  // namespace
}  // namespace clustersim::calib
