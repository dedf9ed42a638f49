// Strict YAML reading for the loaders of every module (job, platform, model, calibration files).
// Each accessor records the key as known; finish() rejects any key nobody asked for, so a typo
// is an error with file:line, never a silent default. YAML::Node stays inside loaders: specs
// built from a YamlMap are plain structs.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/spec_error.hpp"
#include "sim/units.hpp"

namespace clustersim {

/// A YAML mapping read strictly. Copyable view; the node is shared with yaml-cpp.
class YamlMap {
 public:
  /// @param node must be a mapping. @param file for messages. @param path dotted prefix ("" at top).
  /// @throws SpecError if node is not a mapping, or if a key appears twice in it.
  YamlMap(YAML::Node node, std::string file, std::string path);
  YamlMap(const YamlMap&) = default;
  YamlMap(YamlMap&&) = default;
  /// Rebinds this view to `other`'s mapping. (yaml-cpp's Node assignment, which the defaulted
  /// operators would call, overwrites the content of the node this view shares with others:
  /// every other view of the old mapping would then see `other`'s keys.)
  YamlMap& operator=(const YamlMap& other);
  YamlMap& operator=(YamlMap&& other) noexcept;
  ~YamlMap() = default;

  /// Parses a whole file. @throws SpecError if the file cannot be read or is not valid YAML
  /// (with the parser's line), or if its top level is not a mapping.
  static YamlMap load_file(const std::string& file);
  /// Parses YAML text that came from `origin` (used for built-in defaults and tests).
  static YamlMap load_string(const std::string& text, const std::string& origin);
  /// Parses a YAML document (any top level) from `origin`, for readers that also walk the raw
  /// nodes (line numbers of keys). @throws SpecError for invalid YAML (with the parser's line)
  /// or an empty document.
  static YAML::Node parse_document(const std::string& text, const std::string& origin);

  /// True if the key is present (and marks it known).
  bool has(const std::string& key);

  /// Integer in [min, max]. @throws SpecError when missing, not an integer, or out of range.
  std::int64_t get_int(const std::string& key, std::int64_t min, std::int64_t max);
  /// Same, with a default when absent.
  std::int64_t get_int_or(const std::string& key, std::int64_t fallback, std::int64_t min,
                          std::int64_t max);
  /// Real number in [min, max]. @throws SpecError.
  double get_double(const std::string& key, double min, double max);
  double get_double_or(const std::string& key, double fallback, double min, double max);
  /// Boolean (true/false). @throws SpecError.
  bool get_bool(const std::string& key);
  bool get_bool_or(const std::string& key, bool fallback);
  /// String scalar. @throws SpecError.
  std::string get_string(const std::string& key);
  std::string get_string_or(const std::string& key, const std::string& fallback);
  /// String that must be one of `allowed`. @throws SpecError listing the allowed values.
  std::string get_enum(const std::string& key, const std::vector<std::string>& allowed);
  std::string get_enum_or(const std::string& key, const std::string& fallback,
                          const std::vector<std::string>& allowed);

  /// Quantities with units ("80GiB", "400Gbps", "2us", "989TFLOPS", "700W"). @throws SpecError.
  Bytes get_bytes(const std::string& key);
  BytesPerSecond get_bandwidth(const std::string& key);
  Seconds get_duration(const std::string& key);
  FlopsPerSecond get_flops(const std::string& key);
  Watts get_power(const std::string& key);

  /// Nested mapping. @throws SpecError when missing or not a mapping.
  YamlMap get_map(const std::string& key);
  /// Nested mapping if present.
  std::optional<YamlMap> get_map_opt(const std::string& key);
  /// Sequence of mappings. @throws SpecError.
  std::vector<YamlMap> get_map_list(const std::string& key);
  /// Sequence of integers. @throws SpecError.
  std::vector<std::int64_t> get_int_list(const std::string& key, std::int64_t min,
                                         std::int64_t max);
  /// Sequence of strings, each one of `allowed`, none twice. @throws SpecError at the
  /// offending element (its line and index) or at the key when it is not a sequence.
  std::vector<std::string> get_enum_list(const std::string& key, const std::vector<std::string>& allowed);
  /// True if the value at key is a scalar (and marks it known); false if absent.
  bool is_scalar(const std::string& key);
  /// True if the value at key is a mapping (and marks it known); false if absent.
  bool is_map(const std::string& key);
  /// The value at key as one line of flow YAML ("2", "{spine: 2}", "[a, b]"), for reports;
  /// marks it known. Empty if absent.
  std::string flow_text(const std::string& key);
  /// All keys, in file order (marks none).
  std::vector<std::string> keys() const;

  /// @throws SpecError on the first key never asked for ("unknown key 'tpp'; known keys: ...").
  void finish() const;

  /// Builds an error located at `key` (or at the mapping itself when key is empty).
  SpecError error(const std::string& key, const std::string& reason) const;

  /// Where `key` is given (its line, or the mapping's when absent), for errors raised later.
  SourceLocation location(const std::string& key) const;

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  /// 1-based line of the mapping.
  int line() const;

 private:
  YAML::Node require(const std::string& key);
  std::string field(const std::string& key) const;
  int line_of(const std::string& key) const;
  template <typename T, typename Parse>
  T get_quantity(const std::string& key, Parse parse);

  YAML::Node node_;
  std::string file_;
  std::string path_;
  std::set<std::string> known_;
};

}  // namespace clustersim
