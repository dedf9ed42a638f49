#include "workloads/flops.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "workloads/stage_layout.hpp"

namespace clustersim::workloads {
namespace {

double d(std::int64_t v) { return static_cast<double>(v); }

// Attention score width summed over q.k and p.v: heads * (d_qk + d_v); 2 * hidden for
// standard attention with head_dim * heads == hidden.
double attention_width2(const ModelSpec& m) { return d(m.heads) * d(m.head_dim + m.value_head_dim()); }

double gated(const ModelSpec& m) { return m.activation == Activation::Swiglu ? 3.0 : 2.0; }

// Router GEMM weights of a MoE layer: hidden x experts.
double router_weights(const ModelSpec& m, std::int64_t layer) {
  return m.is_moe_layer(layer) ? d(m.hidden) * d(m.experts) : 0.0;
}

// Causal flash-attention FLOPs of one layer for one sequence: forward 2 s^2 a (d + dv) / 2,
// backward 2 s^2 a (3d + 2dv) / 2 (attention_flops).
double causal_attention_forward(const ModelSpec& m, double s) {
  return s * s * attention_width2(m);
}
double causal_attention_backward(const ModelSpec& m, double s) {
  return s * s * d(m.heads) * d(3 * m.head_dim + 2 * m.value_head_dim());
}

// MLA's up projections: the query's (the whole query projection without a query latent) and
// the key-value's.
double mla_up_weights(const ModelSpec& m) {
  const double q_out = d(m.heads) * d(m.head_dim);
  const double q_up = (m.q_lora_rank > 0 ? d(m.q_lora_rank) : d(m.hidden)) * q_out;
  return q_up + d(m.kv_lora_rank) * d(m.heads) * d(m.head_dim - m.rope_head_dim + m.value_head_dim());
}

// GEMM weights of layer `layer` that selective recompute runs again (recompute_modules):
// mla_up_proj the up projections (the whole query projection without a query latent), mlp a
// dense layer's MLP, moe a MoE layer's router, experts (at `expert_load`) and shared experts,
// shared_experts the shared experts (once more under moe: the checkpoints nest).
double selective_recompute_weights(const WorkloadSpec& spec, std::int64_t layer, double expert_load) {
  const ModelSpec& m = spec.model;
  const TrainingSpec& t = spec.training;
  double w = 0.0;
  if (t.recomputes(RecomputeModule::MlaUpProj)) w += mla_up_weights(m);
  if (!m.is_moe_layer(layer)) return w + (t.recomputes(RecomputeModule::Mlp) ? mlp_weights(m, m.ffn) : 0.0);
  if (t.recomputes(RecomputeModule::Moe)) {
    w += router_weights(m, layer) + expert_load * d(m.top_k) * mlp_weights(m, m.expert_ffn) +
         mlp_weights(m, m.shared_expert_ffn);
  }
  if (t.recomputes(RecomputeModule::SharedExperts)) w += mlp_weights(m, m.shared_expert_ffn);
  return w;
}

}  // namespace

const char* to_string(MfuConvention convention) {
  return convention == MfuConvention::Megatron ? "megatron" : "causal";
}

MfuConvention mfu_convention_from(const std::string& name) {
  if (name == "megatron") return MfuConvention::Megatron;
  if (name == "causal") return MfuConvention::Causal;
  throw std::invalid_argument("unknown MFU convention '" + name + "' (megatron, causal)");
}

std::int64_t padded_vocab(std::int64_t vocab, int tp) {
  const std::int64_t multiple = std::int64_t{128} * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

double attention_linear_weights(const ModelSpec& m) {
  const double h = d(m.hidden);
  const double proj = d(m.heads) * d(m.value_head_dim()) * h;
  if (m.attention == AttentionKind::Gqa) {
    return h * d(m.heads + 2 * m.kv_heads) * d(m.head_dim) + proj;
  }
  const double q_down = m.q_lora_rank > 0 ? h * d(m.q_lora_rank) : 0.0;
  const double kv_down = h * d(m.kv_lora_rank + m.rope_head_dim);
  return q_down + kv_down + mla_up_weights(m) + proj;
}

double mlp_weights(const ModelSpec& m, std::int64_t ffn) { return gated(m) * d(m.hidden) * d(ffn); }

double mtp_proj_weights(const ModelSpec& m) { return 2.0 * d(m.hidden) * d(m.hidden); }

double layer_linear_weights(const ModelSpec& m) {
  return attention_linear_weights(m) + mlp_weights(m, m.ffn);
}

double active_layer_weights(const ModelSpec& m, std::int64_t layer) {
  const double mlp = m.is_moe_layer(layer)
                         ? d(m.top_k) * mlp_weights(m, m.expert_ffn) + mlp_weights(m, m.shared_expert_ffn)
                         : mlp_weights(m, m.ffn);
  return attention_linear_weights(m) + mlp;
}

double mfu_weight_count(const ModelSpec& m) {
  // Each MTP depth adds its layer, its eh_proj (2h x h) and one more pass through the head
  // (Megatron's num_floating_point_operations counts them).
  double n = d(m.hidden) * d(m.vocab) * d(1 + m.mtp_layers) + d(m.mtp_layers) * mtp_proj_weights(m);
  for (std::int64_t l = 0; l < m.trained_layers(); ++l) n += active_layer_weights(m, l);
  return n;
}

double model_flops_per_sample(const ModelSpec& m, std::int64_t seq, MfuConvention convention) {
  const double s = d(seq);
  const double attention = 6.0 * s * s * attention_width2(m) * d(m.trained_layers());
  return 6.0 * mfu_weight_count(m) * s +
         (convention == MfuConvention::Megatron ? attention : 0.5 * attention);
}

double attention_flop_share(const ModelSpec& m, std::int64_t seq, MfuConvention convention) {
  const double whole = model_flops_per_sample(m, seq, convention);
  return (whole - 6.0 * mfu_weight_count(m) * d(seq)) / whole;
}

double hardware_flops_per_sample(const ModelSpec& m, std::int64_t seq, int tp) {
  WorkloadSpec spec;
  spec.model = m;
  spec.parallel.tp = tp;
  spec.training.seq_length = seq;
  return hardware_flops_per_sample(spec);
}

double hardware_flops_per_sample(const WorkloadSpec& spec) {
  const ModelSpec& m = spec.model;
  const TrainingSpec& t = spec.training;
  const double s = d(t.seq_length);
  // Tokens dropped beyond an expert capacity below the average load are not computed; padded to
  // capacity, the padding rows are.
  const double expert_load = t.moe_pad_to_capacity        ? t.moe_capacity_factor
                             : t.moe_capacity_factor > 0.0 ? std::min(1.0, t.moe_capacity_factor)
                                                           : 1.0;
  // MLA's down projections have replicated weights (Megatron-core "duplicated" linears) and run
  // on each rank's tokens: on its sequence shard with sequence parallelism, else on all tokens,
  // i.e. tp times.
  const double mla_extra = m.attention == AttentionKind::Mla && !spec.parallel.sequence_parallel
                               ? d(m.hidden) * d(m.q_lora_rank + m.kv_lora_rank + m.rope_head_dim) *
                                     d(spec.parallel.tp - 1)
                               : 0.0;
  // Full recompute re-runs the layers recompute_groups names (all with the uniform method, the
  // first recompute_num_layers of each chunk with block) and every MTP depth's layer.
  const std::vector<bool> again = recomputed_layers(spec);
  double layer_gemm = 0.0, recomputed_gemm = 0.0, recomputed = 0.0, selective_gemm = 0.0;
  for (std::int64_t l = 0; l < m.trained_layers(); ++l) {
    double w = attention_linear_weights(m) + router_weights(m, l) + mla_extra;
    w += m.is_moe_layer(l) ? expert_load * d(m.top_k) * mlp_weights(m, m.expert_ffn) +
                                 mlp_weights(m, m.shared_expert_ffn)
                           : mlp_weights(m, m.ffn);
    layer_gemm += w;
    selective_gemm += selective_recompute_weights(spec, l, expert_load);
    if (l < m.layers ? again[static_cast<std::size_t>(l)] : t.recompute == Recompute::Full) {
      recomputed_gemm += w;
      recomputed += 1.0;
    }
  }
  // The head runs once more per MTP depth; each depth's eh_proj is recomputed with its layer
  // under full recompute (Megatron checkpoints the two together).
  const double head = d(m.hidden) * d(padded_vocab(m.vocab, spec.parallel.tp)) * d(1 + m.mtp_layers);
  const double mtp_proj = d(m.mtp_layers) * mtp_proj_weights(m);
  const double layers = d(m.trained_layers());
  const double attention_fwd = layers * causal_attention_forward(m, s);
  double flops = 6.0 * (layer_gemm + mtp_proj + head) * s + attention_fwd +
                 layers * causal_attention_backward(m, s);
  if (t.recompute == Recompute::Full) {
    flops += 2.0 * (recomputed_gemm + mtp_proj) * s + recomputed * causal_attention_forward(m, s);
  }
  if (t.recomputes(RecomputeModule::CoreAttn)) flops += attention_fwd;
  return flops + 2.0 * selective_gemm * s;
}

double gemm_flops(const sim::GemmShape& g) { return 2.0 * d(g.m) * d(g.n) * d(g.k); }

double attention_flops(const sim::AttentionShape& a) {
  const double pairs = d(a.batch) * d(a.heads) * d(a.seq_q) * d(a.seq_kv);
  const double per_pair = a.backward ? 2.0 * (3.0 * d(a.head_dim) + 2.0 * d(a.head_dim_v))
                                     : 2.0 * (d(a.head_dim) + d(a.head_dim_v));
  return pairs * per_pair * (a.causal ? 0.5 : 1.0);
}

}  // namespace clustersim::workloads
