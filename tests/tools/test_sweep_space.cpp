// Sweep space: parsing, enumeration order, sharding, overrides, ranking, merging; CSV I/O.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "sim/spec_error.hpp"
#include "tools/csv.hpp"
#include "tools/sweep.hpp"

namespace clustersim::tools {
namespace {

TEST(SweepSpace, ParsesDimensionsInCommandLineOrderAndEnumeratesLastFastest) {
  const auto axes = parse_space({"tp=1,2,4", "recompute=none,full"});
  ASSERT_EQ(axes.size(), 2u);
  EXPECT_EQ(axes[0].dim.key, "tp");
  EXPECT_EQ(axes[1].dim.key, "recompute");
  EXPECT_EQ(axes[1].dim.section, "training");
  ASSERT_EQ(space_size(axes), 6u);
  EXPECT_EQ(config_values(axes, 0), (std::vector<std::string>{"1", "none"}));
  EXPECT_EQ(config_values(axes, 1), (std::vector<std::string>{"1", "full"}));
  EXPECT_EQ(config_values(axes, 2), (std::vector<std::string>{"2", "none"}));
  EXPECT_EQ(config_values(axes, 5), (std::vector<std::string>{"4", "full"}));
  std::set<std::vector<std::string>> all;
  for (std::size_t id = 0; id < 6; ++id) all.insert(config_values(axes, id));
  EXPECT_EQ(all.size(), 6u) << "every id must name a different configuration";
}

TEST(SweepSpace, MapsNamesToJobKeys) {
  const auto axes = parse_space({"mbs=1,2", "zero=0,3", "vp=1,2", "attention=cudnn,flash2",
                                 "shared_overlap=false,true", "dispatcher=alltoall,deepep",
                                 "recompute_method=uniform,block", "recompute_layers=1,2,4",
                                 "fp8_recipe=delayed,blockwise", "ep_overlap=false,true",
                                 "delay_wgrad=false,true"});
  EXPECT_EQ(axes[0].dim.section + "." + axes[0].dim.key, "training.micro_batch_size");
  EXPECT_EQ(axes[1].dim.section + "." + axes[1].dim.key, "parallelism.zero_stage");
  EXPECT_EQ(axes[2].dim.section + "." + axes[2].dim.key, "parallelism.vp");
  EXPECT_EQ(axes[3].dim.section + "." + axes[3].dim.key, "training.attention_backend");
  EXPECT_EQ(axes[4].dim.section + "." + axes[4].dim.key, "parallelism.moe_shared_expert_overlap");
  EXPECT_EQ(axes[5].dim.section + "." + axes[5].dim.key, "parallelism.moe_token_dispatcher");
  EXPECT_EQ(axes[6].dim.section + "." + axes[6].dim.key, "training.recompute_method");
  EXPECT_EQ(axes[7].dim.section + "." + axes[7].dim.key, "training.recompute_num_layers");
  EXPECT_EQ(axes[8].dim.section + "." + axes[8].dim.key, "training.fp8_recipe");
  EXPECT_EQ(axes[9].dim.section + "." + axes[9].dim.key, "parallelism.overlap_moe_expert_parallel_comm");
  EXPECT_EQ(axes[10].dim.section + "." + axes[10].dim.key, "parallelism.delay_wgrad_compute");
}

// Activation offloading's module sets: "none" or names joined by '+', written as YAML lists.
TEST(SweepSpace, OffloadValuesAreModuleSets) {
  const auto axes = parse_space({"offload=none,core_attn,core_attn+attn_proj"});
  EXPECT_EQ(axes[0].dim.section + "." + axes[0].dim.key, "training.offload_modules");
  const auto find = [](const std::vector<Override>& o, const std::string& key) {
    for (const auto& [k, v] : o) {
      if (k == key) return v;
    }
    return std::string("(absent)");
  };
  EXPECT_EQ(find(sweep_overrides(axes, {"none"}, 8, 8), "training.offload_modules"), "[]");
  EXPECT_EQ(find(sweep_overrides(axes, {"core_attn+attn_proj"}, 8, 8), "training.offload_modules"),
            "[core_attn, attn_proj]");
  EXPECT_THROW(parse_space({"offload=core_attn+core_attn"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"offload=attn_norm"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"offload=none,none"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"offload=core_attn+"}), std::invalid_argument);
}

// Context parallelism's exchange: parallelism.cp_comm_type, one of the three modes.
TEST(SweepSpace, CpCommWritesTheExchangeType) {
  const auto axes = parse_space({"cp_comm=p2p,a2a"});
  EXPECT_EQ(axes[0].dim.section + "." + axes[0].dim.key, "parallelism.cp_comm_type");
  std::string written = "(absent)";
  for (const auto& [k, v] : sweep_overrides(axes, {"a2a"}, 8, 8)) {
    if (k == "parallelism.cp_comm_type") written = v;
  }
  EXPECT_EQ(written, "a2a");
  EXPECT_THROW(parse_space({"cp_comm=ring"}), std::invalid_argument);
}

// Selective recompute's module sets: names joined by '+', never none (recompute=none says that).
TEST(SweepSpace, RecomputeModuleValuesAreNonEmptySets) {
  const auto axes = parse_space({"recompute_modules=core_attn,mla_up_proj+mlp"});
  EXPECT_EQ(axes[0].dim.section + "." + axes[0].dim.key, "training.recompute_modules");
  std::string written = "(absent)";
  for (const auto& [k, v] : sweep_overrides(axes, {"mla_up_proj+mlp"}, 8, 8)) {
    if (k == "training.recompute_modules") written = v;
  }
  EXPECT_EQ(written, "[mla_up_proj, mlp]");
  EXPECT_THROW(parse_space({"recompute_modules=none"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"recompute_modules=mlp+mlp"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"recompute_modules=attn"}), std::invalid_argument);
}

// The pipeline schedules are the registry's; vp alone picks its schedule (the override clears
// parallelism.schedule), vp beside a swept schedule leaves it to that dimension.
TEST(SweepSpace, ScheduleValuesAreTheRegistrysAndVpLeavesASweptScheduleAlone) {
  const auto find = [](const std::vector<Override>& o, const std::string& key) {
    std::string value = "(absent)";
    for (const auto& [k, v] : o) {
      if (k == key) value = v;  // the last override of a key wins
    }
    return value;
  };
  const auto both = parse_space({"vp=1,2", "schedule=1f1b,zb_h1"});
  EXPECT_EQ(find(sweep_overrides(both, {"1", "zb_h1"}, 8, 8), "parallelism.schedule"), "zb_h1");
  const auto swapped = parse_space({"schedule=zb_h1", "vp=1"});
  EXPECT_EQ(find(sweep_overrides(swapped, {"zb_h1", "1"}, 8, 8), "parallelism.schedule"), "zb_h1");
  const auto vp_only = parse_space({"vp=1,2"});
  EXPECT_EQ(find(sweep_overrides(vp_only, {"2"}, 8, 8), "parallelism.schedule"), "");
  EXPECT_THROW(parse_space({"schedule=gpipe"}), std::invalid_argument);
}

// The platform dimension takes the catalog's names; a job's own `cluster.overrides` (figures
// of its platform) are dropped for every configuration of the swept platforms.
TEST(SweepSpace, PlatformValuesAreTheCatalogsAndDropTheJobsOverrides) {
  const auto axes = parse_space({"platform=hgx_h100,gb300_nvl72", "tp=4,8"});
  const auto o = sweep_overrides(axes, {"gb300_nvl72", "8"}, 1152, 1152);
  std::string platform = "(absent)", overrides = "(absent)";
  for (const auto& [k, v] : o) {
    if (k == "cluster.platform") platform = v;
    if (k == "cluster.overrides") overrides = v;
  }
  EXPECT_EQ(platform, "gb300_nvl72");
  EXPECT_EQ(overrides, "");
  EXPECT_THROW(parse_space({"platform=hgx_h300"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"platform=my_cluster.yaml"}), std::invalid_argument);
}

TEST(SweepSpace, RejectsMalformedSpaces) {
  EXPECT_THROW(parse_space({"tp"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"dp=1,2"}), std::invalid_argument);  // dp is derived
  EXPECT_THROW(parse_space({"tp=1,x"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"tp=0"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"tp=1,1"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"tp=1", "tp=2"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"zero=4"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"recompute=some"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"attention=flash3"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"shared_overlap=yes"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"dispatcher=nccl"}), std::invalid_argument);
  EXPECT_THROW(parse_space({"ep_overlap=yes"}), std::invalid_argument);
  try {
    parse_space({"tpp=1"});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("known: tp, pp"), std::string::npos) << e.what();
  }
}

TEST(SweepShards, AreDisjointAndCoverTheSpace) {
  for (std::size_t size : {1u, 7u, 48u}) {
    for (std::size_t n : {1u, 3u, 8u}) {
      std::vector<std::size_t> seen;
      for (std::size_t k = 1; k <= n; ++k) {
        const auto ids = shard_ids(size, Shard{k, n});
        for (const auto id : ids) EXPECT_EQ(id % n, k - 1);
        seen.insert(seen.end(), ids.begin(), ids.end());
      }
      std::sort(seen.begin(), seen.end());
      ASSERT_EQ(seen.size(), size) << size << " configs, " << n << " shards";
      for (std::size_t i = 0; i < size; ++i) EXPECT_EQ(seen[i], i);
    }
  }
}

TEST(SweepShards, ParseKOverN) {
  const Shard s = parse_shard("3/8");
  EXPECT_EQ(s.index, 3u);
  EXPECT_EQ(s.count, 8u);
  EXPECT_THROW(parse_shard("0/8"), std::invalid_argument);
  EXPECT_THROW(parse_shard("9/8"), std::invalid_argument);
  EXPECT_THROW(parse_shard("3"), std::invalid_argument);
  EXPECT_THROW(parse_shard("a/b"), std::invalid_argument);
}

TEST(SweepOverrides, KeepTheGlobalBatchDeriveDpAndDropContradictingKeys) {
  const auto axes = parse_space({"tp=2", "vp=2", "zero=2"});
  const auto o = sweep_overrides(axes, {"2", "2", "2"}, 64, 256);
  auto value = [&](const std::string& key) -> std::string {
    for (const auto& [k, v] : o) {
      if (k == key) return v;
    }
    return "<absent>";
  };
  EXPECT_EQ(value("cluster.gpus"), "64");
  EXPECT_EQ(value("training.global_batch_size"), "256");
  EXPECT_EQ(value("parallelism.dp"), "");  // removed: derived from the GPU count
  EXPECT_EQ(value("parallelism.schedule"), "");
  EXPECT_EQ(value("parallelism.fsdp"), "");
  EXPECT_EQ(value("parallelism.tp"), "2");
  EXPECT_EQ(value("parallelism.vp"), "2");
  EXPECT_EQ(value("parallelism.zero_stage"), "2");
}

// Six configurations of tp=1,2 pp=1,2,4, each row with the values its number stands for.
CsvTable sample_table() {
  CsvTable t;
  const auto axes = parse_space({"tp=1,2", "pp=1,2,4"});
  t.header = sweep_header(axes);
  auto row = [&](const char* config, const char* status, const char* tokens) {
    std::vector<std::string> r(t.header.size());
    r[t.column("config")] = config;
    const auto values = config_values(axes, std::stoul(config));
    r[t.column("tp")] = values[0];
    r[t.column("pp")] = values[1];
    r[t.column("status")] = status;
    r[t.column("tokens_per_s_per_gpu")] = tokens;
    r[t.column("mfu")] = "0.5";
    if (std::string(status) == kSweepOk) {  // the figures merge checks on a simulated row
      for (const char* c : {"step_time_s", "compute_s", "exposed_comm_s", "bubble_s"}) r[t.column(c)] = "1.0";
    }
    r[t.column("sweep")] = "00000000000000aa";
    r[t.column("space")] = "6";
    t.rows.push_back(r);
  };
  row("0", kSweepInvalid, "");
  row("1", kSweepOk, "900.5");
  row("2", kSweepOk, "1200.0");
  row("3", kSweepOutOfMemory, "");
  row("4", kSweepOk, "1200.0");
  row("5", kSweepFailed, "");
  return t;
}

TEST(SweepRanking, OkRowsByThroughputThenTiesByIdThenFailedMemoryInvalid) {
  CsvTable t = sample_table();
  rank_sweep_table(t);
  std::vector<std::string> order;
  std::vector<std::string> ranks;
  for (const auto& r : t.rows) {
    order.push_back(r[t.column("config")]);
    ranks.push_back(r[t.column("rank")]);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"2", "4", "1", "5", "3", "0"}));
  EXPECT_EQ(ranks, (std::vector<std::string>{"1", "2", "3", "", "", ""}));
}

