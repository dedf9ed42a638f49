// GEMMs on FP32 operands on the tensor cores (TF32), as Megatron-core's router runs its backward
// with moe_router_dtype fp32 (Transformer Engine's general_gemm, compute type
// CUBLAS_COMPUTE_32F_FAST_TF32 for FP32 inputs): their time as the BF16 GEMM's of the same shape
// and phase times the TF32/BF16 ratio measured by calib/probes/gemm_tf32.py (calibration run 102,
// calib/data/h200/gemm_tf32.csv: each shape timed in TF32 and in BF16 back to back in one process
// at the sustained state). Documented in docs/cost-model.md ("TF32 and FP32 GEMMs").
#pragma once

#include <string>

#include "sim/trace.hpp"

namespace clustersim::calib {

/// The measured slowdown of TF32 GEMMs against BF16 ones of the same shape.
class Tf32Ratio {
 public:
  /// Not loaded (a directory without gemm_tf32.csv).
  Tf32Ratio() = default;
  /// Reads a gemm_tf32.csv (columns layout = fwd|dgrad|wgrad, time_tf32_s, time_bf16_s; at
  /// least one row per layout).
  /// @throws SpecError naming file, line and column for a missing or malformed file.
  static Tf32Ratio load(const std::string& path);

  /// True if a table was read.
  bool loaded() const { return !file_.empty(); }
  /// The table's path ("" when not loaded).
  const std::string& file() const { return file_; }

  /// t_tf32 / t_bf16 for a GEMM of `phase`, dimensionless: the median over the table's rows of
  /// the forward layout for Forward (and Optimizer) GEMMs; for Backward ones the geometric mean
  /// of the data- and weight-gradient layouts' medians, as the BF16 backward time is the
  /// geometric mean of the two layouts' tables (a trace op does not say which it is).
  /// @throws std::logic_error when not loaded().
  double ratio(sim::Phase phase) const;

  /// The median ratio of one layout ("fwd", "dgrad", "wgrad"), for reports.
  /// @throws std::logic_error when not loaded(); std::invalid_argument for another layout.
  double layout_median(const std::string& layout) const;

 private:
  std::string file_;
  double fwd_ = 0.0, dgrad_ = 0.0, wgrad_ = 0.0;
};

}  // namespace clustersim::calib
