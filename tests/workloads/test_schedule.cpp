// Megatron's non-interleaved 1F1B schedule: counts and order of passes per stage, matching
// point-to-point calls between neighbouring stages, and deadlock freedom of the generated
// programs' batched exchanges.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <string>
#include <utility>
#include <stdexcept>
#include <vector>

#include "workloads/generator.hpp"
#include "workloads/schedule.hpp"
#include "p2p_check.hpp"
#include "workload_test_util.hpp"

namespace clustersim::workloads {
namespace {

std::vector<ScheduleStep> steps_of(int pp, int stage, int m) {
  const PipelineSchedule* schedule = find_pipeline_schedule("1f1b");
  EXPECT_NE(schedule, nullptr);
  return (*schedule)(pp, stage, m, 1);
}

const std::vector<std::pair<int, int>> kShapes = {{1, 4}, {2, 1}, {4, 8}, {4, 2}, {8, 3}, {3, 7}, {8, 64}};

TEST(OneFOneB, RegistryKnowsItByName) {
  EXPECT_EQ(pipeline_schedule_names(), (std::vector<std::string>{"1f1b", "interleaved", "zb_h1"}));
  EXPECT_EQ(find_pipeline_schedule("gpipe"), nullptr);
}

// The job checks ask the registry, not the name: only the interleaved schedule runs model
// chunks, only ZB-H1 defers weight gradients.
TEST(OneFOneB, RegistryStatesWhichScheduleRunsChunksAndWhichDefersWeightGradients) {
  EXPECT_FALSE(schedule_traits("1f1b").model_chunks);
  EXPECT_FALSE(schedule_traits("1f1b").defers_weight_grads);
  EXPECT_TRUE(schedule_traits("interleaved").model_chunks);
  EXPECT_FALSE(schedule_traits("interleaved").defers_weight_grads);
  EXPECT_FALSE(schedule_traits("zb_h1").model_chunks);
  EXPECT_TRUE(schedule_traits("zb_h1").defers_weight_grads);
  EXPECT_THROW(schedule_traits("gpipe"), std::invalid_argument);
}

// Forwards a stage runs before its first backward (its warmup plus the first steady forward).
int forwards_before_first_backward(const std::vector<ScheduleStep>& steps) {
  int n = 0;
  for (const auto& s : steps) {
    if (s.kind == StepKind::Backward) return n;
    if (s.kind == StepKind::Forward) ++n;
  }
  return n;
}

TEST(SteadyStateWindow, EveryStageIsInItsSteadyPhaseFromTheFirstWindow) {
  for (const std::string name : {"1f1b", "interleaved"}) {
    for (int pp : {1, 2, 4, 8, 16}) {
      const int vp = name == "interleaved" ? 3 : 1;
      if (name == "interleaved" && pp == 1) continue;
      const SteadyWindow w = steady_state_window(name, pp, vp);
      EXPECT_LT(w.first, w.second);
      const PipelineSchedule& schedule = *find_pipeline_schedule(name);
      for (int stage = 0; stage < pp; ++stage) {
        const auto first = schedule(pp, stage, w.first, vp);
        const auto second = schedule(pp, stage, w.second, vp);
        const auto third = schedule(pp, stage, 2 * w.second - w.first, vp);
        // The warmup no longer grows with the microbatches (Megatron's interleaved schedule at
        // m == pp runs every forward first): more microbatches only lengthen the steady phase.
        const int warmup = forwards_before_first_backward(first);
        EXPECT_EQ(forwards_before_first_backward(second), warmup) << name << " pp " << pp;
        EXPECT_EQ(forwards_before_first_backward(third), warmup) << name << " pp " << pp;
        // Each microbatch between the windows adds the same passes to every stage.
        auto passes = [](const std::vector<ScheduleStep>& steps) {
          return std::count_if(steps.begin(), steps.end(), [](const ScheduleStep& s) {
            return s.kind == StepKind::Forward || s.kind == StepKind::Backward;
          });
        };
        EXPECT_EQ(passes(second) - passes(first), 2L * vp * (w.second - w.first));
      }
    }
  }
  EXPECT_EQ(steady_state_window("1f1b", 4, 1).first, 4);
  EXPECT_EQ(steady_state_window("interleaved", 4, 2).first, 8);
  EXPECT_THROW(steady_state_window("gpipe", 4, 1), std::invalid_argument);
}

TEST(OneFOneB, EveryStageRunsEachMicrobatchForwardThenBackwardInOrder) {
  for (auto [pp, m] : kShapes) {
    for (int stage = 0; stage < pp; ++stage) {
      std::vector<int> fwd, bwd;
      for (const auto& s : steps_of(pp, stage, m)) {
        if (s.kind == StepKind::Forward) fwd.push_back(s.microbatch);
        if (s.kind == StepKind::Backward) {
          // A microbatch's backward comes after its forward.
          EXPECT_LT(s.microbatch, static_cast<int>(fwd.size()));
          bwd.push_back(s.microbatch);
        }
      }
      std::vector<int> expected(static_cast<std::size_t>(m));
      for (int i = 0; i < m; ++i) expected[static_cast<std::size_t>(i)] = i;
      EXPECT_EQ(fwd, expected) << pp << "/" << stage << "/" << m;
      EXPECT_EQ(bwd, expected) << pp << "/" << stage << "/" << m;
    }
  }
}

TEST(OneFOneB, WarmupIsPpMinusStageMinusOneForwards) {
  for (auto [pp, m] : kShapes) {
    for (int stage = 0; stage < pp; ++stage) {
      int forwards_before_first_backward = 0;
      for (const auto& s : steps_of(pp, stage, m)) {
        if (s.kind == StepKind::Backward) break;
        if (s.kind == StepKind::Forward) ++forwards_before_first_backward;
      }
      // Warmup forwards plus the first steady-state forward.
      const int warmup = std::min(pp - stage - 1, m);
      EXPECT_EQ(forwards_before_first_backward, warmup + (warmup < m ? 1 : 0));
    }
  }
}

TEST(OneFOneB, MegatronCallSequenceForTheFirstOfFourStages) {
  // pp 4, stage 0, 5 microbatches: 3 warmup forwards, 2 steady 1F1B, 3 cooldown backwards.
  std::string seq;
  for (const auto& s : steps_of(4, 0, 5)) seq += std::string(to_string(s.kind)) + " ";
  const std::string warm = "recv_forward forward send_forward ";
  const std::string cool = "recv_backward backward send_backward ";
  EXPECT_EQ(seq, warm + warm + warm + "recv_forward " +
                     "forward send_forward_recv_backward backward send_backward_recv_forward " +
                     "forward send_forward_recv_backward backward send_backward " + cool + cool + cool);
}

// Activations that stage s sends forward and stage s+1 receives, and gradients that stage
// s+1 sends back and stage s receives, in call order.
struct Flows {
  std::vector<int> sent_fwd, recv_fwd, sent_bwd, recv_bwd;
};

Flows flows(const std::vector<ScheduleStep>& steps) {
  Flows f;
  for (const auto& s : steps) {
    switch (s.kind) {
      case StepKind::SendForward: f.sent_fwd.push_back(s.microbatch); break;
      case StepKind::RecvForward: f.recv_fwd.push_back(s.recv_microbatch); break;
      case StepKind::SendForwardRecvBackward:
        f.sent_fwd.push_back(s.microbatch);
        f.recv_bwd.push_back(s.recv_microbatch);
        break;
      case StepKind::SendBackwardRecvForward:
        f.sent_bwd.push_back(s.microbatch);
        f.recv_fwd.push_back(s.recv_microbatch);
        break;
      case StepKind::RecvBackward: f.recv_bwd.push_back(s.recv_microbatch); break;
      case StepKind::SendBackward: f.sent_bwd.push_back(s.microbatch); break;
      default: break;
    }
  }
  return f;
}

TEST(OneFOneB, SendsAndReceivesOfNeighboursMatchInOrder) {
  for (auto [pp, m] : kShapes) {
    for (int stage = 0; stage + 1 < pp; ++stage) {
      const Flows a = flows(steps_of(pp, stage, m));
      const Flows b = flows(steps_of(pp, stage + 1, m));
      EXPECT_EQ(a.sent_fwd, b.recv_fwd) << pp << "/" << stage << "/" << m;
      EXPECT_EQ(b.sent_bwd, a.recv_bwd) << pp << "/" << stage << "/" << m;
      EXPECT_EQ(a.sent_fwd.size(), static_cast<std::size_t>(m));
    }
  }
}

TEST(OneFOneB, GeneratedExchangesPairUpAndNeverDeadlock) {
  for (auto [pp, m] : std::vector<std::pair<int, int>>{{2, 1}, {2, 5}, {4, 2}, {4, 8}}) {
    const auto spec = testing::parse_job(testing::small_llama_job(1, pp, 1, false, m, 1), pp);
    const sim::Workload w = generate_workload(spec);
    EXPECT_TRUE(testing::exchanges_complete(w)) << pp << "/" << m;
    for (int s = 0; s + 1 < pp; ++s) {
      int sends = 0, recvs = 0;
      for (const auto& op : w.programs[static_cast<std::size_t>(s)].ops) {
        const auto* x = std::get_if<sim::P2PSpec>(&op.shape);
        sends += x != nullptr && x->send_to == sim::Peer::NextStage;
      }
      for (const auto& op : w.programs[static_cast<std::size_t>(s) + 1].ops) {
        const auto* x = std::get_if<sim::P2PSpec>(&op.shape);
        recvs += x != nullptr && x->recv_from == sim::Peer::PrevStage;
      }
      EXPECT_EQ(sends, m);
      EXPECT_EQ(recvs, m);
    }
  }
}

TEST(OneFOneB, ASwappedExchangeIsCaughtAsADeadlock) {
  // Guard for the checker itself: reversing the last stage's exchanges must deadlock.
  const auto spec = testing::parse_job(testing::small_llama_job(1, 2, 1, false, 4, 1), 2);
  sim::Workload w = generate_workload(spec);
  auto& ops = w.programs[1].ops;
  std::vector<std::size_t> p2p;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (std::holds_alternative<sim::P2PSpec>(ops[i].shape)) p2p.push_back(i);
  }
  ASSERT_GE(p2p.size(), 2u);
  std::swap(ops[p2p.front()].shape, ops[p2p.back()].shape);
  EXPECT_FALSE(testing::exchanges_complete(w));
}

// ----- Megatron's interleaved schedule (vp model chunks per stage) -----

std::vector<ScheduleStep> interleaved_steps(int pp, int stage, int m, int vp) {
  return (*find_pipeline_schedule("interleaved"))(pp, stage, m, vp);
}

const std::vector<std::tuple<int, int, int>> kInterleavedShapes = {
    {2, 2, 2}, {2, 2, 6}, {4, 2, 4}, {4, 2, 8}, {4, 3, 8}, {3, 2, 9}, {8, 4, 16}};

TEST(Interleaved, EveryStageRunsEachMicrobatchOfEachChunkOnceForwardThenBackward) {
  for (auto [pp, vp, m] : kInterleavedShapes) {
    for (int stage = 0; stage < pp; ++stage) {
      std::map<std::pair<int, int>, int> state;  // (chunk, microbatch) -> 1 after fwd, 2 after bwd
      int forwards_before_backward = 0;
      bool backward_seen = false;
      for (const auto& s : interleaved_steps(pp, stage, m, vp)) {
        if (s.kind == StepKind::Forward) {
          EXPECT_EQ((state[std::make_pair(s.chunk, s.microbatch)]++), 0);
          if (!backward_seen) ++forwards_before_backward;
        } else if (s.kind == StepKind::Backward) {
          EXPECT_EQ((state[std::make_pair(s.chunk, s.microbatch)]++), 1) << pp << vp << m << stage;
          backward_seen = true;
        }
      }
      EXPECT_EQ(state.size(), static_cast<std::size_t>(m * vp));
      for (const auto& [key, v] : state) EXPECT_EQ(v, 2);
      // Megatron's warmup: (pp - stage - 1) * 2 + (vp - 1) * pp forwards (all of them when
      // m == pp), plus the first steady-state forward.
      const int warmup = m == pp ? m * vp : std::min((pp - stage - 1) * 2 + (vp - 1) * pp, m * vp);
      EXPECT_EQ(forwards_before_backward, std::min(warmup + 1, m * vp)) << pp << vp << m << stage;
    }
  }
}

TEST(Interleaved, ChunkOrderFollowsMegatronsMicrobatchGroups) {
  // pp 2, vp 2, m 4, stage 0: forwards run chunk 0 on microbatches 0, 1, chunk 1 on 0, 1,
  // then chunk 0 on 2, 3, ...
  std::vector<std::pair<int, int>> fwd;
  for (const auto& s : interleaved_steps(2, 0, 4, 2)) {
    if (s.kind == StepKind::Forward) fwd.emplace_back(s.chunk, s.microbatch);
  }
  EXPECT_EQ(fwd, (std::vector<std::pair<int, int>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {0, 2}, {0, 3},
                                                   {1, 2}, {1, 3}}));
}

