// The job-file sections of the energy, cost and reliability models, read strictly (unknown
// keys are errors with file:line). Values a platform supplies by default (rental price,
// capital cost, NVLink-domain MTBF) stay optional here; tools/ resolves them against the
// platform. Documented in docs/energy.md.
//   energy:      {pue: 1.3, train_tokens: 15e12}
//   economics:   {pricing: tco, depreciation_years: 4, usd_per_kwh: 0.1}
//   reliability: {restart: "5min", spare_nodes: 16, node_repair: "24h", domain_mtbf: "20000h"}
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "energy/cost_model.hpp"
#include "energy/reliability.hpp"
#include "sim/yaml_spec.hpp"

namespace clustersim::energy {

/// Where a section was read from, to locate errors found when it is resolved later.
struct SectionOrigin {
  std::string file;
  int line = 0;
  std::string field;  ///< dotted path of the section ("economics")
};

/// `energy:`.
struct EnergySection {
  double pue = 0.0;           ///< default kDefaultPue
  double train_tokens = 0.0;  ///< default kDefaultTrainTokens
};

/// `economics:`; unset optionals come from the platform.
struct EconomicsSection {
  std::optional<Pricing> pricing;
  std::optional<double> rental_usd_per_gpu_hour;
  std::optional<double> capex_usd;
  std::optional<std::string> capex_unit;  ///< "node" or "domain"
  double depreciation_years = 0.0;        ///< default kDefaultDepreciationYears
  double usd_per_kwh = 0.0;               ///< default kDefaultUsdPerKwh
  double opex_usd_per_gpu_year = 0.0;     ///< default 0 (not modelled unless given)
  /// The TCO-only keys the section gives (capex_usd, capex_unit, depreciation_years,
  /// usd_per_kwh, opex_usd_per_gpu_year), so that a rental-priced report can say it did not
  /// use them.
  std::vector<std::string> tco_keys;
  SectionOrigin origin;
};

/// `reliability:`.
struct ReliabilitySection {
  RecoveryInputs recovery;  ///< defaults kDefaultDetectionS, kDefaultRestartS
  bool node_repair_given = false;
  bool domain_repair_given = false;
  double storage_write_bandwidth = 0.0;       ///< default kDefaultStorageBandwidth
  double storage_read_bandwidth = 0.0;        ///< default: the write bandwidth
  double checkpoint_interval_s = 0.0;         ///< 0 = Young/Daly
  std::optional<double> domain_mtbf_h;        ///< NVLink-domain failures (rack-scale platforms)
  std::map<std::string, double> mode_mtbf_h;  ///< overrides of llama3_failure_modes() MTBFs
  int trials = 0;
  std::uint64_t seed = 0;
  SectionOrigin origin;
};

/// Reads `energy:` from the job root if present (marks the key known), else the defaults.
/// @throws SpecError at the offending key.
EnergySection parse_energy_section(YamlMap& root);
/// Reads `economics:` if present, else defaults. @throws SpecError.
EconomicsSection parse_economics_section(YamlMap& root);
/// Reads `reliability:` if present, else defaults. @throws SpecError (unknown mode names
/// included; spare counts need repair times).
ReliabilitySection parse_reliability_section(YamlMap& root);

/// Builds a SpecError located at a section read earlier.
SpecError section_error(const SectionOrigin& origin, const std::string& key,
                        const std::string& reason);

}  // namespace clustersim::energy