TEST(SweepMerge, CombinesShardsAndReranks) {
  CsvTable all = sample_table();
  CsvTable a;
  CsvTable b;
  a.header = b.header = all.header;
  for (std::size_t i = 0; i < all.rows.size(); ++i) (i % 2 ? b : a).rows.push_back(all.rows[i]);
  const CsvTable merged = merge_sweep_tables({{"a.csv", a}, {"b.csv", b}});
  rank_sweep_table(all);
  EXPECT_EQ(to_csv(merged), to_csv(all));
}

TEST(SweepMerge, RejectsDuplicateConfigsAndForeignHeaders) {
  const CsvTable t = sample_table();
  try {
    merge_sweep_tables({{"a.csv", t}, {"b.csv", t}});
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), "b.csv");
    EXPECT_NE(e.reason().find("more than one shard"), std::string::npos);
  }
  CsvTable other = t;
  other.header[2] = "cp";
  EXPECT_THROW(merge_sweep_tables({{"a.csv", t}, {"c.csv", other}}), SpecError);
}

TEST(SweepMerge, RejectsShardsOfAnotherSweepAndMissingShards) {
  const CsvTable all = sample_table();
  CsvTable a, b, c;
  a.header = b.header = c.header = all.header;
  for (std::size_t i = 0; i < all.rows.size(); ++i) (i % 3 == 0 ? a : i % 3 == 1 ? b : c).rows.push_back(all.rows[i]);
  EXPECT_NO_THROW(merge_sweep_tables({{"a.csv", a}, {"b.csv", b}, {"c.csv", c}}));
  try {  // shard 2 of 3 lost: configs 1 and 4 in no output
    merge_sweep_tables({{"a.csv", a}, {"c.csv", c}});
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(e.reason().find("none holds 1, 4 "), std::string::npos) << e.reason();
  }
  CsvTable foreign = b;  // the same space and configs from a sweep of another job
  for (auto& row : foreign.rows) row[foreign.column("sweep")] = "00000000000000bb";
  try {
    merge_sweep_tables({{"a.csv", a}, {"b.csv", foreign}, {"c.csv", c}});
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), "b.csv");
    EXPECT_NE(e.reason().find("not shards of one sweep"), std::string::npos) << e.reason();
  }
}

