#include "tools/cost_models.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

#include "calib/measured_cost_model.hpp"
#include "calib/measured_tables.hpp"
#include "calib/roofline_cost_model.hpp"

namespace clustersim::tools {

namespace {

// The cost models by name (simulation.cost_model, --cost): the GPUs each can cost, and how to
// build one for a GPU.
struct CostModelKind {
  std::vector<std::string> (*gpus)();
  std::unique_ptr<sim::CostModel> (*make)(const sim::GpuSpec&);
  bool (*across_architectures)(const std::string& gpu);  // derives_across_architectures
  // Holds FlashAttention-2's kernels (the measured tables do, calibration runs 52-53).
  bool costs_flash2;
};

// The measured model's GPUs whose derivation rule is cross-architecture; false for a GPU without
// a rule (building the model reports that).
bool measured_across_architectures(const std::string& gpu) {
  try {
    return calib::derivation_rule(gpu).cross_architecture;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

const std::map<std::string, CostModelKind>& cost_model_kinds() {
  static const std::map<std::string, CostModelKind> kKinds = {
      {"measured",
       {calib::measured_model_gpus,
        [](const sim::GpuSpec& gpu) -> std::unique_ptr<sim::CostModel> {
          return std::make_unique<calib::MeasuredCostModel>(
              gpu, calib::MeasuredTables::load(calib::default_measured_dir()));
        },
        measured_across_architectures, true}},
      {"roofline",
       {calib::roofline_gpus,
        [](const sim::GpuSpec& gpu) -> std::unique_ptr<sim::CostModel> {
          return std::make_unique<calib::RooflineCostModel>(gpu);
        },
        [](const std::string&) { return false; },  // datasheet peaks x efficiencies per GPU
        false}},  // FlashAttention-3's published rates only
  };
  return kKinds;
}

const CostModelKind& cost_model_kind(const std::string& name) {
  const auto& kinds = cost_model_kinds();
  const auto it = kinds.find(name);
  if (it == kinds.end()) {
    throw std::invalid_argument("cost model must be measured or roofline, not '" + name + "'");
  }
  return it->second;
}

}  // namespace

std::vector<std::string> cost_model_names() {
  // The registry's names, sorted: "measured", the default, comes first.
  std::vector<std::string> names;
  for (const auto& [name, kind] : cost_model_kinds()) names.push_back(name);
  return names;
}

bool costs_flash2(const std::string& name) { return cost_model_kind(name).costs_flash2; }

const std::vector<std::string>& nccl_protocol_names() {
  static const std::vector<std::string> kNames = {"LL", "LL128", "Simple", "auto"};
  return kNames;
}

sim::NcclProtocol nccl_protocol(const std::string& name) {
  using P = sim::NcclProtocol;
  static const std::map<std::string, P> kProtocols = {
      {"", P::Default}, {"LL", P::LL}, {"LL128", P::LL128}, {"Simple", P::Simple}, {"auto", P::Auto}};
  const auto it = kProtocols.find(name);
  if (it == kProtocols.end()) {
    throw std::invalid_argument("nccl_proto must be LL, LL128, Simple or auto, not '" + name + "'");
  }
  return it->second;
}

bool derives_across_architectures(const std::string& name, const std::string& gpu) {
  return cost_model_kind(name).across_architectures(gpu);
}

std::unique_ptr<sim::CostModel> make_cost_model(const std::string& name, const sim::GpuSpec& gpu) {
  return cost_model_kind(name).make(gpu);
}

std::unique_ptr<sim::CostModel> make_cost_model(const std::string& name,
                                                const platforms::PlatformSpec& platform,
                                                std::optional<sim::CostCorner> corner) {
  const CostModelKind& kind = cost_model_kind(name);
  const std::string& gpu = platform.gpu.name;
  const std::vector<std::string> known = kind.gpus();
  if (std::find(known.begin(), known.end(), gpu) == known.end()) {
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw platform.gpu_name_at.error(
        "the " + name + " cost model knows no GPU named '" + gpu + "' (it knows " + list +
        "): name one of those, or give the GPU a derivation rule (calib/measured_tables.cpp) or "
        "roofline efficiencies (calib/roofline_cost_model.cpp), docs/cost-model.md");
  }
  auto model = kind.make(platform.gpu);
  if (!corner) return model;
  if (!model->uncertainty().stated) {
    throw std::invalid_argument("the " + name + " cost model states no uncertainty of its times, "
                                "so it has no fast or slow end (--uncertainty needs the measured "
                                "model, --cost measured)");
  }
  return std::make_unique<sim::CornerCostModel>(std::move(model), *corner);
}

}  // namespace clustersim::tools
