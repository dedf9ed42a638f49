// model.qk_layernorm (Megatron-core's q_layernorm / k_layernorm with GQA; Qwen3): the per-head
// norms' ops and bytes between the QKV projection and RoPE, their backward, what they keep for
// the backward, their weights, and the refusal with MLA. Each check is one a wrong head count,
// shard, order or byte factor breaks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "workload_test_util.hpp"
#include "workloads/dp_buckets.hpp"
#include "workloads/generator.hpp"
#include "workloads/memory.hpp"
#include "workloads/model_catalog.hpp"

namespace clustersim::workloads {
namespace {

// Qwen3-32B cut to 2 layers, tp 4 with SP: 16 query and 2 key heads of 128 per rank, seq 4096.
WorkloadSpec qwen(bool qk_layernorm, const std::string& extra_training = "") {
  return testing::parse_job(
      std::string("model: {catalog: qwen3_32b, layers: 2, qk_layernorm: ") +
          (qk_layernorm ? "true" : "false") +
          "}\n"
          "parallelism: {tp: 4, sequence_parallel: true}\n"
          "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 2, precision: bf16" +
          extra_training + "}\n",
      8);
}

struct Labelled {
  std::string label;
  double bytes;
  sim::Phase phase;
};

// Rank 0's ops of layer 0, microbatch 0, in program order.
std::vector<Labelled> layer_ops(const sim::Program& p) {
  std::vector<Labelled> out;
  for (const auto& op : p.ops) {
    if (op.microbatch == 0 && op.layer == 0) out.push_back({p.labels[op.label], op.bytes, op.phase});
  }
  return out;
}

std::size_t index_of(const std::vector<Labelled>& ops, const std::string& label, sim::Phase phase) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].label == label && ops[i].phase == phase) return i;
  }
  return ops.size();
}

TEST(QkLayernorm, TheQwen3CatalogModelsHaveIt) {
  EXPECT_TRUE(load_catalog_model("qwen3_235b_a22b").qk_layernorm);
  EXPECT_TRUE(load_catalog_model("qwen3_30b_a3b").qk_layernorm);
  EXPECT_TRUE(load_catalog_model("qwen3_32b").qk_layernorm);
  EXPECT_FALSE(load_catalog_model("llama3_8b").qk_layernorm);
}

TEST(QkLayernorm, NormsOfTheRanksQueryAndKeyHeadsBetweenQkvAndRope) {
  const sim::Program p = generate_stage_program(qwen(true), 0);
  const auto ops = layer_ops(p);
  const auto fwd = sim::Phase::Forward, bwd = sim::Phase::Backward;
  const std::size_t qkv = index_of(ops, "qkv", fwd), q = index_of(ops, "q_layernorm", fwd);
  const std::size_t k = index_of(ops, "k_layernorm", fwd), rope = index_of(ops, "rope", fwd);
  ASSERT_LT(rope, ops.size());
  EXPECT_TRUE(qkv < q && q < k && k < rope);
  // 4096 tokens x 16 query heads (64 / tp 4) x 128, read and written in BF16; keys: 2 heads.
  EXPECT_DOUBLE_EQ(ops[q].bytes, 4096.0 * 16 * 128 * 2 * 2);
  EXPECT_DOUBLE_EQ(ops[k].bytes, 4096.0 * 2 * 128 * 2 * 2);
  // Backward after RoPE's: the key norm's, then the query norm's (input, output gradient, input
  // gradient), then the QKV projection's.
  const std::size_t rope_b = index_of(ops, "rope_bwd", bwd), kb = index_of(ops, "k_layernorm_bwd", bwd);
  const std::size_t qb = index_of(ops, "q_layernorm_bwd", bwd), qkv_b = index_of(ops, "qkv_dgrad", bwd);
  ASSERT_LT(qkv_b, ops.size());
  EXPECT_TRUE(rope_b < kb && kb < qb && qb < qkv_b);
  EXPECT_DOUBLE_EQ(ops[qb].bytes, 4096.0 * 16 * 128 * 2 * 3);
  EXPECT_DOUBLE_EQ(ops[kb].bytes, 4096.0 * 2 * 128 * 2 * 3);
  const auto plain = layer_ops(generate_stage_program(qwen(false), 0));
  EXPECT_EQ(index_of(plain, "q_layernorm", fwd), plain.size());
  EXPECT_EQ(plain.size() + 4, ops.size());
}

