// Transformer Engine's FP8 amax reductions (generator.cpp, AmaxReductions): one all-reduce over
// Megatron's amax group when each model chunk's forward ends and one when its backward ends.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "sim/spec_error.hpp"
#include "workloads/generator.hpp"
#include "workloads/memory.hpp"
#include "workload_test_util.hpp"

namespace clustersim::workloads {
namespace {

using testing::parse_job;
using testing::small_llama_job;

std::string label(const sim::Program& p, const sim::Op& op) { return p.labels[op.label]; }

std::vector<std::uint32_t> ops_labelled(const sim::Program& p, const std::string& name) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < p.ops.size(); ++i) {
    if (label(p, p.ops[i]) == name) out.push_back(i);
  }
  return out;
}

// 4 layers, tp 2 x pp 2 x dp 2, interleaved with vp 2 (one layer per chunk), 4 microbatches.
std::string interleaved_fp8_job(const std::string& extra_training = "") {
  std::string job = small_llama_job(2, 2, 2, true, 8, 1, "fp8") + extra_training;
  job.replace(job.find("  sequence_parallel"), 0, "  vp: 2\n  schedule: interleaved\n");
  return job;
}

TEST(Fp8Amax, OneReductionPerChunkPassOverTheAmaxGroup) {
  const sim::Workload w = generate_workload(parse_job(interleaved_fp8_job(), 8));
  for (const sim::Program& p : w.programs) {
    const auto fwd = ops_labelled(p, "fp8_amax_fwd");
    const auto bwd = ops_labelled(p, "fp8_amax_bwd");
    // 4 microbatches x 2 chunks, each forward and each backward once.
    ASSERT_EQ(fwd.size(), 8u);
    ASSERT_EQ(bwd.size(), 8u);
    for (const auto& list : {fwd, bwd}) {
      for (std::uint32_t i : list) {
        const sim::Op& op = p.ops[i];
        const auto& c = std::get<sim::CollectiveSpec>(op.shape);
        EXPECT_EQ(c.kind, sim::CollectiveKind::AllReduce);
        EXPECT_EQ(c.group, sim::GroupKind::AMAX);
        EXPECT_EQ(op.stream, sim::Stream::AmaxComm);
        EXPECT_FALSE(op.recompute);
      }
    }
    // One layer of 4 FP8 GEMMs per chunk: 3 FP32 amaxes per GEMM forward, 2 backward.
    EXPECT_DOUBLE_EQ(p.ops[fwd[0]].bytes, 4 * 3 * 4.0);
    EXPECT_DOUBLE_EQ(p.ops[bwd[0]].bytes, 4 * 2 * 4.0);
  }
  // The amax group is the tp x cp x dp ranks of a pipeline stage.
  EXPECT_EQ(w.layout.group(0, sim::GroupKind::AMAX), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(w.layout.group(6, sim::GroupKind::AMAX), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(w.layout.coord(6, sim::GroupKind::AMAX), 2);
}

TEST(Fp8Amax, TheComputeStreamWaitsForEachReduction) {
  const sim::Workload w = generate_workload(parse_job(interleaved_fp8_job(), 8));
  const sim::Program& p = w.programs[0];
  for (const std::string name : {"fp8_amax_fwd", "fp8_amax_bwd"}) {
    for (std::uint32_t i : ops_labelled(p, name)) {
      // Launched after the chunk's last compute op...
      ASSERT_EQ(p.ops[i].deps.size(), 1u);
      EXPECT_EQ(p.ops[p.ops[i].deps[0]].stream, sim::Stream::Compute);
      // ...and the next compute op depends on it.
      std::uint32_t next = i + 1;
      while (next < p.ops.size() && p.ops[next].stream != sim::Stream::Compute) ++next;
      if (next == p.ops.size()) continue;
      const auto& deps = p.ops[next].deps;
      EXPECT_NE(std::find(deps.begin(), deps.end(), i), deps.end()) << name << " " << i;
    }
  }
}

TEST(Fp8Amax, NoReductionWithBf16WithoutAGroupOrWhenSwitchedOff) {
  auto count = [](const sim::Workload& w) {
    std::size_t n = 0;
    for (const auto& p : w.programs) n += ops_labelled(p, "fp8_amax_fwd").size();
    return n;
  };
  EXPECT_EQ(count(generate_workload(parse_job(small_llama_job(2, 2, 2, true, 8, 1), 8))), 0u);
  // A single GPU per stage has nothing to reduce with.
  EXPECT_EQ(count(generate_workload(parse_job(small_llama_job(1, 2, 1, false, 4, 1, "fp8"), 2))), 0u);
  EXPECT_EQ(count(generate_workload(parse_job(interleaved_fp8_job("  fp8_reduce_amax: false\n"), 8))),
            0u);
  EXPECT_GT(count(generate_workload(parse_job(interleaved_fp8_job("  fp8_reduce_amax: true\n"), 8))),
            0u);
}

TEST(Fp8Amax, TheSwitchNeedsFp8) {
  try {
    parse_job(small_llama_job(2, 2, 2, true, 8, 1) + "  fp8_reduce_amax: false\n", 8);
    ADD_FAILURE() << "accepted fp8_reduce_amax with bf16";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field(), "training.fp8_reduce_amax") << e.what();
    EXPECT_NE(e.reason().find("needs precision: fp8"), std::string::npos) << e.what();
  }
}

// The amax group is a process group of its own, so its NCCL communicator holds memory.
TEST(Fp8Amax, TheAmaxCommunicatorIsCountedInMemory) {
  auto nccl = [](const std::string& job) {
    return estimate_memory(parse_job(job, 8), 80.0 * (1u << 30)).stages.at(0).bytes("nccl");
  };
  const double on = nccl(interleaved_fp8_job());
  const double off = nccl(interleaved_fp8_job("  fp8_reduce_amax: false\n"));
  EXPECT_NEAR(on - off, 486.0 * 1024 * 1024, 1.0);
}

}  // namespace
}  // namespace clustersim::workloads
