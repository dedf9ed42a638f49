// What a run's report says about the model's known limits for this job: parts of the model that
// held-out measured steps show to be optimistic (docs/validation.md, docs/outputs.md). Text only:
// nothing here changes a simulated figure, and no measured result is used to compute anything.
#pragma once

#include <string>
#include <vector>

#include "workloads/job_spec.hpp"

namespace clustersim::tools {

/// One line per known limit that applies to `spec`, each naming the held-out comparison that
/// shows it: a MoE model (every held-out Megatron MoE step ran slower than simulated), and on top
/// the combined 1F1B (`overlap_moe_expert_parallel_comm`), whose simulated gain exceeds that of
/// the held-out measured before/after pair. Empty for other jobs. Never throws.
std::vector<std::string> accuracy_notes(const workloads::WorkloadSpec& spec);

}  // namespace clustersim::tools
