// Tensor-parallel collectives charged NCCL's estimate where only TP traffic crosses NVLink
// (sim::EngineOptions::cost_isolated_tp, docs/engine.md): the same step as playing them as flows,
// with fewer events; not applied where another communicator shares the NVLink domain.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "tools/job.hpp"
#include "tools/simulate.hpp"

namespace clustersim::tools {
namespace {

RunReport run(const std::string& name, const std::string& parallel, bool costed,
              const std::string& model = "{catalog: llama3_70b, layers: 8}",
              const std::string& nccl_algo = "") {
  const std::string path = ::testing::TempDir() + "/costed_tp_" + name + ".yaml";
  std::ofstream(path) << "cluster: {platform: hgx_h100, gpus: 32}\n"
                         "model: " + model + "\n"
                         "parallelism:\n" + parallel +
                         "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 16, "
                         "precision: bf16}\n";
  SimulateOptions o;
  o.cost_isolated_tp = costed;
  o.nccl_algo = nccl_algo;
  return simulate_job(load_job(path), o);
}

void expect_same_step(const RunReport& played, const RunReport& costed) {
  EXPECT_NEAR(costed.step.step_time_s / played.step.step_time_s, 1.0, 1e-6);
  EXPECT_NEAR(costed.step.breakdown.compute_s / played.step.breakdown.compute_s, 1.0, 1e-6);
  EXPECT_NEAR(costed.step.breakdown.exposed_comm_s, played.step.breakdown.exposed_comm_s,
              1e-6 * played.step.step_time_s);
}

TEST(CostedTp, IsolatedTpGroupsGiveTheSameStepWithFewerEvents) {
  // TP8 fills each 8-GPU node; PP2 x DP2 cross nodes: only TP traffic on NVLink.
  const std::string layout = "  tp: 8\n  pp: 2\n  sequence_parallel: true\n";
  const RunReport played = run("plain_played", layout, false);
  const RunReport costed = run("plain_costed", layout, true);
  expect_same_step(played, costed);
  EXPECT_LT(costed.step.events, played.step.events);
  EXPECT_TRUE(costed.step.tp_estimated);
  EXPECT_FALSE(played.step.tp_estimated);
}

TEST(CostedTp, TpOverlapAndHeldSmsGiveTheSameStep) {
  // TE's userbuffers overlap: the TP collectives run beside GEMMs whose SMs they hold.
  const std::string layout = "  tp: 8\n  pp: 2\n  vp: 2\n  sequence_parallel: true\n"
                             "  tp_comm_overlap: true\n";
  const RunReport played = run("ub_played", layout, false);
  const RunReport costed = run("ub_costed", layout, true);
  expect_same_step(played, costed);
  EXPECT_LT(costed.step.events, played.step.events);
}

TEST(CostedTp, ExpertTensorParallelCollectivesOnTheTpGroupsToo) {
  // Mixtral with etp = tp = 8 (Megatron-core's default) and ep 4 across nodes: the expert
  // layers' all-gathers and reduce-scatters run on the TP groups and are estimated with them.
  const std::string layout = "  tp: 8\n  ep: 4\n  sequence_parallel: true\n";
  const std::string mixtral = "{catalog: mixtral_8x7b, layers: 4}";
  const RunReport played = run("moe_played", layout, false, mixtral);
  const RunReport costed = run("moe_costed", layout, true, mixtral);
  EXPECT_TRUE(costed.step.tp_estimated);
  EXPECT_TRUE(costed.step.tp_folded);
  expect_same_step(played, costed);
  EXPECT_LT(costed.step.events * 7, played.step.events);
}

// A forced algorithm that NCCL's tuner never picks (NVLS: a deployment choice) is estimated like
// the others: its TP all-reduces (TP without SP) cost what playing its plan costs. Until
// 2026-12-05 its estimate was an infinite sentinel, and the engine's sleep aborted the process.
TEST(CostedTp, ForcedNvlsAllReducesEstimatedAsPlayed) {
  const std::string layout = "  tp: 8\n  pp: 2\n";
  const std::string model = "{catalog: llama3_70b, layers: 8}";
  const RunReport played = run("nvls_played", layout, false, model, "nvls");
  const RunReport costed = run("nvls_costed", layout, true, model, "nvls");
  ASSERT_TRUE(std::isfinite(costed.step.step_time_s));
  EXPECT_TRUE(costed.step.tp_estimated);
  expect_same_step(played, costed);
  // NVLS moves each buffer once instead of the ring's 2(p-1)/p times: faster TP all-reduces.
  const RunReport ring = run("ring_costed", layout, true, model, "ring");
  EXPECT_LT(costed.step.step_time_s, ring.step.step_time_s);
}

TEST(CostedTp, TpSharingTheDomainWithAnotherGroupIsPlayed) {
  // TP4: two TP groups per node, and each data-parallel pair is inside one node.
  const std::string layout = "  tp: 4\n  pp: 2\n  sequence_parallel: true\n";
  const RunReport played = run("shared_played", layout, false);
  const RunReport costed = run("shared_costed", layout, true);
  EXPECT_EQ(costed.step.events, played.step.events);
  EXPECT_FALSE(costed.step.tp_estimated);
  EXPECT_EQ(costed.step.step_time_s, played.step.step_time_s);
}

}  // namespace
}  // namespace clustersim::tools
