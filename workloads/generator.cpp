#include "workloads/generator.hpp"

#include <stdexcept>
#include <string>

#include "workloads/dp_sync.hpp"
#include "workloads/flops.hpp"
#include "workloads/program_builder.hpp"
#include "workloads/schedule.hpp"
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
  require(m.layers > 0 && m.hidden > 0 && m.ffn > 0 && m.heads > 0 && m.kv_heads > 0 &&
              m.head_dim > 0 && m.vocab > 0,
          "model sizes must be positive");
  require(p.tp > 0 && p.pp > 0 && p.dp > 0 && p.cp == 1, "tp, pp, dp >= 1 and cp == 1");
  require(t.seq_length > 0 && t.micro_batch_size > 0 && t.global_batch_size > 0,
          "batch sizes must be positive");
  require(m.heads % p.tp == 0 && m.kv_heads % p.tp == 0 && m.ffn % p.tp == 0,
          "heads, kv_heads and ffn must be divisible by tp");
  require(m.heads % m.kv_heads == 0, "heads must be a multiple of kv_heads");
  require(m.layers % p.pp == 0, "layers must be divisible by pp");
  require(t.global_batch_size % (std::int64_t{p.dp} * t.micro_batch_size) == 0,
          "global_batch_size must be divisible by dp * micro_batch_size");
  require(!(p.sequence_parallel && p.tp > 1) || t.seq_length % p.tp == 0,
          "seq_length must be divisible by tp with sequence parallelism");
  require(m.position != PositionKind::Learned || t.seq_length <= m.max_position_embeddings,
          "seq_length exceeds max_position_embeddings");
  require(find_pipeline_schedule(p.schedule) != nullptr, "unknown schedule '" + p.schedule + "'");
}

struct Stage {
  int index = 0;
  bool first = false;
  bool last = false;
  int layer_begin = 0;
  int layer_end = 0;
};

// The parameter groups a part of the model reads in its forward.
const std::vector<ParamGroup> kEmbeddingGroups = {ParamGroup::WordEmbedding,
                                                  ParamGroup::PositionEmbedding};
const std::vector<ParamGroup> kLayerGroups = {ParamGroup::Norm1, ParamGroup::Qkv, ParamGroup::Proj,
                                              ParamGroup::Norm2, ParamGroup::Fc1, ParamGroup::Fc2};
// With tied embeddings on a single stage the head reads the word embedding.
const std::vector<ParamGroup> kHeadGroups = {ParamGroup::FinalNorm, ParamGroup::OutputHead,
                                             ParamGroup::WordEmbedding};

// The first microbatch's forward waits for the parameter all-gathers of what it reads.
void forward_pass(const Stage& st, int mb, ProgramBuilder& b, TransformerOps& ops,
                  const DataParallelSync& dp) {
  b.set_context(sim::Phase::Forward, -1, mb);
  const bool first_mb = mb == 0;
  auto deps = [&](const std::vector<ParamGroup>& groups, int layer) {
    return first_mb ? dp.gather_deps(groups, layer) : std::vector<std::uint32_t>{};
  };
  if (st.first) ops.embedding_forward(deps(kEmbeddingGroups, -1));
  for (int layer = st.layer_begin; layer < st.layer_end; ++layer) {
    ops.layer_forward(layer, deps(kLayerGroups, layer));
  }
  if (st.last) ops.head_forward(deps(kHeadGroups, -1));
}

void backward_pass(const Stage& st, int mb, ProgramBuilder& b, TransformerOps& ops, GradSink* sink) {
  b.set_context(sim::Phase::Backward, -1, mb);
  if (st.last) ops.head_backward(sink);
  for (int layer = st.layer_end; layer-- > st.layer_begin;) ops.layer_backward(layer, sink);
  if (st.first) ops.embedding_backward(sink);
}

