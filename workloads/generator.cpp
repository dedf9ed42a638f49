#include "workloads/generator.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "workloads/activation_offload.hpp"
#include "workloads/dp_sync.hpp"
#include "workloads/flops.hpp"
#include "workloads/job_checks.hpp"
#include "workloads/passes.hpp"
#include "workloads/program_builder.hpp"
#include "workloads/schedule.hpp"
#include "workloads/stage_layout.hpp"
#include "workloads/transformer_ops.hpp"

namespace clustersim::workloads {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("invalid workload spec: " + what);
}

// The constraints the generator relies on (parse_workload_spec reports them to users with
// file:line; this guards specs built in code).
void check_spec(const WorkloadSpec& w) {
  const ModelSpec& m = w.model;
  const ParallelSpec& p = w.parallel;
  const TrainingSpec& t = w.training;
  require(m.layers > 0 && m.hidden > 0 && m.heads > 0 && m.kv_heads > 0 && m.head_dim > 0 &&
              m.vocab > 0 && (m.ffn > 0 || m.experts > 0),
          "model sizes must be positive");
  require(p.tp > 0 && p.pp > 0 && p.dp > 0 && p.cp > 0 && p.vp > 0 && p.ep > 0 && p.etp > 0,
          "parallel sizes must be >= 1");
  require(t.seq_length > 0 && t.micro_batch_size > 0 && t.global_batch_size > 0,
          "batch sizes must be positive");
  require(m.heads % m.kv_heads == 0, "heads must be a multiple of kv_heads");
  require(find_pipeline_schedule(p.schedule) != nullptr, "unknown schedule '" + p.schedule + "'");
  if (const auto v = find_violation(w)) require(false, v->section + "." + v->key + ": " + v->reason);
}

const char* exchange_label(StepKind kind) {
  switch (kind) {
    case StepKind::RecvForward: return "pp_recv_fwd";
    case StepKind::SendForward: return "pp_send_fwd";
    case StepKind::SendForwardRecvBackward: return "pp_send_fwd_recv_bwd";
    case StepKind::SendBackwardRecvForward: return "pp_send_bwd_recv_fwd";
    case StepKind::RecvBackward: return "pp_recv_bwd";
    case StepKind::SendBackward: return "pp_send_bwd";
    case StepKind::SendForwardRecvForward: return "pp_send_fwd_recv_fwd";
    case StepKind::SendBackwardRecvBackward: return "pp_send_bwd_recv_bwd";
    default: return "pp_exchange";
  }
}

// The peers of a P2P step's active transfers: its activation half (send to the next stage,
// receive from the previous one) and its gradient half (the other way); Peer::None where the
// step does not move that transfer.
struct ExchangePeers {
  sim::Peer send_next, recv_prev, send_prev, recv_next;
  explicit ExchangePeers(std::uint8_t t)
      : send_next((t & kSendForward) ? sim::Peer::NextStage : sim::Peer::None),
        recv_prev((t & kRecvForward) ? sim::Peer::PrevStage : sim::Peer::None),
        send_prev((t & kSendBackward) ? sim::Peer::PrevStage : sim::Peer::None),
        recv_next((t & kRecvBackward) ? sim::Peer::NextStage : sim::Peer::None) {}
  bool activations() const { return send_next != sim::Peer::None || recv_prev != sim::Peer::None; }
  bool gradients() const { return send_prev != sim::Peer::None || recv_next != sim::Peer::None; }
};

// A Megatron p2p_communication call as one batched exchange of its active transfers
// (activations to the next stage and from the previous one, gradients the other way). A P2P
// op holds one send and one receive; a call that sends (or receives) both ways is split into
// its activation half on the pp_comm stream and its gradient half on the compute stream,
// posted together, with the next compute op waiting for both (the same as one batch).
void pipeline_exchange(const ScheduleStep& step, ProgramBuilder& b, double bytes) {
  using sim::Peer;
  const std::uint8_t t = step.transfers;
  if (t == 0) return;
  const bool fwd_kind = step.kind == StepKind::RecvForward || step.kind == StepKind::SendForward ||
                        step.kind == StepKind::SendForwardRecvBackward ||
                        step.kind == StepKind::SendForwardRecvForward;
  const int mb = step.microbatch >= 0 ? step.microbatch : step.recv_microbatch;
  b.set_context(fwd_kind ? sim::Phase::Forward : sim::Phase::Backward, -1, mb);
  const auto [send_next, recv_prev, send_prev, recv_next] = ExchangePeers(t);
  const bool two_sends = send_next != Peer::None && send_prev != Peer::None;
  const bool two_recvs = recv_prev != Peer::None && recv_next != Peer::None;
  if (!two_sends && !two_recvs) {
    const Peer send = send_next != Peer::None ? send_next : send_prev;
    const Peer recv = recv_prev != Peer::None ? recv_prev : recv_next;
    b.p2p(exchange_label(step.kind), send, recv, bytes);
    return;
  }
  std::vector<std::uint32_t> launch = b.after_last_compute();
  const std::uint32_t fwd =
      b.p2p("pp_exchange_fwd", send_next, recv_prev, bytes, sim::Stream::PpComm, std::move(launch));
  b.p2p("pp_exchange_bwd", send_prev, recv_next, bytes);
  b.defer(fwd);
}

