// The model catalog (workloads/models/*.yaml, one model per file, dimensions cited in comments)
// and the reader of model dimensions shared by catalog files and inline job specs.
#pragma once

#include <string>
#include <vector>

#include "sim/yaml_spec.hpp"
#include "workloads/job_spec.hpp"

namespace clustersim::workloads {

/// Directory of the catalog (compiled in: CLUSTERSIM_MODEL_DIR).
const std::string& model_catalog_dir();

/// Names of the catalog models (file stems), sorted.
std::vector<std::string> catalog_model_names();

/// Loads a catalog model by name. @throws SpecError with file "<catalog>" when the name is not
/// in the catalog, or located in the model file when the file is invalid.
ModelSpec load_catalog_model(const std::string& name);

/// Reads the job's `model` value from `root`: a catalog name (scalar), a mapping of inline
/// dimensions, or a mapping `{catalog: NAME, <overrides>}`; validates the result.
/// @throws SpecError located at the offending field (in the job or in the catalog file).
ModelSpec parse_model_section(YamlMap& root);

}  // namespace clustersim::workloads
