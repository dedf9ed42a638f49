// Megatron-core's flex token dispatcher with DeepEP (parallelism.moe_token_dispatcher: deepep;
// docs/trace-format.md, "MoE"): each of a MoE layer's four exchanges is one token exchange of the
// rank's tokens over EP with the model's routing, in place of the all-to-all of token copies;
// the GPU work is unchanged, and the trace keeps the routing. Checks a wrong generator breaks.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <variant>

#include "workload_test_util.hpp"
#include "workloads/generator.hpp"
#include "workloads/trace_io.hpp"

namespace clustersim::workloads {
namespace {

// DeepSeek-V3's MoE layers cut to 4 (the first dense), ep 8 with tp 2 and SP (etp 1), 2 microbatches.
WorkloadSpec job(const std::string& dispatcher, const std::string& training = "") {
  return testing::parse_job(
      "model: {catalog: deepseek_v3, layers: 4, first_dense_layers: 1}\n"
      "parallelism: {tp: 2, ep: 8, etp: 1, sequence_parallel: true, moe_token_dispatcher: " +
          dispatcher + "}\n"
          "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 8, precision: bf16" +
          training + "}\n",
      8);
}

std::map<std::string, int> exchanges(const sim::Program& p, sim::CollectiveKind kind) {
  std::map<std::string, int> n;
  for (const auto& op : p.ops) {
    const auto* c = std::get_if<sim::CollectiveSpec>(&op.shape);
    if (c != nullptr && c->kind == kind) ++n[p.labels[op.label]];
  }
  return n;
}

TEST(DeepEp, EachExpertExchangeIsOneTokenExchangeOfTheRanksTokens) {
  const sim::Workload w = generate_workload(job("deepep"));
  const sim::Program& p = w.programs[0];
  EXPECT_TRUE(exchanges(p, sim::CollectiveKind::AllToAll).empty());
  // 3 MoE layers x 2 microbatches, each exchange once per pass.
  const std::map<std::string, int> expect = {{"ep_dispatch_deepep", 6}, {"ep_combine_deepep", 6},
                                             {"ep_combine_bwd_deepep", 6}, {"ep_dispatch_bwd_deepep", 6}};
  EXPECT_EQ(exchanges(p, sim::CollectiveKind::TokenExchange), expect);
  const double tokens_bytes = 4096.0 / 2 * 7168 * 2;  // the rank's sequence shard, BF16, once each
  for (const auto& op : p.ops) {
    const auto* c = std::get_if<sim::CollectiveSpec>(&op.shape);
    if (c == nullptr || c->kind != sim::CollectiveKind::TokenExchange) continue;
    EXPECT_EQ(c->group, sim::GroupKind::EP);
    EXPECT_EQ(op.stream, sim::Stream::Compute);
    EXPECT_EQ(op.bytes, tokens_bytes);
    EXPECT_EQ(c->routing, (sim::TokenRouting{256, 8, 8, 4}));  // the catalog's node-limited routing
  }
}

TEST(DeepEp, TheGpuWorkIsTheAllToAllDispatchersAndImbalanceGrowsTheExchange) {
  const sim::Workload a = generate_workload(job("alltoall"));
  const sim::Workload d = generate_workload(job("deepep"));
  EXPECT_EQ(a.accounting.model_flops, d.accounting.model_flops);
  EXPECT_EQ(a.accounting.hardware_flops, d.accounting.hardware_flops);
  double compute_a = 0.0, compute_d = 0.0;
  for (const auto& op : a.programs[0].ops) compute_a += op.is_compute() ? op.flops : 0.0;
  for (const auto& op : d.programs[0].ops) compute_d += op.is_compute() ? op.flops : 0.0;
  EXPECT_EQ(compute_a, compute_d);
  // DeepEP hands the experts their rows grouped: no sort by local expert around them.
  auto sorts = [](const sim::Program& p) {
    int n = 0;
    for (const auto& op : p.ops) n += p.labels[op.label].find("sort_chunks") != std::string::npos;
    return n;
  };
  EXPECT_GT(sorts(a.programs[0]), 0);
  EXPECT_EQ(sorts(d.programs[0]), 0);
  // The busiest rank (moe_imbalance) exchanges its larger share.
  const sim::Workload skewed = generate_workload(job("deepep", ", moe_imbalance: 1.5"));
  for (const auto& op : skewed.programs[0].ops) {
    const auto* c = std::get_if<sim::CollectiveSpec>(&op.shape);
    if (c != nullptr && c->kind == sim::CollectiveKind::TokenExchange) {
      EXPECT_EQ(op.bytes, 1.5 * 4096.0 / 2 * 7168 * 2);
    }
  }
}

TEST(DeepEp, TheTraceKeepsTheRouting) {
  const sim::Workload w = generate_workload(job("deepep"));
  std::ostringstream out;
  write_rank_trace(out, w, 3);
  EXPECT_NE(out.str().find("\"collective\":\"token_exchange\",\"group\":\"ep\",\"experts\":256,"
                           "\"top_k\":8,\"router_groups\":8,\"router_group_topk\":4"),
            std::string::npos);
  std::istringstream in(out.str());
  const RankTrace t = read_rank_trace(in, "trace.jsonl");
  ASSERT_EQ(t.program.ops.size(), w.programs[0].ops.size());
  for (std::size_t i = 0; i < t.program.ops.size(); ++i) {
    const auto* x = std::get_if<sim::CollectiveSpec>(&w.programs[0].ops[i].shape);
    const auto* y = std::get_if<sim::CollectiveSpec>(&t.program.ops[i].shape);
    ASSERT_EQ(x == nullptr, y == nullptr) << i;
    if (x != nullptr) {
      EXPECT_EQ(x->routing, y->routing) << i;
    }
  }
  // Inconsistent routing in a trace is an error at its field.
  std::string bad = out.str();
  const std::size_t at = bad.find("\"router_group_topk\":4");
  ASSERT_NE(at, std::string::npos);
  bad.replace(at, 21, "\"router_group_topk\":1");  // 1 group of 32 experts holds top 8: fine
  std::istringstream ok(bad);
  EXPECT_NO_THROW(read_rank_trace(ok, "trace.jsonl"));
  bad = out.str();
  bad.replace(bad.find("\"top_k\":8"), 9, "\"top_k\":300");
  std::istringstream wrong(bad);
  EXPECT_THROW(read_rank_trace(wrong, "trace.jsonl"), SpecError);
}

}  // namespace
}  // namespace clustersim::workloads
