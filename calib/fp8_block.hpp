// FP8 GEMMs with block-scaled operands, as Transformer Engine's Float8BlockScaling recipe runs
// them through cuBLASLt on Hopper (CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F for weights,
// VEC128_32F for activations and gradients; DeepSeek-V3's fine-grained FP8): their time as the
// per-tensor-scaled GEMM's times the ratio measured by calib/probes/gemm.cu --block-scaling
// (calibration run 78, calib/data/h200/gemm_fp8_block.csv: per-tensor and both block layouts on
// the same shapes, each at the sustained state). Documented in docs/cost-model.md ("FP8 recipes").
#pragma once

#include <string>

#include "calib/log_grid.hpp"
#include "calib/measured_tables.hpp"
#include "calib/tp_overlap_factor.hpp"
#include "sim/trace.hpp"

namespace clustersim::calib {

/// The measured slowdown of block-scaled FP8 GEMMs against per-tensor-scaled ones.
class Fp8BlockFactor {
 public:
  /// Indexes the "gemm_block/fp8/<tn|tn_block2d1d|tn_block1d1d>" grids of `tables` (which must
  /// outlive this object). Tables without them are allowed: ratio() then notes and returns 1.
  explicit Fp8BlockFactor(const MeasuredTables& tables);

  /// True if the tables hold the three grids.
  bool loaded() const { return tensor_ != nullptr; }
  /// The source file of the grids ("" when not loaded).
  std::string file() const;

  /// t_block / t_tensor of the same run at the GEMM's (m, n, k) for its g.fp8_scaling (1 for
  /// per-tensor scaling), interpolated in log space; outside the grid the ratio of the nearest
  /// measured shape (coordinates clamped), noted. Dimensionless.
  double ratio(const sim::GemmShape& g, const OutOfGridNote& note) const;

 private:
  const LogGrid* tensor_ = nullptr;
  const LogGrid* block2d1d_ = nullptr;
  const LogGrid* block1d1d_ = nullptr;
};

}  // namespace clustersim::calib
