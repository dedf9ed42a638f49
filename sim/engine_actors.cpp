// The engine's SimGrid actors. Each rank runs one actor per stream its program uses; an actor
// plays its stream's units in order, waiting on cross-stream dependencies through the rank's
// condition variable. Collectives are ring macro-flows (one flow per rank per collective,
// carrying the rank's whole ring share) between per-(rank, communicator, stream) mailboxes, with
// NCCL's latency terms added analytically (../shared/notes/simgrid-3.32.md: few, equal flows).
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "sim/detail/engine_state.hpp"

namespace clustersim::sim::detail {
namespace {

namespace sg4 = simgrid::s4u;

// Mailbox slots: pipeline transfers by direction, then collectives by (communicator, stream,
// phase, lane), so that each mailbox sees its senders in program order.
constexpr int kSlotFromPrevStage = 0;
constexpr int kSlotFromNextStage = 1;
int collective_slot(GroupKind group, Stream stream, int phase, int lane) {
  return 2 + ((static_cast<int>(group) * kStreamCount + static_cast<int>(stream)) * kMaxPhases + phase) *
                 kMaxLanes + lane;
}

int payload_token = 0;  // flows carry no data; mailboxes need a pointer

}  // namespace

namespace {

std::uint64_t wire_size(double bytes) {
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(bytes)));
}

// Which communication slows compute and is slowed by it. The measurement (interference.csv) is
// of NCCL all_reduce at NCCL's default channel count beside GEMMs and attention: the collectives
// of the data-parallel and context-parallel streams are such NCCL collectives, and so are those
// of the tensor-parallel stream when no GEMM runs under Transformer Engine's userbuffers
// (`tp_nccl`: the backward's asynchronous all-gathers and reduce-scatters beside the dgrad and
// wgrad GEMMs). Not applied (not what was measured): tensor-parallel collectives under
// tp_comm_overlap (userbuffers move all-gathers with copy engines and reduce-scatters on a few
// SMs) and point-to-point transfers (NCCL P2P runs on few channels, and a send's time here
// includes its wait for the receiver, which contends for nothing).
bool interference_applies(Stream stream, bool tp_nccl) {
  return stream == Stream::DpComm || stream == Stream::CpComm || (tp_nccl && stream == Stream::TpComm);
}

class StreamActor {
 public:
  StreamActor(Shared* shared, int rank, int slot) : sh_(shared), rank_(rank), slot_(slot) {}
  void operator()();

 private:
  void wait_deps(RankState& src, const Unit& u, Stream stream, bool p2p_only,
                 RankState* charge = nullptr);
  void charge_exposed(RankState& r, const Op* gating, double seconds);
  std::optional<std::uint64_t> arrive_across_stages(const Op& op, double now);
  void run_compute(RankState& r, const StreamPlan& sp, const Unit& u);
  void run_collective(const Op& op, Stream stream);
  double play_phases(const CollectivePlan& plan, GroupKind group, Stream stream, double slow);
  void run_p2p(const Op& op);
  void record(Stream stream, const Op& op, double start, double end);

  Shared* sh_;
  int rank_;
  int slot_;
  const char* last_algorithm_ = "ring";  // of the last collective, for the timeline
  std::uint32_t stage_calls_ = 0;        // collectives played over the EMB group
  std::vector<double> op_ends_;          // of the compute unit being recorded
};

