// Generated programs: FLOP invariants, per-rank shapes, tensor-parallel collectives and their
// bytes, pipeline messages, precision, dependencies.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "workloads/flops.hpp"
#include "workloads/generator.hpp"
#include "workload_test_util.hpp"

namespace clustersim::workloads {
namespace {

using testing::parse_job;
using testing::small_gpt_job;
using testing::small_llama_job;

const std::string& label(const sim::Program& p, const sim::Op& op) { return p.labels[op.label]; }

double sum_of_op_flops(const sim::Workload& w) {
  std::vector<double> per_program;
  for (const auto& program : w.programs) {
    double sum = 0.0;
    for (const auto& op : program.ops) sum += op.flops;
    per_program.push_back(sum);
  }
  double total = 0.0;
  for (std::uint32_t index : w.program_of_rank) total += per_program[index];
  return total;
}

struct Case {
  std::string name;
  std::string yaml;
  int gpus;
};

std::vector<Case> cases() {
  return {{"llama_tp2_pp2_dp2_sp", small_llama_job(2, 2, 2, true, 16, 2), 8},
          {"llama_tp4_pp1_dp1_fp8", small_llama_job(4, 1, 1, false, 3, 1, "fp8"), 4},
          {"llama_tp1_pp4_dp2", small_llama_job(1, 4, 2, false, 12, 1), 8},
          {"gpt_tp3_pp2_dp1_tied", small_gpt_job(3, 2, 1, false, 5, 1), 6},
          {"gpt_tp2_pp1_dp2_sp_tied", small_gpt_job(2, 1, 2, true, 8, 2), 4}};
}

TEST(Generator, SumOfOpFlopsEqualsTheAnalyticHardwareCount) {
  for (const auto& c : cases()) {
    const WorkloadSpec spec = parse_job(c.yaml, c.gpus);
    const sim::Workload w = generate_workload(spec);
    const double expected = static_cast<double>(spec.training.global_batch_size) *
                            hardware_flops_per_sample(spec.model, spec.training.seq_length, spec.parallel.tp);
    EXPECT_NEAR(sum_of_op_flops(w) / expected, 1.0, 1e-12) << c.name;
    EXPECT_DOUBLE_EQ(w.accounting.hardware_flops, expected) << c.name;
  }
}

TEST(Generator, DefaultJobFlopsAndAccounting) {
  const WorkloadSpec spec = parse_job(testing::default_job_yaml(), 128);
  const sim::Workload w = generate_workload(spec);
  ASSERT_EQ(w.programs.size(), 8u);
  EXPECT_NEAR(sum_of_op_flops(w) / w.accounting.hardware_flops, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(w.accounting.tokens, 256.0 * 2048);
  EXPECT_EQ(w.accounting.mfu_convention, "megatron");
  EXPECT_DOUBLE_EQ(w.accounting.model_flops,
                   256.0 * model_flops_per_sample(spec.model, 2048, MfuConvention::Megatron));
  EXPECT_EQ(w.accounting.peak_flops_per_gpu, 0.0);
  EXPECT_EQ(w.description, "gpt3_175b tp4 pp8 dp4 sp mbs1 gbs256 seq2048 bf16 1f1b distopt");
}

TEST(Generator, OneProgramPerStageInMegatronRankOrder) {
  const sim::Workload w = generate_workload(parse_job(small_llama_job(2, 2, 2, true, 16, 2), 8));
  ASSERT_EQ(w.programs.size(), 2u);
  ASSERT_EQ(w.program_of_rank.size(), 8u);
  // tp fastest, then dp, then pp: ranks 0-3 are stage 0, 4-7 stage 1.
  for (int rank = 0; rank < 8; ++rank) EXPECT_EQ(w.program_of_rank[rank], rank < 4 ? 0u : 1u);
  EXPECT_EQ(w.layout.group(5, sim::GroupKind::TP), (std::vector<int>{4, 5}));
  EXPECT_EQ(w.layout.group(5, sim::GroupKind::DP), (std::vector<int>{5, 7}));
}

std::vector<std::string> forward_labels(const sim::Program& p, int layer, int microbatch) {
  std::vector<std::string> out;
  for (const auto& op : p.ops) {
    if (op.layer == layer && op.microbatch == microbatch && op.phase == sim::Phase::Forward) {
      out.push_back(label(p, op));
    }
  }
  return out;
}

TEST(Generator, LayerForwardOrderWithSequenceParallelism) {
  const sim::Workload w = generate_workload(parse_job(small_llama_job(2, 1, 1, true, 2, 1), 2));
  EXPECT_EQ(forward_labels(w.programs[0], 1, 1),
            (std::vector<std::string>{"norm", "tp_ag", "qkv", "rope", "attn", "proj", "tp_rs",
                                      "residual", "norm", "tp_ag", "fc1", "act", "fc2", "tp_rs",
                                      "residual"}));
}

TEST(Generator, LayerForwardOrderWithoutSequenceParallelism) {
  const sim::Workload w = generate_workload(parse_job(small_gpt_job(2, 1, 1, false, 2, 1), 2));
  EXPECT_EQ(forward_labels(w.programs[0], 0, 0),
            (std::vector<std::string>{"norm", "qkv", "attn", "proj", "tp_ar", "residual", "norm",
                                      "fc1", "act", "fc2", "tp_ar", "residual"}));
}

const sim::GemmShape& gemm_of(const sim::Program& p, const std::string& name, int layer) {
  for (const auto& op : p.ops) {
    if (label(p, op) == name && op.layer == layer) return std::get<sim::GemmShape>(op.shape);
  }
  throw std::runtime_error("no op " + name);
}

// Per-rank GEMM shapes with tp 2: tokens m = mbs*seq = 256; qkv out (8 + 2*4) heads * 32 / 2;
// SwiGLU FC1 out 2*688/2; dgrad (m=tokens, n=in, k=out), wgrad (m=in, n=out, k=tokens).
TEST(Generator, GemmShapesAfterTensorParallelSharding) {
  const sim::Workload w = generate_workload(parse_job(small_llama_job(2, 1, 1, true, 2, 2), 2));
  const sim::Program& p = w.programs[0];
  struct Expect { const char* name; std::int64_t in, out; };
  for (const Expect& e : {Expect{"qkv", 256, 256}, Expect{"proj", 128, 256}, Expect{"fc1", 256, 688},
                          Expect{"fc2", 344, 256}, Expect{"head", 256, 512}}) {
    const int layer = std::string(e.name) == "head" ? -1 : 2;
    const auto& fwd = gemm_of(p, e.name, layer);
    EXPECT_EQ(fwd.m, 256) << e.name;
    EXPECT_EQ(fwd.k, e.in) << e.name;
    EXPECT_EQ(fwd.n, e.out) << e.name;
    const auto& dgrad = gemm_of(p, std::string(e.name) + "_dgrad", layer);
    EXPECT_EQ(dgrad.m, 256) << e.name;
    EXPECT_EQ(dgrad.n, e.in) << e.name;
    EXPECT_EQ(dgrad.k, e.out) << e.name;
    const auto& wgrad = gemm_of(p, std::string(e.name) + "_wgrad", layer);
    EXPECT_EQ(wgrad.m, e.in) << e.name;
    EXPECT_EQ(wgrad.n, e.out) << e.name;
    EXPECT_EQ(wgrad.k, 256) << e.name;
  }
}

TEST(Generator, AttentionShapePerRank) {
  const sim::Workload w = generate_workload(parse_job(small_llama_job(2, 1, 1, true, 2, 2), 2));
  const sim::Program& p = w.programs[0];
  int seen = 0;
  for (const auto& op : p.ops) {
    if (!std::holds_alternative<sim::AttentionShape>(op.shape)) continue;
    const auto& a = std::get<sim::AttentionShape>(op.shape);
    EXPECT_EQ(a.batch, 2);
    EXPECT_EQ(a.heads, 4);
    EXPECT_EQ(a.kv_heads, 2);
    EXPECT_EQ(a.seq_q, 128);
    EXPECT_EQ(a.head_dim, 32);
    EXPECT_TRUE(a.causal);
    EXPECT_EQ(a.backward, label(p, op) == "attn_bwd");
    ++seen;
  }
  EXPECT_EQ(seen, 4 * 2 * 1);  // layers x (fwd + bwd) x one microbatch
}

TEST(Generator, Fp8AppliesToTransformerLayerGemmsOnly) {
  const sim::Workload w = generate_workload(parse_job(small_llama_job(2, 1, 1, true, 1, 1, "fp8"), 2));
  const sim::Program& p = w.programs[0];
  for (const auto& op : p.ops) {
    if (const auto* g = std::get_if<sim::GemmShape>(&op.shape)) {
      EXPECT_EQ(g->dtype, op.layer >= 0 ? sim::DType::FP8 : sim::DType::BF16) << label(p, op);
    }
    if (const auto* a = std::get_if<sim::AttentionShape>(&op.shape)) {
      EXPECT_EQ(a->dtype, sim::DType::BF16);
    }
  }
}

// With fp8 every layer GEMM operand is quantized by its own kernel (transformer_constants.hpp):
// forward, the LayerNormLinear inputs (QKV, FC1: [tokens, hidden]) are transposed (2 B per
// element) after their GEMM and the Linear inputs (projection, FC2) cast-transposed (4 B) before
// it; backward, each linear's output gradient is cast-transposed (4 B) before its dgrad. Tokens:
// seq 128 x mbs 1 (gathered over tp 2 with SP); per-rank widths as in the test above.
TEST(Generator, Fp8QuantizesEachLayerGemmOperandOnce) {
  const sim::Workload w = generate_workload(parse_job(small_llama_job(2, 1, 1, true, 1, 1, "fp8"), 2));
  const sim::Program& p = w.programs[0];
  const double t = 128;
  const std::map<std::string, double> expect = {
      {"qkv_fp8_transpose", 2 * t * 256},       {"fc1_fp8_transpose", 2 * t * 256},
      {"proj_fp8_cast", 4 * t * 128},           {"fc2_fp8_cast", 4 * t * 344},
      {"qkv_fp8_grad_cast", 4 * t * 256},       {"proj_fp8_grad_cast", 4 * t * 256},
      {"fc1_fp8_grad_cast", 4 * t * 688},       {"fc2_fp8_grad_cast", 4 * t * 256}};
  std::map<std::string, int> seen;
  for (const auto& op : p.ops) {
    if (op.layer != 1 || op.microbatch != 0) continue;
    const auto it = expect.find(label(p, op));
    if (it == expect.end()) continue;
    ++seen[it->first];
    EXPECT_EQ(std::get<sim::MemBoundShape>(op.shape).kernel, sim::MemKernel::Copy) << it->first;
    EXPECT_DOUBLE_EQ(op.bytes, it->second) << it->first;
  }
  for (const auto& [name, bytes] : expect) EXPECT_EQ(seen[name], 1) << name;
  const sim::Workload bf = generate_workload(parse_job(small_llama_job(2, 1, 1, true, 1, 1), 2));
  for (const auto& op : bf.programs[0].ops) {
    EXPECT_EQ(label(bf.programs[0], op).find("fp8"), std::string::npos) << label(bf.programs[0], op);
  }
}

// Counts TP collectives of one layer and microbatch by (kind, stream).
std::map<std::string, int> tp_collectives(const sim::Program& p, int layer, int mb, sim::Phase phase) {
  std::map<std::string, int> out;
  for (const auto& op : p.ops) {
    const auto* c = std::get_if<sim::CollectiveSpec>(&op.shape);
    if (c == nullptr || c->group != sim::GroupKind::TP || op.layer != layer || op.microbatch != mb ||
        op.phase != phase) {
      continue;
    }
    ++out[std::string(sim::to_string(c->kind)) + "@" + sim::to_string(op.stream)];
  }
  return out;
}

TEST(Generator, TensorParallelCollectivesPerLayerAsMegatronRunsThem) {
  const sim::Program sp = generate_workload(parse_job(small_llama_job(2, 1, 1, true, 2, 1), 2)).programs[0];
  EXPECT_EQ(tp_collectives(sp, 1, 0, sim::Phase::Forward),
            (std::map<std::string, int>{{"all_gather@compute", 2}, {"reduce_scatter@compute", 2}}));
  EXPECT_EQ(tp_collectives(sp, 1, 0, sim::Phase::Backward),
            (std::map<std::string, int>{{"all_gather@compute", 2}, {"all_gather@tp_comm", 2},
                                        {"reduce_scatter@tp_comm", 2}}));
  const sim::Program nosp = generate_workload(parse_job(small_llama_job(2, 1, 1, false, 2, 1), 2)).programs[0];
  EXPECT_EQ(tp_collectives(nosp, 1, 0, sim::Phase::Forward),
            (std::map<std::string, int>{{"all_reduce@compute", 2}}));
  EXPECT_EQ(tp_collectives(nosp, 1, 0, sim::Phase::Backward),
            (std::map<std::string, int>{{"all_reduce@tp_comm", 2}}));
  const sim::Program tp1 = generate_workload(parse_job(small_llama_job(1, 1, 2, true, 2, 1), 2)).programs[0];
  for (const auto& op : tp1.ops) {
    const auto* c = std::get_if<sim::CollectiveSpec>(&op.shape);
    EXPECT_FALSE(c != nullptr && c->group == sim::GroupKind::TP) << label(tp1, op);
  }
}

// Every TP collective moves the full [mbs*seq, hidden] BF16 activation (NCCL buffer size: the
// gathered output of an all-gather, the input of a reduce-scatter); the cross-entropy
// all-reduces move one FP32 per token; the SP gradient all-reduce the replicated norms.
TEST(Generator, TensorParallelBytesMatchTheirFormulas) {
  const WorkloadSpec spec = parse_job(small_llama_job(2, 2, 1, true, 4, 2), 4);
  const sim::Workload w = generate_workload(spec);
  const double activation = 2.0 * 128 * 256 * 2;  // mbs * seq * hidden * BF16
  for (std::size_t stage = 0; stage < w.programs.size(); ++stage) {
    const sim::Program& p = w.programs[stage];
    int ce = 0;
    for (const auto& op : p.ops) {
      const auto* c = std::get_if<sim::CollectiveSpec>(&op.shape);
      if (c == nullptr || c->group != sim::GroupKind::TP) continue;
      const std::string& name = label(p, op);
      if (name == "tp_ar_ce") {
        EXPECT_DOUBLE_EQ(op.bytes, 4.0 * 2 * 128);
        ++ce;
      } else if (name == "tp_ar_sp_grads") {
        // Two RMSNorm weights per layer (2 layers per stage), plus the final norm on the last stage.
        const double norms = 2 * 2 * 256 + (stage == 1 ? 256 : 0);
        EXPECT_DOUBLE_EQ(op.bytes, norms * 4.0);
      } else {
        EXPECT_DOUBLE_EQ(op.bytes, activation) << name;
      }
    }
    EXPECT_EQ(ce, stage == 1 ? 3 * 2 : 0);  // three all-reduces per microbatch on the last stage
  }
}

TEST(Generator, PipelineMessagesCarryTheSequenceParallelShard) {
  for (bool sp : {true, false}) {
    const sim::Workload w = generate_workload(parse_job(small_llama_job(2, 2, 1, sp, 4, 2), 4));
    const double expected = 2.0 * 128 * 256 * 2 / (sp ? 2 : 1);
    int count = 0;
    for (std::size_t stage = 0; stage < 2; ++stage) {
      const sim::Program& p = w.programs[stage];
      for (const auto& op : p.ops) {
        const auto* x = std::get_if<sim::P2PSpec>(&op.shape);
        if (x == nullptr) continue;
        ++count;
        EXPECT_DOUBLE_EQ(op.bytes, expected);
        EXPECT_EQ(op.stream, sim::Stream::Compute);
        const sim::Peer beyond = stage == 0 ? sim::Peer::PrevStage : sim::Peer::NextStage;
        EXPECT_NE(x->send_to, beyond);
        EXPECT_NE(x->recv_from, beyond);
      }
    }
    EXPECT_GT(count, 0);
  }
}

TEST(Generator, DependenciesPointBackwardsAndAsyncCommIsWaitedFor) {
  const sim::Workload w = generate_workload(parse_job(small_llama_job(2, 2, 2, true, 8, 1), 8));
  for (const auto& p : w.programs) {
    std::vector<bool> waited(p.ops.size(), false);
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      for (std::uint32_t d : p.ops[i].deps) {
        ASSERT_LT(d, i);
        waited[d] = true;
      }
      if (p.ops[i].stream != sim::Stream::Compute) {
        EXPECT_FALSE(p.ops[i].deps.empty() && p.ops[i].stream == sim::Stream::TpComm) << i;
      }
    }
    // Every TP reduce-scatter on the communication stream is consumed by a later op.
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      if (p.ops[i].stream == sim::Stream::TpComm && label(p, p.ops[i]) == "tp_rs") {
        EXPECT_TRUE(waited[i]) << i;
      }
    }
  }
}

TEST(Generator, HeadUsesMegatronPaddedVocab) {
  const sim::Workload w = generate_workload(parse_job(small_gpt_job(3, 1, 1, false, 1, 1), 3));
  // vocab 999 padded to a multiple of 128*3 = 384 -> 1152, 384 per rank.
  EXPECT_EQ(gemm_of(w.programs[0], "head", -1).n, 384);
}

}  // namespace
}  // namespace clustersim::workloads
