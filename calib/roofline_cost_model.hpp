// The roofline cost model: each op takes the longer of its compute time at a measured
// fraction of the datasheet peak and its memory time at a measured fraction of HBM bandwidth.
// It is the fallback when no measured kernel tables exist for a GPU (calib/ measured tables
// replace it behind the same sim::CostModel interface). Every efficiency is cited below.
#pragma once

#include <string>
#include <vector>

#include "sim/cost_model.hpp"

namespace clustersim::calib {

/// Efficiencies the roofline applies to datasheet peaks (all in (0, 1]).
struct RooflineEfficiencies {
  double gemm_bf16 = 0.0;      ///< achieved / peak for large BF16 GEMMs (MAMF)
  double gemm_fp8 = 0.0;       ///< achieved / peak for large FP8 GEMMs (MAMF)
  double attention_fwd = 0.0;  ///< flash-attention forward, fraction of the BF16 peak
  double attention_bwd = 0.0;  ///< flash-attention backward, fraction of the BF16 peak
  double hbm = 0.0;            ///< achieved / datasheet HBM bandwidth for streaming kernels
  std::string source;          ///< where the figures come from
};

/// Looks up the cited efficiencies of a GPU by name ("H100-SXM", "H200-SXM", "B200", "GB200",
/// "B300", "GB300").
/// @throws std::invalid_argument for a GPU with no cited figures (never a silent default).
RooflineEfficiencies roofline_efficiencies(const std::string& gpu_name);

/// Names of the GPUs with cited roofline efficiencies, sorted.
std::vector<std::string> roofline_gpus();

/// Roofline CostModel for one GPU type.
class RooflineCostModel : public sim::CostModel {
 public:
  /// @throws std::invalid_argument if the GPU has no cited efficiencies.
  explicit RooflineCostModel(sim::GpuSpec gpu);
  RooflineCostModel(sim::GpuSpec gpu, RooflineEfficiencies eff);

  double compute_time(const sim::Op& op) const override;
  sim::CollectiveParams collective_params(sim::CollectiveKind kind, double bytes, int group_size,
                                          sim::LinkClass link) const override;
  sim::CollectiveParams p2p_params(double bytes, sim::LinkClass link) const override;
  std::string describe() const override;

 private:
  double gemm_time(const sim::GemmShape& g, double flops) const;
  double attention_time(const sim::AttentionShape& a, double flops) const;
  double memory_time(double bytes) const;

  sim::GpuSpec gpu_;
  RooflineEfficiencies eff_;
};

}  // namespace clustersim::calib
