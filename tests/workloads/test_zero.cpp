// Generated programs for ZeRO-2/3 (DeepSpeed and FSDP2) and DeepSpeed's CPU optimizer offload:
// gathers and reduce-scatters per unit and microbatch, their streams and sizes, and the host
// step. Each test checks what a wrong generator would break.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parallelism_test_util.hpp"
#include "sim/spec_error.hpp"
#include "workload_test_util.hpp"
#include "workloads/dp_buckets.hpp"
#include "workloads/generator.hpp"

namespace clustersim::workloads {
namespace {

using ptest::count;
using ptest::job;

TEST(Zero, Zero3WithoutOverlappedReductionReducesOnTheComputeStream) {
  const auto spec = testing::parse_job(
      job("  zero_stage: 3\n  overlap_grad_reduce: false\n", "  global_batch_size: 8\n"), 4);
  const sim::Workload w = generate_workload(spec);
  const sim::Program& p = w.programs[0];
  const int m = static_cast<int>(spec.num_microbatches());
  EXPECT_EQ(count(p, "fsdp_rs", sim::Stream::Compute).ops, 6 * m);
  EXPECT_EQ(count(p, "fsdp_rs", sim::Stream::DpComm).ops, 0);
  EXPECT_EQ(count(p, "fsdp_ag", sim::Stream::DpComm).ops, 2 * 6 * m);  // gathers still prefetch
}

TEST(Zero, Zero3GathersEveryLayerTwicePerMicrobatchAndReduceScattersOnce) {
  const auto spec = testing::parse_job(job("  zero_stage: 3\n", "  global_batch_size: 8\n"), 4);
  const sim::Workload w = generate_workload(spec);
  const sim::Program& p = w.programs[0];
  const int m = static_cast<int>(spec.num_microbatches());  // 2
  // Units: embedding, 4 layers, head; forward and backward each.
  EXPECT_EQ(count(p, "fsdp_ag", sim::Stream::DpComm).ops, 2 * 6 * m);
  EXPECT_EQ(count(p, "fsdp_rs", sim::Stream::DpComm).ops, 6 * m);
  EXPECT_EQ(count(p, "dp_rs", sim::Stream::DpComm).ops, 0);
  // One unit of prefetch: a unit's gather may start when the unit before it starts, i.e. it
  // waits for the last compute-stream op issued before the previous unit's gather (the first
  // gather of the step waits for nothing).
  std::vector<std::uint32_t> gathers;
  for (std::uint32_t i = 0; i < p.ops.size(); ++i) {
    if (p.labels[p.ops[i].label] == "fsdp_ag") gathers.push_back(i);
  }
  ASSERT_GT(gathers.size(), 2u);
  EXPECT_TRUE(p.ops[gathers[0]].deps.empty());
  for (std::size_t k = 1; k < gathers.size(); ++k) {
    std::optional<std::uint32_t> anchor;
    for (std::uint32_t i = 0; i < gathers[k - 1]; ++i) {
      if (p.ops[i].stream == sim::Stream::Compute) anchor = i;
    }
    ASSERT_TRUE(anchor.has_value()) << k;
    EXPECT_EQ(p.ops[gathers[k]].deps, std::vector<std::uint32_t>{*anchor}) << "gather " << k;
  }
  // ZeRO-2 reduce-scatters its buckets in every microbatch's backward.
  const auto z2 = testing::parse_job(job("  zero_stage: 2\n", "  global_batch_size: 8\n"), 4);
  const sim::Workload wq = generate_workload(z2);
  const sim::Program& q = wq.programs[0];
  const auto z1 = testing::parse_job(job("  zero_stage: 1\n", "  global_batch_size: 8\n"), 4);
  EXPECT_EQ(count(q, "dp_rs", sim::Stream::DpComm).ops,
            m * count(generate_workload(z1).programs[0], "dp_rs", sim::Stream::DpComm).ops);
}

// DeepSpeed ZeRO-3 with tied embeddings on one stage: the head's gathers fetch the word
// embedding it reads with the final norm (they once fetched the final norm alone, 2 KiB).
TEST(Zero, Zero3HeadGathersTheTiedWordEmbedding) {
  const auto spec = testing::parse_job(
      "model: {layers: 2, hidden: 1024, ffn: 4096, heads: 16, kv_heads: 4, head_dim: 64, vocab: 32000,\n"
      "        activation: swiglu, norm: rmsnorm, position: rope, tied_embeddings: true, bias: false}\n"
      "parallelism: {tp: 1, pp: 1, dp: 4, zero_stage: 3}\n"
      "training: {seq_length: 1024, micro_batch_size: 1, global_batch_size: 4, precision: bf16}\n", 4);
  const sim::Workload w = generate_workload(spec);
  const sim::Program& p = w.programs[0];
  // Per microbatch: embedding, 2 layers, head, forward and backward. The head's two gathers
  // carry its final norm and the tied word embedding, vocab x h + h BF16 elements; the
  // embedding's carry vocab x h.
  const double tied = 2.0 * (32000.0 * 1024 + 1024);
  int head = 0;
  int gathers = 0;
  for (const auto& op : p.ops) {
    if (p.labels[op.label] != "fsdp_ag") continue;
    ++gathers;
    if (op.bytes == tied) ++head;
    EXPECT_GT(op.bytes, 2.0 * 1024) << "a gather of the final norm alone";
  }
  EXPECT_EQ(gathers, 8);
  EXPECT_EQ(head, 2);
}

// PyTorch FSDP2 (zero_impl: fsdp2): every gather is copied out into the unsharded parameters
// on the compute stream (4 B per parameter), and the root module (embedding and head) is
// gathered once before the embedding and kept through the backward.
TEST(Zero, Fsdp2CopiesOutEveryGatherAndKeepsTheRootThroughTheBackward) {
  const auto ds = testing::parse_job(job("  zero_stage: 3\n", "  global_batch_size: 8\n"), 4);
  const auto f2 = testing::parse_job(job("  zero_stage: 3\n  zero_impl: fsdp2\n", "  global_batch_size: 8\n"), 4);
  const sim::Workload wd = generate_workload(ds), wf = generate_workload(f2);
  const sim::Program& d = wd.programs[0];
  const sim::Program& p = wf.programs[0];
  const int m = static_cast<int>(f2.num_microbatches());
  // Per microbatch: the root and 4 layers forward, the 4 layers backward.
  EXPECT_EQ(count(p, "fsdp_ag", sim::Stream::DpComm).ops, 9 * m);
  EXPECT_EQ(count(p, "fsdp_copy_out", sim::Stream::Compute).ops, 9 * m);
  EXPECT_EQ(count(d, "fsdp_copy_out", sim::Stream::Compute).ops, 0);
  std::vector<double> ds_gathers, f2_gathers;
  for (std::uint32_t i = 0; i < d.ops.size(); ++i) {
    if (d.labels[d.ops[i].label] == "fsdp_ag") ds_gathers.push_back(d.ops[i].bytes);
  }
  for (std::uint32_t i = 0; i < p.ops.size(); ++i) {
    if (p.labels[p.ops[i].label] != "fsdp_copy_out") continue;
    ASSERT_EQ(p.ops[i].deps.size(), 1u);
    const sim::Op& gather = p.ops[p.ops[i].deps[0]];
    EXPECT_EQ(p.labels[gather.label], "fsdp_ag");
    EXPECT_DOUBLE_EQ(p.ops[i].bytes, 2.0 * gather.bytes);
    f2_gathers.push_back(gather.bytes);
  }
  // DeepSpeed's order per microbatch: embedding, layers 0-3, head, then head and layers 3-0 and
  // the embedding backward. FSDP2's root gather is the embedding's and the head's together.
  ASSERT_EQ(ds_gathers.size(), 12u * m);
  ASSERT_EQ(f2_gathers.size(), 9u * m);
  EXPECT_DOUBLE_EQ(f2_gathers[0], ds_gathers[0] + ds_gathers[5]);
  for (int k = 1; k <= 4; ++k) EXPECT_DOUBLE_EQ(f2_gathers[k], ds_gathers[k]) << k;
}

// Bytes of the ops labelled `label` on the compute stream, and the host threads of the last.
std::pair<double, sim::HostThreads> host_bytes(const sim::Program& p, const std::string& label) {
  double bytes = 0.0;
  sim::HostThreads threads = sim::HostThreads::PerRank;
  for (const auto& op : p.ops) {
    if (p.labels[op.label] != label) continue;
    bytes += op.bytes;
    if (const auto* m = std::get_if<sim::MemBoundShape>(&op.shape)) threads = m->host_threads;
  }
  return {bytes, threads};
}

// DeepSpeed ZeRO-3's offload path (workloads/dp_sync.cpp): per unit after its reduce-scatter,
// 2 + 2 + 4 B per partition parameter over PCIe; in the step 8, 28 and 6 B of host memory and
// a 2 B pageable copy back, all with PyTorch's default threads unless the job binds them.
TEST(Zero, CpuOffloadRunsDeepSpeedsHostStep) {
  const auto spec = testing::parse_job(job("  zero_stage: 3\n  optimizer_offload: cpu\n",
                                           "  global_batch_size: 8\n"), 4);  // 2 microbatches
  const sim::Workload w = generate_workload(spec);
  const sim::Program& p = w.programs[0];
  EXPECT_EQ(count(p, "optimizer").ops, 0);
  double shard = 0.0;
  for (const auto& param : stage_parameters(spec, 0)) shard += static_cast<double>(param.numel) / 4;
  // One copy per unit (4 layers, embedding, head), at the last microbatch only.
  EXPECT_EQ(count(p, "grad_d2h_fp32").ops, 6);
  EXPECT_NEAR(host_bytes(p, "grad_d2h_bf16").first, 2 * shard, 1e-6 * shard);
  EXPECT_NEAR(host_bytes(p, "grad_h2d_bf16").first, 2 * shard, 1e-6 * shard);
  EXPECT_NEAR(host_bytes(p, "grad_d2h_fp32").first, 4 * shard, 1e-6 * shard);
  const std::pair<const char*, double> step[] = {
      {"host_grad_clip", 8}, {"host_adam", 28}, {"host_param_cast", 6}, {"param_h2d", 2}};
  for (const auto& [label, per_param] : step) {
    EXPECT_EQ(count(p, label).ops, 1) << label;
    EXPECT_NEAR(host_bytes(p, label).first, per_param * shard, 1e-6 * shard) << label;
    EXPECT_EQ(host_bytes(p, label).second, sim::HostThreads::AllCores) << label;
  }
  // The host waits for each partition's reduce-scatter before copying it.
  for (const auto& op : p.ops) {
    if (p.labels[op.label] != "grad_d2h_bf16") continue;
    ASSERT_EQ(op.deps.size(), 1U);
    EXPECT_EQ(p.labels[p.ops[op.deps[0]].label], "fsdp_rs");
  }
  const auto bound = testing::parse_job(
      job("  zero_stage: 3\n  optimizer_offload: cpu\n  offload_threads: per_rank\n",
          "  global_batch_size: 4\n"), 4);
  EXPECT_EQ(host_bytes(generate_workload(bound).programs[0], "host_adam").second,
            sim::HostThreads::PerRank);
}

TEST(Zero, CpuOffloadWithZero2CopiesTheGradientsBeforeTheStep) {
  const auto spec = testing::parse_job(job("  zero_stage: 2\n  optimizer_offload: cpu\n",
                                           "  global_batch_size: 4\n"), 4);
  const sim::Workload w = generate_workload(spec);
  const sim::Program& p = w.programs[0];
  EXPECT_EQ(count(p, "grad_d2h_fp32").ops, 1);
  EXPECT_EQ(count(p, "host_adam").ops, 1);
}

// FSDP2 (fsdp: true): AdamW steps the FP32 parameter shard in place, 32 B per shard parameter
// with the gradient-norm read, where DeepSpeed's ZeRO-3 (zero_stage: 3) also keeps a master copy.
TEST(Zero, Fsdp2StepsTheFp32ShardInPlace) {
  const auto fsdp = testing::parse_job(job("  fsdp: true\n", "  global_batch_size: 4\n"), 4);
  const auto ds = testing::parse_job(job("  zero_stage: 3\n", "  global_batch_size: 4\n"), 4);
  EXPECT_EQ(fsdp.parallel.zero_impl, ZeroImpl::Fsdp2);
  EXPECT_EQ(ds.parallel.zero_impl, ZeroImpl::DeepSpeed);
  double shard = 0.0;
  for (const auto& param : stage_parameters(fsdp, 0)) shard += static_cast<double>(param.numel) / 4;
  const sim::Workload wf = generate_workload(fsdp), wd = generate_workload(ds);
  EXPECT_NEAR(host_bytes(wf.programs[0], "optimizer").first, 32 * shard, 1e-6 * shard);
  EXPECT_NEAR(host_bytes(wd.programs[0], "optimizer").first, 38 * shard, 1e-6 * shard);
}

TEST(Zero, OffloadThreadsNeedOffload) {
  try {
    testing::parse_job(job("  zero_stage: 3\n  offload_threads: per_rank\n", "  global_batch_size: 4\n"), 4);
    ADD_FAILURE() << "accepted offload_threads without optimizer_offload";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field(), "parallelism.offload_threads") << e.what();
  }
}

}  // namespace
}  // namespace clustersim::workloads
