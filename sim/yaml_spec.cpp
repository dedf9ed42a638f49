#include "sim/yaml_spec.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <utility>

namespace clustersim {
namespace {

// A scalar written without quotes or tag: yaml-cpp tags plain ones "?", quoted ones "!" (YAML's
// non-specific tags) and explicit ones by their name ("!!str 8" is tag:yaml.org,2002:str); a
// quoted or tagged "8" is a string in YAML, not a number; numbers and booleans must be plain.
bool plain_scalar(const YAML::Node& node) {
  return node.IsScalar() && (node.Tag() == "?" || node.Tag().empty());
}

// A plain decimal integer: an optional sign and digits, no leading zero. yaml-cpp also decodes
// YAML 1.1's octal ("010" is 8) and hex ("0x8"), which a job or platform file would mean as ten
// or not at all, so those are errors rather than silent reinterpretations.
bool decode_decimal(const YAML::Node& node, std::int64_t& out) {
  if (!plain_scalar(node)) return false;
  const std::string& text = node.Scalar();
  std::size_t i = text.empty() || (text[0] != '+' && text[0] != '-') ? 0 : 1;
  if (i >= text.size() || (text[i] == '0' && i + 1 < text.size())) return false;
  for (std::size_t j = i; j < text.size(); ++j) {
    if (text[j] < '0' || text[j] > '9') return false;
  }
  return YAML::convert<std::int64_t>::decode(node, out);
}

int node_line(const YAML::Node& node) {
  const auto mark = node.Mark();
  return mark.line >= 0 ? mark.line + 1 : 0;
}

// Whether the quoted scalar that starts at `pos` of `text` has its closing quote. yaml-cpp
// 0.7 ends a quoted scalar left open at the end of the input there, as if it were closed, so a
// file cut after `name: "mine` would load; YAML (1.2, 7.3) requires the closing quote.
bool quote_closed(const std::string& text, std::size_t pos) {
  if (pos >= text.size() || (text[pos] != '"' && text[pos] != '\'')) return true;  // not ours to judge
  const char q = text[pos];
  for (std::size_t i = pos + 1; i < text.size(); ++i) {
    if (q == '"' && text[i] == '\\') {
      ++i;  // an escape: the next character is the escaped one
    } else if (text[i] == q) {
      if (q == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;  // '' is a quote inside a single-quoted scalar
      } else {
        return true;
      }
    }
  }
  return false;
}

// Bounds of the walk below. An alias makes yaml-cpp share the anchored node, so an anchor
// inside itself (`a: &a [*a]`) is a cycle, and aliases of aliases ("billion laughs") expand
// exponentially: without bounds the walk would overflow the stack or not end. A job,
// platform or reference file nests a few levels and holds thousands of nodes.
constexpr int kMaxYamlDepth = 64;
constexpr long kMaxYamlNodes = 1000000;

// For a parse error: the first line indented with a tab, which YAML forbids and yaml-cpp reports
// as some other error at another line; empty when no line is.
std::string tab_indent_hint(const std::string& text) {
  int line = 1;
  bool at_indent = true;
  for (char c : text) {
    if (c == '\n') {
      ++line;
      at_indent = true;
    } else if (at_indent && c == '\t') {
      return " (line " + std::to_string(line) + " is indented with a tab; YAML indents with spaces only)";
    } else if (c != ' ') {
      at_indent = false;
    }
  }
  return "";
}

// Throws for a quoted scalar of `node` (keys included) left open at the end of the input, and
// for nesting or expansion beyond the bounds above (at the line where it is found).
void check_quotes(const YAML::Node& node, const std::string& text, const std::string& origin, int depth,
                  long& budget) {
  if (depth > kMaxYamlDepth || --budget < 0) {
    throw SpecError(origin, node_line(node), "",
                    "invalid YAML: nested deeper than " + std::to_string(kMaxYamlDepth) + " levels or over " +
                        std::to_string(kMaxYamlNodes) + " nodes (an anchor aliased inside itself, or aliases "
                        "of aliases?)");
  }
  if (node.IsScalar() && node.Tag() == "!" && node.Mark().pos >= 0 &&
      !quote_closed(text, static_cast<std::size_t>(node.Mark().pos))) {
    throw SpecError(origin, node_line(node), "", "invalid YAML: a quoted string is not closed");
  }
  if (node.IsSequence()) {
    for (const auto& item : node) check_quotes(item, text, origin, depth + 1, budget);
  } else if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      check_quotes(it->first, text, origin, depth + 1, budget);
      check_quotes(it->second, text, origin, depth + 1, budget);
    }
  }
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

}  // namespace

