#include "tools/validation/job_keys.hpp"

#include <string>
#include <utility>

#include "sim/spec_error.hpp"

namespace clustersim::tools::validation {
namespace {

// A scalar as YAML text that reads back as the same scalar: double-quoted where the file quotes
// it (yaml-cpp's non-specific tag "!") or where it holds a flow indicator, a comment or quote
// character, or surrounding blanks; as written otherwise (so numbers and booleans stay such).
std::string scalar_yaml(const YAML::Node& n) {
  const std::string& v = n.Scalar();
  const bool special = v.empty() || v.find_first_of(",[]{}#:\"'\n\\") != std::string::npos ||
                       v.front() == ' ' || v.back() == ' ';
  if (n.Tag() != "!" && !special) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

// config.job: parallelism and training keys passed to the job (a scalar or a list of scalars
// each); the job's parser checks them, its errors mapped back to these lines.
std::vector<CaseJobKey> read_job_keys(Block b) {
  std::vector<CaseJobKey> out;
  for (const std::string& section : b.map.keys()) {
    if (section != "parallelism" && section != "training") {
      throw SpecError(b.map.file(), b.key_line(section), b.field(section),
                      "only parallelism and training keys (the model comes from models:, the "
                      "cluster from gpu, platform and gpus)");
    }
    Block s = b.child(section);
    for (const std::string& key : s.map.keys()) {
      CaseJobKey k{section, key, "", s.key_line(key)};
      const YAML::Node v = s.raw(key);
      if (s.map.is_scalar(key)) {
        k.yaml = scalar_yaml(v);
      } else {
        if (!v.IsSequence()) throw s.map.error(key, "expected a scalar or a list of scalars");
        for (const auto& e : v) {
          if (!e.IsScalar()) throw s.map.error(key, "expected a scalar or a list of scalars");
          k.yaml += (k.yaml.empty() ? "[" : ", ") + scalar_yaml(e);
        }
        k.yaml = k.yaml.empty() ? "[]" : k.yaml + "]";
      }
      out.push_back(std::move(k));
    }
  }
  return out;
}

}  // namespace clustersim::tools::validation
