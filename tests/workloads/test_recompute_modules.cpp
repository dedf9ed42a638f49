// Selective recompute's modules (training.recompute_modules; Megatron-core
// TransformerConfig.recompute_modules): what each re-runs in the backward, in what order, what
// the accounting counts for it and what the memory model frees. Each check is one a wrong
// module mapping breaks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "workload_test_util.hpp"
#include "workloads/flops.hpp"
#include "workloads/generator.hpp"
#include "workloads/layer_memory.hpp"
#include "workloads/memory.hpp"

namespace clustersim::workloads {
namespace {

// DeepSeek-V3 cut to 4 layers (the first dense; MLA, 256 routed and 1 shared expert), tp 2 with
// SP, ep 8, BF16 or FP8, 2 microbatches, selective recompute of `modules` ("" for the default).
WorkloadSpec dsv3(const std::string& modules, const std::string& precision = "bf16") {
  return testing::parse_job(
      "model: {catalog: deepseek_v3, layers: 4, first_dense_layers: 1, mtp_layers: 0}\n"
      "parallelism: {tp: 2, ep: 8, etp: 1, sequence_parallel: true}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 8, precision: " +
          precision + ", recompute: selective" +
          (modules.empty() ? std::string() : ", recompute_modules: [" + modules + "]") + "}\n",
      8);
}

double program_flops(const sim::Workload& w) {
  double sum = 0.0;
  for (int r = 0; r < w.layout.world(); ++r) {
    for (const auto& op : w.program(r).ops) sum += op.flops;
  }
  return sum;
}

// Labels of the recomputed ops of layer `layer` in rank 0's first backward, in order.
std::vector<std::string> recomputed(const sim::Program& p, int layer) {
  std::vector<std::string> out;
  for (const auto& op : p.ops) {
    if (op.microbatch == 0 && op.layer == layer && op.recompute) out.push_back(p.labels[op.label]);
  }
  return out;
}

// Position of the first backward op of layer `layer` labelled `label` (ops.size() if none).
std::size_t first_backward(const sim::Program& p, int layer, const std::string& label) {
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const auto& op = p.ops[i];
    if (op.microbatch == 0 && op.layer == layer && op.phase == sim::Phase::Backward && !op.recompute &&
        p.labels[op.label] == label) {
      return i;
    }
  }
  return p.ops.size();
}

std::size_t first_recomputed(const sim::Program& p, int layer, const std::string& label) {
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const auto& op = p.ops[i];
    if (op.microbatch == 0 && op.layer == layer && op.recompute && p.labels[op.label] == label) return i;
  }
  return p.ops.size();
}

TEST(RecomputeModules, TheDefaultIsTheCoreAttentionAlone) {
  const WorkloadSpec spec = dsv3("");
  EXPECT_TRUE(spec.training.recomputes(RecomputeModule::CoreAttn));
  EXPECT_FALSE(spec.training.recomputes(RecomputeModule::Mlp));
  const sim::Program p = generate_stage_program(spec, 0);
  EXPECT_EQ(recomputed(p, 1), (std::vector<std::string>{"attn"}));
  const WorkloadSpec listed = dsv3("mla_up_proj");  // core_attn not listed: not recomputed
  EXPECT_FALSE(listed.training.recomputes(RecomputeModule::CoreAttn));
  TrainingSpec full;
  full.recompute = Recompute::Full;
  full.recompute_modules = {RecomputeModule::Mlp};
  EXPECT_FALSE(full.recomputes(RecomputeModule::Mlp));  // selective only
}