TEST(Interleaved, GeneratedExchangesPairUpAcrossTheRingWrapAndNeverDeadlock) {
  for (auto [pp, vp, m] : kInterleavedShapes) {
    if (pp > 4) continue;
    std::string yaml = testing::small_llama_job(1, pp, 1, false, m, 1);
    yaml.replace(yaml.find("layers: 4"), 9, "layers: " + std::to_string(pp * vp));
    yaml.insert(yaml.find("  dp: 1"), "  vp: " + std::to_string(vp) + "\n");
    const auto spec = testing::parse_job(yaml, pp);
    ASSERT_EQ(spec.parallel.schedule, "interleaved");
    const sim::Workload w = generate_workload(spec);
    EXPECT_TRUE(testing::exchanges_complete(w)) << pp << "/" << vp << "/" << m;
    // The last stage hands its activations to stage 0 for the next chunk: (vp - 1) * m times.
    int wraps = 0;
    for (const auto& op : w.programs[static_cast<std::size_t>(pp - 1)].ops) {
      const auto* x = std::get_if<sim::P2PSpec>(&op.shape);
      wraps += x != nullptr && x->send_to == sim::Peer::NextStage;
    }
    EXPECT_EQ(wraps, (vp - 1) * m) << pp << "/" << vp << "/" << m;
  }
}

