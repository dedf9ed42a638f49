// The job file: `cluster:` (platforms/), `model:`, `parallelism:`, `training:` (workloads/),
// and the optional `energy:`, `economics:`, `reliability:` (energy/). Documented in
// docs/job-spec.md and docs/energy.md.
#pragma once

#include <optional>
#include <string>

#include "energy/spec_io.hpp"
#include "platforms/cluster_spec.hpp"
#include "sim/spec_error.hpp"
#include "sim/yaml_spec.hpp"
#include "workloads/job_spec.hpp"

namespace clustersim::tools {

/// How to simulate (the job's optional `simulation:` section; command-line flags override).
struct SimulationSpec {
  std::string replicas = "auto";  ///< auto | full | identical (docs/engine.md)
  std::optional<SourceLocation> replicas_at;  ///< where the job file gives `simulation.replicas`
  std::string cost = "measured";  ///< measured | roofline (docs/cost-model.md)
  std::string nccl_algo;          ///< "" (NCCL-style choice) | ring | tree | hierarchical | nvls
  bool interference = true;       ///< compute/communication interference (docs/engine.md)
  std::string nccl_proto;         ///< "" (NCCL's own choice) | LL | LL128 | Simple | auto
  bool cost_isolated_tp = true;   ///< EngineOptions::cost_isolated_tp (docs/engine.md)
  bool fold_tp = true;            ///< EngineOptions::fold_tp (docs/engine.md)
  bool power_state = true;        ///< GEMM/attention clock boost under the power limit
                                  ///< (sim::apply_power_state, docs/cost-model.md)
  std::string microbatches = "all";  ///< all | auto: steady-state window (docs/engine.md)
};

/// A validated job.
struct Job {
  platforms::ClusterSpec cluster;
  workloads::WorkloadSpec workload;
  energy::EnergySection energy;            ///< PUE, tokens to train (defaults when absent)
  energy::EconomicsSection economics;      ///< pricing (platform figures fill the gaps)
  energy::ReliabilitySection reliability;  ///< failures, recovery, checkpointing
  SimulationSpec simulation;
  std::string origin;  ///< file path, or "<built-in default>"
  /// Where training.attention_backend is given (the training mapping's line when absent), for
  /// the errors that depend on the cost model chosen later (simulate.cpp).
  SourceLocation attention_backend_at;
};

/// Loads and validates a job file. @throws SpecError (file:line, field, reason).
Job load_job(const std::string& path);

/// Validates a job given as a parsed top-level mapping (a job file, or one that validate,
/// scale or sweep derived from it); errors carry the mapping's file and lines. Calls finish().
/// @throws SpecError (file:line, field, reason).
Job parse_job(YamlMap root);

/// The built-in default job: GPT-3 175B on 128 H100 (hgx_h100), TP4 PP8 DP4 with sequence
/// parallelism, seq 2048, global batch 256, micro batch 1, BF16 (case s0_gpt3_175b_128_bf16 of
/// the reference set, run with the 1F1B schedule).
Job load_default_job();

/// The YAML text of the default job (printed by `clustersim run --show-default`).
const std::string& default_job_yaml();

}  // namespace clustersim::tools
