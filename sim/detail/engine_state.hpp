// State the engine's actors share (sim/engine_actors.cpp) and the interference model reads and
// updates (sim/engine_interference.cpp). Not part of the public API.
#pragma once

#include <simgrid/s4u.hpp>

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "sim/detail/collectives.hpp"
#include "sim/detail/engine_impl.hpp"

namespace clustersim::sim::detail {

/// One communicator as one rank sees it.
struct GroupInfo {
  int size = 1;
  int index = 0;
  int next = -1;
  int prev = -1;
  int domains = 1;  ///< distinct NVLink domains the group spans
  std::vector<int> members;
  GroupShape shape;
  /// Token-exchange fanouts of this member, one per routing seen (Shared::fanout).
  std::deque<std::pair<TokenRouting, TokenFanout>> fanouts;  ///< deque: references stay valid
};

/// Cost-model answers for one communication op: identical for every rank running the program,
/// so asked once (table lookups are far slower than the engine's per-op work).
struct CommParams {
  bool ready = false;
  CollectiveParams nvl;  ///< collective over NVLink, or point-to-point within a domain
  CollectiveParams net;  ///< collective crossing domains, or point-to-point across them
  /// Interference with compute of each ComputeClass while this op is in flight (all 1 when the
  /// engine's interference is off).
  std::array<Interference, kComputeClassCount> overlap{};
  bool interferes = false;  ///< some compute_slowdown in `overlap` is above 1
};

/// What sets the rate of compute at some moment: the interfering collective whose factors apply
/// (null: none) and whether a tensor-parallel communication kernel holds SMs (GEMMs with
/// GemmShape::busy_sms then run at 1/Op::held_slowdown, docs/engine.md).
/// Extra time per kernel beside host copies, by ComputeClass (CostModel::copy_kernel_delay for
/// one combination of copy directions).
using CopyDelays = std::array<CopyDelay, kComputeClassCount>;

struct Rate {
  const CommParams* comm = nullptr;
  bool held = false;
  bool ep_held = false;  ///< a DeepEP token exchange holds SMs (GEMMs at 1/Op::ep_held_slowdown)
  /// Host copies run on the rank's copy engines: each op takes its class's delay longer, spread
  /// over its duration (null: none in flight, or nothing measured).
  const CopyDelays* copy = nullptr;
  bool operator==(const Rate&) const = default;
  /// True when compute runs at full rate.
  bool full() const { return comm == nullptr && !held && !ep_held && copy == nullptr; }
};

/// Communication kernels that hold SMs of the GEMMs beside them while they run (docs/engine.md):
/// Transformer Engine's TP userbuffers kernels (GEMMs with GemmShape::busy_sms, at
/// Op::held_slowdown) and DeepEP's token exchanges on ep_comm (every GEMM, at
/// Op::ep_held_slowdown).
enum class SmHolder : std::uint8_t { Tp, DeepEp };
inline constexpr std::size_t kSmHolderCount = 2;

/// Compute/communication interference bookkeeping of one rank (docs/engine.md).
struct OverlapState {
  /// Per stream slot: the communication op in flight (null: none) and its bytes.
  std::array<const CommParams*, kStreamCount> in_flight{};
  std::array<double, kStreamCount> in_flight_bytes{};
  /// Ops in flight whose kernels hold SMs, per SmHolder.
  std::array<int, kSmHolderCount> holding{};
  /// Host copies in flight per direction (device-to-host, host-to-device).
  std::array<int, 2> copying{};
  /// The delays of each combination of copy directions (index: bit 1 d2h, bit 2 h2d); null when
  /// copies change nothing (interference off, or no measurement).
  const std::array<CopyDelays, 4>* copy_delays = nullptr;
  /// The rate now: the in-flight op with the most bytes among those that interfere, and
  /// which holders hold SMs.
  Rate in_force;
  bool computing = false;  ///< the compute stream is inside a compute unit
  bool logging = false;    ///< ... asleep for its full-rate duration: changes go to `log`
  ComputeClass computing_class = ComputeClass::Gemm;  ///< op class when the rate last changed
  std::vector<std::pair<double, Rate>> log;  ///< (time, in_force from then on)
  /// Released when in_force changes while the compute stream waits on it with a timeout (a
  /// semaphore: no mutex to retake, as cheap as a sleep; a stale release only causes a wake-up
  /// that finds nothing changed).
  simgrid::s4u::SemaphorePtr wake;
};

/// One rank's actors' shared state.
struct RankState {
  int rank = 0;
  const Program* program = nullptr;
  const ProgramPlan* plan = nullptr;
  std::vector<std::uint8_t> done;
  simgrid::s4u::MutexPtr mutex;
  std::array<simgrid::s4u::ConditionVariablePtr, kStreamCount> cvs;  ///< one per waiting stream
  int source = 0;       ///< rank whose done flags satisfy this rank's cross-stream deps
  bool mirror = false;  ///< plays only its DP streams, mirroring `source` (identical replicas)
  /// Plays nothing: rank `folded_to` (TP coordinate 0 of its TP group) stands for it
  /// (EngineOptions::fold_tp); -1 when the rank plays.
  int folded_to = -1;
  bool record = false;  ///< keeps its timeline
  std::unordered_map<int, simgrid::s4u::Mailbox*> mailboxes;  ///< by slot, created on first use
  std::unordered_map<int, double> route_latency;  ///< to a rank, from the platform, s
  std::array<std::unique_ptr<GroupInfo>, kGroupKindCount> groups;
  std::vector<std::int64_t> current_op;  ///< per stream slot, -1 when finished
  OverlapState overlap;
  double busy = 0, exposed = 0, bubble = 0, compute_end = 0, end = 0;
  std::array<double, kGroupKindCount> exposed_by_group{};  ///< parts of `exposed` (Breakdown)
  double exposed_other = 0;
};

/// Everything the actors of one simulation share.
struct Shared {
  const Workload* workload = nullptr;
  const CostModel* cost = nullptr;
  const BuiltPlatform* platform = nullptr;
  const EngineOptions* options = nullptr;
  std::vector<ProgramPlan> plans;
  std::vector<std::vector<CommParams>> comm_params;  ///< [program][op]
  std::vector<std::vector<bool>> replica_streams;    ///< [program][stream slot]
  std::vector<RankState> ranks;
  /// rank_ids[r] == r: a collective's flows carry a pointer to their sender's entry, so that a
  /// receive knows the route it came over (StreamActor::play_phases).
  std::vector<int> rank_ids;
  std::uint64_t events = 0;
  std::vector<TimelineEvent> timeline;
  /// Collectives that could not run the forced algorithm (EngineOptions::nccl_algo): calls by
  /// (collective, group, NVLink domains of the group, the algorithm that ran instead), formatted
  /// into StepResult::algorithm_fallbacks once the step is played.
  std::map<std::tuple<CollectiveKind, GroupKind, int, std::string_view>, std::uint64_t>
      algorithm_fallbacks;
  /// Some compute op runs slower while a TP communication kernel holds SMs (held_slowdown > 1):
  /// only then do TP communication ops change the compute rate (saves the wake-ups otherwise).
  bool held_sms = false;
  /// Some GEMM runs slower while a DeepEP token exchange holds SMs beside it (ep_held_slowdown >
  /// 1): only then do those exchanges change the compute rate.
  bool ep_held_sms = false;
  /// No GEMM runs under Transformer Engine's userbuffers (splits, sm_margin or busy_sms): the
  /// TP stream's collectives are NCCL kernels and take the measured interference.
  bool tp_nccl = true;
  /// CostModel::copy_kernel_delay per combination of copy directions; `copy_delayed` when some
  /// is above 0, interference is on and a program has host copies.
  std::array<CopyDelays, 4> copy_delays{};
  bool copy_delayed = false;
  /// TP collectives are charged their estimate instead of played (EngineOptions::cost_isolated_tp
  /// and only TP traffic on NVLink).
  bool tp_costed = false;
  /// The expert-tensor-parallel groups are the TP groups and TP collectives are costed: their
  /// collectives are costed with them (etp_is_tp).
  bool etp_costed = false;
  /// TP coordinates per TP group when one rank per group is played (EngineOptions::fold_tp),
  /// else 1.
  int fold = 1;
  /// Latest arrival (s) at each call of a collective over a group spanning pipeline stages
  /// (GroupKind::EMB), by (first member's rank << 32 | call number): what its members waited for
  /// the other stage, charged as bubble (StreamActor::operator()).
  std::unordered_map<std::uint64_t, double> stage_arrivals;
  /// Folding: the links the platform scaled and by how many lanes (BuiltPlatform::fold_lanes),
  /// the links the played routes crossed, and those only the other coordinates' routes cross.
  std::unordered_map<simgrid::s4u::Link*, int> fold_scaled;
  std::unordered_set<simgrid::s4u::Link*> fold_seen;
  std::unordered_set<simgrid::s4u::Link*> fold_images;
  /// Collectives of `group` are charged the time of the chosen algorithm's NCCL-tuner estimate
  /// (latency plus bytes over algorithm bandwidth) instead of played as flows: the FP8 amax
  /// all-reduces (tens of bytes, so latency only; GroupKind::AMAX), and TP collectives where
  /// only TP traffic crosses NVLink (tp_isolated). Their members run the same stage program, so
  /// they arrive together and the estimate is the time each waits. Playing the amax reductions
  /// would cost every rank one synchronisation over tp*cp*dp ranks per model-chunk pass (30x the
  /// events of the rest of a 2,048-GPU GPT-3 step) and tie the data-parallel replicas together,
  /// which the identical-replica reduction could then not mirror.
  bool costed(GroupKind group) const {
    return group == GroupKind::AMAX || (group == GroupKind::TP && tp_costed) ||
           (group == GroupKind::ETP && etp_costed);
  }

