// Data-parallel gradient and parameter synchronisation of one pipeline stage, as Megatron's
// DistributedDataParallel and distributed optimizer do it (internal to workloads/): gradient
// buckets reduced as the last microbatch's backward completes them, the optimizer step over
// the local shard, and the parameter all-gather (overlapped with the next step's forward).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "workloads/dp_buckets.hpp"
#include "workloads/job_spec.hpp"
#include "workloads/program_builder.hpp"
#include "workloads/transformer_ops.hpp"

namespace clustersim::workloads {

/// Emits the data-parallel ops of one stage's program.
class DataParallelSync : public GradSink {
 public:
  /// Keeps a reference to `builder`.
  DataParallelSync(ProgramBuilder& builder, const WorkloadSpec& spec, int stage);

  /// Ops at the start of the program: zeroing of the gradient buffer and, with
  /// overlap_param_gather, the parameter all-gathers (last step's update) in forward order.
  void begin_step();
  /// Parameter all-gathers that the first forward touching (`groups`, `layer`) waits for.
  std::vector<std::uint32_t> gather_deps(const std::vector<ParamGroup>& groups, int layer) const;
  /// Gradient of (`group`, `layer`) complete at `op`; launches the buckets it completes when
  /// gradient reduction overlaps the backward on this stage.
  void gradient_ready(ParamGroup group, int layer, std::uint32_t op) override;
  /// Ops after the pipeline schedule: the remaining gradient reductions, the all-reduce of
  /// sequence-parallel gradients over TP, the optimizer step, non-overlapped all-gathers.
  void end_step();

  /// The stage's gradient buckets (bucket order: end of the model first).
  const std::vector<GradBucket>& buckets() const { return buckets_; }

 private:
  double grad_bytes() const;
  void launch_reduce(std::size_t bucket, sim::Stream stream, std::vector<std::uint32_t> deps);
  void gather_bucket(std::size_t bucket, sim::Stream stream);
  std::int64_t total_numel() const;

  ProgramBuilder& b_;
  const ParallelSpec parallel_;
  const bool comm_;               ///< dp > 1
  const bool reduce_on_ready_;    ///< bucket reductions launched by backward hooks
  std::vector<ParamInfo> params_;
  std::vector<GradBucket> buckets_;
  std::map<std::pair<ParamGroup, int>, std::vector<std::size_t>> params_of_;
  std::vector<std::size_t> bucket_of_param_;
  std::vector<std::size_t> pending_;  ///< per bucket: parameters still without gradient
  std::vector<std::optional<std::uint32_t>> reduce_op_;
  std::vector<std::optional<std::uint32_t>> gather_op_;
};

}  // namespace clustersim::workloads