TEST(Interleaved, ASwappedExchangeIsCaughtAsADeadlock) {
  auto spec = testing::parse_job(testing::small_llama_job(1, 2, 1, false, 4, 1), 2);
  spec.parallel.vp = 2;
  spec.parallel.schedule = "interleaved";
  sim::Workload w = generate_workload(spec);
  auto& ops = w.programs[1].ops;
  std::vector<std::size_t> p2p;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (std::holds_alternative<sim::P2PSpec>(ops[i].shape) && ops[i].stream == sim::Stream::Compute) {
      p2p.push_back(i);
    }
  }
  ASSERT_GE(p2p.size(), 2u);
  std::swap(ops[p2p.front()].shape, ops[p2p.back()].shape);
  EXPECT_FALSE(testing::exchanges_complete(w));
}

TEST(Interleaved, OverlappedP2pIsTheDefaultAndLeavesTheComputeStream) {
  std::string yaml = testing::small_llama_job(1, 2, 1, false, 4, 1);
  yaml.insert(yaml.find("  dp: 1"), "  vp: 2\n");
  const auto on = testing::parse_job(yaml, 2);
  ASSERT_TRUE(on.parallel.overlap_p2p_comm);  // Megatron-LM's default for the interleaved schedule
  std::string off_yaml = yaml;
  off_yaml.insert(off_yaml.find("  dp: 1"), "  overlap_p2p_comm: false\n");
  const auto off = testing::parse_job(off_yaml, 2);
  ASSERT_FALSE(off.parallel.overlap_p2p_comm);
  EXPECT_FALSE(testing::parse_job(testing::small_llama_job(1, 2, 1, false, 4, 1), 2)
                   .parallel.overlap_p2p_comm);  // 1f1b batches its transfers
  const sim::Workload w = generate_workload(on);
  EXPECT_TRUE(testing::exchanges_complete(w));
  EXPECT_TRUE(testing::exchanges_complete(generate_workload(off)));
  for (const auto& prog : w.programs) {
    int posted = 0;
    for (std::size_t i = 0; i < prog.ops.size(); ++i) {
      const sim::Op& op = prog.ops[i];
      if (!std::holds_alternative<sim::P2PSpec>(op.shape)) continue;
      EXPECT_EQ(op.stream, sim::Stream::PpComm);
      ++posted;
      // The activation half is consumed by a later forward op, the gradient half by a backward.
      const sim::Phase want = prog.labels[op.label] == "pp_exchange_fwd" ? sim::Phase::Forward
                                                                        : sim::Phase::Backward;
      bool consumed = false;
      for (std::size_t j = i + 1; j < prog.ops.size() && !consumed; ++j) {
        const auto& d = prog.ops[j].deps;
        consumed = prog.ops[j].stream == sim::Stream::Compute &&
                   std::find(d.begin(), d.end(), i) != d.end();
        if (consumed) {
          EXPECT_EQ(prog.ops[j].phase, want) << prog.labels[op.label];
        }
      }
      // Every receive is waited for by the pass that needs it (a lone send only ends the step).
      const auto& x = std::get<sim::P2PSpec>(op.shape);
      EXPECT_TRUE(consumed || x.recv_from == sim::Peer::None) << prog.labels[op.label] << " " << i;
    }
    EXPECT_GT(posted, 0);
  }
}

TEST(Interleaved, OverlappedP2pOutsideTheInterleavedScheduleIsRejected) {
  std::string yaml = testing::small_llama_job(1, 2, 1, false, 4, 1);
  yaml.insert(yaml.find("  dp: 1"), "  overlap_p2p_comm: true\n");
  try {
    testing::parse_job(yaml, 2);
    ADD_FAILURE() << "accepted overlap_p2p_comm with 1f1b";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field(), "parallelism.overlap_p2p_comm");
    EXPECT_NE(e.reason().find("interleaved"), std::string::npos);
  }
}

}  // namespace
}  // namespace clustersim::workloads
