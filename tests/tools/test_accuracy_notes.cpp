// The report's accuracy notes (tools/accuracy_notes.hpp, docs/outputs.md): a MoE job is told that
// held-out MoE steps ran slower than simulated, a combined-1F1B job also that the overlap's gain
// is an upper bound, a job on a Blackwell GPU under the measured model that held-out steps there
// ran slower than simulated; a dense Hopper job gets no note. They reach the text report and the
// JSON.
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/accuracy_notes.hpp"
#include "tools/cost_models.hpp"
#include "tools/job.hpp"
#include "tools/simulate.hpp"
#include "tools/step_figures.hpp"

namespace clustersim::tools {
namespace {

// A small 8-GPU job (2 layers, seq 1024, global batch 8, BF16) on `platform` of `model` laid out
// as `parallelism`, loaded from a file named `name` in the test's temporary folder.
Job small_job(const std::string& name, const std::string& platform, const std::string& model,
              const std::string& parallelism) {
  const std::string path = ::testing::TempDir() + "/" + name + ".yaml";
  std::ofstream(path) << "cluster: {platform: " << platform << ", gpus: 8}\n"
                      << "model: {catalog: " << model << ", layers: 2}\n"
                      << "parallelism: {" << parallelism << "}\n"
                      << "training: {seq_length: 1024, micro_batch_size: 1, global_batch_size: 8, "
                         "precision: bf16}\n";
  return load_job(path);
}

TEST(AccuracyNotes, OnlyMoeJobsGetThemAndTheCombined1f1bOneMore) {
  workloads::WorkloadSpec dense;
  EXPECT_TRUE(accuracy_notes(dense).empty());
  dense.parallel.overlap_moe_expert_parallel_comm = true;  // inert without experts
  EXPECT_TRUE(accuracy_notes(dense).empty());

  workloads::WorkloadSpec moe;
  moe.model.experts = 8;
  const auto one = accuracy_notes(moe);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].rfind("MoE: ", 0), 0u) << one[0];
  EXPECT_NE(one[0].find("MoE steps beside the reference set"), std::string::npos) << one[0];
  moe.parallel.overlap_moe_expert_parallel_comm = true;
  const auto two = accuracy_notes(moe);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0], one[0]);
  EXPECT_NE(two[1].find("upper bound"), std::string::npos) << two[1];
}

TEST(AccuracyNotes, BlackwellJobsUnderTheMeasuredModelGetTheDerivedGpuLineFirst) {
  for (const char* gpu : {"B200", "GB200", "B300", "GB300"}) {
    EXPECT_TRUE(derives_across_architectures("measured", gpu)) << gpu;
    EXPECT_FALSE(derives_across_architectures("roofline", gpu)) << gpu;  // not from H200 tables
  }
  EXPECT_FALSE(derives_across_architectures("measured", "H200-SXM"));  // measured
  EXPECT_FALSE(derives_across_architectures("measured", "H100-SXM"));  // the measured die
  EXPECT_FALSE(derives_across_architectures("measured", "MI300X"));    // no rule: the model says so
  EXPECT_THROW(derives_across_architectures("analytic", "B200"), std::invalid_argument);

  workloads::WorkloadSpec dense;
  const auto derived = accuracy_notes(dense, "GB300");
  ASSERT_EQ(derived.size(), 1u);
  EXPECT_EQ(derived[0].rfind("derived GPU (GB300): ", 0), 0u) << derived[0];
  EXPECT_NE(derived[0].find("Dense steps on Blackwell GPUs"), std::string::npos) << derived[0];
  workloads::WorkloadSpec moe;
  moe.model.experts = 8;
  const auto both = accuracy_notes(moe, "GB300");
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0], derived[0]);
  EXPECT_EQ(both[1], accuracy_notes(moe)[0]);

  const Job job = small_job("accuracy_notes_b200", "hgx_b200", "llama3_8b", "tp: 1, pp: 1");
  const RunReport b200 = simulate_job(job, SimulateOptions{});
  EXPECT_NE(report_text(b200).find("accuracy      derived GPU (B200): "), std::string::npos);
  // The B200 takes no power state: the report does not say one was applied (it had said "on").
  EXPECT_FALSE(b200.power_state);
  EXPECT_FALSE(nlohmann::json::parse(report_json(b200))["power_state"]["applied"].get<bool>());
  EXPECT_NE(report_text(b200).find("power state   none (the cost model has no measured one for this GPU)"),
            std::string::npos);
  SimulateOptions roofline;
  roofline.cost = "roofline";
  EXPECT_TRUE(simulate_job(job, roofline).accuracy_notes.empty());
}

