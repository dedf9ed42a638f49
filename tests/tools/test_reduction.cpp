// The identical-data-parallel-replica reduction (docs/engine.md) must agree with the full
// simulation: step time and breakdown within 1% from 64 to 1,024 GPUs, dense and with experts.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tools/job.hpp"
#include "tools/simulate.hpp"

namespace clustersim::tools {
namespace {

struct Case {
  const char* name;
  int gpus;
  const char* yaml;
};

Job load(const Case& c) {
  const std::string path = ::testing::TempDir() + "/reduction_" + c.name + ".yaml";
  std::ofstream(path) << c.yaml;
  return load_job(path);
}

class ReductionAgreement : public ::testing::TestWithParam<Case> {};

TEST_P(ReductionAgreement, IdenticalReplicasMatchTheFullSimulationWithinOnePercent) {
  const Job job = load(GetParam());
  SimulateOptions full, reduced;
  full.replicas = "full";
  reduced.replicas = "identical";
  const RunReport a = simulate_job(job, full);
  const RunReport b = simulate_job(job, reduced);
  ASSERT_EQ(a.replicas, "full");
  ASSERT_EQ(b.replicas, "identical");
  EXPECT_LT(b.step.events, a.step.events);  // the reduction must actually reduce
  const double step = a.step.step_time_s;
  EXPECT_NEAR(b.step.step_time_s, step, 0.01 * step);
  EXPECT_NEAR(b.step.breakdown.compute_s, a.step.breakdown.compute_s, 0.01 * step);
  EXPECT_NEAR(b.step.breakdown.exposed_comm_s, a.step.breakdown.exposed_comm_s, 0.01 * step);
  EXPECT_NEAR(b.step.breakdown.bubble_s, a.step.breakdown.bubble_s, 0.01 * step);
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, ReductionAgreement,
    ::testing::Values(
        Case{"llama70b_64", 64,
             "cluster: {platform: hgx_h100, gpus: 64}\n"
             "model: {catalog: llama3_70b, layers: 8}\n"
             "parallelism: {tp: 4, pp: 2, dp: 8, sequence_parallel: true}\n"
             "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 64, "
             "precision: bf16}\n"},
        Case{"llama70b_cp2_64", 64,
             "cluster: {platform: hgx_h100, gpus: 64}\n"
             "model: {catalog: llama3_70b, layers: 8}\n"
             "parallelism: {tp: 4, pp: 2, cp: 2, dp: 4, sequence_parallel: true}\n"
             "training: {seq_length: 8192, micro_batch_size: 1, global_batch_size: 32, "
             "precision: bf16}\n"},
        Case{"llama70b_256_fp8", 256,
             "cluster: {platform: hgx_h100, gpus: 256}\n"
             "model: {catalog: llama3_70b, layers: 8}\n"
             "parallelism: {tp: 8, pp: 2, dp: 16, sequence_parallel: true}\n"
             "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 128, "
             "precision: fp8}\n"},
        Case{"llama405b_1024", 1024,
             "cluster: {platform: hgx_h100, gpus: 1024}\n"
             "model: {catalog: llama3_405b, layers: 16}\n"
             "parallelism: {tp: 8, pp: 4, dp: 32, sequence_parallel: true}\n"
             "training: {seq_length: 8192, micro_batch_size: 1, global_batch_size: 256, "
             "precision: bf16}\n"},
        // Experts: the replicas are expert-data-parallel (EP all-to-alls tie DP ranks together).
        Case{"mixtral_ep4_256", 256,
             "cluster: {platform: hgx_h100, gpus: 256}\n"
             "model: {catalog: mixtral_8x7b, layers: 4}\n"
             "parallelism: {tp: 8, pp: 2, ep: 4, sequence_parallel: true}\n"
             "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 64, "
             "precision: bf16}\n"},
        Case{"mixtral_tp2_ep8_128", 128,
             "cluster: {platform: hgx_h100, gpus: 128}\n"
             "model: {catalog: mixtral_8x7b, layers: 4}\n"
             "parallelism: {tp: 2, pp: 2, ep: 8, sequence_parallel: true}\n"
             "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 64, "
             "precision: bf16}\n"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace clustersim::tools

namespace clustersim::tools {
namespace {

// On an oversubscribed fabric the reduction leaves out flows that share the thin uplinks: the
// report says so (docs/outputs.md, replicas_note); on a 1:1 fabric it says nothing.
TEST(ReductionNote, SaysWhatTheReductionLeavesOutOnOversubscribedFabrics) {
  const char* body =
      "model: {catalog: llama3_8b, layers: 2}\n"
      "parallelism: {tp: 4, pp: 2, dp: 8, sequence_parallel: true}\n"
      "training: {seq_length: 2048, micro_batch_size: 1, global_batch_size: 32, precision: bf16}\n";
  SimulateOptions reduced;
  reduced.replicas = "identical";
  const Job thin = load(Case{"note_thin", 64,
                             (std::string("cluster: {platform: hgx_h100, gpus: 64, overrides: "
                                          "{kind: non_rail, oversubscription: {leaf: 8}}}\n") + body).c_str()});
  const RunReport a = simulate_job(thin, reduced);
  EXPECT_NE(a.replicas_note.find("leaf 8:1"), std::string::npos) << a.replicas_note;
  SimulateOptions full;
  full.replicas = "full";
  EXPECT_EQ(simulate_job(thin, full).replicas_note, "");  // every flow played
  const Job fat = load(Case{"note_fat", 64, (std::string("cluster: {platform: hgx_h100, gpus: 64}\n") + body).c_str()});
  EXPECT_EQ(simulate_job(fat, reduced).replicas_note, "");
  // A spine ratio counts with 3 tiers only: 64 GPUs take 2 with tiers: auto, 3 when asked.
  const char* spine = "cluster: {platform: hgx_h100, gpus: 64, overrides: {oversubscription: {spine: 4}";
  const Job two = load(Case{"note_spine2", 64, (std::string(spine) + "}}\n" + body).c_str()});
  const RunReport spine2 = simulate_job(two, reduced);
  EXPECT_EQ(spine2.replicas_note, "");
  // The stated spine ratio is said to have no effect there (it was ignored silently).
  EXPECT_NE(spine2.fabric_note.find("spine oversubscription 4:1 has no effect"), std::string::npos)
      << spine2.fabric_note;
  EXPECT_EQ(a.fabric_note, "");  // 8:1 leaves of 64 GPUs act
  // With 3 tiers the spine's uplinks exist only above two or more spine groups: 64 GPUs on
  // 64-port switches make one (no note); 128 GPUs on 16-port switches two (16 leaves, 8 a group).
  const Job one_group = load(Case{"note_spine3", 64, (std::string(spine) + ", tiers: 3}}\n" + body).c_str()});
  EXPECT_EQ(simulate_job(one_group, reduced).replicas_note, "");
  const Job groups = load(Case{"note_spine3_groups", 128,
                               "cluster: {platform: hgx_h100, gpus: 128, overrides: {oversubscription: "
                               "{spine: 4}, tiers: 3, switch_radix: 16, domains_per_su: 8}}\n"
                               "model: {catalog: llama3_8b, layers: 2}\n"
                               "parallelism: {tp: 4, pp: 2, dp: 16, sequence_parallel: true}\n"
                               "training: {seq_length: 2048, micro_batch_size: 1, global_batch_size: 64, "
                               "precision: bf16}\n"});
  const std::string note = simulate_job(groups, reduced).replicas_note;
  EXPECT_NE(note.find("(leaf 1:1, spine 4:1)"), std::string::npos) << note;
}

// An expert-parallel job's other replicas exchange all-to-alls across the oversubscribed tier:
// `auto` plays them all there (above 256 GPUs, where it would otherwise reduce), and a forced
// reduction's note names them.
TEST(ReductionNote, AutoPlaysEveryReplicaOfAnExpertParallelJobOnAnOversubscribedFabric) {
  const char* body =
      "model: {catalog: mixtral_8x7b, layers: 2}\n"
      "parallelism: {tp: 1, pp: 1, ep: 8}\n"
      "training: {seq_length: 1024, micro_batch_size: 1, global_batch_size: 512, precision: bf16}\n";
  const Job thin = load(Case{"ep_thin", 512, (std::string("cluster: {platform: hgx_h100, gpus: 512, "
                                                          "overrides: {oversubscription: {leaf: 4}}}\n") + body).c_str()});
  const Job fat = load(Case{"ep_fat", 512, (std::string("cluster: {platform: hgx_h100, gpus: 512}\n") + body).c_str()});
  SimulateOptions automatic;
  EXPECT_EQ(simulate_job(thin, automatic).replicas, "full");
  EXPECT_EQ(simulate_job(fat, automatic).replicas, "identical");
  SimulateOptions reduced;
  reduced.replicas = "identical";
  const std::string note = simulate_job(thin, reduced).replicas_note;
  EXPECT_NE(note.find("expert-parallel (all-to-all)"), std::string::npos) << note;
}

}  // namespace
}  // namespace clustersim::tools
