// training.elementwise: which kernels the layer's element-wise work becomes (fused Megatron/TE
// kernels, or Hugging Face's eager modules), their bytes, the trace round trip and rejections.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <variant>

#include "sim/spec_error.hpp"
#include "workloads/generator.hpp"
#include "workloads/trace_io.hpp"
#include "workload_test_util.hpp"

namespace clustersim::workloads {
namespace {

// (kernel, bytes) of the first memory-bound op of each label on rank 0, and the op count.
struct MemOps {
  std::map<std::string, std::pair<sim::MemKernel, double>> first;
  std::size_t ops = 0;
};

MemOps mem_ops(const std::string& yaml) {
  const sim::Workload w = generate_workload(testing::parse_job(yaml, 1));
  MemOps out;
  const sim::Program& p = w.programs[0];
  out.ops = p.ops.size();
  for (const auto& op : p.ops) {
    if (const auto* m = std::get_if<sim::MemBoundShape>(&op.shape)) {
      out.first.emplace(p.labels[op.label], std::make_pair(m->kernel, op.bytes));
    }
  }
  return out;
}

std::string with(const std::string& job, const std::string& line) {
  std::string y = job;
  y.replace(y.find("  precision:"), 0, line);
  return y;
}

TEST(EagerElementwise, LlamaModulesBecomeTheirEagerKernelsWithTheFusedBytes) {
  const std::string job = testing::small_llama_job(1, 1, 1, false, 1, 1);
  const MemOps fused = mem_ops(job), eager = mem_ops(with(job, "  elementwise: eager\n"));
  using K = sim::MemKernel;
  const std::map<std::string, std::pair<K, K>> expect = {
      {"norm", {K::Norm, K::RmsNormEager}},       {"norm_bwd", {K::Norm, K::RmsNormEager}},
      {"final_norm", {K::Norm, K::RmsNormEager}}, {"rope", {K::Rope, K::RopeEager}},
      {"rope_bwd", {K::Rope, K::RopeEager}},      {"act", {K::Activation, K::SwigluEager}},
      {"act_bwd", {K::Activation, K::SwigluEager}}, {"residual", {K::Elementwise, K::Elementwise}}};
  for (const auto& [label, kinds] : expect) {
    ASSERT_TRUE(fused.first.count(label) && eager.first.count(label)) << label;
    EXPECT_EQ(fused.first.at(label).first, kinds.first) << label;
    EXPECT_EQ(eager.first.at(label).first, kinds.second) << label;
    // The tables are keyed by the fused op's bytes.
    EXPECT_EQ(eager.first.at(label).second, fused.first.at(label).second) << label;
  }
  // HF's attention output transpose to contiguous, forward and backward: one copy per layer
  // pass of [tokens, heads * head_dim] (128 x 8 x 32 BF16, read and written).
  EXPECT_FALSE(fused.first.count("attn_out_transpose"));
  ASSERT_TRUE(eager.first.count("attn_out_transpose"));
  EXPECT_EQ(eager.first.at("attn_out_transpose").first, K::Copy);
  EXPECT_DOUBLE_EQ(eager.first.at("attn_out_transpose").second, 2.0 * 128 * 256 * 2);
  EXPECT_TRUE(eager.first.count("attn_out_transpose_bwd"));
  EXPECT_EQ(eager.ops, fused.ops + 2 * 4);  // 4 layers
}

TEST(EagerElementwise, LayerNormAndGeluStaySingleKernels) {
  std::string job = testing::small_llama_job(1, 1, 1, false, 1, 1);
  job.replace(job.find("swiglu"), 6, "gelu");
  job.replace(job.find("rmsnorm"), 7, "layernorm");
  const MemOps eager = mem_ops(with(job, "  elementwise: eager\n"));
  EXPECT_EQ(eager.first.at("norm").first, sim::MemKernel::Norm);
  EXPECT_EQ(eager.first.at("act").first, sim::MemKernel::Activation);
  EXPECT_EQ(eager.first.at("rope").first, sim::MemKernel::RopeEager);
}

TEST(EagerElementwise, EagerKernelsRoundTripThroughTheTraceFormat) {
  const sim::Workload w = generate_workload(
      testing::parse_job(with(testing::small_llama_job(1, 1, 1, false, 1, 1), "  elementwise: eager\n"), 1));
  std::ostringstream out;
  write_rank_trace(out, w, 0);
  for (const char* k : {"\"rmsnorm_eager\"", "\"rope_eager\"", "\"swiglu_eager\""}) {
    EXPECT_NE(out.str().find(k), std::string::npos) << k;
  }
  std::istringstream in(out.str());
  const RankTrace t = read_rank_trace(in, "eager.jsonl");
  ASSERT_EQ(t.program.ops.size(), w.programs[0].ops.size());
  for (std::size_t i = 0; i < t.program.ops.size(); ++i) {
    const auto* a = std::get_if<sim::MemBoundShape>(&w.programs[0].ops[i].shape);
    if (a != nullptr) {
      EXPECT_EQ(std::get<sim::MemBoundShape>(t.program.ops[i].shape).kernel, a->kernel) << i;
    }
  }
}

// training.cross_entropy sets the loss kernels' bytes, not only the memory they hold: Megatron's
// unfused loss 38 + 14 B per logit, TE's fused kernels what the calibrated fused kernel moves (4
// B, a third of it in the forward), Liger's chunked loss all of it in the forward and no
// backward kernel, transformers' loss run 29's measured time (18.4 + 17.4 B at that kernel's
// bandwidth).
TEST(EagerElementwise, TheLossImplementationSetsItsKernelBytes) {
  const std::string job = testing::small_llama_job(1, 1, 1, false, 1, 1);
  auto loss = [&](const std::string& ce) {
    const MemOps m = mem_ops(with(job, "  cross_entropy: " + ce + "\n"));
    const double fwd = m.first.at("cross_entropy").second;
    const double bwd = m.first.count("cross_entropy_bwd") ? m.first.at("cross_entropy_bwd").second : 0.0;
    return std::make_pair(fwd, bwd);
  };
  const auto unfused = loss("unfused"), fused = loss("fused"), chunked = loss("chunked"), eager = loss("eager");
  const double logits = unfused.first / 38.0;
  EXPECT_GT(logits, 0.0);
  EXPECT_DOUBLE_EQ(unfused.second, 14.0 * logits);
  EXPECT_DOUBLE_EQ(fused.first, 4.0 / 3.0 * logits);
  EXPECT_DOUBLE_EQ(fused.second, 8.0 / 3.0 * logits);
  EXPECT_DOUBLE_EQ(chunked.first, 4.0 * logits);
  EXPECT_DOUBLE_EQ(chunked.second, 0.0);
  EXPECT_DOUBLE_EQ(eager.first, 18.4 * logits);
  EXPECT_DOUBLE_EQ(eager.second, 17.4 * logits);
}

TEST(EagerElementwise, AnUnknownValueIsRejectedWithItsField) {
  try {
    testing::parse_job(with(testing::small_llama_job(1, 1, 1, false, 1, 1), "  elementwise: lazy\n"), 1);
    ADD_FAILURE() << "accepted elementwise: lazy";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field(), "training.elementwise") << e.what();
    EXPECT_NE(std::string(e.what()).find("fused"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace clustersim::workloads
