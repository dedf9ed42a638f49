// Which table a call is costed from, where the op's phase or shape could pick the wrong one:
// recomputed forwards (they run forward kernels in the backward pass), block-scaled FP8 GEMMs
// in the power state, attention below the grid and head widths of 192 or 256.
#include <gtest/gtest.h>

#include <string>

#include "calib/measured_cost_model.hpp"
#include "calib/tables.hpp"
#include "calib_test_util.hpp"

namespace clustersim::calib {
namespace {

using testing::gpu;
using testing::measured_time;

class KernelPhase : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tables_ = MeasuredTables::load(default_measured_dir()); }
  static std::shared_ptr<const MeasuredTables> tables_;
  MeasuredCostModel h200_{gpu("H200-SXM", 4.8), tables_};
};
std::shared_ptr<const MeasuredTables> KernelPhase::tables_;

sim::Op gemm(sim::DType dt, sim::Phase phase, bool recompute) {
  sim::Op op;
  op.shape = sim::GemmShape{8192, 8192, 8192, dt};
  op.phase = phase;
  op.recompute = recompute;
  return op;
}

// A recomputed forward (recompute: full) lies in the backward pass and runs the forward's
// kernels: the forward BF16 table, FP8 with fast accumulation (TE's fprop), the eager modules'
// forward table. Costed as backward it took the dgrad/wgrad mean, split accumulation and the
// eager backward table (a norm 54% slower).
TEST_F(KernelPhase, ARecomputedForwardIsCostedAsTheForward) {
  for (sim::DType dt : {sim::DType::BF16, sim::DType::FP8}) {
    const double fwd = h200_.compute_time(gemm(dt, sim::Phase::Forward, false));
    const double bwd = h200_.compute_time(gemm(dt, sim::Phase::Backward, false));
    EXPECT_DOUBLE_EQ(h200_.compute_time(gemm(dt, sim::Phase::Backward, true)), fwd) << sim::to_string(dt);
    EXPECT_NE(fwd, bwd) << sim::to_string(dt);
    EXPECT_DOUBLE_EQ(h200_.sustained_state(gemm(dt, sim::Phase::Backward, true)),
                     h200_.sustained_state(gemm(dt, sim::Phase::Forward, false)));
  }
  sim::Op norm;
  norm.shape = sim::MemBoundShape{sim::MemKernel::RmsNormEager};
  norm.bytes = 2.0 * 8192 * 4096 * 2;
  const double fwd = h200_.compute_time(norm);
  norm.phase = sim::Phase::Backward;
  norm.recompute = true;
  EXPECT_DOUBLE_EQ(h200_.compute_time(norm), fwd);
  norm.recompute = false;
  EXPECT_GT(h200_.compute_time(norm), 1.2 * fwd);
}

// Block-scaled FP8 GEMMs are costed from the split-accumulation table in every phase, so their
// power-state ratio is that table's (gemm_fp8), not fast accumulation's.
TEST_F(KernelPhase, BlockScaledFp8TakesTheSplitAccumulationStateRatio) {
  sim::Op fwd = gemm(sim::DType::FP8, sim::Phase::Forward, false);
  const double tensor_fwd = h200_.sustained_state(fwd);
  const double split = h200_.sustained_state(gemm(sim::DType::FP8, sim::Phase::Backward, false));
  ASSERT_NE(tensor_fwd, split);
  std::get<sim::GemmShape>(fwd.shape).fp8_scaling = sim::Fp8Scaling::Block2D1D;
  EXPECT_DOUBLE_EQ(h200_.sustained_state(fwd), split);
}

sim::Op attn(std::int64_t heads, std::int64_t kv_heads, std::int64_t seq, int dq, int dv) {
  sim::Op op = testing::attention_op(heads, seq, false);
  auto& a = std::get<sim::AttentionShape>(op.shape);
  a.kv_heads = kv_heads;
  a.head_dim = dq;
  a.head_dim_v = dv;
  return op;
}

// Below the grid (seq under 512, heads under 4) the kernel does not fill the GPU and the table
// is flat: the edge's time is a floor. Scaled down by heads x seq^2 it came out 4x below the
// time the table measures for more work.
TEST_F(KernelPhase, AttentionBelowTheGridKeepsTheEdgesTime) {
  const double edge = measured_time("attention.csv", {{"backend", "cudnn"}, {"set", "gqa"}, {"direction", "fwd"},
                                                      {"heads", "32"}, {"seq", "512"}});
  EXPECT_NEAR(h200_.compute_time(attn(32, 4, 256, 128, 128)) / edge, 1.0, 1e-12);
  const double few = measured_time("attention.csv", {{"backend", "cudnn"}, {"set", "gqa"}, {"direction", "fwd"},
                                                     {"heads", "4"}, {"seq", "512"}});
  EXPECT_NEAR(h200_.compute_time(attn(2, 1, 256, 128, 128)) / few, 1.0, 1e-12);
  EXPECT_FALSE(h200_.out_of_grid().empty());
}

// Equal q/k and v widths of 256 take the GQA table scaled by (d + d_v) / 256; only unequal
// widths (MLA's 192/128) take the MLA table.
TEST_F(KernelPhase, EqualHeadWidthsAbove160StayOnTheGqaTable) {
  const double gqa = h200_.compute_time(attn(16, 2, 8192, 128, 128));
  EXPECT_NEAR(h200_.compute_time(attn(16, 2, 8192, 256, 256)) / gqa, 2.0, 1e-12);
  const double mla = h200_.compute_time(attn(16, 16, 8192, 192, 128));
  EXPECT_NE(mla / h200_.compute_time(attn(16, 16, 8192, 128, 128)), (192.0 + 128.0) / 256.0);
}

}  // namespace
}  // namespace clustersim::calib
