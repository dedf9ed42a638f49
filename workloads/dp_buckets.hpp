// The parameters one rank holds for its pipeline stage (after tensor-parallel sharding), in
// Megatron's registration order, and their grouping into the gradient buckets of Megatron's
// DistributedDataParallel (megatron/core/distributed/param_and_grad_buffer.py): buckets are
// filled from the end of the model backwards, closed once they reach the bucket size, and
// padded for the distributed optimizer.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "workloads/job_spec.hpp"

namespace clustersim::workloads {

/// Which weights a parameter belongs to; with its layer it names the op producing its gradient.
enum class ParamGroup : std::uint8_t {
  WordEmbedding,      ///< vocab-parallel word embedding (first stage)
  PositionEmbedding,  ///< learned position table (first stage, replicated over TP)
  Norm1,              ///< pre-attention norm (fused into the QKV linear by Transformer Engine)
  Qkv,                ///< QKV projection (column parallel); with MLA all of the q/kv down and
                      ///< up projections and their norms
  Proj,               ///< attention output projection (row parallel)
  Norm2,              ///< pre-MLP norm
  Fc1,                ///< MLP up (and gate) projection (column parallel)
  Fc2,                ///< MLP down projection (row parallel)
  Router,             ///< MoE router (replicated over TP, sequence-parallel gradient)
  ExpertFc1,          ///< routed experts' up (and gate) projections (expert parallel)
  ExpertFc2,          ///< routed experts' down projections (expert parallel)
  SharedFc1,          ///< shared experts' up projection (column parallel)
  SharedFc2,          ///< shared experts' down projection (row parallel)
  FinalNorm,          ///< final norm (last stage)
  OutputHead,         ///< vocab-parallel output layer (last stage; absent when tied and pp == 1)
  Mtp                 ///< a multi-token-prediction depth's norms (enorm, hnorm, final) and its
                      ///< eh_proj (column parallel), at the depth's layer index (last stage)
};

/// One parameter tensor on one rank.
struct ParamInfo {
  ParamGroup group = ParamGroup::Qkv;
  int layer = -1;               ///< global layer index; -1 outside transformer layers
  std::int64_t numel = 0;       ///< elements on this rank
  bool sp_replicated = false;   ///< replicated over TP with sequence-parallel gradients (norms,
                                ///< row-parallel biases): all-reduced over TP before the optimizer
  bool shared_embedding = false;  ///< embedding copy on the first/last stage when pp > 1 (tied
                                  ///< embeddings, or the MTP's embedding on the last stage)
  bool expert = false;          ///< routed-expert weight: reduced over the expert-data-parallel
                                ///< group, held by 1/ep of the ranks
  bool qk_norm = false;         ///< a qk_layernorm weight or bias: all-reduced over TP by name,
                                ///< with or without sequence parallelism
};

/// Elements of `params` whose gradients finalize_model_grads all-reduces over TP
/// (Megatron-core _allreduce_layernorm_grads): with sequence parallelism every sp_replicated
/// parameter, without it the qk_layernorm norms alone (matched by name there); none at tp 1.
std::int64_t tp_allreduced_numel(const std::vector<ParamInfo>& params, const ParallelSpec& p);

/// True for a transformer-layer GEMM weight, what runs in FP8 with precision fp8: the QKV,
/// projection, MLP, expert and shared-expert linears (biases of row-parallel linears, which are
/// replicated over TP, excluded).
bool is_linear_weight(const ParamInfo& p);

/// Parameters of `stage` on one rank (its model chunks in order), in module registration order
/// (embedding, then per layer the Transformer Engine order norm1, qkv, proj, norm2, fc1, fc2 --
/// or router, experts, shared experts in MoE layers -- with weight before bias, then final
/// norm and output head). Routed experts are sharded over ep (whole experts) and etp.
std::vector<ParamInfo> stage_parameters(const WorkloadSpec& spec, int stage);

/// A gradient bucket: the parameters it holds (indices into the parameter list) and its size.
struct GradBucket {
  std::vector<std::size_t> params;
  std::int64_t numel = 0;           ///< elements of the bucket buffer, padding included
  std::int64_t params_numel = 0;    ///< elements of its parameters
};

/// Megatron's default bucket size in elements: max(40,000,000, 1,000,000 * dp)
/// (DistributedDataParallel.__init__).
std::int64_t default_bucket_size(int dp);

/// The bucket size Megatron uses on `stage`: the default when overlap_grad_reduce and the
/// stage is the first one; otherwise none (one bucket for the whole stage).
std::optional<std::int64_t> stage_bucket_size(const ParallelSpec& parallel, int stage);

/// Builds the buckets of `params` (registration order) in bucket order, bucket 0 holding the
/// end of the model. With the distributed optimizer parameters start on 64-element
/// boundaries, bucket ends are padded to a multiple of lcm(dp, 128) and a shared embedding gets
/// a bucket of its own.
std::vector<GradBucket> build_grad_buckets(const std::vector<ParamInfo>& params,
                                           std::optional<std::int64_t> bucket_size,
                                           bool distributed_optimizer, int dp);

}  // namespace clustersim::workloads
