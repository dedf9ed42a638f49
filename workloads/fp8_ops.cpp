// FP8 quantization kernels of the layers' GEMM operands (TransformerOps::fp8_quantize).
//
// Delayed scaling (Transformer Engine's DelayedScaling) and block scaling (Float8BlockScaling)
// cast with a scale known before the cast: one fused kernel per operand, reading the BF16
// tensor and writing the FP8 tensor and its transpose (kFp8CastTransposeBytes), or only the
// transpose where the norm before a column-parallel linear wrote the FP8 tensor itself
// (kFp8TransposeBytes; transformer_constants.hpp).
//
// Current scaling (Float8CurrentScaling, fp8_recipe tensorwise) needs the tensor's own amax
// first (Float8CurrentScalingQuantizer: nvte_compute_amax, then the scale, then the cast): one
// more pass that reads the BF16 tensor (costed as a bandwidth-bound element-wise kernel of
// those bytes, the measured membound table's Elementwise class), and the cast cannot be fused
// into the norm, which writes BF16, so every cast is a whole cast-transpose. Where the operand is
// gathered for sequence parallelism (a column-parallel linear's input in the forward, a
// row-parallel linear's output gradient in the backward), each rank quantizes its shard before
// the gather with one scale for all of them: Transformer Engine sets with_amax_reduction over
// the TP group for those quantizers (module/linear.py, layernorm_linear.py,
// _customize_quantizers_float8_current_scaling), a MAX all-reduce of one FP32 amax, blocking on
// the compute stream.
#include <algorithm>

#include "workloads/transformer_constants.hpp"
#include "workloads/transformer_ops.hpp"

namespace clustersim::workloads {

void TransformerOps::fp8_quantize(const std::string& label, std::int64_t rows, std::int64_t cols,
                                  double bytes_per_element, sim::DType dtype, bool tp_amax) {
  if (dtype != sim::DType::FP8) return;
  const double elements = static_cast<double>(rows) * static_cast<double>(cols);
  if (s_.fp8_current_scaling) {
    b_.mem(label + "_amax", sim::MemKernel::Elementwise, elements * kActivationBytes);
    if (tp_amax && s_.sequence_parallel) tp_blocking("tp_ar_amax", sim::CollectiveKind::AllReduce, kFp32Bytes);
    bytes_per_element = std::max(bytes_per_element, kFp8CastTransposeBytes);
  }
  b_.mem(label, sim::MemKernel::Copy, elements * bytes_per_element);
}

}  // namespace clustersim::workloads
