// The zero-bubble ZB-H1 schedule (workloads/schedule.cpp): its steps as the authors' patch of
// Megatron's 1F1B orders them, the W passes the generator places, their memory, the checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "workload_test_util.hpp"
#include "workloads/generator.hpp"
#include "workloads/layer_memory.hpp"
#include "workloads/memory.hpp"
#include "workloads/schedule.hpp"
#include "workloads/stage_layout.hpp"

namespace clustersim::workloads {
namespace {

using testing::parse_job;

// The compute steps of a stage as text: F (forward), B (backward with its weight gradients),
// b (input gradients only, W deferred), W (deferred weight gradients run).
std::string compute_order(int pp, int stage, int m) {
  std::string out;
  for (const ScheduleStep& s : pipeline_steps("zb_h1", pp, stage, m, 1, false)) {
    const char* k = s.kind == StepKind::Forward      ? "F"
                    : s.kind == StepKind::WeightGrad ? "W"
                    : s.kind == StepKind::Backward   ? (s.defer_wgrad ? "b" : "B")
                                                     : nullptr;
    if (k != nullptr) out += (out.empty() ? "" : " ") + std::string(k) + std::to_string(s.microbatch);
  }
  return out;
}

TEST(ZeroBubble, StagesDeferTheirFirstStageBackwardsTheLastAndTheCooldown) {
  // pp 4, 8 microbatches. Stage 1: 2 warmup forwards; its first steady backward and its last
  // defer their W, the last steady iteration runs W0 after its send_backward; every cooldown
  // backward defers its W and runs the oldest queued one; W7 at the end.
  EXPECT_EQ(compute_order(4, 1, 8),
            "F0 F1 F2 b0 F3 B1 F4 B2 F5 B3 F6 B4 F7 b5 W0 b6 W5 b7 W6 W7");
  // Stage 3 (the last) has no warmup: three deferred, held through the steady state.
  EXPECT_EQ(compute_order(4, 3, 8), "F0 b0 F1 b1 F2 b2 F3 B3 F4 B4 F5 B5 F6 B6 F7 b7 W0 W1 W2 W7");
  // Stage 0 runs 1F1B unchanged.
  std::vector<ScheduleStep> zb = pipeline_steps("zb_h1", 4, 0, 8, 1, false);
  std::vector<ScheduleStep> plain = pipeline_steps("1f1b", 4, 0, 8, 1, false);
  ASSERT_EQ(zb.size(), plain.size());
  for (std::size_t i = 0; i < zb.size(); ++i) {
    EXPECT_EQ(zb[i].kind, plain[i].kind);
    EXPECT_EQ(zb[i].microbatch, plain[i].microbatch);
    EXPECT_FALSE(zb[i].defer_wgrad);
  }
}

TEST(ZeroBubble, EveryDeferredBackwardRunsItsWeightGradientsOnceAfterIt) {
  for (int pp : {2, 4, 8}) {
    for (int m : {1, 3, pp, 2 * pp + 1}) {
      for (int stage = 0; stage < pp; ++stage) {
        std::map<int, int> state;  // microbatch -> 1 after a deferred b, 2 after its W
        int queued = 0, max_at_forward = 0;
        std::vector<int> p2p_kinds;
        for (const ScheduleStep& s : pipeline_steps("zb_h1", pp, stage, m, 1, false)) {
          if (s.kind == StepKind::Backward && s.defer_wgrad) {
            EXPECT_EQ(state[s.microbatch], 0);
            state[s.microbatch] = 1;
            ++queued;
          } else if (s.kind == StepKind::WeightGrad) {
            EXPECT_EQ(state[s.microbatch], 1) << "W before its b, pp " << pp << " stage " << stage;
            state[s.microbatch] = 2;
            --queued;
          } else if (s.kind == StepKind::Forward) {
            max_at_forward = std::max(max_at_forward, queued);
          } else if (s.kind != StepKind::Backward) {
            p2p_kinds.push_back(static_cast<int>(s.kind));
          }
        }
        for (const auto& [mb, st] : state) EXPECT_EQ(st, 2) << "microbatch " << mb << " W never run";
        EXPECT_EQ(queued, 0);
        // At most `stage` Ws wait while a forward runs: the memory of 1F1B's stage 0.
        EXPECT_LE(max_at_forward, stage);
        if (m > pp) {
          EXPECT_EQ(max_at_forward, stage) << "pp " << pp << " m " << m;
        }
        // The P2P calls are 1F1B's, in its order.
        std::vector<int> plain;
        for (const ScheduleStep& s : pipeline_steps("1f1b", pp, stage, m, 1, false)) {
          if (s.kind != StepKind::Forward && s.kind != StepKind::Backward) plain.push_back(static_cast<int>(s.kind));
        }
        EXPECT_EQ(p2p_kinds, plain);
      }
    }
  }
}

std::string job(const std::string& schedule, const std::string& extra = "") {
  return "model: {catalog: llama3_70b, layers: 8}\n"
         "parallelism: {tp: 2, pp: 4, dp: 1, sequence_parallel: true, schedule: " + schedule + extra +
         "}\n"
         "training: {seq_length: 2048, micro_batch_size: 1, global_batch_size: 8, precision: bf16}\n";
}

TEST(ZeroBubble, TheGeneratorMovesEachDeferredWeightGradientAfterItsInputGradients) {
  const WorkloadSpec zb = parse_job(job("zb_h1"), 8);
  const WorkloadSpec plain = parse_job(job("1f1b"), 8);
  for (int stage = 0; stage < 4; ++stage) {
    const sim::Program a = generate_stage_program(zb, stage);
    const sim::Program b = generate_stage_program(plain, stage);
    // The same ops, in another order: the W passes do what 1F1B's backwards did.
    std::map<std::string, std::pair<int, double>> ops_a, ops_b;
    for (const sim::Op& op : a.ops) {
      auto& e = ops_a[a.labels[op.label] + "@" + std::to_string(op.microbatch)];
      ++e.first;
      e.second += op.flops;
    }
    for (const sim::Op& op : b.ops) {
      auto& e = ops_b[b.labels[op.label] + "@" + std::to_string(op.microbatch)];
      ++e.first;
      e.second += op.flops;
    }
    EXPECT_EQ(ops_a, ops_b) << "stage " << stage;
    // On stage s > 0 microbatch 0's weight gradients come after microbatch 1's dgrads (its W
    // waits in the queue; stage 0 runs them in the backward).
    std::size_t last_wgrad0 = 0, first_dgrad1 = a.ops.size(), first_qkv_wgrad0 = a.ops.size();
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
      const std::string& l = a.labels[a.ops[i].label];
      const bool wgrad = l.size() > 6 && l.compare(l.size() - 6, 6, "_wgrad") == 0;
      const bool dgrad = l.size() > 6 && l.compare(l.size() - 6, 6, "_dgrad") == 0;
      if (wgrad && a.ops[i].microbatch == 0) last_wgrad0 = i;
      if (wgrad && a.ops[i].microbatch == 0 && l == "qkv_wgrad") first_qkv_wgrad0 = std::min(first_qkv_wgrad0, i);
      if (dgrad && a.ops[i].microbatch == 1) first_dgrad1 = std::min(first_dgrad1, i);
      // The sequence-parallel input gathered for a weight gradient is gathered with it.
      if (wgrad) {
        for (std::uint32_t d : a.ops[i].deps) EXPECT_LT(d, i);
      }
    }
    if (stage == 0) {
      EXPECT_LT(last_wgrad0, first_dgrad1);
    } else {
      EXPECT_GT(first_qkv_wgrad0, first_dgrad1) << "stage " << stage;
    }
  }
}

// What one microbatch's deferred W passes keep on `stage` (every layer of the stage).
double stage_wgrad_bytes(const WorkloadSpec& spec, int stage) {
  double w = 0.0;
  for (const LayerRange& c : stage_chunks(spec.model, spec.parallel, stage)) {
    for (int l = c.begin; l < c.end; ++l) w += deferred_wgrad_bytes(spec, layer_shape(spec), l);
  }
  return w;
}

TEST(ZeroBubble, LaterStagesHoldTheirDeferredWeightGradientInputs) {
  const WorkloadSpec zb = parse_job(job("zb_h1"), 8);
  const WorkloadSpec plain = parse_job(job("1f1b"), 8);
  const MemoryReport a = estimate_memory(zb, 80.0 * (1ull << 30));
  const MemoryReport b = estimate_memory(plain, 80.0 * (1ull << 30));
  // Stage 0 is 1F1B's.
  EXPECT_DOUBLE_EQ(a.stages[0].total(), b.stages[0].total());
  EXPECT_EQ(a.stages[0].bytes("deferred_wgrads"), 0.0);
  // Stage s > 0 peaks either at a forward of its steady state, holding 1F1B's pp - s
  // microbatches (A each) with s Ws waiting (W each), or after its first cooldown backward,
  // which frees one A and defers one more W: the larger of the two. Here (TP 2 + SP) W > A.
  for (int s = 1; s < 4; ++s) {
    const double act = b.stages[s].bytes("activations") / (4 - s);
    const double w = stage_wgrad_bytes(zb, s);
    ASSERT_GT(w, act) << s;
    EXPECT_NEAR(a.stages[s].bytes("deferred_wgrads"), (s + 1) * w, 1e-9 * w) << s;
    EXPECT_NEAR(a.stages[s].bytes("activations"), (3 - s) * act, 1e-9 * w) << s;
  }
}

// Under full recompute a microbatch keeps only its layer inputs, far less than what its W keeps,
// so the deferred backwards set the peak: the last stage's comes after its cooldown backward b7,
// with four Ws waiting and no activations held -- above every forward-time sample (one
// microbatch and three Ws). Llama-3-8B, TP 2 + SP, PP 4, 8 microbatches: 19.0 GiB of deferred
// W inputs on stage 3 (14.5 GiB at its forwards, the figure until 2026-12-06).
TEST(ZeroBubble, DeferredBackwardsSetThePeakWhenAWeightGradientKeepsMore) {
  const std::string yaml =
      "model: llama3_8b\n"
      "parallelism: {tp: 2, pp: 4, dp: 1, sequence_parallel: true, schedule: zb_h1}\n"
      "training: {seq_length: 8192, micro_batch_size: 1, global_batch_size: 8, precision: bf16, "
      "recompute: full}\n";
  const WorkloadSpec spec = parse_job(yaml, 8);
  const MemoryReport r = estimate_memory(spec, 80.0 * (1ull << 30));
  const double w = stage_wgrad_bytes(spec, 3);
  const double act = r.stages[0].bytes("activations") / 4;  // stage 0 is 1F1B's: 4 held
  ASSERT_GT(w, act);
  EXPECT_NEAR(r.stages[3].bytes("deferred_wgrads"), 4 * w, 1e-9 * w);
  EXPECT_EQ(r.stages[3].bytes("activations"), 0.0);
  EXPECT_EQ(r.stages[3].microbatches_in_flight, 0);
  EXPECT_NEAR(r.stages[3].bytes("deferred_wgrads") / (1ull << 30), 19.0, 0.05);
  for (int s = 1; s < 3; ++s) {
    EXPECT_NEAR(r.stages[s].bytes("deferred_wgrads") + r.stages[s].bytes("activations"),
                (s + 1) * w + (3 - s) * act, 1e-9 * w) << s;
  }
}

TEST(ZeroBubble, CombinationsItDoesNotModelAreRefused) {
  testing::expect_spec_error(job("zb_h1", ", tp_comm_overlap: true"), 8, "parallelism.tp_comm_overlap",
                             "userbuffer overlap");
  testing::expect_spec_error(job("zb_h1", ", zero_stage: 2"), 8, "parallelism.zero_stage", "zero_stage 0 or 1");
  testing::expect_spec_error(job("zb_h1", ", vp: 2"), 8, "parallelism.vp", "interleaved");
}

}  // namespace
}  // namespace clustersim::workloads
