// Tests of TF32 GEMMs (FP32 operands on the tensor cores: the router's backward with
// moe_router_dtype fp32): the run-102 table (calib/tf32_ratio, calib/data/h200/gemm_tf32.csv)
// and the ratio the measured cost model applies to a BF16 GEMM's time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "calib/measured_cost_model.hpp"
#include "calib/roofline_cost_model.hpp"
#include "calib/tf32_ratio.hpp"
#include "calib_test_util.hpp"

namespace clustersim::calib {
namespace {

using testing::gpu;

sim::Op gemm(sim::DType dt, sim::Phase phase) {
  return testing::gemm_op(4096, 7168, 256, dt, 1, 0, 0, phase);
}

bool notes_tf32(const MeasuredCostModel& m) {
  const auto notes = m.out_of_grid();
  return std::any_of(notes.begin(), notes.end(),
                     [](const OutOfGridOp& n) { return n.what.find("GEMM tf32") != std::string::npos; });
}

// A scratch gemm_tf32.csv with the given rows after the header.
std::string scratch_table(const std::string& rows) {
  const auto file = std::filesystem::temp_directory_path() /
                    ("clustersim_tf32_" + std::to_string(::getpid()) + ".csv");
  std::ofstream(file) << "# probe: test\nlayout,m,n,k,time_tf32_s,time_bf16_s\n" << rows;
  return file.string();
}

// Medians per layout (odd and even counts; skewed, so a mean would differ), the backward ratio
// the geometric mean of the two gradient layouts' (not their arithmetic mean, nor either alone),
// computed from the times (not a rounded ratio column).
TEST(Tf32Ratio, MediansPerLayoutAndTheBackwardGeometricMean) {
  const std::string path = scratch_table(
      "fwd,1,1,1,7e-6,1e-6\nfwd,1,1,1,1e-6,1e-6\nfwd,1,1,1,1e-6,1e-6\n"
      "dgrad,1,1,1,2e-6,1e-6\ndgrad,1,1,1,4e-6,2e-6\ndgrad,1,1,1,6e-6,1e-6\n"
      "wgrad,1,1,1,16e-6,2e-6\nwgrad,1,1,1,8e-6,1e-6\nwgrad,1,1,1,10e-6,1e-6\nwgrad,1,1,1,3e-6,1e-6\n");
  const Tf32Ratio r = Tf32Ratio::load(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(r.loaded());
  EXPECT_DOUBLE_EQ(r.ratio(sim::Phase::Forward), 1.0);  // median of 7, 1, 1 (mean 3)
  EXPECT_DOUBLE_EQ(r.layout_median("dgrad"), 2.0);       // of 2, 2, 6 (mean 3.33)
  EXPECT_DOUBLE_EQ(r.layout_median("wgrad"), 8.0);       // of 8, 8, 10, 3 (even count)
  EXPECT_DOUBLE_EQ(r.ratio(sim::Phase::Backward), 4.0);  // sqrt(2 x 8); arithmetic mean 5
  EXPECT_THROW(r.layout_median("bwd"), std::invalid_argument);
  EXPECT_THROW(Tf32Ratio().ratio(sim::Phase::Forward), std::logic_error);
}

TEST(Tf32Ratio, BadTablesNameTheirLineAndColumn) {
  const auto load = [](const std::string& p) { return Tf32Ratio::load(p); };
  const std::string head = "# probe: test\nlayout,m,n,k,time_tf32_s,time_bf16_s\n";
  const std::string ok = "fwd,1,1,1,2e-6,1e-6\ndgrad,1,1,1,2e-6,1e-6\nwgrad,1,1,1,2e-6,1e-6\n";
  testing::expect_rejected_table(load, head + ok + "xgrad,1,1,1,2e-6,1e-6\n", 6, "layout");
  testing::expect_rejected_table(load, head + ok + "fwd,1,1,1,0,1e-6\n", 6, "time_tf32_s");
  testing::expect_rejected_table(load, head + "fwd,1,1,1,2e-6,1e-6\n", 2, "layout");  // no dgrad
}

// Run 102 on an H100: TF32 at about half the BF16 rate in the forward (TN) layout, and slower in
// the weight-gradient (NT) layout, both of whose operands are not K-major (Hopper's wgmma
// transposes only 16-bit operands: PTX ISA, wgmma.mma_async).
TEST(Tf32Ratio, TheH200DirectoryHasRun102sTable) {
  const auto tables = MeasuredTables::load(default_measured_dir());
  const Tf32Ratio& r = tables->tf32_ratio();
  ASSERT_TRUE(r.loaded());
  // The medians docs/cost-model.md states, from the committed table.
  EXPECT_NEAR(r.layout_median("fwd"), 2.002, 1e-3);
  EXPECT_NEAR(r.layout_median("dgrad"), 2.202, 1e-3);
  EXPECT_NEAR(r.layout_median("wgrad"), 2.600, 1e-3);
  EXPECT_NEAR(r.ratio(sim::Phase::Backward), 2.393, 1e-3);

  const MeasuredCostModel h200(gpu("H200-SXM", 4.8), tables);
  for (const auto phase : {sim::Phase::Forward, sim::Phase::Backward}) {
    EXPECT_NEAR(h200.compute_time(gemm(sim::DType::TF32, phase)) /
                    h200.compute_time(gemm(sim::DType::BF16, phase)),
                r.ratio(phase), 1e-12);
  }
  EXPECT_FALSE(notes_tf32(h200));
}

// Without the table (older data): the datasheet rule, BF16 time x 2 (half the dense rate,
// twice the operand bytes), listed as costed outside the tables; the roofline at half the
// BF16 peak.
TEST(Tf32Ratio, WithoutTheTableTwiceTheBf16TimeNoted) {
  const auto older = testing::tables_without("gemm_tf32.csv");
  EXPECT_FALSE(older->tf32_ratio().loaded());
  const MeasuredCostModel h200(gpu("H200-SXM", 4.8), older);
  const auto bwd = sim::Phase::Backward;
  EXPECT_NEAR(h200.compute_time(gemm(sim::DType::TF32, bwd)) / h200.compute_time(gemm(sim::DType::BF16, bwd)),
              2.0, 1e-12);
  EXPECT_TRUE(notes_tf32(h200));
  const RooflineCostModel roofline(gpu("H200-SXM", 4.8));
  EXPECT_NEAR(roofline.compute_time(testing::gemm_op(16384, 16384, 16384, sim::DType::TF32, 1, 0, 0,
                                                      sim::Phase::Forward)) /
                  roofline.compute_time(testing::gemm_op(16384, 16384, 16384, sim::DType::BF16, 1, 0, 0,
                                                         sim::Phase::Forward)),
              2.0, 1e-9);
}

}  // namespace
}  // namespace clustersim::calib