  simgrid::s4u::Mailbox* mailbox(int rank, int slot) {
    auto& m = ranks[static_cast<size_t>(rank)].mailboxes[slot];
    if (m == nullptr) {
      m = simgrid::s4u::Mailbox::by_name("r" + std::to_string(rank) + "." + std::to_string(slot));
    }
    return m;
  }
  int domain(int rank) const { return rank / platform->nvlink_domain_size; }
  /// Latency of the platform route between two ranks' GPUs (cached per pair), s. With folding,
  /// a pair's first call also checks its route (fold_route); flows ask it before they start.
  double route_latency(int from, int to);
  /// Folding: checks that each link of route `from` -> `to` (both TP coordinate 0) is crossed by
  /// as many of the TP coordinates' image routes as the platform scaled it for, and that no
  /// played route crosses a link only image routes use. @throws std::runtime_error otherwise.
  void fold_route(int from, int to);
  /// Cost parameters of a communication op of `rank`'s program (cached per program op).
  const CommParams& params(int rank, const Op& op);
  /// `rank`'s communicator of `kind` (built on first use).
  const GroupInfo& group(int rank, GroupKind kind);
  /// token_fanout() of `rank` in its `kind` group for `routing`, computed once.
  const TokenFanout& fanout(int rank, GroupKind kind, const TokenRouting& routing);
};

/// True if `options` ask for rank's timeline.
bool timeline_wanted(const EngineOptions& options, int rank);

/// The first rank and stream still inside an op, and which op (the deadlock error's detail).
std::string describe_blocked(const Shared& sh);

/// Folding: the recorded timeline of the played ranks, each event repeated for every rank of
/// its TP group the options ask for (events of unwanted played ranks dropped).
void unfold_timeline(Shared& sh);

/// Marks `prm` (an op of `bytes`) in flight on stream slot `slot` of rank `r`, or the slot idle
/// when `prm` is null; updates the factors in force and wakes (or logs for) the compute stream.
void set_in_flight(RankState& r, int slot, const CommParams* prm, double bytes);

/// Counts an op of rank `r` whose kernels hold SMs as `holder` starting (`start` true) or
/// ending; updates the rate in force as set_in_flight does.
void set_holding(RankState& r, SmHolder holder, bool start);

/// Counts a host copy of rank `r` on direction `h2d` (else device-to-host) starting or ending;
/// updates the rate in force as set_in_flight does.
void set_copying(RankState& r, bool h2d, bool start);

/// Plays compute unit `u` of stream plan `sp` on rank `r`, at full rate while no interfering
/// communication is in flight and at 1/compute_slowdown of each op's rate while some is, times
/// 1/held_slowdown for GEMMs with busy SMs while a TP communication op is in flight (piecewise
/// exact). With `ends`, appends every op's end time.
void play_compute(RankState& r, const StreamPlan& sp, const Unit& u, std::vector<double>* ends);

/// After the run: mirrors and folded ranks take their representatives' times; returns the
/// breakdown averaged over ranks and sets `step` to the latest rank's end, s.
Breakdown account(Shared& sh, double& step);

/// Slowdown of a communication op with parameters `prm` starting now, given the rank whose
/// compute stream it overlaps: its comm_slowdown if that stream is computing, else 1.
double comm_slowdown(const RankState& compute_rank, const CommParams& prm);

}  // namespace clustersim::sim::detail
