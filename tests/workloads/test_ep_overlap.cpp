// Megatron-core's combined 1F1B (parallelism.overlap_moe_expert_parallel_comm): the schedule
// pairs each steady-state forward with a backward (one more warmup forward under a pipeline),
// and the generator interleaves the pair's layers so that each pass's expert exchanges run on
// the ep_comm stream beside the other's compute. Checks a wrong schedule or generator breaks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "p2p_check.hpp"
#include "workload_test_util.hpp"
#include "workloads/generator.hpp"
#include "workloads/memory.hpp"
#include "workloads/schedule.hpp"
#include "workloads/trace_io.hpp"

namespace clustersim::workloads {
namespace {

// DeepSeek-V3's layers cut to 8 (the first dense), ep 8 with tp 2 and SP, on 16 GPUs.
WorkloadSpec job(const std::string& parallel, int gbs = 16, const std::string& training = "") {
  return testing::parse_job(
      "model: {catalog: deepseek_v3, layers: 8, first_dense_layers: 1, mtp_layers: 0}\n"
      "parallelism: {tp: 2, ep: 8, etp: 1, sequence_parallel: true" + parallel + "}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: " + std::to_string(gbs) +
          ", precision: bf16" + training + "}\n",
      16);
}

const std::string kOn = ", overlap_moe_expert_parallel_comm: true";
const std::string kPipe = ", pp: 2, vp: 2, schedule: interleaved";

TEST(EpOverlapSchedule, WithoutAPipelineEachForwardAfterTheFirstRunsWithThePreviousBackward) {
  const auto steps = pipeline_steps("1f1b", 1, 0, 4, 1, true);
  std::vector<std::string> got;
  for (const auto& s : steps) {
    if (s.kind == StepKind::Forward) got.push_back((s.combined ? "F+" : "F") + std::to_string(s.microbatch));
    if (s.kind == StepKind::Backward) got.push_back("B" + std::to_string(s.microbatch));
  }
  EXPECT_EQ(got, (std::vector<std::string>{"F0", "F+1", "B0", "F+2", "B1", "F+3", "B2", "B3"}));
  EXPECT_THROW(pipeline_steps("1f1b", 2, 0, 4, 1, true), std::invalid_argument);
  // Off, the schedule is the plain one.
  for (const auto& s : pipeline_steps("interleaved", 4, 1, 8, 2, false)) EXPECT_FALSE(s.combined);
}

TEST(EpOverlapSchedule, UnderAPipelineEveryStageRunsOneMoreWarmupForwardAndPairsTheRest) {
  for (auto [pp, vp, m] : std::vector<std::tuple<int, int, int>>{{2, 2, 4}, {4, 2, 8}, {4, 3, 12}, {3, 2, 9}}) {
    for (int stage = 0; stage < pp; ++stage) {
      const auto plain = pipeline_steps("interleaved", pp, stage, m, vp, false);
      const auto steps = pipeline_steps("interleaved", pp, stage, m, vp, true);
      auto warmup = [](const std::vector<ScheduleStep>& s) {
        int n = 0;
        for (const auto& x : s) {
          if (x.kind == StepKind::Backward) break;
          n += x.kind == StepKind::Forward;
        }
        return n;
      };
      EXPECT_EQ(warmup(steps), warmup(plain) + 1) << pp << vp << m << stage;
      std::map<std::pair<int, int>, int> state;
      int pairs = 0;
      for (std::size_t i = 0; i < steps.size(); ++i) {
        const auto& s = steps[i];
        if (s.kind == StepKind::Forward) ++state[{s.chunk, s.microbatch}];
        if (s.kind == StepKind::Backward) {
          EXPECT_EQ(state[std::make_pair(s.chunk, s.microbatch)], 1);  // its forward ran before
          ++state[{s.chunk, s.microbatch}];
        }
        if (!s.combined) continue;
        ++pairs;
        ASSERT_LT(i + 1, steps.size());
        const auto& b = steps[i + 1];
        EXPECT_EQ(b.kind, StepKind::Backward);
        EXPECT_FALSE(b.chunk == s.chunk && b.microbatch == s.microbatch);  // independent passes
      }
      EXPECT_EQ(pairs, m * vp - (warmup(steps) - 1));  // warmup() counts the first paired forward
    }
  }
}

TEST(EpOverlapSchedule, TheGeneratedPipelineExchangesStillPairUp) {
  for (int gbs : {16, 24, 48}) {
    for (const std::string& p2p : {std::string(""), std::string(", overlap_p2p_comm: false")}) {
      const sim::Workload w = generate_workload(job(kPipe + kOn + p2p, gbs));
      EXPECT_TRUE(testing::exchanges_complete(w)) << gbs << p2p;
    }
  }
}

// A paired pass's exchanges run on ep_comm after a compute op of their own microbatch and phase,
// and the compute op after each waits for it; the pair's compute ops alternate between the two
// microbatches.
TEST(EpOverlapGenerator, EachPassesExchangesRunBesideTheOthersCompute) {
  const sim::Workload w = generate_workload(job(kOn, 64));  // 8 microbatches
  const sim::Program& p = w.programs[0];
  int exchanges = 0, switches = 0;
  const sim::Op* prev = nullptr;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const sim::Op& op = p.ops[i];
    if (op.stream == sim::Stream::Compute && op.is_compute() && op.phase != sim::Phase::Optimizer) {
      if (prev != nullptr && prev->microbatch != op.microbatch) ++switches;
      prev = &op;
    }
    const auto* c = std::get_if<sim::CollectiveSpec>(&op.shape);
    if (c == nullptr || c->group != sim::GroupKind::EP) continue;
    ++exchanges;
    // Microbatch 0's forward and the last backward run alone, with their exchanges in line.
    const bool alone = (op.phase == sim::Phase::Forward && op.microbatch == 0) ||
                       (op.phase == sim::Phase::Backward && op.microbatch == 7) || op.recompute;
    if (alone) {
      EXPECT_EQ(op.stream, sim::Stream::Compute) << p.labels[op.label];
      continue;
    }
    EXPECT_EQ(op.stream, sim::Stream::EpComm) << p.labels[op.label];
    ASSERT_EQ(op.deps.size(), 1u) << p.labels[op.label];
    const sim::Op& before = p.ops[op.deps[0]];
    EXPECT_EQ(before.microbatch, op.microbatch);
    EXPECT_EQ(before.phase, op.phase);
    bool waited = false;
    for (std::size_t j = i + 1; j < p.ops.size() && !waited; ++j) {
      const auto& d = p.ops[j].deps;
      waited = p.ops[j].stream == sim::Stream::Compute && std::find(d.begin(), d.end(), i) != d.end();
      if (waited) {
        EXPECT_EQ(p.ops[j].microbatch, op.microbatch);
      }
    }
    EXPECT_TRUE(waited) << p.labels[op.label] << " " << i;
  }
  EXPECT_EQ(exchanges, 7 * 4 * 8);  // 7 MoE layers x 4 exchanges x 8 microbatches
  EXPECT_GT(switches, 7 * 4 * 7);   // the 7 pairs interleave at every MoE layer piece
}

TEST(EpOverlapGenerator, TheGpuWorkIsTheSameOnlyReordered) {
  for (const std::string& base : {std::string(""), kPipe}) {
    const sim::Workload off = generate_workload(job(base, 16, ", recompute: full"));
    const sim::Workload on = generate_workload(job(base + kOn, 16, ", recompute: full"));
    ASSERT_EQ(off.programs.size(), on.programs.size());
    EXPECT_EQ(off.accounting.hardware_flops, on.accounting.hardware_flops);
    for (std::size_t s = 0; s < on.programs.size(); ++s) {
      std::map<std::string, std::pair<int, double>> a, b;
      for (const auto& op : off.programs[s].ops) {
        auto& x = a[off.programs[s].labels[op.label]];
        ++x.first;
        x.second += op.flops + op.bytes;
      }
      for (const auto& op : on.programs[s].ops) {
        auto& x = b[on.programs[s].labels[op.label]];
        ++x.first;
        x.second += op.flops + op.bytes;
      }
      EXPECT_EQ(a, b) << s;
    }
  }
}

// delay_wgrad_compute: the dispatch's backward exchange of a paired backward starts after the
// routed experts' data gradients, and their weight gradients follow it on the compute stream.
TEST(EpOverlapGenerator, DelayedWeightGradientsRunBesideTheDispatchBackward) {
  auto mixtral = [](const std::string& extra) {
    return generate_workload(testing::parse_job(
        "model: {catalog: mixtral_8x7b, layers: 2}\n"
        "parallelism: {tp: 1, ep: 8, overlap_moe_expert_parallel_comm: true" + extra + "}\n"
        "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 64, precision: bf16}\n",
        16));
  };
  auto check = [](const sim::Program& p, const std::string& gate) {
    int seen = 0;
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const sim::Op& op = p.ops[i];
      if (op.stream != sim::Stream::EpComm || p.labels[op.label] != "ep_dispatch_bwd_a2a") continue;
      ++seen;
      ASSERT_EQ(op.deps.size(), 1u);
      EXPECT_EQ(p.labels[p.ops[op.deps[0]].label], gate);
      // Both expert weight gradients of the layer lie between the gate and the exchange's waiter.
      int wgrads = 0;
      for (std::size_t j = op.deps[0] + 1; j < p.ops.size(); ++j) {
        const std::string& l = p.labels[p.ops[j].label];
        if (l == "permute_bwd") break;
        wgrads += l == "expert_fc1_wgrad" || l == "expert_fc2_wgrad";
      }
      EXPECT_EQ(wgrads, gate == "expert_fc1_dgrad" ? 2 : 0);
    }
    EXPECT_EQ(seen, 2 * 3);  // 2 layers x the 3 paired backwards of 4 microbatches
  };
  const sim::Workload off = mixtral("");
  const sim::Workload on = mixtral(", delay_wgrad_compute: true");
  check(off.programs[0], "expert_fc1_wgrad");
  check(on.programs[0], "expert_fc1_dgrad");
  EXPECT_EQ(off.programs[0].ops.size(), on.programs[0].ops.size());
  testing::expect_spec_error(
      "model: {catalog: mixtral_8x7b}\nparallelism: {tp: 1, ep: 8, delay_wgrad_compute: true}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 64, precision: bf16}\n",
      16, "parallelism.delay_wgrad_compute", "overlap_moe_expert_parallel_comm");
}

