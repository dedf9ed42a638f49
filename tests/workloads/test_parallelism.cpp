// Generated programs for the parallelisms of issue 4: context parallelism (ring attention),
// MoE with expert parallelism, MLA, recompute, TP communication overlap, tied embeddings across
// stages and the uneven/embedding-aware pipeline split. Each test checks
// what a wrong generator would break: op counts per layer and microbatch, groups and streams,
// and the FLOP invariant (ops of all ranks == global batch x hardware FLOPs per sample). ZeRO-2/3
// and CPU offload: test_zero.cpp.
#include <gtest/gtest.h>

#include <algorithm>

#include <optional>
#include <string>

#include "parallelism_test_util.hpp"
#include "sim/spec_error.hpp"
#include "workload_test_util.hpp"
#include "workloads/dp_buckets.hpp"
#include "workloads/flops.hpp"
#include "workloads/generator.hpp"
#include "workloads/stage_layout.hpp"

namespace clustersim::workloads {
namespace {

using ptest::count;
using ptest::job;
using ptest::kMla;
using ptest::kMoe;

double total_flops(const sim::Workload& w) {
  double sum = 0.0;
  for (int r = 0; r < w.layout.world(); ++r) {
    for (const auto& op : w.program(r).ops) sum += op.flops;
  }
  return sum;
}

void expect_flop_invariant(const WorkloadSpec& spec) {
  const sim::Workload w = generate_workload(spec);
  EXPECT_NEAR(total_flops(w) / w.accounting.hardware_flops, 1.0, 1e-9) << w.description;
  EXPECT_DOUBLE_EQ(w.accounting.hardware_flops,
                   static_cast<double>(spec.training.global_batch_size) * hardware_flops_per_sample(spec));
}

TEST(ContextParallel, RingExchangesKvBlocksOverlappedWithAttentionSteps) {
  const auto spec = testing::parse_job(job("  tp: 2\n  cp: 4\n  sequence_parallel: true\n",
                                           "  global_batch_size: 4\n"), 16);
  const sim::Workload w = generate_workload(spec);
  const sim::Program& p = w.programs[0];
  ASSERT_EQ(spec.num_microbatches(), 2);  // dp 2
  // Per layer and microbatch: cp-1 transfers forward, cp backward, on the cp_comm stream.
  EXPECT_EQ(count(p, "cp_kv", sim::Stream::CpComm).ops, 3 * 4 * 2);
  EXPECT_EQ(count(p, "cp_kv_dkv", sim::Stream::CpComm).ops, 3 * 4 * 2);
  EXPECT_EQ(count(p, "cp_dkv", sim::Stream::CpComm).ops, 4 * 2);
  EXPECT_EQ(count(p, "attn").ops, 4 * 4 * 2);  // cp steps
  // Every op of the ring is a CP ring shift (send to the next, receive from the previous CP
  // rank); each rank holds seq/cp tokens.
  for (const auto& op : p.ops) {
    if (op.stream == sim::Stream::CpComm) {
      EXPECT_EQ(std::get<sim::CollectiveSpec>(op.shape).group, sim::GroupKind::CP);
      EXPECT_EQ(std::get<sim::CollectiveSpec>(op.shape).kind, sim::CollectiveKind::RingShift);
    }
    if (const auto* a = std::get_if<sim::AttentionShape>(&op.shape)) {
      EXPECT_EQ(a->seq_q, 64);
    }
  }
  // Each ring step sends every rank's K/V block to its neighbour: one block of 64 tokens x 2 KV
  // heads x (32 + 32) in BF16 (the backward's later steps carry the dK/dV accumulated so far too).
  const double block = 64.0 * 2 * (32 + 32) * 2;
  for (const auto& op : p.ops) {
    const std::string& label = p.labels[op.label];
    if (label == "cp_kv" || label == "cp_dkv") {
      EXPECT_DOUBLE_EQ(op.bytes, block) << label;
    }
    if (label == "cp_kv_dkv") {
      EXPECT_TRUE(op.bytes == block || op.bytes == 2 * block) << op.bytes;
    }
  }
  // A later backward transfer carries the dK/dV of the step before it: it waits for that step's
  // kernel (the first carries only K/V and waits for what the layer's backward needs before it).
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    if (p.labels[p.ops[i].label] != "cp_kv_dkv" || p.ops[i].bytes != 2 * block) continue;
    const auto& deps = p.ops[i].deps;
    ASSERT_EQ(deps.size(), 1U) << "op " << i;
    EXPECT_EQ(p.labels[p.ops[deps[0]].label], "attn_bwd") << "op " << i;
  }
  // Load balance: each rank does 1/cp of the causal attention: 4 layers x 2 microbatches x
  // 2 (d + dv) x 4 heads x (256^2 / 2) / 4 pairs.
  EXPECT_DOUBLE_EQ(count(p, "attn").flops, 4 * 2 * 2.0 * 64 * 4 * (256.0 * 256 / 2) / 4);
  expect_flop_invariant(spec);
  // Gradients and the distributed optimizer span dp x cp.
  for (const auto& op : p.ops) {
    if (p.labels[op.label] == "dp_rs") {
      EXPECT_EQ(std::get<sim::CollectiveSpec>(op.shape).group, sim::GroupKind::DPCP);
    }
  }
}

TEST(ContextParallel, AllGatherVariantGathersKvOnceAndReduceScattersTheirGradients) {
  const auto spec = testing::parse_job(
      job("  tp: 2\n  cp: 4\n  sequence_parallel: true\n  cp_comm_type: all_gather\n",
          "  global_batch_size: 4\n"), 16);
  const sim::Workload w = generate_workload(spec);
  const sim::Program& p = w.programs[0];
  // Per layer and microbatch: one K/V all-gather forward, one backward, one dK/dV
  // reduce-scatter; no ring transfers; the same attention work as the ring.
  EXPECT_EQ(count(p, "cp_kv", sim::Stream::CpComm).ops, 0);
  EXPECT_EQ(count(p, "cp_kv_allgather", sim::Stream::CpComm).ops, 2 * 4 * 2);
  EXPECT_EQ(count(p, "cp_dkv_reduce_scatter", sim::Stream::CpComm).ops, 4 * 2);
  EXPECT_EQ(count(p, "attn").ops, 4 * 4 * 2);
  EXPECT_DOUBLE_EQ(count(p, "attn").flops, 4 * 2 * 2.0 * 64 * 4 * (256.0 * 256 / 2) / 4);
  // The gather carries the whole K/V: cp blocks of 64 tokens x kv_heads/tp x (d + dv) x 2 B.
  for (const auto& op : p.ops) {
    if (p.labels[op.label] == "cp_kv_allgather") {
      EXPECT_DOUBLE_EQ(op.bytes, 4 * 64.0 * 2 * (32 + 32) * 2.0);
      EXPECT_EQ(std::get<sim::CollectiveSpec>(op.shape).kind, sim::CollectiveKind::AllGather);
    }
  }
  // Attention waits for the gather: each forward attention's first step depends on it.
  int gated = 0;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    if (p.labels[p.ops[i].label] != "cp_kv_allgather") continue;
    for (std::size_t j = i + 1; j < p.ops.size(); ++j) {
      const auto& deps = p.ops[j].deps;
      if (std::find(deps.begin(), deps.end(), static_cast<std::uint32_t>(i)) != deps.end()) {
        gated += p.labels[p.ops[j].label] == "attn" || p.labels[p.ops[j].label] == "attn_bwd";
        break;
      }
    }
  }
  EXPECT_EQ(gated, 2 * 4 * 2);
  expect_flop_invariant(spec);
}

