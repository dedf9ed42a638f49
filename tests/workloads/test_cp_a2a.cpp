// parallelism.cp_comm_type: a2a (Transformer Engine's AttnFuncWithCPAndQKVOA2A, Ulysses-style
// context parallelism): q, k, v exchanged over CP for the whole sequence of heads / cp heads,
// one causal attention, the output exchanged back; the backward's exchanges of the output and
// its gradient and of dq, dk, dv; its memory buffers and refusals. Each check is one a wrong
// head split, sequence length, byte count or stream breaks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "workload_test_util.hpp"
#include "workloads/generator.hpp"
#include "workloads/memory.hpp"

namespace clustersim::workloads {
namespace {

// Llama-3 8B cut to 2 layers (32 heads, 8 KV heads of 128), tp 2 with SP, cp 4: 16 and 4 heads
// per TP rank, 4 and 1 after the exchange; seq 32768, 8192 tokens per rank.
WorkloadSpec job(const std::string& cp_comm) {
  return testing::parse_job(
      "model: {catalog: llama3_8b, layers: 2}\n"
      "parallelism: {tp: 2, cp: 4, sequence_parallel: true, cp_comm_type: " + cp_comm + "}\n"
      "training: {seq_length: 32768, micro_batch_size: 1, global_batch_size: 1, precision: bf16}\n",
      8);
}

struct Seen {
  std::string label;
  sim::Op op;
};

std::vector<Seen> core_ops(const sim::Program& p, sim::Phase phase) {
  std::vector<Seen> out;
  for (const auto& op : p.ops) {
    const std::string& l = p.labels[op.label];
    if (op.layer == 0 && op.microbatch == 0 && op.phase == phase && !op.recompute &&
        (l.rfind("cp_", 0) == 0 || l.rfind("attn", 0) == 0)) {
      out.push_back({l, op});
    }
  }
  return out;
}

std::vector<std::string> labels(const std::vector<Seen>& ops) {
  std::vector<std::string> out;
  for (const auto& o : ops) out.push_back(o.label);
  return out;
}

TEST(CpA2a, ExchangesQkvThenAttendsTheWholeSequenceWithAQuarterOfTheHeads) {
  const sim::Program p = generate_stage_program(job("a2a"), 0);
  const auto fwd = core_ops(p, sim::Phase::Forward);
  EXPECT_EQ(labels(fwd), (std::vector<std::string>{"cp_qkv_a2a", "cp_qkv_a2a", "cp_qkv_a2a",
                                                   "cp_qkv_a2a_reorder", "attn", "cp_out_a2a",
                                                   "cp_out_a2a_reorder"}));
  // q: 8192 tokens x 16 heads x 128 x 2 B; k and v: 4 heads.
  const double q = 8192.0 * 16 * 128 * 2, kv = 8192.0 * 4 * 128 * 2;
  EXPECT_DOUBLE_EQ(fwd[0].op.bytes, q);
  EXPECT_DOUBLE_EQ(fwd[1].op.bytes, kv);
  EXPECT_DOUBLE_EQ(fwd[2].op.bytes, kv);
  for (int i : {0, 1, 2, 5}) {
    const auto& c = std::get<sim::CollectiveSpec>(fwd[i].op.shape);
    EXPECT_EQ(c.kind, sim::CollectiveKind::AllToAll);
    EXPECT_EQ(c.group, sim::GroupKind::CP);
    EXPECT_EQ(fwd[i].op.stream, sim::Stream::CpComm);
  }
  EXPECT_DOUBLE_EQ(fwd[3].op.bytes, 4.0 * (q + 2 * kv));  // two read-write passes (sbhd)
  const auto& a = std::get<sim::AttentionShape>(fwd[4].op.shape);
  EXPECT_EQ(a.seq_q, 32768);
  EXPECT_EQ(a.seq_kv, 32768);
  EXPECT_TRUE(a.causal);
  EXPECT_EQ(a.heads, 4);
  EXPECT_EQ(a.kv_heads, 1);
  EXPECT_DOUBLE_EQ(fwd[5].op.bytes, q);
  const auto bwd = core_ops(p, sim::Phase::Backward);
  EXPECT_EQ(labels(bwd), (std::vector<std::string>{"cp_out_dout_a2a", "cp_out_dout_a2a",
                                                   "cp_out_dout_a2a_reorder", "attn_bwd", "cp_dqkv_a2a",
                                                   "cp_dqkv_a2a", "cp_dqkv_a2a", "cp_dqkv_a2a_reorder"}));
}

TEST(CpA2a, AttentionFlopsEqualTheRings) {
  const auto flops = [](const WorkloadSpec& spec) {
    double sum = 0.0;
    const sim::Program p = generate_stage_program(spec, 0);
    for (const auto& op : p.ops) {
      if (std::holds_alternative<sim::AttentionShape>(op.shape)) sum += op.flops;
    }
    return sum;
  };
  const double ring = flops(job("p2p"));
  ASSERT_GT(ring, 0.0);
  EXPECT_NEAR(flops(job("a2a")) / ring, 1.0, 1e-12);
}

TEST(CpA2a, BuffersHoldTheExchangedQkv) {
  const auto buffers = [](const std::string& cp_comm) {
    const MemoryReport r = estimate_memory(job(cp_comm), 80e9);
    for (const auto& c : r.stages.at(0).components) {
      if (c.name == "comm_buffers") return c.bytes;
    }
    return -1.0;
  };
  const double block = 8192.0 * 4 * 256 * 2;  // this rank's K and V
  EXPECT_DOUBLE_EQ(buffers("p2p"), 2.0 * block);
  EXPECT_DOUBLE_EQ(buffers("all_gather"), 4.0 * block);
  EXPECT_DOUBLE_EQ(buffers("a2a"), block + 8192.0 * 16 * 128 * 2);
}

TEST(CpA2a, RefusedWhereTheHeadsDoNotSplitAndWithMla) {
  testing::expect_spec_error(
      "model: {catalog: llama3_8b, layers: 2}\n"
      "parallelism: {tp: 2, cp: 8, sequence_parallel: true, cp_comm_type: a2a}\n"
      "training: {seq_length: 32768, micro_batch_size: 1, global_batch_size: 1, precision: bf16}\n",
      16, "parallelism.cp_comm_type", "kv_heads/tp (4) must be divisible by cp (8)");
  testing::expect_spec_error(
      "model: {catalog: deepseek_v3, layers: 4}\n"
      "parallelism: {tp: 1, cp: 2, cp_comm_type: a2a}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 1, precision: bf16}\n",
      2, "parallelism.cp_comm_type", "MLA");
}

}  // namespace
}  // namespace clustersim::workloads