TEST(QkLayernorm, FullRecomputeRunsTheNormsAgain) {
  const sim::Program p = generate_stage_program(qwen(true, ", recompute: full"), 0);
  int recomputed = 0;
  for (const auto& op : p.ops) {
    const std::string& l = p.labels[op.label];
    if (op.microbatch == 0 && op.layer == 0 && op.recompute && (l == "q_layernorm" || l == "k_layernorm")) {
      ++recomputed;
    }
  }
  EXPECT_EQ(recomputed, 2);
}

TEST(QkLayernorm, KeepsEachNormsInputAndItsInverseRms) {
  const double with = layer_activation_bytes(qwen(true), 0, Recompute::None);
  const double without = layer_activation_bytes(qwen(false), 0, Recompute::None);
  // 4096 tokens x (16 + 2) heads x (128 x 2 B input + 4 B FP32 rsigma).
  EXPECT_DOUBLE_EQ(with - without, 4096.0 * 18 * (128 * 2 + 4));
  // Transformers' eager Qwen3RMSNorm keeps the FP32 upcast too: 4 B more per element.
  const double eager = layer_activation_bytes(qwen(true, ", elementwise: eager"), 0, Recompute::None);
  const double eager_plain = layer_activation_bytes(qwen(false, ", elementwise: eager"), 0, Recompute::None);
  EXPECT_DOUBLE_EQ(eager - eager_plain, 4096.0 * 18 * (128 * 2 + 4) + 4096.0 * 18 * 128 * 4);
}

TEST(QkLayernorm, TwoNormWeightsOfHeadDimPerLayer) {
  ModelSpec m = load_catalog_model("qwen3_32b");
  const double with = count_parameters(m).total;
  m.qk_layernorm = false;
  EXPECT_DOUBLE_EQ(with - count_parameters(m).total, 64.0 * 2 * 128);
  // On each rank, replicated over TP with the layer's other norms (all-reduced under SP).
  const WorkloadSpec spec = qwen(true);
  std::int64_t replicated = 0;
  for (const auto& p : stage_parameters(spec, 0)) {
    if (p.group == ParamGroup::Qkv && p.layer == 0 && p.sp_replicated) replicated += p.numel;
  }
  EXPECT_EQ(replicated, 2 * 128);
}

// Megatron-core's _allreduce_layernorm_grads all-reduces the q/k norms' gradients over TP by
// name, also without sequence parallelism (where the other norms' are not reduced).
TEST(QkLayernorm, NormGradientsAreAllReducedOverTpWithoutSequenceParallelism) {
  const auto tp_reduce_bytes = [](bool qk, bool sp) {
    const WorkloadSpec spec = testing::parse_job(
        std::string("model: {catalog: qwen3_32b, layers: 2, qk_layernorm: ") + (qk ? "true" : "false") +
            "}\nparallelism: {tp: 4, sequence_parallel: " + (sp ? "true" : "false") +
            "}\ntraining: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 2, "
            "precision: bf16}\n",
        8);
    const sim::Program p = generate_stage_program(spec, 0);
    double bytes = -1.0;
    for (const auto& op : p.ops) {
      if (p.labels[op.label] == "tp_ar_sp_grads") bytes = op.bytes;
    }
    return bytes;
  };
  // 2 layers x 2 norms x 128, FP32 gradients (grad_reduce_in_fp32 at ZeRO-1).
  EXPECT_DOUBLE_EQ(tp_reduce_bytes(true, false), 2.0 * 2 * 128 * 4);
  EXPECT_DOUBLE_EQ(tp_reduce_bytes(false, false), -1.0);  // no such reduction
  EXPECT_DOUBLE_EQ(tp_reduce_bytes(true, true) - tp_reduce_bytes(false, true), 2.0 * 2 * 128 * 4);
}

TEST(QkLayernorm, RefusedWithMla) {
  testing::expect_spec_error(
      "model: {catalog: deepseek_v3, layers: 4, qk_layernorm: true}\n"
      "parallelism: {tp: 1}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 8, precision: bf16}\n",
      8, "model.qk_layernorm", "latent norms");
  testing::expect_spec_error(
      "model: {catalog: qwen3_32b, qk_layernorm: 1}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 8, precision: bf16}\n",
      8, "model.qk_layernorm", "expected true or false");
}

}  // namespace
}  // namespace clustersim::workloads