TEST(ExpertParallel, AllToAllOverEpAndExpertGemmsOfTheLocalExperts) {
  const auto spec = testing::parse_job(
      job("  tp: 2\n  ep: 4\n  etp: 1\n  sequence_parallel: true\n", "  global_batch_size: 8\n", kMoe), 8);
  const sim::Workload w = generate_workload(spec);
  const sim::Program& p = w.programs[0];
  // 3 MoE layers x (dispatch + combine) forward and backward, 2 microbatches (dp 4).
  const int mbs = static_cast<int>(spec.num_microbatches());
  ASSERT_EQ(mbs, 2);
  EXPECT_EQ(count(p, "ep_dispatch_a2a").ops + count(p, "ep_combine_a2a").ops, 3 * 2 * mbs);
  for (const auto& op : p.ops) {
    const auto* c = std::get_if<sim::CollectiveSpec>(&op.shape);
    if (c != nullptr && c->kind == sim::CollectiveKind::AllToAll) {
      EXPECT_EQ(c->group, sim::GroupKind::EP);
      // Each exchange moves the rank's routed tokens: 128 sequence-parallel tokens x top_k 2
      // rows of hidden 256 in BF16.
      EXPECT_DOUBLE_EQ(op.bytes, 128.0 * 2 * 256 * 2) << p.labels[op.label];
    }
    const auto* g = std::get_if<sim::GemmShape>(&op.shape);
    // Expert GEMM rows: the rank's 128 sequence-parallel tokens x top_k (etp 1).
    if (g != nullptr && p.labels[op.label] == "expert_fc1") {
      EXPECT_EQ(g->m, 128 * 2);
    }
    // One GEMM per local expert (8 experts / ep 4): rows split forward and for the data
    // gradients, the tokens (k) of the weight gradients; the router and shared experts are one.
    if (g != nullptr) {
      const std::string& l = p.labels[op.label];
      const bool expert = l.rfind("expert_fc", 0) == 0;
      EXPECT_EQ(g->groups, expert ? 2 : 1) << l;
      if (expert) {
        const bool wgrad = l.find("wgrad") != std::string::npos;
        EXPECT_EQ(g->group_axis, wgrad ? sim::GroupAxis::K : sim::GroupAxis::M) << l;
        EXPECT_EQ(sim::one_group(*g).m, wgrad ? g->m : g->m / 2) << l;
        EXPECT_EQ(sim::one_group(*g).k, wgrad ? g->k / 2 : g->k) << l;
      }
    }
  }
  EXPECT_EQ(w.layout.size(sim::GroupKind::EP), 4);
  expect_flop_invariant(spec);
  // An imbalance of 1.5 makes the busiest rank's expert GEMMs 1.5x longer.
  auto skewed = spec;
  skewed.training.moe_imbalance = 1.5;
  const sim::Program q = generate_workload(skewed).programs[0];
  EXPECT_DOUBLE_EQ(count(q, "expert_fc1").flops, 1.5 * count(p, "expert_fc1").flops);
  // ... and its all-to-alls carry 1.5x the tokens.
  for (const auto& op : q.ops) {
    if (q.labels[op.label] == "ep_dispatch_a2a") {
      EXPECT_DOUBLE_EQ(op.bytes, 1.5 * 128 * 2 * 256 * 2);
    }
  }
  // A capacity factor caps that load (dropped tokens); padded to capacity (Megatron's
  // drop_and_pad) every rank exchanges and computes the capacity, balanced or not, and the
  // padding rows are executed FLOPs (not model FLOPs).
  for (const double imbalance : {1.0, 1.5}) {
    auto padded = spec;
    padded.training.moe_imbalance = imbalance;
    padded.training.moe_capacity_factor = 1.25;
    const sim::Program capped = generate_workload(padded).programs[0];
    EXPECT_DOUBLE_EQ(count(capped, "expert_fc1").flops, std::min(imbalance, 1.25) * count(p, "expert_fc1").flops);
    padded.training.moe_pad_to_capacity = true;
    const sim::Program r = generate_workload(padded).programs[0];
    EXPECT_DOUBLE_EQ(count(r, "expert_fc1").flops, 1.25 * count(p, "expert_fc1").flops) << imbalance;
    EXPECT_DOUBLE_EQ(count(r, "ep_dispatch_a2a").bytes, 1.25 * count(p, "ep_dispatch_a2a").bytes) << imbalance;
    EXPECT_GT(hardware_flops_per_sample(padded), hardware_flops_per_sample(spec));
  }
  // Transformer Engine's fused unpermute reads the 256 copies once and writes the 128 tokens;
  // the unfused one scales the copies (read, write) and scatter-adds them (read).
  auto fused = spec;
  fused.training.moe_permute_fusion = true;
  const sim::Program f = generate_workload(fused).programs[0];
  const double row = 256 * 2;  // hidden 256, BF16
  const int mb_layers = 3 * 2;
  EXPECT_DOUBLE_EQ(count(p, "unpermute").bytes, mb_layers * 3.0 * 256 * row);
  EXPECT_DOUBLE_EQ(count(f, "unpermute").bytes, mb_layers * (256 + 128) * row);
  EXPECT_DOUBLE_EQ(count(f, "permute").bytes, count(p, "permute").bytes);
}

