#include "workloads/dp_sync.hpp"

#include <algorithm>

#include "workloads/flops.hpp"
#include "workloads/stage_layout.hpp"

namespace clustersim::workloads {
namespace {

// Parameters are BF16 (Megatron --bf16; also with fp8, where Transformer Engine keeps BF16
// weights and casts them per GEMM).
constexpr double kParamBytes = 2.0;
// FP8 parameters (fp8_param_gather, Transformer Engine fp8_model_init): 1 B per element.
constexpr double kFp8ParamBytes = 1.0;
// Distributed Adam step per parameter of the local shard, in HBM bytes: read the FP32 gradient
// (4); read and write the FP32 master weight (8), first moment (8) and second moment (8);
// copy the master weight into the BF16 parameter (read 4, write 2); one more read of the FP32
// gradient for the global gradient norm of clipping (4; Megatron --clip-grad defaults to 1.0).
constexpr double kOptimizerBytesPerParam = 4 + 8 + 8 + 8 + 4 + 2 + 4;
// The same step with the precision-aware optimizer (Transformer Engine FusedAdam,
// store_param_remainders): the FP32 master is rebuilt from the BF16 parameter and its 16-bit
// remainder, both read and written in place (2 + 2 each way), so no separate copy into the
// BF16 parameter: gradient 4, parameter + remainder 8, moments 16, gradient norm 4.
constexpr double kOptimizerBytesPerParamRemainders = 4 + 8 + 8 + 8 + 4;
// PyTorch FSDP2's AdamW steps the FP32 parameter shard in place: read the FP32 gradient shard
// (4), read and write the parameter, first and second moment (24); no copy into BF16 parameters
// (the all-gather casts them); one more read of the gradient for clip_grad_norm_ (4).
constexpr double kFsdp2OptimizerBytesPerParam = 4 + 8 + 8 + 8 + 4;
// DeepSpeed ZeRO-3 with offload_optimizer: cpu, read in deepspeed/runtime/zero/stage3.py
// (2026-11-30). Per parameter of the rank's partition, in the backward (partition_grads): the
// BF16 gradient is copied into a pinned BF16 host buffer and back (2 B each way), its FP64
// norm is taken on the GPU (_constant_buffered_norm2: read 2, write and read 8 + 8), it is cast
// to FP32 on the GPU (read 2, write 4) and copied blocking into the pinned FP32 host gradient
// (4 B). In step(): unscale_and_clip_grads multiplies that gradient in place on the CPU (8 B);
// DeepSpeedCPUAdam reads the FP32 gradient and reads and writes the FP32 master weight and both
// moments (28 B; no BF16 copy is written); _reassign_or_swap_out_partitioned_parameters copies
// the pageable FP32 master into the GPU's BF16 partition, a blocking copy_ whose cast PyTorch
// does on the host (read 4, write 2) before a pageable host-to-device copy of 2 B.
constexpr double kOffloadGradPinnedBytes = 2.0;
constexpr double kOffloadGradGpuBytes = (2 + 8 + 8) + (2 + 4);
constexpr double kOffloadGradFp32Bytes = 4.0;
constexpr double kHostClipBytesPerParam = 8.0;
constexpr double kHostAdamBytesPerParam = 28.0;
constexpr double kHostCastBytesPerParam = 4 + 2;
constexpr double kParamH2dBytesPerParam = 2.0;

const std::vector<ParamGroup> kEmbeddingGroups = {ParamGroup::WordEmbedding,
                                                  ParamGroup::PositionEmbedding};
const std::vector<ParamGroup> kLayerGroups = {
    ParamGroup::Norm1,  ParamGroup::Qkv,       ParamGroup::Proj,      ParamGroup::Norm2,
    ParamGroup::Fc1,    ParamGroup::Fc2,       ParamGroup::Router,    ParamGroup::ExpertFc1,
    ParamGroup::ExpertFc2, ParamGroup::SharedFc1, ParamGroup::SharedFc2, ParamGroup::Mtp};
// With tied embeddings on a single stage the head reads the word embedding.
const std::vector<ParamGroup> kHeadGroups = {ParamGroup::FinalNorm, ParamGroup::OutputHead,
                                             ParamGroup::WordEmbedding};

// The model chunk (0 .. vp-1) each parameter of `stage` belongs to: its layer's chunk; the
// first stage's embedding the first chunk; the final norm, the head, the MTP depths and the
// last stage's embedding copy the last chunk (Megatron builds them with the first and the
// last virtual stage).
std::vector<int> chunk_of_params(const WorkloadSpec& spec, int stage, const std::vector<ParamInfo>& params) {
  const std::vector<LayerRange> chunks = stage_chunks(spec.model, spec.parallel, stage);
  const int last = static_cast<int>(chunks.size()) - 1;
  std::vector<int> out;
  out.reserve(params.size());
  for (const auto& p : params) {
    int chunk = last;
    if (p.layer < 0) {
      const bool embedding = p.group == ParamGroup::WordEmbedding || p.group == ParamGroup::PositionEmbedding;
      if (embedding && stage == 0) chunk = 0;
    } else {
      for (int c = 0; c <= last; ++c) {
        if (p.layer >= chunks[c].begin && p.layer < chunks[c].end) chunk = c;
      }
    }
    out.push_back(chunk);
  }
  return out;
}

}  // namespace

sim::GroupKind dense_grad_group(const WorkloadSpec& spec) {
  return spec.parallel.cp > 1 ? sim::GroupKind::DPCP : sim::GroupKind::DP;
}

StageParamCount count_params(const std::vector<ParamInfo>& params) {
  StageParamCount c;
  for (const auto& p : params) (p.expert ? c.expert : c.dense) += static_cast<double>(p.numel);
  return c;
}

std::uint32_t emit_grad_offload(ProgramBuilder& b, double params, std::vector<std::uint32_t> deps) {
  b.mem("grad_d2h_bf16", sim::MemKernel::HostCopy, params * kOffloadGradPinnedBytes, std::move(deps));
  b.mem("grad_h2d_bf16", sim::MemKernel::HostCopy, params * kOffloadGradPinnedBytes);
  b.mem("grad_norm_cast", sim::MemKernel::Elementwise, params * kOffloadGradGpuBytes);
  return b.mem("grad_d2h_fp32", sim::MemKernel::HostCopy, params * kOffloadGradFp32Bytes);
}

void emit_optimizer_step(ProgramBuilder& b, const WorkloadSpec& spec, double shard_params,
                         std::vector<std::uint32_t> deps, bool grads_on_host) {
  b.set_context(sim::Phase::Optimizer, -1, -1);
  if (spec.parallel.optimizer_offload == OptimizerOffload::Cpu) {
    if (!grads_on_host) deps = {emit_grad_offload(b, shard_params, std::move(deps))};
    const sim::HostThreads threads = spec.parallel.offload_threads;
    b.host("host_grad_clip", sim::MemKernel::HostElementwise, threads,
           shard_params * kHostClipBytesPerParam, std::move(deps));
    b.host("host_adam", sim::MemKernel::HostOptimizer, threads, shard_params * kHostAdamBytesPerParam);
    b.host("host_param_cast", sim::MemKernel::HostCast, threads, shard_params * kHostCastBytesPerParam);
    b.host("param_h2d", sim::MemKernel::HostCopyPageable, threads,
           shard_params * kParamH2dBytesPerParam);
    return;
  }
  const bool fsdp2 = spec.parallel.zero_stage == 3 && spec.parallel.zero_impl == ZeroImpl::Fsdp2;
  const double per_param = fsdp2                             ? kFsdp2OptimizerBytesPerParam
                           : optimizer_param_remainders(spec) ? kOptimizerBytesPerParamRemainders
                                                              : kOptimizerBytesPerParam;
  b.mem("optimizer", sim::MemKernel::Optimizer, shard_params * per_param, std::move(deps));
}

DataParallelSync::DataParallelSync(ProgramBuilder& builder, const WorkloadSpec& spec, int stage)
    : b_(builder),
      spec_(spec),
      parallel_(spec.parallel),
      stage_(stage),
      // With overlap_grad_reduce Megatron's backward hooks launch a bucket's reduction as soon
      // as its gradients are complete, but without interleaving on the first pipeline stage
      // only: later stages launch theirs after the schedule (grad_sync_func with
      // align_grad_reduce, the default). The interleaved schedule launches each model chunk's
      // reduction as a whole, `stage` backward steps after the chunk's last backward
      // (chunk_grads_ready); ZeRO-2 reduces every microbatch.
      reduce_on_ready_((spec.parallel.overlap_grad_reduce && stage == 0 && spec.parallel.vp == 1) ||
                       spec.parallel.zero_stage == 2),
      params_(stage_parameters(spec, stage)) {
  // Megatron wraps each model chunk in its own DistributedDataParallel, with its own dense and
  // expert gradient buffers (training.py get_model), so buckets never span chunks, and turns
  // bucketing off for every chunk after the first (disable_bucketing=model_chunk_idx > 0).
  // Chunks are added last first, so that the reverse bucket order is the forward order.
  const std::vector<int> chunk_of = chunk_of_params(spec, stage, params_);
  for (int chunk = spec.parallel.vp; chunk-- > 0;) {
    std::vector<std::size_t> dense, expert;
    for (std::size_t p = 0; p < params_.size(); ++p) {
      if (chunk_of[p] == chunk) (params_[p].expert ? expert : dense).push_back(p);
    }
    // ZeRO-2 (DeepSpeed's or FSDP's reduction every microbatch) keeps its buckets in every chunk.
    const bool bucketed = chunk == 0 || parallel_.zero_stage == 2;
    const auto size = bucketed ? stage_bucket_size(parallel_, stage_) : std::nullopt;
    add_buckets(dense, dense_grad_group(spec), spec.dp_cp(), size);
    add_buckets(expert, sim::GroupKind::EDP, spec.edp(), size);
    bucket_chunk_.resize(buckets_.size(), chunk);
  }
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

void DataParallelSync::add_buckets(const std::vector<std::size_t>& members, sim::GroupKind group,
                                   int size, std::optional<std::int64_t> bucket_size) {
  if (members.empty()) return;
  std::vector<ParamInfo> subset;
  for (std::size_t p : members) subset.push_back(params_[p]);
  auto built = build_grad_buckets(subset, bucket_size, parallel_.distributed_optimizer, size);
  for (auto& bucket : built) {
    for (auto& p : bucket.params) p = members[p];
    buckets_.push_back(std::move(bucket));
    bucket_group_.push_back(group);
    bucket_dp_.push_back(size);
  }
}

// Gradient buffers and their reduction: FP32 with grad_reduce_in_fp32, else BF16.
double DataParallelSync::grad_bytes() const { return parallel_.grad_reduce_in_fp32 ? 4.0 : 2.0; }

double DataParallelSync::shard_numel() const {
  double total = 0.0;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    const double n = static_cast<double>(buckets_[b].numel);
    total += parallel_.distributed_optimizer ? n / bucket_dp_[b] : n;
  }
  return total;
}

void DataParallelSync::begin_step() {
  b_.set_context(sim::Phase::Optimizer, -1, -1);
  double numel = 0.0;
  for (const auto& bucket : buckets_) numel += static_cast<double>(bucket.numel);
  // zero_grad_buffer() at the start of train_step writes the whole local gradient buffer.
  b_.mem("zero_grad", sim::MemKernel::Elementwise, numel * grad_bytes());
  if (parallel_.distributed_optimizer && parallel_.overlap_param_gather) {
    // All-gathers run in reverse bucket order, i.e. in forward order.
    for (std::size_t b = buckets_.size(); b-- > 0;) gather_bucket(b, sim::Stream::DpComm);
  }
}

void DataParallelSync::gather_bucket(std::size_t bucket, sim::Stream stream) {
  if (bucket_dp_[bucket] <= 1) return;
  // With fp8_param_gather the layer GEMM weights are FP8 parameters, gathered as 1 B each.
  double fp8 = 0.0;
  if (parallel_.fp8_param_gather) {
    for (std::size_t p : buckets_[bucket].params) {
      if (is_linear_weight(params_[p])) fp8 += static_cast<double>(params_[p].numel);
    }
  }
  const double bf16 = static_cast<double>(buckets_[bucket].numel) - fp8;
  gather_op_[bucket] = b_.collective("dp_ag", sim::CollectiveKind::AllGather, bucket_group_[bucket],
                                     stream, bf16 * kParamBytes + fp8 * kFp8ParamBytes);
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

std::vector<std::uint32_t> DataParallelSync::forward_deps(int unit, int microbatch) {
  if (microbatch != 0) return {};
  if (unit == kEmbeddingUnit) return gather_deps(kEmbeddingGroups, -1);
  if (unit == kHeadUnit) return gather_deps(kHeadGroups, -1);
  return gather_deps(kLayerGroups, unit);
}

GradSink* DataParallelSync::backward_sink(bool last_of_chunk) {
  return (last_of_chunk || parallel_.zero_stage == 2) ? this : nullptr;
}

void DataParallelSync::launch_reduce(std::size_t bucket, sim::Stream stream,
                                     std::vector<std::uint32_t> deps) {
  if (bucket_dp_[bucket] <= 1) return;
  const double bytes = static_cast<double>(buckets_[bucket].numel) * grad_bytes();
  // The bucket is scaled by 1/dp on the compute stream before its reduction: Megatron's
  // start_grad_sync (bucket.grad_data *= gradient_scaling_factor; average_in_collective is off
  // by default), PyTorch DDP's default all-reduce hook (div_ by the group size) and DeepSpeed's
  // average_tensor alike. One read and one write of the bucket.
  const std::uint32_t scaled =
      b_.mem("dp_grad_scale", sim::MemKernel::Elementwise, 2.0 * bytes, std::move(deps));
  // Distributed optimizer: reduce-scatter (each rank keeps its shard); else all-reduce.
  const bool scatter = parallel_.distributed_optimizer;
  reduce_op_[bucket] = b_.collective(
      scatter ? "dp_rs" : "dp_ar",
      scatter ? sim::CollectiveKind::ReduceScatter : sim::CollectiveKind::AllReduce,
      bucket_group_[bucket], stream, bytes, {scaled});
}

void DataParallelSync::gradient_ready(ParamGroup group, int layer, std::uint32_t op) {
  auto it = params_of_.find({group, layer});
  if (it == params_of_.end()) return;
  for (std::size_t p : it->second) {
    const std::size_t b = bucket_of_param_[p];
    if (pending_[b] == 0) continue;  // defensive: a group reported twice must not underflow
    if (--pending_[b] == 0 && reduce_on_ready_) {
      const auto stream = parallel_.overlap_grad_reduce ? sim::Stream::DpComm : sim::Stream::Compute;
      launch_reduce(b, stream, {op});
      pending_[b] = buckets_[b].params.size();  // re-armed for the next microbatch (ZeRO-2)
    }
  }
}

void DataParallelSync::chunk_grads_ready(int chunk) {
  // Megatron's interleaved schedule (backward_step_helper, align_grad_reduce): after the
  // backward of virtual microbatch k, grad_sync_func launches the whole reduction of the chunk
  // whose last microbatch is k - pipeline rank, so that the stages launch theirs together.
  if (!parallel_.overlap_grad_reduce || parallel_.vp == 1 || parallel_.zero_stage == 2) return;
  const std::vector<std::uint32_t> after = b_.after_last_compute();
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (bucket_chunk_[b] == chunk && !reduce_op_[b]) launch_reduce(b, sim::Stream::DpComm, after);
  }
}

void DataParallelSync::end_step() {
  // Not yet launched: overlapped reductions of later stages start asynchronously after the
  // schedule; without overlap_grad_reduce finalize_model_grads runs them synchronously.
  std::vector<std::uint32_t> after_schedule = b_.after_last_compute();
  const auto stream = parallel_.overlap_grad_reduce ? sim::Stream::DpComm : sim::Stream::Compute;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (!reduce_op_[b]) launch_reduce(b, stream, after_schedule);
  }
  b_.set_context(sim::Phase::Optimizer, -1, -1);
  std::vector<std::uint32_t> reductions;
  for (const auto& op : reduce_op_) {
    if (op) reductions.push_back(*op);
  }
  // finalize_model_grads: with SP, the gradients of TP-replicated norms and row-parallel biases
  // are all-reduced over TP (_allreduce_non_tensor_model_parallel_grads), after the DP sync;
  // without SP those of qk_layernorm's norms (_allreduce_layernorm_grads, by name).
  if (const std::int64_t replicated = tp_allreduced_numel(params_, parallel_); replicated > 0) {
    reductions.push_back(b_.collective("tp_ar_sp_grads", sim::CollectiveKind::AllReduce,
                                       sim::GroupKind::TP, sim::Stream::Compute,
                                       static_cast<double>(replicated) * grad_bytes(), reductions));
  }
  // Tied word embedding, or the MTP's copy of it, with pipelining: its gradient is summed over
  // the first and last stage (Megatron _allreduce_word_embedding_grads, over the embedding
  // group).
  const ModelSpec& m = spec_.model;
  if (m.embedding_on_last_stage() && parallel_.pp > 1 && (stage_ == 0 || stage_ == parallel_.pp - 1)) {
    const double rows = static_cast<double>(padded_vocab(m.vocab, parallel_.tp) / parallel_.tp);
    reductions.push_back(b_.collective("emb_ar", sim::CollectiveKind::AllReduce, sim::GroupKind::EMB,
                                       sim::Stream::Compute, rows * static_cast<double>(m.hidden) *
                                                                 grad_bytes(),
                                       reductions));
  }
  emit_optimizer_step(b_, spec_, shard_numel(), reductions);
  if (parallel_.distributed_optimizer && !parallel_.overlap_param_gather) {
    for (std::size_t b = buckets_.size(); b-- > 0;) gather_bucket(b, sim::Stream::Compute);
  }
}

}  // namespace clustersim::workloads