// Megatron's interleaved schedule with overlap_p2p_comm (the default of Megatron-LM's training
// arguments for that schedule, --no-overlap-p2p-communication to turn it off; NeMo sets it for
// vp > 1): each transfer is posted asynchronously (isend/irecv on NCCL's stream) once the pass
// that produced it is done, and waited for only right before the pass that consumes it. The
// activation half of a step starts after the last forward pass and the next forward pass waits
// for it; the gradient half starts after the last backward pass and the next backward waits.
// Both go on the pp_comm stream in the schedule's order (NCCL runs them in order on its stream).
class OverlappedExchange {
 public:
  explicit OverlappedExchange(ProgramBuilder& b) : b_(b) {}
  /// After a forward (backward) pass whose last compute op is `last`.
  void forward_done(std::optional<std::uint32_t> last) { last_fwd_ = last; }
  void backward_done(std::optional<std::uint32_t> last) { last_bwd_ = last; }
  /// The transfers a forward (backward) pass waits for before it starts.
  std::vector<std::uint32_t> take_forward() { return std::exchange(pending_fwd_, {}); }
  std::vector<std::uint32_t> take_backward() { return std::exchange(pending_bwd_, {}); }

  void exchange(const ScheduleStep& step, double bytes) {
    if (step.transfers == 0) return;
    const int mb = step.microbatch >= 0 ? step.microbatch : step.recv_microbatch;
    const ExchangePeers p(step.transfers);
    if (p.activations()) {
      b_.set_context(sim::Phase::Forward, -1, mb);
      pending_fwd_.push_back(post("pp_exchange_fwd", p.send_next, p.recv_prev, bytes, last_fwd_));
    }
    if (p.gradients()) {
      b_.set_context(sim::Phase::Backward, -1, mb);
      pending_bwd_.push_back(post("pp_exchange_bwd", p.send_prev, p.recv_next, bytes, last_bwd_));
    }
  }

 private:
  std::uint32_t post(const char* label, sim::Peer send, sim::Peer recv, double bytes,
                     std::optional<std::uint32_t> after) {
    std::vector<std::uint32_t> launch;
    if (after) launch.push_back(*after);
    return b_.p2p(label, send, recv, bytes, sim::Stream::PpComm, std::move(launch));
  }
  ProgramBuilder& b_;
  std::optional<std::uint32_t> last_fwd_, last_bwd_;
  std::vector<std::uint32_t> pending_fwd_, pending_bwd_;
};