YamlMap::YamlMap(YAML::Node node, std::string file, std::string path)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {
  if (!node_.IsMap()) {
    throw SpecError(file_, node_line(node_), path_.empty() ? "(top level)" : path_,
                    "expected a mapping of key: value");
  }
  // yaml-cpp keeps both entries of a repeated key and lookups return the first, so a repeated
  // key would silently drop the later value: an error instead.
  std::map<std::string, int> first_line;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = it->first.Scalar();
    const auto [at, inserted] = first_line.emplace(key, node_line(it->first));
    if (!inserted) {
      throw SpecError(file_, node_line(it->first), field(key),
                      "duplicate key '" + key + "' (first given at line " +
                          std::to_string(at->second) + ")");
    }
  }
}

YamlMap& YamlMap::operator=(const YamlMap& other) {
  if (this != &other) {
    node_.reset(other.node_);
    file_ = other.file_;
    path_ = other.path_;
    known_ = other.known_;
  }
  return *this;
}

YamlMap& YamlMap::operator=(YamlMap&& other) noexcept {
  if (this != &other) {
    node_.reset(other.node_);
    file_ = std::move(other.file_);
    path_ = std::move(other.path_);
    known_ = std::move(other.known_);
  }
  return *this;
}

YamlMap YamlMap::load_file(const std::string& file) {
  std::error_code ec;
  // An ifstream opens a directory and reads nothing: it would read as an empty document.
  if (std::filesystem::is_directory(file, ec)) throw SpecError(file, 0, "", "is a directory, not a YAML file");
  std::ifstream in(file);
  if (!in) throw SpecError(file, 0, "", "cannot open file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return load_string(buffer.str(), file);
}

YAML::Node YamlMap::parse_document(const std::string& text, const std::string& origin) {
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    throw SpecError(origin, e.mark.line >= 0 ? e.mark.line + 1 : 0, "",
                    "invalid YAML: " + e.msg + tab_indent_hint(text));
  }
  // A file is one document: what follows a '---' would otherwise be dropped unread, unknown keys
  // and all. Empty documents (a leading or trailing '---') hold nothing to drop.
  std::vector<YAML::Node> held;
  for (const auto& d : documents) {
    if (d.IsDefined() && !d.IsNull()) held.push_back(d);
  }
  if (held.empty()) throw SpecError(origin, 0, "", "empty document");
  if (held.size() > 1) {
    throw SpecError(origin, node_line(held[1]), "",
                    "a second YAML document (after '---'): the file must hold one");
  }
  long budget = kMaxYamlNodes;
  check_quotes(held.front(), text, origin, 0, budget);
  return held.front();
}

YamlMap YamlMap::load_string(const std::string& text, const std::string& origin) {
  return YamlMap(parse_document(text, origin), origin, "");
}

std::string YamlMap::field(const std::string& key) const {
  if (path_.empty()) return key;
  if (key.empty()) return path_;
  return path_ + "." + key;
}

int YamlMap::line() const { return node_line(node_); }

int YamlMap::line_of(const std::string& key) const {
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (it->first.Scalar() == key) return node_line(it->first);
  }
  return line();
}

SpecError YamlMap::error(const std::string& key, const std::string& reason) const {
  return SpecError(file_, key.empty() ? line() : line_of(key), field(key), reason);
}

