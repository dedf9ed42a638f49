// JSON-lines trace: round trip of a rank's program, and strict rejection of malformed input.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "sim/spec_error.hpp"
#include "workloads/generator.hpp"
#include "workloads/trace_io.hpp"
#include "workload_test_util.hpp"

namespace clustersim::workloads {
namespace {

sim::Workload small_workload() {
  return generate_workload(testing::parse_job(testing::small_gpt_job(2, 2, 2, true, 8, 2), 8));
}

std::string write(const sim::Workload& w, int rank) {
  std::ostringstream out;
  write_rank_trace(out, w, rank);
  return out.str();
}

void expect_same_op(const sim::Program& a, const sim::Program& b, std::size_t i) {
  const sim::Op& x = a.ops[i];
  const sim::Op& y = b.ops[i];
  EXPECT_EQ(x.shape.index(), y.shape.index()) << i;
  const auto* mx = std::get_if<sim::MemBoundShape>(&x.shape);
  const auto* my = std::get_if<sim::MemBoundShape>(&y.shape);
  if (mx != nullptr && my != nullptr) {
    EXPECT_EQ(mx->kernel, my->kernel) << i;
    EXPECT_EQ(mx->host_threads, my->host_threads) << i;
  }
  const auto* gx = std::get_if<sim::GemmShape>(&x.shape);
  const auto* gy = std::get_if<sim::GemmShape>(&y.shape);
  if (gx != nullptr && gy != nullptr) {
    EXPECT_EQ(gx->m, gy->m) << i;
    EXPECT_EQ(gx->n, gy->n) << i;
    EXPECT_EQ(gx->k, gy->k) << i;
    EXPECT_EQ(gx->dtype, gy->dtype) << i;
    EXPECT_EQ(gx->grad_accum, gy->grad_accum) << i;
    EXPECT_EQ(gx->groups, gy->groups) << i;
    EXPECT_EQ(gx->group_axis, gy->group_axis) << i;
  }
  const auto* ax = std::get_if<sim::AttentionShape>(&x.shape);
  const auto* ay = std::get_if<sim::AttentionShape>(&y.shape);
  if (ax != nullptr && ay != nullptr) {
    EXPECT_EQ(ax->kernel, ay->kernel) << i;
  }
  EXPECT_EQ(a.labels[x.label], b.labels[y.label]) << i;
  EXPECT_EQ(x.stream, y.stream) << i;
  EXPECT_EQ(x.phase, y.phase) << i;
  EXPECT_EQ(x.layer, y.layer) << i;
  EXPECT_EQ(x.microbatch, y.microbatch) << i;
  EXPECT_EQ(x.recompute, y.recompute) << i;
  EXPECT_EQ(x.flops, y.flops) << i;  // exact: JSON numbers round-trip doubles
  EXPECT_EQ(x.bytes, y.bytes) << i;
  EXPECT_EQ(x.deps, y.deps) << i;
  EXPECT_EQ(x.duration_s, y.duration_s) << i;
}

TEST(TraceIo, RoundTripPreservesEveryOpField) {
  sim::Workload w = small_workload();
  // A costed op must keep its duration.
  w.programs[1].ops[3].duration_s = 1.25e-5;
  for (int rank : {0, 5}) {
    const std::string text = write(w, rank);
    std::istringstream in(text);
    const RankTrace t = read_rank_trace(in, "trace.jsonl");
    const sim::Program& original = w.program(rank);
    EXPECT_EQ(t.rank, rank);
    EXPECT_EQ(t.program_index, static_cast<int>(w.program_of_rank[static_cast<std::size_t>(rank)]));
    EXPECT_EQ(t.description, w.description);
    EXPECT_EQ(t.layout.world(), 8);
    EXPECT_EQ(t.layout.coord(rank, sim::GroupKind::PP), w.layout.coord(rank, sim::GroupKind::PP));
    ASSERT_EQ(t.program.ops.size(), original.ops.size());
    for (std::size_t i = 0; i < original.ops.size(); ++i) expect_same_op(original, t.program, i);
    // Shapes survive as well: spot-check a GEMM and an attention op through the writer again.
    sim::Workload again = w;
    again.programs[w.program_of_rank[static_cast<std::size_t>(rank)]] = t.program;
    EXPECT_EQ(write(again, rank), text);
  }
}

// CPU optimizer offload (format version 6): the host kernels and their threads survive the trip;
// per_rank, the default when absent, is not written.
TEST(TraceIo, HostKernelsAndTheirThreadsRoundTrip) {
  std::string job = testing::small_llama_job(1, 1, 4, false, 8, 1);
  job.replace(job.find("parallelism:\n"), 13, "parallelism:\n  zero_stage: 3\n  optimizer_offload: cpu\n");
  for (const char* threads : {"all_cores", "per_rank"}) {
    std::string with = job;
    with.replace(with.find("parallelism:\n"), 13, std::string("parallelism:\n  offload_threads: ") + threads + "\n");
    const sim::Workload w = generate_workload(testing::parse_job(with, 4));
    const std::string text = write(w, 1);
    EXPECT_NE(text.find("\"kernel\":\"host_cast\""), std::string::npos);
    EXPECT_NE(text.find("\"kernel\":\"host_copy_pageable\""), std::string::npos);
    EXPECT_EQ(text.find("\"host_threads\":\"all_cores\"") != std::string::npos,
              std::string(threads) == "all_cores");
    std::istringstream in(text);
    const RankTrace t = read_rank_trace(in, "trace.jsonl");
    ASSERT_EQ(t.program.ops.size(), w.program(1).ops.size());
    for (std::size_t i = 0; i < t.program.ops.size(); ++i) expect_same_op(w.program(1), t.program, i);
  }
}

// FP8 programs carry the amax all-reduces (group amax, stream amax_comm, format version 4).
TEST(TraceIo, Fp8AmaxReductionsRoundTrip) {
  const sim::Workload w =
      generate_workload(testing::parse_job(testing::small_llama_job(2, 2, 2, true, 8, 1, "fp8"), 8));
  const std::string text = write(w, 3);
  EXPECT_NE(text.find("\"stream\":\"amax_comm\""), std::string::npos);
  EXPECT_NE(text.find("\"group\":\"amax\""), std::string::npos);
  EXPECT_NE(text.find("\"amax\":3}"), std::string::npos) << text.substr(0, text.find('\n'));
  std::istringstream in(text);
  const RankTrace t = read_rank_trace(in, "trace.jsonl");
  const sim::Program& original = w.program(3);
  ASSERT_EQ(t.program.ops.size(), original.ops.size());
  for (std::size_t i = 0; i < original.ops.size(); ++i) expect_same_op(original, t.program, i);
}

// A version 3 header has no amax coordinate (and no busy_sms: a plain workload has none); the
// reader still takes it.
TEST(TraceIo, ReadsVersion3Headers) {
  std::string text = write(small_workload(), 5);
  const std::size_t version = text.find("\"version\":15");
  ASSERT_NE(version, std::string::npos);
  text.replace(version, 12, "\"version\":3");
  const std::size_t amax = text.find(",\"amax\":");
  ASSERT_NE(amax, std::string::npos);
  text.erase(amax, text.find('}', amax) - amax);
  std::istringstream in(text);
  EXPECT_EQ(read_rank_trace(in, "v3.jsonl").rank, 5);
}

TEST(TraceIo, HeaderDescribesTheRank) {
  const std::string text = write(small_workload(), 5);
  const std::string header = text.substr(0, text.find('\n'));
  // rank 5 = tp 1, dp 0, pp 1 in tp-cp-dp-pp order with tp 2, dp 2.
  EXPECT_NE(header.find("\"format\":\"clustersim-trace\",\"version\":15,\"rank\":5,\"program\":1"),
            std::string::npos) << header;
  EXPECT_NE(header.find("\"coords\":{\"tp\":1,\"cp\":0,\"dp\":0,\"pp\":1,\"ep\":0,"), std::string::npos)
      << header;
  EXPECT_NE(header.find("\"layout\":{\"tp\":2,\"cp\":1,\"dp\":2,\"pp\":2,\"ep\":1,\"etp\":2,"
                        "\"order\":[\"tp\",\"cp\",\"ep\",\"dp\",\"pp\"]}"),
            std::string::npos) << header;
}

// Replaces the first occurrence of `from` on line `line` (1-based) and expects a SpecError
// at that line naming `field`.
// 1-based line of the text's position `at` (line 1 is the header, line i + 2 holds ops[i]).
int line_of(const std::string& text, std::size_t at) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

// The field path of the op on trace line `line`: "ops[line - 2]".
std::string op_on_line(int line) { return "ops[" + std::to_string(line - 2) + "]"; }

void expect_rejected(const std::string& text, int line, const std::string& from,
                     const std::string& to, const std::string& field, const std::string& reason) {
  std::string bad = text;
  std::size_t begin = 0;
  for (int i = 1; i < line; ++i) begin = bad.find('\n', begin) + 1;
  const std::size_t at = bad.find(from, begin);
  ASSERT_LT(at, bad.find('\n', begin)) << "'" << from << "' not on line " << line;
  bad.replace(at, from.size(), to);
  std::istringstream in(bad);
  try {
    read_rank_trace(in, "t.jsonl");
    ADD_FAILURE() << "accepted: " << field;
  } catch (const SpecError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(e.reason().find(reason), std::string::npos) << e.what();
  }
}

TEST(TraceIo, MalformedInputIsRejectedWithLineAndField) {
  const std::string text = write(small_workload(), 0);
  expect_rejected(text, 3, "\"layer\":", "\"layers\":", "ops[1]", "missing required field 'layer'");
  expect_rejected(text, 3, "\"op\":1,", "\"op\":1,\"extra\":0,", "ops[1].extra", "unknown key");
  expect_rejected(text, 3, "\"stream\":\"", "\"stream\":\"x", "ops[1].stream", "is not one of");
  expect_rejected(text, 3, "\"kind\":\"", "\"kind\":\"x", "ops[1].kind", "is not one of");
  expect_rejected(text, 3, "\"deps\":[]", "\"deps\":[7]", "ops[1].deps", "earlier ops");
  expect_rejected(text, 3, "\"op\":1", "\"op\":2", "ops[1].op", "expected op index 1");
  expect_rejected(text, 3, "\"flops\":", "\"flops\":-1", "ops[1].flops", "finite number");
  expect_rejected(text, 3, "{", "{{", "", "invalid JSON");
  expect_rejected(text, 1, "\"version\":15", "\"version\":16", "version", "unsupported version");
  // A weight gradient into main_grad (version 7): its target must be f32 or bf16.
  const std::size_t accum = text.find("\"grad_accum\":\"f32\"");
  ASSERT_NE(accum, std::string::npos);
  const int accum_line = line_of(text, accum);
  const std::string accum_op = op_on_line(accum_line) + ".grad_accum";
  expect_rejected(text, accum_line, "\"grad_accum\":\"f32\"", "\"grad_accum\":\"fp16\"", accum_op,
                  "is not one of");
  expect_rejected(text, 1, "\"coords\":{\"tp\":0", "\"coords\":{\"tp\":1", "coords.tp", "does not match");
  expect_rejected(text, 1, "\"rank\":0", "\"rank\":99", "rank", "out of range");
}

// Version 8: an attention op names FlashAttention-2 as its kernel (cuDNN, the default, is left
// out); the reader keeps it and rejects other names at the op's line.
TEST(TraceIo, AttentionKernelRoundTripsAndIsChecked) {
  std::string job = testing::small_gpt_job(2, 2, 2, true, 8, 2);
  const std::string precision = "  precision: bf16\n";
  ASSERT_NE(job.find(precision), std::string::npos);
  job.replace(job.find(precision), precision.size(), precision + "  attention_backend: flash2\n");
  const sim::Workload w = generate_workload(testing::parse_job(job, 8));
  const std::string text = write(w, 0);
  const std::size_t at = text.find("\"kernel\":\"flash2\"");
  ASSERT_NE(at, std::string::npos);
  std::istringstream in(text);
  const RankTrace t = read_rank_trace(in, "trace.jsonl");
  int flash = 0;
  for (const sim::Op& op : t.program.ops) {
    if (const auto* a = std::get_if<sim::AttentionShape>(&op.shape)) {
      EXPECT_EQ(a->kernel, sim::AttentionKernel::Flash2);
      ++flash;
    }
  }
  EXPECT_GT(flash, 0);
  EXPECT_EQ(write(small_workload(), 0).find("\"kernel\":\"cudnn\""), std::string::npos);
  const int line = line_of(text, at);
  expect_rejected(text, line, "\"kernel\":\"flash2\"", "\"kernel\":\"flash3\"",
                  op_on_line(line) + ".kernel", "is not one of");
  // A causal op must be square: a rectangular causal block's pairs depend on the mask's
  // alignment (it was costed and counted as seq_q x seq_kv / 2, wrong for either alignment).
  const std::size_t causal = text.find("\"causal\":true");
  ASSERT_NE(causal, std::string::npos);
  const int causal_line = line_of(text, causal);
  expect_rejected(text, causal_line, "\"seq_kv\":", "\"seq_kv\":1", op_on_line(causal_line) + ".causal",
                  "needs seq_q == seq_kv");
}

// Version 9: a MoE rank's expert GEMMs are grouped, one GEMM per local expert; the trace keeps
// groups and axis, and rejects one without the other or more groups than rows.
TEST(TraceIo, GroupedExpertGemmsRoundTripAndAreChecked) {
  const std::string job =
      "model:\n  layers: 2\n  hidden: 256\n  ffn: 512\n  heads: 8\n  kv_heads: 4\n  vocab: 1000\n"
      "  activation: swiglu\n  norm: rmsnorm\n  position: rope\n  tied_embeddings: false\n"
      "  bias: false\n  experts: 8\n  top_k: 2\n  expert_ffn: 128\n"
      "parallelism:\n  ep: 4\n"
      "training:\n  seq_length: 256\n  micro_batch_size: 1\n  global_batch_size: 4\n"
      "  precision: bf16\n";
  const sim::Workload w = generate_workload(testing::parse_job(job, 4));
  const std::string text = write(w, 0);
  std::istringstream in(text);
  const RankTrace t = read_rank_trace(in, "trace.jsonl");
  ASSERT_EQ(t.program.ops.size(), w.program(0).ops.size());
  int grouped = 0;
  for (std::size_t i = 0; i < t.program.ops.size(); ++i) {
    expect_same_op(w.program(0), t.program, i);
    const auto* g = std::get_if<sim::GemmShape>(&t.program.ops[i].shape);
    if (g != nullptr && g->groups == 2) ++grouped;
  }
  EXPECT_EQ(grouped, 2 * 6);  // two MoE layers, six expert GEMMs each (fc1, fc2, dgrads, wgrads)
  // Fewer token rows than local experts: only as many GEMMs as rows, so the trace reads back.
  std::string few = job;
  few.replace(few.find("seq_length: 256"), 15, "seq_length: 2");
  few.replace(few.find("ep: 4"), 5, "ep: 1");
  const sim::Workload tiny = generate_workload(testing::parse_job(few, 4));
  const std::string tiny_text = write(tiny, 0);
  std::istringstream tiny_in(tiny_text);
  const RankTrace tt = read_rank_trace(tiny_in, "tiny.jsonl");
  int capped = 0;  // 2 tokens x top_k 2 = 4 rows for 8 local experts: 4 GEMMs of one row
  for (const sim::Op& o : tt.program.ops) {
    if (const auto* g = std::get_if<sim::GemmShape>(&o.shape)) {
      EXPECT_LE(g->groups, g->group_axis == sim::GroupAxis::K ? g->k : g->m);
      if (g->groups == 4) ++capped;
    }
  }
  EXPECT_EQ(capped, 2 * 6);
  const std::size_t at = text.find("\"groups\":2,\"group_axis\":\"m\"");
  ASSERT_NE(at, std::string::npos);
  const int line = line_of(text, at);
  const std::string op = op_on_line(line);
  expect_rejected(text, line, "\"groups\":2,\"group_axis\":\"m\"", "\"groups\":2", op,
                  "missing required field 'group_axis'");
  expect_rejected(text, line, "\"groups\":2,\"group_axis\":\"m\"", "\"groups\":99999,\"group_axis\":\"m\"",
                  op + ".groups", "out of range");
  expect_rejected(text, line, "\"group_axis\":\"m\"", "\"group_axis\":\"n\"", op + ".group_axis",
                  "is not one of");
}

TEST(TraceIo, OpCountMustMatchTheHeader) {
  const std::string text = write(small_workload(), 0);
  const std::string truncated = text.substr(0, text.rfind('\n', text.size() - 2) + 1);
  std::istringstream in(truncated);
  EXPECT_THROW(read_rank_trace(in, "t.jsonl"), SpecError);
  std::istringstream empty("");
  EXPECT_THROW(read_rank_trace(empty, "t.jsonl"), SpecError);
  EXPECT_THROW(read_rank_trace_file("/nonexistent/trace.jsonl"), SpecError);
}

TEST(TraceIo, TracesOfOneRankPerStageAssembleTheWorkloadAgain) {
  const sim::Workload w = small_workload();  // tp 2, dp 2, pp 2
  std::vector<RankTrace> traces;
  for (int rank : {6, 1}) {  // a rank of stage 1, then one of stage 0
    std::stringstream text;
    write_rank_trace(text, w, rank);
    traces.push_back(read_rank_trace(text, "r" + std::to_string(rank)));
  }
  const sim::Workload back = assemble_workload(traces);
  ASSERT_EQ(back.programs.size(), 2u);
  EXPECT_EQ(back.program_of_rank, w.program_of_rank);
  for (std::size_t p = 0; p < 2; ++p) EXPECT_EQ(back.programs[p].ops.size(), w.programs[p].ops.size());
  EXPECT_NEAR(back.accounting.hardware_flops / w.accounting.hardware_flops, 1.0, 1e-12);
  traces.pop_back();  // stage 0 missing
  EXPECT_THROW(assemble_workload(traces), SpecError);
}

}  // namespace
}  // namespace clustersim::workloads
