#include "tools/job_variants.hpp"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "sim/spec_error.hpp"
#include "sim/yaml_spec.hpp"

namespace clustersim::tools {

struct JobTemplate::Impl {
  std::string file;
  std::string text;
  Job base;
};

JobTemplate::JobTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

JobTemplate JobTemplate::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw SpecError(path, 0, "", "cannot open file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto impl = std::make_shared<Impl>();
  impl->file = path;
  impl->text = buffer.str();
  impl->base = parse_job(YamlMap::load_string(impl->text, path));
  return JobTemplate(std::move(impl));
}

const Job& JobTemplate::base() const { return impl_->base; }

const std::string& JobTemplate::file() const { return impl_->file; }

const std::string& JobTemplate::text() const { return impl_->text; }

Job JobTemplate::derive(const std::vector<Override>& overrides) const {
  // Parsed again for every variant: the nodes keep the file's line marks, and nothing is
  // shared between variants.
  YAML::Node root = YAML::Load(impl_->text);
  for (const auto& [path, value] : overrides) {
    const auto dot = path.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == path.size()) {
      throw std::invalid_argument("override path '" + path + "' is not SECTION.KEY");
    }
    const std::string section = path.substr(0, dot);
    const std::string key = path.substr(dot + 1);
    YAML::Node block = root[section];
    if (block.IsDefined() && !block.IsNull() && !block.IsMap()) {
      throw SpecError(impl_->file, block.Mark().line + 1, section, "expected a mapping");
    }
    if (value.empty()) {
      if (block.IsMap()) block.remove(key);
      continue;
    }
    // A flow list ("[a, b]", set-valued sweep dimensions) goes in as a YAML sequence.
    if (value.front() == '[') {
      block[key] = YAML::Load(value);
    } else {
      block[key] = value;
    }
  }
  return parse_job(YamlMap(root, impl_->file, ""));
}

}  // namespace clustersim::tools
