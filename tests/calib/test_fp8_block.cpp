// Tests of block-scaled FP8 GEMMs: the run-78 table (load_fp8_block_series,
// calib/data/h200/gemm_fp8_block.csv) and the ratio the measured cost model applies to a GEMM
// whose fp8_scaling says block (calib/fp8_block).
#include <gtest/gtest.h>

#include <string>

#include "calib/fp8_block.hpp"
#include "calib/measured_cost_model.hpp"
#include "calib/tables.hpp"
#include "calib_test_util.hpp"

namespace clustersim::calib {
namespace {

using testing::gpu;

// time_s of the run-78 row of this layout at (m, n, k).
double block_time(const std::string& layout, int m, int n, int k) {
  return testing::measured_time("gemm_fp8_block.csv", {{"layout", layout}, {"m", std::to_string(m)},
                                                       {"n", std::to_string(n)}, {"k", std::to_string(k)}});
}

sim::Op fp8_gemm(std::int64_t m, std::int64_t n, std::int64_t k, sim::Fp8Scaling scaling) {
  sim::Op op = testing::gemm_op(m, n, k, sim::DType::FP8, 1, 0, 0, sim::Phase::Backward);
  std::get<sim::GemmShape>(op.shape).fp8_scaling = scaling;
  return op;
}

class Fp8Block : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tables_ = MeasuredTables::load(default_measured_dir()); }
  static std::shared_ptr<const MeasuredTables> tables_;
  MeasuredCostModel h200_{gpu("H200-SXM", 4.8), tables_};
};
std::shared_ptr<const MeasuredTables> Fp8Block::tables_;

TEST_F(Fp8Block, TheH200DirectoryHasRun78sGrids) {
  for (const char* layout : {"tn", "tn_block2d1d", "tn_block1d1d"}) {
    const std::string key = std::string("gemm_block/fp8/") + layout;
    ASSERT_TRUE(tables_->has(key)) << key;
    EXPECT_EQ(tables_->grid(key).size(), 343u) << key;
  }
  EXPECT_TRUE(Fp8BlockFactor(*tables_).loaded());
}

TEST_F(Fp8Block, AtANodeTheGemmIsThePerTensorTimeTimesTheMeasuredRatio) {
  const double tensor = h200_.compute_time(fp8_gemm(8192, 8192, 8192, sim::Fp8Scaling::Tensor));
  for (const auto& [scaling, layout] : {std::pair{sim::Fp8Scaling::Block2D1D, "tn_block2d1d"},
                                        std::pair{sim::Fp8Scaling::Block1D1D, "tn_block1d1d"}}) {
    const double ratio = block_time(layout, 8192, 8192, 8192) / block_time("tn", 8192, 8192, 8192);
    EXPECT_GT(ratio, 1.0) << layout;
    EXPECT_NEAR(h200_.compute_time(fp8_gemm(8192, 8192, 8192, scaling)) / tensor, ratio, 1e-9) << layout;
  }
  // Scaling both operands in 1x128 blocks costs more than 128x128 weight blocks (run 78: medians
  // 1.41 and 1.12 over the grid).
  EXPECT_GT(h200_.compute_time(fp8_gemm(16384, 4096, 8192, sim::Fp8Scaling::Block1D1D)),
            h200_.compute_time(fp8_gemm(16384, 4096, 8192, sim::Fp8Scaling::Block2D1D)));
}

TEST_F(Fp8Block, OutsideTheGridTheNearestRatioIsUsedAndNoted) {
  const double far = h200_.compute_time(fp8_gemm(131072, 8192, 8192, sim::Fp8Scaling::Block2D1D)) /
                     h200_.compute_time(fp8_gemm(131072, 8192, 8192, sim::Fp8Scaling::Tensor));
  const double edge = block_time("tn_block2d1d", 65536, 8192, 8192) / block_time("tn", 65536, 8192, 8192);
  EXPECT_NEAR(far, edge, 1e-9);
  bool noted = false;
  for (const auto& n : h200_.out_of_grid()) noted = noted || n.what.find("block2d1d outside") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace clustersim::calib
