// The reference set reader (strict, errors at file:line), the case-to-job mapping (recipe
// defaults, stated fields win, errors re-located in the reference file) and batch expressions.
#include <gtest/gtest.h>

#include <algorithm>

#include "calib/measured_cost_model.hpp"
#include "platforms/platform_spec.hpp"
#include "sim/spec_error.hpp"
#include "tools/simulate.hpp"
#include "tools/validation/case_job.hpp"
#include "tools/validation/recipe_families.hpp"
#include "tools/validation/reference_set.hpp"

namespace clustersim::tools::validation {
namespace {

const std::string kModels =
    "models:\n"
    "  llama3_70b: {layers: 80, hidden: 8192, ffn: 28672, heads: 64, kv_heads: 8, "
    "vocab: 128256, activation: swiglu}\n"
    "  tiny: {catalog: llama3_8b, layers: 4}\n";

ReferenceSet parse(const std::string& cases) {
  return parse_reference_set(kModels + "cases:\n" + cases, "ref.yaml");
}

SpecError parse_error(const std::string& cases) {
  try {
    parse(cases);
  } catch (const SpecError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << cases;
  return SpecError("", 0, "", "");
}

TEST(ReferenceSet, ReadsTheRepositoryCopyOfTheSharedReference) {
  const ReferenceSet set = load_reference_set(REFERENCE_FILE);
  EXPECT_EQ(set.models.size(), 4u);
  EXPECT_EQ(set.cases.size(), 21u);
  std::size_t points = 0;
  for (const auto& c : set.cases) points += c.points.size();
  EXPECT_EQ(points, 51u);
  const auto dgxc = std::find_if(set.cases.begin(), set.cases.end(),
                                 [](const auto& c) { return c.id == "dgxc_llama3_70b_bf16"; });
  ASSERT_NE(dgxc, set.cases.end());
  ASSERT_EQ(dgxc->points.size(), 3u);
  EXPECT_EQ(dgxc->points[0].metric, Metric::StepTime);  // step time preferred over MFU
  EXPECT_EQ(dgxc->points[0].gpus, 64);
  EXPECT_DOUBLE_EQ(dgxc->points[0].value, 14.66);
  EXPECT_DOUBLE_EQ(*dgxc->points[0].stated_mfu, 0.5432);
  const auto s3 = std::find_if(set.cases.begin(), set.cases.end(),
                               [](const auto& c) { return c.id == "s3_llama31_8b_seq_sweep"; });
  ASSERT_EQ(s3->points.size(), 12u);  // 6 sequence lengths x (H200, B200)
  EXPECT_EQ(s3->points[1].gpu_tag, "b200");
  EXPECT_EQ(s3->points[1].seq, 8192);
  EXPECT_DOUBLE_EQ(s3->points[1].value, 167.0);
  EXPECT_DOUBLE_EQ(*s3->points[1].peak_memory_gib, 16.3);
}

TEST(ReferenceSet, ExpandsGpuListsAndByGpus) {
  const auto set = parse(
      "  - id: a\n"
      "    source: S0\n"
      "    config: {model: llama3_70b, gpu: H100-SXM, gpus: [64, 128], precision: bf16}\n"
      "    measured: {mfu: 0.5}\n"
      "  - id: b\n"
      "    source: DGXC\n"
      "    config: {model: tiny, gpu: H100-SXM, precision: bf16}\n"
      "    measured: {by_gpus: {16: {mfu: 0.4}, 32: {step_s: 1.5, mfu: 0.39}}}\n");
  ASSERT_EQ(set.cases[0].points.size(), 2u);
  EXPECT_EQ(set.cases[0].points[1].gpus, 128);
  ASSERT_EQ(set.cases[1].points.size(), 2u);
  EXPECT_EQ(set.cases[1].points[0].metric, Metric::Mfu);
  EXPECT_EQ(set.cases[1].points[1].metric, Metric::StepTime);
  EXPECT_EQ(set.cases[1].points[1].line, 12);
}

TEST(ReferenceSet, ErrorsNameFileLineAndField) {
  SpecError e = parse_error(
      "  - id: a\n"
      "    source: S0\n"
      "    config: {model: llama3_70b, gpus: 64, tpp: 4}\n"
      "    measured: {mfu: 0.5}\n");
  EXPECT_EQ(e.file(), "ref.yaml");
  EXPECT_EQ(e.line(), 7);
  EXPECT_NE(e.reason().find("unknown key 'tpp'"), std::string::npos) << e.what();

  e = parse_error(
      "  - id: a\n"
      "    source: S0\n"
      "    config: {model: llama4, gpus: 64}\n"
      "    measured: {mfu: 0.5}\n");
  EXPECT_EQ(e.line(), 7);
  EXPECT_NE(e.reason().find("not in this file's models"), std::string::npos) << e.what();

  e = parse_error(
      "  - id: a\n"
      "    source: S0\n"
      "    config: {model: tiny, gpus: 64}\n"
      "    measured: {mfu: 1.5}\n");
  EXPECT_EQ(e.line(), 8);
  EXPECT_NE(e.field().find("mfu"), std::string::npos);

  e = parse_error(
      "  - id: a\n"
      "    source: S3\n"
      "    config: {model: tiny, gpus: 8}\n"
      "    measured:\n"
      "      by_seq:\n"
      "        8192: [0.1, 141, 167]\n");
  EXPECT_EQ(e.line(), 10);
  EXPECT_NE(e.reason().find("list of 5 numbers"), std::string::npos) << e.what();

  e = parse_error(
      "  - id: a\n"
      "    source: S0\n"
      "    config: {model: tiny, gpus: 8}\n"
      "    measured: {mfu: 0.5}\n"
      "  - id: a\n"
      "    source: S0\n"
      "    config: {model: tiny, gpus: 8}\n"
      "    measured: {mfu: 0.5}\n");
  EXPECT_EQ(e.line(), 9);
  EXPECT_NE(e.reason().find("duplicate"), std::string::npos);

  e = parse_error(
      "  - id: a\n"
      "    source: S0\n"
      "    config: {model: tiny, gpus: 8}\n"
      "    measured: {energy_j: 3}\n");
  EXPECT_NE(e.reason().find("unknown key 'energy_j'"), std::string::npos) << e.what();

  // The energy and cost figures validate does not compare are still checked.
  e = parse_error(
      "  - id: a\n"
      "    source: S0\n"
      "    config: {model: tiny, gpus: 8}\n"
      "    measured: {mfu: 0.5}\n"
      "    energy: {joules_per_token: abc}\n");
  EXPECT_EQ(e.line(), 9);
  EXPECT_NE(e.field().find("joules_per_token"), std::string::npos) << e.what();
  e = parse_error(
      "  - id: a\n"
      "    source: S0\n"
      "    config: {model: tiny, gpus: 8}\n"
      "    measured: {mfu: 0.5}\n"
      "    cost: {usd_per_gpu_hour: 1.42, bogus_key: 1}\n");
  EXPECT_NE(e.reason().find("unknown key 'bogus_key'"), std::string::npos) << e.what();

  // A by_gpus count that config.gpus does not list: the two contradict each other.
  e = parse_error(
      "  - id: a\n"
      "    source: S0\n"
      "    config: {model: tiny, gpus: 8}\n"
      "    measured: {by_gpus: {16: {step_s: 0.05}}}\n");
  EXPECT_EQ(e.line(), 8);
  EXPECT_NE(e.reason().find("config.gpus does not list 16"), std::string::npos) << e.what();

  // Figures with no GPU count anywhere: an error at `measured:` (they were a point at 0 GPUs
  // that failed when simulated, exit 0); figures under by_gpus alone need none.
  e = parse_error(
      "  - id: a\n"
      "    source: S0\n"
      "    config: {model: tiny}\n"
      "    measured: {step_s: 0.5, by_gpus: {16: {step_s: 0.05}}}\n");
  EXPECT_EQ(e.line(), 8);
  EXPECT_NE(e.reason().find("figures outside by_gpus need the one GPU count"), std::string::npos) << e.what();
  // by_seq figures take config.gpus' count: with two listed they have none of their own.
  e = parse_error(
      "  - id: a\n"
      "    source: S3\n"
      "    config: {model: tiny, gpus: [8, 16]}\n"
      "    measured:\n"
      "      by_seq:\n"
      "        8192: [0.1, 141, 167, 16.3, 16.3]\n");
  EXPECT_EQ(e.line(), 9);  // the measured mapping's first line
  EXPECT_NE(e.reason().find("give config.gpus a single count"), std::string::npos) << e.what();

  // validate --plot DIR writes DIR/<id>.svg: an id with a path in it would write elsewhere.
  e = parse_error(
      "  - id: ../escaped\n"
      "    source: S0\n"
      "    config: {model: tiny, gpus: 8}\n"
      "    measured: {mfu: 0.5}\n");
  EXPECT_EQ(e.line(), 5);
  EXPECT_EQ(e.field(), "cases[0].id");
  EXPECT_NE(e.reason().find("letters, digits"), std::string::npos) << e.what();
}

TEST(ReferenceSet, BadStepDecompositionBucketsAreErrorsAtTheirLine) {
  auto with = [](const std::string& measured) {
    return parse_error("  - id: a\n    source: S3\n    config: {model: tiny, gpus: 8, seq: 8192}\n" +
                       measured);
  };
  SpecError e = with(
      "    measured: {h200_tflops: 461, attention_bucket: {h300: 447}, rest_bucket: {h200: 463}}\n");
  EXPECT_EQ(e.line(), 8);  // the measured: line
  EXPECT_NE(e.reason().find("unknown GPU 'h300'"), std::string::npos) << e.what();
  e = with("    measured: {h200_tflops: 461, attention_bucket: {h200: 447}}\n");
  EXPECT_NE(e.reason().find("needs rest_bucket.h200 too"), std::string::npos) << e.what();
  e = with("    measured: {h200_tflops: 461, rest_bucket: {h200: 463}}\n");
  EXPECT_NE(e.reason().find("needs attention_bucket.h200 too"), std::string::npos) << e.what();
  e = with("    measured: {h200_tflops: 461, attention_bucket: {b200: 834}, rest_bucket: {b200: 771}}\n");
  EXPECT_NE(e.reason().find("found 0"), std::string::npos) << e.what();
  e = with("    measured: {h200_tflops: 461, attention_bucket: {h200: -1}, rest_bucket: {h200: 463}}\n");
  EXPECT_NE(e.field().find("attention_bucket.h200"), std::string::npos) << e.what();
}

TEST(ReferenceSet, UnreadableFileAndBadYamlAreSpecErrors) {
  EXPECT_THROW(load_reference_set("/nonexistent/ref.yaml"), SpecError);
  try {
    parse_reference_set("models: {a: {layers: 1}\ncases: [\n", "bad.yaml");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), "bad.yaml");
    EXPECT_GT(e.line(), 0);
  }
}

TEST(BatchExpression, EvaluatesExactlyOrSaysWhy) {
  std::string why;
  EXPECT_EQ(eval_batch_expression("256", 64, &why), 256);
  EXPECT_EQ(eval_batch_expression("16*gpus", 8, &why), 128);
  EXPECT_EQ(eval_batch_expression("gpus/2", 512, &why), 256);
  EXPECT_EQ(eval_batch_expression("gpus * 252 / 576", 2304, &why), 1008);
  EXPECT_FALSE(eval_batch_expression("gpus/3", 64, &why));
  EXPECT_NE(why.find("not an integer"), std::string::npos) << why;
  EXPECT_FALSE(eval_batch_expression("gpus+2", 64, &why));
  EXPECT_FALSE(eval_batch_expression("2*", 64, &why));
  EXPECT_FALSE(eval_batch_expression("", 64, &why));
  EXPECT_FALSE(eval_batch_expression("gpus*gpus*gpus*gpus*gpus*gpus", 1 << 20, &why));
  EXPECT_NE(why.find("too large"), std::string::npos) << why;
}

std::string field(const CaseJob& job, const std::string& key) {
  for (const auto& f : job.fields) {
    if (f.key == key) return f.value + (f.cite.empty() ? "" : " [" + f.cite + "]");
  }
  return "<unset>";
}

TEST(CaseJob, FillsUnstatedFieldsFromTheRecipeFamilyWithCitations) {
  const auto set = parse(
      "  - id: s0_70b\n"
      "    source: S0\n"
      "    config: {model: llama3_70b, gpu: H100-SXM, gpus: 64, tp: 4, pp: 2, cp: 2, seq: 8192, "
      "precision: bf16}\n"
      "    measured: {mfu: 0.545}\n");
  const auto& rc = set.cases[0];
  EXPECT_EQ(family_of(set, rc).name, "nemo_dgxc");
  const CaseJob job = build_case_job(set, rc, rc.points[0]);
  EXPECT_EQ(field(job, "pp"), "2");                      // stated: wins over the recipe's 4
  EXPECT_EQ(field(job, "vp"), "5 [DGXC-70B]");
  EXPECT_EQ(field(job, "global_batch_size"), "128 [DGXC-70B]");  // 2 x 64 GPUs
  EXPECT_EQ(field(job, "micro_batch_size"), "1 [DGXC-RECIPES]");
  EXPECT_EQ(field(job, "sequence_parallel"), "true [NEMO-PERF]");
  EXPECT_EQ(field(job, "tp_comm_overlap"), "true [NEMO-PERF]");
  EXPECT_EQ(field(job, "expandable_segments"), "true [NEMO-PERF-ENV]");
  EXPECT_EQ(field(job, "cross_entropy"), "fused [NEMO-PERF-CE]");
  EXPECT_EQ(field(job, "precision_aware_optimizer"), "true [NEMO-PERF-BF16]");  // BF16 only
  EXPECT_EQ(field(job, "grad_reduce_in_fp32"), "<unset>");
  EXPECT_EQ(field(job, "platform"), "hgx_h100 [GPU-CATALOG]");
  EXPECT_EQ(field(job, "catalog"), "llama3_70b [MODEL-CATALOG]");
  EXPECT_NE(job.yaml.find("  vp: 5\n"), std::string::npos) << job.yaml;
  const auto defaults = job.defaults();
  EXPECT_NE(std::find(defaults.begin(), defaults.end(), "vp=5 [DGXC-70B]"), defaults.end());
  for (const auto& d : defaults) EXPECT_EQ(d.find("pp="), std::string::npos) << d;
  // Every tag the defaults carry is in the citation list.
  for (const auto& f : job.fields) {
    if (f.cite.empty()) continue;
    const auto& c = citations();
    EXPECT_TRUE(std::any_of(c.begin(), c.end(), [&](const Citation& x) { return x.tag == f.cite; }))
        << f.cite;
  }
}

// Settings a source's scripts state (S3: Liger-Kernel, no zero.Init, max_memory_reserved) are
// config keys that reach the job; unstated, the DeepSpeed family fills transformers' defaults.
TEST(CaseJob, StatedFrameworkSettingsReachTheJobAndMemoryMetricIsRead) {
  const auto set = parse(
      "  - id: liger\n"
      "    source: S3\n"
      "    config: {model: tiny, gpu: H200-SXM, gpus: 8, zero: 3, seq: 8192, mbs: 1, "
      "elementwise: fused, cross_entropy: chunked, zero_init: false}\n"
      "    measured: {peak_memory_metric: max_memory_reserved, h200_tflops: 141}\n"
      "  - id: plain\n"
      "    source: S3\n"
      "    config: {model: tiny, gpu: H200-SXM, gpus: 8, zero: 2, seq: 8192, mbs: 1}\n"
      "    measured: {h200_tflops: 461}\n");
  const CaseJob liger = build_case_job(set, set.cases[0], set.cases[0].points[0]);
  EXPECT_EQ(field(liger, "elementwise"), "fused");
  EXPECT_EQ(field(liger, "cross_entropy"), "chunked");
  EXPECT_EQ(field(liger, "zero_init"), "false");
  EXPECT_EQ(set.cases[0].points[0].peak_memory_metric, "max_memory_reserved");
  const CaseJob plain = build_case_job(set, set.cases[1], set.cases[1].points[0]);
  EXPECT_EQ(field(plain, "elementwise"), "eager [DS-HF]");
  EXPECT_EQ(field(plain, "cross_entropy"), "eager [DS-HF]");
  EXPECT_EQ(field(plain, "zero_init"), "<unset>");
  EXPECT_EQ(set.cases[1].points[0].peak_memory_metric, "device");
  SpecError e = parse_error(
      "  - id: a\n"
      "    source: S3\n"
      "    config: {model: tiny, gpus: 8}\n"
      "    measured: {peak_memory_metric: nvidia_smi, h200_tflops: 1}\n");
  EXPECT_EQ(e.line(), 8);
  EXPECT_NE(e.reason().find("max_memory_reserved"), std::string::npos) << e.what();
  e = parse_error(
      "  - id: a\n"
      "    source: S3\n"
      "    config: {model: tiny, gpus: 8, elementwise: liger}\n"
      "    measured: {h200_tflops: 1}\n");
  EXPECT_NE(e.field().find("elementwise"), std::string::npos) << e.what();
}

TEST(CaseJob, Fp8NemoCasesReduceInBf16AndKeepTheStandardOptimizer) {
  const auto set = parse(
      "  - id: s0_70b_fp8\n"
      "    source: S0\n"
      "    config: {model: llama3_70b, gpu: H100-SXM, gpus: 64, tp: 4, pp: 8, seq: 8192, "
      "precision: fp8}\n"
      "    measured: {mfu: 0.381}\n");
  const CaseJob job = build_case_job(set, set.cases[0], set.cases[0].points[0]);
  EXPECT_EQ(field(job, "grad_reduce_in_fp32"), "false [NEMO-PERF-FP8]");
  EXPECT_EQ(field(job, "precision_aware_optimizer"), "<unset>");
  EXPECT_EQ(field(job, "expandable_segments"), "true [NEMO-PERF-ENV]");
}

TEST(CaseJob, Llama405bAtPp8Vp8CountsEmbeddingAndLossInTheSplit) {
  const auto set = parse_reference_set(
      "models:\n  llama3_405b: {layers: 126, hidden: 16384, ffn: 53248, heads: 128, kv_heads: 8, "
      "vocab: 128256, activation: swiglu}\ncases:\n"
      "  - id: d\n    source: DGXC\n"
      "    config: {model: llama3_405b, gpu: H100-SXM, tp: 8, pp: 8, cp: 2, vp: 8, gbs: \"gpus/2\", "
      "precision: bf16}\n    measured: {by_gpus: {512: {step_s: 19.78}}}\n",
      "ref.yaml");
  const CaseJob job = build_case_job(set, set.cases[0], set.cases[0].points[0]);
  EXPECT_EQ(field(job, "account_for_embedding_in_pipeline_split"), "true [NEMO-405B-SPLIT]");
  EXPECT_EQ(field(job, "global_batch_size"), "256");
}

TEST(CaseJob, GradAccumMustAgreeWithTheGlobalBatch) {
  const auto set = parse(
      "  - id: g\n"
      "    source: DGXC\n"
      "    config: {model: tiny, gpu: H100-SXM, tp: 1, pp: 1, cp: 2, mbs: 1, grad_accum: 8, "
      "gbs: \"16*gpus\", precision: bf16}\n"
      "    measured: {by_gpus: {8: {step_s: 1.0}}}\n");
  try {
    build_case_job(set, set.cases[0], set.cases[0].points[0]);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.line(), 7);
    EXPECT_NE(e.reason().find("mbs*dp*grad_accum = 1*4*8"), std::string::npos) << e.what();
  }
}

