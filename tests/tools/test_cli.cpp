// End-to-end tests of the clustersim binary: the paths a user takes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include <unistd.h>

#include "../cli_test_util.hpp"

namespace {

using clustersim::cli_test::Result;
using clustersim::cli_test::run_cli;

std::string data(const std::string& name) { return std::string(TEST_DATA_DIR) + "/" + name; }

// Scratch files carry the test process's id: two build trees testing on one machine at once
// (or a rerun beside a run) never read each other's outputs.
std::string tmp(const std::string& name) {
  return ::testing::TempDir() + "/clustersim-" + std::to_string(::getpid()) + "-" + name;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(Cli, RunWritesJsonWhoseBreakdownAddsUpToTheStepTime) {
  const auto r = run_cli("run " + data("small_job.yaml") + " --json " + tmp("small.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("step time"), std::string::npos);
  const auto j = read_json(tmp("small.json"));
  for (const char* key : {"step_time_s", "mfu", "mfu_convention", "tflops_per_gpu",
                          "tokens_per_s_per_gpu", "breakdown", "sim_wall_s", "events"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  const double step = j["step_time_s"];
  const auto& b = j["breakdown"];
  const double sum = b["compute_s"].get<double>() + b["exposed_comm_s"].get<double>() +
                     b["bubble_s"].get<double>();
  EXPECT_GT(step, 0.0);
  EXPECT_NEAR(sum, step, 1e-9 * step);
  EXPECT_EQ(j["mfu_convention"], "megatron");
  EXPECT_GT(j["mfu"].get<double>(), 0.05);
  EXPECT_LT(j["mfu"].get<double>(), 0.9);
  // tokens/s/GPU follows from the batch: 32 x 2048 tokens per step over 16 GPUs.
  EXPECT_NEAR(j["tokens_per_s_per_gpu"].get<double>(), 32.0 * 2048 / step / 16, 1e-6);
  EXPECT_GT(j["events"].get<double>(), 0);
}

TEST(Cli, SameJobTwiceGivesIdenticalJsonExceptWallTime) {
  ASSERT_EQ(run_cli("run " + data("small_job.yaml") + " --json " + tmp("a.json")).exit_code, 0);
  ASSERT_EQ(run_cli("run " + data("small_job.yaml") + " --json " + tmp("b.json")).exit_code, 0);
  auto a = read_json(tmp("a.json"));
  auto b = read_json(tmp("b.json"));
  a.erase("sim_wall_s");
  b.erase("sim_wall_s");
  EXPECT_EQ(a.dump(), b.dump());
}

TEST(Cli, TraceIsChromeTraceEventJsonWithEveryRank) {
  const auto r = run_cli("run " + data("small_job.yaml") + " --trace " + tmp("trace.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = read_json(tmp("trace.json"));
  ASSERT_TRUE(j.contains("traceEvents"));
  std::set<int> ranks;
  int complete = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      ranks.insert(e["pid"].get<int>());
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    }
  }
  EXPECT_GT(complete, 100);
  EXPECT_EQ(ranks.size(), 16u);
}

TEST(Cli, InconsistentParallelismExitsWithTwoAndNamesFileLineField) {
  const auto r = run_cli("run " + data("bad_tp.yaml"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("bad_tp.yaml:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("parallelism"), std::string::npos) << r.output;
}

TEST(Cli, UnknownKeyExitsWithTwoAndNamesTheKeyAndLine) {
  const auto r = run_cli("run " + data("unknown_key.yaml"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown_key.yaml:14"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("learning_rate"), std::string::npos) << r.output;
}

std::string small_job_with(const std::string& name, const std::string& extra) {
  std::ifstream in(data("small_job.yaml"));
  std::stringstream text;
  text << in.rdbuf() << extra;
  std::ofstream(tmp(name)) << text.str();
  return tmp(name);
}

TEST(Cli, InterferenceCanBeTurnedOffFromTheJobOrTheCommandLine) {
  ASSERT_EQ(run_cli("run " + data("small_job.yaml") + " --json " + tmp("on.json")).exit_code, 0);
  ASSERT_EQ(run_cli("run " + data("small_job.yaml") + " --no-interference --json " + tmp("off.json"))
                .exit_code, 0);
  const std::string job = small_job_with("no_interference.yaml", "simulation:\n  interference: false\n");
  ASSERT_EQ(run_cli("run " + job + " --json " + tmp("off_job.json")).exit_code, 0);
  auto on = read_json(tmp("on.json"));
  auto off = read_json(tmp("off.json"));
  auto off_job = read_json(tmp("off_job.json"));
  EXPECT_EQ(on["interference"], true);
  EXPECT_EQ(off["interference"], false);
  EXPECT_GE(on["step_time_s"].get<double>(), off["step_time_s"].get<double>());
  off.erase("sim_wall_s");
  off_job.erase("sim_wall_s");
  EXPECT_EQ(off.dump(), off_job.dump());
  const auto bad = run_cli("run " + small_job_with("bad_interference.yaml",
                                                   "simulation:\n  interference: sometimes\n"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("interference"), std::string::npos) << bad.output;
}

// FlashAttention-2 runs on an H100 job and is slower than cuDNN there; where no table or rule
// covers it (a B200, the roofline model) the job is wrong at its training key, with exit 2.
TEST(Cli, FlashAttention2RunsWhereMeasuredAndIsAnErrorAtItsKeyElsewhere) {
  const auto job = [](const std::string& name, const std::string& platform, const std::string& backend) {
    const std::string path = tmp(name);
    std::ofstream(path) << "cluster:\n  platform: " << platform << "\n  gpus: 8\n"
                           "model: {catalog: llama3_8b, layers: 4}\nparallelism: {tp: 1}\n"
                           "training:\n  seq_length: 8192\n  micro_batch_size: 1\n  precision: bf16\n"
                           "  attention_backend: " << backend << "\n";
    return path;
  };
  ASSERT_EQ(run_cli("run " + job("cudnn.yaml", "hgx_h100", "cudnn") + " --json " + tmp("cudnn.json")).exit_code, 0);
  ASSERT_EQ(run_cli("run " + job("flash2.yaml", "hgx_h100", "flash2") + " --json " + tmp("flash2.json")).exit_code, 0);
  EXPECT_GT(read_json(tmp("flash2.json"))["step_time_s"].get<double>(),
            1.03 * read_json(tmp("cudnn.json"))["step_time_s"].get<double>());
  const std::string b200 = job("flash2_b200.yaml", "hgx_b200", "flash2");
  for (const std::string& args : {"run " + b200, "run " + job("flash2_r.yaml", "hgx_h100", "flash2") + " --cost roofline"}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(".yaml:10: training.attention_backend"), std::string::npos) << r.output;
  }
}

// A GPU no cost model knows (a user's own platform or a renamed catalog GPU) is the input's
// error, at the line that named it, for both models: not a bare exception after loading.
TEST(Cli, GpuNameNoCostModelKnowsIsAnErrorAtTheNameWithExitTwo) {
  const std::string job = tmp("unknown_gpu.yaml");
  std::ofstream(job) << "cluster:\n  platform: hgx_h100\n  gpus: 16\n  overrides: {name: H800-SXM}\n"
                        "model: {catalog: llama3_8b, layers: 4}\nparallelism: {tp: 2, pp: 2, dp: 4}\n"
                        "training: {seq_length: 2048, micro_batch_size: 1, precision: bf16}\n";
  for (const std::string cost : {"measured", "roofline"}) {
    const auto r = run_cli("run " + job + " --cost " + cost);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("unknown_gpu.yaml:4: cluster.overrides.name: the " + cost +
                            " cost model knows no GPU named 'H800-SXM'"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("H100-SXM"), std::string::npos) << r.output;
  }
}

TEST(Cli, NcclProtocolFromTheJobMatchesTheFlag) {
  const std::string job = small_job_with("proto_ll.yaml", "simulation:\n  nccl_proto: LL\n");
  ASSERT_EQ(run_cli("run " + job + " --json " + tmp("ll_job.json")).exit_code, 0);
  ASSERT_EQ(run_cli("run " + data("small_job.yaml") + " --nccl-proto LL --json " + tmp("ll.json")).exit_code, 0);
  ASSERT_EQ(run_cli("run " + data("small_job.yaml") + " --nccl-proto Simple --json " + tmp("simple.json"))
                .exit_code, 0);
  auto a = read_json(tmp("ll_job.json"));
  auto b = read_json(tmp("ll.json"));
  const auto simple = read_json(tmp("simple.json"));
  a.erase("sim_wall_s");
  b.erase("sim_wall_s");
  EXPECT_EQ(a.dump(), b.dump());
  EXPECT_NE(a["step_time_s"].get<double>(), simple["step_time_s"].get<double>());
  const auto bad = run_cli("run " + small_job_with("proto_bad.yaml", "simulation:\n  nccl_proto: ll\n"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
}

// A forced algorithm that cannot run a collective (tree: all-reduces over 2+ NVLink domains) is
// replaced by ring, and the report says where: the small job's TP and data-parallel collectives,
// all inside one HGX node (TP2 x DP4 per pipeline stage). Ring runs everything it has, and NCCL's own choice
// falls back nowhere.
TEST(Cli, ForcedAlgorithmFallbacksAreListed) {
  ASSERT_EQ(run_cli("run " + data("small_job.yaml") + " --nccl-algo tree --json " + tmp("tree.json"))
                .exit_code, 0);
  ASSERT_EQ(run_cli("run " + data("small_job.yaml") + " --nccl-algo ring --json " + tmp("ring.json"))
                .exit_code, 0);
  ASSERT_EQ(run_cli("run " + data("small_job.yaml") + " --json " + tmp("choice.json")).exit_code, 0);
  const auto tree = read_json(tmp("tree.json"))["nccl_algo_fallbacks"];
  ASSERT_TRUE(tree.is_array());
  const std::string all = tree.dump();
  EXPECT_NE(all.find("tree forced, reduce_scatter of group dp over 1 NVLink domain(s): ring ("),
            std::string::npos) << all;
  EXPECT_NE(all.find("tree forced, all_gather of group tp over 1 NVLink domain(s): ring ("),
            std::string::npos) << all;
  EXPECT_TRUE(read_json(tmp("ring.json"))["nccl_algo_fallbacks"].empty());
  EXPECT_TRUE(read_json(tmp("choice.json"))["nccl_algo_fallbacks"].empty());
  const auto text = run_cli("run " + data("small_job.yaml") + " --nccl-algo tree");
  EXPECT_NE(text.output.find("forced algo   not applicable, fell back: tree forced"), std::string::npos);
}

TEST(Cli, MissingFileAndUnknownCommandAreUsageErrors) {
  EXPECT_NE(run_cli("run /nonexistent/job.yaml").exit_code, 0);
  EXPECT_EQ(run_cli("frobnicate").exit_code, 2);
}

TEST(Cli, HelpExplainsEveryRunOption) {
  const auto r = run_cli("run --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* opt : {"--json", "--trace", "--show-default", "--no-interference", "--nccl-proto"}) {
    EXPECT_NE(r.output.find(opt), std::string::npos) << opt;
  }
}

}  // namespace

// Issue 4: a job whose worst rank does not fit in HBM stops before simulating.
TEST(Cli, JobOverGpuMemoryStopsWithThreeNamingRankGibAndComponent) {
  const std::string json = tmp("oom.json");
  std::remove(json.c_str());
  const auto r = run_cli("run " + data("oom_job.yaml") + " --json " + json);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  for (const char* part : {"out of GPU memory", "rank ", "GiB but the GPU has", "over by",
                           "largest component is activations", "clustersim memory",
                           "--ignore-oom"}) {
    EXPECT_NE(r.output.find(part), std::string::npos) << part << "\n" << r.output;
  }
  EXPECT_EQ(r.output.find("step time"), std::string::npos) << "must not simulate\n" << r.output;
  EXPECT_FALSE(std::ifstream(json).good()) << "no JSON for a job that was not simulated";
}

TEST(Cli, IgnoreOomSimulatesAnywayWithAWarningAndTheVerdictInJson) {
  const auto r = run_cli("run " + data("oom_job.yaml") + " --ignore-oom --json " + tmp("oom2.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: out of GPU memory"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("step time"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("OUT OF MEMORY"), std::string::npos) << r.output;
  const auto j = read_json(tmp("oom2.json"));
  ASSERT_TRUE(j.contains("memory")) << j.dump(2);
  const auto& m = j["memory"];
  EXPECT_FALSE(m["fits"].get<bool>());
  EXPECT_GT(m["peak_gib"].get<double>(), m["capacity_gib"].get<double>());
  EXPECT_EQ(m["largest_component"], "activations");
  EXPECT_NE(m["oom"].get<std::string>().find("over by"), std::string::npos);
  EXPECT_GT(j["step_time_s"].get<double>(), 0.0);
}

TEST(Cli, JobThatFitsCarriesTheMemoryVerdictAndTheCostTables) {
  const auto r = run_cli("run " + data("small_job.yaml") + " --json " + tmp("fit.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Issue 5 item 6: which table served each op class.
  for (const char* part : {"cost tables", "GEMM BF16:", "attention:", "memory-bound:",
                           "collectives over NVLink:", "memory        peak"}) {
    EXPECT_NE(r.output.find(part), std::string::npos) << part << "\n" << r.output;
  }
  const auto j = read_json(tmp("fit.json"));
  ASSERT_TRUE(j.contains("memory"));
  EXPECT_TRUE(j["memory"]["fits"].get<bool>());
  EXPECT_LT(j["memory"]["peak_gib"].get<double>(), j["memory"]["capacity_gib"].get<double>());
  EXPECT_FALSE(j["memory"].contains("oom"));
  EXPECT_EQ(j["cost_tables"].size(), 16u);  // GEMMs under TP overlap (run 12), beside held SMs (run 18), into main_grad (run 48), block-scaled FP8 (run 78), TF32 (run 102), beside host copies (runs 80-81), power state
  EXPECT_TRUE(j["power_state"]["applied"].get<bool>());
}

TEST(Cli, DefaultJobFitsInMemory) {
  const auto show = run_cli("run --show-default > " + tmp("default.yaml"));
  ASSERT_EQ(show.exit_code, 0) << show.output;
  const auto r = run_cli("memory " + tmp("default.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\nfits\n"), std::string::npos) << r.output;
}

// `memory` on a job that does not fit prints its report (and JSON), then exits 3 as `run` does.
TEST(Cli, MemoryExitsThreeWhenTheJobDoesNotFit) {
  const auto r = run_cli("memory " + data("oom_job.yaml") + " --json " + tmp("oom_memory.json"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("OUT OF MEMORY"), std::string::npos) << r.output;
  EXPECT_TRUE(read_json(tmp("oom_memory.json")).contains("oom"));
}

// Issue 5: `calib check` over the committed H200 tables.
// scale and sweep print their runs' accuracy lines once, below their tables: a B200 job's
// derived-GPU line (its kernel times derived from the H200's), an H100 job's none.
TEST(Cli, ScaleAndSweepPrintTheirRunsAccuracyLinesOnce) {
  const std::string b200 = tmp("accuracy_b200.yaml"), h100 = tmp("accuracy_h100.yaml");
  const std::string body = "model: {catalog: llama3_8b, layers: 2}\nparallelism: {tp: 2}\n"
                           "training: {seq_length: 1024, micro_batch_size: 1, global_batch_size: 8, "
                           "precision: bf16}\n";
  std::ofstream(b200) << "cluster: {platform: hgx_b200, gpus: 16}\n" << body;
  std::ofstream(h100) << "cluster: {platform: hgx_h100, gpus: 16}\n" << body;
  const std::string line = "\naccuracy      derived GPU (B200): ";
  for (const auto& [job, expected] : {std::pair{b200, 1}, std::pair{h100, 0}}) {
    const auto scale = run_cli("scale " + job + " --gpus 16,32 --mode weak --csv " + tmp("acc.csv") +
                               " --svg " + tmp("acc.svg"));
    const auto sweep = run_cli("sweep " + job + " --gpus 16 --space tp=1,2 -j 1 --csv " + tmp("acc_sweep.csv"));
    for (const Result* r : {&scale, &sweep}) {
      ASSERT_EQ(r->exit_code, 0) << r->output;
      std::size_t count = 0;
      for (auto at = r->output.find(line); at != std::string::npos; at = r->output.find(line, at + 1)) ++count;
      EXPECT_EQ(count, static_cast<std::size_t>(expected)) << r->output;  // all runs carry it: no "(K of N"
      EXPECT_EQ(r->output.find("accuracy      ("), std::string::npos) << r->output;
    }
  }
}

TEST(Cli, CalibCheckReportsEveryTableAndWritesJson) {
  const auto r = run_cli("calib check --json " + tmp("calib.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Leave-one-out"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("reported, not enforced"), std::string::npos) << r.output;
  const auto j = read_json(tmp("calib.json"));
  for (const char* key : {"data_dir", "provenance", "goal", "leave_one_out", "leave_one_out_long",
                          "catalog"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  ASSERT_GT(j["leave_one_out"].size(), 20u);
  for (const auto& row : j["leave_one_out"]) {
    const std::string table = row["table"];
    EXPECT_NE(r.output.find(table), std::string::npos) << table;
    EXPECT_EQ(row["meets_goal"].get<bool>(),
              row["median"].get<double>() <= 0.03 && row["max"].get<double>() <= 0.10);
  }
  for (const char* table : {"gemm/bf16/fwd", "gemm/fp8/tn", "attention/cudnn/gqa/fwd",
                            "membound/copy", "nccl/default/default/all_reduce"}) {
    EXPECT_NE(r.output.find(table), std::string::npos) << table << "\n" << r.output;
  }
  // The derived H100 against the H100 runs (calib/data/h100/run85, run87, ...), 10 rows each.
  ASSERT_GE(j["derived_gpu"].size(), 20u);
  EXPECT_EQ(j["derived_gpu"].size() % 10, 0u);
  EXPECT_EQ(j["derived_gpu"][0]["table"], "run85 gemm/bf16 (catalog)");
  EXPECT_EQ(j["derived_gpu"][10]["table"], "run87 gemm/bf16 (catalog)");
  // Runs the H100's own memory-bound table averages are held out of it.
  EXPECT_EQ(j["derived_gpu"][3]["table"], "run85 membound/copy (held out)");
  EXPECT_NE(r.output.find(" derived-GPU rows"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("no derived-GPU rows"), std::string::npos) << r.output;
  // With --data the H100 runs are not set beside the tables (their ratios are to the repository's).
  const auto other = run_cli("calib check --data " + std::string(CLUSTERSIM_SOURCE_DIR) + "/calib/data/h200");
  ASSERT_EQ(other.exit_code, 0) << other.output;
  EXPECT_NE(other.output.find("no derived-GPU rows"), std::string::npos) << other.output;
  EXPECT_NE(run_cli("calib check --data /nonexistent").exit_code, 0);
  EXPECT_EQ(run_cli("calib").exit_code, 2);
}
