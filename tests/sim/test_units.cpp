#include <gtest/gtest.h>

#include <filesystem>

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

// A number past a double's range starts with a number all the same ("does not start with a
// number" had been the reason for "1e400Gbps").
TEST(Units, OutOfRangeNumbersSaySo) {
  for (const char* text : {"1e400Gbps", "1e-400Gbps", "2e300Gbps"}) {  // the last: inf bytes/s
    try {
      parse_bandwidth(text);
      ADD_FAILURE() << text;
    } catch (const UnitError& e) {
      EXPECT_NE(std::string(e.what()).find("too large or too small"), std::string::npos) << e.what();
    }
  }
  EXPECT_DOUBLE_EQ(parse_bandwidth("1e300Gbps").value, 1.25e308);
}

TEST(Units, CountNounIsSingularForOne) {
  EXPECT_EQ(count_noun(1, "node", "nodes"), "1 node");
  EXPECT_EQ(count_noun(0, "node", "nodes"), "0 nodes");
  EXPECT_EQ(count_noun(2048, "GPU", "GPUs"), "2048 GPUs");
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

// What follows a '---' was once dropped unread, unknown keys and all; an empty document (a
// leading or trailing '---') holds nothing to drop.
TEST(YamlSpec, ASecondDocumentIsAnErrorAtItsLine) {
  try {
    YamlMap::load_string("a: 1\n---\ntypo: 3\n", "job.yaml");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.line(), 3) << e.what();
    EXPECT_NE(std::string(e.what()).find("a second YAML document"), std::string::npos) << e.what();
  }
  EXPECT_EQ(YamlMap::load_string("---\na: 1\n---\n", "job.yaml").get_int("a", 0, 9), 1);
}

// A tab in the indentation makes yaml-cpp report some other error; the message names its line.
TEST(YamlSpec, AParseErrorNamesALineIndentedWithATab) {
  try {
    YamlMap::load_string("training:\n  seq_length: 8192\n\tmicro_batch_size: 1\n", "job.yaml");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("line 3 is indented with a tab"), std::string::npos) << e.what();
  }
  try {  // a tab inside a value is no indentation: no hint on another error
    YamlMap::load_string("a: \"x\ty\"\nb: [1, 2\n", "job.yaml");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(std::string(e.what()).find("tab"), std::string::npos) << e.what();
  }
}

// yaml-cpp ends a quoted scalar left open at the end of the input as if it were closed.
TEST(YamlSpec, AQuotedStringLeftOpenIsAnErrorAtItsLine) {
  for (const std::string text : {"a: 1\nname: \"mine\n", "a: 1\nname: 'mine\n", "a: 1\nname: \"mine \\\"\n"}) {
    try {
      YamlMap::load_string(text, "job.yaml");
      FAIL() << text;
    } catch (const SpecError& e) {
      EXPECT_EQ(e.line(), 2) << e.what();
      EXPECT_NE(std::string(e.what()).find("a quoted string is not closed"), std::string::npos) << e.what();
    }
  }
  // Closed ones, with escaped quotes inside, and quoted keys load.
  auto map = YamlMap::load_string("\"a\": \"x \\\" y\"\nb: 'it''s'\nc: [\"p\", 'q']\n", "job.yaml");
  EXPECT_EQ(map.get_string("a"), "x \" y");
  EXPECT_EQ(map.get_string("b"), "it's");
}

// An anchor aliased inside itself is a cycle in yaml-cpp's node graph, and aliases of aliases
// expand exponentially: an error at a line, not a stack overflow or a walk without end.
TEST(YamlSpec, ARecursiveOrExplodingAliasIsAnError) {
  std::string laughs = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 12; ++i) {
    const std::string prev = "*l" + std::to_string(i - 1);
    laughs += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) laughs += (k ? ", " : "") + prev;
    laughs += "]\n";
  }
  for (const std::string& text : {std::string("a: &a [*a]\n"), std::string("b: 1\ntp: &a {x: *a}\n"), laughs}) {
    try {
      YamlMap::load_string(text, "job.yaml");
      FAIL() << text;
    } catch (const SpecError& e) {
      EXPECT_GE(e.line(), 1) << e.what();
      EXPECT_NE(std::string(e.what()).find("aliased inside itself"), std::string::npos) << e.what();
    }
  }
  // A directory opens as a stream that reads nothing: named as a directory, not an empty document.
  try {
    YamlMap::load_file(std::filesystem::temp_directory_path().string());
    FAIL() << "a directory loaded";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  // Plain anchors and aliases still load.
  auto map = YamlMap::load_string("a: &v 3\nb: *v\n", "job.yaml");
  EXPECT_EQ(map.get_int("b", 0, 9), 3);
}

