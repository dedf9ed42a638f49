// A cost model at one end of another's stated uncertainty (CostModel::uncertainty): every
// compute op and every network transfer at the slow or the fast end of its class's bounds.
// `clustersim run --uncertainty` plays the step at both ends. Documented in docs/cost-model.md
// ("Stated uncertainty").
#pragma once

#include <memory>
#include <string>

#include "sim/cost_model.hpp"

namespace clustersim::sim {

/// Which end of the stated bounds: Fast takes each lower bound (times x (1 + lo)), Slow each
/// upper bound (times x (1 + hi)).
enum class CostCorner { Fast, Slow };

/// "fast" or "slow".
const char* to_string(CostCorner corner);

/// The inner model with its compute times and its network transfer times moved to one end of
/// the inner model's CostUncertainty. Compute: compute_time x (1 + bound of the op's class;
/// memory-bound calls below small_bytes take memory_bound_small; host kernels and host copies
/// keep the inner time, the GPU's bounds not covering them). Network: the bandwidth term
/// of collectives and point-to-point transfers over LinkClass::Network / (1 + bound), as the
/// bandwidth efficiency; latencies unchanged. NVLink transfers, interference, held-SM, host-copy
/// and power-state answers are the inner model's (ratios, not times).
class CornerCostModel : public CostModel {
 public:
  /// @throws std::invalid_argument if `inner` is null, states no uncertainty, or states bounds
  /// with lo > 0, hi < 0 or lo <= -1.
  CornerCostModel(std::unique_ptr<CostModel> inner, CostCorner corner);

  double compute_time(const Op& op) const override;
  CollectiveParams collective_params(CollectiveKind kind, double bytes, int group_size,
                                     LinkClass link) const override;
  CollectiveParams protocol_collective_params(CollectiveKind kind, double bytes, int group_size,
                                              LinkClass link, NcclProtocol proto) const override;
  CollectiveParams p2p_params(double bytes, LinkClass link) const override;
  Interference interference(ComputeClass compute, double comm_bytes) const override;
  CopyDelay copy_kernel_delay(ComputeClass compute, bool d2h, bool h2d) const override;
  double held_sm_slowdown(const Op& op) const override;
  double clock_boost(const Op& op, double share) const override;
  double sustained_state(const Op& op) const override;
  bool has_power_state() const override { return inner_->has_power_state(); }
  CostUncertainty uncertainty() const override { return bounds_; }
  /// The inner model's line, then which end of its bounds this is.
  std::string describe() const override;

  /// The inner model (for reports that read its tables).
  const CostModel& inner() const { return *inner_; }

 private:
  double pick(const RelativeBounds& b) const { return corner_ == CostCorner::Fast ? b.lo : b.hi; }
  CollectiveParams network_adjusted(CollectiveParams p, LinkClass link) const;

  std::unique_ptr<CostModel> inner_;
  CostCorner corner_;
  CostUncertainty bounds_;
};

}  // namespace clustersim::sim
