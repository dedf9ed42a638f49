// config.job of the reference-set reader (any parallelism or training key passed to a case's
// job) and the MoE file that uses it (tests/validation/megatron_moe_modelzoo.yaml).
#include <gtest/gtest.h>

#include <string>

#include "sim/spec_error.hpp"
#include "tools/validation/case_job.hpp"
#include "tools/validation/reference_set.hpp"

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
  EXPECT_THROW(build_case_job(twice, twice.cases[0], twice.cases[0].points[0]), SpecError);
}

// The MoE file beside the reference set (Megatron-MoE-ModelZoo's Qwen3-235B steps on 256 H100):
// every point becomes a job the parser accepts, with the settings its scripts state.
TEST(ReferenceSet, TheMoeModelZooFileBuildsEveryJob) {
  const ReferenceSet set = load_reference_set(MOE_REFERENCE_FILE);
  ASSERT_EQ(set.cases.size(), 4u);
  for (const auto& rc : set.cases) {
    ASSERT_EQ(rc.points.size(), 1u) << rc.id;
    EXPECT_EQ(rc.points[0].metric, Metric::StepTime) << rc.id;
    const CaseJob job = build_case_job(set, rc, rc.points[0]);
    const Job parsed = load_case_job(set, rc, job);
    EXPECT_EQ(parsed.workload.parallel.etp, 1) << rc.id;
    EXPECT_EQ(parsed.cluster.gpus, 256) << rc.id;
  }
}

}  // namespace
}  // namespace clustersim::tools::validation