TEST(EpOverlapGenerator, TheInterleavedProgramSurvivesTheTraceFormat) {
  const sim::Workload w = generate_workload(job(kPipe + kOn, 16));
  std::ostringstream out;
  write_rank_trace(out, w, 0);
  std::istringstream in(out.str());
  const RankTrace t = read_rank_trace(in, "trace.jsonl");
  const sim::Program& p = w.programs[0];
  ASSERT_EQ(t.program.ops.size(), p.ops.size());
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    EXPECT_EQ(t.program.ops[i].stream, p.ops[i].stream) << i;
    EXPECT_EQ(t.program.ops[i].deps, p.ops[i].deps) << i;
    EXPECT_EQ(t.program.ops[i].microbatch, p.ops[i].microbatch) << i;
  }
}

TEST(EpOverlapMemory, ThePairedForwardHoldsOneMoreMicrobatch) {
  // Without a pipeline: two microbatches in flight instead of one.
  auto held = [](const WorkloadSpec& spec, int stage) {
    return estimate_memory(spec, 80e9).stages.at(static_cast<std::size_t>(stage)).microbatches_in_flight;
  };
  EXPECT_EQ(held(job(""), 0), 1);
  EXPECT_EQ(held(job(kOn), 0), 2);
  // Interleaved: one more warmup forward on every stage.
  for (int stage : {0, 1}) EXPECT_EQ(held(job(kPipe + kOn), stage), held(job(kPipe), stage) + 1) << stage;
}

