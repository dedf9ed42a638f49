#include "workloads/generator.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "workloads/dp_sync.hpp"
#include "workloads/flops.hpp"
#include "workloads/job_checks.hpp"
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

struct Stage {
  int index = 0;
  int pp = 1;
  int vp = 1;
  std::vector<LayerRange> chunks;
  int layers = 0;      ///< the model's decoder layers: the index of the first MTP depth's layer
  int mtp_layers = 0;  ///< MTP depths, after the decoder on the last chunk of the last stage
  TrainingSpec training;  ///< recompute settings (recompute_groups)
  bool first(int chunk) const { return index == 0 && chunk == 0; }
  bool last(int chunk) const { return index == pp - 1 && chunk == vp - 1; }
};

void defer_all(ProgramBuilder& b, const std::vector<std::uint32_t>& deps) {
  for (std::uint32_t d : deps) b.defer(d);
}

// The amax reductions of Transformer Engine's delayed-scaling FP8 recipe. TE reduces the amaxes
// of every FP8 tensor of an fp8_autocast region over the region's fp8_group (MAX all-reduce)
// when the region's forward ends and when its backward ends
// (transformer_engine/pytorch/fp8.py, FP8GlobalStateManager.reduce_and_update_fp8_tensors;
// DelayedScaling.reduce_amax defaults to True). Megatron-core puts each model chunk's layers in
// one region (TransformerBlock.forward; the output layer is outside) with fp8_group = its amax
// reduction group, the tp x cp x dp ranks of the pipeline stage (parallel_state.py,
// get_amax_reduction_group). The buffer holds one FP32 amax per FP8 tensor: input, weight and
// output of each FP8 GEMM in the forward (3), gradient in and out in the backward (2). TE
// launches the all-reduce on the compute stream and the scale update waits for it, so the next
// compute op depends on it; recomputed forwards reuse the saved scales and reduce nothing.
class AmaxReductions {
 public:
  AmaxReductions(ProgramBuilder& b, const WorkloadSpec& spec, int chunks)
      : b_(b), on_(fp8_amax_reduced(spec)), gemms_(static_cast<std::size_t>(chunks), 0) {}
  // Marks the start of a chunk's layers in the forward.
  void begin_forward() { first_ = b_.size(); }
  void forward_done(int chunk) {
    if (!on_) return;
    const std::size_t n = b_.gemms_since(first_, sim::DType::FP8);
    gemms_[static_cast<std::size_t>(chunk)] = n;
    emit("fp8_amax_fwd", 3.0 * static_cast<double>(n));
  }
  void backward_done(int chunk) {
    if (on_) emit("fp8_amax_bwd", 2.0 * static_cast<double>(gemms_[static_cast<std::size_t>(chunk)]));
  }

 private:
  void emit(const char* label, double amaxes) {
    if (amaxes <= 0.0) return;
    std::vector<std::uint32_t> after;
    if (auto last = b_.last_compute()) after.push_back(*last);
    b_.defer(b_.collective(label, sim::CollectiveKind::AllReduce, sim::GroupKind::AMAX,
                           sim::Stream::AmaxComm, amaxes * kAmaxBytes, std::move(after)));
  }
  static constexpr double kAmaxBytes = 4.0;  // FP32
  ProgramBuilder& b_;
  bool on_;
  std::vector<std::size_t> gemms_;
  std::size_t first_ = 0;
};

void forward_pass(const Stage& st, int chunk, int mb, ProgramBuilder& b, TransformerOps& ops,
                  ParamSync& sync, AmaxReductions& amax) {
  b.set_context(sim::Phase::Forward, -1, mb);
  const LayerRange& range = st.chunks[static_cast<std::size_t>(chunk)];
  if (st.first(chunk)) ops.embedding_forward(sync.forward_deps(kEmbeddingUnit, mb));
  amax.begin_forward();
  for (int layer = range.begin; layer < range.end; ++layer) {
    ops.layer_forward(layer, sync.forward_deps(layer, mb));
  }
  const int depths = st.last(chunk) ? st.mtp_layers : 0;
  if (depths > 0) {
    // The depths' embedding reads this stage's embedding parameters, or with tied embeddings
    // the output layer's.
    std::vector<std::uint32_t> embedding = sync.forward_deps(kEmbeddingUnit, mb);
    for (std::uint32_t d : sync.forward_deps(kHeadUnit, mb)) embedding.push_back(d);
    std::sort(embedding.begin(), embedding.end());
    embedding.erase(std::unique(embedding.begin(), embedding.end()), embedding.end());
    for (int depth = 0; depth < depths; ++depth) {
      ops.mtp_forward(depth, sync.forward_deps(st.layers + depth, mb), embedding);
    }
  }
  amax.forward_done(chunk);
  if (!st.last(chunk)) return;
  const std::vector<std::uint32_t> head_deps = sync.forward_deps(kHeadUnit, mb);
  ops.head_forward(head_deps);
  for (int depth = 0; depth < depths; ++depth) {
    b.set_layer(st.layers + depth);
    ops.head_forward(head_deps, "mtp_");
  }
}

