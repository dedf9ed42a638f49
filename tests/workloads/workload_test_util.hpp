// Helpers shared by the workloads tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "sim/spec_error.hpp"
#include "sim/yaml_spec.hpp"
#include "workloads/job_spec.hpp"

namespace clustersim::workloads::testing {

/// Parses a job's workload sections from YAML text named "job.yaml" (the cluster section is
/// the caller's; tests pass the GPU count directly) and checks that no key is left unknown.
inline WorkloadSpec parse_job(const std::string& yaml, int gpus) {
  YamlMap root = YamlMap::load_string(yaml, "job.yaml");
  WorkloadSpec spec = parse_workload_spec(root, gpus);
  root.finish();
  return spec;
}

/// Expects parse_job(yaml, gpus) to throw a SpecError at a line of job.yaml, at `field`, whose
/// reason contains `reason`; records a test failure otherwise.
inline void expect_spec_error(const std::string& yaml, int gpus, const std::string& field,
                              const std::string& reason) {
  try {
    parse_job(yaml, gpus);
    ADD_FAILURE() << "accepted: " << yaml;
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(e.reason().find(reason), std::string::npos) << e.what();
    EXPECT_GT(e.line(), 0) << e.what();
  }
}

/// The `parallelism:` and `training:` blocks of the small test jobs.
inline std::string parallel_and_training(int tp, int pp, int dp, bool sp, int seq, int gbs, int mbs,
                                         const std::string& precision) {
  return "parallelism:\n"
         "  tp: " + std::to_string(tp) + "\n"
         "  pp: " + std::to_string(pp) + "\n"
         "  dp: " + std::to_string(dp) + "\n"
         "  sequence_parallel: " + (sp ? "true" : "false") + "\n"
         "training:\n"
         "  seq_length: " + std::to_string(seq) + "\n"
         "  micro_batch_size: " + std::to_string(mbs) + "\n"
         "  global_batch_size: " + std::to_string(gbs) + "\n"
         "  precision: " + precision + "\n";
}

/// A small Llama-style job (swiglu, rmsnorm, rope, GQA; seq 128) that generates in milliseconds.
inline std::string small_llama_job(int tp, int pp, int dp, bool sp, int gbs, int mbs,
                                   const std::string& precision = "bf16") {
  return "model:\n"
         "  layers: 4\n"
         "  hidden: 256\n"
         "  ffn: 688\n"
         "  heads: 8\n"
         "  kv_heads: 4\n"
         "  vocab: 1000\n"
         "  activation: swiglu\n"
         "  norm: rmsnorm\n"
         "  position: rope\n"
         "  tied_embeddings: false\n"
         "  bias: false\n" +
         parallel_and_training(tp, pp, dp, sp, 128, gbs, mbs, precision);
}

/// A small GPT-style job (gelu, layernorm, learned positions, biases, tied embeddings; seq 96).
inline std::string small_gpt_job(int tp, int pp, int dp, bool sp, int gbs, int mbs) {
  return "model:\n"
         "  layers: 4\n"
         "  hidden: 192\n"
         "  ffn: 768\n"
         "  heads: 6\n"
         "  kv_heads: 6\n"
         "  vocab: 999\n"
         "  activation: gelu\n"
         "  norm: layernorm\n"
         "  position: learned\n"
         "  max_position_embeddings: 256\n"
         "  tied_embeddings: true\n"
         "  bias: true\n" +
         parallel_and_training(tp, pp, dp, sp, 96, gbs, mbs, "bf16");
}

/// The default job of the CLI (docs/job-spec.md): GPT-3 175B, TP4 PP8 DP4, SP, seq 2048.
inline const char* default_job_yaml() {
  return "model: gpt3_175b\n"
         "parallelism:\n"
         "  tp: 4\n"
         "  pp: 8\n"
         "  dp: 4\n"
         "  sequence_parallel: true\n"
         "training:\n"
         "  seq_length: 2048\n"
         "  micro_batch_size: 1\n"
         "  global_batch_size: 256\n"
         "  precision: bf16\n";
}

}  // namespace clustersim::workloads::testing
