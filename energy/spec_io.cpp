#include "energy/spec_io.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "energy/defaults.hpp"
#include "energy/failure_catalog.hpp"

namespace clustersim::energy {
namespace {

constexpr int kMaxSpares = 1 << 20;

SectionOrigin origin_of(const YamlMap& map) { return {map.file(), map.line(), map.path()}; }

// `spare_nodes: unlimited` or a count; -1 stands for unlimited.
int read_spares(YamlMap& m, const char* key, int fallback) {
  if (!m.has(key)) return fallback;
  if (m.get_string(key) == "unlimited") return -1;
  return static_cast<int>(m.get_int(key, 0, kMaxSpares));
}

std::vector<std::string> mode_names() {
  std::vector<std::string> names;
  for (const auto& mode : llama3_failure_modes()) names.push_back(mode.name);
  return names;
}

void read_mode_overrides(YamlMap& r, ReliabilitySection& s) {
  auto modes = r.get_map_opt("mode_mtbf");
  if (!modes) return;
  const auto known = mode_names();
  for (const std::string& key : modes->keys()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw modes->error(key, "unknown failure mode '" + key + "' (known: " + list + ")");
    }
    const double mtbf_s = modes->get_duration(key).value;
    if (!(mtbf_s > 0)) throw modes->error(key, "an MTBF must be positive");
    s.mode_mtbf_h[key] = mtbf_s / 3600.0;
  }
  modes->finish();
}

// A recovery time or checkpoint interval of at most a year (8,760 h): a training run's whole
// horizon; beyond it the Monte-Carlo's days print as hundreds of digits.
constexpr double kMaxRecoveryS = 365.0 * 24.0 * 3600.0;

double read_recovery_time(YamlMap& r, const char* key) {
  const double v = r.get_duration(key).value;
  if (v > kMaxRecoveryS) throw r.error(key, "must be at most a year (8760h)");
  return v;
}

void read_recovery(YamlMap& r, ReliabilitySection& s) {
  auto& rec = s.recovery;
  rec.detection_s = r.has("detection") ? read_recovery_time(r, "detection") : kDefaultDetectionS;
  rec.restart_s = r.has("restart") ? read_recovery_time(r, "restart") : kDefaultRestartS;
  rec.spare_nodes = read_spares(r, "spare_nodes", -1);
  rec.spare_domains = read_spares(r, "spare_domains", 0);
  s.node_repair_given = r.has("node_repair");
  if (s.node_repair_given) rec.node_repair_s = read_recovery_time(r, "node_repair");
  s.domain_repair_given = r.has("domain_repair");
  if (s.domain_repair_given) rec.domain_repair_s = read_recovery_time(r, "domain_repair");
  if (rec.spare_nodes >= 0 && !s.node_repair_given) {
    throw r.error("spare_nodes",
                  "a finite number of spare nodes needs node_repair (the time a "
                  "failed node takes to come back; no public default exists)");
  }
}

}  // namespace

SpecError section_error(const SectionOrigin& o, const std::string& key, const std::string& reason) {
  return SpecError(o.file, o.line, key.empty() ? o.field : o.field + "." + key, reason);
}

EnergySection parse_energy_section(YamlMap& root) {
  EnergySection s{kDefaultPue, kDefaultTrainTokens};
  auto m = root.get_map_opt("energy");
  if (!m) return s;
  s.pue = m->get_double_or("pue", kDefaultPue, 1.0, 5.0);
  s.train_tokens = m->get_double_or("train_tokens", kDefaultTrainTokens, 0.0, 1e18);
  if (!(s.train_tokens > 0)) {
    throw m->error("train_tokens", "must be positive (the tokens a training run trains on)");
  }
  m->finish();
  return s;
}

EconomicsSection parse_economics_section(YamlMap& root) {
  EconomicsSection s;
  s.depreciation_years = kDefaultDepreciationYears;
  s.usd_per_kwh = kDefaultUsdPerKwh;
  auto m = root.get_map_opt("economics");
  if (!m) return s;
  s.origin = origin_of(*m);
  if (m->has("pricing")) {
    s.pricing =
        m->get_enum("pricing", {"rental", "tco"}) == "rental" ? Pricing::Rental : Pricing::Tco;
  }
  if (m->has("usd_per_gpu_hour"))
    s.rental_usd_per_gpu_hour = m->get_double("usd_per_gpu_hour", 1e-6, 1e4);
  if (m->has("capex_usd")) s.capex_usd = m->get_double("capex_usd", 1.0, 1e12);
  if (m->has("capex_unit")) s.capex_unit = m->get_enum("capex_unit", {"node", "domain"});
  s.depreciation_years =
      m->get_double_or("depreciation_years", kDefaultDepreciationYears, 0.1, 50.0);
  s.usd_per_kwh = m->get_double_or("usd_per_kwh", kDefaultUsdPerKwh, 0.0, 10.0);
  s.opex_usd_per_gpu_year = m->get_double_or("opex_usd_per_gpu_year", 0.0, 0.0, 1e7);
  for (const char* key :
       {"capex_usd", "capex_unit", "depreciation_years", "usd_per_kwh", "opex_usd_per_gpu_year"}) {
    if (m->has(key)) s.tco_keys.emplace_back(key);
  }
  m->finish();
  return s;
}

ReliabilitySection parse_reliability_section(YamlMap& root) {
  ReliabilitySection s;
  s.recovery.detection_s = kDefaultDetectionS;
  s.recovery.restart_s = kDefaultRestartS;
  s.storage_write_bandwidth = kDefaultStorageBandwidth;
  s.storage_read_bandwidth = kDefaultStorageBandwidth;
  s.trials = kDefaultTrials;
  s.seed = kDefaultSeed;
  auto m = root.get_map_opt("reliability");
  if (!m) return s;
  YamlMap& r = *m;
  s.origin = origin_of(r);
  read_recovery(r, s);
  // 1MB/s .. 1000TB/s: beyond any storage system, and a denormal rate would make the
  // checkpoint times infinite and the Monte-Carlo's wall time NaN.
  const auto storage = [&r](const char* key) {
    const double v = r.get_bandwidth(key).value;
    if (!(v >= 1e6 && v <= 1e15)) throw r.error(key, "storage bandwidth must lie within 1MB/s .. 1000TB/s");
    return v;
  };
  if (r.has("storage_bandwidth")) {
    s.storage_write_bandwidth = storage("storage_bandwidth");
    s.storage_read_bandwidth = s.storage_write_bandwidth;
  }
  if (r.has("storage_read_bandwidth")) s.storage_read_bandwidth = storage("storage_read_bandwidth");
  if (r.has("checkpoint_interval") && r.get_string("checkpoint_interval") != "auto") {
    s.checkpoint_interval_s = read_recovery_time(r, "checkpoint_interval");
    if (!(s.checkpoint_interval_s > 0))
      throw r.error("checkpoint_interval", "must be positive or auto");
  }
  if (r.has("domain_mtbf")) s.domain_mtbf_h = r.get_duration("domain_mtbf").value / 3600.0;
  if (s.domain_mtbf_h && !(*s.domain_mtbf_h > 0)) throw r.error("domain_mtbf", "must be positive");
  read_mode_overrides(r, s);
  s.trials = static_cast<int>(r.get_int_or("trials", kDefaultTrials, 1, 1000000));
  s.seed = static_cast<std::uint64_t>(r.get_int_or("seed", static_cast<std::int64_t>(kDefaultSeed),
                                                   0, std::numeric_limits<std::int64_t>::max()));
  r.finish();
  return s;
}

}  // namespace clustersim::energy
