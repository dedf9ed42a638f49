// Full recompute's method and number of layers (training.recompute_method /
// recompute_num_layers; Megatron-core TransformerBlock._checkpointed_forward): which layers are
// re-run and in what order, the FLOPs the accounting counts for them, and what the memory
// model keeps. Each check is one a wrong grouping breaks.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "workload_test_util.hpp"
#include "workloads/generator.hpp"
#include "workloads/memory.hpp"
#include "workloads/stage_layout.hpp"

namespace clustersim::workloads {
namespace {

// A Llama-style model of 8 layers on pp 2 x vp 2 (chunks of 2 layers) or pp 2 (chunks of 4).
WorkloadSpec job(const std::string& recompute, int vp = 1) {
  std::string yaml = testing::small_llama_job(1, 2, 1, false, 4, 1);
  yaml.replace(yaml.find("  layers: 4"), 11, "  layers: 8");
  if (vp > 1) yaml.replace(yaml.find("parallelism:\n"), 13, "parallelism:\n  vp: " + std::to_string(vp) + "\n  schedule: interleaved\n");
  yaml += recompute;
  return testing::parse_job(yaml, 2);
}

TEST(RecomputeGroups, UniformGroupsCoverTheChunkAndBlockTakesItsFirstLayers) {
  TrainingSpec t;
  t.recompute = Recompute::Full;
  t.recompute_num_layers = 3;
  const LayerRange chunk{4, 12};
  const auto uniform = recompute_groups(t, chunk);
  ASSERT_EQ(uniform.size(), 3u);  // 4-7, 7-10, 10-12
  EXPECT_EQ(uniform[1].begin, 7);
  EXPECT_EQ(uniform[2].end, 12);
  t.recompute_method = RecomputeMethod::Block;
  const auto block = recompute_groups(t, chunk);
  ASSERT_EQ(block.size(), 3u);  // 4, 5, 6 alone
  EXPECT_EQ(block[2].begin, 6);
  EXPECT_EQ(block[2].size(), 1);
  t.recompute_num_layers = 20;
  EXPECT_EQ(recompute_groups(t, chunk).size(), 8u);  // every layer of the chunk
  t.recompute = Recompute::Selective;
  EXPECT_TRUE(recompute_groups(t, chunk).empty());
}

// Layers with recomputed ops in stage `stage`'s program, and the order in which the recomputed
// forwards and the backwards of the layers come in the first microbatch's backward.
std::vector<std::string> backward_order(const sim::Program& p) {
  std::vector<std::string> seq;
  for (const auto& op : p.ops) {
    if (op.microbatch != 0 || op.layer < 0 || op.phase != sim::Phase::Backward) continue;
    const std::string e = (op.recompute ? "F" : "B") + std::to_string(op.layer);
    if (seq.empty() || seq.back() != e) seq.push_back(e);
  }
  return seq;
}

TEST(RecomputeGroups, TheGeneratorRerunsEachGroupBeforeTheBackwardOfItsLastLayer) {
  // Stage 0 holds layers 0-3 (pp 2, one chunk).
  const auto uniform2 = generate_workload(job("  recompute: full\n  recompute_num_layers: 2\n"));
  EXPECT_EQ(backward_order(uniform2.programs[0]),
            (std::vector<std::string>{"F2", "F3", "B3", "B2", "F0", "F1", "B1", "B0"}));
  const auto block1 = generate_workload(job("  recompute: full\n  recompute_method: block\n"));
  EXPECT_EQ(backward_order(block1.programs[0]), (std::vector<std::string>{"B3", "B2", "B1", "F0", "B0"}));
  const auto uniform1 = generate_workload(job("  recompute: full\n"));
  EXPECT_EQ(backward_order(uniform1.programs[0]),
            (std::vector<std::string>{"F3", "B3", "F2", "B2", "F1", "B1", "F0", "B0"}));
}

double program_flops(const sim::Workload& w) {
  double sum = 0.0;
  for (int r = 0; r < w.layout.world(); ++r) {
    for (const auto& op : w.program(r).ops) sum += op.flops;
  }
  return sum;
}

TEST(RecomputeGroups, TheAccountingCountsTheRecomputedLayersOnly) {
  // Block recompute of 1 layer per chunk on pp 2 x vp 2: 4 of the 8 layers re-run.
  for (const std::string& rc : {std::string("  recompute: full\n  recompute_method: block\n"),
                                std::string("  recompute: full\n  recompute_num_layers: 3\n"),
                                std::string("  recompute: full\n")}) {
    for (int vp : {1, 2}) {
      const sim::Workload w = generate_workload(job(rc, vp));
      EXPECT_NEAR(program_flops(w) / w.accounting.hardware_flops, 1.0, 1e-9) << rc << vp;
    }
  }
  const double none = generate_workload(job("")).accounting.hardware_flops;
  const double full = generate_workload(job("  recompute: full\n", 2)).accounting.hardware_flops;
  const double block = generate_workload(job("  recompute: full\n  recompute_method: block\n", 2))
                           .accounting.hardware_flops;
  EXPECT_NEAR((block - none) / (full - none), 0.5, 1e-9);  // 4 of 8 layers, all alike
}

TEST(RecomputeGroups, MemoryKeepsACheckpointPerGroupAndTheWholeOfOtherLayers) {
  auto stage0 = [](const WorkloadSpec& s) { return estimate_memory(s, 80.0 * (1ull << 30)).stages[0]; };
  const StageMemory none = stage0(job(""));
  const StageMemory full = stage0(job("  recompute: full\n"));
  const StageMemory block2 = stage0(job("  recompute: full\n  recompute_method: block\n  recompute_num_layers: 2\n"));
  const StageMemory uniform2 = stage0(job("  recompute: full\n  recompute_num_layers: 2\n"));
  const StageMemory uniform4 = stage0(job("  recompute: full\n  recompute_num_layers: 4\n"));
  const double a_none = none.bytes("activations"), a_full = full.bytes("activations");
  // Block 2 of 4 layers: two layers whole, two checkpoints.
  EXPECT_NEAR(block2.bytes("activations"), (a_none + a_full) / 2.0, 1e-6 * a_none);
  // Uniform groups of 2: half the checkpoints of groups of 1; groups of 4: a quarter.
  EXPECT_NEAR(uniform2.bytes("activations"), a_full / 2.0, 1e-6 * a_full);
  EXPECT_NEAR(uniform4.bytes("activations"), a_full / 4.0, 1e-6 * a_full);
  // ... but a group's layers are alive together in its backward.
  EXPECT_GT(uniform2.bytes("activation_working_set"), full.bytes("activation_working_set"));
  EXPECT_GT(uniform4.bytes("activation_working_set"), uniform2.bytes("activation_working_set"));
  EXPECT_EQ(block2.bytes("activation_working_set"), full.bytes("activation_working_set"));
}

TEST(RecomputeGroups, OptionsNeedFullRecompute) {
  const std::string base = testing::small_llama_job(1, 1, 1, false, 1, 1);
  testing::expect_spec_error(base + "  recompute: selective\n  recompute_num_layers: 2\n", 1,
                             "training.recompute_num_layers", "recompute: full only");
  testing::expect_spec_error(base + "  recompute_method: block\n", 1, "training.recompute_method",
                             "recompute: full only");
  testing::expect_spec_error(base + "  recompute: full\n  recompute_method: blocks\n", 1,
                             "training.recompute_method", "uniform");
  testing::expect_spec_error(base + "  recompute: full\n  recompute_num_layers: 0\n", 1,
                             "training.recompute_num_layers", "");
}

}  // namespace
}  // namespace clustersim::workloads