TEST(CaseJob, JobErrorsAreRelocatedToTheReferenceLine) {
  const auto set = parse(
      "  - id: bad_tp\n"
      "    source: S0\n"
      "    config: {model: llama3_70b, gpu: H100-SXM, gpus: 48, tp: 3, pp: 1, seq: 8192, "
      "precision: bf16}\n"
      "    measured: {mfu: 0.5}\n");
  const auto& rc = set.cases[0];
  const CaseJob job = build_case_job(set, rc, rc.points[0]);
  try {
    load_case_job(set, rc, job);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), "ref.yaml");
    EXPECT_EQ(e.line(), 7);
    EXPECT_EQ(e.field(), "parallelism.tp");
    EXPECT_NE(e.reason().find("case bad_tp"), std::string::npos) << e.what();
  }
}

TEST(CaseJob, UnknownSourceNeedsARecipe) {
  const auto set = parse(
      "  - id: mine\n"
      "    source: my cluster, 2025\n"
      "    config: {model: tiny, platform: hgx_h100, gpus: 8, tp: 1, pp: 1, mbs: 1, gbs: 8, "
      "seq: 2048, precision: bf16}\n"
      "    measured: {step_s: 1.0}\n");
  EXPECT_THROW(family_of(set, set.cases[0]), SpecError);
  const auto with_recipe = parse(
      "  - id: mine\n"
      "    source: my cluster, 2025\n"
      "    recipe: none\n"
      "    config: {model: tiny, platform: hgx_h100, gpus: 8, tp: 1, pp: 1, mbs: 1, gbs: 8, "
      "seq: 2048, precision: bf16}\n"
      "    measured: {step_s: 1.0}\n");
  // An unknown family is the file's error when it is read, before any point is simulated.
  const SpecError bad = parse_error(
      "  - id: mine\n"
      "    source: my cluster, 2025\n"
      "    recipe: bogus_family\n"
      "    config: {model: tiny, platform: hgx_h100, gpus: 8, tp: 1, pp: 1, mbs: 1, gbs: 8, "
      "seq: 2048, precision: bf16}\n"
      "    measured: {step_s: 1.0}\n");
  EXPECT_EQ(bad.line(), 7);
  EXPECT_NE(bad.reason().find("unknown recipe family 'bogus_family'"), std::string::npos) << bad.what();
  const auto& rc = with_recipe.cases[0];
  const CaseJob job = build_case_job(with_recipe, rc, rc.points[0]);
  EXPECT_TRUE(job.defaults().empty()) << "recipe none applies nothing";
  const Job parsed = load_case_job(with_recipe, rc, job);
  EXPECT_EQ(parsed.workload.model.layers, 4);
  EXPECT_EQ(parsed.workload.parallel.dp, 8);
}

