// Variants of a job file for scale and sweep: the file stays parsed, each variant replaces a
// few keys (GPU count, parallel sizes, batch) and goes through the job reader again, so every
// variant is validated like a hand-written job and errors point at the file's lines.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tools/job.hpp"

namespace clustersim::tools {

/// One replaced key: a dotted path of two levels ("parallelism.tp", "cluster.gpus") and its
/// YAML scalar text ("4"), or a flow list ("[core_attn, attn_proj]"); an empty value removes the
/// key.
using Override = std::pair<std::string, std::string>;

/// A job file kept for deriving variants.
class JobTemplate {
 public:
  /// Reads and validates the file. @throws SpecError (file:line, field, reason).
  static JobTemplate load(const std::string& path);

  /// The job as written.
  const Job& base() const;
  /// The file path.
  const std::string& file() const;
  /// The job file's text, as read.
  const std::string& text() const;

  /// The job with `overrides` applied, validated by the job reader. Errors about replaced keys
  /// name the key and point at the line of the key it replaced (or of its block when the file
  /// did not have it). @throws SpecError; std::invalid_argument for a malformed override path.
  Job derive(const std::vector<Override>& overrides) const;

 private:
  struct Impl;
  explicit JobTemplate(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace clustersim::tools
