// Megatron-core's fine-grained activation offloading (training.offload_modules): what each module
// moves and frees, the memory model's resident activations, the copies and waits added to the
// programs, and the job checks.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "workload_test_util.hpp"
#include "workloads/activation_offload.hpp"
#include "workloads/generator.hpp"
#include "workloads/memory.hpp"

namespace clustersim::workloads {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Llama 3 8B's layer (h 4096, 32 heads, 8 KV heads of 128), 4 layers, seq 4096, mbs 1.
std::string job(int pp, const std::string& precision, const std::string& modules, int gbs = 8) {
  return "model: {catalog: llama3_8b, layers: 4}\n"
         "parallelism: {tp: 1, pp: " + std::to_string(pp) + ", dp: 1}\n"
         "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: " + std::to_string(gbs) +
         ", precision: " + precision + ", offload_modules: [" + modules + "]}\n";
}

WorkloadSpec spec_of(int pp, const std::string& precision, const std::string& modules, int gbs = 8) {
  return testing::parse_job(job(pp, precision, modules, gbs), pp);
}

double copied(const LayerOffload& o, OffloadModule m) { return o.copied[static_cast<std::size_t>(m)]; }

TEST(ActivationOffload, EachModuleMovesWhatItSaves) {
  // BF16: linear_qkv saves the norm input and the norm output, 32 MiB each (4096 x 4096 x 2 B);
  // the core attention q (32 MiB), k and v (8 MiB each) and its output (32 MiB); its FP32
  // log-sum-exp, 4096 x 32 elements, is under Megatron's 1M-element minimum and stays.
  const LayerOffload all = layer_offload(spec_of(1, "bf16", "qkv_linear, core_attn, attn_proj"), 0);
  EXPECT_DOUBLE_EQ(copied(all, OffloadModule::QkvLinear), 64 * kMiB);
  EXPECT_DOUBLE_EQ(copied(all, OffloadModule::CoreAttn), 80 * kMiB);
  // The projection's input is the attention output itself: copied by both groups, freed once.
  EXPECT_DOUBLE_EQ(copied(all, OffloadModule::AttnProj), 32 * kMiB);
  EXPECT_DOUBLE_EQ(all.freed, (64 + 80) * kMiB);
  // Without the projection's group the output stays referenced by it: copied, not freed.
  const LayerOffload core = layer_offload(spec_of(1, "bf16", "core_attn"), 0);
  EXPECT_DOUBLE_EQ(copied(core, OffloadModule::CoreAttn), 80 * kMiB);
  EXPECT_DOUBLE_EQ(core.freed, 48 * kMiB);
  EXPECT_DOUBLE_EQ(copied(core, OffloadModule::QkvLinear), 0.0);
  // FP8: the projection keeps its own FP8 cast (16 MiB), so the BF16 output leaves with the core
  // attention's group; linear_qkv's norm output is FP8 (16 MiB).
  const LayerOffload fp8 = layer_offload(spec_of(1, "fp8", "qkv_linear, core_attn, attn_proj"), 0);
  EXPECT_DOUBLE_EQ(copied(fp8, OffloadModule::QkvLinear), 48 * kMiB);
  EXPECT_DOUBLE_EQ(copied(fp8, OffloadModule::AttnProj), 16 * kMiB);
  EXPECT_DOUBLE_EQ(fp8.freed, (48 + 80 + 16) * kMiB);
  EXPECT_DOUBLE_EQ(layer_offload(spec_of(1, "bf16", "core_attn"), 4).freed, 0.0);  // no such layer
}

TEST(ActivationOffload, ResidentActivationsLoseTheFreedBytesOfEveryChunkInFlight) {
  const WorkloadSpec base = testing::parse_job(
      "model: {catalog: llama3_8b, layers: 4}\nparallelism: {tp: 1, pp: 2, dp: 1}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 8, precision: bf16}\n", 2);
  const WorkloadSpec off = spec_of(2, "bf16", "qkv_linear, core_attn, attn_proj");
  const MemoryReport a = estimate_memory(base, 80e9);
  const MemoryReport b = estimate_memory(off, 80e9);
  const StageMemory& s0 = a.stages[0];
  const StageMemory& t0 = b.stages[0];
  ASSERT_EQ(s0.microbatches_in_flight, 2);  // stage 0 of 2 under 1F1B
  const double per_chunk = 2 * layer_offload(off, 0).freed;  // the stage's two layers
  EXPECT_DOUBLE_EQ(t0.bytes("activations"), s0.bytes("activations") - 2 * per_chunk);
  // Kept on the GPU: one chunk's last layer (144 MiB of groups) and one group reloaded ahead.
  EXPECT_DOUBLE_EQ(t0.bytes("activation_offload"), (64 + 80 + 32) * kMiB + 80 * kMiB);
  EXPECT_DOUBLE_EQ(s0.bytes("activation_offload"), 0.0);
  EXPECT_LT(t0.total(), s0.total());
}

// The host pins every chunk-microbatch's groups in flight; a GPU's share of the host bounds it.
TEST(ActivationOffload, PinnedHostMemoryIsCheckedAgainstTheHostShare) {
  const WorkloadSpec off = spec_of(2, "bf16", "qkv_linear, core_attn, attn_proj");
  const LayerOffload o = layer_offload(off, 0);
  const double per_layer = copied(o, OffloadModule::QkvLinear) + copied(o, OffloadModule::CoreAttn) +
                           copied(o, OffloadModule::AttnProj);  // 176 MiB
  const MemoryReport unknown = estimate_memory(off, 80e9);
  // Stage 0: 2 chunk-microbatches of 2 layers in flight.
  EXPECT_DOUBLE_EQ(unknown.stages[0].host_bytes, 2 * 2 * per_layer);
  EXPECT_TRUE(unknown.fits());
  EXPECT_TRUE(estimate_memory(off, 80e9, 250e9).fits());
  const MemoryReport tight = estimate_memory(off, 80e9, 0.5e9);
  EXPECT_FALSE(tight.fits());
  EXPECT_NE(tight.oom_message().find("pins"), std::string::npos) << tight.oom_message();
  EXPECT_NE(tight.oom_message().find("share of its host"), std::string::npos);
  EXPECT_EQ(estimate_memory(spec_of(2, "bf16", "core_attn"), 80e9, 0.5e9).stages[1].host_bytes,
            1 * 2 * copied(layer_offload(spec_of(2, "bf16", "core_attn"), 0), OffloadModule::CoreAttn));
}

// The copies of one stage's program, by (microbatch, layer, module label).
struct Copies {
  std::map<std::tuple<int, int, std::string>, std::uint32_t> offload, reload;
};

Copies copies_of(const sim::Program& p) {
  Copies c;
  for (std::uint32_t i = 0; i < p.ops.size(); ++i) {
    const sim::Op& op = p.ops[i];
    const std::string& label = p.labels[op.label];
    if (op.stream == sim::Stream::D2H) c.offload[{op.microbatch, op.layer, label.substr(8)}] = i;
    if (op.stream == sim::Stream::H2D) c.reload[{op.microbatch, op.layer, label.substr(7)}] = i;
  }
  return c;
}

TEST(ActivationOffload, CopiesRunBesideComputeAndTheBackwardWaitsForTheReload) {
  const WorkloadSpec spec = spec_of(2, "bf16", "qkv_linear, core_attn, attn_proj");
  for (int stage = 0; stage < 2; ++stage) {
    const sim::Program p = generate_stage_program(spec, stage);
    const Copies c = copies_of(p);
    ASSERT_EQ(c.offload.size(), c.reload.size());
    for (const auto& [key, off] : c.offload) {
      const auto [mb, layer, module] = key;
      const sim::Op& o = p.ops[off];
      EXPECT_EQ(o.phase, sim::Phase::Forward);
      ASSERT_EQ(o.deps.size(), 1u);
      EXPECT_EQ(p.ops[o.deps[0]].stream, sim::Stream::Compute);
      EXPECT_EQ(p.ops[o.deps[0]].layer, layer);
      const std::uint32_t back = c.reload.at(key);
      const sim::Op& r = p.ops[back];
      EXPECT_DOUBLE_EQ(r.bytes, o.bytes);
      EXPECT_EQ(r.phase, sim::Phase::Backward);
      // Issued after another group's backward, and after its own offload.
      ASSERT_EQ(r.deps.size(), 2u);
      EXPECT_EQ(r.deps[1], off);
      EXPECT_EQ(p.ops[r.deps[0]].phase, sim::Phase::Backward);
      // The module's backward waits for it.
      int waiting = 0;
      for (std::uint32_t i = back + 1; i < p.ops.size(); ++i) {
        for (std::uint32_t dep : p.ops[i].deps) {
          if (dep != back) continue;
          ++waiting;
          EXPECT_EQ(p.ops[i].layer, layer);
          EXPECT_EQ(p.ops[i].stream, sim::Stream::Compute);
          const std::string prefix = module == "core_attn" ? "attn" : module == "attn_proj" ? "proj" : "qkv";
          EXPECT_EQ(p.labels[p.ops[i].label].rfind(prefix, 0), 0u) << p.labels[p.ops[i].label];
        }
      }
      EXPECT_EQ(waiting, 1);
    }
    // Megatron keeps the last group of each module on the GPU in the step's first backward
    // chunk (stage 0: microbatch 0) and in every chunk whose backward comes right after its
    // forward (the last stage: all of them); the stage's layers are 2*stage and 2*stage + 1.
    const int last = 2 * stage + 1;
    for (int mb = 0; mb < 8; ++mb) {
      const bool kept = stage == 1 || mb == 0;
      EXPECT_EQ(c.offload.count({mb, last, "core_attn"}), kept ? 0u : 1u) << stage << " " << mb;
      EXPECT_EQ(c.offload.count({mb, last - 1, "qkv_linear"}), 1u);
    }
  }
}

// Every offload has one reload after it, which one op of the same layer and microbatch waits
// for, and the program's dependencies still point backwards.
void expect_copies_pair_up(const sim::Program& p) {
  const Copies c = copies_of(p);
  EXPECT_EQ(c.offload.size(), c.reload.size());
  std::map<std::uint32_t, int> waiters;
  for (std::uint32_t i = 0; i < p.ops.size(); ++i) {
    for (std::uint32_t dep : p.ops[i].deps) {
      ASSERT_LT(dep, i);
      if (p.ops[dep].stream == sim::Stream::H2D) {
        ++waiters[dep];
        EXPECT_EQ(p.ops[i].layer, p.ops[dep].layer);
        EXPECT_EQ(p.ops[i].microbatch, p.ops[dep].microbatch);
      }
    }
  }
  for (const auto& [key, back] : c.reload) {
    EXPECT_EQ(waiters[back], 1);
    EXPECT_LT(c.offload.at(key), back);
  }
}

// Megatron-core's combined 1F1B (overlap_moe_expert_parallel_comm) interleaves a forward's and a
// backward's pieces; the copies follow each pass's own modules, with and without a pipeline.
TEST(ActivationOffload, CombinedOneFOneBCopiesPairUp) {
  for (const auto& [layout, gpus] : {std::pair{"tp: 1, pp: 1, ep: 8", 8}, std::pair{"tp: 1, pp: 2, vp: 2, ep: 8", 16}}) {
    const WorkloadSpec spec = testing::parse_job(
        std::string("model: {catalog: deepseek_v3, layers: 4, first_dense_layers: 1, mtp_layers: 0}\n"
                    "parallelism: {") + layout + ", moe_token_dispatcher: deepep, "
        "overlap_moe_expert_parallel_comm: true}\n"
        "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 32, precision: bf16, "
        "offload_modules: [core_attn, attn_proj, mlp_norm, expert_fc1, moe_act]}\n", gpus);
    for (int stage = 0; stage < spec.parallel.pp; ++stage) {
      const sim::Program p = generate_stage_program(spec, stage);
      EXPECT_FALSE(copies_of(p).offload.empty()) << layout;
      expect_copies_pair_up(p);
    }
  }
}

// Under the interleaved schedule with MoE layers (every module listed, FP8).
TEST(ActivationOffload, InterleavedMoeCopiesPairUp) {
  const WorkloadSpec spec = testing::parse_job(
      "model: {catalog: mixtral_8x7b, layers: 4}\n"
      "parallelism: {tp: 2, pp: 2, vp: 2, ep: 4, sequence_parallel: true}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 16, precision: fp8, "
      "offload_modules: [qkv_linear, core_attn, attn_proj, mlp_norm, expert_fc1, moe_act]}\n", 16);
  for (int stage = 0; stage < 2; ++stage) {
    const sim::Program p = generate_stage_program(spec, stage);
    const Copies c = copies_of(p);
    EXPECT_EQ(c.offload.size(), c.reload.size());
    // 4 microbatches x 2 one-layer chunks x 6 modules per stage. Stage 0 keeps only the step's
    // first backward chunk (its groups are each the last of their module); on the last stage
    // every pass of the last virtual stage is followed by its own backward and keeps its groups.
    EXPECT_EQ(c.offload.size(), stage == 0 ? 7u * 6u : 4u * 6u);
    expect_copies_pair_up(p);
  }
}

TEST(ActivationOffload, ChecksNameTheField) {
  const auto bad = [](const std::string& modules, const std::string& extra, const std::string& reason) {
    testing::expect_spec_error("model: {catalog: llama3_8b, layers: 4}\nparallelism: {tp: 1, pp: 1, dp: 1}\n"
                               "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 8, "
                               "precision: bf16, offload_modules: [" + modules + "]" + extra + "}\n",
                               1, "training.offload_modules" + std::string(reason == "one of" || reason == "twice" ? "[1]" : ""),
                               reason);
  };
  bad("attn_norm", "", "fuses the input norm into linear_qkv");
  bad("core_attn, mlp_normm", "", "one of");
  bad("core_attn, core_attn", "", "twice");
  bad("expert_fc1", "", "no MoE layers");
  bad("core_attn", ", recompute: full", "without recompute");
}

}  // namespace
}  // namespace clustersim::workloads
