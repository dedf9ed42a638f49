// Turns a validated WorkloadSpec into the per-rank op programs the engine plays
// (sim/workload.hpp): one program per pipeline stage, shared by all ranks of that stage.
#pragma once

#include "sim/workload.hpp"
#include "workloads/job_spec.hpp"

namespace clustersim::workloads {

/// Generates one training step: programs (one per pipeline stage), program_of_rank through
/// the Megatron rank layout (tp-cp-dp-pp), and the step's accounting (tokens, model FLOPs in
/// the megatron convention, hardware FLOPs; peak_flops_per_gpu is left 0 for the caller).
/// Deterministic. @throws std::invalid_argument if `spec` names an unregistered schedule or
/// violates the constraints parse_workload_spec checks.
sim::Workload generate_workload(const WorkloadSpec& spec);

/// The program of one pipeline stage (what generate_workload stores for it).
/// @throws std::invalid_argument as generate_workload, or for a stage outside [0, pp).
sim::Program generate_stage_program(const WorkloadSpec& spec, int stage);

}  // namespace clustersim::workloads
