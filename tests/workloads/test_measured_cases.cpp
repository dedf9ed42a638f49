// Every case of ../shared/reference/measured.yaml as a job: it parses, generates one training
// step on the case's GPU count, keeps the FLOP accounting consistent, gets a memory estimate,
// and one rank's trace round-trips through the JSON-lines format. Fields a source does not
// state (global batch of some S0 cases, vp of the Llama 3 paper runs, the parallel layout of the
// S0 405B runs) are filled with the DGXC recipes' values and marked "not in the source".
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "workload_test_util.hpp"
#include "workloads/flops.hpp"
#include "workloads/generator.hpp"
#include "workloads/memory.hpp"
#include "workloads/trace_io.hpp"

namespace clustersim::workloads {
namespace {

struct Case {
  const char* id;
  int gpus;
  const char* model;
  const char* parallelism;
  const char* training;
};

// NeMo recipes run tensor parallelism with sequence parallelism; 405B uses the embedding- and
// loss-aware split (126 layers), as the Llama 3 paper balances its first and last stages.
constexpr const char* k405Split =
    "  account_for_embedding_in_pipeline_split: true\n  account_for_loss_in_pipeline_split: true\n";

std::vector<Case> cases() {
  return {
      {"s0_gpt3_175b_128_bf16", 128, "gpt3_175b", "  tp: 4\n  pp: 8\n  sequence_parallel: true\n",
       "  seq_length: 2048\n  global_batch_size: 256\n  precision: bf16\n"},
      {"s0_gpt3_175b_128_fp8", 128, "gpt3_175b", "  tp: 4\n  pp: 8\n  sequence_parallel: true\n",
       "  seq_length: 2048\n  global_batch_size: 256\n  precision: fp8\n"},
      // gbs not in the source: 2 x gpus as the DGXC 70B recipe.
      {"s0_llama3_70b_64_bf16", 64, "llama3_70b", "  tp: 4\n  pp: 2\n  cp: 2\n  sequence_parallel: true\n",
       "  seq_length: 8192\n  global_batch_size: 128\n  precision: bf16\n"},
      {"s0_llama3_70b_2048_bf16", 2048, "llama3_70b", "  tp: 4\n  pp: 2\n  cp: 2\n  sequence_parallel: true\n",
       "  seq_length: 8192\n  global_batch_size: 4096\n  precision: bf16\n"},
      {"s0_llama3_70b_64_fp8", 64, "llama3_70b", "  tp: 4\n  pp: 2\n  cp: 2\n  sequence_parallel: true\n",
       "  seq_length: 8192\n  global_batch_size: 128\n  precision: fp8\n"},
      {"s0_llama3_70b_2048_fp8", 2048, "llama3_70b", "  tp: 4\n  pp: 2\n  cp: 2\n  sequence_parallel: true\n",
       "  seq_length: 8192\n  global_batch_size: 4096\n  precision: fp8\n"},
      // Layout not in the source: the DGXC 405B recipe's tp 8, pp 8, vp 8 (cp 1 fits 576 GPUs).
      {"s0_llama3_405b_576_bf16", 576, "llama3_405b",
       "  tp: 8\n  pp: 8\n  vp: 8\n  sequence_parallel: true\n",
       "  seq_length: 8192\n  global_batch_size: 576\n  precision: bf16\n"},
      {"s0_llama3_405b_2304_fp8", 2304, "llama3_405b",
       "  tp: 8\n  pp: 8\n  vp: 8\n  sequence_parallel: true\n",
       "  seq_length: 8192\n  global_batch_size: 2304\n  precision: fp8\n"},
      {"dgxc_llama3_8b_bf16", 8, "llama3_8b", "  tp: 1\n  pp: 1\n  cp: 2\n",
       "  seq_length: 8192\n  global_batch_size: 128\n  precision: bf16\n"},
      {"dgxc_llama3_8b_fp8", 8, "llama3_8b", "  tp: 1\n  pp: 1\n  cp: 2\n",
       "  seq_length: 8192\n  global_batch_size: 128\n  precision: fp8\n"},
      {"dgxc_llama3_70b_bf16", 64, "llama3_70b",
       "  tp: 4\n  pp: 4\n  cp: 2\n  vp: 5\n  sequence_parallel: true\n",
       "  seq_length: 8192\n  global_batch_size: 128\n  precision: bf16\n"},
      {"dgxc_llama3_70b_fp8", 64, "llama3_70b",
       "  tp: 4\n  pp: 8\n  cp: 1\n  vp: 5\n  sequence_parallel: true\n",
       "  seq_length: 8192\n  global_batch_size: 128\n  precision: fp8\n"},
      {"dgxc_llama3_405b_bf16", 512, "llama3_405b",
       "  tp: 8\n  pp: 8\n  cp: 2\n  vp: 8\n  sequence_parallel: true\n",
       "  seq_length: 8192\n  global_batch_size: 256\n  precision: bf16\n"},
      {"dgxc_llama3_405b_fp8", 512, "llama3_405b",
       "  tp: 8\n  pp: 8\n  cp: 2\n  vp: 8\n  sequence_parallel: true\n",
       "  seq_length: 8192\n  global_batch_size: 256\n  precision: fp8\n"},
      {"dgxc_gpt3_175b_bf16", 128, "gpt3_175b", "  tp: 4\n  pp: 8\n  vp: 12\n  sequence_parallel: true\n",
       "  seq_length: 2048\n  global_batch_size: 256\n  precision: bf16\n"},
      {"dgxc_gpt3_175b_fp8", 128, "gpt3_175b", "  tp: 4\n  pp: 8\n  vp: 12\n  sequence_parallel: true\n",
       "  seq_length: 2048\n  global_batch_size: 256\n  precision: fp8\n"},
      // vp not in the paper: 2.
      {"l3_405b_8192", 8192, "llama3_405b", "  tp: 8\n  cp: 1\n  pp: 16\n  dp: 64\n  vp: 2\n  sequence_parallel: true\n",
       "  seq_length: 8192\n  global_batch_size: 2048\n  precision: bf16\n"},
      {"l3_405b_16384", 16384, "llama3_405b",
       "  tp: 8\n  cp: 1\n  pp: 16\n  dp: 128\n  vp: 2\n  sequence_parallel: true\n",
       "  seq_length: 8192\n  global_batch_size: 2048\n  precision: bf16\n"},
      // gbs not in the source: 128 sequences of 128k tokens (16M tokens, the paper's batch).
      {"l3_405b_16384_long_context", 16384, "llama3_405b",
       "  tp: 8\n  cp: 16\n  pp: 16\n  vp: 2\n  sequence_parallel: true\n",
       "  seq_length: 131072\n  global_batch_size: 128\n  precision: bf16\n"},
      {"s3_llama31_8b_seq_sweep", 8, "llama3_8b", "  zero_stage: 3\n  optimizer_offload: cpu\n",
       "  seq_length: 262144\n  precision: bf16\n  recompute: full\n  cross_entropy: chunked\n"
       "  mfu_convention: causal\n"},
      {"s3_llama31_8b_8k_zero2", 8, "llama3_8b", "  zero_stage: 2\n",
       "  seq_length: 8192\n  precision: bf16\n  mfu_convention: causal\n"},
  };
}

TEST(MeasuredCases, EveryCaseRunsAsAJobAndItsTraceRoundTrips) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.id);
    std::string parallel = c.parallelism;
    if (std::string(c.model) == "llama3_405b") parallel += k405Split;
    const auto start = std::chrono::steady_clock::now();
    const std::string yaml = std::string("model: ") + c.model + "\nparallelism:\n" + parallel +
                             "training:\n  micro_batch_size: 1\n" + c.training;
    const WorkloadSpec spec = testing::parse_job(yaml, c.gpus);
    const sim::Workload w = generate_workload(spec);
    ASSERT_EQ(w.layout.world(), c.gpus);
    ASSERT_EQ(w.programs.size(), static_cast<std::size_t>(spec.parallel.pp));
    EXPECT_GT(w.accounting.hardware_flops, 0.0);
    EXPECT_GE(w.accounting.hardware_flops, 0.5 * w.accounting.model_flops);
    const MemoryReport memory = estimate_memory(spec, 80.0 * 1024 * 1024 * 1024);
    EXPECT_GT(memory.peak_bytes(), 0.0);
    // The last stage's trace is written; read back where it is small enough to keep the test
    // fast (the format's round trip is tested op by op in test_trace_io.cpp).
    const int rank = c.gpus - 1;
    std::stringstream text;
    write_rank_trace(text, w, rank);
    EXPECT_GT(text.str().size(), 1000u);
    if (w.program(rank).ops.size() < 12000) {
      const RankTrace back = read_rank_trace(text, c.id);
      EXPECT_EQ(back.rank, rank);
      EXPECT_EQ(back.program.ops.size(), w.program(rank).ops.size());
      EXPECT_EQ(back.layout.world(), c.gpus);
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  }
}

}  // namespace
}  // namespace clustersim::workloads