TEST(SweepMerge, RejectsSweptValuesThatDoNotFollowTheConfigNumbers) {
  const CsvTable all = sample_table();  // config 1: tp 1, pp 2; config 4: tp 2, pp 2
  const auto merge_error = [](const CsvTable& t) -> std::string {
    try {
      merge_sweep_tables({{"s.csv", t}});
    } catch (const SpecError& e) {
      return e.field() + ": " + e.reason();
    }
    return "";
  };
  EXPECT_EQ(merge_error(all), "");
  CsvTable edited = all;  // a value outside the space: pp 8 in one row
  edited.rows[1][edited.column("pp")] = "8";
  EXPECT_NE(merge_error(edited).find("pp: configuration 4 has pp '2', and the 6 rows hold pp's values unequally (1: 2, 2: 1, 4: 2, 8: 1 rows)"), std::string::npos)
      << merge_error(edited);
  CsvTable swapped = all;  // two rows' tp swapped: every value still held by as many rows
  std::swap(swapped.rows[1][swapped.column("tp")], swapped.rows[4][swapped.column("tp")]);
  EXPECT_NE(merge_error(swapped).find("tp: configuration 1 has tp '2' where configuration 0 (s.csv:0)"), std::string::npos)
      << merge_error(swapped);
  CsvTable collapsed = all;  // tp 2 written as 1 in every row: 3 combinations for 6 configurations
  for (auto& row : collapsed.rows) row[collapsed.column("tp")] = "1";
  EXPECT_NE(merge_error(collapsed).find("space: the swept columns' distinct values make 3 combinations for the "
                                        "sweep's 6 configurations"), std::string::npos)
      << merge_error(collapsed);
  CsvTable empty_space = all;  // a space of 0 configurations (it underflowed to 0..2^64-1)
  for (auto& row : empty_space.rows) row[empty_space.column("space")] = "0";
  EXPECT_EQ(merge_error(empty_space), "space: a sweep's space holds at least one configuration");
  CsvTable relabelled = all;  // a value renamed in every row: consistent, so it cannot be told apart
  for (auto& row : relabelled.rows) row[relabelled.column("pp")] = row[relabelled.column("pp")] == "4" ? "16" : row[relabelled.column("pp")];
  EXPECT_EQ(merge_error(relabelled), "");
}

