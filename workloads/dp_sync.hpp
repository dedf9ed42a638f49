// Data-parallel synchronisation of one pipeline stage (internal to workloads/): the parameter
// and gradient traffic of DDP, of Megatron's distributed optimizer (ZeRO-1), of ZeRO-2
// (gradients reduce-scattered every microbatch and kept sharded) and of ZeRO-3 / FSDP
// (parameters gathered per layer in forward and again in backward, one layer ahead), with the
// optimizer step on the GPU or offloaded to the host. The generator calls the hooks of a
// ParamSync around the model parts it emits.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "workloads/dp_buckets.hpp"
#include "workloads/job_spec.hpp"
#include "workloads/program_builder.hpp"
#include "workloads/transformer_ops.hpp"

namespace clustersim::workloads {

/// Unit ids for the hooks: a transformer layer's global index, or one of these.
inline constexpr int kEmbeddingUnit = -1;
inline constexpr int kHeadUnit = -2;

/// Hooks of the data-parallel synchronisation of one stage.
class ParamSync : public GradSink {
 public:
  /// Ops at the start of the program (gradient zeroing, parameter all-gathers of ZeRO-1/2).
  virtual void begin_step() = 0;
  /// Ops the first op of `unit` waits for in the forward of `microbatch` (may emit gathers).
  virtual std::vector<std::uint32_t> forward_deps(int unit, int microbatch) = 0;
  /// Ops the backward of `unit` waits for (ZeRO-3 re-gathers the parameters).
  virtual std::vector<std::uint32_t> backward_deps(int unit) = 0;
  /// Called after the backward of `unit` (ZeRO-3 reduce-scatters its gradients).
  virtual void unit_backward_done(int unit) = 0;
  /// The sink for a backward pass (null when its gradients are not reduced yet);
  /// `last_of_chunk`: the last microbatch's backward through that model chunk.
  virtual GradSink* backward_sink(bool last_of_chunk) = 0;
  /// Called after the backward step that Megatron's interleaved schedule launches model
  /// chunk `chunk`'s gradient reduction after (align_grad_reduce: `stage` backward steps
  /// after the chunk's last backward); later ones are launched by end_step.
  virtual void chunk_grads_ready(int /*chunk*/) {}
  /// Ops after the pipeline schedule: remaining reductions, the TP all-reduce of
  /// sequence-parallel gradients, the tied-embedding all-reduce, the optimizer step, gathers.
  virtual void end_step() = 0;
};

/// The synchronisation for the spec's ZeRO stage. Keeps a reference to `builder`.
std::unique_ptr<ParamSync> make_param_sync(ProgramBuilder& builder, const WorkloadSpec& spec, int stage);

/// Bucketed data-parallel synchronisation for ZeRO stages 0-2 (Megatron DistributedDataParallel
/// with or without the distributed optimizer).
class DataParallelSync : public ParamSync {
 public:
  /// Keeps a reference to `builder`.
  DataParallelSync(ProgramBuilder& builder, const WorkloadSpec& spec, int stage);

  void begin_step() override;
  std::vector<std::uint32_t> forward_deps(int unit, int microbatch) override;
  std::vector<std::uint32_t> backward_deps(int /*unit*/) override { return {}; }
  void unit_backward_done(int /*unit*/) override {}
  GradSink* backward_sink(bool last_of_chunk) override;
  void gradient_ready(ParamGroup group, int layer, std::uint32_t op) override;
  void chunk_grads_ready(int chunk) override;
  void end_step() override;

  /// Parameter all-gathers that the first forward touching (`groups`, `layer`) waits for.
  std::vector<std::uint32_t> gather_deps(const std::vector<ParamGroup>& groups, int layer) const;
  /// The stage's gradient buckets, model chunk by chunk from the last (each chunk's dense
  /// buckets first, each list in bucket order: end of the model first), with the communicator
  /// each is reduced over.
  const std::vector<GradBucket>& buckets() const { return buckets_; }
  /// Communicator of bucket `b`.
  sim::GroupKind bucket_group(std::size_t b) const { return bucket_group_[b]; }

 private:
  double grad_bytes() const;
  void add_buckets(const std::vector<std::size_t>& members, sim::GroupKind group, int size,
                   std::optional<std::int64_t> bucket_size);
  void launch_reduce(std::size_t bucket, sim::Stream stream, std::vector<std::uint32_t> deps);
  void gather_bucket(std::size_t bucket, sim::Stream stream);
  double shard_numel() const;

  ProgramBuilder& b_;
  const WorkloadSpec spec_;
  const ParallelSpec parallel_;
  const int stage_;
  const bool reduce_on_ready_;    ///< bucket reductions launched by backward hooks
  std::vector<ParamInfo> params_;
  std::vector<GradBucket> buckets_;          ///< params are indices into params_
  std::vector<sim::GroupKind> bucket_group_;
  std::vector<int> bucket_dp_;               ///< size of the bucket's communicator
  std::vector<int> bucket_chunk_;            ///< model chunk of the bucket
  std::map<std::pair<ParamGroup, int>, std::vector<std::size_t>> params_of_;
  std::vector<std::size_t> bucket_of_param_;
  std::vector<std::size_t> pending_;  ///< per bucket: parameters still without gradient
  std::vector<std::optional<std::uint32_t>> reduce_op_;
  std::vector<std::optional<std::uint32_t>> gather_op_;
};

/// Emits the optimizer step over `shard_params` parameters after `deps`: Adam on the GPU, or
/// with CPU offload DeepSpeed's host step (gradient clip, CPU Adam, the FP32 -> BF16 cast and
/// the pageable copy of the parameters back; docs/trace-format.md), preceded by the gradient
/// copies to the host unless `grads_on_host` (ZeRO-3 copies them per unit in the backward).
void emit_optimizer_step(ProgramBuilder& builder, const WorkloadSpec& spec, double shard_params,
                         std::vector<std::uint32_t> deps, bool grads_on_host = false);

/// DeepSpeed ZeRO-3's offload of a reduced gradient partition of `params` elements after
/// `deps` (partition_grads): BF16 round trip through a pinned host buffer, the partition's
/// FP64 norm and FP32 cast on the GPU, the blocking FP32 copy into the host's gradient. Runs in
/// the compute stream's order: the host waits for each copy before it issues more work.
/// Returns the last op.
std::uint32_t emit_grad_offload(ProgramBuilder& builder, double params,
                                std::vector<std::uint32_t> deps);

/// Parameters of the stage: total elements on this rank, dense and routed-expert parts.
struct StageParamCount {
  double dense = 0.0;
  double expert = 0.0;
};
/// Counts `params` by dense/expert.
StageParamCount count_params(const std::vector<ParamInfo>& params);

/// The communicator over which dense gradients are reduced: DP, or DPCP with context
/// parallelism (Megatron's data-parallel group with context parallel ranks).
sim::GroupKind dense_grad_group(const WorkloadSpec& spec);

}  // namespace clustersim::workloads