void StreamActor::operator()() {
  RankState& r = sh_->ranks[static_cast<size_t>(rank_)];
  const StreamPlan& sp = r.plan->streams[static_cast<size_t>(slot_)];
  const bool compute_stream = sp.stream == Stream::Compute;
  for (const Unit& u : sp.units) {
    const Op& first = r.program->ops[sp.ops[u.begin]];
    r.current_op[static_cast<size_t>(slot_)] = sp.ops[u.begin];
    // The compute stream's wait for pipeline exchanges (overlapped ones, on pp_comm) is bubble,
    // as a blocking exchange on the compute stream is; the rest of the wait is exposed.
    const double t0 = sg4::Engine::get_clock();
    RankState& src = sh_->ranks[static_cast<size_t>(r.source)];
    if (compute_stream) wait_deps(src, u, sp.stream, true);
    const double tp = sg4::Engine::get_clock();
    wait_deps(src, u, sp.stream, false, compute_stream ? &r : nullptr);
    const double t1 = sg4::Engine::get_clock();
    std::optional<std::uint64_t> across;
    if (compute_stream && !u.compute && !first.is_p2p()) across = arrive_across_stages(first, t1);
    if (u.compute) {
      run_compute(r, sp, u);
    } else if (first.is_p2p()) {
      run_p2p(first);
    } else {
      run_collective(first, sp.stream);
    }
    const double t2 = sg4::Engine::get_clock();
    if (!u.compute && r.record) record(sp.stream, first, t1, t2);
    if (compute_stream) {
      r.bubble += tp - t0;
      if (u.compute) {
        r.busy += t2 - t1;
      } else if (first.is_p2p()) {
        r.bubble += t2 - t1;
      } else {
        // Waiting for the other pipeline stage to reach a collective is pipeline time.
        const double waited = across ? std::clamp(sh_->stage_arrivals[*across] - t1, 0.0, t2 - t1) : 0.0;
        r.bubble += waited;
        charge_exposed(r, &first, t2 - t1 - waited);
      }
    }
    for (std::uint32_t pos = u.begin; pos < u.end; ++pos) r.done[sp.ops[pos]] = 1;
    for (int w = 0; w < kStreamCount; ++w) {
      if ((u.waiters >> w) & 1u) r.cvs[static_cast<size_t>(w)]->notify_all();
    }
  }
  const double now = sg4::Engine::get_clock();
  if (compute_stream) r.compute_end = now;
  r.end = std::max(r.end, now);
  r.current_op[static_cast<size_t>(slot_)] = -1;
}

// Waits until every cross-stream dependency of `u` (with `p2p_only`, every pipeline exchange
// among them) is done on rank `src` (the rank itself, or the representative it mirrors),
// sleeping on src's condition variable for `stream`. With `charge`, each stretch of the wait is
// charged as exposed time of `charge` to the dependency it waited for: the first of u's
// dependencies, in program order, still running (so a wait for an exchange of several
// collectives is split among their communicators).
void StreamActor::wait_deps(RankState& src, const Unit& u, Stream stream, bool p2p_only,
                            RankState* charge) {
  auto pending = [&]() -> std::int64_t {
    for (std::uint32_t d : u.deps) {
      if (src.done[d] == 0 && (!p2p_only || src.program->ops[d].is_p2p())) return d;
    }
    return -1;
  };
  std::int64_t last = pending();
  if (last < 0) return;
  auto charge_since = [&](double& mark, std::int64_t op) {
    const double now = sg4::Engine::get_clock();
    if (charge != nullptr && now > mark) charge_exposed(*charge, &src.program->ops[static_cast<size_t>(op)], now - mark);
    mark = now;
  };
  double mark = sg4::Engine::get_clock();
  std::unique_lock<sg4::Mutex> lock(*src.mutex);  // taking it may yield: look again after
  for (std::int64_t d = pending(); d >= 0; d = pending()) {
    last = d;
    src.cvs[static_cast<size_t>(stream)]->wait(lock);
    charge_since(mark, d);
  }
  charge_since(mark, last);  // a yield while taking the lock
}

// A blocking collective over a group that spans pipeline stages (the embedding group of the
// first and last stage, EMB) first waits for the member on the other stage, which reaches it
// only after its own pipeline's drain: records this rank's arrival at the call (`now`) and
// returns the call's key in Shared::stage_arrivals, whose value is the latest arrival once the
// collective has completed (none completes before every member arrived). Other groups: none.
std::optional<std::uint64_t> StreamActor::arrive_across_stages(const Op& op, double now) {
  const auto* spec = std::get_if<CollectiveSpec>(&op.shape);
  if (spec == nullptr || spec->group != GroupKind::EMB) return std::nullopt;
  const GroupInfo& g = sh_->group(rank_, spec->group);
  if (g.size <= 1) return std::nullopt;
  const std::uint64_t key = (static_cast<std::uint64_t>(g.members.front()) << 32) | stage_calls_++;
  double& latest = sh_->stage_arrivals[key];
  latest = std::max(latest, now);
  return key;
}