TEST(SweepFingerprint, ChangesWithTheJobTheGpusAndTheSpace) {
  const auto space = parse_space({"tp=1,2,4"});
  const std::string f = sweep_fingerprint("model: llama3_8b\n", 64, space, "");
  EXPECT_EQ(f.size(), 16U);
  EXPECT_EQ(f, sweep_fingerprint("model: llama3_8b\n", 64, space, ""));
  EXPECT_NE(f, sweep_fingerprint("model: llama3_70b\n", 64, space, ""));
  EXPECT_NE(f, sweep_fingerprint("model: llama3_8b\n", 128, space, ""));
  EXPECT_NE(f, sweep_fingerprint("model: llama3_8b\n", 64, parse_space({"tp=1,4,2"}), ""));
  EXPECT_NE(f, sweep_fingerprint("model: llama3_8b\n", 64, space, "all"));
}

TEST(SweepTopTable, ShowsRankedRowsOnly) {
  CsvTable t = sample_table();
  rank_sweep_table(t);
  const std::string text = top_table(t, 2);
  EXPECT_NE(text.find("1200.0"), std::string::npos);
  EXPECT_EQ(text.find("900.5"), std::string::npos) << "only the top 2 rows: " << text;
}

TEST(Csv, RoundTripsQuotesCommasAndNewlines) {
  CsvTable t;
  t.header = {"a", "b"};
  t.rows = {{"plain", "with, comma"}, {"say \"hi\"", "two\nlines"}, {"", "x"}};
  const std::string text = to_csv(t);
  EXPECT_NE(text.find("\"with, comma\""), std::string::npos);
  EXPECT_NE(text.find("\"say \"\"hi\"\"\""), std::string::npos);
  const CsvTable back = parse_csv(text, "t.csv");
  EXPECT_EQ(back.header, t.header);
  EXPECT_EQ(back.rows, t.rows);
}

TEST(Csv, ReportsRaggedRowsAndUnterminatedQuotesWithLine) {
  try {
    parse_csv("a,b\n1,2\n3\n", "r.csv");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), "r.csv");
    EXPECT_EQ(e.line(), 3);
  }
  EXPECT_THROW(parse_csv("a,b\n\"1,2\n", "q.csv"), SpecError);
  EXPECT_THROW(parse_csv("", "e.csv"), SpecError);
}

}  // namespace
}  // namespace clustersim::tools
