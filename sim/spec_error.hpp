// The one error type for bad user input (job specs, platform files, model files, traces).
#pragma once

#include <stdexcept>
#include <string>

namespace clustersim {

/// Bad input: names the file, the 1-based line (0 when unknown), the field (dotted path, e.g.
/// "parallelism.tp") and the reason. what() reads "FILE:LINE: FIELD: REASON".
/// The CLI maps it to exit code 2.
class SpecError : public std::runtime_error {
 public:
  /// @param file path of the input as the user gave it ("<built-in>" for defaults)
  /// @param line 1-based line, 0 if unknown
  /// @param field dotted field path
  /// @param reason what is wrong and, where useful, what is expected
  SpecError(std::string file, int line, std::string field, std::string reason);

  /// The input file as the user named it.
  const std::string& file() const { return file_; }
  /// 1-based line in it, 0 if unknown.
  int line() const { return line_; }
  /// Dotted path of the offending field ("parallelism.tp"), empty for the whole file.
  const std::string& field() const { return field_; }
  /// What is wrong, without the file, line and field.
  const std::string& reason() const { return reason_; }

 private:
  std::string file_;
  int line_;
  std::string field_;
  std::string reason_;
};

/// Where a field of an input file was given, kept by specs for errors found after loading
/// (e.g. a platform's GPU name that no cost model knows).
struct SourceLocation {
  std::string file;   ///< path of the input as the user gave it
  int line = 0;       ///< 1-based line, 0 if unknown
  std::string field;  ///< dotted field path

  /// The SpecError for `reason` at this place.
  SpecError error(const std::string& reason) const;
};

}  // namespace clustersim
