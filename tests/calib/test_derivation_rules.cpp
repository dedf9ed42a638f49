// Tests of the derivation rules of the measured cost model (calib/measured_tables.hpp): the GPUs
// it derives from the H200 tables, and a platform's own GPU figures scaling a rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <string>
#include <vector>

#include "calib/measured_cost_model.hpp"
#include "calib/roofline_cost_model.hpp"
#include "calib_test_util.hpp"

namespace clustersim::calib {
namespace {

using testing::gemm_op;
using testing::gpu;
using testing::mem_op;

class DerivationRules : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tables_ = MeasuredTables::load(default_measured_dir()); }
  static std::shared_ptr<const MeasuredTables> tables_;
  MeasuredCostModel h200_{gpu("H200-SXM", 4.8), tables_};
};
std::shared_ptr<const MeasuredTables> DerivationRules::tables_;

TEST_F(DerivationRules, DerivedGpusFollowTheirStatedRules) {
  const MeasuredCostModel h100(gpu("H100-SXM", 3.35), tables_);
  const MeasuredCostModel b200(gpu("B200", 7.7), tables_);
  const sim::Op g = gemm_op(8192, 8192, 8192, sim::DType::BF16, 1, 0, 0);
  const sim::Op m = mem_op(sim::MemKernel::Copy, 1e9);
  // The H100's ratios are measured (runs 85/87): GEMMs 0.982 (BF16) of the H200's time; its
  // memory-bound kernels are its own (MemoryBoundKernelsFromTheH100sOwnTable).
  const DerivationRule& h100_rule = derivation_rule("H100-SXM");
  EXPECT_NEAR(h100.compute_time(g) / h200_.compute_time(g), 0.982, 0.001);
  const sim::Op f8 = gemm_op(8192, 8192, 8192, sim::DType::FP8, 1, 0, 0);
  EXPECT_NEAR(h100.compute_time(f8) / h200_.compute_time(f8), 0.978, 0.001);
  EXPECT_DOUBLE_EQ(h100.compute_time(g) * h100_rule.gemm_bf16, h200_.compute_time(g));
  // 1 GB copies: 2.86 of HBM3's 3.35 TB/s against the H200's 4.0 of 4.8 (runs 85/87/92).
  EXPECT_NEAR(h100.compute_time(m) / h200_.compute_time(m), 1.397, 0.003);
  EXPECT_NEAR(h200_.compute_time(g) / b200.compute_time(g), 1745.0 / 794.5, 1e-12);
  EXPECT_NE(b200.describe().find("derived"), std::string::npos);
  EXPECT_NE(h200_.describe().find("measured"), std::string::npos);
  EXPECT_THROW(MeasuredCostModel(gpu("MI300X", 5.3), tables_), std::invalid_argument);
  // One line per op class, offload, interference, GEMMs under TP overlap, beside held SMs and
  // adding into main_grad, block-scaled FP8, TF32, kernels beside host copies (applied on the
  // H100, not on the B200) and the power state (likewise).
  EXPECT_EQ(h200_.table_sources().size(), 16u);
  const auto copies = [](const MeasuredCostModel& model) {
    return model.table_sources()[model.table_sources().size() - 2];
  };
  EXPECT_NE(copies(h100).find("kernels beside host copies"), std::string::npos);
  EXPECT_NE(copies(h100).find("applied unchanged"), std::string::npos);
  EXPECT_NE(copies(b200).find("not applied on this GPU"), std::string::npos);
  EXPECT_TRUE(b200.copy_kernel_delay(sim::ComputeClass::Gemm, true, true).none());
  EXPECT_DOUBLE_EQ(h100.copy_kernel_delay(sim::ComputeClass::Attention, true, false).share,
                   h200_.copy_kernel_delay(sim::ComputeClass::Attention, true, false).share);
  // The shares measured inside steps with paced copies (copy_pace_share.csv, runs 84, 88-91 and 97;
  // test_copy_pace.cpp), not the call-by-call lines (attention 11.5-14%, GEMMs 20-35 us a call).
  EXPECT_GT(h200_.copy_kernel_delay(sim::ComputeClass::Gemm, true, false).share, 0.005);
  EXPECT_EQ(h200_.copy_kernel_delay(sim::ComputeClass::Attention, true, false).share, 0.0);
  EXPECT_EQ(h200_.copy_kernel_delay(sim::ComputeClass::Gemm, true, true).fixed_s, 0.0);
  EXPECT_TRUE(h200_.copy_kernel_delay(sim::ComputeClass::Gemm, false, false).none());
  EXPECT_NE(h100.table_sources().back().find("same die and power limit"), std::string::npos);
  EXPECT_NE(b200.table_sources().back().find("not applied to B200"), std::string::npos);
  EXPECT_DOUBLE_EQ(b200.clock_boost(g, 0.5), 1.0);
  EXPECT_DOUBLE_EQ(h100.clock_boost(g, 0.5), h200_.clock_boost(g, 0.5));
  EXPECT_GT(h200_.clock_boost(g, 0.5), 1.05);
  EXPECT_DOUBLE_EQ(h200_.clock_boost(m, 0.5), 1.0);  // memory-bound ops keep their time
}

