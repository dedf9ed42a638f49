#include <gtest/gtest.h>

#include "sim/rank_layout.hpp"
#include "sim/units.hpp"
#include "sim/yaml_spec.hpp"

namespace clustersim {
namespace {

TEST(Units, ParsesBandwidthInBitsAndBytes) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gbps").value, 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("450GB/s").value, 450e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("3.35TB/s").value, 3.35e12);
}

TEST(Units, ParsesSizesDurationsRatesPower) {
  EXPECT_DOUBLE_EQ(parse_bytes("80GiB").value, 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_bytes("141GB").value, 141e9);
  EXPECT_DOUBLE_EQ(parse_duration("2us").value, 2e-6);
  EXPECT_DOUBLE_EQ(parse_duration("1.5ms").value, 1.5e-3);
  EXPECT_DOUBLE_EQ(parse_flops("989TFLOPS").value, 989e12);
  EXPECT_DOUBLE_EQ(parse_power("1.2kW").value, 1200.0);
}

TEST(Units, RejectsBadQuantities) {
  EXPECT_THROW(parse_bandwidth("400"), UnitError);
  EXPECT_THROW(parse_bandwidth("400Gbs"), UnitError);
  EXPECT_THROW(parse_bytes("-1GiB"), UnitError);
  EXPECT_THROW(parse_duration("fast"), UnitError);
  EXPECT_THROW(parse_bytes("80GiB/s"), UnitError);
}

TEST(YamlSpec, UnknownKeyNamesFileLineAndKey) {
  auto map = YamlMap::load_string("a: 1\nb: 2\ntypo: 3\n", "job.yaml");
  EXPECT_EQ(map.get_int("a", 0, 10), 1);
  EXPECT_EQ(map.get_int("b", 0, 10), 2);
  try {
    map.finish();
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), "job.yaml");
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.field(), "typo");
  }
}

TEST(YamlSpec, WrongTypeAndRangeAreErrorsAtTheirLine) {
  auto map = YamlMap::load_string("outer:\n  tp: four\n  pp: 0\n  bw: 400Gbs\n", "x.yaml");
  auto outer = map.get_map("outer");
  try {
    outer.get_int("tp", 1, 8);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.field(), "outer.tp");
  }
  EXPECT_THROW(outer.get_int("pp", 1, 8), SpecError);
  EXPECT_THROW(outer.get_bandwidth("bw"), SpecError);
  EXPECT_THROW(outer.get_int("missing", 1, 8), SpecError);
}

TEST(YamlSpec, InvalidYamlReportsParserLine) {
  try {
    YamlMap::load_string("a: [1, 2\nb: 3\n", "bad.yaml");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), "bad.yaml");
    EXPECT_GT(e.line(), 0);
  }
}

TEST(RankLayout, MegatronOrderPutsTpInsideNodesAndDpAcross) {
  sim::RankLayout layout(4, 1, 4, 8);  // GPT-3 175B on 128 GPUs
  EXPECT_EQ(layout.world(), 128);
  EXPECT_EQ(layout.group(5, sim::GroupKind::TP), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(layout.group(5, sim::GroupKind::DP), (std::vector<int>{1, 5, 9, 13}));
  EXPECT_EQ(layout.group(5, sim::GroupKind::PP)[1], 21);
  EXPECT_EQ(layout.pp_peer(5, sim::Peer::NextStage), 21);
  EXPECT_EQ(layout.pp_peer(5, sim::Peer::PrevStage), 5 + 7 * 16);
  EXPECT_EQ(layout.coord(127, sim::GroupKind::PP), 7);
}

}  // namespace
}  // namespace clustersim