SourceLocation YamlMap::location(const std::string& key) const {
  return SourceLocation{file_, key.empty() ? line() : line_of(key), field(key)};
}

bool YamlMap::has(const std::string& key) {
  known_.insert(key);
  return static_cast<bool>(node_[key]);
}

YAML::Node YamlMap::require(const std::string& key) {
  known_.insert(key);
  YAML::Node value = node_[key];
  if (!value) throw error("", "missing required field '" + key + "'");
  if (value.IsNull()) throw error(key, "has no value");
  return value;
}

std::int64_t YamlMap::get_int(const std::string& key, std::int64_t min, std::int64_t max) {
  YAML::Node value = require(key);
  std::int64_t parsed = 0;
  if (!decode_decimal(value, parsed)) {
    throw error(key, "expected a decimal integer (no leading zeros, no 0x, unquoted), got '" +
                         (value.IsScalar() ? value.Scalar() : "a collection") + "'");
  }
  if (parsed < min || parsed > max) {
    throw error(key, "value " + std::to_string(parsed) + " is out of range [" + std::to_string(min) +
                         ", " + std::to_string(max) + "]");
  }
  return parsed;
}

std::int64_t YamlMap::get_int_or(const std::string& key, std::int64_t fallback, std::int64_t min,
                                 std::int64_t max) {
  return has(key) ? get_int(key, min, max) : fallback;
}

double YamlMap::get_double(const std::string& key, double min, double max) {
  YAML::Node value = require(key);
  double parsed = 0.0;
  if (!plain_scalar(value) || !YAML::convert<double>::decode(value, parsed)) {
    throw error(key, "expected a number (unquoted), got '" +
                         (value.IsScalar() ? value.Scalar() : "a collection") + "'");
  }
  if (!(parsed >= min && parsed <= max)) {
    std::ostringstream msg;
    msg << "value " << parsed << " is out of range [" << min << ", " << max << "]";
    throw error(key, msg.str());
  }
  return parsed;
}

double YamlMap::get_double_or(const std::string& key, double fallback, double min, double max) {
  return has(key) ? get_double(key, min, max) : fallback;
}

bool YamlMap::get_bool(const std::string& key) {
  YAML::Node value = require(key);
  // YAML 1.2's booleans only: yaml-cpp also decodes YAML 1.1's yes/no/on/off/y/n, which YAML
  // 1.2 reads as strings.
  static const std::set<std::string> kTrue = {"true", "True", "TRUE"};
  static const std::set<std::string> kFalse = {"false", "False", "FALSE"};
  if (plain_scalar(value) && kTrue.count(value.Scalar()) != 0) return true;
  if (plain_scalar(value) && kFalse.count(value.Scalar()) != 0) return false;
  throw error(key, "expected true or false (unquoted), got '" +
                       (value.IsScalar() ? value.Scalar() : "a collection") + "'");
}

bool YamlMap::get_bool_or(const std::string& key, bool fallback) {
  return has(key) ? get_bool(key) : fallback;
}

std::string YamlMap::get_string(const std::string& key) {
  YAML::Node value = require(key);
  if (!value.IsScalar()) throw error(key, "expected a string");
  return value.Scalar();
}

std::string YamlMap::get_string_or(const std::string& key, const std::string& fallback) {
  return has(key) ? get_string(key) : fallback;
}

std::string YamlMap::get_enum(const std::string& key, const std::vector<std::string>& allowed) {
  std::string value = get_string(key);
  for (const auto& option : allowed) {
    if (value == option) return value;
  }
  throw error(key, "'" + value + "' is not one of: " + join(allowed));
}

std::string YamlMap::get_enum_or(const std::string& key, const std::string& fallback,
                                 const std::vector<std::string>& allowed) {
  return has(key) ? get_enum(key, allowed) : fallback;
}