// The sustained-state ratio (table_state.csv) by op: FP8 forward GEMMs from the fast-accumulation
// kind, backward from split accumulation, BF16 from theirs; attention by direction at
// sqrt(seq_q x seq_kv); the H100 as the H200, the B200 (no power state measured) and
// memory-bound ops at 1.
TEST_F(DerivationRules, SustainedStateByOpKindOnTheGpusThatTakeThePowerState) {
  const MeasuredCostModel h100(gpu("H100-SXM", 3.35), tables_);
  const MeasuredCostModel b200(gpu("B200", 7.7), tables_);
  const PowerBoostTable& t = tables_->power_boost();
  const sim::Op fwd = gemm_op(8192, 8192, 8192, sim::DType::FP8, 1, 0, 0);
  const sim::Op bwd = gemm_op(8192, 8192, 8192, sim::DType::FP8, 1, 0, 0, sim::Phase::Backward);
  const sim::Op bf16 = gemm_op(8192, 8192, 8192, sim::DType::BF16, 1, 0, 0);
  EXPECT_DOUBLE_EQ(h200_.sustained_state(fwd), t.state("gemm_fp8_fastacc"));
  EXPECT_DOUBLE_EQ(h200_.sustained_state(bwd), t.state("gemm_fp8"));
  EXPECT_DOUBLE_EQ(h200_.sustained_state(bf16), t.state("gemm_bf16"));
  EXPECT_NE(t.state("gemm_fp8_fastacc"), t.state("gemm_fp8"));
  sim::Op attn;
  attn.shape = sim::AttentionShape{1, 16, 2, 2048, 8192, 128, 128, false, true, sim::DType::BF16};
  EXPECT_DOUBLE_EQ(h200_.sustained_state(attn), t.state("attention_bwd", 4096.0));
  EXPECT_DOUBLE_EQ(h100.sustained_state(attn), h200_.sustained_state(attn));
  EXPECT_DOUBLE_EQ(b200.sustained_state(fwd), 1.0);
  EXPECT_DOUBLE_EQ(h200_.sustained_state(mem_op(sim::MemKernel::Copy, 1e9)), 1.0);
  // FlashAttention-2 takes its own rows (runs 52-53), not cuDNN's.
  std::get<sim::AttentionShape>(attn.shape).kernel = sim::AttentionKernel::Flash2;
  EXPECT_DOUBLE_EQ(h200_.sustained_state(attn), t.state("attention_flash2_bwd", 4096.0));
  EXPECT_NE(t.state("attention_flash2_bwd", 4096.0), t.state("attention_bwd", 4096.0));
}

