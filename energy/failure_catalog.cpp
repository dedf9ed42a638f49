#include "energy/failure_catalog.hpp"

namespace clustersim::energy {
namespace {

constexpr const char* kSource = "Llama 3 paper (arXiv 2407.21783) Table 5";

FailureMode from_count(const char* name, UnitKind unit, double units, int count,
                       Recovery recovery) {
  FailureMode m;
  m.name = name;
  m.unit = unit;
  m.mtbf_h = units * kLlama3Hours / count;
  m.recovery = recovery;
  m.source = kSource;
  return m;
}

}  // namespace

std::vector<FailureMode> llama3_failure_modes() {
  const double g = kLlama3Gpus;
  return {
      from_count("gpu", UnitKind::Gpu, g, 148 + 19 + 17 + 6 + 6, Recovery::ReplaceNode),
      from_count("hbm", UnitKind::Gpu, g, 72, Recovery::ReplaceNode),
      from_count("nic", UnitKind::Gpu, g, 7, Recovery::ReplaceNode),
      from_count("network", UnitKind::Gpu, g, 35, Recovery::ReplaceNode),
      from_count("software", UnitKind::Gpu, g, 54 + 7 + 2, Recovery::Restart),
      from_count("host", UnitKind::Node, kLlama3Servers, 32 + 3 + 3 + 2 + 2 + 2 + 2,
                 Recovery::ReplaceNode),
      from_count("planned", UnitKind::Job, 1.0, 47, Recovery::Restart),
  };
}

FailureMode nvlink_domain_failure_mode(double mtbf_h) {
  FailureMode m;
  m.name = "nvlink_domain";
  m.unit = UnitKind::Domain;
  m.mtbf_h = mtbf_h;
  m.recovery = Recovery::ReplaceDomain;
  m.source = "job input (no public figure)";
  return m;
}

}  // namespace clustersim::energy
