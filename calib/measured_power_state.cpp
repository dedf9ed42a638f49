// The measured model's power state (docs/cost-model.md, "Power state"): the clock boost of GEMMs
// and attention by their rank's compute-bound share (power_boost.csv, runs 24-25) and each kind's
// own sustained state over its table (table_state.csv, runs 49-53; FlashAttention-2 its own rows).
#include <cmath>
#include <string>
#include <variant>

#include "calib/measured_cost_model.hpp"

namespace clustersim::calib {

double MeasuredCostModel::clock_boost(const sim::Op& op, double share) const {
  if (!rule_.power_boost || !op.is_compute()) return 1.0;
  const PowerBoostTable& table = tables_->power_boost();
  if (const auto* g = std::get_if<sim::GemmShape>(&op.shape)) {
    return table.boost(g->dtype == sim::DType::FP8 ? "gemm_fp8" : "gemm_bf16", share);
  }
  if (std::holds_alternative<sim::AttentionShape>(op.shape)) return table.boost("attention", share);
  return 1.0;
}

bool MeasuredCostModel::has_power_state() const {
  return rule_.power_boost && !tables_->power_boost().empty();
}

double MeasuredCostModel::sustained_state(const sim::Op& op) const {
  if (!rule_.power_boost || !op.is_compute()) return 1.0;
  const PowerBoostTable& table = tables_->power_boost();
  if (const auto* g = std::get_if<sim::GemmShape>(&op.shape)) {
    if (g->dtype != sim::DType::FP8) return table.state("gemm_bf16");
    // The ratio of the table the time came from: block-scaled GEMMs are costed from the
    // split-accumulation table in every phase (plain_gemm_time).
    const bool fast = g->fp8_scaling == sim::Fp8Scaling::Tensor && fp8_fast_accum(kernel_phase(op));
    return table.state(fast ? "gemm_fp8_fastacc" : "gemm_fp8");
  }
  if (const auto* a = std::get_if<sim::AttentionShape>(&op.shape)) {
    // Indexed by the self-attention length of the same work per head: sqrt(seq_q x seq_kv).
    const double seq = std::sqrt(static_cast<double>(a->seq_q) * static_cast<double>(a->seq_kv));
    const std::string kind = a->kernel == sim::AttentionKernel::Flash2 ? "attention_flash2_" : "attention_";
    return table.state(kind + (a->backward ? "bwd" : "fwd"), seq);
  }
  return 1.0;
}

}  // namespace clustersim::calib
