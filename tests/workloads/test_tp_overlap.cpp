// Transformer Engine's userbuffers TP overlap settings (parallelism.tp_comm_overlap_cfg): TE's
// defaults, a NeMo configuration, the GEMMs they mark, the trace round trip and the rejections.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <variant>

#include "sim/spec_error.hpp"
#include "workloads/generator.hpp"
#include "workloads/trace_io.hpp"
#include "workload_test_util.hpp"

namespace clustersim::workloads {
namespace {

std::string job(const std::string& parallel) {
  return "model:\n  layers: 2\n  hidden: 256\n  ffn: 1024\n  heads: 8\n  kv_heads: 8\n  vocab: 1000\n"
         "  activation: gelu\n  norm: layernorm\n  position: rope\n  tied_embeddings: false\n"
         "  bias: false\nparallelism:\n  tp: 4\n  sequence_parallel: true\n" + parallel +
         "training:\n  seq_length: 256\n  micro_batch_size: 1\n  precision: bf16\n"
         "  global_batch_size: 1\n";
}

// (splits, sm_margin, busy_sms) of the first GEMM with each label on rank 0.
std::map<std::string, std::tuple<int, int, int>> gemm_execution_by_label(const std::string& parallel) {
  const sim::Workload w = generate_workload(testing::parse_job(job(parallel), 4));
  std::map<std::string, std::tuple<int, int, int>> out;
  const sim::Program& p = w.programs[0];
  for (const auto& op : p.ops) {
    if (const auto* g = std::get_if<sim::GemmShape>(&op.shape)) {
      out.emplace(p.labels[op.label], std::make_tuple(g->splits, g->sm_margin, g->busy_sms));
    }
  }
  return out;
}

using P = std::tuple<int, int, int>;

TEST(TpOverlap, WithoutOverlapEveryGemmIsPlain) {
  for (const auto& [label, e] : gemm_execution_by_label("")) EXPECT_EQ(e, P(1, 0, 0)) << label;
}

TEST(TpOverlap, TransformerEngineDefaults) {
  const auto e = gemm_execution_by_label("  tp_comm_overlap: true\n");
  EXPECT_EQ(e.at("qkv"), P(4, 0, 0));          // ring exchange: tp chunks, no margin, copy engines
  EXPECT_EQ(e.at("fc1"), P(4, 0, 0));
  EXPECT_EQ(e.at("proj_dgrad"), P(4, 0, 0));
  EXPECT_EQ(e.at("fc2_dgrad"), P(4, 0, 0));
  EXPECT_EQ(e.at("proj"), P(4, 16, 16));       // pipeline: 4 splits, 16 SMs left to and held by the RS
  EXPECT_EQ(e.at("fc2"), P(4, 16, 16));
  EXPECT_EQ(e.at("qkv_dgrad"), P(1, 16, 16));  // bulk: planned for 132 - 16, 16 held meanwhile
  EXPECT_EQ(e.at("qkv_wgrad"), P(1, 16, 16));
  EXPECT_EQ(e.at("fc1_dgrad"), P(1, 16, 16));
  EXPECT_EQ(e.at("fc1_wgrad"), P(1, 16, 16));
  EXPECT_EQ(e.at("proj_wgrad"), P(1, 0, 0));   // not overlapped by TE
  EXPECT_EQ(e.at("fc2_wgrad"), P(1, 0, 0));
  EXPECT_EQ(e.at("head"), P(1, 0, 0));         // the output layer is outside TE's layers
}

TEST(TpOverlap, NemoGpt3ConfigurationAndAggregate) {
  const auto e = gemm_execution_by_label(
      "  tp_comm_overlap: true\n  tp_comm_overlap_cfg:\n"
      "    qkv_dgrad: {num_sm: 4, cga_size: 2, set_sm_margin: false}\n"
      "    fc1_dgrad: {num_sm: 2, set_sm_margin: false}\n"
      "    proj_fprop: {method: pipeline, num_sm: 24, cga_size: 2, num_splits: 4, set_sm_margin: true}\n"
      "    fc2_fprop: {method: ring_exchange, num_sm: 1, set_sm_margin: true}\n"
      "    qkv_fprop: {aggregate: true}\n");
  EXPECT_EQ(e.at("proj"), P(4, 24, 24));
  EXPECT_EQ(e.at("fc2"), P(4, 1, 0));       // a ring exchange's margin holds nothing
  EXPECT_EQ(e.at("qkv_dgrad"), P(1, 0, 4));  // no margin: planned for every SM, 4 held
  EXPECT_EQ(e.at("fc1_dgrad"), P(1, 0, 2));
  EXPECT_EQ(e.at("qkv"), P(2, 0, 0));        // aggregate: tp/2 two-chunk steps
  EXPECT_EQ(e.at("fc1"), P(4, 0, 0));        // roles left out keep TE's default
  EXPECT_EQ(e.at("qkv_wgrad"), P(1, 16, 16));
}

TEST(TpOverlap, TraceRoundTripKeepsSplitsMarginAndBusySms) {
  const sim::Workload w =
      generate_workload(testing::parse_job(job("  tp_comm_overlap: true\n"), 4));
  std::ostringstream out;
  write_rank_trace(out, w, 0);
  EXPECT_NE(out.str().find("\"splits\":4"), std::string::npos);
  EXPECT_NE(out.str().find("\"sm_margin\":16"), std::string::npos);
  EXPECT_NE(out.str().find("\"busy_sms\":16"), std::string::npos);
  std::istringstream in(out.str());
  const RankTrace t = read_rank_trace(in, "mem");
  const sim::Program& a = w.programs[0];
  ASSERT_EQ(t.program.ops.size(), a.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const auto* g = std::get_if<sim::GemmShape>(&a.ops[i].shape);
    if (g == nullptr) continue;
    const auto& r = std::get<sim::GemmShape>(t.program.ops[i].shape);
    EXPECT_EQ(std::tie(r.splits, r.sm_margin, r.busy_sms),
              std::tie(g->splits, g->sm_margin, g->busy_sms)) << i;
  }
}

void expect_rejected(const std::string& parallel, const std::string& field, const std::string& reason) {
  testing::expect_spec_error(job(parallel), 4, field, reason);
}

TEST(TpOverlap, InvalidConfigurationsAreRejected) {
  const std::string on = "  tp_comm_overlap: true\n  tp_comm_overlap_cfg:\n";
  expect_rejected("  tp_comm_overlap_cfg:\n    qkv_fprop: {aggregate: true}\n",
                  "parallelism.tp_comm_overlap_cfg", "tp_comm_overlap is not true");
  expect_rejected(on + "    qkv_fprob: {num_sm: 2}\n", "parallelism.tp_comm_overlap_cfg.qkv_fprob",
                  "unknown key");
  expect_rejected(on + "    qkv_fprop: {method: bulk}\n", "parallelism.tp_comm_overlap_cfg.qkv_fprop.method",
                  "ring_exchange");
  expect_rejected(on + "    fc2_fprop: {method: ring_exchange, num_splits: 4}\n",
                  "parallelism.tp_comm_overlap_cfg.fc2_fprop.num_splits", "only the pipeline");
  expect_rejected(on + "    proj_fprop: {method: pipeline, num_sm: 132}\n",
                  "parallelism.tp_comm_overlap_cfg.proj_fprop.num_sm", "out of range");
  expect_rejected(on + "    proj_fprop: {atomic_gemm: true}\n",
                  "parallelism.tp_comm_overlap_cfg.proj_fprop.atomic_gemm", "not modelled");
  expect_rejected(on + "    qkv_wgrad: {num_sm: 4, colour: red}\n",
                  "parallelism.tp_comm_overlap_cfg.qkv_wgrad.colour", "unknown key");
}

// Bytes of rank 0's TP all-gathers and reduce-scatters, by label, as a count per size.
std::map<std::pair<std::string, double>, int> tp_collective_bytes(const std::string& parallel,
                                                                  const std::string& precision) {
  std::string text = job(parallel);
  text.replace(text.find("precision: bf16"), 15, "precision: " + precision);
  const sim::Workload w = generate_workload(testing::parse_job(text, 4));
  const sim::Program& p = w.programs[0];
  std::map<std::pair<std::string, double>, int> out;
  for (const auto& op : p.ops) {
    const std::string& label = p.labels[op.label];
    if (std::holds_alternative<sim::CollectiveSpec>(op.shape) && (label == "tp_ag" || label == "tp_rs")) {
      ++out[{label, op.bytes}];
    }
  }
  return out;
}

TEST(TpOverlap, Fp8AllGathersOfTeLinearsMoveOneBytePerElement) {
  // 256 tokens x hidden 256 gathered: 128 KiB in BF16, 64 KiB in FP8. Per layer TE gathers the
  // qkv and fc1 inputs (forward and again for the weight gradient) and the proj and fc2 output
  // gradients: 6 x 2 layers. The gathers outside TE's layers stay BF16: before the output layer
  // (forward), of its input gradient (backward) and of the embedding's output gradient.
  const double bf16 = 256.0 * 256.0 * 2.0, fp8 = 256.0 * 256.0;
  const auto overlap_fp8 = tp_collective_bytes("  tp_comm_overlap: true\n", "fp8");
  EXPECT_EQ(overlap_fp8.at({"tp_ag", fp8}), 12);
  EXPECT_EQ(overlap_fp8.at({"tp_ag", bf16}), 3);
  EXPECT_EQ(overlap_fp8.count({"tp_rs", fp8}), 0u);  // reduce-scatters stay BF16
  const auto overlap_bf16 = tp_collective_bytes("  tp_comm_overlap: true\n", "bf16");
  EXPECT_EQ(overlap_bf16.at({"tp_ag", bf16}), 15);
  EXPECT_EQ(overlap_bf16.count({"tp_ag", fp8}), 0u);
  // Without TE's userbuffers TE gathers the quantized shards over NCCL (delayed and tensorwise
  // recipes), the same gathers as above; block scaling gathers BF16 (TE 2.x Linear).
  for (const char* recipe : {"fp8", "fp8\n  fp8_recipe: tensorwise"}) {
    const auto plain_fp8 = tp_collective_bytes("", recipe);
    EXPECT_EQ(plain_fp8.at({"tp_ag", fp8}), 12) << recipe;
    EXPECT_EQ(plain_fp8.at({"tp_ag", bf16}), 3) << recipe;
    EXPECT_EQ(overlap_fp8.at({"tp_rs", bf16}), plain_fp8.at({"tp_rs", bf16}));
  }
  const auto blockwise = tp_collective_bytes("", "fp8\n  fp8_recipe: blockwise");
  EXPECT_EQ(blockwise.count({"tp_ag", fp8}), 0u);
  EXPECT_EQ(blockwise.at({"tp_ag", bf16}), 15);
}

}  // namespace
}  // namespace clustersim::workloads