// FlashAttention-2's tables hold for the H200 and, same die, the H100; the B200's rule derives
// cuDNN's attention only, so flash2 there is an error that says so.
TEST_F(DerivationRules, FlashAttention2OnlyWhereItsTablesHold) {
  const MeasuredCostModel h100(gpu("H100-SXM", 3.35), tables_);
  const MeasuredCostModel b200(gpu("B200", 7.7), tables_);
  sim::Op attn;
  attn.shape = sim::AttentionShape{1, 16, 2, 8192, 8192, 128, 128, true, false, sim::DType::BF16,
                                   sim::AttentionKernel::Flash2};
  EXPECT_DOUBLE_EQ(h100.compute_time(attn), h200_.compute_time(attn));
  try {
    b200.compute_time(attn);
    ADD_FAILURE() << "B200 costed FlashAttention-2";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("flash2"), std::string::npos) << e.what();
  }
}

// A memory-bound call's floor (its launch and DRAM latency; calibration run 62: flat up to
// ~0.5 MiB) does not scale with HBM bandwidth: a call at the floor costs the same on the B200 as
// on the H200, and above it only the time beyond the floor scales (a rule that scaled the whole
// time would make a 32 KiB copy 38% faster on the B200).
TEST_F(DerivationRules, MemoryBoundFloorDoesNotScaleWithHbmBandwidth) {
  const MeasuredCostModel b200(gpu("B200", 7.7), tables_);
  const LogGrid& copy = tables_->grid("membound/copy");
  const double floor = copy.node_time(0);
  for (double bytes : {copy.axis(0).front(), copy.axis(0).front() / 4}) {
    EXPECT_DOUBLE_EQ(b200.compute_time(mem_op(sim::MemKernel::Copy, bytes)), floor) << bytes;
  }
  for (double bytes : {4e6, 64e6, 4e9}) {
    const double t = h200_.compute_time(mem_op(sim::MemKernel::Copy, bytes));
    EXPECT_NEAR(b200.compute_time(mem_op(sim::MemKernel::Copy, bytes)),
                floor + (t - floor) * 4.8 / 7.7, 1e-12 * t) << bytes;
  }
  // Eager modules take the same rule over their own floor.
  const LogGrid& eager = tables_->grid("membound/rmsnorm_eager_fwd");
  sim::Op e = mem_op(sim::MemKernel::RmsNormEager, 64e6);
  const double te = h200_.compute_time(e), fe = eager.node_time(0);
  EXPECT_NEAR(b200.compute_time(e), fe + (te - fe) * 4.8 / 7.7, 1e-12 * te);
}