TEST(Platforms, GpuNamesMapToCatalogPlatforms) {
  EXPECT_EQ(platform_for_gpu("H100-SXM"), "hgx_h100");
  EXPECT_EQ(platform_for_gpu("h200"), "hgx_h200");
  EXPECT_EQ(platform_for_gpu("B200"), "hgx_b200");
  EXPECT_EQ(platform_for_gpu("GB200"), "gb200_nvl72");
  EXPECT_EQ(platform_for_gpu("b300"), "hgx_b300");
  EXPECT_EQ(platform_for_gpu("GB300"), "gb300_nvl72");
  EXPECT_EQ(platform_for_gpu("MI300X"), "");
}

// Every catalog platform's GPU is costed by both models, and by the measured model at exactly
// the datasheet figures its derivation rule holds for: a catalog file whose peaks, HBM
// bandwidth or power limit drifted from its rule would be scaled (and say so) instead.
TEST(Platforms, EveryCatalogGpuHasARuleAtItsOwnDatasheetFigures) {
  for (const auto& name : platforms::catalog_platforms()) {
    const platforms::PlatformSpec p = platforms::find_platform(name);
    const auto measured = make_cost_model("measured", p);
    const auto* m = dynamic_cast<const calib::MeasuredCostModel*>(measured.get());
    ASSERT_NE(m, nullptr) << name;
    EXPECT_TRUE(m->scale().note.empty()) << name << ": " << m->scale().note;
    const calib::DerivationRule& rule = calib::derivation_rule(p.gpu.name);
    EXPECT_DOUBLE_EQ(p.gpu.tdp.value, rule.tdp_w) << name;
    EXPECT_NO_THROW(make_cost_model("roofline", p)) << name;
    EXPECT_EQ(platform_for_gpu(p.gpu.name).empty(), false) << name;
  }
}