// A Megatron p2p_communication call as one batched exchange; calls without a peer at the ends
// of the pipeline emit nothing.
void pipeline_exchange(const Stage& st, const ScheduleStep& step, ProgramBuilder& b, double bytes) {
  using sim::Peer;
  Peer send = Peer::None;
  Peer recv = Peer::None;
  const char* label = "";
  bool forward = true;
  switch (step.kind) {
    case StepKind::RecvForward:
      label = "pp_recv_fwd";
      if (!st.first) recv = Peer::PrevStage;
      break;
    case StepKind::SendForward:
      label = "pp_send_fwd";
      if (!st.last) send = Peer::NextStage;
      break;
    case StepKind::SendForwardRecvBackward:
      label = "pp_send_fwd_recv_bwd";
      if (!st.last) send = recv = Peer::NextStage;
      break;
    case StepKind::SendBackwardRecvForward:
      label = "pp_send_bwd_recv_fwd";
      forward = false;
      if (!st.first) send = recv = Peer::PrevStage;
      break;
    case StepKind::RecvBackward:
      label = "pp_recv_bwd";
      forward = false;
      if (!st.last) recv = Peer::NextStage;
      break;
    case StepKind::SendBackward:
      label = "pp_send_bwd";
      forward = false;
      if (!st.first) send = Peer::PrevStage;
      break;
    case StepKind::Forward:
    case StepKind::Backward:
      return;
  }
  if (send == Peer::None && recv == Peer::None) return;
  const int mb = step.microbatch >= 0 ? step.microbatch : step.recv_microbatch;
  b.set_context(forward ? sim::Phase::Forward : sim::Phase::Backward, -1, mb);
  b.p2p(label, send, recv, bytes);
}

std::string describe(const WorkloadSpec& w) {
  const ParallelSpec& p = w.parallel;
  const TrainingSpec& t = w.training;
  std::string out = w.model.name + " tp" + std::to_string(p.tp) + " pp" + std::to_string(p.pp) +
                    " dp" + std::to_string(p.dp) + (p.sequence_parallel ? " sp" : "") + " mbs" +
                    std::to_string(t.micro_batch_size) + " gbs" +
                    std::to_string(t.global_batch_size) + " seq" + std::to_string(t.seq_length) +
                    " " + to_string(t.precision) + " " + p.schedule;
  if (p.dp > 1) out += p.distributed_optimizer ? " distopt" : " ddp";
  return out;
}

}  // namespace

sim::Program generate_stage_program(const WorkloadSpec& spec, int stage) {
  check_spec(spec);
  const int pp = spec.parallel.pp;
  if (stage < 0 || stage >= pp) throw std::invalid_argument("stage out of range");
  const int per_stage = static_cast<int>(spec.model.layers / pp);
  const Stage st{stage, stage == 0, stage == pp - 1, stage * per_stage, (stage + 1) * per_stage};
  const int microbatches = static_cast<int>(spec.num_microbatches());
  const auto steps = (*find_pipeline_schedule(spec.parallel.schedule))(pp, stage, microbatches);
  // Gradients are reduced during the last backward pass of the step.
  std::size_t last_backward = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind == StepKind::Backward) last_backward = i;
  }

  sim::Program program;
  ProgramBuilder builder(program);
  TransformerOps ops(builder, spec);
  DataParallelSync dp(builder, spec, stage);
  const double message_bytes = ops.pipeline_message_bytes();
  dp.begin_step();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const ScheduleStep& step = steps[i];
    if (step.kind == StepKind::Forward) {
      forward_pass(st, step.microbatch, builder, ops, dp);
    } else if (step.kind == StepKind::Backward) {
      backward_pass(st, step.microbatch, builder, ops, i == last_backward ? &dp : nullptr);
    } else {
      pipeline_exchange(st, step, builder, message_bytes);
    }
  }
  dp.end_step();
  return program;
}

sim::Workload generate_workload(const WorkloadSpec& spec) {
  check_spec(spec);
  const ParallelSpec& p = spec.parallel;
  sim::Workload workload;
  workload.layout = sim::RankLayout(p.tp, p.cp, p.dp, p.pp);
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
  auto& acc = workload.accounting;
  acc.tokens = samples * static_cast<double>(spec.training.seq_length);
  acc.mfu_convention = to_string(MfuConvention::Megatron);
  acc.model_flops =
      samples * model_flops_per_sample(spec.model, spec.training.seq_length, MfuConvention::Megatron);
  acc.hardware_flops =
      samples * hardware_flops_per_sample(spec.model, spec.training.seq_length, p.tp);
  acc.peak_flops_per_gpu = 0.0;
  workload.description = describe(spec);
  return workload;
}

}  // namespace clustersim::workloads
