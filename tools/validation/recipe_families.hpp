// Recipe families: the documented defaults for the fields a source leaves unstated, one family
// per kind of published recipe (NeMo / DGX Cloud benchmarks, the Llama 3 paper, DeepSpeed
// ZeRO). Each default cites where it comes from; none is derived from a measured result.
// A registry maps a case to its family: its `recipe:` key, else the first word of `source:`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/validation/case_job.hpp"
#include "tools/validation/reference_set.hpp"

namespace clustersim::tools::validation {

/// What a family sees of the point it fills in.
struct FamilyInput {
  const ReferenceSet& set;
  const ReferenceCase& rc;
  const MeasuredPoint& point;
  std::int64_t gpus = 0;
};

/// A recipe family.
struct RecipeFamily {
  std::string name;                  ///< e.g. "nemo_dgxc"
  std::string summary;               ///< one line for the validate output
  std::vector<std::string> sources;  ///< `source:` tags it covers ("S0", "DGXC")
  /// Fills the defaults of the family into `job` (DraftJob::fill never overrides a stated field).
  void (*apply)(const FamilyInput& in, DraftJob& job) = nullptr;
};

/// A citation of a default: tag and full reference.
struct Citation {
  std::string tag;
  std::string text;
};

/// All families, in a fixed order.
const std::vector<RecipeFamily>& recipe_families();

/// The family of a case: its `recipe:` (a family name) or, without it, the family whose sources
/// include the first word of `source:`. @throws SpecError at the case (or its recipe key) when
/// neither names a family, listing the known ones.
const RecipeFamily& family_of(const ReferenceSet& set, const ReferenceCase& rc);

/// Every citation tag a default may carry, with its reference.
const std::vector<Citation>& citations();

/// The platform catalog name for a GPU named by a source ("H100-SXM" -> "hgx_h100") or by a
/// figure's tag ("h200" -> "hgx_h200"); empty when unknown.
std::string platform_for_gpu(const std::string& gpu_name_or_tag);

}  // namespace clustersim::tools::validation
