// Shared by the tests of generated programs for the parallelisms (test_parallelism.cpp,
// test_zero.cpp): a small Llama-style job and op counts by label and stream.
#pragma once

#include <string>

#include "sim/trace.hpp"

namespace clustersim::workloads::ptest {

// A small Llama-style model, optionally MoE or MLA, with extra parallelism/training lines.
inline std::string job(const std::string& parallel, const std::string& training,
                const std::string& model_extra = "") {
  return "model:\n  layers: 4\n  hidden: 256\n  ffn: 512\n  heads: 8\n  kv_heads: 4\n  vocab: 1000\n"
         "  activation: swiglu\n  norm: rmsnorm\n  position: rope\n  tied_embeddings: false\n"
         "  bias: false\n" + model_extra + "parallelism:\n" + parallel +
         "training:\n  seq_length: 256\n  micro_batch_size: 1\n  precision: bf16\n" + training;
}
inline const std::string kMoe = "  experts: 8\n  top_k: 2\n  expert_ffn: 128\n  shared_expert_ffn: 128\n"
                         "  first_dense_layers: 1\n";
inline const std::string kMla = "  attention: mla\n  head_dim: 48\n  v_head_dim: 32\n  q_lora_rank: 64\n"
                         "  kv_lora_rank: 32\n  rope_head_dim: 16\n";

struct Counts {
  int ops = 0;
  double flops = 0.0;
  double bytes = 0.0;
};
inline Counts count(const sim::Program& p, const std::string& label, sim::Stream stream = sim::Stream::Compute) {
  Counts c;
  for (const auto& op : p.ops) {
    if (p.labels[op.label] == label && op.stream == stream) {
      ++c.ops;
      c.flops += op.flops;
      c.bytes += op.bytes;
    }
  }
  return c;
}

}  // namespace clustersim::workloads::ptest
