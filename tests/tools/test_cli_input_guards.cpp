// Inputs that were once accepted silently, ran without end or lost a user's file (an exploratory
// pass over every subcommand, 2026-12-06): each is now refused with its place named, or ends.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "../cli_test_util.hpp"

namespace {

using clustersim::cli_test::data;
using clustersim::cli_test::run_cli;
using clustersim::cli_test::scratch;
using clustersim::cli_test::slurp;

std::string write(const std::string& name, const std::string& text) {
  const std::string path = scratch(name);
  std::ofstream(path) << text;
  return path;
}

// A copy of small_job.yaml, so that a command that overwrote it would not harm the test data.
std::string job_copy(const std::string& name) { return write(name, slurp(data("small_job.yaml"))); }

TEST(InputGuards, AnOutputThatIsAnInputOrAnotherOutputIsRefusedAndTheFileKept) {
  const std::string job = job_copy("guard_job.yaml");
  const std::string before = slurp(job);
  for (const std::string& args :
       {"run " + job + " --json " + job, "memory " + job + " --json " + job, "trace " + job + " --rank 0 --out " + job,
        "scale " + job + " --gpus 16 --svg " + job, "sweep " + job + " --gpus 16 --space tp=1 --csv " + job}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("is an input of this command"), std::string::npos) << args << "\n" << r.output;
  }
  EXPECT_EQ(slurp(job), before);
  const std::string same = scratch("guard_same.out");
  const auto r = run_cli("scale " + job + " --gpus 16 --csv " + same + " --svg " + same);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--svg: '" + same + "' is also the --csv output"), std::string::npos) << r.output;
}

// An output that cannot be written is found before simulating (it was found after the whole
// run, which at 16k GPUs is minutes, and left the other outputs behind).
TEST(InputGuards, AnUnwritableOutputIsRefusedBeforeSimulating) {
  const std::string job = data("small_job.yaml");
  const std::string csv = scratch("guard_written.csv");
  std::remove(csv.c_str());
  for (const std::string& args :
       {"scale " + job + " --gpus 16 --csv " + csv + " --svg /nonexistent-dir/x.svg",
        "sweep " + job + " --gpus 16 --space tp=1 --csv /nonexistent-dir/x.csv",
        "run " + job + " --json /tmp",
        "tco " + job + " " + job + " --json /nonexistent-dir/t.json"}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_TRUE(r.output.find("no folder '/nonexistent-dir'") != std::string::npos ||
                r.output.find("is a folder") != std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(r.output.find("step time"), std::string::npos) << "simulated first: " << r.output;
  }
  EXPECT_FALSE(std::ifstream(csv).good()) << "nothing written";
}

TEST(InputGuards, RunOptionsThatWouldBeIgnoredAreRefused) {
  const std::string job = data("small_job.yaml");
  EXPECT_EQ(run_cli("run " + job + " --trace-ranks 0-3").exit_code, 2);  // no --trace
  EXPECT_EQ(run_cli("run " + job + " --trace " + scratch("t.json") + " --trace-ranks ''").exit_code, 2);
  EXPECT_EQ(run_cli("run --show-default " + job).exit_code, 2);  // the job would be ignored
  EXPECT_EQ(run_cli("calib check --long-op-us nan").exit_code, 2);
  EXPECT_EQ(run_cli("sweep " + job + " --gpus 16 --space tp=1 --top 0").exit_code, 2);
}

TEST(InputGuards, AnUnknownCommandIsNamedWithTheKnownOnes) {
  const auto top = run_cli("frobnicate");
  EXPECT_EQ(top.exit_code, 2) << top.output;
  EXPECT_NE(top.output.find("clustersim: unknown command 'frobnicate' (known: run, platform,"), std::string::npos)
      << top.output;
  const auto calib = run_cli("calib frobnicate");
  EXPECT_EQ(calib.exit_code, 2) << calib.output;
  EXPECT_NE(calib.output.find("clustersim calib: unknown command 'frobnicate' (known: check)"), std::string::npos)
      << calib.output;
  EXPECT_EQ(run_cli("platform list").exit_code, 0);  // a known subcommand still runs
}

// A replica reduction the workload cannot take is an error where it was asked for: the job's
// simulation.replicas line (exit 2), or --replicas; it was "--replicas identical: ..." with exit
// 1 even when the job file asked.
TEST(InputGuards, IdenticalReplicasWithOneReplicaIsAnErrorWhereAskedFor) {
  const std::string job = write("one_replica.yaml",
                                "cluster: {platform: hgx_h100, gpus: 4}\n"
                                "model: {catalog: llama3_8b, layers: 4}\n"
                                "parallelism: {tp: 2, pp: 2}\n"
                                "training: {seq_length: 2048, micro_batch_size: 1, global_batch_size: 8, precision: bf16}\n"
                                "simulation:\n  replicas: identical\n");
  const auto r = run_cli("run " + job);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("one_replica.yaml:6: simulation.replicas: identical: there is a single data-parallel replica"),
            std::string::npos) << r.output;
  const auto cli = run_cli("run " + job + " --replicas full");
  EXPECT_EQ(cli.exit_code, 0) << cli.output;
  const std::string plain = write("one_replica_plain.yaml", slurp(job).substr(0, slurp(job).find("simulation:")));
  const auto named = run_cli("run " + plain + " --replicas identical");
  EXPECT_EQ(named.exit_code, 2) << named.output;
  EXPECT_NE(named.output.find("--replicas: identical: there is a single data-parallel replica"), std::string::npos)
      << named.output;
}

