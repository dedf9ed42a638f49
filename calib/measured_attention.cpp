// The measured model's fused attention (docs/cost-model.md): cuDNN's SDPA or FlashAttention-2
// from attention.csv (causal, seq_kv = seq_q), context parallelism's unmasked blocks from
// attention_cp.csv / attention_cp_flash.csv (runs 16, 52).
#include <stdexcept>
#include <string>
#include <vector>

#include "calib/measured_cost_model.hpp"

namespace clustersim::calib {
namespace {

double d(std::int64_t v) { return static_cast<double>(v); }

}  // namespace

// The tables' backend of an attention op's kernel library: cuDNN's, or FlashAttention-2's
// (PyTorch's flash backend, runs 10, 47 and 52), which only the measured GPU and GPUs of its
// architecture have (DerivationRule::flash2).
std::string MeasuredCostModel::attention_library(const sim::AttentionShape& a) const {
  if (a.kernel == sim::AttentionKernel::Cudnn) return "cudnn";
  if (!rule_.flash2) {
    throw std::invalid_argument(
        "attention_backend flash2: FlashAttention-2 is measured on the H200 only, and " +
        rule_.gpu + "'s rule derives cuDNN's attention (" + rule_.basis +
        "), not FlashAttention-2's sm80 kernels: use attention_backend cudnn");
  }
  if (a.head_dim_v > 0 && a.head_dim_v != a.head_dim) {
    throw std::invalid_argument("attention_backend flash2 needs one head dimension for q, k and v");
  }
  return "flash";
}

double MeasuredCostModel::attention_time(const sim::AttentionShape& a) const {
  const double dq = d(a.head_dim), dv = a.head_dim_v > 0 ? d(a.head_dim_v) : dq;
  if (a.batch <= 0 || a.heads <= 0 || a.seq_q <= 0 || a.seq_kv <= 0 || dq <= 0) {
    throw std::invalid_argument("attention with a non-positive dimension");
  }
  // Tables: head_dim 128 (gqa, mha) and 192/128 (mla); the MLA table serves q/k and v widths
  // that differ, any equal width the GQA/MHA one (scaled by d + d_v below).
  const bool mla = dv != dq;
  const std::string dir = a.backward ? "bwd" : "fwd";
  const std::string lib = attention_library(a);
  const double table_dims = mla ? 192.0 + 128.0 : 256.0;
  // Unmasked blocks (context parallelism's steps after the first) from their own table
  // (run 16) where it covers them; the causal table scaled by pairs overestimates them by
  // 4-50% (median 15-49%: a causal kernel's masked diagonal tiles and uneven rows).
  const std::string cp_key = "attention_cp/" + lib + "/gqa/" + dir;
  const std::vector<double> xcp{d(a.seq_q), d(a.seq_kv) / d(a.seq_q), d(a.batch) * d(a.heads)};
  if (!a.causal && !mla && tables_->has(cp_key) && tables_->grid(cp_key).contains(xcp)) {
    double t = tables_->grid(cp_key).time_at(xcp);
    if (dq + dv != table_dims) t *= (dq + dv) / table_dims;
    return t / scale_.attention;
  }
  const std::vector<double> x{d(a.seq_q), d(a.batch) * d(a.heads)};
  std::string key = "attention/" + lib + "/" + std::string(mla ? "mla" : "gqa") + "/" + dir;
  if (!mla && a.heads == a.kv_heads && tables_->grid("attention/" + lib + "/mha/" + dir).contains(x)) {
    key = "attention/" + lib + "/mha/" + dir;  // MHA measured over a smaller range; GQA elsewhere
  }
  const LogGrid& g = tables_->grid(key);
  double t = 0.0;
  if (g.contains(x)) {
    t = g.time_at(x);
  } else {
    // Above the grid, work ~ heads x seq^2 once the GPU is full: scaled from the nearest
    // measured shape. Below it the kernel does not fill the GPU and the table is flat (seq 512:
    // 13.1 us with 4 GQA heads, 14.2 us with 32), so the edge's time is a floor, as for GEMMs.
    const auto c = g.clamp(x);
    const double heads = x[1] > c[1] ? x[1] / c[1] : 1.0, seq = x[0] > c[0] ? x[0] / c[0] : 1.0;
    t = g.time_at(c) * heads * seq * seq;
    note_out_of_grid("attention " + key.substr(16) + " seq x heads " + shape_text(x) + " outside " +
                     range_text(g) + ": scaled by heads x seq^2 above the grid, its edge below");
  }
  if (dq + dv != table_dims) {
    note_out_of_grid("attention head_dim " + shape_text({dq, dv}) + ": table of " +
                     (mla ? "192/128" : "128") + " scaled by (d + d_v)");
    t *= (dq + dv) / table_dims;
  }
  if (a.dtype == sim::DType::FP8) note_out_of_grid("FP8 attention: BF16 table (not measured)");
  // Tables are causal with seq_kv = seq_q: scale by the attended (query, key) pairs.
  t *= d(a.seq_kv) * (a.causal ? 0.5 : 1.0) / (0.5 * d(a.seq_q));
  return t / scale_.attention;
}

}  // namespace clustersim::calib
