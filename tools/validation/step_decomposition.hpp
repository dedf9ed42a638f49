// A simulated step split into attention and the rest as the S3 source splits a measured one
// (stas00/ml-engineering insights/when-to-upgrade-gpus/bench_decompose.py): the step time is
// divided by the attention kernels' share of the GPU's kernel time, communication kernels left
// out, and each part's model FLOPs are set over its part of the time. `clustersim validate`
// compares it with a case's attention_bucket and rest_bucket (docs/validation.md, "Step
// decomposition").
#pragma once

#include "tools/op_profile.hpp"

namespace clustersim::tools::validation {

/// A step split into attention and the rest.
struct StepSplit {
  double attention_tflops = 0.0;        ///< attention's model FLOPs / its part of the step, TFLOP/s
  double rest_tflops = 0.0;             ///< the other model FLOPs / the rest of the step, TFLOP/s
  double attention_kernel_share = 0.0;  ///< attention's share of the kernel time, in [0, 1)
};

/// Splits one rank's profiled step as the source splits its rank 0. Kernel time: the rank's GEMM,
/// attention and memory-bound intervals on all its streams (the CUDA kernels a profiler sums;
/// NCCL's collectives and point-to-point transfers, and host work, left out). Attention's part
/// of the step: profile.step_s x attention kernel time / kernel time. `model_flops_per_gpu`: the
/// rank's model FLOPs of the step (the source's convention); `attention_flop_share` its attention
/// share (workloads::attention_flop_share).
/// @throws std::invalid_argument if the profile holds no attention kernel or only attention, the
/// step time or the FLOPs are not positive, or the FLOP share is outside (0, 1).
StepSplit split_step(const OpProfile& profile, double model_flops_per_gpu,
                     double attention_flop_share);

}  // namespace clustersim::tools::validation