// Exposed time of the compute stream, charged to the communicator of the collective it waited
// for (`gating`), or to exposed_other for any other op (Breakdown).
void StreamActor::charge_exposed(RankState& r, const Op* gating, double seconds) {
  r.exposed += seconds;
  const auto* spec = gating != nullptr ? std::get_if<CollectiveSpec>(&gating->shape) : nullptr;
  if (spec != nullptr) {
    r.exposed_by_group[static_cast<size_t>(spec->group)] += seconds;
  } else {
    r.exposed_other += seconds;
  }
}

// Compute units of the compute stream play the rank's interference and held-SM factors; those
// of the copy streams (host copies of activation offloading, on the GPU's copy engines) are
// plain sleeps that neither slow nor are slowed by the rank's kernels.
void StreamActor::run_compute(RankState& r, const StreamPlan& sp, const Unit& u) {
  const double start = sg4::Engine::get_clock();
  const bool plain = !sh_->options->interference || sp.stream != Stream::Compute;
  const bool copy = sh_->copy_delayed && (sp.stream == Stream::D2H || sp.stream == Stream::H2D);
  if (copy) set_copying(r, sp.stream == Stream::H2D, true);
  if (plain) {
    sg4::this_actor::sleep_for(u.duration_s);
    if (copy) set_copying(r, sp.stream == Stream::H2D, false);
  } else {
    play_compute(r, sp, u, r.record ? &op_ends_ : nullptr);
  }
  ++sh_->events;
  if (!r.record) return;
  double t = start;
  for (std::uint32_t pos = u.begin; pos < u.end; ++pos) {
    const Op& op = r.program->ops[sp.ops[pos]];
    const double end = plain ? t + op.duration_s : op_ends_[pos - u.begin];
    record(sp.stream, op, t, end);
    t = end;
  }
  op_ends_.clear();
}

void StreamActor::run_collective(const Op& op, Stream stream) {
  const auto& spec = std::get<CollectiveSpec>(op.shape);
  const GroupInfo& g = sh_->group(rank_, spec.group);
  if (g.size <= 1) return;
  const CommParams& prm = sh_->params(rank_, op);
  CollectiveCall call;
  call.kind = spec.kind;
  call.bytes = op.bytes;
  call.members = &g.members;
  call.index = g.index;
  call.domain_size = sh_->platform->nvlink_domain_size;
  call.shape = &g.shape;
  call.nvl = prm.nvl;
  call.net = prm.net;
  if (spec.kind == CollectiveKind::TokenExchange) call.fanout = &sh_->fanout(rank_, spec.group, spec.routing);
  const CollectiveAlgorithm& algo =
      choose_algorithm(call, sh_->options->nccl_algo, sh_->platform->nvlink_bandwidth,
                       sh_->platform->network_bandwidth);
  RankState& r = sh_->ranks[static_cast<size_t>(rank_)];
  if (!sh_->options->nccl_algo.empty() && algo.name != sh_->options->nccl_algo && g.index == 0 &&
      !r.mirror) {
    ++sh_->algorithm_fallbacks[{spec.kind, spec.group, g.shape.domains, algo.name}];
  }
  // A TP communication kernel holds the SMs that overlapped GEMMs name (GemmShape::busy_sms);
  // DeepEP's kernels hold theirs while an exchange beside compute runs (combined 1F1B).
  std::optional<SmHolder> holder;
  if (!r.mirror && sh_->held_sms && stream == Stream::TpComm) holder = SmHolder::Tp;
  if (!r.mirror && sh_->ep_held_sms && stream == Stream::EpComm &&
      spec.kind == CollectiveKind::TokenExchange) {
    holder = SmHolder::DeepEp;
  }
  if (holder) set_holding(r, *holder, true);
  auto release = [&] {
    if (holder) set_holding(r, *holder, false);
  };
  const bool overlap = sh_->options->interference && interference_applies(stream, sh_->tp_nccl);
  const double slow = overlap ? comm_slowdown(sh_->ranks[static_cast<size_t>(r.source)], prm) : 1.0;
  if (overlap && !r.mirror) set_in_flight(r, slot_, &prm, op.bytes);
  if (sh_->costed(spec.group)) {
    // An estimated (NVLink-only) collective: its bytes' time `slow` times longer, its latency
    // unchanged, as the played flows.
    double t = algo.estimate(call, sh_->platform->nvlink_bandwidth, sh_->platform->network_bandwidth);
    if (slow != 1.0) {
      const double latency = algo.plan(call).latency_s;
      t = latency + (t - latency) * slow;
    }
    sg4::this_actor::sleep_for(t);
    if (overlap && !r.mirror) set_in_flight(r, slot_, nullptr, 0.0);
    release();
    last_algorithm_ = algo.name;
    return;
  }
  const CollectivePlan plan = algo.plan(call);
  const double wire = play_phases(plan, spec.group, stream, slow);
  sg4::this_actor::sleep_for(std::max(0.0, plan.latency_s - wire));
  if (overlap && !r.mirror) set_in_flight(r, slot_, nullptr, 0.0);
  release();
  last_algorithm_ = plan.algorithm;
}

