// End-to-end tests of validate, scale and sweep on small jobs (seconds each).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "../cli_test_util.hpp"

#include "tools/csv.hpp"

namespace {

using clustersim::cli_test::Result;
using clustersim::cli_test::run_cli;

std::string data(const std::string& name) { return std::string(TEST_DATA_DIR) + "/" + name; }
// Scratch files carry the test process's id: two build trees testing on one machine at once
// (or a rerun beside a run) never read each other's outputs.
std::string tmp(const std::string& name) {
  return ::testing::TempDir() + "/clustersim-" + std::to_string(::getpid()) + "-" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

clustersim::tools::CsvTable read_csv(const std::string& path) {
  return clustersim::tools::parse_csv(slurp(path), path);
}

TEST(ValidateCli, JsonFollowsTheDocumentedSchemaAndStatistics) {
  const auto r = run_cli("validate " + data("tiny_reference.yaml") + " -j 2 --json " + tmp("v.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(slurp(tmp("v.json")));
  ASSERT_EQ(j["cases"].size(), 2u) << j.dump(2);
  double sum = 0.0;
  double max = 0.0;
  for (const auto& c : j["cases"]) {
    for (const char* key : {"id", "gpus", "metric", "measured", "simulated", "rel_error"}) {
      EXPECT_TRUE(c.contains(key)) << key;
    }
    const double rel = c["rel_error"];
    EXPECT_NEAR(rel, (c["simulated"].get<double>() - c["measured"].get<double>()) /
                         c["measured"].get<double>(), 1e-12);
    // Each point carries its simulated step and where the time went; the parts add up.
    const auto& b = c["breakdown"];
    EXPECT_NEAR(b["compute_s"].get<double>() + b["exposed_comm_s"].get<double>() + b["bubble_s"].get<double>(),
                c["step_time_s"].get<double>(), 1e-9 * c["step_time_s"].get<double>());
    EXPECT_TRUE(b["exposed_comm_by_group_s"].contains("dp_cp")) << b.dump();
    sum += std::fabs(rel);
    max = std::max(max, std::fabs(rel));
  }
  EXPECT_EQ(j["cases"][0]["metric"], "step_s");
  EXPECT_EQ(j["cases"][0]["gpus"], 8);
  EXPECT_EQ(j["cases"][1]["metric"], "mfu");
  EXPECT_NEAR(j["mean_abs_error"].get<double>(), sum / 2, 1e-12);
  EXPECT_NEAR(j["max_abs_error"].get<double>(), max, 1e-12);
  // The invalid case is reported with its reason at the reference file's line, not dropped.
  ASSERT_EQ(j["not_simulated"].size(), 1u);
  EXPECT_EQ(j["not_simulated"][0]["id"], "tiny_bad_tp");
  const std::string reason = j["not_simulated"][0]["reason"];
  EXPECT_NE(reason.find("tiny_reference.yaml:14: parallelism.tp"), std::string::npos) << reason;
  EXPECT_NE(r.output.find("Not simulated (1 point)"), std::string::npos) << r.output;  // not "(1 points)"
}

// Figures validate reads but does not compare are listed, and a point skipped before its job
// was built has unknown (null) sequence, platform and family rather than 0 and "".
TEST(ValidateCli, ListsFiguresNotComparedAndLeavesUnknownsNull) {
  const auto r = run_cli("validate --case s0_gpt3_175b_128_fp8 --max-gpus 1 --json " + tmp("nc.json"));
  EXPECT_NE(r.output.find("s0_gpt3_175b_128_fp8: energy: not compared by validate"), std::string::npos)
      << r.output;
  const auto j = nlohmann::json::parse(slurp(tmp("nc.json")));
  ASSERT_EQ(j["not_simulated"].size(), 1u) << j.dump(2);
  for (const char* key : {"seq", "platform", "family"}) EXPECT_TRUE(j["not_simulated"][0][key].is_null()) << key;
  EXPECT_EQ(j["not_compared"]["s0_gpt3_175b_128_fp8"],
            nlohmann::json({"energy: not compared by validate", "cost: not compared by validate"}));
}

// A point whose job does not fit is simulated (it ran, so the model errs) and flagged.
TEST(ValidateCli, PointsOverTheGpuMemoryAreSimulatedAndFlagged) {
  const auto r = run_cli("validate " + data("oom_reference.yaml") + " -j 1 --json " + tmp("oom.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(slurp(tmp("oom.json")));
  ASSERT_EQ(j["cases"].size(), 1u) << j.dump(2);
  EXPECT_GT(j["cases"][0]["estimated_peak_gib"].get<double>(), j["cases"][0]["capacity_gib"].get<double>());
  EXPECT_DOUBLE_EQ(j["cases"][0]["capacity_gib"].get<double>(), 81559.0 / 1024.0);  // H100 visible
  EXPECT_NE(r.output.find("Over the GPU's memory by the memory model"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("eight_gpus_8b @ 8 GPUs: "), std::string::npos) << r.output;
  // The tiny set fits: no such block.
  const auto fits = run_cli("validate " + data("tiny_reference.yaml") + " -j 2");
  EXPECT_EQ(fits.output.find("Over the GPU's memory"), std::string::npos) << fits.output;
}

TEST(ValidateCli, BadReferenceFileExitsWithTwoAndFileLine) {
  std::ofstream(tmp("bad_ref.yaml")) << "models: {}\ncases:\n  - id: x\n    source: S0\n    colour: red\n";
  const auto r = run_cli("validate " + tmp("bad_ref.yaml"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad_ref.yaml:"), std::string::npos) << r.output;
}

TEST(ValidateCli, DryRunListsEveryPointOfTheShippedSetWithoutSimulating) {
  const auto r = run_cli("validate --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("s0_llama3_70b_64_bf16"), std::string::npos);
  EXPECT_NE(r.output.find("[DGXC-70B]"), std::string::npos) << "defaults are listed";
  EXPECT_NE(r.output.find("simulated 0 of 51 points"), std::string::npos) << r.output;
}

TEST(ScaleCli, WeakScalingWritesCsvAndSvg) {
  const auto r = run_cli("scale " + data("small_job.yaml") + " --gpus 16,32,18 --mode weak -j 2 --csv " +
                         tmp("w.csv") + " --svg " + tmp("w.svg") + " --title T");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto t = read_csv(tmp("w.csv"));
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0][t.column("global_batch_size")], "32");
  EXPECT_EQ(t.rows[1][t.column("global_batch_size")], "64");
  EXPECT_EQ(t.rows[1][t.column("dp")], "8");
  EXPECT_EQ(t.rows[1][t.column("status")], "ok");
  EXPECT_EQ(t.rows[0][t.column("scaling_efficiency")], "1.0000");
  EXPECT_NE(r.output.find("relative to 16 GPUs, the smallest count simulated\n"), std::string::npos) << r.output;
  EXPECT_EQ(t.rows[2][t.column("status")], "invalid");
  EXPECT_NE(t.rows[2][t.column("reason")].find("not a multiple"), std::string::npos);
  // 18 GPUs make no whole replicas: no dp and no batch (it had written 0 and 0).
  EXPECT_EQ(t.rows[2][t.column("dp")], "");
  EXPECT_EQ(t.rows[2][t.column("global_batch_size")], "");
  const std::string svg = slurp(tmp("w.svg"));
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("weak scaling efficiency"), std::string::npos);
  // Re-plotting the CSV gives the same chart without simulating (up to the CSV's rounding).
  const auto replot = run_cli("scale plot " + tmp("w.csv") + " --svg " + tmp("w2.svg") + " --title T");
  ASSERT_EQ(replot.exit_code, 0) << replot.output;
  const std::string svg2 = slurp(tmp("w2.svg"));
  auto count = [](const std::string& s, const std::string& what) {
    std::size_t n = 0;
    for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(svg2, "<circle"), count(svg, "<circle"));
  EXPECT_EQ(count(svg2, "<polyline"), 2u);
  EXPECT_EQ(svg2.substr(0, 600), svg.substr(0, 600)) << "same frame, axes and title";
}

// The energy and cost columns are `clustersim run --json`'s figures of the same job (activity
// view, the job's pricing: H100's default rental), and read back by `scale plot`'s reader.
TEST(ScaleCli, EnergyAndCostColumnsAreThoseOfRunForTheSameJob) {
  const auto s = run_cli("scale " + data("small_job.yaml") + " --gpus 16 -j 1 --csv " + tmp("e.csv") +
                         " --svg " + tmp("e.svg"));
  ASSERT_EQ(s.exit_code, 0) << s.output;
  const auto r = run_cli("run " + data("small_job.yaml") + " --json " + tmp("e.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(slurp(tmp("e.json")));
  const auto t = read_csv(tmp("e.csv"));
  ASSERT_EQ(t.rows.size(), 1u);
  const auto& row = t.rows[0];
  const auto field = [&](const char* c) { return std::stod(row[t.column(c)]); };
  EXPECT_NEAR(field("power_w_per_gpu"), j["energy"]["w_per_gpu"]["facility"].get<double>(), 0.051);
  EXPECT_LT(field("power_w_per_gpu"), j["energy"]["w_per_gpu_provisioned"]["facility"].get<double>() - 1.0);
  EXPECT_NEAR(field("joules_per_token"), j["energy"]["joules_per_token"].get<double>(), 5.1e-5);
  EXPECT_NEAR(field("energy_to_train_mwh"), j["energy"]["energy_to_train_mwh"].get<double>(), 0.0051);
  EXPECT_NEAR(field("tokens_per_household_year"), j["energy"]["tokens_per_household_year"].get<double>(), 0.51);
  EXPECT_NEAR(field("usd_per_million_tokens"), j["cost"]["usd_per_million_tokens"].get<double>(), 5.1e-5);
  EXPECT_NEAR(field("cost_to_train_usd"), j["cost"]["cost_to_train_usd"].get<double>(), 0.51);
  // J/token is the all-in power over the throughput.
  EXPECT_NEAR(field("joules_per_token"), field("power_w_per_gpu") / field("tokens_per_s_per_gpu"), 1e-4);
  // No reliability section: no run with failures, so its columns are empty.
  EXPECT_EQ(row[t.column("goodput")], "");
  EXPECT_EQ(row[t.column("usd_per_million_tokens_with_failures")], "");
  EXPECT_EQ(slurp(tmp("e.svg")).find("goodput"), std::string::npos);
  EXPECT_NE(s.output.find("J/tok"), std::string::npos) << s.output;
  // The table prints J/token to 3 decimals (a prefix of the CSV's digits need not be it: 0.0447
  // prints 0.045).
  char jpt[32];
  std::snprintf(jpt, sizeof jpt, "%.3f", field("joules_per_token"));
  EXPECT_NE(s.output.find(std::string("  ") + jpt + "  "), std::string::npos) << jpt << "\n" << s.output;
}

// With a reliability section every point carries its training run with failures, the
// Monte-Carlo `clustersim run` reports for the same job. Job-level interruptions (the Llama 3
// catalog's planned maintenance) come at one rate at any size, so goodput falls only where the
// per-unit failures of many GPUs add up: 4,096 GPUs against 16.
TEST(ScaleCli, AReliabilitySectionAddsTheRunWithFailures) {
  const std::string job = tmp("rel_job.yaml");
  {
    std::ofstream out(job);
    out << slurp(data("small_job.yaml"))
        << "energy: {train_tokens: 1e13}\nreliability: {trials: 200, seed: 7}\n";
  }
  const auto s = run_cli("scale " + job + " --gpus 16,4096 -j 2 --csv " + tmp("r.csv") + " --svg " + tmp("r.svg"));
  ASSERT_EQ(s.exit_code, 0) << s.output;
  const auto r = run_cli("run " + job + " --json " + tmp("r.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rel = nlohmann::json::parse(slurp(tmp("r.json")))["reliability"];
  const auto t = read_csv(tmp("r.csv"));
  ASSERT_EQ(t.rows.size(), 2u);
  const auto field = [&](std::size_t i, const char* c) { return std::stod(t.rows[i][t.column(c)]); };
  EXPECT_NEAR(field(0, "goodput"), rel["goodput"]["mean"].get<double>(), 5.1e-5);
  EXPECT_NEAR(field(0, "goodput_ci95_low"), rel["goodput"]["ci95"][0].get<double>(), 5.1e-5);
  EXPECT_NEAR(field(0, "goodput_ci95_high"), rel["goodput"]["ci95"][1].get<double>(), 5.1e-5);
  EXPECT_NEAR(field(0, "interruptions"), rel["interruptions"].get<double>(), 0.051);
  EXPECT_NEAR(field(0, "days_to_train"), rel["wall_s"]["mean"].get<double>() / 86400.0, 0.0051);
  EXPECT_NEAR(field(0, "usd_per_million_tokens_with_failures"),
              field(0, "usd_per_million_tokens") / field(0, "goodput"), 2e-4);
  EXPECT_LE(field(0, "goodput_ci95_low"), field(0, "goodput"));
  EXPECT_GE(field(0, "goodput_ci95_high"), field(0, "goodput"));
  EXPECT_GT(field(1, "goodput_ci95_low"), 0.9);
  EXPECT_LT(field(1, "goodput_ci95_high"), field(0, "goodput_ci95_low")) << "4,096 GPUs fail more often than 16";
  EXPECT_NE(slurp(tmp("r.svg")).find("goodput with failures"), std::string::npos);
  EXPECT_EQ(s.output.find("no goodput"), std::string::npos) << s.output;
  EXPECT_EQ(s.output.find("no cost"), std::string::npos) << s.output;
}

// Without a price (the H200 platform lists no rental price or capital cost) the cost columns are
// empty, not 0; energy is still given.
TEST(ScaleCli, CostColumnsAreEmptyWithoutAPrice) {
  const std::string job = tmp("h200_job.yaml");
  {
    std::ofstream out(job);
    std::string text = slurp(data("small_job.yaml"));
    text.replace(text.find("hgx_h100"), 8, "hgx_h200");
    out << text;
  }
  const auto s = run_cli("scale " + job + " --gpus 16 -j 1 --csv " + tmp("p.csv") + " --svg " + tmp("p.svg"));
  ASSERT_EQ(s.exit_code, 0) << s.output;
  const auto t = read_csv(tmp("p.csv"));
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][t.column("usd_per_million_tokens")], "");
  EXPECT_EQ(t.rows[0][t.column("cost_to_train_usd")], "");
  EXPECT_GT(std::stod(t.rows[0][t.column("joules_per_token")]), 0.0);
  // The table's "-" explained: no price, no reliability section.
  EXPECT_NE(s.output.find("no cost: no price"), std::string::npos) << s.output;
  EXPECT_NE(s.output.find("no goodput: the job has no reliability: section"), std::string::npos) << s.output;
  EXPECT_EQ(s.output.find("no energy"), std::string::npos) << s.output;
}

// Every seed-study job of docs/studies reads and gets its memory estimate (no simulation): a
// change of the job spec that breaks a study fails here, not when someone regenerates the
// studies. A job the reader rejects exits 2; one over memory exits 3 after its report.
TEST(Studies, EveryStudyJobReads) {
  for (const char* name : {"llama3_70b_weak", "llama3_405b_weak", "llama3_405b_16k", "llama3_70b_sweep",
                           "llama3_70b_schedules", "llama3_405b_gb200_nvl72", "llama3_405b_gb300_nvl72",
                           "deepseek_v3_sweep", "deepseek_v3_combined", "deepseek_v3_offload"}) {
    const auto r = run_cli(std::string("memory ") + STUDIES_DIR + "/" + name + ".yaml");
    // 3: read, and over the HBM as the memory model counts it: the weak-scaling studies start
    // from S0's 64- and 576-GPU BF16 layouts, which the model puts at 88.5 and 80.5 GiB
    // (docs/validation.md); every other study fits.
    const std::string n = name;
    const bool over = n == "llama3_70b_weak" || n == "llama3_405b_weak";
    EXPECT_EQ(r.exit_code, over ? 3 : 0) << name << ": " << r.output;
    EXPECT_NE(r.output.find("peak"), std::string::npos) << name << ": " << r.output;
  }
}

TEST(ScaleCli, StrongScalingKeepsTheGlobalBatch) {
  // 12 GPUs are no whole number of nodes: the efficiency's base is 16, and the output says so.
  const auto r = run_cli("scale " + data("small_job.yaml") + " --gpus 12,16,32 --mode strong -j 2 --csv " +
                         tmp("s.csv") + " --svg " + tmp("s.svg"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("relative to 16 GPUs, the smallest count simulated (the smallest asked for, 12, was not)"),
            std::string::npos) << r.output;
  const auto t = read_csv(tmp("s.csv"));
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0][t.column("status")], "invalid");
  EXPECT_EQ(t.rows[2][t.column("global_batch_size")], "32");
  // Same work on twice the GPUs: the step gets shorter.
  EXPECT_LT(std::stod(t.rows[2][t.column("step_time_s")]), std::stod(t.rows[1][t.column("step_time_s")]));
}

// CLI11's list delimiter drops empty items: "16,,32" was read as 16,32 and simulated.
TEST(ScaleCli, AnEmptyGpuCountIsAUsageErrorNamingTheOption) {
  for (const std::string gpus : {"16,,32", ",16", "16,", "\"\""}) {
    std::remove(tmp("empty.csv").c_str());
    const auto r = run_cli("scale " + data("small_job.yaml") + " --gpus " + gpus + " -j 2 --csv " + tmp("empty.csv") +
                           " --svg " + tmp("empty.svg"));
    EXPECT_EQ(r.exit_code, 2) << gpus << "\n" << r.output;
    EXPECT_NE(r.output.find("--gpus"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("empty"), std::string::npos) << r.output;
    EXPECT_FALSE(std::ifstream(tmp("empty.csv")).good()) << gpus << ": nothing simulated, nothing written";
  }
  const auto plus = run_cli("scale " + data("small_job.yaml") + " --gpus 16,+16 -j 2 --csv " + tmp("empty.csv"));
  EXPECT_EQ(plus.exit_code, 2) << plus.output;
  EXPECT_NE(plus.output.find("'+16' is not a plain decimal integer (no sign"), std::string::npos) << plus.output;
  const auto twice = run_cli("scale " + data("small_job.yaml") + " --gpus 16,16 -j 2 --csv " + tmp("empty.csv"));
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_NE(twice.output.find("16 is given twice"), std::string::npos) << twice.output;
}

// With no GPU count simulated there is no plot, and a plot an earlier run left at --svg would
// pass for this run's: it is removed.
TEST(ScaleCli, NothingSimulatedRemovesTheEarlierPlot) {
  std::ofstream(tmp("stale.svg")) << "<svg>an earlier study</svg>\n";
  const auto r = run_cli("scale " + data("small_job.yaml") + " --gpus 18,20 -j 2 --csv " + tmp("stale.csv") +
                         " --svg " + tmp("stale.svg"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no plot written (the earlier " + tmp("stale.svg") + " removed)"), std::string::npos)
      << r.output;
  EXPECT_FALSE(std::ifstream(tmp("stale.svg")).good());
  const auto t = read_csv(tmp("stale.csv"));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0][t.column("dp")], "");  // 18: not a multiple of tp*cp*pp = 4
  EXPECT_EQ(t.rows[1][t.column("dp")], "5");  // 20: whole replicas, a cluster the platform refuses
  EXPECT_EQ(t.rows[1][t.column("status")], "invalid");
  // Again with no plot there: nothing to remove, nothing said about it.
  const auto again = run_cli("scale " + data("small_job.yaml") + " --gpus 18 -j 2 --csv " + tmp("stale.csv") +
                             " --svg " + tmp("stale.svg"));
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_EQ(again.output.find("removed"), std::string::npos) << again.output;
  // A --svg that names something other than a plot (a mistyped job file) is kept; one that is the
  // CSV is refused before anything runs (since 2026-12-06, test_cli_input_guards.cpp).
  std::ofstream(tmp("job_typo.yaml")) << "model: {catalog: llama3_8b}\n";
  for (const std::string& svg : {tmp("job_typo.yaml"), tmp("stale.csv")}) {
    const auto kept = run_cli("scale " + data("small_job.yaml") + " --gpus 18 -j 2 --csv " + tmp("stale.csv") +
                              " --svg " + svg);
    EXPECT_EQ(kept.exit_code, svg == tmp("stale.csv") ? 2 : 1) << kept.output;
    EXPECT_EQ(kept.output.find("removed"), std::string::npos) << kept.output;
    EXPECT_TRUE(std::ifstream(svg).good()) << svg;
  }
}

TEST(SweepCli, PrunesWithReasonsRanksAndShardsMergeToTheSameTable) {
  const std::string base = "sweep " + data("small_job.yaml") + " --gpus 16 --space tp=1,2 pp=1,2,3 -j 2";
  const auto full = run_cli(base + " --csv " + tmp("full.csv"));
  ASSERT_EQ(full.exit_code, 0) << full.output;
  EXPECT_NE(full.output.find("top 10 by tokens/s/GPU"), std::string::npos) << full.output;
  const auto t = read_csv(tmp("full.csv"));
  ASSERT_EQ(t.rows.size(), 6u);
  int ok = 0;
  int pruned = 0;
  for (const auto& row : t.rows) {
    if (row[t.column("status")] == "ok") {
      ++ok;
      EXPECT_EQ(row[t.column("rank")], std::to_string(ok));
    } else {
      ++pruned;
      EXPECT_EQ(row[t.column("pp")], "3");
      EXPECT_EQ(row[t.column("status")], "pruned_invalid");
      EXPECT_NE(row[t.column("reason")].find("not divisible"), std::string::npos);
    }
  }
  EXPECT_EQ(ok, 4);
  EXPECT_EQ(pruned, 2);
  // Headroom is the H100's visible 81,559 MiB less the peak, both in GiB (to the CSV's 2
  // decimals).
  for (const auto& row : t.rows) {
    if (row[t.column("status")] != "ok") continue;
    EXPECT_NEAR(std::stod(row[t.column("memory_headroom_gib")]),
                81559.0 / 1024.0 - std::stod(row[t.column("peak_memory_gib")]), 0.011);
    // The breakdown columns add up to the step time (each to the CSV's 4 decimals).
    EXPECT_NEAR(std::stod(row[t.column("compute_s")]) + std::stod(row[t.column("exposed_comm_s")]) +
                    std::stod(row[t.column("bubble_s")]),
                std::stod(row[t.column("step_time_s")]), 2e-4);
    EXPECT_GT(std::stod(row[t.column("compute_s")]), 0.0);
    // Energy and cost per configuration: J/token is the all-in power over the throughput, and
    // the cost to train the default 1e12 tokens is 1e6 x the $ per million tokens.
    EXPECT_NEAR(std::stod(row[t.column("joules_per_token")]),
                std::stod(row[t.column("power_w_per_gpu")]) / std::stod(row[t.column("tokens_per_s_per_gpu")]),
                2e-4);
    EXPECT_NEAR(std::stod(row[t.column("cost_to_train_usd")]),
                1e6 * std::stod(row[t.column("usd_per_million_tokens")]), 60.0);
  }
  for (const auto& row : t.rows) {
    if (row[t.column("status")] == "ok") continue;
    EXPECT_EQ(row[t.column("joules_per_token")], "") << "not simulated: no energy figure";
  }
  for (std::size_t i = 1; i < 4; ++i) {
    EXPECT_GE(std::stod(t.rows[i - 1][t.column("tokens_per_s_per_gpu")]),
              std::stod(t.rows[i][t.column("tokens_per_s_per_gpu")]));
  }
  ASSERT_EQ(run_cli(base + " --shard 1/2 --csv " + tmp("s1.csv")).exit_code, 0);
  ASSERT_EQ(run_cli(base + " --shard 2/2 --csv " + tmp("s2.csv")).exit_code, 0);
  EXPECT_EQ(read_csv(tmp("s1.csv")).rows.size() + read_csv(tmp("s2.csv")).rows.size(), 6u);
  const auto merged = run_cli("sweep merge " + tmp("s1.csv") + " " + tmp("s2.csv") + " --csv " + tmp("merged.csv"));
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  EXPECT_EQ(slurp(tmp("merged.csv")), slurp(tmp("full.csv")));
  const auto twice = run_cli("sweep merge " + tmp("s1.csv") + " " + tmp("s1.csv"));
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  const auto half = run_cli("sweep merge " + tmp("s1.csv"));  // shard 2/2 left out
  EXPECT_EQ(half.exit_code, 2) << half.output;
  EXPECT_NE(half.output.find("a shard's output is missing"), std::string::npos) << half.output;
}

// A configuration whose HBM fits but whose offloaded activations overflow the host's pinned
// memory is pruned too (MemoryReport::fits); the summary says so instead of calling it over
// HBM by a negative amount.
// An 8-layer Llama-3-8B job on one HGX H100 node with the platform `overrides`, written to `name`.
std::string eight_gpu_job(const std::string& name, const std::string& overrides) {
  const std::string job = tmp(name);
  std::ofstream(job) << "cluster:\n  platform: hgx_h100\n  gpus: 8\n  overrides: {" << overrides << "}\n"
                     << "model:\n  catalog: llama3_8b\n  layers: 8\n"
                        "parallelism:\n  tp: 1\n  pp: 1\n"
                        "training:\n  seq_length: 8192\n  micro_batch_size: 1\n  global_batch_size: 16\n"
                        "  precision: bf16\n";
  return job;
}

TEST(SweepCli, HostMemoryPrunesAreSummarizedApartFromHbm) {
  const std::string job = eight_gpu_job("host_prune.yaml", "host_memory_capacity: \"16GB\"");
  const auto r = run_cli("sweep " + job + " --gpus 8 --space offload=qkv_linear+core_attn+attn_proj,none -j 1 --csv " +
                         tmp("host_prune.csv"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1x pruned_memory: HBM fits, the offloaded activations over the host's pinned-memory share"),
            std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("over the GPU's HBM by"), std::string::npos) << r.output;
}

// A configuration the memory model puts a few percent over the HBM (which it errs high by for
// Megatron jobs) is pruned by default, and the summary says how many such there are;
// --memory-margin simulates and ranks them, flagged, in a sweep of its own fingerprint.
TEST(SweepCli, MemoryMarginSimulatesTightConfigurations) {
  const std::string job = eight_gpu_job("tight.yaml", "hbm_capacity: \"38GiB\"");
  const std::string base = "sweep " + job + " --gpus 8 --space tp=1 -j 1 --csv ";
  const auto pruned = run_cli(base + tmp("tight0.csv"));
  EXPECT_EQ(pruned.exit_code, 1) << pruned.output;  // nothing simulated
  EXPECT_NE(pruned.output.find("1 of them within 10.0% of the HBM"), std::string::npos) << pruned.output;
  const auto t0 = read_csv(tmp("tight0.csv"));
  EXPECT_EQ(t0.rows[0][t0.column("status")], "pruned_memory");
  const auto kept = run_cli(base + tmp("tight1.csv") + " --memory-margin 0.1");
  ASSERT_EQ(kept.exit_code, 0) << kept.output;
  const auto t1 = read_csv(tmp("tight1.csv"));
  EXPECT_EQ(t1.rows[0][t1.column("status")], "ok");
  EXPECT_EQ(t1.rows[0][t1.column("rank")], "1");
  EXPECT_LT(std::stod(t1.rows[0][t1.column("memory_headroom_gib")]), 0.0);
  EXPECT_EQ(t1.rows[0][t1.column("reason")].rfind("tight (within --memory-margin)", 0), 0u);
  EXPECT_NE(t1.rows[0][t1.column("sweep")], t0.rows[0][t0.column("sweep")]);
  // Over by 4.9%: a 4% margin still prunes it.
  EXPECT_EQ(run_cli(base + tmp("tight2.csv") + " --memory-margin 0.04").exit_code, 1);
  // NaN passes CLI11's range (every comparison with it is false) and acted as 0: a usage error.
  const auto nan = run_cli(base + tmp("tight3.csv") + " --memory-margin nan");
  EXPECT_EQ(nan.exit_code, 2) << nan.output;
  EXPECT_NE(nan.output.find("--memory-margin"), std::string::npos) << nan.output;
}

TEST(SweepCli, BadSpaceIsAUsageError) {
  const auto r = run_cli("sweep " + data("small_job.yaml") + " --gpus 16 --space dp=1,2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown dimension 'dp'"), std::string::npos) << r.output;
}

TEST(ScaleAndSweepCli, AGpuCountBelowOneIsAUsageError) {
  for (const std::string& args : {"scale " + data("small_job.yaml") + " --gpus 16,0 --mode weak",
                                 "sweep " + data("small_job.yaml") + " --gpus -8 --space tp=1"}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("--gpus"), std::string::npos) << r.output;
  }
}

}  // namespace
