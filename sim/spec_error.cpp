#include "sim/spec_error.hpp"

#include <utility>

namespace clustersim {
namespace {
std::string compose(const std::string& file, int line, const std::string& field,
                    const std::string& reason) {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line);
  out += ": ";
  if (!field.empty()) out += field + ": ";
  out += reason;
  return out;
}
}  // namespace

SpecError::SpecError(std::string file, int line, std::string field, std::string reason)
    : std::runtime_error(compose(file, line, field, reason)),
      file_(std::move(file)),
      line_(line),
      field_(std::move(field)),
      reason_(std::move(reason)) {}

SpecError SourceLocation::error(const std::string& reason) const {
  return SpecError(file, line, field, reason);
}

}  // namespace clustersim
