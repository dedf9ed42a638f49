// Multi-token prediction (model.mtp_layers; docs/trace-format.md, "MTP"): the depths run after
// the decoder on the last chunk of the last stage, with the shared embedding and head. Each
// check is one a wrong generator, parameter list or FLOP count would break.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "workload_test_util.hpp"
#include "workloads/dp_buckets.hpp"
#include "workloads/flops.hpp"
#include "workloads/generator.hpp"
#include "workloads/memory.hpp"

namespace clustersim::workloads {
namespace {

// The small Llama-style job (4 layers, hidden 256, vocab 1000, seq 128) with `depths` MTP
// depths and extra training lines.
WorkloadSpec mtp_job(int tp, int pp, int dp, int depths, const std::string& extra_training = "",
                     const std::string& extra_parallel = "", const std::string& precision = "bf16") {
  std::string yaml = testing::small_llama_job(tp, pp, dp, tp > 1, 8, 1, precision);
  yaml.replace(yaml.find("  layers: 4\n"), 12, "  layers: 4\n  mtp_layers: " + std::to_string(depths) + "\n");
  if (!extra_parallel.empty()) yaml.replace(yaml.find("training:\n"), 10, extra_parallel + "training:\n");
  return testing::parse_job(yaml + extra_training, tp * pp * dp);
}

double total_flops(const sim::Workload& w) {
  double sum = 0.0;
  for (int r = 0; r < w.layout.world(); ++r) {
    for (const auto& op : w.program(r).ops) sum += op.flops;
  }
  return sum;
}

int count(const sim::Program& p, const std::string& label) {
  int n = 0;
  for (const auto& op : p.ops) n += p.labels[op.label] == label ? 1 : 0;
  return n;
}

// What the ranks execute equals the accounting, with recompute and with pipelining.
TEST(Mtp, OpsAddUpToTheAccountedFlops) {
  const std::vector<WorkloadSpec> specs = {
      mtp_job(2, 1, 2, 1), mtp_job(1, 2, 2, 2, "  recompute: full\n"),
      mtp_job(2, 2, 1, 1, "  recompute: selective\n", "  vp: 2\n"), mtp_job(2, 2, 1, 1, "", "", "fp8")};
  for (const WorkloadSpec& spec : specs) {
    const sim::Workload w = generate_workload(spec);
    EXPECT_NEAR(total_flops(w) / w.accounting.hardware_flops, 1.0, 1e-9) << w.description;
    EXPECT_DOUBLE_EQ(w.accounting.hardware_flops,
                     static_cast<double>(spec.training.global_batch_size) * hardware_flops_per_sample(spec));
  }
  // One depth adds its layer, eh_proj and a pass through the head to the model FLOPs.
  const WorkloadSpec one = mtp_job(1, 1, 1, 1), none = mtp_job(1, 1, 1, 0);
  const double s = 128.0, h = 256.0;
  const double added = 6.0 * s * (active_layer_weights(one.model, 4) + h * 1000.0 + 2.0 * h * h) +
                       6.0 * s * s * h * 2.0;  // attention: heads * (d + dv) = 2h
  EXPECT_NEAR(model_flops_per_sample(one.model, 128, MfuConvention::Megatron) -
                  model_flops_per_sample(none.model, 128, MfuConvention::Megatron),
              added, 1e-6 * added);
}

// The word embedding's gradient from an MTP depth on a rank that also runs the model's
// embedding (pp 1) is summed by autograd with the model's before the one main_grad accumulation
// (6 B per table element instead of 10); on the last stage of a pipeline it is the rank's only
// gradient of its embedding copy and goes into main_grad.
TEST(Mtp, TheDepthsEmbeddingGradientIsSummedNotAccumulatedTwice) {
  const double scatter = 3.0 * 128 * 256 * 2;  // read the token gradients, read and write the rows
  auto bytes = [](const sim::Program& p, const std::string& label) {
    for (const auto& op : p.ops) {
      if (p.labels[op.label] == label) return op.bytes;
    }
    ADD_FAILURE() << "no " << label;
    return 0.0;
  };
  const sim::Program one = generate_workload(mtp_job(1, 1, 1, 1)).programs[0];
  const double model = bytes(one, "embedding_bwd"), depth = bytes(one, "mtp_embedding_bwd");
  const double table = (model - scatter) / 12.0;  // zero-fill 2 B + main_grad 10 B per element
  EXPECT_GT(table, 1000.0 * 256);
  EXPECT_DOUBLE_EQ(depth, 8.0 * table + scatter);  // zero-fill 2 B + the sum's 6 B
  const sim::Workload piped = generate_workload(mtp_job(1, 2, 1, 1));
  EXPECT_DOUBLE_EQ(bytes(piped.programs[1], "mtp_embedding_bwd"), model);
}

TEST(Mtp, DepthsRunOnTheLastStageAfterTheDecoder) {
  const WorkloadSpec spec = mtp_job(2, 2, 1, 2, "", "", "fp8");
  const sim::Workload w = generate_workload(spec);
  const sim::Program& first = w.programs[0];
  const sim::Program& last = w.programs[1];
  EXPECT_EQ(count(first, "mtp_eh_proj"), 0);
  const int mbs = static_cast<int>(spec.num_microbatches());
  // Per microbatch: each depth's embedding, projection, layer and head, forward and backward.
  EXPECT_EQ(count(last, "mtp_eh_proj"), 2 * mbs);
  EXPECT_EQ(count(last, "mtp_head"), 2 * mbs);
  EXPECT_EQ(count(last, "mtp_embedding"), 2 * mbs);
  EXPECT_EQ(count(last, "mtp_embedding_bwd"), 2 * mbs);
  EXPECT_EQ(count(last, "head"), mbs);
  std::set<int> qkv_layers;
  for (const auto& op : last.ops) {
    const std::string& l = last.labels[op.label];
    if (l == "mtp_eh_proj") {
      // [tokens, 2h] x [2h, h/tp], in FP8 inside the autocast, at depth's layer index 4 or 5.
      const auto& g = std::get<sim::GemmShape>(op.shape);
      EXPECT_EQ(g.m, 128);
      EXPECT_EQ(g.n, 256 / 2);
      EXPECT_EQ(g.k, 2 * 256);
      EXPECT_EQ(g.dtype, sim::DType::FP8);
      EXPECT_TRUE(op.layer == 4 || op.layer == 5) << op.layer;
    }
    if (l == "qkv" && op.phase == sim::Phase::Forward && !op.recompute) qkv_layers.insert(op.layer);
  }
  // The stage's decoder layers 2-3, then the depths' transformer layers 4 and 5.
  EXPECT_EQ(qkv_layers, (std::set<int>{2, 3, 4, 5}));
  // The embedding copies of the first and last stage are summed over the embedding group.
  EXPECT_EQ(count(first, "emb_ar"), 1);
  EXPECT_EQ(count(last, "emb_ar"), 1);
}

// A depth's layer is of the last decoder layer's kind: MoE for Llama 4 Maverick (MoE every
// second layer, the last one among them), whatever its own index would give.
TEST(Mtp, DepthLayerTakesTheLastDecoderLayersKind) {
  ModelSpec m;
  m.layers = 48;
  m.experts = 128;
  m.moe_layer_interval = 2;
  m.mtp_layers = 2;
  EXPECT_TRUE(m.is_moe_layer(47));
  EXPECT_FALSE(m.is_moe_layer(46));
  EXPECT_TRUE(m.is_moe_layer(48));
  EXPECT_TRUE(m.is_moe_layer(49));
  m.moe_layer_interval = 1;
  m.first_dense_layers = 3;
  EXPECT_TRUE(m.is_moe_layer(48));
}

TEST(Mtp, LastStageHoldsTheDepthsAndAnEmbeddingCopy) {
  const WorkloadSpec spec = mtp_job(2, 2, 1, 1);
  auto numel = [](const std::vector<ParamInfo>& ps, ParamGroup g, int layer) {
    std::int64_t n = 0;
    for (const auto& p : ps) n += (p.group == g && p.layer == layer) ? p.numel : 0;
    return n;
  };
  const auto first = stage_parameters(spec, 0);
  const auto last = stage_parameters(spec, 1);
  // enorm, hnorm and the final norm (RMSNorm: weight only) and eh_proj [h/tp, 2h].
  EXPECT_EQ(numel(last, ParamGroup::Mtp, 4), 3 * 256 + 128 * 512);
  EXPECT_GT(numel(last, ParamGroup::Qkv, 4), 0);
  EXPECT_EQ(numel(first, ParamGroup::Mtp, 4), 0);
  // The vocab-parallel embedding (1000 padded to 1024, / tp 2) on both stages, both shared.
  EXPECT_EQ(numel(last, ParamGroup::WordEmbedding, -1), 512 * 256);
  for (const auto& ps : {first, last}) {
    for (const auto& p : ps) {
      if (p.group == ParamGroup::WordEmbedding) {
        EXPECT_TRUE(p.shared_embedding);
      }
    }
  }
  // On one stage the depth reads the first stage's embedding: no copy.
  const auto single = stage_parameters(mtp_job(2, 1, 1, 1), 0);
  EXPECT_EQ(numel(single, ParamGroup::WordEmbedding, -1), 512 * 256);
  // GPT-style (tied embeddings, learned positions) on two stages: the last stage's tied head is
  // the word embedding the depth reads; only its position table is a copy. Still every FLOP
  // accounted.
  std::string gpt = testing::small_gpt_job(1, 2, 1, false, 4, 1);
  gpt.replace(gpt.find("  layers: 4\n"), 12, "  layers: 4\n  mtp_layers: 1\n");
  const WorkloadSpec tied = testing::parse_job(gpt, 2);
  const auto tied_last = stage_parameters(tied, 1);
  EXPECT_EQ(numel(tied_last, ParamGroup::WordEmbedding, -1), 0);
  EXPECT_EQ(numel(tied_last, ParamGroup::PositionEmbedding, -1), 256 * 192);
  EXPECT_GT(numel(tied_last, ParamGroup::OutputHead, -1), 0);
  const sim::Workload tw = generate_workload(tied);
  EXPECT_NEAR(total_flops(tw) / tw.accounting.hardware_flops, 1.0, 1e-9);
  // The counts: one depth's layer, eh_proj and three norms.
  const ParameterCount with = count_parameters(spec.model), without = count_parameters(mtp_job(2, 2, 1, 0).model);
  EXPECT_DOUBLE_EQ(with.total - without.total,
                   layer_linear_weights(spec.model) + 2.0 * 256 + 3.0 * 256 + 2.0 * 256 * 256);
}

// Each gradient bucket is reduced once per step although the head and embedding run twice.
TEST(Mtp, EachBucketIsReducedOnce) {
  const WorkloadSpec spec = mtp_job(1, 1, 4, 1, "", "  zero_stage: 1\n");
  const sim::Program p = generate_workload(spec).programs[0];
  const auto buckets = build_grad_buckets(stage_parameters(spec, 0), stage_bucket_size(spec.parallel, 0),
                                          true, 4);
  ASSERT_EQ(buckets.size(), 1u);  // the small model fits one bucket
  EXPECT_EQ(count(p, "dp_rs"), 1);
  // ... and starts after its last gradient, the first stage's embedding (the head and the
  // embedding, which the depth runs too, report theirs once: a second report would launch it
  // early).
  for (const auto& op : p.ops) {
    if (p.labels[op.label] != "dp_grad_scale") continue;
    ASSERT_EQ(op.deps.size(), 1u);
    EXPECT_EQ(p.labels[p.ops[op.deps[0]].label], "embedding_bwd");
  }
}

TEST(Mtp, LogitsAndActivationsGrowOnTheLastStage) {
  const WorkloadSpec with = mtp_job(2, 2, 1, 1), without = mtp_job(2, 2, 1, 0);
  auto component = [](const StageMemory& st, const std::string& name) {
    for (const auto& c : st.components) {
      if (c.name == name) return c.bytes;
    }
    return 0.0;
  };
  const MemoryReport a = estimate_memory(with, 80e9), b = estimate_memory(without, 80e9);
  EXPECT_DOUBLE_EQ(component(a.stages[1], "logits"), 2.0 * component(b.stages[1], "logits"));
  EXPECT_GT(component(a.stages[1], "activations"), component(b.stages[1], "activations"));
  EXPECT_DOUBLE_EQ(component(a.stages[0], "activations"), component(b.stages[0], "activations"));
}

}  // namespace
}  // namespace clustersim::workloads