TEST(RecomputeModules, EachModuleRerunsItsOpsBeforeTheBackwardThatReadsThem) {
  const sim::Program p = generate_stage_program(dsv3("core_attn, mla_up_proj, mlp, moe_act, layernorm"), 0);
  // Dense layer 0: the MLP with its fused norm and TP exchanges, then MLA's input norm, its up
  // projections and RoPE, and the core attention.
  const std::vector<std::string> dense = recomputed(p, 0);
  EXPECT_EQ(dense.front(), "norm");
  for (const char* label : {"fc1", "act", "fc2", "q_up", "kv_up", "rope", "attn"}) {
    EXPECT_NE(std::find(dense.begin(), dense.end(), label), dense.end()) << label;
  }
  EXPECT_LT(first_recomputed(p, 0, "fc2"), first_backward(p, 0, "fc2_dgrad"));
  EXPECT_LT(first_recomputed(p, 0, "kv_up"), first_backward(p, 0, "attn_bwd"));
  EXPECT_LT(first_backward(p, 0, "proj_dgrad"), first_recomputed(p, 0, "kv_up"));
  // The RoPE key was gathered before MLA's checkpoint, which keeps it: no gather is re-run.
  EXPECT_EQ(std::find(dense.begin(), dense.end(), "k_pos_emb_ag"), dense.end());
  // MoE layer 1: the pre-MLP norm at the block's start, the experts' activation before fc2's
  // backward; no expert GEMM is re-run.
  const std::vector<std::string> moe = recomputed(p, 1);
  EXPECT_EQ(moe.front(), "norm");
  EXPECT_LT(first_recomputed(p, 1, "expert_act"), first_backward(p, 1, "expert_fc2_dgrad"));
  EXPECT_EQ(std::find(moe.begin(), moe.end(), "expert_fc1"), moe.end());
  EXPECT_EQ(std::find(moe.begin(), moe.end(), "fc1"), moe.end());  // mlp is dense layers' only
}

// Under FP8 a linear whose BF16 input an output-discarding recompute re-creates saved that
// input (set_save_original_input) and quantizes it for its weight gradient.
TEST(RecomputeModules, Fp8LinearsQuantizeTheRecreatedInputForTheirWeightGradient) {
  const auto casts = [](const std::string& modules, const std::string& label) {
    const sim::Program p = generate_stage_program(
        dsv3(modules, "fp8, fp8_recipe: blockwise"), 0);
    return first_backward(p, 1, label) < p.ops.size();
  };
  EXPECT_TRUE(casts("moe_act", "expert_fc2_fp8_input_cast"));
  EXPECT_FALSE(casts("core_attn", "expert_fc2_fp8_input_cast"));
  EXPECT_TRUE(casts("layernorm", "shared_fc1_fp8_input_cast"));
  EXPECT_TRUE(casts("layernorm", "down_fp8_input_cast"));
  EXPECT_FALSE(casts("layernorm, shared_experts", "shared_fc1_fp8_input_cast"));
}

TEST(RecomputeModules, MoeRerunsTheBlockWithItsExchangesAndSharedExpertsNest) {
  const sim::Program p = generate_stage_program(dsv3("moe, shared_experts"), 0);
  const std::vector<std::string> moe = recomputed(p, 1);
  for (const char* label : {"router", "ep_dispatch_a2a", "expert_fc1", "expert_fc2", "ep_combine_a2a"}) {
    EXPECT_EQ(std::count(moe.begin(), moe.end(), label), 1) << label;
  }
  EXPECT_EQ(std::count(moe.begin(), moe.end(), "shared_fc1"), 2);  // in the replay and on its own
  EXPECT_TRUE(recomputed(p, 0).empty());  // the dense layer has nothing listed
}

TEST(RecomputeModules, TheAccountingCountsEveryRecomputedGemm) {
  const double base = generate_workload(dsv3("core_attn")).accounting.hardware_flops;
  for (const std::string& modules :
       {std::string("core_attn"), std::string("mla_up_proj, mlp"), std::string("moe, shared_experts"),
        std::string("core_attn, mla_up_proj, mlp, moe, shared_experts, moe_act, layernorm")}) {
    for (const std::string& precision : {std::string("bf16"), std::string("fp8, fp8_recipe: blockwise")}) {
      const sim::Workload w = generate_workload(dsv3(modules, precision));
      EXPECT_NEAR(program_flops(w) / w.accounting.hardware_flops, 1.0, 1e-9) << modules << precision;
    }
  }
  // mla_up_proj re-runs the up projections of every layer: 2 x tokens x their weights.
  const ModelSpec& m = dsv3("").model;
  const double up = static_cast<double>(m.q_lora_rank) * m.heads * m.head_dim +
                    static_cast<double>(m.kv_lora_rank) * m.heads * (m.head_dim - m.rope_head_dim + m.value_head_dim());
  const double tokens = 8.0 * 4096.0;
  const double with_up = generate_workload(dsv3("core_attn, mla_up_proj")).accounting.hardware_flops;
  EXPECT_NEAR((with_up - base) / (2.0 * tokens * up * 4.0), 1.0, 1e-9);
}

