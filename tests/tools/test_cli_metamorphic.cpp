// Metamorphic checks of whole runs: a platform that is better in one figure (NIC, NVLink, HBM
// bandwidth, tensor-core peak) never makes a step slower, and a worse fabric never makes it
// faster. Each variant is the same job with one `cluster.overrides` key changed. A model that
// ignored a figure (the measured model once ignored hbm_bandwidth and the peaks) or routed
// traffic over the wrong links fails here.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "../cli_test_util.hpp"

namespace {

using clustersim::cli_test::run_cli;

// Llama3-8B cut to 4 layers on 8 HGX H100 nodes in two scalable units of 4 nodes, so that the
// data-parallel rings cross leaves and spines: TP2 inside a node, PP2, DP16 across nodes.
std::string job(const std::string& extra_override) {
  return "cluster: {platform: hgx_h100, gpus: 64, overrides: {domains_per_su: 4" + extra_override +
         "}}\n"
         "model: {catalog: llama3_8b, layers: 4}\n"
         "parallelism: {tp: 2, pp: 2, dp: 16, sequence_parallel: true}\n"
         "training: {seq_length: 2048, micro_batch_size: 1, global_batch_size: 64, precision: bf16}\n";
}

struct Outcome {
  double step_s = 0.0;
  double compute_s = 0.0;
  std::string cost_tables;
};

Outcome run_yaml(const std::string& yaml) {
  const std::string base = ::testing::TempDir() + "/clustersim-" + std::to_string(::getpid()) + "-mm";
  std::ofstream(base + ".yaml") << yaml;
  const auto r = run_cli("run " + base + ".yaml --json " + base + ".json");
  EXPECT_EQ(r.exit_code, 0) << yaml << "\n" << r.output;
  std::ifstream in(base + ".json");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  Outcome o;
  if (j.is_discarded()) {
    ADD_FAILURE() << "no JSON for" << yaml;
    return o;
  }
  o.step_s = j["step_time_s"].get<double>();
  o.compute_s = j["breakdown"]["compute_s"].get<double>();
  o.cost_tables = j["cost_tables"].dump();
  return o;
}

Outcome run_variant(const std::string& extra_override) { return run_yaml(job(extra_override)); }

TEST(Metamorphic, BetterHardwareNeverSlowsAStepAndAWorseFabricNeverSpeedsItUp) {
  const Outcome base = run_variant("");
  ASSERT_GT(base.step_s, 0.0);
  // Faster links: never slower, and here strictly faster (the DP rings cross nodes, TP and the
  // rings' intra-node hops use NVLink).
  EXPECT_LT(run_variant(", nic_bandwidth: 800Gbps").step_s, base.step_s);
  EXPECT_LT(run_variant(", nvlink_bandwidth: 900GB/s").step_s, base.step_s);
  // Slower NICs and a 4:1 leaf: strictly slower (the two SUs meet at the spines).
  EXPECT_GT(run_variant(", nic_bandwidth: 200Gbps").step_s, base.step_s);
  EXPECT_GT(run_variant(", oversubscription: {leaf: 4}").step_s, base.step_s);
  // The GPU's own figures count with the measured cost model too, and the run says so.
  const Outcome hbm = run_variant(", hbm_bandwidth: 6.7TB/s");
  EXPECT_LT(hbm.compute_s, base.compute_s);
  EXPECT_LT(hbm.step_s, base.step_s);
  EXPECT_NE(hbm.cost_tables.find("hbm_bandwidth 6.7 TB/s vs the rule's 3.35"), std::string::npos);
  const Outcome peak = run_variant(", peak_bf16: 1978TFLOPS");
  EXPECT_LT(peak.compute_s, 0.8 * base.compute_s);  // GEMMs and attention are most of it
  EXPECT_NE(peak.cost_tables.find("GEMM BF16 and attention x2"), std::string::npos);
  EXPECT_EQ(base.cost_tables.find("platform GPU figures"), std::string::npos);
}

// Longer wire latencies never shorten a step. NCCL's latency terms include the wire, so a
// collective charges them net of the route latency its flows carried; netting the largest route
// latency of a ring phase instead of the one of its slower flow made a 50 us NIC shorten this
// ring by 99 us (its NVLink flow is the slower one; review of 2026-12-05).
std::string latency_job(const std::string& layout, const std::string& override_) {
  return "cluster: {platform: hgx_h100, gpus: 16, overrides: {" + override_ + "}}\n"
         "model: {catalog: llama3_8b, layers: 1}\n"
         "parallelism: {" + layout + ", zero_stage: 0, overlap_grad_reduce: false}\n"
         "training: {seq_length: 2048, micro_batch_size: 1, global_batch_size: 16, precision: bf16}\n";
}

TEST(Metamorphic, LongerLatenciesNeverShortenAStep) {
  const std::string dp = "tp: 1, dp: 16";
  double last = 0.0;
  for (const char* nic : {"300ns", "50us", "200us", "5ms"}) {
    const double step = run_yaml(latency_job(dp, std::string("nic_latency: ") + nic)).step_s;
    EXPECT_GE(step, last) << "nic_latency " << nic;
    last = step;
  }
  EXPECT_GT(last, run_yaml(latency_job(dp, "nic_latency: 300ns")).step_s * 1.05);  // 5 ms shows
  const std::string tp = "tp: 4, dp: 4, sequence_parallel: true";
  last = 0.0;
  for (const char* nvl : {"598ns", "10us", "100us"}) {
    const double step = run_yaml(latency_job(tp, std::string("nvlink_latency: ") + nvl)).step_s;
    EXPECT_GE(step, last) << "nvlink_latency " << nvl;
    last = step;
  }
}

}  // namespace