TEST(EpOverlapChecks, MegatronsRequirementsAreErrors) {
  auto bad = [](const std::string& model, const std::string& parallel, const std::string& training,
                const std::string& field, const std::string& words) {
    testing::expect_spec_error("model: {catalog: " + model + "}\nparallelism: {" + parallel +
                                   ", overlap_moe_expert_parallel_comm: true}\n"
                                   "training: {seq_length: 4096, micro_batch_size: 1, "
                                   "global_batch_size: 64" + (training.empty() ? ", precision: bf16" : training) + "}\n",
                               16, field, words);
  };
  const std::string key = "parallelism.overlap_moe_expert_parallel_comm";
  bad("llama3_8b", "tp: 1", "", key, "MoE model with ep > 1");
  bad("mixtral_8x7b", "tp: 2, sequence_parallel: true, ep: 1", "", key, "ep > 1");
  bad("mixtral_8x7b", "tp: 2, sequence_parallel: true, ep: 8, pp: 2", "", key, "interleaved");
  bad("deepseek_v3", "tp: 2, sequence_parallel: true, ep: 8, moe_shared_expert_overlap: true", "", key,
      "moe_shared_expert_overlap");
  bad("mixtral_8x7b", "tp: 1, ep: 8, zero_stage: 3", "", key, "zero_stage 3");
  bad("mixtral_8x7b", "tp: 1, ep: 8", ", precision: fp8, recompute: full", "training.recompute",
      "blockwise");
}

}  // namespace
}  // namespace clustersim::workloads
