#include "workloads/dp_sync.hpp"

#include <algorithm>

namespace clustersim::workloads {
namespace {

// Parameters are BF16 (Megatron --bf16; also with fp8, where Transformer Engine keeps BF16
// weights and casts them per GEMM).
constexpr double kParamBytes = 2.0;
// Distributed Adam step per parameter of the local shard, in HBM bytes: read the FP32 gradient
// (4); read and write the FP32 master weight (8), first moment (8) and second moment (8);
// copy the master weight into the BF16 parameter (read 4, write 2); one more read of the FP32
// gradient for the global gradient norm of clipping (4; Megatron --clip-grad defaults to 1.0).
constexpr double kOptimizerBytesPerParam = 4 + 8 + 8 + 8 + 4 + 2 + 4;

}  // namespace

DataParallelSync::DataParallelSync(ProgramBuilder& builder, const WorkloadSpec& spec, int stage)
    : b_(builder),
      parallel_(spec.parallel),
      comm_(spec.parallel.dp > 1),
      // With overlap_grad_reduce Megatron's backward hooks launch a bucket's reduction as soon
      // as its gradients are complete, but on the first pipeline stage only: later stages
      // launch theirs after the schedule (grad_sync_func with align_grad_reduce, the default;
      // schedules.py forward_backward_pipelining_without_interleaving).
      reduce_on_ready_(spec.parallel.overlap_grad_reduce && stage == 0),
      params_(stage_parameters(spec, stage)),
      buckets_(build_grad_buckets(params_, stage_bucket_size(spec.parallel, stage),
                                  spec.parallel.distributed_optimizer, spec.parallel.dp)) {
  bucket_of_param_.resize(params_.size());
  pending_.resize(buckets_.size());
  reduce_op_.resize(buckets_.size());
  gather_op_.resize(buckets_.size());
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    for (std::size_t p : buckets_[b].params) bucket_of_param_[p] = b;
    pending_[b] = buckets_[b].params.size();
  }
  for (std::size_t p = 0; p < params_.size(); ++p) {
    params_of_[{params_[p].group, params_[p].layer}].push_back(p);
  }
}

// Gradient buffers and their reduction: FP32 with grad_reduce_in_fp32, else BF16.
double DataParallelSync::grad_bytes() const { return parallel_.grad_reduce_in_fp32 ? 4.0 : 2.0; }

std::int64_t DataParallelSync::total_numel() const {
  std::int64_t total = 0;
  for (const auto& bucket : buckets_) total += bucket.numel;
  return total;
}

void DataParallelSync::begin_step() {
  b_.set_context(sim::Phase::Optimizer, -1, -1);
  // zero_grad_buffer() at the start of train_step writes the whole local gradient buffer.
  b_.mem("zero_grad", sim::MemKernel::Elementwise, static_cast<double>(total_numel()) * grad_bytes());
  if (comm_ && parallel_.distributed_optimizer && parallel_.overlap_param_gather) {
    // All-gathers run in reverse bucket order, i.e. in forward order.
    for (std::size_t b = buckets_.size(); b-- > 0;) gather_bucket(b, sim::Stream::DpComm);
  }
}

void DataParallelSync::gather_bucket(std::size_t bucket, sim::Stream stream) {
  gather_op_[bucket] = b_.collective("dp_ag", sim::CollectiveKind::AllGather, sim::GroupKind::DP,
                                     stream, static_cast<double>(buckets_[bucket].numel) * kParamBytes);
}

std::vector<std::uint32_t> DataParallelSync::gather_deps(const std::vector<ParamGroup>& groups,
                                                         int layer) const {
  std::vector<std::uint32_t> deps;
  for (ParamGroup group : groups) {
    auto it = params_of_.find({group, layer});
    if (it == params_of_.end()) continue;
    for (std::size_t p : it->second) {
      const auto& op = gather_op_[bucket_of_param_[p]];
      if (op && std::find(deps.begin(), deps.end(), *op) == deps.end()) deps.push_back(*op);
    }
  }
  std::sort(deps.begin(), deps.end());
  return deps;
}

void DataParallelSync::launch_reduce(std::size_t bucket, sim::Stream stream,
                                     std::vector<std::uint32_t> deps) {
  // Distributed optimizer: reduce-scatter (each rank keeps its shard); else all-reduce.
  const bool scatter = parallel_.distributed_optimizer;
  reduce_op_[bucket] = b_.collective(
      scatter ? "dp_rs" : "dp_ar",
      scatter ? sim::CollectiveKind::ReduceScatter : sim::CollectiveKind::AllReduce,
      sim::GroupKind::DP, stream, static_cast<double>(buckets_[bucket].numel) * grad_bytes(),
      std::move(deps));
}

void DataParallelSync::gradient_ready(ParamGroup group, int layer, std::uint32_t op) {
  auto it = params_of_.find({group, layer});
  if (it == params_of_.end()) return;
  for (std::size_t p : it->second) {
    const std::size_t b = bucket_of_param_[p];
    if (pending_[b] == 0) continue;  // defensive: a group reported twice must not underflow
    if (--pending_[b] == 0 && comm_ && reduce_on_ready_) launch_reduce(b, sim::Stream::DpComm, {op});
  }
}

void DataParallelSync::end_step() {
  if (comm_) {
    // Not yet launched: overlapped reductions of later stages start asynchronously after the
    // schedule; without overlap_grad_reduce finalize_model_grads runs them synchronously.
    std::vector<std::uint32_t> after_schedule;
    if (auto last = b_.last_compute()) after_schedule.push_back(*last);
    const auto stream = parallel_.overlap_grad_reduce ? sim::Stream::DpComm : sim::Stream::Compute;
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      if (!reduce_op_[b]) launch_reduce(b, stream, after_schedule);
    }
  }
  b_.set_context(sim::Phase::Optimizer, -1, -1);
  std::vector<std::uint32_t> reductions;
  for (const auto& op : reduce_op_) {
    if (op) reductions.push_back(*op);
  }
  // finalize_model_grads: with SP, the gradients of TP-replicated norms and row-parallel biases
  // are all-reduced over TP (_allreduce_non_tensor_model_parallel_grads), after the DP sync.
  if (parallel_.sequence_parallel && parallel_.tp > 1) {
    std::int64_t replicated = 0;
    for (const auto& p : params_) replicated += p.sp_replicated ? p.numel : 0;
    b_.collective("tp_ar_sp_grads", sim::CollectiveKind::AllReduce, sim::GroupKind::TP,
                  sim::Stream::Compute, static_cast<double>(replicated) * grad_bytes(), reductions);
  }
  // The optimizer updates the local shard: 1/dp of the (padded) buffer with the distributed
  // optimizer, every parameter without it.
  const double shard = parallel_.distributed_optimizer
                           ? static_cast<double>(total_numel()) / parallel_.dp
                           : static_cast<double>(total_numel());
  b_.mem("optimizer", sim::MemKernel::Optimizer, shard * kOptimizerBytesPerParam, reductions);
  if (comm_ && parallel_.distributed_optimizer && !parallel_.overlap_param_gather) {
    for (std::size_t b = buckets_.size(); b-- > 0;) gather_bucket(b, sim::Stream::Compute);
  }
}

}  // namespace clustersim::workloads
