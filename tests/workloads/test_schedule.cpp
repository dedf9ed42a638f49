// Megatron's non-interleaved 1F1B schedule: counts and order of passes per stage, matching
// point-to-point calls between neighbouring stages, and deadlock freedom of the generated
// programs' batched exchanges.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <string>
#include <utility>
#include <vector>

#include "workloads/generator.hpp"
#include "workloads/schedule.hpp"
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
  EXPECT_EQ(pipeline_schedule_names(), (std::vector<std::string>{"1f1b", "interleaved"}));
  EXPECT_EQ(find_pipeline_schedule("gpipe"), nullptr);
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

// Plays the generated programs' batched P2P ops (compute ignored): an op is posted when the
// previous one of its stage completed, and completes once every transfer's partner op (the
// k-th send on a link and direction matches the k-th receive) is posted. Returns true when
// every stage reaches its end, false on a deadlock or an unmatched transfer.
bool exchanges_complete(const sim::Workload& w) {
  struct Xfer {
    int channel;  // 2*link for activations (stage link -> link+1), 2*link+1 for gradients
    int index;
    bool send;
  };
  const int pp = w.layout.size(sim::GroupKind::PP);
  std::vector<std::vector<std::vector<Xfer>>> ops(static_cast<std::size_t>(pp));
  std::map<std::tuple<int, int, bool>, std::pair<int, std::size_t>> where;
  for (int s = 0; s < pp; ++s) {
    auto& list = ops[static_cast<std::size_t>(s)];
    std::map<int, int> count;
    for (const auto& op : w.programs[static_cast<std::size_t>(s)].ops) {
      const auto* x = std::get_if<sim::P2PSpec>(&op.shape);
      if (x == nullptr) continue;
      std::vector<Xfer> xfers;
      auto add = [&](int channel, bool send) {
        const Xfer xfer{channel, count[channel]++, send};
        where[{xfer.channel, xfer.index, send}] = {s, list.size()};
        xfers.push_back(xfer);
      };
      if (x->send_to == sim::Peer::NextStage) add(2 * s, true);
      if (x->send_to == sim::Peer::PrevStage) add(2 * (s - 1) + 1, true);
      if (x->recv_from == sim::Peer::PrevStage) add(2 * (s - 1), false);
      if (x->recv_from == sim::Peer::NextStage) add(2 * s + 1, false);
      list.push_back(xfers);
    }
  }
  std::vector<std::size_t> pos(static_cast<std::size_t>(pp), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < pp; ++s) {
      auto& p = pos[static_cast<std::size_t>(s)];
      const auto& list = ops[static_cast<std::size_t>(s)];
      if (p >= list.size()) continue;
      bool ready = true;
      for (const auto& x : list[p]) {
        auto partner = where.find({x.channel, x.index, !x.send});
        ready = ready && partner != where.end() &&
                pos[static_cast<std::size_t>(partner->second.first)] >= partner->second.second;
      }
      if (ready) {
        ++p;
        progress = true;
      }
    }
  }
  for (int s = 0; s < pp; ++s) {
    if (pos[static_cast<std::size_t>(s)] != ops[static_cast<std::size_t>(s)].size()) return false;
  }
  return true;
}

TEST(OneFOneB, GeneratedExchangesPairUpAndNeverDeadlock) {
  for (auto [pp, m] : std::vector<std::pair<int, int>>{{2, 1}, {2, 5}, {4, 2}, {4, 8}}) {
    const auto spec = testing::parse_job(testing::small_llama_job(1, pp, 1, false, m, 1), pp);
    const sim::Workload w = generate_workload(spec);
    EXPECT_TRUE(exchanges_complete(w)) << pp << "/" << m;
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
  EXPECT_FALSE(exchanges_complete(w));
}

}  // namespace
}  // namespace clustersim::workloads
