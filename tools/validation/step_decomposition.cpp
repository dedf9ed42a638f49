// S3's step decomposition of a simulated step (tools/validation/step_decomposition.hpp).
#include "tools/validation/step_decomposition.hpp"

#include <stdexcept>
#include <string>

namespace clustersim::tools::validation {

StepSplit split_step(const OpProfile& profile, double model_flops_per_gpu,
                     double attention_flop_share) {
  if (!(profile.step_s > 0.0) || !(model_flops_per_gpu > 0.0)) {
    throw std::invalid_argument("step decomposition: the step time and its FLOPs must be positive");
  }
  if (!(attention_flop_share > 0.0 && attention_flop_share < 1.0)) {
    throw std::invalid_argument("step decomposition: attention's FLOP share " +
                                std::to_string(attention_flop_share) + " is outside (0, 1)");
  }
  double attention_s = 0.0;
  double kernel_s = 0.0;
  for (const OpProfileRow& row : profile.rows) {
    const bool attention = row.kind == "attention";
    if (attention || row.kind == "gemm" || row.kind == "memory-bound") kernel_s += row.busy_s;
    if (attention) attention_s += row.busy_s;
  }
  if (!(attention_s > 0.0) || !(attention_s < kernel_s)) {
    throw std::invalid_argument("step decomposition: rank " + std::to_string(profile.rank) +
                                " ran " + (attention_s > 0.0 ? "only attention" : "no attention") +
                                " kernels");
  }
  StepSplit split;
  split.attention_kernel_share = attention_s / kernel_s;
  const double attention_part_s = profile.step_s * split.attention_kernel_share;
  split.attention_tflops = model_flops_per_gpu * attention_flop_share / attention_part_s / 1e12;
  split.rest_tflops =
      model_flops_per_gpu * (1.0 - attention_flop_share) / (profile.step_s - attention_part_s) / 1e12;
  return split;
}

}  // namespace clustersim::tools::validation
