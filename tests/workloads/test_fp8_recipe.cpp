// training.fp8_recipe (Megatron-LM --fp8-recipe): with blockwise, Transformer Engine's
// Float8BlockScaling, every FP8 GEMM of the layers says how its operands are scaled (forward and
// data gradient: 128x128 weight blocks with 1x128 activation blocks; weight gradient: 1x128
// both), there are no amax reductions, and the rest of the step is the delayed recipe's; with
// tensorwise (Float8CurrentScaling) each cast computes its tensor's amax first.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <variant>

#include "workload_test_util.hpp"
#include "workloads/generator.hpp"
#include "workloads/trace_io.hpp"

namespace clustersim::workloads {
namespace {

WorkloadSpec job(const std::string& recipe) {
  std::string yaml = testing::small_llama_job(2, 1, 2, true, 4, 1, "fp8");
  if (!recipe.empty()) yaml += "  fp8_recipe: " + recipe + "\n";
  return testing::parse_job(yaml, 4);
}

// Counts of (dtype, scaling, wgrad?) over the FP8 GEMMs of a program, and its amax reductions.
std::map<std::string, int> census(const sim::Program& p) {
  std::map<std::string, int> n;
  for (const auto& op : p.ops) {
    if (const auto* g = std::get_if<sim::GemmShape>(&op.shape)) {
      const bool wgrad = p.labels[op.label].find("wgrad") != std::string::npos;
      n[std::string(sim::to_string(g->dtype)) + "/" + sim::to_string(g->fp8_scaling) + (wgrad ? "/wgrad" : "")]++;
    }
    if (p.labels[op.label].rfind("fp8_amax", 0) == 0) n["amax"]++;
  }
  return n;
}

TEST(Fp8Recipe, BlockwiseScalesEveryLayerGemmInBlocksAndReducesNoAmax) {
  const auto delayed = census(generate_workload(job("")).programs[0]);
  const auto block = census(generate_workload(job("blockwise")).programs[0]);
  EXPECT_GT(delayed.at("amax"), 0);
  EXPECT_EQ(block.count("amax"), 0u);
  EXPECT_EQ(block.count("fp8/tensor"), 0u);
  EXPECT_EQ(block.count("fp8/tensor/wgrad"), 0u);
  // The same GEMMs, block-scaled: forward and dgrad 2D x 1D, weight gradients 1D x 1D.
  EXPECT_EQ(block.at("fp8/block2d1d"), delayed.at("fp8/tensor"));
  EXPECT_EQ(block.at("fp8/block1d1d/wgrad"), delayed.at("fp8/tensor/wgrad"));
  // The output head stays BF16 and per-tensor (outside the FP8 autocast).
  EXPECT_EQ(block.at("bf16/tensor"), delayed.at("bf16/tensor"));
}

TEST(Fp8Recipe, TheTraceKeepsTheScalingAndRejectsItOnBf16) {
  const sim::Workload w = generate_workload(job("blockwise"));
  std::ostringstream out;
  write_rank_trace(out, w, 1);
  const std::string text = out.str();
  EXPECT_NE(text.find("\"fp8_scaling\":\"block2d1d\""), std::string::npos);
  EXPECT_NE(text.find("\"fp8_scaling\":\"block1d1d\""), std::string::npos);
  std::istringstream in(text);
  const RankTrace t = read_rank_trace(in, "trace.jsonl");
  for (std::size_t i = 0; i < t.program.ops.size(); ++i) {
    const auto* a = std::get_if<sim::GemmShape>(&w.programs[0].ops[i].shape);
    const auto* b = std::get_if<sim::GemmShape>(&t.program.ops[i].shape);
    if (a != nullptr && b != nullptr) {
      EXPECT_EQ(a->fp8_scaling, b->fp8_scaling) << i;
    }
  }
  std::string bad = text;
  const std::size_t at = bad.find("\"dtype\":\"fp8\",\"fp8_scaling\"");
  ASSERT_NE(at, std::string::npos);
  bad.replace(at, 14, "\"dtype\":\"bf16\"");
  std::istringstream wrong(bad);
  EXPECT_THROW(read_rank_trace(wrong, "trace.jsonl"), SpecError);
}

TEST(Fp8Recipe, RejectionsNameTheKey) {
  const std::string bf16 = testing::small_llama_job(1, 1, 1, false, 1, 1);
  testing::expect_spec_error(bf16 + "  fp8_recipe: blockwise\n", 1, "training.fp8_recipe", "needs precision: fp8");
  const std::string fp8 = testing::small_llama_job(1, 1, 1, false, 1, 1, "fp8");
  testing::expect_spec_error(fp8 + "  fp8_recipe: mxfp4\n", 1, "training.fp8_recipe", "delayed");
  testing::expect_spec_error(fp8 + "  fp8_recipe: blockwise\n  fp8_reduce_amax: true\n", 1,
                             "training.fp8_reduce_amax", "no amax history");
  testing::expect_spec_error(fp8 + "  fp8_recipe: blockwise\n  fp8_attention: true\n", 1,
                             "training.fp8_attention", "delayed recipe");
  testing::expect_spec_error(fp8 + "  fp8_recipe: tensorwise\n  fp8_reduce_amax: true\n", 1,
                             "training.fp8_reduce_amax", "no amax history");
  testing::expect_spec_error(fp8 + "  fp8_recipe: tensorwise\n  fp8_attention: true\n", 1,
                             "training.fp8_attention", "delayed recipe");
  // Transformer Engine's grouped expert linears take no expert TP under current scaling.
  testing::expect_spec_error(
      "model: {catalog: mixtral_8x7b}\nparallelism: {tp: 2, sequence_parallel: true, ep: 4, etp: 2}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 8, precision: fp8, "
      "fp8_recipe: tensorwise}\n",
      8, "training.fp8_recipe", "etp: 1");
}

// tensorwise (Float8CurrentScaling): the GEMMs are the delayed recipe's per-tensor ones, no amax
// reductions, every cast after a pass that reads its BF16 tensor for the amax and as a whole
// cast-transpose (the norm cannot write FP8 without it), and with sequence parallelism the
// shards gathered for a column-parallel input or a row-parallel output gradient share one scale:
// a 4-byte all-reduce over TP before each.
TEST(Fp8Recipe, TensorwiseCastsAfterAnAmaxPassAndSharesGatheredScalesOverTp) {
  const sim::Workload delayed = generate_workload(job(""));
  const sim::Workload tw = generate_workload(job("tensorwise"));
  const auto d = census(delayed.programs[0]);
  const auto t = census(tw.programs[0]);
  EXPECT_EQ(t.count("amax"), 0u);
  EXPECT_EQ(t.at("fp8/tensor"), d.at("fp8/tensor"));
  EXPECT_EQ(t.at("fp8/tensor/wgrad"), d.at("fp8/tensor/wgrad"));
  const sim::Program& p = tw.programs[0];
  int casts = 0, tp_amax = 0;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const std::string& label = p.labels[p.ops[i].label];
    if (label == "tp_ar_amax") {
      ++tp_amax;
      EXPECT_EQ(p.ops[i].bytes, 4.0);
    }
    const bool cast = label.find("_fp8_") != std::string::npos && label.rfind("_amax") != label.size() - 5;
    if (!cast) continue;
    ++casts;
    // The amax pass right before it (or before the TP reduction of the amax), reading 2 B per
    // element of what the cast writes at 4 B.
    std::size_t j = i - 1;
    if (p.labels[p.ops[j].label] == "tp_ar_amax") --j;
    EXPECT_EQ(p.labels[p.ops[j].label], label + "_amax");
    EXPECT_EQ(2.0 * p.ops[j].bytes, p.ops[i].bytes) << label;
  }
  // 4 layers x 2 microbatches: qkv and fc1 inputs forward, proj and fc2 gradients backward.
  EXPECT_EQ(tp_amax, 4 * 2 * 4);
  EXPECT_GT(casts, tp_amax);
  // Without sequence parallelism nothing is gathered: no TP amax reductions.
  const auto no_sp = testing::parse_job(testing::small_llama_job(2, 1, 2, false, 4, 1, "fp8") +
                                            "  fp8_recipe: tensorwise\n", 4);
  int none = 0;
  const sim::Workload w = generate_workload(no_sp);
  for (const auto& op : w.programs[0].ops) none += w.programs[0].labels[op.label] == "tp_ar_amax";
  EXPECT_EQ(none, 0);
}

}  // namespace
}  // namespace clustersim::workloads