std::string describe(const WorkloadSpec& w) {
  const ParallelSpec& p = w.parallel;
  const TrainingSpec& t = w.training;
  auto n = [](const char* name, int v) { return std::string(" ") + name + std::to_string(v); };
  std::string out = w.model.name + n("tp", p.tp) + n("pp", p.pp) + n("dp", p.dp);
  if (p.cp > 1) out += n("cp", p.cp);
  if (p.vp > 1) out += n("vp", p.vp);
  if (p.ep > 1) out += n("ep", p.ep);
  if (w.model.experts > 0 && p.etp != p.tp) out += n("etp", p.etp);
  out += std::string(p.sequence_parallel ? " sp" : "") + n("mbs", static_cast<int>(t.micro_batch_size)) +
         n("gbs", static_cast<int>(t.global_batch_size)) + n("seq", static_cast<int>(t.seq_length)) +
         " " + to_string(t.precision) +
         (t.precision == Precision::FP8 && t.fp8_recipe != Fp8Recipe::Delayed
              ? std::string("-") + to_string(t.fp8_recipe) : std::string()) +
         " " + p.schedule;
  if (w.dp_cp() > 1 || p.zero_stage == 3) {
    static const char* kZero[] = {" ddp", " distopt", " zero2", " zero3"};
    out += kZero[p.zero_stage];
  }
  if (t.recompute != Recompute::None) out += std::string(" recompute-") + to_string(t.recompute);
  if (t.recompute == Recompute::Full &&
      (t.recompute_method != RecomputeMethod::Uniform || t.recompute_num_layers != 1)) {
    out += std::string("-") + to_string(t.recompute_method) + std::to_string(t.recompute_num_layers);
  }
  for (std::size_t i = 0; i < t.recompute_modules.size(); ++i) {
    out += std::string(i ? "," : "(") + to_string(t.recompute_modules[i]);
    if (i + 1 == t.recompute_modules.size()) out += ")";
  }
  if (t.attention_backend != sim::AttentionKernel::Cudnn) out += std::string(" ") + sim::to_string(t.attention_backend);
  if (p.tp_comm_overlap) out += " tp-overlap";
  if (p.tp_backward_comm == TpBackwardComm::Blocking && p.tp > 1) out += " tp-bwd-blocking";
  if (p.overlap_p2p_comm) out += " p2p-overlap";
  if (p.moe_token_dispatcher == MoeDispatcher::DeepEp) out += " deepep";
  if (p.moe_shared_expert_overlap) out += " shared-overlap";
  if (p.overlap_moe_expert_parallel_comm) out += " ep-overlap";
  if (p.optimizer_offload == OptimizerOffload::Cpu) out += " cpu-offload";
  if (!t.offload_modules.empty()) {
    out += " offload:";
    for (std::size_t i = 0; i < t.offload_modules.size(); ++i) {
      out += std::string(i ? "," : "") + to_string(t.offload_modules[i]);
    }
  }
  return out;
}

// Plays one stage's schedule steps into its program: passes, deferred weight gradients and
// pipeline exchanges (through the overlapped exchange when `overlap_p2p_comm` is on).
struct StepPlayer {
  const PassContext& ctx;  ///< the stage's builder, ops and parameter sync
  std::optional<OverlappedExchange>& overlapped;
  const std::vector<ScheduleStep>& steps;
  std::vector<std::size_t> last_backward;  ///< per model chunk, index of its last backward
  double message_bytes;

  GradSink* sink_of(std::size_t i) const {
    return ctx.sync.backward_sink(i == last_backward[static_cast<std::size_t>(steps[i].chunk)]);
  }

  // A forward run together with the backward pipeline_steps puts right after it (schedule.hpp).
  void combined(std::size_t i) {
    const ScheduleStep& step = steps[i];
    const ScheduleStep& paired = steps.at(i + 1);
    PassPlan f = forward_plan(ctx, step.chunk, step.microbatch, true);
    PassPlan b = backward_plan(ctx, paired.chunk, paired.microbatch, sink_of(i + 1), true);
    if (overlapped) {
      f.wait = overlapped->take_forward();
      b.wait = overlapped->take_backward();
    }
    const PassEnds ends = run_combined(ctx.builder, f, b);
    if (overlapped) {
      overlapped->forward_done(ends.forward);
      overlapped->backward_done(ends.backward);
    }
  }

  // Plays step i; returns how many steps it consumed (2 for a combined forward and backward).
  std::size_t play(std::size_t i) {
    const ScheduleStep& step = steps[i];
    if (step.kind == StepKind::Forward && step.combined) {
      combined(i);
      return 2;
    }
    if (step.kind == StepKind::Forward) {
      PassPlan f = forward_plan(ctx, step.chunk, step.microbatch, false);
      if (overlapped) f.wait = overlapped->take_forward();
      const auto last = run_pass(ctx.builder, f);
      if (overlapped) overlapped->forward_done(last);
    } else if (step.kind == StepKind::Backward) {
      PassPlan b = backward_plan(ctx, step.chunk, step.microbatch, sink_of(i), false);
      if (overlapped) b.wait = overlapped->take_backward();
      if (step.defer_wgrad) ctx.builder.begin_deferred_wgrads();
      const auto last = run_pass(ctx.builder, b);
      if (step.defer_wgrad) ctx.builder.end_deferred_wgrads();
      if (overlapped) overlapped->backward_done(last);
    } else if (step.kind == StepKind::WeightGrad) {
      // The oldest deferred backward's weight gradients (schedules queue them first in, first out).
      ctx.builder.set_context(sim::Phase::Backward, -1, step.microbatch);
      ctx.builder.place_oldest_wgrads();
    } else if (overlapped) {
      overlapped->exchange(step, message_bytes);
    } else {
      pipeline_exchange(step, ctx.builder, message_bytes);
    }
    return 1;
  }
};

