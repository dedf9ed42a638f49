// Bad input never crashes the binary: every single-value mutation of jobs that exercise each
// section of the job spec ends in exit 0 (the job is still valid), 2 (an error naming the job
// file, the line and the field) or 3 (the job does not fit in GPU memory), never a signal, an
// uncaught exception (exit 1) or a hang. A GPU name no cost model knew once ended in exit 1.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "../cli_test_util.hpp"

namespace {

using clustersim::cli_test::run_cli;

// Small jobs (16-72 GPUs, 4 layers) that together touch every section: MoE with FP8, TP overlap,
// shared experts beside the exchanges, an MTP depth, node-limited routing and the simulation
// options; an inline model with ZeRO-3 CPU offload, full recompute in groups of 2, energy and economics on
// B200; a GB200 NVL72 rack with reliability; DeepEP under the combined 1F1B schedule; activation
// offloading of every module under the interleaved schedule with MoE layers; the zero-bubble
// schedule over MLA and MoE layers with an MTP depth, FP8, gradients reduced after the Ws.
const std::vector<std::string>& bases() {
  static const std::vector<std::string> kBases = {
      "cluster: {platform: hgx_h100, gpus: 16, overrides: {name: H100-SXM, nic_bandwidth: 400Gbps}}\n"
      "model: {catalog: mixtral_8x7b, layers: 4, shared_expert_ffn: 4096, mtp_layers: 1, "
      "router_groups: 4, router_group_topk: 2}\n"
      "parallelism: {tp: 2, pp: 2, dp: 4, ep: 4, vp: 2, sequence_parallel: true, "
      "tp_comm_overlap: true, tp_comm_overlap_cfg: {proj_fprop: {method: pipeline, num_sm: 8, "
      "num_splits: 4}}, moe_shared_expert_overlap: true}\n"
      "training: {seq_length: 2048, micro_batch_size: 1, global_batch_size: 16, precision: fp8, "
      "recompute: selective, moe_imbalance: 1.5}\n"
      "simulation: {replicas: auto, cost_model: measured, nccl_proto: auto}\n",
      "cluster: {platform: hgx_b200, gpus: 8}\n"
      "model: {layers: 4, hidden: 1024, ffn: 4096, heads: 16, kv_heads: 4, vocab: 32000, "
      "activation: swiglu, norm: rmsnorm, position: rope, tied_embeddings: false, bias: false}\n"
      "parallelism: {dp: 8, zero_stage: 3, optimizer_offload: cpu, offload_threads: per_rank}\n"
      "training: {seq_length: 4096, micro_batch_size: 2, global_batch_size: 32, precision: bf16, "
      "recompute: full, recompute_method: uniform, recompute_num_layers: 2, cross_entropy: chunked}\n"
      "energy: {pue: 1.2, train_tokens: 1e11}\n"
      "economics: {pricing: rental, usd_per_gpu_hour: 3.5}\n",
      "cluster: {platform: gb200_nvl72, gpus: 72}\n"
      "model: {catalog: llama3_8b, layers: 4}\n"
      "parallelism: {tp: 2, pp: 2, dp: 18, sequence_parallel: true}\n"
      "training: {seq_length: 2048, micro_batch_size: 1, global_batch_size: 36, precision: bf16}\n"
      "reliability: {domain_mtbf: 5000h, domain_repair: 24h, trials: 20}\n",
      "cluster: {platform: hgx_h100, gpus: 16}\n"
      "model: {catalog: deepseek_v3, layers: 4, first_dense_layers: 1, mtp_layers: 0}\n"
      "parallelism: {tp: 1, pp: 2, vp: 2, ep: 8, moe_token_dispatcher: deepep, "
      "overlap_moe_expert_parallel_comm: true, delay_wgrad_compute: true}\n"
      "training: {seq_length: 2048, micro_batch_size: 1, global_batch_size: 32, precision: fp8, "
      "fp8_recipe: blockwise, recompute: full}\n",
      "cluster: {platform: hgx_h100, gpus: 16}\n"
      "model: {catalog: mixtral_8x7b, layers: 4}\n"
      "parallelism: {tp: 2, pp: 2, vp: 2, ep: 4, sequence_parallel: true}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 16, precision: fp8, "
      "offload_modules: [qkv_linear, core_attn, attn_proj, mlp_norm, expert_fc1, moe_act]}\n",
      "cluster: {platform: hgx_h100, gpus: 16}\n"
      "model: {catalog: deepseek_v3, layers: 4, first_dense_layers: 1, mtp_layers: 1, experts: 16, "
      "top_k: 4}\n"
      "parallelism: {tp: 2, pp: 4, ep: 2, sequence_parallel: true, schedule: zb_h1, "
      "overlap_grad_reduce: false}\n"
      "training: {seq_length: 2048, micro_batch_size: 1, global_batch_size: 16, precision: fp8}\n",
  };
  return kBases;
}

// Values of the wrong type, sign, size or unit.
const std::vector<std::string>& bad_values() {
  static const std::vector<std::string> kValues = {"-1", "0", "abc", "[1, 2]", "{a: 1}",
                                                   "1e30", "''", "2.5", "400Gbps", "null"};
  return kValues;
}

struct Mutation {
  std::string text;
  std::string what;
};

// Two values per `key: value` of each base, chosen by the value's position so that every bad
// value meets every kind of field across the bases (deterministic).
std::vector<Mutation> mutations() {
  const std::regex pair(R"((\b\w+): ([^,{}\[\]\n]+))");
  std::vector<Mutation> out;
  const auto& values = bad_values();
  for (std::size_t b = 0; b < bases().size(); ++b) {
    const std::string& base = bases()[b];
    std::size_t j = 0;
    for (auto it = std::sregex_iterator(base.begin(), base.end(), pair); it != std::sregex_iterator();
         ++it, ++j) {
      const auto& m = *it;
      const auto pos = static_cast<std::size_t>(m.position(2));
      const auto len = static_cast<std::size_t>(m.length(2));
      for (std::size_t k = 0; k < 2; ++k) {
        const std::string& v = values[(3 * j + 5 * k + b) % values.size()];
        out.push_back({base.substr(0, pos) + v + base.substr(pos + len),
                       "base " + std::to_string(b) + ": " + m.str(1) + ": " + v});
      }
    }
  }
  return out;
}

TEST(CliRobustness, EveryMutatedValueIsValidOrAnErrorAtItsLine) {
  const std::string job = ::testing::TempDir() + "/clustersim-" + std::to_string(::getpid()) +
                          "-mutated.yaml";
  const std::regex located("error: " + std::regex_replace(job, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                           R"(:[1-9][0-9]*: [A-Za-z0-9_.]+: )");
  const auto list = mutations();
  ASSERT_GT(list.size(), 80u);
  int errors = 0;
  for (const auto& m : list) {
    std::ofstream(job) << m.text;
    const auto r = run_cli("run " + job);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2 || r.exit_code == 3)
        << m.what << " -> exit " << r.exit_code << "\n" << r.output;
    if (r.exit_code == 2) {
      ++errors;
      EXPECT_TRUE(std::regex_search(r.output, located)) << m.what << "\n" << r.output;
    }
  }
  EXPECT_GT(errors, static_cast<int>(list.size()) / 2);  // the values are mostly invalid
}

// The same for a user's platform file: each figure of the catalog's HGX H100 platform replaced
// by a bad value is valid or an error at its line of the platform file (`platform show` reads
// and validates the file and builds the topology for 64 GPUs).
TEST(CliRobustness, EveryMutatedPlatformFigureIsValidOrAnErrorAtItsLine) {
  std::ifstream in(std::string(CLUSTERSIM_SOURCE_DIR) + "/platforms/catalog/hgx_h100.yaml");
  std::stringstream text;
  text << in.rdbuf();
  const std::string base = text.str();
  const std::string file = ::testing::TempDir() + "/clustersim-" + std::to_string(::getpid()) +
                           "-platform.yaml";
  // `key: value` lines of the file, value up to a comment.
  const std::regex line(R"((^|\n)( *)(\w+): ([^#\n]*[^#\s]))");
  const auto& values = bad_values();
  int cases = 0;
  int errors = 0;
  std::size_t j = 0;
  for (auto it = std::sregex_iterator(base.begin(), base.end(), line); it != std::sregex_iterator();
       ++it, ++j) {
    const auto& m = *it;
    const auto pos = static_cast<std::size_t>(m.position(4));
    const std::string& v = values[(7 * j) % values.size()];
    std::ofstream(file) << base.substr(0, pos) + v + base.substr(pos + static_cast<std::size_t>(m.length(4)));
    const auto r = run_cli("platform show " + file + " --gpus 64");
    ++cases;
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << m.str(3) << ": " << v << " -> exit "
                                                      << r.exit_code << "\n" << r.output;
    if (r.exit_code == 2) {
      ++errors;
      EXPECT_NE(r.output.find(file + ":"), std::string::npos) << m.str(3) << ": " << v << "\n"
                                                              << r.output;
    }
  }
  EXPECT_GT(cases, 30);
  EXPECT_GT(errors, cases / 2);
}

// Integer options take plain decimals: the option parser would read 010 as 8 and 0x10 as 16.
TEST(CliRobustness, IntegerOptionsRefuseOctalAndHex) {
  for (const std::string args : {"platform show hgx_h100 --gpus 010", "platform show hgx_h100 --gpus 0x40",
                                 "validate --dry-run -j 02"}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("not a plain decimal integer"), std::string::npos) << args << "\n" << r.output;
  }
  EXPECT_EQ(run_cli("platform show hgx_h100 --gpus 64").exit_code, 0);
}

}  // namespace