// Megatron-core's all-to-all dispatcher sorts the received rows by local expert before the
// expert GEMMs and unsorts their output before the combine (token_dispatcher.py, "Permutation
// 2"), a copy of the rank's rows x hidden each, and the opposite copies in the backward; with one
// local expert, or DeepEP's flex dispatcher, there is nothing to sort.
TEST(ExpertParallel, TheAllToAllDispatcherSortsRowsByLocalExpert) {
  const auto spec = testing::parse_job(
      job("  tp: 2\n  ep: 4\n  etp: 1\n  sequence_parallel: true\n", "  global_batch_size: 8\n", kMoe), 8);
  const sim::Program p = generate_workload(spec).programs[0];
  const double copy = 2.0 * (128 * 2) * 256 * 2;  // read + write of 256 rows of hidden 256, BF16
  const int mb_layers = 3 * 2;                    // 3 MoE layers x 2 microbatches
  for (const char* name : {"sort_chunks", "unsort_chunks", "unsort_chunks_bwd", "sort_chunks_bwd"}) {
    EXPECT_EQ(count(p, name).ops, mb_layers) << name;
    EXPECT_DOUBLE_EQ(count(p, name).bytes, mb_layers * copy) << name;
  }
  // In order: sort, the expert GEMMs, unsort.
  std::vector<std::string> order;
  for (const auto& op : p.ops) {
    const std::string& l = p.labels[op.label];
    if (l == "sort_chunks" || l == "expert_fc1" || l == "expert_fc2" || l == "unsort_chunks") order.push_back(l);
    if (order.size() == 4) break;
  }
  EXPECT_EQ(order, (std::vector<std::string>{"sort_chunks", "expert_fc1", "expert_fc2", "unsort_chunks"}));
  // ep 8 leaves one local expert of 8: no sort.
  const auto one = testing::parse_job(
      job("  tp: 1\n  ep: 8\n  etp: 1\n", "  global_batch_size: 8\n", kMoe), 8);
  EXPECT_EQ(count(generate_workload(one).programs[0], "sort_chunks").ops, 0);
}