// The decoder layers of a chunk backward, last first, each group of full recompute re-run from
// its checkpoint before the backward of its last layer (recompute_groups: uniform groups of
// recompute_num_layers layers forward together, block the first layers one by one). The
// parameters of a group's layers are asked for in backward order, as without the group.
void layers_backward(const Stage& st, int chunk, TransformerOps& ops, ParamSync& sync, GradSink* sink) {
  const LayerRange& range = st.chunks[static_cast<std::size_t>(chunk)];
  const std::vector<LayerRange> groups = recompute_groups(st.training, range);
  for (int layer = range.end; layer-- > range.begin;) {
    const LayerRange* g = recompute_group_of(groups, layer);
    if (g == nullptr) {
      ops.layer_backward(layer, sink, sync.backward_deps(layer));
    } else if (g->size() == 1) {
      ops.layer_backward(layer, sink, sync.backward_deps(layer), true);
    } else {
      if (layer == g->end - 1) {
        std::vector<std::vector<std::uint32_t>> deps(static_cast<std::size_t>(g->size()));
        for (int l = g->end; l-- > g->begin;) deps[static_cast<std::size_t>(l - g->begin)] = sync.backward_deps(l);
        for (int l = g->begin; l < g->end; ++l) ops.layer_recompute(l, deps[static_cast<std::size_t>(l - g->begin)]);
      }
      ops.layer_backward(layer, sink);
    }
    sync.unit_backward_done(layer);
  }
}

void backward_pass(const Stage& st, int chunk, int mb, ProgramBuilder& b, TransformerOps& ops,
                   ParamSync& sync, GradSink* sink, AmaxReductions& amax) {
  b.set_context(sim::Phase::Backward, -1, mb);
  if (st.last(chunk)) {
    defer_all(b, sync.backward_deps(kHeadUnit));
    // The MTP depths, deepest first, each after its pass through the head; the shared head and
    // embedding report their gradients once: at the main head's backward, and at the first
    // stage's embedding backward when that is on this rank too (pp 1).
    for (int depth = st.mtp_layers; depth-- > 0;) {
      b.set_layer(st.layers + depth);
      ops.head_backward(nullptr, "mtp_");
      ops.mtp_backward(depth, sink, st.first(0) ? nullptr : sink);
      sync.unit_backward_done(st.layers + depth);
    }
    ops.head_backward(sink);
    sync.unit_backward_done(kHeadUnit);
  }
  layers_backward(st, chunk, ops, sync, sink);
  amax.backward_done(chunk);
  if (st.first(chunk)) {
    defer_all(b, sync.backward_deps(kEmbeddingUnit));
    ops.embedding_backward(sink);
    sync.unit_backward_done(kEmbeddingUnit);
  }
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
  std::vector<std::uint32_t> launch;
  if (auto last = b.last_compute()) launch.push_back(*last);
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
  void forward_done() { last_fwd_ = b_.last_compute(); }
  void backward_done() { last_bwd_ = b_.last_compute(); }
  /// Before a forward (backward) pass: it waits for the transfers it consumes.
  void before_forward() { take(pending_fwd_); }
  void before_backward() { take(pending_bwd_); }

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
  void take(std::vector<std::uint32_t>& pending) {
    for (std::uint32_t op : pending) b_.defer(op);
    pending.clear();
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
         " " + to_string(t.precision) + (t.fp8_recipe == Fp8Recipe::Blockwise ? "-blockwise" : "") +
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
  if (t.attention_backend != sim::AttentionKernel::Cudnn) out += std::string(" ") + sim::to_string(t.attention_backend);
  if (p.tp_comm_overlap) out += " tp-overlap";
  if (p.tp_backward_comm == TpBackwardComm::Blocking && p.tp > 1) out += " tp-bwd-blocking";
  if (p.overlap_p2p_comm) out += " p2p-overlap";
  if (p.moe_token_dispatcher == MoeDispatcher::DeepEp) out += " deepep";
  if (p.moe_shared_expert_overlap) out += " shared-overlap";
  if (p.optimizer_offload == OptimizerOffload::Cpu) out += " cpu-offload";
  return out;
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
  const auto steps = (*find_pipeline_schedule(p.schedule))(p.pp, stage, microbatches, p.vp);
  // Gradients of a model chunk are reduced during (or after) its last backward of the step.
  std::vector<std::size_t> last_backward(static_cast<std::size_t>(p.vp), steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind == StepKind::Backward) last_backward[static_cast<std::size_t>(steps[i].chunk)] = i;
  }

  sim::Program program;
  ProgramBuilder builder(program);
  TransformerOps ops(builder, spec);
  const auto sync = make_param_sync(builder, spec, stage);
  const double message_bytes = ops.pipeline_message_bytes();
  std::optional<OverlappedExchange> overlapped;
  if (p.overlap_p2p_comm) overlapped.emplace(builder);
  AmaxReductions amax(builder, spec, p.vp);
  sync->begin_step();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const ScheduleStep& step = steps[i];
    if (step.kind == StepKind::Forward) {
      if (overlapped) overlapped->before_forward();
      forward_pass(st, step.chunk, step.microbatch, builder, ops, *sync, amax);
      if (overlapped) overlapped->forward_done();
    } else if (step.kind == StepKind::Backward) {
      const bool last = i == last_backward[static_cast<std::size_t>(step.chunk)];
      if (overlapped) overlapped->before_backward();
      backward_pass(st, step.chunk, step.microbatch, builder, ops, *sync, sync->backward_sink(last),
                    amax);
      if (overlapped) overlapped->backward_done();
    } else if (overlapped) {
      overlapped->exchange(step, message_bytes);
    } else {
      pipeline_exchange(step, builder, message_bytes);
    }
  }
  sync->end_step();
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