TEST(RecomputeModules, MemoryFreesWhatEachModuleDiscards) {
  const WorkloadSpec none = dsv3("");
  const LayerShape x = layer_shape(none);
  const double gin = 2.0;
  auto kept = [](const WorkloadSpec& s, int layer) { return layer_activation_bytes(s, layer, Recompute::Selective); };
  // mlp frees the dense MLP's FC1 input, activation input and FC2 input; MoE layers keep theirs.
  const WorkloadSpec mlp = dsv3("core_attn, mlp");
  const double dense = gin * x.tsp * x.h + x.t * (2.0 * x.s.fc1_out + gin * x.s.ffn);
  EXPECT_NEAR(kept(none, 0) - kept(mlp, 0), dense, 1e-6);
  EXPECT_DOUBLE_EQ(kept(none, 1), kept(mlp, 1));
  // moe_act frees the experts' fc2 input; layernorm the router input and MLA's down input.
  EXPECT_NEAR(kept(none, 1) - kept(dsv3("core_attn, moe_act"), 1), gin * x.s.expert_rows * x.s.expert_ffn, 1e-6);
  EXPECT_NEAR(kept(none, 1) - kept(dsv3("core_attn, layernorm"), 1), 2.0 * 2.0 * x.tsp * x.h, 1e-6);
  // mla_up_proj frees the up projections' inputs and q, k, v.
  const double qkv = 2.0 * x.t * x.s.heads * (2.0 * x.s.head_dim + x.s.v_head_dim);
  EXPECT_NEAR(kept(none, 0) - kept(dsv3("core_attn, mla_up_proj"), 0),
              gin * x.tsp * (x.s.q_lora + x.s.kv_lora) + qkv, 1e-6);
  // moe keeps the block's input (the router's) and the rest of the layer only.
  const double moe_kept = kept(dsv3("core_attn, moe"), 1);
  EXPECT_LT(moe_kept, kept(dsv3("core_attn, moe_act, shared_experts"), 1));
  EXPECT_GT(moe_kept, 0.0);
  // The stage's peak falls, and the recomputed block lives again in the working set.
  const double gib = 1ull << 30;
  const StageMemory a = estimate_memory(none, 140.0 * gib).stages[0];
  const StageMemory b = estimate_memory(dsv3("core_attn, mla_up_proj, mlp, moe, layernorm"), 140.0 * gib).stages[0];
  EXPECT_LT(b.total(), a.total());
}

TEST(RecomputeModules, ChecksNameTheField) {
  const auto bad = [](const std::string& model, const std::string& training, const std::string& field,
                      const std::string& reason) {
    testing::expect_spec_error("model: {catalog: " + model + ", layers: 4}\nparallelism: {tp: 1, pp: 1, dp: 1}\n"
                               "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 8, " +
                                   std::string(training.find("precision") == std::string::npos ? "precision: bf16, " : "") +
                                   training + "}\n",
                               1, "training.recompute_modules" + field, reason);
  };
  struct Case {
    const char *model, *training, *field, *reason;
  };
  const Case cases[] = {
      {"llama3_8b", "recompute_modules: [mlp]", "", "recompute: selective only"},
      {"llama3_8b", "recompute: full, recompute_modules: [mlp]", "", "recompute: selective only"},
      {"llama3_8b", "recompute: selective, recompute_modules: []", "", "is empty"},
      {"llama3_8b", "recompute: selective, recompute_modules: [mlp, attn]", "[1]", "one of"},
      {"llama3_8b", "recompute: selective, recompute_modules: [mlp, mlp]", "[1]", "twice"},
      {"llama3_8b", "recompute: selective, recompute_modules: [mla_up_proj]", "", "needs MLA"},
      {"llama3_8b", "recompute: selective, recompute_modules: [moe_act]", "", "MoE model"},
      {"llama3_8b", "recompute: selective, recompute_modules: [layernorm]", "", "fuses"},
      {"mixtral_8x7b", "recompute: selective, recompute_modules: [mlp]", "", "every layer"},
      {"mixtral_8x7b", "recompute: selective, recompute_modules: [shared_experts]", "", "no shared experts"},
      {"llama3_8b", "recompute: selective, recompute_modules: [mlp], elementwise: eager", "", "Hugging Face"},
      {"mixtral_8x7b", "recompute: selective, recompute_modules: [moe_act], precision: fp8", "", "delayed scaling"},
      {"deepseek_v3", "recompute: selective, recompute_modules: [mla_up_proj], precision: fp8, fp8_attention: true",
       "", "fp8_attention"},
  };
  for (const Case& c : cases) bad(c.model, c.training, c.field, c.reason);
}

}  // namespace
}  // namespace clustersim::workloads
