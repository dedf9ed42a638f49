// Reliability of a job's training run: the Llama 3 failure catalog with the job's overrides,
// an NVLink-domain failure mode on rack-scale platforms, recovery and checkpoint costs from the
// job's `reliability:` section and model size, and the Monte-Carlo of energy/reliability.hpp.
// Used by `clustersim tco` (docs/energy.md).
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "energy/reliability.hpp"
#include "tools/job.hpp"

namespace clustersim::tools {

/// True when the job has a `reliability:` section, which asks for its training run with failures
/// (`clustersim run`, scale and sweep; docs/energy.md).
bool has_reliability_section(const Job& job);

/// Checkpoint size of a model, bytes: all its parameters (workloads::count_parameters().total:
/// every expert of a MoE model, embedding and head, norms, routers, MTP depths) x
/// energy::kCheckpointBytesPerParam.
double checkpoint_bytes(const workloads::ModelSpec& model);

/// True when the platform's NVLink domain spans several nodes (an NVL72 rack), whose
/// backplane and switch trays fail as one unit.
bool has_multi_node_domains(const platforms::PlatformSpec& platform);

/// The Monte-Carlo inputs of a job. `domain_mtbf_h` replaces reliability.domain_mtbf when set
/// (for sweeps). @throws SpecError (at the job's reliability section) when a rack-scale
/// platform lacks domain_mtbf, or domain failures without a spare pool lack domain_repair.
energy::ReliabilityInputs reliability_inputs(const Job& job,
                                             std::optional<double> domain_mtbf_h = std::nullopt);

/// Shape of the job's run: GPUs, node and domain sizes, failure-free seconds to train the
/// job's energy.train_tokens at `tokens_per_s_per_gpu`.
energy::RunShape run_shape(const Job& job, double tokens_per_s_per_gpu);

/// Checks a job's reliability: section against its platform before anything is simulated
/// (the domain MTBF and repair time a rack-scale platform needs): nothing without one.
/// @throws SpecError as reliability_inputs.
void check_reliability_section(const Job& job);

/// A training run with failures, as `run` and `tco` report it.
struct RunWithFailures {
  energy::RunShape shape;
  energy::RunReliability reliability;
};

/// The job's run of energy.train_tokens at `tokens_per_s_per_gpu` with failures (Monte-Carlo
/// of energy::simulate_run). @throws SpecError as reliability_inputs.
RunWithFailures run_with_failures(const Job& job, double tokens_per_s_per_gpu);

/// `reliability` of the JSON outputs (docs/outputs.md): job MTBF, checkpointing, failure-free
/// and elapsed time (s), goodput and interruptions per run, trials.
nlohmann::ordered_json reliability_json(const RunWithFailures& run);

}  // namespace clustersim::tools
