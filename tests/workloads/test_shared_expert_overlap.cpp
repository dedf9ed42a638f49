// Megatron-core's moe_shared_expert_overlap (docs/trace-format.md, "MoE"): the expert exchanges
// move to the ep_comm stream, launched by the compute op that produces their input, the shared
// experts' part runs on the compute stream beside each, with its TP collectives in line, and the
// routed op after it waits for the exchange. Each check is one a wrong generator would break.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "workload_test_util.hpp"
#include "workloads/flops.hpp"
#include "workloads/generator.hpp"
#include "workloads/memory.hpp"
#include "workloads/trace_io.hpp"

namespace clustersim::workloads {
namespace {

// A small MoE model with shared experts: 4 layers (the first dense), 8 experts, top 2; tp 2
// with SP and TE's TP overlap, ep 4, etp 1, 2 microbatches.
WorkloadSpec moe_job(bool overlap, const std::string& precision = "bf16") {
  return testing::parse_job(
      "model:\n  layers: 4\n  hidden: 256\n  ffn: 512\n  heads: 8\n  kv_heads: 4\n  vocab: 1000\n"
      "  activation: swiglu\n  norm: rmsnorm\n  position: rope\n  tied_embeddings: false\n"
      "  bias: false\n  experts: 8\n  top_k: 2\n  expert_ffn: 128\n  shared_expert_ffn: 128\n"
      "  first_dense_layers: 1\n"
      "parallelism:\n  tp: 2\n  ep: 4\n  etp: 1\n  sequence_parallel: true\n  tp_comm_overlap: true\n"
      "  moe_shared_expert_overlap: " + std::string(overlap ? "true" : "false") + "\n"
      "training:\n  seq_length: 256\n  micro_batch_size: 1\n  global_batch_size: 8\n"
      "  precision: " + precision + "\n",
      8);
}

const std::string& label(const sim::Program& p, std::uint32_t i) { return p.labels[p.ops[i].label]; }

// The next op on the compute stream after op `i`.
std::uint32_t next_compute(const sim::Program& p, std::uint32_t i) {
  for (std::uint32_t j = i + 1; j < p.ops.size(); ++j) {
    if (p.ops[j].stream == sim::Stream::Compute) return j;
  }
  ADD_FAILURE() << "no compute op after " << label(p, i);
  return i;
}

TEST(SharedExpertOverlap, ExchangesRunOnTheirStreamBesideTheSharedExperts) {
  const sim::Program p = generate_workload(moe_job(true)).programs[0];
  // Which compute op launches each exchange, and which shared op runs beside it.
  const std::map<std::string, std::pair<std::string, std::string>> expect = {
      {"ep_dispatch_a2a", {"permute", "tp_ag"}},              // then shared_fc1
      {"ep_combine_a2a", {"unsort_chunks", "shared_fc2"}},  // 2 local experts: sorted
      {"ep_combine_bwd_a2a", {"unpermute_bwd", "tp_ag"}},     // then shared_fc2_dgrad
      {"ep_dispatch_bwd_a2a", {"sort_chunks_bwd", "shared_fc1_dgrad"}}};
  std::map<std::string, int> seen;
  for (std::uint32_t i = 0; i < p.ops.size(); ++i) {
    const auto* c = std::get_if<sim::CollectiveSpec>(&p.ops[i].shape);
    if (c == nullptr || c->kind != sim::CollectiveKind::AllToAll) continue;
    const std::string& l = label(p, i);
    ASSERT_EQ(expect.count(l), 1u) << l;
    ++seen[l];
    EXPECT_EQ(p.ops[i].stream, sim::Stream::EpComm) << l;
    // Launched by the last compute op before it: the producer of its input, or (after the
    // expert weight gradients) the data-parallel bucket work their gradients made ready.
    ASSERT_EQ(p.ops[i].deps.size(), 1u) << l;
    const std::uint32_t launch = p.ops[i].deps[0];
    EXPECT_EQ(p.ops[launch].stream, sim::Stream::Compute) << l;
    for (std::uint32_t j = launch + 1; j < i; ++j) EXPECT_NE(p.ops[j].stream, sim::Stream::Compute) << l;
    const bool dp_work = label(p, launch).rfind("dp_", 0) == 0 && l == "ep_dispatch_bwd_a2a";
    if (!dp_work) {
      EXPECT_EQ(label(p, launch), expect.at(l).first) << l;
    }
    // The shared experts' work comes next on the compute stream, not waiting for the exchange.
    const std::uint32_t shared = next_compute(p, i);
    EXPECT_EQ(label(p, shared), expect.at(l).second) << l;
    EXPECT_EQ(std::count(p.ops[shared].deps.begin(), p.ops[shared].deps.end(), i), 0) << l;
    // The first routed op after the shared work waits for the exchange.
    std::uint32_t routed = shared;
    while (std::count(p.ops[routed].deps.begin(), p.ops[routed].deps.end(), i) == 0) {
      routed = next_compute(p, routed);
      if (routed + 1 >= p.ops.size()) break;
    }
    const std::string& r = label(p, routed);
    EXPECT_TRUE(r.rfind("expert_", 0) == 0 || r.rfind("unpermute", 0) == 0 ||
                r.rfind("sort_chunks", 0) == 0 || r.rfind("unsort_chunks", 0) == 0 ||
                r.rfind("permute_bwd", 0) == 0) << l << " gates " << r;
    EXPECT_GT(routed, shared) << l;
  }
  // 3 MoE layers x 2 microbatches of each exchange.
  for (const auto& [l, unused] : expect) EXPECT_EQ(seen[l], 6) << l;
}

TEST(SharedExpertOverlap, SharedExpertsGatherAndReduceInLineWithoutUserbuffers) {
  const sim::Program p = generate_workload(moe_job(true)).programs[0];
  int fc1 = 0, rs = 0;
  for (std::uint32_t i = 0; i + 1 < p.ops.size(); ++i) {
    const std::string& l = label(p, i);
    if (l.rfind("shared_", 0) != 0) continue;
    if (const auto* g = std::get_if<sim::GemmShape>(&p.ops[i].shape)) {
      EXPECT_EQ(g->splits, 1) << l;
      EXPECT_EQ(g->busy_sms, 0) << l;
      EXPECT_EQ(g->sm_margin, 0) << l;
    }
    // The forward fc1 reads the sequence gathered just before it on the compute stream (no
    // tp_comm stream under the overlap); the backward reduce-scatters the input gradient after
    // the weight gradient, in line.
    if (l == "shared_fc1" && !p.ops[i].recompute) {
      ++fc1;
      std::uint32_t prev = i;
      while (prev > 0 && p.ops[--prev].stream != sim::Stream::Compute) {
      }
      EXPECT_EQ(label(p, prev), "tp_ag");
      EXPECT_TRUE(std::holds_alternative<sim::CollectiveSpec>(p.ops[prev].shape));
    }
    if (l == "shared_fc1_wgrad") {
      const std::uint32_t next = next_compute(p, i);
      EXPECT_EQ(label(p, next), "tp_rs");
      EXPECT_TRUE(std::holds_alternative<sim::CollectiveSpec>(p.ops[next].shape));
      ++rs;
    }
  }
  EXPECT_EQ(fc1, 6);
  EXPECT_EQ(rs, 6);
  // No shared-expert collective on the tp_comm stream: count the stream's ops against the run
  // without the overlap, which overlaps the shared experts' gathers with userbuffers.
  const sim::Program q = generate_workload(moe_job(false)).programs[0];
  auto on_tp_stream = [](const sim::Program& prog) {
    return std::count_if(prog.ops.begin(), prog.ops.end(),
                         [](const sim::Op& op) { return op.stream == sim::Stream::TpComm; });
  };
  EXPECT_LT(on_tp_stream(p), on_tp_stream(q));
}

// Megatron gathers the overlapped shared experts' input itself, BF16 hidden states, where a
// Transformer Engine linear under FP8 gathers its quantized shard (1 byte per element).
TEST(SharedExpertOverlap, SharedExpertsGatherBf16UnderFp8) {
  const sim::Program p = generate_workload(moe_job(true, "fp8")).programs[0];
  int shared = 0;
  for (std::uint32_t i = 1; i < p.ops.size(); ++i) {
    if (label(p, i) != "shared_fc1" || p.ops[i].recompute) continue;
    std::uint32_t prev = i;
    while (prev > 0 && p.ops[--prev].stream != sim::Stream::Compute) {
    }
    ASSERT_EQ(label(p, prev), "tp_ag");
    EXPECT_DOUBLE_EQ(p.ops[prev].bytes, 256.0 * 256 * 2);
    ++shared;
  }
  EXPECT_EQ(shared, 6);
  // The layer's own qkv input gather (TE's userbuffer) is FP8.
  const auto qkv_gather = std::find_if(p.ops.begin(), p.ops.end(), [&](const sim::Op& op) {
    return p.labels[op.label] == "tp_ag" && op.stream == sim::Stream::TpComm;
  });
  ASSERT_NE(qkv_gather, p.ops.end());
  EXPECT_DOUBLE_EQ(qkv_gather->bytes, 256.0 * 256);
}

TEST(SharedExpertOverlap, SameWorkAsWithoutTheOverlap) {
  const WorkloadSpec on = moe_job(true), off = moe_job(false);
  const sim::Program p = generate_workload(on).programs[0];
  const sim::Program q = generate_workload(off).programs[0];
  // The same GEMMs (labels and FLOPs), only in another order and on other streams.
  auto gemms = [](const sim::Program& prog) {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& op : prog.ops) {
      if (std::holds_alternative<sim::GemmShape>(op.shape)) out.emplace_back(prog.labels[op.label], op.flops);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(gemms(p), gemms(q));
  // Without the overlap no op uses the ep_comm stream.
  for (const auto& op : q.ops) EXPECT_NE(op.stream, sim::Stream::EpComm);
  const sim::Workload w = generate_workload(on);
  double sum = 0.0;
  for (int r = 0; r < w.layout.world(); ++r) {
    for (const auto& op : w.program(r).ops) sum += op.flops;
  }
  EXPECT_NEAR(sum / w.accounting.hardware_flops, 1.0, 1e-9);
}

// The overlapped shared experts gather their input themselves, so fc1 keeps the gathered
// [tokens, hidden] BF16 tensor for its weight gradient: 256 tokens x 256 x 2 B more per MoE
// layer (tp 2 with SP); the dense first layer keeps what it kept.
TEST(SharedExpertOverlap, SharedFc1KeepsItsGatheredInput) {
  const WorkloadSpec on = moe_job(true), off = moe_job(false);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(on, 1, Recompute::None) -
                       layer_activation_bytes(off, 1, Recompute::None),
                   256.0 * 256 * 2);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(on, 0, Recompute::None),
                   layer_activation_bytes(off, 0, Recompute::None));
}

// The ep_comm stream (trace format version 10) survives a trace's round trip.
TEST(SharedExpertOverlap, EpCommStreamRoundTripsThroughTheTrace) {
  const sim::Workload w = generate_workload(moe_job(true));
  std::ostringstream out;
  write_rank_trace(out, w, 0);
  const std::string text = out.str();
  EXPECT_NE(text.find("\"stream\":\"ep_comm\""), std::string::npos);
  std::istringstream in(text);
  const RankTrace t = read_rank_trace(in, "trace.jsonl");
  const sim::Program& p = w.program(0);
  ASSERT_EQ(t.program.ops.size(), p.ops.size());
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    EXPECT_EQ(t.program.ops[i].stream, p.ops[i].stream) << i;
    EXPECT_EQ(t.program.ops[i].deps, p.ops[i].deps) << i;
  }
}

}  // namespace
}  // namespace clustersim::workloads
