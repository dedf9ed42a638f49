// Weight-gradient GEMMs that add their result into the main_grad buffer, as Megatron-LM's
// gradient_accumulation_fusion (megatron/core/tensor_parallel/layers.py, the
// fused_weight_gradient_mlp_cuda kernels) and Transformer Engine's fuse_wgrad_accumulation run
// them: cuBLAS with beta = 1, reading and writing main_grad (FP32, or BF16 with
// grad_reduce_in_fp32 off) instead of writing a new BF16 tensor. The extra time is measured by
// calib/probes/gemm.cu --accumulate (calibration run 48, calib/data/h200/gemm_wgrad_accum.csv);
// documented in docs/cost-model.md ("Weight gradients into main_grad") and docs/calibration.md.
#pragma once

#include <string>
#include <vector>

#include "calib/log_grid.hpp"
#include "calib/measured_tables.hpp"
#include "calib/tp_overlap_factor.hpp"
#include "sim/trace.hpp"

namespace clustersim::calib {

/// The measured extra time of a weight-gradient GEMM that accumulates into main_grad.
class WgradAccumCost {
 public:
  /// Indexes the "gemm_accum/<dtype>/<layout>/<plain|f32|bf16>" grids of `tables` (which must
  /// outlive this object). Tables without them are allowed: extra_time then notes and returns 0.
  explicit WgradAccumCost(const MeasuredTables& tables);

  /// True if the tables hold the BF16 and the FP8 grids.
  bool loaded() const { return bf16_.plain != nullptr && fp8_.plain != nullptr; }
  /// The source file of the grids ("" when not loaded).
  std::string file() const;

  /// Seconds the GEMM `g` takes beyond the same GEMM writing a new BF16 tensor, on the
  /// measured GPU (H200) at its sustained state: t_accumulating - t_plain of the same run,
  /// interpolated at the table's (out, in, tokens) = (g.n, g.m, g.k) (the trace writes a weight
  /// gradient as (in, out, tokens)); BF16 (and FP32) GEMMs from the wgrad (NT) layout, FP8 from
  /// TN. Never negative (an accumulating GEMM reads more than a plain one; a lower measured time
  /// is noise). Outside the grid: the extra time per output element of the nearest measured
  /// shape times m x n (the extra is the traffic of main_grad, 6 B per element in FP32 and 2 B in
  /// BF16 beyond the plain write: it tracks m x n, not the FLOPs), noted. 0 for grad_accum None.
  double extra_time(const sim::GemmShape& g, const OutOfGridNote& note) const;

 private:
  struct Grids {
    const LogGrid* plain = nullptr;
    const LogGrid* f32 = nullptr;
    const LogGrid* bf16 = nullptr;
  };
  Grids bf16_, fp8_;
};

}  // namespace clustersim::calib