template <typename T, typename Parse>
T YamlMap::get_quantity(const std::string& key, Parse parse) {
  const std::string text = get_string(key);
  try {
    return parse(text);
  } catch (const UnitError& e) {
    throw error(key, e.what());
  }
}

Bytes YamlMap::get_bytes(const std::string& key) {
  return get_quantity<Bytes>(key, parse_bytes);
}
BytesPerSecond YamlMap::get_bandwidth(const std::string& key) {
  return get_quantity<BytesPerSecond>(key, parse_bandwidth);
}
Seconds YamlMap::get_duration(const std::string& key) {
  return get_quantity<Seconds>(key, parse_duration);
}
FlopsPerSecond YamlMap::get_flops(const std::string& key) {
  return get_quantity<FlopsPerSecond>(key, parse_flops);
}
Watts YamlMap::get_power(const std::string& key) {
  return get_quantity<Watts>(key, parse_power);
}

YamlMap YamlMap::get_map(const std::string& key) {
  YAML::Node value = require(key);
  if (!value.IsMap()) throw error(key, "expected a mapping");
  return YamlMap(value, file_, field(key));
}

std::optional<YamlMap> YamlMap::get_map_opt(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return get_map(key);
}

std::vector<YamlMap> YamlMap::get_map_list(const std::string& key) {
  YAML::Node value = require(key);
  if (!value.IsSequence()) throw error(key, "expected a list");
  std::vector<YamlMap> out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    out.emplace_back(value[i], file_, field(key) + "[" + std::to_string(i) + "]");
  }
  return out;
}

std::vector<std::int64_t> YamlMap::get_int_list(const std::string& key, std::int64_t min,
                                                std::int64_t max) {
  YAML::Node value = require(key);
  if (!value.IsSequence()) throw error(key, "expected a list of integers");
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    std::int64_t parsed = 0;
    if (!decode_decimal(value[i], parsed) || parsed < min || parsed > max) {
      throw SpecError(file_, node_line(value[i]), field(key) + "[" + std::to_string(i) + "]",
                      "expected an integer in [" + std::to_string(min) + ", " +
                          std::to_string(max) + "]");
    }
    out.push_back(parsed);
  }
  return out;
}

std::vector<std::string> YamlMap::get_enum_list(const std::string& key,
                                                const std::vector<std::string>& allowed) {
  YAML::Node value = require(key);
  if (!value.IsSequence()) throw error(key, "expected a list of: " + join(allowed));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string at = field(key) + "[" + std::to_string(i) + "]";
    const std::string item = value[i].IsScalar() ? value[i].Scalar() : std::string();
    if (std::find(allowed.begin(), allowed.end(), item) == allowed.end()) {
      throw SpecError(file_, node_line(value[i]), at,
                      "'" + item + "' is not one of: " + join(allowed));
    }
    if (std::find(out.begin(), out.end(), item) != out.end()) {
      throw SpecError(file_, node_line(value[i]), at, "'" + item + "' is listed twice");
    }
    out.push_back(item);
  }
  return out;
}

bool YamlMap::is_scalar(const std::string& key) {
  known_.insert(key);
  YAML::Node value = node_[key];
  return value && value.IsScalar();
}

std::string YamlMap::flow_text(const std::string& key) {
  known_.insert(key);
  YAML::Node value = node_[key];
  if (!value) return "";
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << value;
  return out.c_str();
}

bool YamlMap::is_map(const std::string& key) {
  known_.insert(key);
  YAML::Node value = node_[key];
  return value && value.IsMap();
}

std::vector<std::string> YamlMap::keys() const {
  std::vector<std::string> out;
  for (auto it = node_.begin(); it != node_.end(); ++it) out.push_back(it->first.Scalar());
  return out;
}

void YamlMap::finish() const {
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (known_.count(key) == 0) {
      std::vector<std::string> known(known_.begin(), known_.end());
      throw SpecError(file_, node_line(it->first), field(key),
                      "unknown key '" + key + "' (known keys here: " + join(known) + ")");
    }
  }
}

}  // namespace clustersim
