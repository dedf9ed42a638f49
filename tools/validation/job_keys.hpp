// config.job of a reference-set case: further parallelism and training job keys, read as YAML
// text that the case's job carries as written (internal to the reference-set reader).
#pragma once

#include <vector>

#include "tools/validation/reference_set.hpp"
#include "tools/validation/yaml_block.hpp"

namespace clustersim::tools::validation {

/// The keys of a case's `config.job` mapping, in file order: each a scalar or a list of scalars
/// under `parallelism` or `training`. @throws SpecError naming the file, line and field for
/// another section or a value of another shape.
std::vector<CaseJobKey> read_job_keys(Block b);

}  // namespace clustersim::tools::validation
