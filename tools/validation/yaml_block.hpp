// A reference-file mapping read strictly together with its raw yaml-cpp node (internal to the
// reference-set reader: tools/validation/reference_set.cpp and job_keys.cpp).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "sim/yaml_spec.hpp"

namespace clustersim::tools::validation {

/// 1-based line of a node, 0 when unknown.
inline int node_line(const YAML::Node& node) {
  const auto mark = node.Mark();
  return mark.line >= 0 ? mark.line + 1 : 0;
}

/// A mapping read strictly (YamlMap) together with its raw node, for the few values YamlMap has
/// no accessor for (lists of numbers, key lines). The raw node never leaves the reader.
struct Block {
  YamlMap map;
  YAML::Node node;

  /// Line of `key` in the file (the mapping's own line when absent).
  int key_line(const std::string& key) const {
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it->first.Scalar() == key) return node_line(it->first);
    }
    return node_line(node);
  }
  /// The raw value at `key` (a null node when absent).
  YAML::Node raw(const std::string& key) const {
    const YAML::Node& self = node;
    return self[key];
  }
  /// The nested mapping at `key`. @throws SpecError when missing or not a mapping.
  Block child(const std::string& key) { return Block{map.get_map(key), raw(key)}; }
  /// Dotted field path of `key`, for messages.
  std::string field(const std::string& key) const {
    return map.path().empty() ? key : map.path() + "." + key;
  }
};

}  // namespace clustersim::tools::validation