// An empty output path was read as "not asked for": the command wrote nothing and exited 0.
TEST(InputGuards, AnEmptyOutputPathIsAUsageError) {
  for (const std::string& args : {"run " + data("small_job.yaml") + " --json ''",
                                 "run " + data("small_job.yaml") + " --trace ''",
                                 "memory " + data("small_job.yaml") + " --json ''",
                                 "sweep " + data("small_job.yaml") + " --gpus 16 --space tp=1 --csv ''",
                                 std::string("platform show hgx_h100 --gpus 8 --xml ''")}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("is an empty path"), std::string::npos) << args << "\n" << r.output;
  }
}

TEST(InputGuards, ASweepThatSimulatesNothingFailsButAShardMayHoldOnlyPrunedRows) {
  const std::string job = data("small_job.yaml");
  const auto none = run_cli("sweep " + job + " --gpus 16 --space tp=3 --csv " + scratch("none.csv"));
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_NE(none.output.find("no configuration could be simulated"), std::string::npos) << none.output;
  // A GPU count the platform cannot hold is the command line's error, not every configuration's.
  const auto gpus = run_cli("sweep " + job + " --gpus 17 --space tp=1,2 --csv " + scratch("g.csv"));
  EXPECT_EQ(gpus.exit_code, 2) << gpus.output;
  EXPECT_NE(gpus.output.find("<command line>: --gpus: must be a multiple of gpus_per_node (8)"), std::string::npos)
      << gpus.output;
  // Shard 2/2 of tp=3,2 holds configuration 1 (tp=2) and shard 1/2 only tp=3 (pruned).
  const auto shard = run_cli("sweep " + job + " --gpus 16 --space tp=3,2 --shard 1/2 --csv " + scratch("s1.csv"));
  EXPECT_EQ(shard.exit_code, 0) << shard.output;
}

TEST(InputGuards, ASweepSpaceAboveTheCapIsRefusedAtOnce) {
  std::string list = "1";
  for (int v = 2; v <= 64; ++v) list += "," + std::to_string(v);
  const auto r = run_cli("sweep " + data("small_job.yaml") + " --gpus 16 --space tp=" + list + " pp=" + list +
                         " cp=" + list + " ep=" + list);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--space: the product of its value lists exceeds 1000000"), std::string::npos) << r.output;
}

// The two shards of a 2-configuration sweep, the second with one cell replaced.
struct Shards {
  std::string first, second;
};
Shards shards_with(const std::string& column, const std::string& value) {
  const std::string job = data("small_job.yaml");
  Shards s{scratch("m1.csv"), scratch("m2.csv")};
  EXPECT_EQ(run_cli("sweep " + job + " --gpus 16 --space tp=1,2 --shard 1/2 --csv " + s.first).exit_code, 0);
  EXPECT_EQ(run_cli("sweep " + job + " --gpus 16 --space tp=1,2 --shard 2/2 --csv " + s.second).exit_code, 0);
  std::string text = slurp(s.second);
  const std::string header = text.substr(0, text.find('\n'));
  std::size_t col = 0;
  for (std::size_t at = 0; header.compare(at, column.size() + 1, column + ",") != 0; at = header.find(',', at) + 1) {
    ++col;
  }
  std::size_t start = text.find('\n') + 1;  // row 1, at line 2
  for (std::size_t c = 0; c < col; ++c) start = text.find(',', start) + 1;
  text.replace(start, text.find(',', start) - start, value);
  std::ofstream(s.second) << text;
  return s;
}