// Assigning a view rebinds it; the mapping it viewed before keeps its keys and lines. (With
// yaml-cpp's Node assignment the catalog model's mapping took the job's keys when a job
// override was recorded over it, and errors pointed at the wrong file and line.)
TEST(YamlSpec, AssigningAViewLeavesTheOtherMappingAlone) {
  const auto catalog = YamlMap::load_string("# model\nheads: 32\nkv_heads: 8\n", "catalog.yaml");
  YamlMap view = catalog;
  const auto job = YamlMap::load_string("heads: 30\n", "job.yaml");
  view = job;
  EXPECT_EQ(catalog.location("kv_heads").line, 3);
  EXPECT_EQ(catalog.location("kv_heads").file, "catalog.yaml");
  EXPECT_EQ(view.location("heads").file, "job.yaml");
  YamlMap moved = catalog;
  moved = YamlMap::load_string("experts: 8\n", "other.yaml");
  EXPECT_EQ(catalog.location("heads").line, 2);
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

TEST(YamlSpec, NumbersAndBooleansMustBeUnquotedYaml12) {
  auto map = YamlMap::load_string("a: '1.5'\nb: 1.5\nc: \"8\"\nd: on\ne: FALSE\nf: +8\n", "x.yaml");
  EXPECT_THROW(map.get_double("a", 0, 10), SpecError);
  EXPECT_DOUBLE_EQ(map.get_double("b", 0, 10), 1.5);
  EXPECT_THROW(map.get_int("c", 0, 10), SpecError);
  EXPECT_THROW(map.get_bool("d"), SpecError);
  EXPECT_FALSE(map.get_bool("e"));
  EXPECT_EQ(map.get_int("f", 0, 10), 8);  // YAML 1.2's core schema allows the sign
  EXPECT_EQ(map.get_string("c"), "8");    // a quoted scalar is a string
  // So is an explicitly tagged one, and a custom tag is not a number either.
  auto tagged = YamlMap::load_string("a: !!str 2\nb: !foo 2\nc: !!int 2\n", "x.yaml");
  EXPECT_THROW(tagged.get_int("a", 0, 10), SpecError);
  EXPECT_THROW(tagged.get_int("b", 0, 10), SpecError);
  EXPECT_EQ(tagged.get_string("a"), "2");
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

TEST(RankLayout, MegatronDocstringExampleOf16GpusTp2Pp4) {
  // megatron/core/parallel_state.py initialize_model_parallel docstring: 16 GPUs, tp 2, pp 4.
  sim::RankLayout layout(2, 1, 2, 4);
  EXPECT_EQ(layout.group(0, sim::GroupKind::TP), (std::vector<int>{0, 1}));
  EXPECT_EQ(layout.group(1, sim::GroupKind::DP), (std::vector<int>{1, 3}));
  EXPECT_EQ(layout.group(4, sim::GroupKind::DP), (std::vector<int>{4, 6}));
  EXPECT_EQ(layout.group(1, sim::GroupKind::PP), (std::vector<int>{1, 5, 9, 13}));
  // Without experts the expert groups degenerate: ep 1, etp 1, edp = tp*cp*dp.
  EXPECT_EQ(layout.size(sim::GroupKind::EP), 1);
  EXPECT_EQ(layout.size(sim::GroupKind::EDP), 4);
  EXPECT_EQ(layout.group(5, sim::GroupKind::EDP), (std::vector<int>{4, 5, 6, 7}));
}

TEST(RankLayout, ExpertGroupsAreCarvedFromTheStageRanksLikeMegatronCore) {
  // tp 4, dp 2, ep 2, etp 2: expert rank = etp + 2*ep + 4*edp within a stage of 8 ranks.
  sim::RankLayout layout(4, 1, 2, 2, 2, 2,
                         {sim::GroupKind::TP, sim::GroupKind::CP, sim::GroupKind::EP,
                          sim::GroupKind::DP, sim::GroupKind::PP});
  EXPECT_EQ(layout.world(), 16);
  EXPECT_EQ(layout.size(sim::GroupKind::EDP), 2);
  EXPECT_EQ(layout.group(6, sim::GroupKind::TP), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(layout.group(6, sim::GroupKind::ETP), (std::vector<int>{6, 7}));
  EXPECT_EQ(layout.group(6, sim::GroupKind::EP), (std::vector<int>{4, 6}));
  EXPECT_EQ(layout.group(6, sim::GroupKind::EDP), (std::vector<int>{2, 6}));
  EXPECT_EQ(layout.group(14, sim::GroupKind::EP), (std::vector<int>{12, 14}));
  EXPECT_EQ(layout.coord(6, sim::GroupKind::EP), 1);
  EXPECT_EQ(layout.coord(6, sim::GroupKind::ETP), 0);
  EXPECT_EQ(layout.coord(6, sim::GroupKind::EDP), 1);
}

TEST(RankLayout, DataParallelWithContextParallelAndEmbeddingGroups) {
  // tp 2, cp 2, dp 2, pp 3 (default order): rank = tp + 2 cp + 4 dp + 8 pp.
  sim::RankLayout layout(2, 2, 2, 3);
  EXPECT_EQ(layout.size(sim::GroupKind::DPCP), 4);
  EXPECT_EQ(layout.group(5, sim::GroupKind::DPCP), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(layout.coord(5, sim::GroupKind::DPCP), 2);
  EXPECT_EQ(layout.group(5, sim::GroupKind::CP), (std::vector<int>{5, 7}));
  // Embedding group: first and last stage; a middle stage is a group of one.
  EXPECT_EQ(layout.group(5, sim::GroupKind::EMB), (std::vector<int>{5, 21}));
  EXPECT_EQ(layout.group(21, sim::GroupKind::EMB), (std::vector<int>{5, 21}));
  EXPECT_EQ(layout.coord(21, sim::GroupKind::EMB), 1);
  EXPECT_EQ(layout.group(13, sim::GroupKind::EMB), (std::vector<int>{13}));
  // Amax group: every tp x cp x dp rank of the stage.
  EXPECT_EQ(layout.size(sim::GroupKind::AMAX), 8);
  EXPECT_EQ(layout.group(13, sim::GroupKind::AMAX), (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(layout.coord(13, sim::GroupKind::AMAX), 5);
  // Every rank sits at its own coordinate in each of its groups.
  for (int rank = 0; rank < layout.world(); ++rank) {
    for (int k = 0; k < sim::kGroupKindCount; ++k) {
      const auto kind = static_cast<sim::GroupKind>(k);
      const auto g = layout.group(rank, kind);
      ASSERT_LT(static_cast<std::size_t>(layout.coord(rank, kind)), g.size());
      EXPECT_EQ(g[static_cast<std::size_t>(layout.coord(rank, kind))], rank);
    }
  }
}

TEST(RankLayout, ConfigurableOrderAndRejectedLayouts) {
  using sim::GroupKind;
  // Order tp-dp-cp-ep-pp: DP varies faster than CP.
  sim::RankLayout layout(2, 2, 2, 1, 1, 1,
                         {GroupKind::TP, GroupKind::DP, GroupKind::CP, GroupKind::EP, GroupKind::PP});
  EXPECT_EQ(layout.group(0, GroupKind::DP), (std::vector<int>{0, 2}));
  EXPECT_EQ(layout.group(0, GroupKind::CP), (std::vector<int>{0, 4}));
  EXPECT_EQ(layout.group(0, GroupKind::DPCP), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(layout.order()[1], GroupKind::DP);
  // etp*ep must divide tp*cp*dp.
  EXPECT_THROW(sim::RankLayout(2, 1, 3, 1, 4, 1,
                               {GroupKind::TP, GroupKind::CP, GroupKind::EP, GroupKind::DP, GroupKind::PP}),
               std::invalid_argument);
  // pp between dimensions whose expert and dense sizes differ splits the pipeline groups.
  EXPECT_THROW(sim::RankLayout(2, 1, 2, 2, 2, 1,
                               {GroupKind::TP, GroupKind::PP, GroupKind::CP, GroupKind::EP, GroupKind::DP}),
               std::invalid_argument);
  EXPECT_THROW(sim::RankLayout(2, 1, 2, 2, 1, 1,
                               {GroupKind::TP, GroupKind::TP, GroupKind::CP, GroupKind::EP, GroupKind::DP}),
               std::invalid_argument);
}

}  // namespace
}  // namespace clustersim
