// `run --profile`: one rank's simulated step by op label (tools/op_profile.hpp, docs/outputs.md).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "../cli_test_util.hpp"

namespace {

using namespace clustersim::cli_test;  // run_cli, data, scratch, slurp, read_json

// Runs `args` with --json into `name` and returns the document (the run must succeed).
nlohmann::json run_json(const std::string& args, const std::string& name) {
  const auto r = run_cli(args + " --json " + scratch(name));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return read_json(scratch(name));
}

// The 4-layer Llama3-8B of small_job.yaml on one GPU.
std::string one_gpu_job() {
  const std::string path = scratch("one_gpu.yaml");
  std::ofstream(path) << "cluster: {platform: hgx_h100, gpus: 1}\n"
                         "model: {catalog: llama3_8b, layers: 4}\n"
                         "parallelism: {tp: 1, pp: 1, dp: 1}\n"
                         "training: {seq_length: 2048, micro_batch_size: 1, global_batch_size: 2, "
                         "precision: bf16}\n";
  return path;
}

double sum_of(const nlohmann::json& object) {
  double s = 0.0;
  for (const auto& [key, value] : object.items()) s += value.get<double>();
  return s;
}

TEST(OpProfile, OnOneGpuItsComputeAndFlopsAreTheStepsOwn) {
  const auto j = run_json("run " + one_gpu_job() + " --profile", "one.json");
  const auto& p = j["profile"];
  const double busy = p["compute_busy_s"];
  // One rank: the breakdown's compute is that rank's compute stream running compute ops.
  EXPECT_NEAR(busy, j["breakdown"]["compute_s"].get<double>(), 1e-9 * busy);
  EXPECT_NEAR(sum_of(p["compute_by_kind_s"]), busy, 1e-9 * busy);
  EXPECT_NEAR(sum_of(p["compute_by_phase_s"]), busy, 1e-9 * busy);
  // Every compute op played once: their FLOPs are the FLOPs the step executes.
  double flops = 0.0;
  for (const auto& row : p["rows"]) {
    if (row["kind"] != "collective" && row["kind"] != "p2p") flops += row["flops"].get<double>();
  }
  const double executed = j["achieved_tflops_per_gpu"].get<double>() * 1e12 * j["step_time_s"].get<double>();
  EXPECT_NEAR(flops, executed, 1e-9 * executed);
  EXPECT_EQ(p["compute_by_kind_s"]["host"].get<double>(), 0.0);
  EXPECT_GT(p["compute_by_kind_s"]["gemm"].get<double>(), p["compute_by_kind_s"]["attention"].get<double>());
  // Deterministic: the same inputs give the same profile, bit for bit.
  EXPECT_EQ(run_json("run " + one_gpu_job() + " --profile", "one_again.json")["profile"].dump(), p.dump());
}

TEST(OpProfile, RowsCountEachLayersKernelsPerMicrobatchAndRunBelowPeak) {
  // small_job: 4 layers over pp 2 (2 a stage), 32 sequences over dp 4 (8 microbatches).
  const auto j = run_json("run " + data("small_job.yaml") + " --profile-rank 1", "small.json");
  const auto& p = j["profile"];
  EXPECT_EQ(p["rank"], 1);
  EXPECT_EQ(p["pipeline_stage"], 0);
  std::map<std::string, nlohmann::json> by_label;
  double previous = INFINITY;
  for (const auto& row : p["rows"]) {
    const double busy = row["busy_s"];
    EXPECT_LE(busy, previous) << "rows are ordered longest first";
    previous = busy;
    if (row["stream"] == "compute" && !row["recompute"].get<bool>()) by_label[row["label"]] = row;
  }
  for (const std::string label : {"qkv", "fc1", "fc2", "proj", "fc1_dgrad", "fc1_wgrad"}) {
    ASSERT_TRUE(by_label.count(label)) << label;
    EXPECT_EQ(by_label[label]["kind"], "gemm");
    EXPECT_EQ(by_label[label]["calls"], 16) << label;
    const double tflops = by_label[label]["flops"].get<double>() / by_label[label]["busy_s"].get<double>() / 1e12;
    EXPECT_GT(tflops, 100.0) << label;
    EXPECT_LT(tflops, j["peak_tflops_per_gpu"].get<double>()) << label;
  }
  EXPECT_EQ(by_label["attn"]["kind"], "attention");
  EXPECT_EQ(by_label["attn"]["calls"], 16);
  // Stage 0 holds the embedding, not the loss.
  EXPECT_TRUE(by_label.count("embedding"));
  EXPECT_FALSE(by_label.count("cross_entropy"));
}

TEST(OpProfile, TheTraceKeepsOnlyTheRanksItAsksFor) {
  const std::string trace = scratch("profile_trace.json");
  const auto j = run_json("run " + data("small_job.yaml") + " --profile-rank 1 --trace " + trace +
                              " --trace-ranks 0",
                          "traced.json");
  EXPECT_EQ(j["profile"]["rank"], 1);
  std::set<int> ranks;
  const auto events = read_json(trace)["traceEvents"];
  for (const auto& e : events) ranks.insert(e["pid"].get<int>());
  EXPECT_EQ(ranks, std::set<int>{0});
  // A run without the flags has no profile: UncertaintyCli.WithoutTheFlagsRunHasNoBandOrProfile.
}

TEST(OpProfile, ARankThatIsNotPlayedInFullIsRefusedBeforeSimulating) {
  // Rank 2 is data-parallel coordinate 1 (tp 2 fastest): the identical-replica reduction plays
  // only its DP collectives, with rank 0 in its place.
  const auto r = run_cli("run " + data("small_job.yaml") + " --replicas identical --profile-rank 2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--profile-rank"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("profile rank 0"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("step time"), std::string::npos) << r.output;
  const auto outside = run_cli("run " + data("small_job.yaml") + " --profile-rank 16");
  EXPECT_EQ(outside.exit_code, 2) << outside.output;
  EXPECT_NE(outside.output.find("not a rank of this 16-GPU job"), std::string::npos) << outside.output;
}

}  // namespace
