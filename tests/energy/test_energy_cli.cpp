// End-to-end: energy and cost in `clustersim run`, and `clustersim tco`.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include <unistd.h>

#include "../cli_test_util.hpp"

namespace {

using clustersim::cli_test::Result;
using clustersim::cli_test::run_cli;

std::string data(const std::string& name) { return std::string(ENERGY_TEST_DATA_DIR) + "/" + name; }
// Scratch files carry the test process's id: two build trees testing on one machine at once
// (or a rerun beside a run) never read each other's outputs.
std::string tmp(const std::string& name) {
  return ::testing::TempDir() + "/clustersim-" + std::to_string(::getpid()) + "-" + name;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(EnergyCli, RunReportsPowerEnergyAndCostConsistently) {
  const auto r = run_cli("run " + data("small_h100.yaml") + " --json " + tmp("e.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("J/token"), std::string::npos) << r.output;
  const auto j = read_json(tmp("e.json"));
  const auto& e = j["energy"];
  const auto& a = e["activity_s"];
  const double step = j["step_time_s"];
  EXPECT_NEAR(a["tensor"].get<double>() + a["memory_bound"].get<double>() +
                  a["communication"].get<double>() + a["waiting"].get<double>(),
              step, 1e-9 * step);
  const auto& w = e["w_per_gpu"];
  EXPECT_NEAR(w["facility"].get<double>(), 1.2 * w["it"].get<double>(), 1e-9);
  EXPECT_NEAR(e["joules_per_token"].get<double>(),
              w["facility"].get<double>() / j["tokens_per_s_per_gpu"].get<double>(), 1e-9);
  EXPECT_GT(e["joules_per_token_provisioned"].get<double>(), e["joules_per_token"].get<double>());
  EXPECT_EQ(j["cost"]["pricing"], "rental");
  EXPECT_NEAR(j["cost"]["usd_per_million_tokens"].get<double>(),
              1.42 / 3600 * 1e6 / j["tokens_per_s_per_gpu"].get<double>(), 1e-9);
}

TEST(EnergyCli, TcoComparesPerDollarWithAndWithoutFailures) {
  const auto r = run_cli("tco " + data("small_h100.yaml") + " " + data("small_gb200.yaml") +
                         " --json " + tmp("tco.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("break-even"), std::string::npos) << r.output;
  const auto j = read_json(tmp("tco.json"));
  const auto& c = j["comparison"];
  const double ratio = c["perf_per_tco_ratio"];
  const double a_per_usd = 1.0 / j["a"]["cost"]["usd_per_million_tokens"].get<double>();
  const double b_per_usd = 1.0 / j["b"]["cost"]["usd_per_million_tokens"].get<double>();
  EXPECT_NEAR(ratio, b_per_usd / a_per_usd, 1e-9 * ratio);
  EXPECT_EQ(j["a"]["cost"]["pricing"], "tco");  // tco prices both jobs by TCO by default
  const double goodput = j["b"]["reliability"]["goodput"]["mean"];
  EXPECT_GT(goodput, 0.0);
  EXPECT_LT(goodput, 1.0);
  // A less reliable rack can only lower B's advantage.
  const auto& sweep = c["domain_mtbf_sweep"];
  ASSERT_GE(sweep.size(), 2u);
  EXPECT_LE(sweep.front()["perf_per_tco_ratio"].get<double>(),
            sweep.back()["perf_per_tco_ratio"].get<double>());
}

// A job with a reliability section gets its run with failures from `run` too, the same
// Monte-Carlo as `tco` (same inputs, seed and trials, so the same goodput); a rack-scale job
// whose section lacks domain_mtbf is an error there as in tco (run once accepted the section
// and ignored it). Without a section, run reports the failure-free step only.
TEST(EnergyCli, RunReportsFailuresWhenTheJobHasAReliabilitySection) {
  const auto r = run_cli("run " + data("small_gb200.yaml") + " --json " + tmp("rf.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("failures      goodput "), std::string::npos) << r.output;
  const auto j = read_json(tmp("rf.json"));
  const double goodput = j["reliability"]["goodput"]["mean"];
  EXPECT_GT(goodput, 0.0);
  EXPECT_LT(goodput, 1.0);
  EXPECT_EQ(j["reliability"]["trials"], 200);
  ASSERT_EQ(run_cli("tco " + data("small_h100.yaml") + " " + data("small_gb200.yaml") + " --json " +
                    tmp("rf_tco.json")).exit_code, 0);
  EXPECT_DOUBLE_EQ(read_json(tmp("rf_tco.json"))["b"]["reliability"]["goodput"]["mean"].get<double>(),
                   goodput);
  const auto missing = run_cli("run " + data("gb200_no_domain_mtbf.yaml"));
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("reliability.domain_mtbf"), std::string::npos) << missing.output;
  // Checked before the memory check and the simulation (which may take minutes at scale): the
  // same job over memory still names the missing input, not the memory.
  const auto first = run_cli("run " + data("gb200_no_domain_mtbf_oom.yaml"));
  EXPECT_EQ(first.exit_code, 2) << first.output;
  EXPECT_NE(first.output.find("reliability.domain_mtbf"), std::string::npos) << first.output;
  // A one-node NVLink domain (HGX) has no domain failure mode: domain_mtbf there is an error
  // (it once added a failure per node at that MTBF, goodput 96% -> 12%).
  const auto hgx = run_cli("run " + data("h100_domain_mtbf.yaml"));
  EXPECT_EQ(hgx.exit_code, 2) << hgx.output;
  EXPECT_NE(hgx.output.find("h100_domain_mtbf.yaml:8: reliability.domain_mtbf"), std::string::npos) << hgx.output;
  const auto plain = run_cli("run " + std::string(CLUSTERSIM_SOURCE_DIR) +
                             "/tests/tools/data/small_job.yaml --json " + tmp("nf.json"));
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_FALSE(read_json(tmp("nf.json")).contains("reliability"));
  EXPECT_EQ(plain.output.find("failures      "), std::string::npos);
}

// The break-even line says whether B wins: B slower per TCO is not told where it "stops winning".
TEST(EnergyCli, TcoBreakEvenSaysWhetherBWins) {
  const auto wins = run_cli("tco " + data("small_h100.yaml") + " " + data("small_gb200.yaml"));
  ASSERT_EQ(wins.exit_code, 0) << wins.output;
  const auto loses = run_cli("tco " + data("small_gb200.yaml") + " " + data("small_h100.yaml"));
  ASSERT_EQ(loses.exit_code, 0) << loses.output;
  const bool b_wins = wins.output.find("B stops winning per TCO below") != std::string::npos;
  EXPECT_EQ(b_wins, loses.output.find("B does not win per TCO here") != std::string::npos)
      << wins.output << loses.output;
  EXPECT_NE(b_wins, wins.output.find("B does not win per TCO here") != std::string::npos);
  // The GB200 side's accuracy line (its kernel times derived from the H200's), the H100's none.
  for (const auto& [r, derived, hopper] : {std::tuple{&wins, "accuracy B    derived GPU (GB200)", "accuracy A"},
                                           std::tuple{&loses, "accuracy A    derived GPU (GB200)", "accuracy B"}}) {
    EXPECT_NE(r->output.find(derived), std::string::npos) << r->output;
    EXPECT_EQ(r->output.find(hopper), std::string::npos) << r->output;
  }
}

// tco states each job's peak memory per GPU and marks one that does not fit.
TEST(EnergyCli, TcoStatesMemoryAndMarksAJobThatDoesNotFit) {
  const auto r = run_cli("tco " + data("small_h100.yaml") + " " + data("small_gb200.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("memory/GPU (GiB)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("DOES NOT FIT"), std::string::npos) << r.output;
  const std::string big = tmp("big.yaml");
  std::ofstream(big) << "cluster: {platform: hgx_h100, gpus: 8}\nmodel: llama3_70b\n"
                        "parallelism: {tp: 8}\ntraining: {seq_length: 8192, micro_batch_size: 1, "
                        "global_batch_size: 8, precision: bf16}\n";
  const auto oom = run_cli("tco " + big + " " + data("small_gb200.yaml"));
  EXPECT_EQ(oom.exit_code, 3) << oom.output;  // as run's, after the comparison (since 2026-12-06)
  EXPECT_NE(oom.output.find("of 79.6 DOES NOT FIT"), std::string::npos) << oom.output;
}

// Economics inputs the pricing does not use are named, not silently dropped: TCO figures on a
// job priced by rental (the default where the platform lists a rental price), and a rental
// price on a TCO-priced job.
// The `cost` object of `run --json` for the job `base` with `economics` appended, as NAME.yaml.
nlohmann::json cost_of(const std::string& base, const std::string& economics,
                       const std::string& name) {
  std::ofstream(tmp(name + ".yaml")) << base << economics;
  const auto r = run_cli("run " + tmp(name + ".yaml") + " --json " + tmp(name + ".json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return read_json(tmp(name + ".json"))["cost"];
}

TEST(EnergyCli, EconomicsInputsThePricingIgnoresAreNamed) {
  const std::string base =
      "cluster: {platform: hgx_h100, gpus: 16}\nmodel: {catalog: llama3_8b, layers: 4}\n"
      "parallelism: {tp: 2, pp: 2, dp: 4, sequence_parallel: true}\n"
      "training: {seq_length: 2048, micro_batch_size: 1, global_batch_size: 32, precision: bf16}\n";
  const auto implicit = cost_of(base, "economics: {capex_usd: 300000, usd_per_kwh: 0.1}\n", "eco_a");
  EXPECT_EQ(implicit["pricing"], "rental");
  EXPECT_EQ(implicit["unused_inputs"],
            "economics.capex_usd, usd_per_kwh: TCO inputs, unused with rental pricing (the default "
            "here; set economics.pricing to choose)");
  const auto tco = cost_of(base, "economics: {pricing: tco, capex_usd: 300000, usd_per_kwh: 0.1}\n", "eco_b");
  EXPECT_EQ(tco["pricing"], "tco");
  EXPECT_FALSE(tco.contains("unused_inputs"));
  const auto rental = cost_of(base, "economics: {pricing: tco, usd_per_gpu_hour: 2.5}\n", "eco_c");
  EXPECT_EQ(rental["unused_inputs"], "economics.usd_per_gpu_hour: a rental input, unused with TCO pricing");
}

// A capital cost on a platform that states none takes no unit by guess where a node is not the
// NVLink domain: GB300 NVL72's 4-GPU trays against its 72-GPU racks (a rack price charged per
// tray would be 18x too high). With the unit, the price per GPU-hour is the rack's over 72 GPUs.
TEST(EnergyCli, RackPriceWithoutItsUnitIsNotGuessed) {
  const std::string base =
      "cluster: {platform: gb300_nvl72, gpus: 144}\nmodel: {catalog: llama3_8b, layers: 4}\n"
      "parallelism: {tp: 4}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 36, precision: bf16}\n";
  const auto unsaid = cost_of(base, "economics: {capex_usd: 4500000}\n", "rack_a");
  EXPECT_FALSE(unsaid.contains("usd_per_gpu_hour"));
  EXPECT_NE(unsaid["note"].get<std::string>().find("give capex_unit"), std::string::npos) << unsaid;
  const auto rack = cost_of(base, "economics: {capex_usd: 4500000, capex_unit: domain}\n", "rack_b");
  const auto tray = cost_of(base, "economics: {capex_usd: 4500000, capex_unit: node}\n", "rack_c");
  EXPECT_NEAR(rack["capex_usd_per_gpu_hour"].get<double>() * 18,
              tray["capex_usd_per_gpu_hour"].get<double>(), 1e-9);
  // A unit alone does not re-price the platform's stated rack price per tray.
  const std::string gb200 =
      "cluster: {platform: gb200_nvl72, gpus: 144}\nmodel: {catalog: llama3_8b, layers: 4}\n"
      "parallelism: {tp: 4}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 36, precision: bf16}\n";
  const auto unit_alone = cost_of(gb200, "economics: {pricing: tco, capex_unit: node}\n", "rack_d");
  EXPECT_FALSE(unit_alone.contains("capex_usd_per_gpu_hour")) << unit_alone;
  EXPECT_NE(unit_alone["note"].get<std::string>().find("a unit without economics.capex_usd would re-price the capital cost platform "
                                                        "'gb200_nvl72' states per domain"),
            std::string::npos) << unit_alone;
  const auto platform_price = cost_of(gb200, "economics: {pricing: tco}\n", "rack_e");
  EXPECT_NEAR(platform_price["capex_usd_per_gpu_hour"].get<double>(), 3.9e6 / 72 / (5 * 8766.0), 1e-3);
}

TEST(EnergyCli, RackScaleJobWithoutDomainMtbfIsASpecError) {
  const auto r =
      run_cli("tco " + data("small_h100.yaml") + " " + data("gb200_no_domain_mtbf.yaml"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("reliability.domain_mtbf"), std::string::npos) << r.output;
  // Without a reliability section too, and before either job is simulated: the error names the
  // line that chose the rack-scale platform (it had run both simulations, then named no line).
  const auto none = run_cli("tco " + data("small_h100.yaml") + " " + data("gb200_no_reliability.yaml"));
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("gb200_no_reliability.yaml:3: cluster.platform: platform 'gb200_nvl72'"),
            std::string::npos) << none.output;
  EXPECT_NE(none.output.find("give reliability.domain_mtbf"), std::string::npos) << none.output;
  // Before A is simulated: A's simulation would fail first (one replica cannot be reduced to
  // identical ones), so only the early check reports B's missing input.
  const auto early = run_cli("tco " + data("h100_single_replica.yaml") + " " +
                             data("gb200_no_reliability.yaml") + " --replicas identical");
  EXPECT_EQ(early.exit_code, 2) << early.output;
  EXPECT_NE(early.output.find("gb200_no_reliability.yaml:3: cluster.platform"), std::string::npos)
      << early.output;
  const auto late = run_cli("tco " + data("h100_single_replica.yaml") + " " + data("small_h100.yaml") +
                            " --replicas identical");
  EXPECT_NE(late.exit_code, 0) << late.output;  // what A's simulation says, unseen above
  EXPECT_NE(late.output.find("single data-parallel replica"), std::string::npos) << late.output;
}

TEST(EnergyCli, UnknownReliabilityKeyIsReportedWithItsLine) {
  const auto r = run_cli("run " + data("unknown_reliability_key.yaml"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown_reliability_key.yaml:11"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("restart_time"), std::string::npos) << r.output;
}

TEST(EnergyCli, RentalWithoutAPriceIsANoteInRunAndAnErrorInTco) {
  const auto run = run_cli("run " + data("gb200_rental_without_price.yaml"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("cost          n/a"), std::string::npos) << run.output;
  const auto tco =
      run_cli("tco " + data("small_h100.yaml") + " " + data("gb200_rental_without_price.yaml"));
  EXPECT_EQ(tco.exit_code, 2) << tco.output;
  EXPECT_NE(tco.output.find("gb200_rental_without_price.yaml:6: economics.usd_per_gpu_hour"),
            std::string::npos)
      << tco.output;
}

TEST(EnergyCli, PlatformPowerAndCostFiguresAreOverridable) {
  const auto r = run_cli("run " + data("h100_power_overrides.yaml") + " --json " + tmp("o.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = read_json(tmp("o.json"));
  const auto& w = j["energy"]["w_per_gpu"];
  EXPECT_DOUBLE_EQ(w["host"].get<double>(), 4000.0 / 8);
  // 2-tier non-blocking fat-tree: 3 switch ports per NIC, one NIC per GPU.
  EXPECT_DOUBLE_EQ(w["network"].get<double>(), 3 * 20.0);
  EXPECT_DOUBLE_EQ(w["facility"].get<double>(), w["it"].get<double>());  // PUE 1
  EXPECT_DOUBLE_EQ(j["cost"]["usd_per_gpu_hour"].get<double>(), 2.0);
  const auto bad = run_cli("run " + data("h200_capex_override.yaml"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("h200_capex_override.yaml:5"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("no economics: section"), std::string::npos) << bad.output;
}

}  // namespace

namespace {

// With --uncertainty, tco brackets B's speed over A's by each side's band and places the
// break-even speed against that range (docs/energy.md).
TEST(EnergyCli, TcoUncertaintyBracketsTheSpeedRatioAndPlacesTheBreakEven) {
  const auto r = run_cli("tco " + data("small_h100.yaml") + " " + data("small_gb200.yaml") +
                         " --uncertainty --json " + tmp("tco_u.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto c = read_json(tmp("tco_u.json"))["comparison"];
  const double lo = c["speed_ratio_band"][0], hi = c["speed_ratio_band"][1];
  const double speed = c["speed_ratio"], even = c["break_even_speed_ratio"];
  EXPECT_LT(lo, speed);
  EXPECT_GT(hi, speed);
  // B (GB200) is derived with GEMM +-10% and attention +-20%: a range of well over 10%.
  EXPECT_GT(hi / lo, 1.10);
  const std::string verdict =
      even < lo ? "B wins across it" : even > hi ? "B loses across it" : "inside it: not decided";
  EXPECT_NE(r.output.find("break-even x"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(verdict), std::string::npos) << r.output;
  // Without the flag the comparison has no band.
  ASSERT_EQ(run_cli("tco " + data("small_h100.yaml") + " " + data("small_gb200.yaml") +
                    " --json " + tmp("tco_plain.json"))
                .exit_code,
            0);
  EXPECT_FALSE(read_json(tmp("tco_plain.json"))["comparison"].contains("speed_ratio_band"));
}

}  // namespace