// A platform that states other figures for a known GPU (its own file, or cluster.overrides)
// scales the rule by them: a user who gives an H100 twice the HBM bandwidth or half the BF16
// peak must see memory-bound kernels twice as fast or BF16 GEMMs twice as slow, not the
// catalog H100's times.
TEST_F(DerivationRules, PlatformFiguresScaleTheRuleWhereTheyDifferFromItsDatasheet) {
  const MeasuredCostModel h100(gpu("H100-SXM", 3.35), tables_);
  sim::GpuSpec fast_hbm = gpu("H100-SXM", 6.7);
  sim::GpuSpec half_bf16 = gpu("H100-SXM", 3.35);
  half_bf16.peak_bf16 = {494.5e12};
  const MeasuredCostModel hbm2(fast_hbm, tables_), bf16_half(half_bf16, tables_);
  const sim::Op g = gemm_op(8192, 8192, 8192, sim::DType::BF16, 1, 0, 0);
  const sim::Op f = gemm_op(8192, 8192, 8192, sim::DType::FP8, 1, 0, 0);
  const sim::Op m = mem_op(sim::MemKernel::Copy, 1e9);
  // The H100's own table (MemoryBoundKernelsFromTheH100sOwnTable) scales the same way.
  const double own_floor = load_membound_grids(calib_data_dir() + "/h100/membound.csv")
                               .at("membound/copy").node_time(0);
  EXPECT_NEAR((h100.compute_time(m) - own_floor) / (hbm2.compute_time(m) - own_floor), 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(hbm2.compute_time(mem_op(sim::MemKernel::Copy, 32768)), own_floor);  // its floor stays
  const double floor = tables_->grid("membound/copy").node_time(0);
  EXPECT_DOUBLE_EQ(hbm2.compute_time(g), h100.compute_time(g));
  EXPECT_NEAR(bf16_half.compute_time(g) / h100.compute_time(g), 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(bf16_half.compute_time(f), h100.compute_time(f));  // FP8 peak unchanged
  EXPECT_DOUBLE_EQ(bf16_half.compute_time(m), h100.compute_time(m));
  // Catalog figures keep the rule exactly, and say nothing; others are stated.
  EXPECT_TRUE(h100.scale().note.empty());
  EXPECT_DOUBLE_EQ(h100.scale().memory, derivation_rule("H100-SXM").memory);
  EXPECT_NE(hbm2.describe().find("hbm_bandwidth 6.7 TB/s vs the rule's 3.35"), std::string::npos);
  EXPECT_NE(bf16_half.table_sources().back().find("GEMM BF16 and attention x0.5"), std::string::npos);
  // The B200 rule's HBM is the HGX B200 datasheet's 7.7 TB/s, as platforms/catalog/hgx_b200.yaml.
  const MeasuredCostModel b200(gpu("B200", 7.7), tables_);
  EXPECT_TRUE(b200.scale().note.empty());
  EXPECT_NEAR((h200_.compute_time(m) - floor) / (b200.compute_time(m) - floor), 7.7 / 4.8, 1e-12);
  // Another power limit is stated, not modelled: nothing was measured under it.
  sim::GpuSpec capped = gpu("H100-SXM", 3.35);
  capped.tdp = {500.0};
  const MeasuredCostModel h100_500w(capped, tables_);
  EXPECT_DOUBLE_EQ(h100_500w.compute_time(g), h100.compute_time(g));
  EXPECT_NE(h100_500w.describe().find("tdp 500 W vs the rule's 700: kernel times not scaled"),
            std::string::npos);
  sim::GpuSpec zero = gpu("H100-SXM", 3.35);
  zero.hbm_bandwidth = {0.0};
  EXPECT_THROW(MeasuredCostModel(zero, tables_), std::invalid_argument);
}

// The H100's memory-bound kernels are its own (calib/data/h100/membound.csv, the geometric mean
// of runs 85, 87 and run 92's two passes; membound_eager.csv, run 94's two), read at their nodes
// as measured, where the tables are the repository's: between ~1 and 256 MiB the H100 is less
// than 4.8/3.35 slower (a 16 MiB copy 1.23-1.27x the H200's time in all four passes, where x1.397
// above the floor would give 1.30x; transformers' eager RoPE, launch-bound, 1.01-1.10x at every
// size). With another data directory the rule's ratio applies to all of them.
TEST_F(DerivationRules, MemoryBoundKernelsFromTheH100sOwnTable) {
  const MeasuredCostModel h100(gpu("H100-SXM", 3.35), tables_);
  ASSERT_TRUE(h100.has_own_membound());
  EXPECT_FALSE(h200_.has_own_membound());
  const auto own = load_membound_grids(calib_data_dir() + "/h100/membound.csv");
  ASSERT_EQ(own.size(), 8u);
  const LogGrid& copy = own.at("membound/copy");
  for (std::size_t i = 0; i < copy.size(); ++i) {
    const double bytes = copy.node_coords(i)[0];
    EXPECT_DOUBLE_EQ(h100.compute_time(mem_op(sim::MemKernel::Copy, bytes)), copy.node_time(i)) << bytes;
  }
  const double norm = std::sqrt(own.at("membound/rmsnorm").time_at({4194304.0}) *
                                own.at("membound/layernorm").time_at({4194304.0}));
  EXPECT_NEAR(h100.compute_time(mem_op(sim::MemKernel::Norm, 4194304.0)), norm, 1e-12 * norm);
  const double mid = 16777216.0, h200_floor = tables_->grid("membound/copy").node_time(0);
  const double t200 = h200_.compute_time(mem_op(sim::MemKernel::Copy, mid));
  const double by_ratio = h200_floor + (t200 - h200_floor) / derivation_rule("H100-SXM").memory;
  const double t100 = h100.compute_time(mem_op(sim::MemKernel::Copy, mid));
  EXPECT_GT(t100 / t200, 1.22);
  EXPECT_LT(t100 / t200, 1.28);
  EXPECT_LT(t100, by_ratio * 0.97);
  const auto sources = h100.table_sources();
  EXPECT_TRUE(std::any_of(sources.begin(), sources.end(), [](const std::string& l) {
    return l.find("h100/membound.csv, measured on H100-SXM") != std::string::npos;
  }));
  // The eager modules (run 94): transformers' RoPE at 1 GiB of the fused op's bytes, backward.
  const auto eager = load_membound_grids(calib_data_dir() + "/h100/membound_eager.csv");
  const LogGrid& rope = eager.at("membound/rope_eager_bwd");
  sim::Op e = mem_op(sim::MemKernel::RopeEager, 1 << 30);
  e.phase = sim::Phase::Backward;
  const double rope_h100 = h100.compute_time(e), rope_h200 = h200_.compute_time(e);
  EXPECT_DOUBLE_EQ(rope_h100, rope.time_at({1 << 30}));
  EXPECT_GT(rope_h100 / rope_h200, 1.02);
  EXPECT_LT(rope_h100 / rope_h200, 1.15);  // the copies' ratio would charge ~1.39
  EXPECT_TRUE(std::any_of(sources.begin(), sources.end(), [](const std::string& l) {
    return l.find("h100/membound_eager.csv, measured on H100-SXM") != std::string::npos;
  }));
  // Tables of another directory (here a copy of the repository's): the rule's ratio.
  const auto other = testing::tables_without("gemm_long_tokens.csv");
  const MeasuredCostModel h100_other(gpu("H100-SXM", 3.35), other);
  EXPECT_FALSE(h100_other.has_own_membound());
  EXPECT_NE(h100_other.describe().find("own memory-bound tables not read"), std::string::npos);
  EXPECT_EQ(h100.describe().find("own memory-bound tables not read"), std::string::npos);
  EXPECT_NEAR(h100_other.compute_time(mem_op(sim::MemKernel::Copy, mid)), by_ratio, 1e-12 * by_ratio);
  EXPECT_GT(h100_other.compute_time(e) / rope_h200, 1.3);
}

// The H100 rule against an H100 (calibration runs 85 and 87, calib/data/h100/run85/ and run87/,
// the same probes and procedures as the H200 tables; the rule's factors are those runs' GEMMs in
// the sustained state and copies of >= 256 MiB): at the catalog's 77 shapes at the tables'
// procedure (BF16 forward; FP8 with split accumulation, which the model gives backward GEMMs) the
// derived model within its stated GEMM bound at the median and 15% at every shape (one FP8 shape, m 8192
// n 16384, is 12-13% fast in both runs: there the H100 took 1.08-1.09x the H200's time), its
// copies and AdamW updates of >= 256 MiB (now from the H100's own table, which averages these
// runs) within 2% (2026-12-05: medians BF16 +0.8% / +0.9%, FP8
// -1.8% / -1.2%; the former rule, the H200's GEMM times and memory-bound kernels 4.8/3.35 as
// long, was +2.7% for BF16 at run 85's median and +2.6% for copies). Runs 98 and 100 (2026-12-06,
// a third and a fourth H100 lease, the same script) set nothing in the rule or the tables:
// held-out checks of the stated bounds on other machines (medians BF16 -0.03% / +0.22%, FP8
// -2.05% / -1.52%). Its FP8 median, -2.05%, lay outside the +-2% the rule had
// stated from runs 85 and 87 (-1.8 / -1.2%), so the stated GEMM bound became +-2.5%.
TEST_F(DerivationRules, H100RuleHoldsAgainstFourH100RunsWithinItsStatedUncertainty) {
  const MeasuredCostModel h100(gpu("H100-SXM", 3.35), tables_);
  for (const std::string run : {"run85", "run87", "run98", "run100"}) {
    const std::string dir = default_measured_dir() + "/../h100/" + run + "/";
    const CsvTable gemm = read_csv(dir + "gemm_catalog.csv");
    for (const std::string dtype : {"bf16", "fp8"}) {
      std::vector<double> errors;
      for (std::size_t r = 0; r < gemm.rows.size(); ++r) {
        if (gemm.text(r, gemm.column("dtype")) != dtype) continue;
        const auto dim = [&](const char* c) { return static_cast<std::int64_t>(gemm.number(r, gemm.column(c))); };
        const bool fp8 = dtype == "fp8";
        const sim::Op op = gemm_op(dim("m"), dim("n"), dim("k"), fp8 ? sim::DType::FP8 : sim::DType::BF16, 1, 0,
                                   0, fp8 ? sim::Phase::Backward : sim::Phase::Forward);
        errors.push_back(h100.compute_time(op) / gemm.number(r, gemm.column("time_s")) - 1.0);
        EXPECT_NEAR(errors.back(), 0.0, 0.15) << run << " " << dtype << " m=" << dim("m") << " n=" << dim("n");
      }
      ASSERT_EQ(errors.size(), 77u) << run << " " << dtype;
      std::sort(errors.begin(), errors.end());
      const sim::RelativeBounds stated = h100.uncertainty().compute[0];
      EXPECT_GE(errors[errors.size() / 2], stated.lo) << run << " " << dtype;
      EXPECT_LE(errors[errors.size() / 2], stated.hi) << run << " " << dtype;
    }
    const CsvTable mem = read_csv(dir + "membound.csv");
    int copies = 0, adamw = 0;
    for (std::size_t r = 0; r < mem.rows.size(); ++r) {
      const double bytes = mem.number(r, mem.column("bytes"));
      const std::string kernel = mem.text(r, mem.column("kernel"));
      if (bytes < 256.0 * (1 << 20) || (kernel != "copy" && kernel != "adamw")) continue;
      const bool copy = kernel == "copy";
      const sim::Op op = mem_op(copy ? sim::MemKernel::Copy : sim::MemKernel::Optimizer, bytes);
      EXPECT_NEAR(h100.compute_time(op) / mem.number(r, mem.column("time_s")), 1.0, 0.02)
          << run << " " << kernel << " " << bytes;
      ++(copy ? copies : adamw);
    }
    EXPECT_EQ(copies, 9) << run;
    EXPECT_EQ(adamw, 8) << run;
  }
}

// Weight gradients added into main_grad on the H100 (calibration run 93, two passes of run 48's
// probe, calib/data/h100/run93/): the extra time the model charges for the accumulation (the
// H200's measured extra x1.397, main_grad's HBM traffic scaled as memory-bound kernels) added to
// the H100's own plain GEMM of the same pass is within 2% of its accumulating GEMM at the median
// of the 125 shapes, for each dtype, main_grad type and pass (2026-12-05: +0.1..+1.5%). Charging
// the extra x1 (no HBM scaling) puts FP8 into FP32 at -3.5%, x2 BF16 into FP32 at +8%, none -13%.
TEST_F(DerivationRules, H100WeightGradientsIntoMainGradAgainstRun93) {
  const MeasuredCostModel h100(gpu("H100-SXM", 3.35), tables_);
  for (const std::string pass : {"pass_1", "pass_2"}) {
    const std::string dir = calib_data_dir() + "/h100/run93/" + pass + "/";
    for (const std::string dtype : {"bf16", "fp8"}) {
      const CsvTable plain = read_csv(dir + dtype + "_plain.csv");
      for (const std::string target : {"f32", "bf16"}) {
        const CsvTable acc = read_csv(dir + dtype + "_accum_" + target + ".csv");
        ASSERT_EQ(acc.rows.size(), plain.rows.size());
        std::vector<double> errors;
        for (std::size_t r = 0; r < acc.rows.size(); ++r) {
          const auto dim = [&](const char* c) { return static_cast<std::int64_t>(acc.number(r, acc.column(c))); };
          for (const char* c : {"m", "n", "k"}) ASSERT_EQ(plain.number(r, plain.column(c)), dim(c)) << r;
          // The table's (out, in, tokens) is the trace's weight gradient (in, out, tokens).
          sim::Op op = gemm_op(dim("n"), dim("m"), dim("k"), dtype == "fp8" ? sim::DType::FP8 : sim::DType::BF16,
                               1, 0, 0, sim::Phase::Backward);
          const double without = h100.compute_time(op);
          std::get<sim::GemmShape>(op.shape).grad_accum = target == "f32" ? sim::GradAccum::F32 : sim::GradAccum::BF16;
          const double extra = h100.compute_time(op) - without;
          errors.push_back((plain.number(r, plain.column("time_s")) + extra) / acc.number(r, acc.column("time_s")) - 1.0);
        }
        ASSERT_EQ(errors.size(), 125u) << pass << " " << dtype << " " << target;
        std::sort(errors.begin(), errors.end());
        EXPECT_NEAR(errors[errors.size() / 2], 0.0, 0.02) << pass << " " << dtype << " into " << target;
      }
    }
  }
}

}  // namespace
}  // namespace clustersim::calib

