// The report's accuracy notes (tools/accuracy_notes.hpp, docs/outputs.md): a MoE job is told that
// held-out MoE steps ran slower than simulated, a combined-1F1B job also that the overlap's gain
// is an upper bound; a dense job gets no note. They reach the text report and the JSON.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/accuracy_notes.hpp"
#include "tools/job.hpp"
#include "tools/simulate.hpp"

namespace clustersim::tools {
namespace {

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

TEST(AccuracyNotes, ReachTheTextAndTheJsonOfARun) {
  const std::string path = ::testing::TempDir() + "/accuracy_notes_moe.yaml";
  std::ofstream(path) << "cluster: {platform: hgx_h100, gpus: 8}\n"
                         "model: {catalog: mixtral_8x7b, layers: 2}\n"
                         "parallelism: {tp: 1, pp: 1, ep: 8}\n"
                         "training: {seq_length: 1024, micro_batch_size: 1, global_batch_size: 8, "
                         "precision: bf16}\n";
  RunReport r = simulate_job(load_job(path), SimulateOptions{});
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

}  // namespace
}  // namespace clustersim::tools