// Plays the flow phases of `plan` (a collective of `group` on `stream`) from this rank, its
// NVLink flows `slow` times their bytes; returns the wire latency the phases' routes carried.
double StreamActor::play_phases(const CollectivePlan& plan, GroupKind group, Stream stream, double slow) {
  std::vector<int*> sink;
  // NCCL's latency terms (measured or from its tuning model) include the wire latency, which
  // the flows already carry through the platform's links: charge only the difference. What a
  // phase carried is the route latency of its flow that finished last: netting the largest
  // route latency instead made a longer NIC latency shorten a ring whose NVLink flow is the
  // slower one (a review, 2026-12-05). A receive carries the route latency from its sender,
  // whose rank the flow's payload names (Shared::rank_ids): trees, pairwise exchanges and
  // DeepEP receive from other peers than they send to.
  double wire = 0.0;
  for (size_t ph = 0; ph < plan.phases.size(); ++ph) {
    const FlowPhase& phase = plan.phases[ph];
    std::vector<sg4::CommPtr> comms;
    std::vector<double> carried;  // route latency each comm carries
    sink.assign(phase.receive_lanes.size(), nullptr);
    for (const Flow& f : phase.sends) {
      const int slot = collective_slot(group, stream, static_cast<int>(ph), f.lane);
      // The collective's own slowdown acts where the GPU, not the link, limits it: NVLink.
      const double bytes = sh_->domain(f.to) == sh_->domain(rank_) ? f.bytes * slow : f.bytes;
      carried.push_back(sh_->route_latency(rank_, f.to));
      comms.push_back(sh_->mailbox(f.to, slot)->put_async(&sh_->rank_ids[static_cast<size_t>(rank_)],
                                                          wire_size(bytes)));
    }
    for (size_t i = 0; i < phase.receive_lanes.size(); ++i) {
      const int slot = collective_slot(group, stream, static_cast<int>(ph), phase.receive_lanes[i]);
      comms.push_back(sh_->mailbox(rank_, slot)->get_async<int>(&sink[i]));
    }
    sg4::Comm::wait_all(comms);
    sh_->events += comms.size();
    for (const int* from : sink) carried.push_back(sh_->route_latency(*from, rank_));
    std::size_t last = 0;
    for (std::size_t i = 1; i < comms.size(); ++i) {
      if (comms[i]->get_finish_time() > comms[last]->get_finish_time()) last = i;
    }
    if (!comms.empty()) wire += carried[last];
  }
  return wire;
}

void StreamActor::run_p2p(const Op& op) {
  const auto& spec = std::get<P2PSpec>(op.shape);
  const auto& layout = sh_->workload->layout;
  std::vector<sg4::CommPtr> comms;
  int* sink = nullptr;
  double latency = 0.0;
  auto params_to = [&](int peer) {
    const LinkClass link = sh_->domain(peer) == sh_->domain(rank_) ? LinkClass::NVLink : LinkClass::Network;
    const CommParams& prm = sh_->params(rank_, op);
    return link == LinkClass::NVLink ? prm.nvl : prm.net;
  };
  // Point-to-point transfers neither slow compute nor are slowed by it (interference_applies).
  if (spec.send_to != Peer::None) {
    const int peer = layout.pp_peer(rank_, spec.send_to);
    const CollectiveParams prm = params_to(peer);
    const int slot = spec.send_to == Peer::NextStage ? kSlotFromPrevStage : kSlotFromNextStage;
    // The route first: with folding its first use checks the route before a flow starts.
    latency = std::max(latency, prm.base_latency_s + prm.step_latency_s - sh_->route_latency(rank_, peer));
    comms.push_back(sh_->mailbox(peer, slot)->put_async(
        &payload_token, wire_size(op.bytes / prm.bandwidth_efficiency)));
  }
  if (spec.recv_from != Peer::None) {
    const int peer = layout.pp_peer(rank_, spec.recv_from);
    const CollectiveParams prm = params_to(peer);
    const int slot = spec.recv_from == Peer::PrevStage ? kSlotFromPrevStage : kSlotFromNextStage;
    comms.push_back(sh_->mailbox(rank_, slot)->get_async<int>(&sink));
    latency = std::max(latency, prm.base_latency_s + prm.step_latency_s - sh_->route_latency(peer, rank_));
  }
  if (comms.empty()) return;
  sg4::Comm::wait_all(comms);
  sh_->events += comms.size();
  sg4::this_actor::sleep_for(latency);
}

