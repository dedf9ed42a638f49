// training.moe_router_dtype (Megatron-core moe_router_dtype): with fp32 the router's forward GEMM
// writes FP32 logits and its backward runs as RouterGatingLinearFunction.backward does, two TF32
// GEMMs between casts (which the cost model prices at the measured TF32/BF16 ratio, run 102); the
// key is refused where it means nothing.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "workload_test_util.hpp"
#include "workloads/generator.hpp"
#include "workloads/trace_io.hpp"

namespace clustersim::workloads {
namespace {

// Qwen3-30B-A3B cut to 2 layers: hidden 2048, 128 experts; ep 8, seq 4096 on 8 GPUs.
WorkloadSpec qwen(const std::string& router_dtype) {
  return testing::parse_job(
      "model: {catalog: qwen3_30b_a3b, layers: 2}\n"
      "parallelism: {ep: 8}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 8, precision: bf16" +
          (router_dtype.empty() ? std::string() : ", moe_router_dtype: " + router_dtype) + "}\n",
      8);
}

struct RouterOp {
  std::string label;
  sim::Op op;
};

std::vector<RouterOp> router_ops(const sim::Program& p) {
  std::vector<RouterOp> out;
  for (const auto& op : p.ops) {
    const std::string& l = p.labels[op.label];
    if (op.microbatch == 0 && op.layer == 0 && l.rfind("router", 0) == 0) out.push_back({l, op});
  }
  return out;
}

std::vector<std::string> labels(const std::vector<RouterOp>& ops) {
  std::vector<std::string> out;
  for (const auto& o : ops) out.push_back(o.label);
  return out;
}

TEST(RouterDtype, Fp32RunsTheBackwardGemmsInTf32BetweenCasts) {
  const auto ops = router_ops(generate_stage_program(qwen("fp32"), 0));
  EXPECT_EQ(labels(ops), (std::vector<std::string>{"router", "router_topk", "router_bwd",
                                                   "router_weight_fp32_cast", "router_dgrad",
                                                   "router_dgrad_bf16_cast", "router_input_fp32_cast",
                                                   "router_wgrad", "router_wgrad_bf16_cast"}));
  const auto gemm = [&](std::size_t i) { return std::get<sim::GemmShape>(ops[i].op.shape); };
  EXPECT_EQ(gemm(0).dtype, sim::DType::BF16);  // BF16 operands, FP32 logits
  EXPECT_EQ(gemm(4).dtype, sim::DType::TF32);
  EXPECT_EQ(gemm(7).dtype, sim::DType::TF32);
  // The data gradient [4096 tokens, 2048] from [4096, 128] x [128, 2048]; its casts move
  // 4096 x 2048 elements, 2 + 4 B each.
  EXPECT_EQ(gemm(4).m, 4096);
  EXPECT_EQ(gemm(4).n, 2048);
  EXPECT_EQ(gemm(4).k, 128);
  EXPECT_DOUBLE_EQ(ops[5].op.bytes, 6.0 * 4096 * 2048);
  EXPECT_DOUBLE_EQ(ops[6].op.bytes, 6.0 * 4096 * 2048);
  EXPECT_DOUBLE_EQ(ops[3].op.bytes, 6.0 * 128 * 2048);
  const auto plain = router_ops(generate_stage_program(qwen(""), 0));
  EXPECT_EQ(labels(plain), (std::vector<std::string>{"router", "router_topk", "router_bwd",
                                                     "router_dgrad", "router_wgrad"}));
  EXPECT_EQ(std::get<sim::GemmShape>(plain[3].op.shape).dtype, sim::DType::BF16);
  EXPECT_EQ(labels(router_ops(generate_stage_program(qwen("bf16"), 0))), labels(plain));
}

TEST(RouterDtype, Tf32GemmsRoundTripThroughTheTraceFormat) {
  const sim::Workload w = generate_workload(qwen("fp32"));
  std::ostringstream out;
  write_rank_trace(out, w, 0);
  EXPECT_NE(out.str().find("\"dtype\":\"tf32\""), std::string::npos);
  std::istringstream in(out.str());
  const RankTrace t = read_rank_trace(in, "router.jsonl");
  ASSERT_EQ(t.program.ops.size(), w.program(0).ops.size());
  int tf32 = 0;
  for (const auto& op : t.program.ops) {
    const auto* g = std::get_if<sim::GemmShape>(&op.shape);
    if (g != nullptr && g->dtype == sim::DType::TF32) ++tf32;
  }
  EXPECT_EQ(tf32, 2 * 2 * 1);  // dgrad and wgrad, 2 layers, 1 microbatch per rank (gbs 8, dp 8)
}

TEST(RouterDtype, RefusedOnDenseModelsAndForFp64) {
  testing::expect_spec_error(
      "model: llama3_8b\n"
      "parallelism: {tp: 1}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 8, precision: bf16, "
      "moe_router_dtype: fp32}\n",
      8, "training.moe_router_dtype", "needs a MoE model");
  testing::expect_spec_error(
      "model: qwen3_30b_a3b\n"
      "parallelism: {ep: 8}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 8, precision: bf16, "
      "moe_router_dtype: fp64}\n",
      8, "training.moe_router_dtype", "");
}

}  // namespace
}  // namespace clustersim::workloads
