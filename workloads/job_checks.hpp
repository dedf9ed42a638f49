// Cross-field validation of a workload spec (internal to workloads/): every combination that
// Megatron-LM / NeMo / Transformer Engine reject, or that the simulator cannot represent, with
// the key to change and the reason. Used by the job reader (SpecError at file:line) and by the
// generator (std::invalid_argument for specs built in code).
#pragma once

#include <optional>
#include <string>

#include "sim/yaml_spec.hpp"
#include "workloads/job_spec.hpp"

namespace clustersim::workloads {

/// A rejected combination: the section ("parallelism" or "training"), key and reason.
struct SpecViolation {
  std::string section;
  std::string key;
  std::string reason;
};

/// The first violated constraint of `spec`, or nothing when it is valid.
std::optional<SpecViolation> find_violation(const WorkloadSpec& spec);

/// Throws the first violation as a SpecError located at its key in `parallelism` or `training`.
/// @throws SpecError
void check_workload_spec(const WorkloadSpec& spec, const YamlMap& parallelism,
                         const YamlMap& training);

}  // namespace clustersim::workloads
