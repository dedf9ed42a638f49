// One rank per TP group played where TP collectives are estimated (sim::EngineOptions::fold_tp,
// docs/engine.md): the same step and timelines as playing every rank, with a fraction of the
// events, including on fabrics where several TP coordinates share links (leaves serving two
// rails, oversubscribed spine-group uplinks of a 3-tier fat-tree).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "tools/job.hpp"
#include "tools/simulate.hpp"

namespace clustersim::tools {
namespace {

// 256 H100 on a fabric of 16-port switches: SUs of 4 nodes whose leaves serve two rails each,
// 3 tiers with spine groups of one SU, leaves and spine groups 2:1 oversubscribed, so the
// data-parallel rings and pipeline transfers of TP8 x PP2 x DP16 contend on links that TP
// coordinates share (leaves: 2, spine groups: all 8).
constexpr const char* kSharedFabric =
    "cluster:\n"
    "  platform: hgx_h100\n"
    "  gpus: 256\n"
    "  overrides: {switch_radix: 16, domains_per_su: 4, tiers: 3, oversubscription: {leaf: 2, spine: 2}}\n"
    "model: {catalog: llama3_70b, layers: 8}\n"
    "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 64, precision: bf16}\n";

RunReport run(const std::string& name, const std::string& parallel, bool fold,
              std::vector<int> timeline_ranks = {}, const std::string& replicas = "full") {
  const std::string path = ::testing::TempDir() + "/folded_tp_" + name + ".yaml";
  std::ofstream(path) << kSharedFabric << "parallelism:\n" << parallel;
  SimulateOptions o;
  o.fold_tp = fold;
  o.replicas = replicas;
  o.timeline = !timeline_ranks.empty();
  o.timeline_ranks = std::move(timeline_ranks);
  return simulate_job(load_job(path), o);
}

TEST(FoldedTp, SharedLinksScaledGiveTheFullStep) {
  const std::string layout = "  tp: 8\n  pp: 2\n  sequence_parallel: true\n";
  const RunReport full = run("full", layout, false);
  const RunReport folded = run("folded", layout, true);
  EXPECT_TRUE(folded.step.tp_folded);
  EXPECT_FALSE(full.step.tp_folded);
  // Without the shared links' scaling the folded step is 2.6% shorter (checked when written).
  EXPECT_NEAR(folded.step.step_time_s / full.step.step_time_s, 1.0, 1e-9);
  EXPECT_NEAR(folded.step.breakdown.bubble_s / full.step.breakdown.bubble_s, 1.0, 1e-9);
  EXPECT_NEAR(folded.step.breakdown.exposed_comm_s / full.step.breakdown.exposed_comm_s, 1.0, 1e-9);
  EXPECT_LT(folded.step.events * 7, full.step.events);
}

TEST(FoldedTp, WithIdenticalReplicasGivesTheSameStep) {
  // The mirrors of the other data-parallel replicas fold as well (TP coordinate 0 plays).
  const std::string layout = "  tp: 8\n  pp: 2\n  sequence_parallel: true\n";
  const RunReport full = run("replicas_full", layout, false, {}, "identical");
  const RunReport folded = run("replicas_folded", layout, true, {}, "identical");
  EXPECT_EQ(folded.replicas, full.replicas);
  EXPECT_TRUE(folded.step.tp_folded);
  EXPECT_NEAR(folded.step.step_time_s / full.step.step_time_s, 1.0, 1e-9);
  EXPECT_LT(folded.step.events * 7, full.step.events);
}

TEST(FoldedTp, AFoldedRanksTimelineIsTheOneItWouldPlay) {
  const std::string layout = "  tp: 8\n  pp: 2\n  sequence_parallel: true\n";
  const RunReport full = run("timeline_full", layout, false, {3, 8});
  const RunReport folded = run("timeline_folded", layout, true, {3, 8});
  ASSERT_EQ(folded.step.timeline.size(), full.step.timeline.size());
  auto by_rank = [](std::vector<sim::TimelineEvent> events) {
    std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
      return a.rank != b.rank ? a.rank < b.rank : a.start_s < b.start_s;
    });
    return events;
  };
  const auto a = by_rank(full.step.timeline);
  const auto b = by_rank(folded.step.timeline);
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].rank, b[i].rank);
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_NEAR(a[i].end_s, b[i].end_s, 1e-9);
  }
}

TEST(FoldedTp, NotFoldedWhereTpCollectivesArePlayed) {
  // TP4: two TP groups per node, data-parallel pairs inside a node, TP collectives played.
  const RunReport r = run("tp4", "  tp: 4\n  pp: 2\n  sequence_parallel: true\n", true);
  EXPECT_FALSE(r.step.tp_estimated);
  EXPECT_FALSE(r.step.tp_folded);
}

}  // namespace
}  // namespace clustersim::tools
