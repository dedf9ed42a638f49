// Job sections energy:, economics:, reliability: read strictly, with their defaults.
#include <gtest/gtest.h>

#include "energy/defaults.hpp"
#include "energy/spec_io.hpp"

namespace clustersim::energy {
namespace {

YamlMap doc(const std::string& text) { return YamlMap::load_string(text, "job.yaml"); }

TEST(SpecIo, AbsentSectionsGiveTheCitedDefaults) {
  YamlMap root = doc("other: 1\n");
  const EnergySection e = parse_energy_section(root);
  EXPECT_DOUBLE_EQ(e.pue, kDefaultPue);
  EXPECT_DOUBLE_EQ(e.train_tokens, kDefaultTrainTokens);
  const EconomicsSection c = parse_economics_section(root);
  EXPECT_FALSE(c.pricing.has_value());
  EXPECT_DOUBLE_EQ(c.depreciation_years, kDefaultDepreciationYears);
  const ReliabilitySection r = parse_reliability_section(root);
  EXPECT_DOUBLE_EQ(r.recovery.detection_s, kDefaultDetectionS);
  EXPECT_EQ(r.recovery.spare_nodes, -1);
  EXPECT_EQ(r.recovery.spare_domains, 0);
  EXPECT_EQ(r.trials, kDefaultTrials);
}

TEST(SpecIo, ReadsUnitsAndOverrides) {
  YamlMap root =
      doc("energy: {pue: 1.2, train_tokens: 15e12}\n"
          "economics: {pricing: tco, capex_usd: 3.9e6, capex_unit: domain, usd_per_kwh: 0.1}\n"
          "reliability:\n"
          "  restart: 5min\n"
          "  spare_nodes: 16\n"
          "  node_repair: 1d\n"
          "  domain_mtbf: 20000h\n"
          "  checkpoint_interval: 30min\n"
          "  storage_bandwidth: 1TB/s\n"
          "  mode_mtbf: {hbm: 100000h}\n"
          "  seed: 42\n");
  EXPECT_DOUBLE_EQ(parse_energy_section(root).train_tokens, 15e12);
  const EconomicsSection c = parse_economics_section(root);
  EXPECT_EQ(*c.pricing, Pricing::Tco);
  EXPECT_EQ(*c.capex_unit, "domain");
  EXPECT_DOUBLE_EQ(*c.capex_usd, 3.9e6);
  const ReliabilitySection r = parse_reliability_section(root);
  EXPECT_DOUBLE_EQ(r.recovery.restart_s, 300.0);
  EXPECT_EQ(r.recovery.spare_nodes, 16);
  EXPECT_DOUBLE_EQ(r.recovery.node_repair_s, 86400.0);
  EXPECT_DOUBLE_EQ(*r.domain_mtbf_h, 20000.0);
  EXPECT_DOUBLE_EQ(r.checkpoint_interval_s, 1800.0);
  EXPECT_DOUBLE_EQ(r.storage_write_bandwidth, 1e12);
  EXPECT_DOUBLE_EQ(r.mode_mtbf_h.at("hbm"), 100000.0);
  EXPECT_EQ(r.seed, 42u);
}

void expect_error(const std::string& text, const std::string& field, int line,
                  void (*parse)(YamlMap&)) {
  YamlMap root = doc(text);
  try {
    parse(root);
    FAIL() << "no error for " << text;
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), "job.yaml");
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_EQ(e.line(), line) << e.what();
  }
}

TEST(SpecIo, BadInputIsASpecErrorAtItsLine) {
  auto energy = [](YamlMap& r) { parse_energy_section(r); };
  auto economics = [](YamlMap& r) { parse_economics_section(r); };
  auto reliability = [](YamlMap& r) { parse_reliability_section(r); };
  expect_error("energy:\n  pue: 0.9\n", "energy.pue", 2, energy);
  expect_error("energy:\n  pue: 1.1\n  tokens: 5\n", "energy.tokens", 3, energy);
  expect_error("economics:\n  pricing: lease\n", "economics.pricing", 2, economics);
  expect_error("reliability:\n  spare_nodes: 4\n", "reliability.spare_nodes", 2, reliability);
  expect_error("reliability:\n  mode_mtbf:\n    gpus: 5h\n", "reliability.mode_mtbf.gpus", 3,
               reliability);
  expect_error("reliability:\n  restart: 5 minutes\n", "reliability.restart", 2, reliability);
  // Zero passed the readers and failed only after the simulation, with no place named.
  expect_error("reliability:\n  mode_mtbf:\n    gpu: 0h\n", "reliability.mode_mtbf.gpu", 3, reliability);
  expect_error("energy:\n  train_tokens: 0\n", "energy.train_tokens", 2, energy);
  // A denormal storage rate made the run's time NaN and its goodput 100%; a 1e300 s recovery
  // printed hundreds of digits. Each is named at its own key (the read rate once blamed
  // storage_bandwidth).
  expect_error("reliability:\n  storage_read_bandwidth: 4e-324B/s\n", "reliability.storage_read_bandwidth", 2,
               reliability);
  expect_error("reliability:\n  storage_bandwidth: 0TB/s\n", "reliability.storage_bandwidth", 2, reliability);
  expect_error("reliability:\n  detection: 1e300h\n", "reliability.detection", 2, reliability);
  expect_error("reliability:\n  node_repair: 9000h\n", "reliability.node_repair", 2, reliability);
}

}  // namespace
}  // namespace clustersim::energy
