// A measured point of the reference set becomes a job: the fields its case states, the
// documented defaults of its recipe family for the fields the source leaves unstated
// (tools/validation/recipe_families.hpp), then the job reader of tools/job.hpp. Nothing here
// reads a measured result: the measurement only says which GPU count, sequence and GPU to run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/job.hpp"
#include "tools/validation/reference_set.hpp"

namespace clustersim::tools::validation {

/// One key of the job a point becomes, and where its value came from.
struct JobField {
  std::string section;  ///< "cluster", "parallelism" or "training"
  std::string key;      ///< the job key (docs/job-spec.md), e.g. "vp"
  std::string value;    ///< YAML scalar text
  int line = 0;         ///< reference-file line of a stated value; the case's line for defaults
  std::string cite;     ///< citation tag of a recipe default; empty when the case states it
  bool yaml = false;    ///< `value` is YAML text written as it is (config.job), not a scalar
};

/// The job fields of one point while they are being assembled: first what the case states,
/// then what its recipe family fills in.
class DraftJob {
 public:
  /// Sets a field the case states (replacing nothing: each key is stated once).
  void state(const std::string& section, const std::string& key, const std::string& value,
             int line);
  /// Sets a field the case states as YAML text (config.job), written into the job as it is.
  void state_yaml(const std::string& section, const std::string& key, const std::string& yaml,
                  int line);
  /// Sets a recipe default unless the field is already set. Returns true if it was applied.
  bool fill(const std::string& section, const std::string& key, const std::string& value,
            const std::string& cite, int line);
  /// The field, or nullptr.
  const JobField* find(const std::string& section, const std::string& key) const;
  /// The field as an integer, or `fallback` when unset. @throws std::invalid_argument when set
  /// to a non-integer.
  std::int64_t get_int(const std::string& section, const std::string& key,
                       std::int64_t fallback) const;
  /// All fields in the order they were set.
  const std::vector<JobField>& fields() const { return fields_; }

 private:
  std::vector<JobField> fields_;
};

/// The job a point becomes.
struct CaseJob {
  std::string family;             ///< recipe family name
  std::vector<JobField> fields;   ///< cluster, parallelism and training keys
  std::string yaml;               ///< the job file text (model, cluster, parallelism, training)
  std::vector<int> line_map;      ///< line i+1 of `yaml` came from this reference-file line

  /// The defaults applied, "key=value [CITE]", in order.
  std::vector<std::string> defaults() const;
};

/// The GPU count a point runs at: its own, or the case config's single count; 0 if neither.
std::int64_t point_gpus(const ReferenceCase& rc, const MeasuredPoint& point);

/// Builds the job of `point` of `rc`. @throws SpecError located in the reference file when the
/// case is inconsistent (gbs vs grad_accum, an expression that does not divide) or a needed
/// field is unstated and its family has no default.
CaseJob build_case_job(const ReferenceSet& set, const ReferenceCase& rc,
                       const MeasuredPoint& point);

/// Reads the job through tools::parse_job. SpecErrors about the generated text are re-located
/// at the reference-file line the offending value came from, with the case id in the reason.
/// @throws SpecError.
Job load_case_job(const ReferenceSet& set, const ReferenceCase& rc, const CaseJob& job);

/// Evaluates a global-batch expression: an integer, or a product/quotient of integers and the
/// word `gpus` ("16*gpus", "gpus/2", "7*gpus/16"). Returns nullopt if it is malformed or the
/// result is not a positive integer; `why` says which.
std::optional<std::int64_t> eval_batch_expression(const std::string& text, std::int64_t gpus,
                                                  std::string* why);

}  // namespace clustersim::tools::validation
