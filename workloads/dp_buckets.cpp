#include "workloads/dp_buckets.hpp"

#include <algorithm>
#include <numeric>

#include "workloads/flops.hpp"
#include "workloads/stage_layout.hpp"

namespace clustersim::workloads {
namespace {

std::int64_t pad(std::int64_t value, std::int64_t divisor) {
  return (value + divisor - 1) / divisor * divisor;
}

// Adds a norm's parameters: weight, and bias for LayerNorm.
void add_norm(std::vector<ParamInfo>& out, const ModelSpec& m, ParamGroup group, int layer,
              std::int64_t width, bool qk_norm = false) {
  out.push_back({group, layer, width, true, false, false, qk_norm});
  if (m.norm == NormKind::LayerNorm) out.push_back({group, layer, width, true, false, false, qk_norm});
}

// Adds a linear layer: weight [out_local, in_local], and a bias when the model has biases
// (sharded for column-parallel layers, replicated for row-parallel ones).
void add_linear(std::vector<ParamInfo>& out, const ModelSpec& m, ParamGroup group, int layer,
                std::int64_t out_local, std::int64_t in_local, bool row_parallel) {
  out.push_back({group, layer, out_local * in_local, false, false, false});
  if (m.bias) out.push_back({group, layer, out_local, row_parallel, false, false});
}

// MLA (Megatron-core MLASelfAttention): the down projections and their norms are duplicated
// over TP (sequence-parallel gradients), the up projections column parallel.
void add_mla(std::vector<ParamInfo>& out, const ModelSpec& m, int layer, std::int64_t tp) {
  const std::int64_t heads = m.heads / tp;
  if (m.q_lora_rank > 0) {
    out.push_back({ParamGroup::Qkv, layer, m.hidden * m.q_lora_rank, true, false, false});
    add_norm(out, m, ParamGroup::Qkv, layer, m.q_lora_rank);
    out.push_back({ParamGroup::Qkv, layer, m.q_lora_rank * heads * m.head_dim, false, false, false});
  } else {
    out.push_back({ParamGroup::Qkv, layer, m.hidden * heads * m.head_dim, false, false, false});
  }
  out.push_back({ParamGroup::Qkv, layer, m.hidden * (m.kv_lora_rank + m.rope_head_dim), true, false, false});
  add_norm(out, m, ParamGroup::Qkv, layer, m.kv_lora_rank);
  const std::int64_t kv_up = heads * (m.head_dim - m.rope_head_dim + m.value_head_dim());
  out.push_back({ParamGroup::Qkv, layer, m.kv_lora_rank * kv_up, false, false, false});
}

// Routed experts (whole experts per EP rank, each sharded over etp), the router and the shared
// experts of a MoE layer, in Megatron-core MoELayer registration order.
void add_moe(std::vector<ParamInfo>& out, const WorkloadSpec& spec, int layer) {
  const ModelSpec& m = spec.model;
  const ParallelSpec& p = spec.parallel;
  const std::int64_t gate = m.activation == Activation::Swiglu ? 2 : 1;
  out.push_back({ParamGroup::Router, layer, m.hidden * m.experts, true, false, false});
  const std::int64_t local = m.experts / p.ep;
  const std::int64_t ffn = m.expert_ffn / p.etp;
  out.push_back({ParamGroup::ExpertFc1, layer, local * gate * ffn * m.hidden, false, false, true});
  out.push_back({ParamGroup::ExpertFc2, layer, local * ffn * m.hidden, false, false, true});
  if (m.shared_expert_ffn > 0) {
    const std::int64_t shared = m.shared_expert_ffn / p.tp;
    add_linear(out, m, ParamGroup::SharedFc1, layer, gate * shared, m.hidden, false);
    add_linear(out, m, ParamGroup::SharedFc2, layer, m.hidden, shared, true);
  }
}

void add_layer(std::vector<ParamInfo>& out, const WorkloadSpec& spec, int layer) {
  const ModelSpec& m = spec.model;
  const std::int64_t tp = spec.parallel.tp;
  add_norm(out, m, ParamGroup::Norm1, layer, m.hidden);
  if (m.attention == AttentionKind::Mla) {
    add_mla(out, m, layer, tp);
  } else {
    add_linear(out, m, ParamGroup::Qkv, layer, (m.heads + 2 * m.kv_heads) * m.head_dim / tp, m.hidden,
               false);
    // qk_layernorm: Megatron-core's q_layernorm and k_layernorm, replicated over TP; their
    // gradients are all-reduced over TP by name, with or without SP (tp_allreduced_numel).
    if (m.qk_layernorm) {
      add_norm(out, m, ParamGroup::Qkv, layer, m.head_dim, true);
      add_norm(out, m, ParamGroup::Qkv, layer, m.head_dim, true);
    }
  }
  add_linear(out, m, ParamGroup::Proj, layer, m.hidden, m.heads * m.value_head_dim() / tp, true);
  add_norm(out, m, ParamGroup::Norm2, layer, m.hidden);
  if (m.is_moe_layer(layer)) {
    add_moe(out, spec, layer);
    return;
  }
  const std::int64_t fc1_out = m.ffn * (m.activation == Activation::Swiglu ? 2 : 1) / tp;
  add_linear(out, m, ParamGroup::Fc1, layer, fc1_out, m.hidden, false);
  add_linear(out, m, ParamGroup::Fc2, layer, m.hidden, m.ffn / tp, true);
}

// The word (and position) embedding of a stage: the first stage's, or the copy the last stage
// holds for the MTP's embedding when pp > 1 (Megatron-core builds the embedding where
// pre_process or mtp_process holds, and keeps the word embeddings equal with the embedding
// group); `word`: false where the tied output layer already is the word embedding.
void add_embedding(std::vector<ParamInfo>& out, const ModelSpec& m, std::int64_t vocab_local,
                   bool shared, bool word = true) {
  if (word) out.push_back({ParamGroup::WordEmbedding, -1, vocab_local * m.hidden, false, shared, false});
  if (m.position == PositionKind::Learned) {
    out.push_back({ParamGroup::PositionEmbedding, -1, m.max_position_embeddings * m.hidden, false,
                   false, false});
  }
}

// The MTP depths (Megatron-core MultiTokenPredictionLayer registration order: enorm, hnorm,
// eh_proj without bias, the transformer layer, final layernorm), at layer index layers + depth.
void add_mtp(std::vector<ParamInfo>& out, const WorkloadSpec& spec) {
  const ModelSpec& m = spec.model;
  for (std::int64_t depth = 0; depth < m.mtp_layers; ++depth) {
    const int layer = static_cast<int>(m.layers + depth);
    add_norm(out, m, ParamGroup::Mtp, layer, m.hidden);
    add_norm(out, m, ParamGroup::Mtp, layer, m.hidden);
    out.push_back({ParamGroup::Mtp, layer, m.hidden / spec.parallel.tp * 2 * m.hidden, false, false, false});
    add_layer(out, spec, layer);
    add_norm(out, m, ParamGroup::Mtp, layer, m.hidden);
  }
}

}  // namespace

std::int64_t tp_allreduced_numel(const std::vector<ParamInfo>& params, const ParallelSpec& p) {
  if (p.tp == 1) return 0;
  std::int64_t n = 0;
  for (const auto& param : params) {
    if (p.sequence_parallel ? param.sp_replicated : param.qk_norm) n += param.numel;
  }
  return n;
}

bool is_linear_weight(const ParamInfo& p) {
  switch (p.group) {
    case ParamGroup::Qkv: case ParamGroup::Proj: case ParamGroup::Fc1: case ParamGroup::Fc2:
    case ParamGroup::ExpertFc1: case ParamGroup::ExpertFc2: case ParamGroup::SharedFc1:
    case ParamGroup::SharedFc2: case ParamGroup::Mtp:  // Mtp: eh_proj (its norms are replicated)
      return !p.sp_replicated;
    default:
      return false;
  }
}

std::vector<ParamInfo> stage_parameters(const WorkloadSpec& spec, int stage) {
  const ModelSpec& m = spec.model;
  const int pp = spec.parallel.pp;
  const std::int64_t vocab_local = padded_vocab(m.vocab, spec.parallel.tp) / spec.parallel.tp;
  const bool shared = m.tied_embeddings && pp > 1;
  // With tied embeddings the last stage's head weight is the word embedding the MTP reads.
  const bool mtp_copy = m.mtp_layers > 0 && pp > 1;
  std::vector<ParamInfo> out;
  if (stage == 0) add_embedding(out, m, vocab_local, pp > 1 && m.embedding_on_last_stage());
  if (stage == pp - 1 && mtp_copy) add_embedding(out, m, vocab_local, true, !m.tied_embeddings);
  for (const LayerRange& chunk : stage_chunks(m, spec.parallel, stage)) {
    for (int layer = chunk.begin; layer < chunk.end; ++layer) add_layer(out, spec, layer);
  }
  if (stage == pp - 1) {
    add_norm(out, m, ParamGroup::FinalNorm, -1, m.hidden);
    add_mtp(out, spec);
    // With tied embeddings and one stage the head reuses the word embedding (no parameter).
    if (!m.tied_embeddings || pp > 1) {
      out.push_back({ParamGroup::OutputHead, -1, vocab_local * m.hidden, false, shared, false});
    }
  }
  return out;
}

std::int64_t default_bucket_size(int dp) {
  return std::max<std::int64_t>(40'000'000, std::int64_t{1'000'000} * dp);
}

std::optional<std::int64_t> stage_bucket_size(const ParallelSpec& parallel, int stage) {
  // Bucketing is off without overlap_grad_reduce and, as Megatron's DistributedDataParallel
  // does for its once-per-step reduction, on every stage but the first, whose reduction is
  // not on the critical path (DistributedDataParallel.__init__). ZeRO-2 reduce-scatters every
  // microbatch, and neither of its implementations turns bucketing off on later stages:
  // DeepSpeed reduces in reduce_bucket_size buckets (stage_1_and_2.py) and FSDP per wrapped
  // unit (the Llama 3 paper's layout, Sec. 3.3.2), so its buckets stay on every stage.
  if (!parallel.overlap_grad_reduce || (stage > 0 && parallel.zero_stage != 2)) return std::nullopt;
  return default_bucket_size(parallel.dp);
}

std::vector<GradBucket> build_grad_buckets(const std::vector<ParamInfo>& params,
                                           std::optional<std::int64_t> bucket_size,
                                           bool distributed_optimizer, int dp) {
  // Bucket ends are padded so that every DP rank owns an equal, 256-byte aligned shard.
  const std::int64_t end_divisor = std::lcm(std::int64_t{dp}, std::int64_t{128});
  std::vector<GradBucket> buckets;
  GradBucket current;
  std::int64_t bucket_start = 0;
  std::int64_t param_start = 0;
  auto close = [&](std::int64_t end) {
    const std::int64_t padded = distributed_optimizer ? pad(end, end_divisor) : end;
    current.numel = padded - bucket_start;
    buckets.push_back(std::move(current));
    current = GradBucket{};
    bucket_start = padded;
    return padded;
  };
  for (std::size_t i = params.size(); i-- > 0;) {
    const ParamInfo& p = params[i];
    if (distributed_optimizer) param_start = pad(param_start, 64);
    const bool own_bucket = p.shared_embedding && distributed_optimizer;
    if (own_bucket && !current.params.empty()) param_start = close(param_start);
    const std::int64_t param_end = param_start + p.numel;
    current.params.push_back(i);
    current.params_numel += p.numel;
    const bool full = bucket_size.has_value() && param_end - bucket_start >= *bucket_size;
    param_start = (full || own_bucket) ? close(param_end) : param_end;
  }
  if (!current.params.empty()) close(param_start);
  return buckets;
}

}  // namespace clustersim::workloads
