// Deadlock check of generated pipeline programs (shared by the schedule tests).
#pragma once

#include <map>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "sim/trace.hpp"
#include "sim/workload.hpp"

namespace clustersim::workloads::testing {

// Plays the generated programs' batched P2P ops (compute ignored): a batch is posted when the
// previous one of its stage completed, and completes once every transfer's partner batch (the
// k-th send on a link and direction matches the k-th receive) is posted. A P2P op on the
// pp_comm stream forms one batch with the P2P op that follows it (the generator splits a call
// that sends both ways). Links wrap around the ring (the last stage's next is stage 0). Returns
// true when every stage reaches its end, false on a deadlock or an unmatched transfer.
inline bool exchanges_complete(const sim::Workload& w) {
  struct Xfer {
    int channel;  // 2*sender for activations, 2*sender+1 for gradients
    int index;
    bool send;
  };
  const int pp = w.layout.size(sim::GroupKind::PP);
  auto next = [pp](int s) { return (s + 1) % pp; };
  auto prev = [pp](int s) { return (s + pp - 1) % pp; };
  std::vector<std::vector<std::vector<Xfer>>> ops(static_cast<std::size_t>(pp));
  std::map<std::tuple<int, int, bool>, std::pair<int, std::size_t>> where;
  for (int s = 0; s < pp; ++s) {
    auto& list = ops[static_cast<std::size_t>(s)];
    std::map<int, int> count;
    bool open_batch = false;
    for (const auto& op : w.programs[static_cast<std::size_t>(s)].ops) {
      const auto* x = std::get_if<sim::P2PSpec>(&op.shape);
      if (x == nullptr) continue;
      if (!open_batch) list.emplace_back();
      auto add = [&](int channel, bool send) {
        const Xfer xfer{channel, count[channel]++, send};
        where[{xfer.channel, xfer.index, send}] = {s, list.size() - 1};
        list.back().push_back(xfer);
      };
      if (x->send_to == sim::Peer::NextStage) add(2 * s, true);
      if (x->send_to == sim::Peer::PrevStage) add(2 * s + 1, true);
      if (x->recv_from == sim::Peer::PrevStage) add(2 * prev(s), false);
      if (x->recv_from == sim::Peer::NextStage) add(2 * next(s) + 1, false);
      open_batch = op.stream == sim::Stream::PpComm;
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

}  // namespace clustersim::workloads::testing
