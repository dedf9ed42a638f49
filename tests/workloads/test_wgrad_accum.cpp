// Gradient accumulation fusion: which weight gradients the job adds into main_grad
// (parallelism.gradient_accumulation_fusion, grad_reduce_in_fp32), and the job errors around it.
#include <gtest/gtest.h>

#include <string>

#include "sim/spec_error.hpp"
#include "workloads/generator.hpp"
#include "workload_test_util.hpp"

namespace clustersim::workloads {
namespace {

using testing::parse_job;

// The small Llama job (TP2, DP1, SP) with `lines` added to its parallelism block.
std::string job(const std::string& lines) {
  std::string yaml = testing::small_llama_job(2, 1, 1, true, 2, 1);
  return yaml.replace(yaml.find("parallelism:\n") + 13, 0, lines);
}

// grad_accum of every backward GEMM whose label ends in "_wgrad", counted by value.
std::map<sim::GradAccum, int> wgrad_accums(const std::string& yaml, std::string* router = nullptr) {
  const sim::Workload w = generate_workload(parse_job(yaml, 2));
  const sim::Program& p = w.programs[0];
  std::map<sim::GradAccum, int> count;
  for (const auto& op : p.ops) {
    const auto* g = std::get_if<sim::GemmShape>(&op.shape);
    const std::string& label = p.labels[op.label];
    const bool is_wgrad = label.size() > 6 && label.compare(label.size() - 6, 6, "_wgrad") == 0;
    if (g == nullptr) continue;
    if (!is_wgrad) {
      EXPECT_EQ(g->grad_accum, sim::GradAccum::None) << label;
      continue;
    }
    ++count[g->grad_accum];
    // The op's bytes carry main_grad's traffic: read and written (F32 8 B, BF16 4 B) or written.
    const double elems = static_cast<double>(g->m) * static_cast<double>(g->n);
    const double in = (static_cast<double>(g->m) + static_cast<double>(g->n)) * static_cast<double>(g->k) *
                      sim::dtype_bytes(g->dtype);
    const double out = g->grad_accum == sim::GradAccum::F32 ? 8.0 : g->grad_accum == sim::GradAccum::BF16 ? 4.0 : 2.0;
    EXPECT_DOUBLE_EQ(op.bytes, in + elems * out) << label;
    if (router != nullptr && label == "router_wgrad") *router = sim::to_string(g->grad_accum);
  }
  return count;
}

TEST(GradAccumFusion, MegatronsDefaultAddsEveryLinearsWeightGradientIntoFp32MainGrad) {
  const auto c = wgrad_accums(job(""));
  // 4 layers x (qkv, proj, fc1, fc2) + the output layer, in each of the 2 microbatches.
  EXPECT_EQ(c.count(sim::GradAccum::None), 0u);
  EXPECT_EQ(c.at(sim::GradAccum::F32), 2 * (4 * 4 + 1));
}

TEST(GradAccumFusion, Bf16GradientReductionAccumulatesInBf16) {
  const auto c = wgrad_accums(job("  grad_reduce_in_fp32: false\n"));
  EXPECT_EQ(c.count(sim::GradAccum::F32), 0u);
  EXPECT_EQ(c.at(sim::GradAccum::BF16), 34);
}

TEST(GradAccumFusion, OffOrZeroStageTwoWritesNewGradientTensors) {
  for (const char* lines : {"  gradient_accumulation_fusion: false\n", "  zero_stage: 2\n",
                            "  zero_stage: 3\n", "  fsdp: true\n"}) {
    const auto c = wgrad_accums(job(lines));
    EXPECT_EQ(c.count(sim::GradAccum::F32) + c.count(sim::GradAccum::BF16), 0u) << lines;
    EXPECT_EQ(c.at(sim::GradAccum::None), 34) << lines;
  }
}

TEST(GradAccumFusion, WithZeroStageTwoOrThreeAskingForItIsAnErrorAtItsLine) {
  try {
    parse_job(job("  zero_stage: 2\n  gradient_accumulation_fusion: true\n"), 2);
    ADD_FAILURE() << "accepted gradient_accumulation_fusion with ZeRO-2";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.line(), 15) << e.what();
    EXPECT_EQ(e.field(), "parallelism.gradient_accumulation_fusion") << e.what();
    EXPECT_NE(e.reason().find("main_grad"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(parse_job(job(""), 2).parallel.gradient_accumulation_fusion);
  EXPECT_FALSE(parse_job(job("  zero_stage: 3\n"), 2).parallel.gradient_accumulation_fusion);
}

TEST(GradAccumFusion, TheMoeRoutersPlainWeightIsNotFused) {
  std::string yaml = job("  ep: 2\n  etp: 1\n");
  yaml.replace(yaml.find("  bias: false\n"), 0, "  experts: 4\n  top_k: 2\n  expert_ffn: 344\n");
  std::string router;
  const auto c = wgrad_accums(yaml, &router);
  EXPECT_EQ(router, "none");
  EXPECT_GT(c.at(sim::GradAccum::F32), 0);
}

}  // namespace
}  // namespace clustersim::workloads
