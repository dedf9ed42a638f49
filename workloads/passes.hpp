// One microbatch's forward or backward pass through one model chunk of a pipeline stage, as a
// plan of compute pieces and expert exchanges (internal to workloads/): run alone, or a
// forward and a backward together as Megatron-core's combined 1F1B runs them
// (--overlap-moe-expert-parallel-comm; docs/user-guide/features/moe_a2a_overlap.md), each
// one's exchanges on the ep_comm stream beside the other's compute.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "sim/trace.hpp"
#include "workloads/dp_sync.hpp"
#include "workloads/job_spec.hpp"
#include "workloads/program_builder.hpp"
#include "workloads/stage_layout.hpp"
#include "workloads/transformer_ops.hpp"

namespace clustersim::workloads {

/// The model chunks of one pipeline stage.
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

/// The amax reductions of Transformer Engine's delayed-scaling FP8 recipe (passes.cpp): one
/// all-reduce over the amax group when a chunk's layers end their forward, one when they end
/// their backward, sized by the chunk's FP8 GEMMs.
class AmaxReductions {
 public:
  /// Keeps a reference to `b`; reduces nothing unless `spec` runs delayed-scaling FP8.
  AmaxReductions(ProgramBuilder& b, const WorkloadSpec& spec, int chunks);
  /// Starts counting a chunk forward's FP8 GEMMs.
  void begin_forward() { count_ = 0; }
  /// Runs `emit` and counts the FP8 GEMMs it adds to the chunk forward being counted.
  void counted(const std::function<void()>& emit);
  void forward_done(int chunk);
  void backward_done(int chunk);

 private:
  void emit(const char* label, double amaxes);
  ProgramBuilder& b_;
  bool on_;
  std::vector<std::size_t> gemms_;
  std::size_t count_ = 0;
};

/// What the passes of a stage emit with.
struct PassContext {
  const Stage& stage;
  ProgramBuilder& builder;
  TransformerOps& ops;
  ParamSync& sync;
  AmaxReductions& amax;
};

/// One microbatch's pass through a chunk: compute pieces with an expert exchange between each
/// two (compute.size() == exchanges.size() + 1). An exchange takes the ops it starts after (the
/// last op of the piece before it, its tail excluded) and returns its ops, which the next
/// compute piece waits for. A piece's tail runs right after it on the compute stream without
/// gating the exchange (delayed weight gradients).
struct PassPlan {
  using Exchange = std::function<std::vector<std::uint32_t>(const std::vector<std::uint32_t>& after)>;
  sim::Phase phase = sim::Phase::Forward;
  int microbatch = 0;
  std::vector<std::vector<std::function<void()>>> compute;
  std::vector<std::vector<std::function<void()>>> tails;  ///< one list per compute piece
  std::vector<Exchange> exchanges;
  std::vector<std::uint32_t> wait;  ///< ops the first compute piece waits for (P2P receives)
};

/// The forward of microbatch `mb` through chunk `chunk`; `split` cuts its MoE layers at their
/// exchanges (TransformerOps::layer_pieces), else each layer is one piece with its exchanges
/// in line.
PassPlan forward_plan(const PassContext& c, int chunk, int mb, bool split);
/// The backward of microbatch `mb` through chunk `chunk`, its gradients told to `sink` (may be
/// null); `split` as forward_plan.
PassPlan backward_plan(const PassContext& c, int chunk, int mb, GradSink* sink, bool split);

/// The last compute op of each pass run.
struct PassEnds {
  std::optional<std::uint32_t> forward, backward;
};
/// Emits `plan` alone; returns its last compute op.
std::optional<std::uint32_t> run_pass(ProgramBuilder& b, const PassPlan& plan);
/// Emits a forward and a backward pass together in Megatron-core's combined 1F1B order: the
/// backward's first piece, then per round the forward's compute piece, the backward's
/// exchange, the forward's exchange and the backward's compute piece (for a MoE layer pair:
/// F.attn, B.combine, F.dispatch, B.experts, B.dispatch, F.experts, F.combine, B.attn).
PassEnds run_combined(ProgramBuilder& b, const PassPlan& forward, const PassPlan& backward);

}  // namespace clustersim::workloads