void StreamActor::record(Stream stream, const Op& op, double start, double end) {
  const RankState& r = sh_->ranks[static_cast<size_t>(rank_)];
  std::string name = r.program->labels.at(op.label);
  char detail[96];
  if (const auto* c = std::get_if<CollectiveSpec>(&op.shape)) {
    std::snprintf(detail, sizeof detail, " %s %s %s %.3gMB", to_string(c->kind),
                  to_string(c->group), last_algorithm_, op.bytes / 1e6);
    name += detail;
  } else if (op.is_p2p()) {
    std::snprintf(detail, sizeof detail, " p2p %.3gMB", op.bytes / 1e6);
    name += detail;
  }
  const auto index = static_cast<std::int32_t>(&op - r.program->ops.data());
  sh_->timeline.push_back(TimelineEvent{rank_, stream, std::move(name), start, end, index});
}

// The delays host copies add to the kernels beside them (CostModel::copy_kernel_delay), when
// interference is on and some program has ops on a copy stream (`copies`).
void set_copy_delays(Shared& sh, const CostModel& cost, bool copies) {
  if (!copies || !sh.options->interference) return;
  for (int dirs = 1; dirs < 4; ++dirs) {
    for (int c = 0; c < kComputeClassCount; ++c) {
      const CopyDelay d = cost.copy_kernel_delay(static_cast<ComputeClass>(c), dirs & 1, dirs & 2);
      sh.copy_delays[static_cast<size_t>(dirs)][static_cast<size_t>(c)] = d;
      sh.copy_delayed = sh.copy_delayed || !d.none();
    }
  }
}

void setup_rank(Shared& sh, int rank, bool reduce) {
  const Workload& w = *sh.workload;
  RankState& r = sh.ranks[static_cast<size_t>(rank)];
  const auto prog = w.program_of_rank[static_cast<size_t>(rank)];
  r.rank = rank;
  r.program = &w.programs[prog];
  r.plan = &sh.plans[prog];
  r.done.assign(r.program->ops.size(), 0);
  r.mutex = sg4::Mutex::create();
  for (auto& cv : r.cvs) cv = sg4::ConditionVariable::create();
  r.overlap.wake = sg4::Semaphore::create(0);
  if (sh.copy_delayed) r.overlap.copy_delays = &sh.copy_delays;
  r.current_op.assign(r.plan->streams.size(), -1);
  if (sh.fold > 1 && w.layout.coord(rank, GroupKind::TP) != 0) {
    r.folded_to = w.layout.group(rank, GroupKind::TP).front();
    return;  // plays nothing: its TP coordinate 0 stands for it
  }
  r.source = reduce ? replica_source(w, rank) : rank;
  r.mirror = r.source != rank;
  r.record = timeline_wanted(*sh.options, rank);
  if (sh.fold > 1) {
    for (int m : w.layout.group(rank, GroupKind::TP)) r.record = r.record || timeline_wanted(*sh.options, m);
  }
  for (size_t s = 0; s < r.plan->streams.size(); ++s) {
    if (r.mirror && !sh.replica_streams[prog][s]) continue;
    r.current_op[s] = 0;
    sg4::Actor::create("r" + std::to_string(rank) + "s" + std::to_string(s),
                       sh.platform->gpus[static_cast<size_t>(rank)],
                       StreamActor(&sh, rank, static_cast<int>(s)));
  }
}

