// What a run's report says about the model's known limits for this job: parts of the model that
// held-out measured steps show to be optimistic (docs/validation.md, docs/outputs.md). Text only:
// nothing here changes a simulated figure, and no measured result is used to compute anything.
#pragma once

#include <string>
#include <vector>

#include "workloads/job_spec.hpp"

namespace clustersim::tools {

/// One line per known limit that applies to `spec`, each naming the held-out comparison that
/// shows it: `derived_gpu` (the name of the job's GPU when its kernel times are derived from
/// another architecture's tables, tools/cost_models.hpp derives_across_architectures; empty
/// otherwise), whose held-out Megatron-Bridge steps on B200 and GB200 ran slower than simulated;
/// a MoE model (every held-out Megatron MoE step ran slower than simulated), and on top the
/// combined 1F1B (`overlap_moe_expert_parallel_comm`), whose simulated gain exceeds that of the
/// held-out measured before/after pair. Empty for other jobs. Never throws.
std::vector<std::string> accuracy_notes(const workloads::WorkloadSpec& spec,
                                        const std::string& derived_gpu = "");

/// How to read the job's MFU where its count is not the work done: with 0 < moe_capacity_factor
/// < 1 Megatron's count still takes every token's top_k experts while the capacity drops some of
/// them, so MFU overstates the work (and can exceed 100%); executed TFLOP/s counts what ran
/// (docs/outputs.md, mfu_convention). Empty for other jobs. Never throws.
std::string mfu_note(const workloads::WorkloadSpec& spec);

/// The accuracy notes of several simulated runs (scale's points, sweep's configurations) as
/// report lines "accuracy      NOTE", each note once in first-seen order, prefixed
/// "(K of N runs) " when only K of the N runs carry it. Empty when none carries any. Never throws.
std::string accuracy_summary(const std::vector<std::vector<std::string>>& runs);

}  // namespace clustersim::tools