// Blackwell Ultra states B200's / GB200's dense peaks, so its GEMMs cost the same; its HBM and
// power limit are its own (platforms/catalog/hgx_b300.yaml, gb300_nvl72.yaml).
TEST(Platforms, BlackwellUltraGemmsAsBlackwellAtItsOwnHbm) {
  const auto& b200 = calib::derivation_rule("B200");
  const auto& b300 = calib::derivation_rule("B300");
  const auto& gb200 = calib::derivation_rule("GB200");
  const auto& gb300 = calib::derivation_rule("GB300");
  EXPECT_DOUBLE_EQ(b300.gemm_bf16, b200.gemm_bf16);
  EXPECT_DOUBLE_EQ(b300.gemm_fp8, b200.gemm_fp8);
  EXPECT_DOUBLE_EQ(gb300.gemm_fp8, gb200.gemm_fp8);
  EXPECT_DOUBLE_EQ(gb300.attention, gb200.attention);
  EXPECT_DOUBLE_EQ(b300.tdp_w, 1100.0);
  EXPECT_DOUBLE_EQ(gb300.tdp_w, 1400.0);
  EXPECT_NE(b300.uncertainty.basis.find("SFU"), std::string::npos);
  EXPECT_FALSE(b300.flash2 || b300.power_boost || b300.host_copy_delay);
  const platforms::PlatformSpec hgx = platforms::find_platform("hgx_b300");
  const platforms::PlatformSpec nvl = platforms::find_platform("gb300_nvl72");
  EXPECT_DOUBLE_EQ(hgx.node.nic_bandwidth.value, 100e9);  // 800 Gb/s
  EXPECT_EQ(hgx.fabric.switch_radix, 144);
  EXPECT_EQ(nvl.node.nvlink_domain_size, 72);
  EXPECT_GT(nvl.gpu.hbm_capacity.value, 1.4 * platforms::find_platform("gb200_nvl72").gpu.hbm_capacity.value);
}

}  // namespace
}  // namespace clustersim::tools::validation
