// A JSON object read strictly for the trace reader (workloads/trace_io.cpp): every accessor marks
// its key known, finish() rejects the rest; errors are SpecErrors at the trace's file, line and
// dotted field. Internal to workloads/.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include "sim/spec_error.hpp"
#include "sim/trace.hpp"

namespace clustersim::workloads {

/// Strict accessors over one JSON object of a trace line.
class JsonFields {
 public:
  /// `prefix`: the dotted field of this object in error messages.
  JsonFields(const nlohmann::json& j, std::string origin, int line, std::string prefix)
      : j_(j), origin_(std::move(origin)), line_(line), prefix_(std::move(prefix)) {
    if (!j_.is_object()) throw error("", "expected a JSON object");
  }

  SpecError error(const std::string& key, const std::string& reason) const {
    std::string field = prefix_;
    if (!key.empty()) field += (field.empty() ? "" : ".") + key;
    return SpecError(origin_, line_, field, reason);
  }

  const nlohmann::json& get(const std::string& key) {
    known_.insert(key);
    auto it = j_.find(key);
    if (it == j_.end()) throw error("", "missing required field '" + key + "'");
    return *it;
  }
  bool has(const std::string& key) {
    known_.insert(key);
    return j_.contains(key);
  }
  std::int64_t get_int(const std::string& key, std::int64_t min, std::int64_t max) {
    const nlohmann::json& v = get(key);
    if (!v.is_number_integer()) throw error(key, "expected an integer");
    const auto value = v.get<std::int64_t>();
    if (value < min || value > max) {
      throw error(key, "value " + std::to_string(value) + " is out of range [" +
                           std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    return value;
  }
  double get_number(const std::string& key, double min) {
    const nlohmann::json& v = get(key);
    if (!v.is_number()) throw error(key, "expected a number");
    const double value = v.get<double>();
    if (!std::isfinite(value) || value < min) {
      throw error(key, "expected a finite number >= " + std::to_string(min));
    }
    return value;
  }
  bool get_bool(const std::string& key) {
    const nlohmann::json& v = get(key);
    if (!v.is_boolean()) throw error(key, "expected true or false");
    return v.get<bool>();
  }
  std::string get_string(const std::string& key) {
    const nlohmann::json& v = get(key);
    if (!v.is_string()) throw error(key, "expected a string");
    return v.get<std::string>();
  }
  template <typename E, std::size_t N>
  E get_enum(const std::string& key, const std::array<E, N>& values) {
    return parse_enum(key, get_string(key), values);
  }
  template <typename E, std::size_t N>
  E parse_enum(const std::string& key, const std::string& text, const std::array<E, N>& values) const {
    std::string names;
    for (E v : values) {
      if (text == sim::to_string(v)) return v;
      names += (names.empty() ? "" : ", ") + std::string(sim::to_string(v));
    }
    throw error(key, "'" + text + "' is not one of: " + names);
  }
  void finish() const {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (known_.count(it.key()) == 0) throw error(it.key(), "unknown key '" + it.key() + "'");
    }
  }

 private:
  const nlohmann::json& j_;
  std::string origin_;
  int line_;
  std::string prefix_;
  std::set<std::string> known_;
};

}  // namespace clustersim::workloads
