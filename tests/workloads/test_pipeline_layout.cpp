// Megatron-core's pipeline layout (parallelism.pipeline_layout, --pipeline-model-parallel-layout;
// PipelineParallelLayerLayout): how the string expands, which layouts are refused, and that a
// layout equal to another way of shaping the split gives the same split and the same programs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "workload_test_util.hpp"
#include "workloads/generator.hpp"
#include "workloads/stage_layout.hpp"

namespace clustersim::workloads {
namespace {

std::vector<std::string> expand(const std::string& text) {
  std::string error;
  auto out = expand_pipeline_layout(text, error);
  EXPECT_EQ(out.empty(), !error.empty()) << text;
  return out;
}

TEST(PipelineLayout, ExpandsAsMegatronsParser) {
  // parse_str_to_list's docstring example: "Ettt|(tt|)*29,m|L".
  const auto docstring = expand("Ettt|(tt|)*29,m|L");
  ASSERT_EQ(docstring.size(), 32u);
  EXPECT_EQ(docstring.front(), "Ettt");
  EXPECT_EQ(docstring[29], "tt");
  EXPECT_EQ(docstring[30], "m");
  EXPECT_EQ(docstring[31], "L");
  // A group may span stages, and the groups unroll before the single repeats.
  EXPECT_EQ(expand("Et(t|tt)*2,L"), (std::vector<std::string>{"Ett", "ttt", "ttL"}));
  EXPECT_EQ(expand("Et*3|t*2L"), (std::vector<std::string>{"Ettt", "ttL"}));
  EXPECT_EQ(expand("E||tL"), (std::vector<std::string>{"E", "", "tL"}));  // an empty stage
  EXPECT_EQ(expand("Et*0003|L"), (std::vector<std::string>{"Ettt", "L"}));  // \d+ takes leading zeros
  std::string error;
  EXPECT_TRUE(expand_pipeline_layout("Et\xc3|L", error).empty());
  EXPECT_NE(error.find("'byte 195'"), std::string::npos) << error;
  EXPECT_TRUE(expand_pipeline_layout("Etx|L", error).empty());
  EXPECT_NE(error.find("'x' is not a layer"), std::string::npos) << error;
  EXPECT_TRUE(expand_pipeline_layout("E(tt|L", error).empty());  // a group never closed
  EXPECT_TRUE(expand_pipeline_layout("Et*999999|(t|)*999999L", error).empty());
  EXPECT_NE(error.find("beyond"), std::string::npos) << error;
}

std::string llama(const std::string& parallelism) {
  return "model: {catalog: llama3_8b, layers: 8}\nparallelism: {tp: 1, dp: 1, " + parallelism + "}\n"
         "training: {seq_length: 1024, micro_batch_size: 1, global_batch_size: 8, precision: bf16}\n";
}

std::vector<int> sizes(const WorkloadSpec& spec) {
  std::vector<int> out;
  for (const LayerRange& r : virtual_stage_layers(spec.model, spec.parallel)) out.push_back(r.size());
  return out;
}

TEST(PipelineLayout, EqualsTheSplitItSpellsOut) {
  // Uneven first and last stages.
  const WorkloadSpec uneven = testing::parse_job(
      llama("pp: 3, num_layers_in_first_pipeline_stage: 2, num_layers_in_last_pipeline_stage: 2"), 3);
  const WorkloadSpec layout = testing::parse_job(llama("pp: 3, pipeline_layout: \"Ett|tttt|ttL\""), 3);
  EXPECT_EQ(sizes(layout), (std::vector<int>{2, 4, 2}));
  EXPECT_EQ(sizes(layout), sizes(uneven));
  // The embedding and the loss counted as layers, interleaved: vp follows from the layout.
  const WorkloadSpec counted = testing::parse_job(
      llama("pp: 2, vp: 5, account_for_embedding_in_pipeline_split: true, "
            "account_for_loss_in_pipeline_split: true"), 2);
  const WorkloadSpec spelled = testing::parse_job(llama("pp: 2, pipeline_layout: \"E|(t|)*8,L\""), 2);
  EXPECT_EQ(spelled.parallel.vp, 5);
  EXPECT_EQ(spelled.parallel.schedule, "interleaved");
  EXPECT_EQ(sizes(spelled), sizes(counted));
  for (int stage = 0; stage < 2; ++stage) {
    const sim::Program a = generate_stage_program(counted, stage);
    const sim::Program b = generate_stage_program(spelled, stage);
    ASSERT_EQ(a.ops.size(), b.ops.size());
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
      EXPECT_EQ(a.labels[a.ops[i].label], b.labels[b.ops[i].label]);
      EXPECT_EQ(a.ops[i].layer, b.ops[i].layer);
    }
  }
}

TEST(PipelineLayout, EmptyStagesAndMtpInTheLastStage) {
  const WorkloadSpec spec = testing::parse_job(
      "model: {catalog: deepseek_v3, layers: 4, first_dense_layers: 1, mtp_layers: 1}\n"
      "parallelism: {tp: 1, pp: 2, ep: 2, pipeline_layout: \"E|tt|tt|mL\"}\n"
      "training: {seq_length: 1024, micro_batch_size: 1, global_batch_size: 4, precision: bf16}\n", 4);
  EXPECT_EQ(sizes(spec), (std::vector<int>{0, 2, 2, 0}));
  const sim::Workload w = generate_workload(spec);
  EXPECT_EQ(w.programs.size(), 2u);
}

TEST(PipelineLayout, RefusalsNameTheField) {
  const auto bad = [](const std::string& parallelism, const std::string& field, const std::string& reason) {
    testing::expect_spec_error(llama(parallelism), 2, "parallelism." + field, reason);
  };
  bad("pp: 2, pipeline_layout: \"Ettt|tttt|tL\"", "pipeline_layout", "not a multiple of pp = 2");
  bad("pp: 2, vp: 3, pipeline_layout: \"Etttt|ttttL\"", "vp", "contradicts pipeline_layout");
  bad("pp: 2, num_layers_in_first_pipeline_stage: 4, pipeline_layout: \"Etttt|ttttL\"",
      "num_layers_in_first_pipeline_stage", "cannot be combined");
  bad("pp: 2, pipeline_layout: \"tttt|ttttEL\"", "pipeline_layout", "start with the embedding");
  bad("pp: 2, pipeline_layout: \"Etttt|tttLt\"", "pipeline_layout", "end with the loss");
  bad("pp: 2, pipeline_layout: \"Ettt|ttttL\"", "pipeline_layout", "holds 7 transformer layers");
  bad("pp: 2, pipeline_layout: \"Etttt|ttttmL\"", "pipeline_layout", "MTP layers");
  bad("pp: 2, pipeline_layout: \"Etttt|tt tt L\"", "pipeline_layout", "is not a layer");
  // Empty stages are allowed, but not more per rank than there are things to hold (a layout of
  // a million stages hung the simulator).
  bad("pp: 2, pipeline_layout: \"E|*100tttttttt|L\"", "pipeline_layout", "gives vp = 51");
  // The layout's stages give vp: an error about vp names the layout.
  testing::expect_spec_error(llama("pp: 1, pipeline_layout: \"Etttt|ttttL\""), 1, "parallelism.pipeline_layout",
                             "need pp >= 2");
  bad("pp: 2, schedule: 1f1b, pipeline_layout: \"Ett|tt|tt|ttL\"", "pipeline_layout", "interleaved schedule");
  // Megatron refuses a true account_for_*; false is its default.
  EXPECT_EQ(testing::parse_job(llama("pp: 2, account_for_loss_in_pipeline_split: false, "
                                     "pipeline_layout: \"Etttt|ttttL\""), 2).parallel.vp, 1);
  bad("pp: 2, account_for_loss_in_pipeline_split: true, pipeline_layout: \"Etttt|ttttL\"",
      "account_for_loss_in_pipeline_split", "cannot be combined");
  testing::expect_spec_error(
      "model: {catalog: deepseek_v3, layers: 4, first_dense_layers: 1, mtp_layers: 1}\n"
      "parallelism: {tp: 1, pp: 2, ep: 2, pipeline_layout: \"Ett|m|tt|L\"}\n"
      "training: {seq_length: 1024, micro_batch_size: 1, global_batch_size: 4, precision: bf16}\n",
      4, "parallelism.pipeline_layout", "before the MTP");
  testing::expect_spec_error(
      "model: {catalog: deepseek_v3, layers: 4, first_dense_layers: 1, mtp_layers: 1}\n"
      "parallelism: {tp: 1, pp: 2, ep: 2, pipeline_layout: \"Ett|tt|m|L\"}\n"
      "training: {seq_length: 1024, micro_batch_size: 1, global_batch_size: 4, precision: bf16}\n",
      4, "parallelism.pipeline_layout", "standalone MTP stage");
}

}  // namespace
}  // namespace clustersim::workloads