// The plans of every program and what the step needs decided before its actors start: held-SM
// and host-copy slowdowns, whether TP collectives are costed in isolation and folded.
void prepare(Shared& sh, const Workload& workload, const BuiltPlatform& platform, const CostModel& cost,
             const EngineOptions& options) {
  sh.workload = &workload;
  sh.cost = &cost;
  sh.platform = &platform;
  sh.options = &options;
  sh.plans.reserve(workload.programs.size());
  bool copies = false, userbuffers = false;
  for (const Program& p : workload.programs) {
    sh.plans.push_back(plan_program(p));
    for (const Op& op : p.ops) {
      sh.held_sms = sh.held_sms || op.held_slowdown > 1.0;
      if (const auto* g = std::get_if<GemmShape>(&op.shape)) {
        userbuffers = userbuffers || g->splits != 1 || g->sm_margin != 0 || g->busy_sms != 0;
      }
      sh.ep_held_sms = sh.ep_held_sms || op.ep_held_slowdown > 1.0;
      copies = copies || op.stream == Stream::D2H || op.stream == Stream::H2D;
    }
  }
  sh.held_sms = sh.held_sms && options.interference;
  sh.tp_nccl = !userbuffers;
  sh.ep_held_sms = sh.ep_held_sms && options.interference;
  set_copy_delays(sh, cost, copies);
  // The estimate needs the platform's NVLink rate (test platforms may leave it unstated).
  sh.tp_costed = options.cost_isolated_tp && platform.nvlink_bandwidth > 0.0 &&
                 tp_isolated(workload, platform.nvlink_domain_size);
  sh.etp_costed = sh.tp_costed && etp_is_tp(workload);
  if (sh.tp_costed && options.fold_tp && platform.fold_lanes && tp_fold_problem(workload).empty()) {
    std::vector<int> lane(platform.gpus.size(), -1);
    for (int r = 0; r < workload.layout.world(); ++r) {
      lane[static_cast<size_t>(r)] = workload.layout.coord(r, GroupKind::TP);
    }
    if (platform.fold_lanes(lane, sh.fold_scaled).empty()) sh.fold = workload.layout.size(GroupKind::TP);
  }
  sh.comm_params.resize(workload.programs.size());
}

// The step's result once the engine has run: time, breakdown, events, fallbacks, timeline.
void collect(Shared& sh, const EngineOptions& options, StepResult& result) {
  double step = 0.0;
  result.breakdown = account(sh, step);
  result.step_time_s = step;
  result.events = sh.events;
  result.tp_estimated = sh.tp_costed;
  result.tp_folded = sh.fold > 1;
  for (const auto& [key, calls] : sh.algorithm_fallbacks) {
    const auto& [kind, group, domains, ran] = key;
    result.algorithm_fallbacks.push_back(
        options.nccl_algo + " forced, " + to_string(kind) + " of group " + to_string(group) +
        " over " + std::to_string(domains) + " NVLink domain(s): " + std::string(ran) + " (" +
        std::to_string(calls) + " calls)");
  }
  std::sort(result.algorithm_fallbacks.begin(), result.algorithm_fallbacks.end());  // by text
  if (sh.fold > 1 && options.record_timeline) unfold_timeline(sh);
  result.timeline = std::move(sh.timeline);
}

}  // namespace

void play(sg4::Engine& engine, const Workload& workload, const BuiltPlatform& platform,
          const CostModel& cost, const EngineOptions& options, StepResult& result) {
  Shared sh;
  prepare(sh, workload, platform, cost, options);
  const bool reduce = options.identical_dp_replicas && workload.layout.size(replica_kind(workload)) > 1;
  if (reduce) {
    std::string problem;
    sh.replica_streams = replica_streams(workload, sh.plans, problem);
    if (!problem.empty()) {
      throw std::invalid_argument("the identical-replica reduction does not apply: " + problem);
    }
  }
  const int world = workload.layout.world();
  sh.ranks.resize(static_cast<size_t>(world));
  sh.rank_ids.resize(static_cast<size_t>(world));
  std::iota(sh.rank_ids.begin(), sh.rank_ids.end(), 0);
  for (int rank = 0; rank < world; ++rank) setup_rank(sh, rank, reduce);
  engine.run();
  const std::string blocked = describe_blocked(sh);
  if (blocked != "no blocked actor found") {
    throw std::runtime_error("simulation deadlocked: " + blocked);
  }
  collect(sh, options, result);
}

}  // namespace clustersim::sim::detail
