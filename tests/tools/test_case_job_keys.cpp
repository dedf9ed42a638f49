// config.job of the reference-set reader (any parallelism or training key passed to a case's
// job), the MoE files that use it (tests/validation/megatron_moe_modelzoo.yaml,
// megatron_bridge_moe.yaml), and validate's table layout.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "sim/spec_error.hpp"
#include "tools/validation/case_job.hpp"
#include "tools/validation/reference_set.hpp"
#include "tools/validation/validate_run.hpp"

namespace clustersim::tools::validation {
namespace {

std::string field(const CaseJob& job, const std::string& key) {
  for (const auto& f : job.fields) {
    if (f.key == key) return f.value + (f.cite.empty() ? "" : " [" + f.cite + "]");
  }
  return "<unset>";
}

// config.job: any parallelism or training key reaches the job as written (scalars and lists),
// and the job parser's errors point at its line in the reference file.
TEST(CaseJob, JobKeysReachTheJobAndTheirErrorsTheirLine) {
  const std::string head =
      "models:\n"
      "  moe: {catalog: qwen3_30b_a3b, layers: 2}\n"
      "cases:\n"
      "  - id: moe\n"
      "    source: a MoE run\n"
      "    recipe: none\n"
      "    config:\n"
      "      model: moe\n"
      "      platform: hgx_h100\n"
      "      gpus: 8\n"
      "      tp: 1\n"
      "      pp: 1\n"
      "      mbs: 1\n"
      "      gbs: 8\n"
      "      seq: 4096\n"
      "      precision: bf16\n"
      "      activation_checkpointing: selective\n"
      "      job:\n";
  const auto set = parse_reference_set(
      head +
          "        parallelism: {ep: 8, moe_token_dispatcher: deepep}\n"
          "        training:\n"
          "          recompute_modules: [moe_act, layernorm]\n"
          "          moe_router_dtype: fp32\n"
          "    measured: {step_s: 1.0}\n",
      "ref.yaml");
  const auto& rc = set.cases[0];
  const CaseJob job = build_case_job(set, rc, rc.points[0]);
  EXPECT_EQ(field(job, "moe_token_dispatcher"), "deepep");
  EXPECT_NE(job.yaml.find("  recompute_modules: [moe_act, layernorm]\n"), std::string::npos) << job.yaml;
  const Job parsed = load_case_job(set, rc, job);
  EXPECT_EQ(parsed.workload.parallel.ep, 8);

  const auto bad = parse_reference_set(
      head + "        parallelism: {ep: 8, moe_token_dispatch: deepep}\n    measured: {step_s: 1.0}\n",
      "ref.yaml");
  const CaseJob bad_job = build_case_job(bad, bad.cases[0], bad.cases[0].points[0]);
  try {
    load_case_job(bad, bad.cases[0], bad_job);
    FAIL() << "unknown job key accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.line(), 19) << e.what();
    EXPECT_NE(e.reason().find("moe_token_dispatch"), std::string::npos) << e.what();
  }
  // Only parallelism and training; a key another config key states is refused.
  SpecError e("", 0, "", "");
  try {
    parse_reference_set(head + "        cluster: {gpus: 16}\n    measured: {step_s: 1.0}\n", "ref.yaml");
  } catch (const SpecError& x) {
    e = x;
  }
  EXPECT_EQ(e.line(), 19) << e.what();
  const auto twice = parse_reference_set(
      head + "        parallelism: {tp: 2}\n    measured: {step_s: 1.0}\n", "ref.yaml");
  try {
    build_case_job(twice, twice.cases[0], twice.cases[0].points[0]);
    FAIL() << "tp stated twice accepted";
  } catch (const SpecError& x) {
    EXPECT_EQ(x.line(), 19) << x.what();
    EXPECT_EQ(x.field(), "moe.config.job.parallelism.tp") << x.what();
  }
}

// Values reach the job parser as the file writes them: a quoted string keeps its spaces and
// is not a boolean or a list; plain numbers and booleans stay such.
TEST(CaseJob, JobKeyValuesKeepTheirQuoting) {
  const std::string head =
      "models:\n"
      "  tiny: {catalog: llama3_8b, layers: 2}\n"
      "cases:\n"
      "  - id: q\n"
      "    source: mine\n"
      "    recipe: none\n"
      "    config:\n"
      "      model: tiny\n"
      "      platform: hgx_h100\n"
      "      gpus: 8\n"
      "      job:\n";
  const auto job_of = [&](const std::string& keys) {
    const auto set = parse_reference_set(head + keys + "    measured: {step_s: 1.0}\n", "ref.yaml");
    return build_case_job(set, set.cases[0], set.cases[0].points[0]).yaml;
  };
  EXPECT_NE(job_of("        training: {attention_backend: \"x y\"}\n").find("  attention_backend: \"x y\"\n"),
            std::string::npos);
  EXPECT_NE(job_of("        training: {expandable_segments: \"true\"}\n").find("expandable_segments: \"true\"\n"),
            std::string::npos);
  EXPECT_NE(job_of("        training: {attention_backend: \"[cudnn]\"}\n").find("attention_backend: \"[cudnn]\"\n"),
            std::string::npos);
  EXPECT_NE(job_of("        training: {micro_batch_size: 2, expandable_segments: true}\n")
                .find("  micro_batch_size: 2\n  expandable_segments: true\n"),
            std::string::npos);
  EXPECT_NE(job_of("        training: {recompute_modules: [core_attn, \"a, b\"]}\n")
                .find("  recompute_modules: [core_attn, \"a, b\"]\n"),
            std::string::npos);
}

// The parsed job of every case of a held-out step-time file (one point per case), by case id.
std::vector<std::pair<std::string, Job>> step_time_jobs(const std::string& file) {
  const ReferenceSet set = load_reference_set(file);
  std::vector<std::pair<std::string, Job>> jobs;
  for (const auto& rc : set.cases) {
    EXPECT_EQ(rc.points.size(), 1u) << rc.id;
    EXPECT_EQ(rc.points.at(0).metric, Metric::StepTime) << rc.id;
    jobs.emplace_back(rc.id, load_case_job(set, rc, build_case_job(set, rc, rc.points.at(0))));
  }
  return jobs;
}

// The MoE file beside the reference set (Megatron-MoE-ModelZoo's Qwen3-235B steps on 256 H100):
// every point becomes a job the parser accepts, with the settings its scripts state.
TEST(ReferenceSet, TheMoeModelZooFileBuildsEveryJob) {
  const auto jobs = step_time_jobs(MOE_REFERENCE_FILE);
  ASSERT_EQ(jobs.size(), 4u);
  for (const auto& [id, parsed] : jobs) {
    EXPECT_EQ(parsed.workload.parallel.etp, 1) << id;
    EXPECT_EQ(parsed.cluster.gpus, 256) << id;
  }
}

// The balanced-routing MoE file (Megatron-Bridge's H100 Qwen3-235B rows): both points become jobs
// with the settings its sources state: FP8 current scaling, the combined 1F1B, BF16 gradient
// reduction, TP communication overlap only in the 25.11 row.
TEST(ReferenceSet, TheMoeBridgeFileBuildsEveryJob) {
  const auto jobs = step_time_jobs(MOE_BRIDGE_REFERENCE_FILE);
  ASSERT_EQ(jobs.size(), 2u);
  for (const auto& [id, parsed] : jobs) {
    const auto& par = parsed.workload.parallel;
    EXPECT_EQ(parsed.cluster.gpus, 256) << id;
    EXPECT_EQ(par.tp, 2) << id;
    EXPECT_EQ(par.pp, 8) << id;
    EXPECT_EQ(par.vp, 4) << id;
    EXPECT_EQ(par.ep, 32) << id;
    EXPECT_TRUE(par.overlap_moe_expert_parallel_comm) << id;
    EXPECT_TRUE(par.delay_wgrad_compute) << id;
    EXPECT_EQ(parsed.workload.training.global_batch_size,
              id.rfind("mbr2602", 0) == 0 ? 8192 : 2048) << id;
    EXPECT_FALSE(par.grad_reduce_in_fp32) << id;
    EXPECT_EQ(parsed.workload.training.fp8_recipe, workloads::Fp8Recipe::Tensorwise) << id;
    EXPECT_EQ(par.tp_comm_overlap, id.rfind("mbr2511", 0) == 0) << id;
  }
}

// The dense Megatron-Bridge file (Llama steps on H100, B200, GB200 NVL72 and GB300 NVL72): every
// row becomes a job on its GPU's platform with the tables' GPUs, layout and batch and
// the settings the performance scripts state: FP8 current scaling with FP8 parameter gather, BF16
// gradient reduction, no recompute, TP overlap and sequence parallelism exactly where TP > 1, the
// 405B's embedding and loss counted in the pipeline split.
TEST(ReferenceSet, TheDenseBridgeFileBuildsEveryJob) {
  const auto jobs = step_time_jobs(DENSE_BRIDGE_REFERENCE_FILE);
  ASSERT_EQ(jobs.size(), 10u);
  // The tables' rows: id prefix, platform, GPUs, TP, PP, CP, VP, micro batch, global batch.
  struct Row {
    std::string prefix, platform;
    int gpus, tp, pp, cp, vp, mbs, gbs;
  };
  const std::vector<Row> rows = {
      {"mbr2511_gb200_llama31_405b", "gb200_nvl72", 256, 4, 16, 1, 4, 1, 1536},
      {"mbr2602_gb200_llama31_405b", "gb200_nvl72", 256, 4, 16, 1, 4, 1, 1536},
      {"mbr2602_gb300_llama31_405b", "gb300_nvl72", 256, 4, 8, 1, 4, 1, 1536},
      {"mbr2511_b200_llama31_405b", "hgx_b200", 128, 4, 8, 2, 8, 1, 64},
      {"mbr2511_gb200_llama3_8b", "gb200_nvl72", 8, 1, 1, 1, 1, 2, 128},
      {"mbr2511_b200_llama3_8b", "hgx_b200", 8, 1, 1, 1, 1, 2, 128},
      {"mbr2511_h100_llama3_70b", "hgx_h100", 64, 4, 8, 1, 5, 1, 128},
      {"mbr2602_h100_llama3_70b", "hgx_h100", 64, 4, 8, 1, 5, 1, 256},
      {"mbr2511_h100_llama31_405b", "hgx_h100", 1024, 8, 8, 2, 8, 1, 512},
      {"mbr2602_h100_llama31_405b", "hgx_h100", 1024, 8, 8, 2, 8, 1, 1536}};
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& [id, parsed] = jobs[i];
    const Row& row = rows[i];
    EXPECT_EQ(id.rfind(row.prefix, 0), 0u) << id;
    EXPECT_EQ(parsed.cluster.platform.name, row.platform) << id;
    const auto& par = parsed.workload.parallel;
    const auto& tr = parsed.workload.training;
    EXPECT_EQ(parsed.cluster.gpus, row.gpus) << id;
    EXPECT_EQ(par.tp, row.tp) << id;
    EXPECT_EQ(par.pp, row.pp) << id;
    EXPECT_EQ(par.cp, row.cp) << id;
    EXPECT_EQ(par.vp, row.vp) << id;
    EXPECT_EQ(tr.micro_batch_size, row.mbs) << id;
    EXPECT_EQ(tr.global_batch_size, row.gbs) << id;
    EXPECT_EQ(tr.seq_length, 8192) << id;
    EXPECT_EQ(tr.fp8_recipe, workloads::Fp8Recipe::Tensorwise) << id;
    EXPECT_TRUE(par.fp8_param_gather) << id;
    EXPECT_FALSE(par.grad_reduce_in_fp32) << id;
    EXPECT_EQ(tr.recompute, workloads::Recompute::None) << id;
    EXPECT_EQ(par.tp_comm_overlap, par.tp > 1) << id;
    EXPECT_EQ(par.sequence_parallel, par.tp > 1) << id;
    const bool l405 = id.find("405b") != std::string::npos;
    EXPECT_EQ(par.account_for_embedding, l405) << id;
    EXPECT_EQ(par.account_for_loss, l405) << id;
  }
}

// validate's table: the case column as wide as the longest id (rows stay aligned); the sources
// list only the citations the applied defaults carry, and is left out when none was applied.
TEST(ValidationText, CaseColumnFitsTheLongestIdAndOnlyUsedSourcesAreListed) {
  ValidationSummary s;
  s.reference = "ref.yaml";
  const std::string long_id(45, 'x');
  for (const std::string& id : {std::string("short"), long_id}) {
    PointOutcome o;
    o.id = id;
    o.gpus = 256;
    o.metric = Metric::StepTime;
    o.measured = 2.0;
    o.simulated = true;
    o.simulated_value = 1.0;
    o.rel_error = -0.5;
    s.points.push_back(o);
  }
  s.simulated = 2;
  std::string text = validation_text(s);
  const auto row = [&](const std::string& id) {
    const auto at = text.find("\n" + id + " ");
    return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  };
  EXPECT_EQ(row("short").size(), row(long_id).size()) << text;
  EXPECT_EQ(row("short").find("256"), row(long_id).find("256")) << text;
  EXPECT_EQ(text.find("Sources of the defaults"), std::string::npos) << text;
  s.defaults.push_back({"short", {"platform=hgx_h100 [GPU-CATALOG]"}});
  text = validation_text(s);
  EXPECT_NE(text.find("[GPU-CATALOG]"), std::string::npos);
  EXPECT_EQ(text.find("[DGXC-70B]"), std::string::npos) << "an unused citation listed";
}

}  // namespace
}  // namespace clustersim::tools::validation
