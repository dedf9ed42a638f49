#include "workloads/flops.hpp"

namespace clustersim::workloads {
namespace {

double d(std::int64_t v) { return static_cast<double>(v); }

// Attention width: query heads times head width (== hidden for all catalog models).
double attention_width(const ModelSpec& m) { return d(m.heads) * d(m.head_dim); }

}  // namespace

const char* to_string(MfuConvention convention) {
  return convention == MfuConvention::Megatron ? "megatron" : "causal";
}

std::int64_t padded_vocab(std::int64_t vocab, int tp) {
  const std::int64_t multiple = std::int64_t{128} * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

double layer_linear_weights(const ModelSpec& m) {
  const double h = d(m.hidden);
  const double qkv = h * d(m.heads + 2 * m.kv_heads) * d(m.head_dim);
  const double proj = attention_width(m) * h;
  const double fc1 = h * d(m.ffn) * (m.activation == Activation::Swiglu ? 2.0 : 1.0);
  const double fc2 = d(m.ffn) * h;
  return qkv + proj + fc1 + fc2;
}

double mfu_weight_count(const ModelSpec& m) {
  return d(m.layers) * layer_linear_weights(m) + d(m.hidden) * d(m.vocab);
}

double model_flops_per_sample(const ModelSpec& m, std::int64_t seq, MfuConvention convention) {
  const double s = d(seq);
  const double attention_factor = convention == MfuConvention::Megatron ? 12.0 : 6.0;
  return 6.0 * mfu_weight_count(m) * s + attention_factor * s * s * attention_width(m) * d(m.layers);
}

double hardware_flops_per_sample(const ModelSpec& m, std::int64_t seq, int tp) {
  const double s = d(seq);
  const double gemm_weights = d(m.layers) * layer_linear_weights(m) +
                              d(m.hidden) * d(padded_vocab(m.vocab, tp));
  // Causal forward: 2 matmuls of 2*s^2*d each, halved by the mask -> 2*s^2*d; backward 2.5x.
  const double attention_forward = 2.0 * s * s * attention_width(m);
  return 6.0 * gemm_weights * s + d(m.layers) * attention_forward * 3.5;
}

double gemm_flops(const sim::GemmShape& g) { return 2.0 * d(g.m) * d(g.n) * d(g.k); }

double attention_flops(const sim::AttentionShape& a) {
  const double pairs = d(a.batch) * d(a.heads) * d(a.seq_q) * d(a.seq_kv);
  const double per_pair = a.backward ? 2.0 * (3.0 * d(a.head_dim) + 2.0 * d(a.head_dim_v))
                                     : 2.0 * (d(a.head_dim) + d(a.head_dim_v));
  return pairs * per_pair * (a.causal ? 0.5 : 1.0);
}

}  // namespace clustersim::workloads