// Per model chunk, the backward step (counted among the backward steps) after which
// Megatron's interleaved schedule launches the chunk's gradient reduction: the chunk's last
// backward's, plus the stage (backward_step_helper: virtual microbatch k launches the chunk
// whose last microbatch is k - pipeline rank; past the last backward, after the schedule).
std::vector<std::size_t> aligned_grad_sync(const std::vector<ScheduleStep>& steps,
                                           const std::vector<std::size_t>& last_backward, int stage) {
  std::vector<std::size_t> launch_after(last_backward.size(), steps.size() + 1);
  std::size_t ordinal = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind != StepKind::Backward) continue;
    for (std::size_t c = 0; c < last_backward.size(); ++c) {
      if (last_backward[c] == i) launch_after[c] = ordinal + static_cast<std::size_t>(stage);
    }
    ++ordinal;
  }
  return launch_after;
}

}  // namespace

sim::Program generate_stage_program(const WorkloadSpec& spec, int stage) {
  check_spec(spec);
  const ParallelSpec& p = spec.parallel;
  if (stage < 0 || stage >= p.pp) throw std::invalid_argument("stage out of range");
  const Stage st{stage, p.pp, p.vp, stage_chunks(spec.model, p, stage),
                 static_cast<int>(spec.model.layers), static_cast<int>(spec.model.mtp_layers),
                 spec.training};
  const int microbatches = static_cast<int>(spec.num_microbatches());
  const auto steps = pipeline_steps(p.schedule, p.pp, stage, microbatches, p.vp,
                                    p.overlap_moe_expert_parallel_comm);
  // Gradients of a model chunk are reduced during (or after) its last backward of the step.
  std::vector<std::size_t> last_backward(static_cast<std::size_t>(p.vp), steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind == StepKind::Backward) last_backward[static_cast<std::size_t>(steps[i].chunk)] = i;
  }

  sim::Program program;
  ProgramBuilder builder(program);
  TransformerOps ops(builder, spec);
  const auto sync = make_param_sync(builder, spec, stage);
  std::optional<OverlappedExchange> overlapped;
  if (p.overlap_p2p_comm) overlapped.emplace(builder);
  AmaxReductions amax(builder, spec, p.vp);
  const PassContext ctx{st, builder, ops, *sync, amax};
  const std::vector<std::size_t> launch_after = aligned_grad_sync(steps, last_backward, stage);
  StepPlayer player{ctx, overlapped, steps, std::move(last_backward), ops.pipeline_message_bytes()};
  sync->begin_step();
  std::size_t ordinal = 0;  // backward steps played
  for (std::size_t i = 0; i < steps.size();) {
    const std::size_t played = player.play(i);
    for (std::size_t j = i; j < i + played; ++j) {
      if (steps[j].kind != StepKind::Backward) continue;
      for (std::size_t c = 0; c < launch_after.size(); ++c) {
        if (launch_after[c] == ordinal) sync->chunk_grads_ready(static_cast<int>(c));
      }
      ++ordinal;
    }
    i += played;
  }
  if (builder.waiting_wgrad_groups() != 0) {
    throw std::logic_error("schedule '" + p.schedule + "' leaves deferred weight gradients unplaced");
  }
  sync->end_step();
  add_activation_offload(spec, stage, program);
  return program;
}

sim::Workload generate_workload(const WorkloadSpec& spec) {
  check_spec(spec);
  const ParallelSpec& p = spec.parallel;
  sim::Workload workload;
  workload.layout = rank_layout(spec);
  for (int stage = 0; stage < p.pp; ++stage) {
    workload.programs.push_back(generate_stage_program(spec, stage));
  }
  const int world = workload.layout.world();
  workload.program_of_rank.resize(static_cast<std::size_t>(world));
  for (int rank = 0; rank < world; ++rank) {
    workload.program_of_rank[static_cast<std::size_t>(rank)] =
        static_cast<std::uint32_t>(workload.layout.coord(rank, sim::GroupKind::PP));
  }
  const double samples = static_cast<double>(spec.training.global_batch_size);
  const MfuConvention convention = mfu_convention_from(spec.training.mfu_convention);
  auto& acc = workload.accounting;
  acc.tokens = samples * static_cast<double>(spec.training.seq_length);
  acc.mfu_convention = to_string(convention);
  acc.model_flops = samples * model_flops_per_sample(spec.model, spec.training.seq_length, convention);
  acc.hardware_flops = samples * hardware_flops_per_sample(spec);
  acc.peak_flops_per_gpu = 0.0;
  workload.description = describe(spec);
  return workload;
}

}  // namespace clustersim::workloads