// With fp8 each expert GEMM operand is cast-transposed once (4 B per element): the permuted
// tokens (rows x hidden) and the activation output (rows x expert ffn) forward, the output
// gradients backward; rows = 128 sequence-parallel tokens x top_k 2 (etp 1).
TEST(ExpertParallel, Fp8CastsEveryExpertGemmOperand) {
  auto spec = testing::parse_job(
      job("  tp: 2\n  ep: 4\n  etp: 1\n  sequence_parallel: true\n", "  global_batch_size: 8\n", kMoe), 8);
  spec.training.precision = Precision::FP8;
  const sim::Program p = generate_workload(spec).programs[0];
  const double rows = 128 * 2;
  const int mb_layers = 3 * 2;  // 3 MoE layers x 2 microbatches
  const std::pair<const char*, double> expect[] = {
      {"expert_fc1_fp8_cast", rows * 256 * 4}, {"expert_fc2_fp8_cast", rows * 128 * 4},
      {"expert_fc2_fp8_grad_cast", rows * 256 * 4}, {"expert_fc1_fp8_grad_cast", rows * 256 * 4}};
  for (const auto& [name, bytes] : expect) {
    int n = 0;
    for (const auto& op : p.ops) {
      if (p.labels[op.label] != name) continue;
      ++n;
      EXPECT_DOUBLE_EQ(op.bytes, bytes) << name;
    }
    EXPECT_EQ(n, mb_layers) << name;
  }
}

TEST(ExpertParallel, ExpertTensorParallelGathersOverEtpAndMlaKeepsTheInvariant) {
  std::string yaml = job("  tp: 2\n  ep: 2\n  etp: 2\n  sequence_parallel: true\n",
                         "  global_batch_size: 4\n", kMoe + kMla);
  yaml.replace(yaml.find("kv_heads: 4"), 11, "kv_heads: 8");  // MLA expands K/V per head
  const auto spec = testing::parse_job(yaml, 8);
  const sim::Workload w = generate_workload(spec);
  EXPECT_GT(count(w.programs[0], "ep_dispatch_etp_ag").ops, 0);
  EXPECT_GT(count(w.programs[0], "q_down").ops, 0);
  expect_flop_invariant(spec);
  // With sequence parallelism the shared RoPE key (16 wide) is gathered over TP and its gradient
  // reduce-scattered, per layer: 256 tokens x 16 x 2 bytes.
  const sim::Program& mla = w.programs[0];
  const int passes = 4 * static_cast<int>(spec.num_microbatches());
  EXPECT_EQ(count(mla, "k_pos_emb_ag").ops, passes);
  EXPECT_DOUBLE_EQ(count(mla, "k_pos_emb_ag").bytes, passes * 256.0 * 16 * 2);
  EXPECT_EQ(count(mla, "k_pos_emb_rs").ops, passes);
  // In FP8 the down projections cast their input (the rank's 128 tokens of 256 hidden) and
  // their output gradients (64 and 32 + 16 wide), 4 bytes per element, as every FP8 Linear does.
  yaml.replace(yaml.find("precision: bf16"), 15, "precision: fp8");
  const auto fp8 = testing::parse_job(yaml, 8);
  const sim::Workload f = generate_workload(fp8);
  const std::int64_t layers = 4, microbatches = fp8.num_microbatches(), t = 128;
  ASSERT_EQ(microbatches, 1);
  EXPECT_EQ(count(f.programs[0], "q_down_fp8_cast").ops, layers * microbatches);
  EXPECT_DOUBLE_EQ(count(f.programs[0], "kv_down_fp8_cast").bytes, layers * microbatches * t * 256 * 4.0);
  EXPECT_DOUBLE_EQ(count(f.programs[0], "q_down_fp8_grad_cast").bytes, layers * microbatches * t * 64 * 4.0);
  EXPECT_DOUBLE_EQ(count(f.programs[0], "kv_down_fp8_grad_cast").bytes, layers * microbatches * t * 48 * 4.0);
}