TEST(AccuracyNotes, SummaryOfManyRunsSaysHowManyCarryEachNote) {
  EXPECT_EQ(accuracy_summary({}), "");
  EXPECT_EQ(accuracy_summary({{}, {}}), "");
  EXPECT_EQ(accuracy_summary({{"a"}, {"a"}}), "accuracy      a\n");
  EXPECT_EQ(accuracy_summary({{"a"}, {"b", "a"}, {}}),
            "accuracy      (2 of 3 runs) a\naccuracy      (1 of 3 runs) b\n");
}

// Scale and sweep take each point's notes from its worker's figures (simulate_figures' JSON).
TEST(AccuracyNotes, TravelWithTheFiguresOfAWorker) {
  const Job job = small_job("accuracy_notes_figures", "gb200_nvl72", "mixtral_8x7b", "tp: 1, pp: 1, ep: 8");
  const StepFigures f = parse_figures(simulate_figures(job, ""));
  const RunReport r = simulate_job(job, options_from_job(job));
  ASSERT_EQ(r.accuracy_notes.size(), 2u);  // derived GPU, MoE
  EXPECT_EQ(f.accuracy_notes, r.accuracy_notes);
}

TEST(AccuracyNotes, ReachTheTextAndTheJsonOfARun) {
  RunReport r = simulate_job(small_job("accuracy_notes_moe", "hgx_h100", "mixtral_8x7b", "tp: 1, pp: 1, ep: 8"),
                             SimulateOptions{});
  ASSERT_EQ(r.accuracy_notes.size(), 1u);
  EXPECT_NE(report_text(r).find("accuracy      MoE: "), std::string::npos);
  const auto j = nlohmann::json::parse(report_json(r));
  ASSERT_TRUE(j.contains("accuracy_notes"));
  EXPECT_EQ(j["accuracy_notes"].size(), 1u);
  EXPECT_EQ(j["accuracy_notes"][0].get<std::string>(), r.accuracy_notes[0]);
  // A second note continues under the first, aligned with the other report lines' values.
  r.accuracy_notes.push_back("second");
  EXPECT_NE(report_text(r).find("\n              second\n"), std::string::npos);
  // A dense job's JSON holds the key, empty.
  r.accuracy_notes.clear();
  const auto dense = nlohmann::json::parse(report_json(r));
  ASSERT_TRUE(dense.contains("accuracy_notes"));
  EXPECT_TRUE(dense["accuracy_notes"].empty());
}

// A capacity below 1 drops routed tokens that Megatron's MFU count still takes: the report says
// how to read MFU then, and only then.
TEST(AccuracyNotes, MfuNoteOnlyWhereTheCapacityDropsTokens) {
  workloads::WorkloadSpec moe;
  moe.model.experts = 8;
  EXPECT_EQ(mfu_note(moe), "");  // dropless
  moe.training.moe_capacity_factor = 1.25;
  EXPECT_EQ(mfu_note(moe), "");
  moe.training.moe_capacity_factor = 0.5;
  EXPECT_EQ(mfu_note(moe).rfind("moe_capacity_factor 0.5 < 1 drops routed tokens", 0), 0u) << mfu_note(moe);
  workloads::WorkloadSpec dense;
  dense.training.moe_capacity_factor = 0.5;  // not a MoE job (the loader refuses it anyway)
  EXPECT_EQ(mfu_note(dense), "");
}

}  // namespace
}  // namespace clustersim::tools
