// The figures of one simulated step that scale and sweep tabulate, and their transport from a
// worker process back to the parent (JSON text), plus the memory estimate of a job.
#pragma once

#include <string>

#include "tools/job.hpp"

namespace clustersim::tools {

/// What scale and sweep keep of a simulated step (docs/outputs.md for the meanings).
struct StepFigures {
  double step_time_s = 0.0;
  double mfu = 0.0;
  double tflops_per_gpu = 0.0;        ///< model TFLOP/s per GPU
  double tokens_per_s_per_gpu = 0.0;
  double compute_s = 0.0;             ///< breakdown, averaged over ranks
  double exposed_comm_s = 0.0;
  double bubble_s = 0.0;
  std::string replicas;               ///< reduction used: "full" or "identical"
};

/// Simulates `job` (simulate_job; call it in a worker process) with the options of its
/// `simulation:` section, `replicas` overriding its reduction unless empty; encodes the figures.
/// @throws what simulate_job throws.
std::string simulate_figures(const Job& job, const std::string& replicas);

/// Decodes simulate_figures' text. @throws std::runtime_error when it is not such a text.
StepFigures parse_figures(const std::string& text);

/// The memory model's verdict for a job (workloads/memory.hpp).
struct MemoryFit {
  double peak_bytes = 0.0;      ///< peak of the worst pipeline stage, per GPU
  double capacity_bytes = 0.0;  ///< HBM of one GPU
  bool fits = true;
  std::string message;          ///< why it does not fit (empty when it fits)
  int worst_rank = 0;           ///< first rank of the worst pipeline stage
  int worst_stage = 0;          ///< the pipeline stage with the largest peak
  std::string largest_component;       ///< the worst stage's largest component ("activations")
  double largest_component_bytes = 0.0;
  /// What torch.cuda.max_memory_reserved() would report: the peak less the CUDA context,
  /// cuBLAS's kernel images and NCCL (MemoryReport::reserved_bytes).
  double reserved_bytes = 0.0;
};

/// Estimates the job's per-GPU peak memory against its GPU's HBM with the workloads memory
/// model (deterministic, no simulation). @throws std::invalid_argument for a spec it rejects.
MemoryFit memory_fit(const Job& job);

}  // namespace clustersim::tools