TEST(Recompute, FullRecomputeReplaysTheLayerForwardAndCountsInHfuOnly) {
  auto base = testing::parse_job(job("  tp: 2\n  sequence_parallel: true\n", "  global_batch_size: 2\n"), 4);
  auto full = base;
  full.training.recompute = Recompute::Full;
  auto selective = base;
  selective.training.recompute = Recompute::Selective;
  const auto wb = generate_workload(base), wf = generate_workload(full), ws = generate_workload(selective);
  int recomputed = 0;
  for (const auto& op : wf.programs[0].ops) recomputed += op.recompute;
  EXPECT_GT(recomputed, 0);
  EXPECT_EQ(count(wf.programs[0], "qkv").ops, 2 * count(wb.programs[0], "qkv").ops);
  EXPECT_EQ(count(ws.programs[0], "attn").ops, 2 * count(wb.programs[0], "attn").ops);
  EXPECT_DOUBLE_EQ(wf.accounting.model_flops, wb.accounting.model_flops);
  EXPECT_GT(wf.accounting.hardware_flops, wb.accounting.hardware_flops);
  expect_flop_invariant(full);
  expect_flop_invariant(selective);
}

// overlap_grad_reduce: false with ZeRO-3 is DeepSpeed's overlap_comm: false: the reduce-scatters
// run in line on the compute stream (it was once accepted and ignored).
TEST(TensorParallel, CommOverlapMovesLayerCollectivesOffTheComputeStream) {
  const auto on = testing::parse_job(
      job("  tp: 4\n  sequence_parallel: true\n  tp_comm_overlap: true\n", "  global_batch_size: 1\n"), 4);
  const sim::Workload w = generate_workload(on);
  const sim::Program& p = w.programs[0];
  for (const auto& op : p.ops) {
    const auto* c = std::get_if<sim::CollectiveSpec>(&op.shape);
    // Inside layers no TP collective blocks the compute stream any more.
    if (c != nullptr && op.layer >= 0) {
      EXPECT_NE(op.stream, sim::Stream::Compute) << p.labels[op.label];
    }
  }
}

TEST(Pipeline, TiedEmbeddingGradientIsAllReducedBetweenFirstAndLastStage) {
  const auto spec = testing::parse_job(testing::small_gpt_job(1, 4, 1, false, 4, 1), 4);
  const sim::Workload w = generate_workload(spec);
  EXPECT_EQ(count(w.programs[0], "emb_ar").ops, 1);
  EXPECT_EQ(count(w.programs[3], "emb_ar").ops, 1);
  EXPECT_EQ(count(w.programs[1], "emb_ar").ops, 0);
  EXPECT_EQ(w.layout.group(0, sim::GroupKind::EMB), (std::vector<int>{0, 3}));
}

TEST(Pipeline, EmbeddingAndLossCountAsLayersLikeLlama405bOnPp8Vp8) {
  ModelSpec m;
  m.layers = 126;
  ParallelSpec p;
  p.pp = 8;
  p.vp = 8;
  std::string error;
  EXPECT_TRUE(virtual_stage_layers(m, p, &error).empty());  // 126 is not divisible by 64
  p.account_for_embedding = p.account_for_loss = true;
  const auto v = virtual_stage_layers(m, p, &error);
  ASSERT_EQ(v.size(), 64u) << error;
  EXPECT_EQ(v.front().size(), 1);
  EXPECT_EQ(v.back().size(), 1);
  EXPECT_EQ(v[1].size(), 2);
  int first = 0;
  for (const auto& c : stage_chunks(m, p, 0)) first += c.size();
  EXPECT_EQ(first, 15);
  // Explicit uneven first/last stages.
  ParallelSpec u;
  u.pp = 4;
  u.first_stage_layers = 30;
  u.last_stage_layers = 30;
  const auto w = virtual_stage_layers(m, u, &error);
  ASSERT_EQ(w.size(), 4u) << error;
  EXPECT_EQ(w[1].size(), 33);
  EXPECT_EQ(w[3].begin, 96);
}

}  // namespace
}  // namespace clustersim::workloads