TEST(InputGuards, MergeChecksTheCellsItRanksAtTheirLineAndColumn) {
  for (const auto& [column, value] : {std::pair<std::string, std::string>{"tokens_per_s_per_gpu", "abc"},
                                      {"mfu", "-5"},
                                      {"status", "banana"}}) {
    const Shards s = shards_with(column, value);
    const auto r = run_cli("sweep merge " + s.first + " " + s.second + " --csv " + scratch("merged.csv"));
    EXPECT_EQ(r.exit_code, 2) << column << "\n" << r.output;
    EXPECT_NE(r.output.find(s.second + ":2: " + column + ": '" + value + "'"), std::string::npos) << r.output;
  }
  // An MFU above 1 is a simulated figure (a MoE job dropping tokens, docs/outputs.md): merged.
  const Shards over = shards_with("mfu", "1.078");
  const auto r = run_cli("sweep merge " + over.first + " " + over.second + " --csv " + scratch("merged.csv"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(InputGuards, ScalePlotNamesTheCellThatIsNotANumber) {
  const std::string csv = scratch("plot.csv");
  ASSERT_EQ(run_cli("scale " + data("small_job.yaml") + " --gpus 16 --csv " + csv + " --svg " + scratch("p.svg"))
                .exit_code,
            0);
  std::string text = slurp(csv);
  const std::string header = text.substr(0, text.find('\n'));
  ASSERT_EQ(header.rfind("gpus,dp,global_batch_size,step_time_s,", 0), 0u) << header;
  std::size_t cell = text.find('\n') + 1;
  for (int c = 0; c < 3; ++c) cell = text.find(',', cell) + 1;
  text.insert(cell, "x");
  std::ofstream(csv) << text;
  const auto r = run_cli("scale plot " + csv + " --svg " + scratch("p2.svg"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(csv + ":2: step_time_s: 'x"), std::string::npos) << r.output;
}

TEST(InputGuards, ScaleRefusesAMeasuredCaseWithNothingToDrawAndAReferenceWithoutOne) {
  const std::string job = data("small_job.yaml");
  const std::string ref = write("step_only_ref.yaml",
                                "models:\n  tiny: {catalog: llama3_8b, layers: 2}\ncases:\n"
                                "  - id: c1\n    source: me\n    recipe: none\n"
                                "    config: {model: tiny, platform: hgx_h100, gpus: 8, tp: 2, pp: 2, mbs: 1, "
                                "gbs: 8, seq: 1024, precision: bf16}\n    measured: {step_s: 0.05}\n");
  const auto r = run_cli("scale " + job + " --gpus 16 --measured-case c1 --reference " + ref + " --csv " +
                         scratch("m.csv") + " --svg " + scratch("m.svg"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(ref + ":4: cases.c1: --measured-case: the case states no MFU"), std::string::npos)
      << r.output;
  EXPECT_EQ(run_cli("scale " + job + " --gpus 16 --reference " + ref).exit_code, 2);
}

TEST(InputGuards, ValidateRefusesAGpuCountGivenTwiceAndAnEmptyId) {
  const std::string head = "models:\n  tiny: {catalog: llama3_8b, layers: 2}\ncases:\n";
  const std::string cfg = "{model: tiny, platform: hgx_h100, tp: 2, pp: 2, mbs: 1, gbs: 8, seq: 1024, precision: bf16";
  const std::string twice = write("twice.yaml", head + "  - id: c1\n    source: me\n    recipe: none\n    config: " +
                                                    cfg + ", gpus: [8, 8]}\n    measured: {step_s: 0.05}\n");
  const auto r = run_cli("validate " + twice + " --dry-run");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("8 is given twice"), std::string::npos) << r.output;
  const std::string empty = write("empty_id.yaml", head + "  - id: \"\"\n    source: me\n    recipe: none\n    config: " +
                                                       cfg + ", gpus: 8}\n    measured: {step_s: 0.05}\n");
  const auto e = run_cli("validate " + empty + " --dry-run");
  EXPECT_EQ(e.exit_code, 2) << e.output;
  EXPECT_NE(e.output.find(":4: cases[0].id: empty case id"), std::string::npos) << e.output;
}

TEST(InputGuards, TcoWithAJobThatDoesNotFitReportsAndExitsThree) {
  const auto r = run_cli("tco " + data("small_job.yaml") + " " + data("oom_job.yaml"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("DOES NOT FIT"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("oom_job.yaml does not fit in GPU memory"), std::string::npos) << r.output;
}

TEST(InputGuards, AReliabilityRunThatCannotProgressIsRefusedNotPlayedForever) {
  // A checkpoint every 8,000 hours against a job MTBF of hours: before the bound the Monte-Carlo
  // ran without end. (A 1 kB/s storage made the same point until storage rates below 1 MB/s
  // became input errors.)
  const std::string job =
      write("stalled.yaml", slurp(data("small_job.yaml")) + "reliability: {checkpoint_interval: 8000h, trials: 1}\n");
  const auto r = run_cli("run " + job);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(job + ":18: reliability: the run barely progresses"), std::string::npos) << r.output;
}

}  // namespace