namespace clustersim::calib {
namespace {

// Each rule states its uncertainty as numbers the band can play (docs/cost-model.md, "Stated
// uncertainty"): every class bounded, lo <= 0 <= hi, and a GPU derived from MAMF ratios no
// surer than the GPUs measured by the probes.
TEST(StatedUncertainty, EveryRuleBoundsEveryClassAndDerivedGpusAreNoSurerThanMeasuredOnes) {
  const auto width = [](const sim::RelativeBounds& b) { return b.hi - b.lo; };
  const sim::CostUncertainty h200 = derivation_rule("H200-SXM").uncertainty;
  for (const std::string& name : measured_model_gpus()) {
    const sim::CostUncertainty u = derivation_rule(name).uncertainty;
    ASSERT_TRUE(u.stated) << name;
    EXPECT_FALSE(u.basis.empty()) << name;
    for (const auto& b : u.compute) {
      EXPECT_LE(b.lo, 0.0) << name;
      EXPECT_GE(b.hi, 0.0) << name;
      EXPECT_GT(width(b), 0.0) << name;
    }
    EXPECT_GT(width(u.network), 0.0) << name;
    if (name == "H200-SXM" || name == "H100-SXM") continue;
    for (int c = 0; c < sim::kComputeClassCount; ++c) {
      EXPECT_GE(width(u.compute[c]), width(h200.compute[c])) << name << " class " << c;
    }
  }
  // The text a report prints is the numbers'.
  const std::string text = uncertainty_text(derivation_rule("B300").uncertainty);
  EXPECT_NE(text.find("GEMM +-10.0%, attention -30.0%..+20.0%, memory-bound +-10.0%"),
            std::string::npos)
      << text;
  EXPECT_EQ(uncertainty_text(sim::CostUncertainty{}), "none stated");
}

TEST(StatedUncertainty, TheMeasuredModelAnswersItsRulesBoundsAndTheRooflineNone) {
  const auto tables = MeasuredTables::load(default_measured_dir());
  const MeasuredCostModel b200(testing::gpu("B200", 7.7), tables);
  EXPECT_DOUBLE_EQ(b200.uncertainty().compute[1].hi, 0.20);
  EXPECT_NE(b200.describe().find("uncertainty GEMM +-10.0%"), std::string::npos) << b200.describe();
  EXPECT_FALSE(RooflineCostModel(testing::gpu("H100-SXM", 3.35)).uncertainty().stated);
}

}  // namespace
}  // namespace clustersim::calib
