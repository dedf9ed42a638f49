// Job spec parsing: every error class names file:line, the field and the reason; valid specs
// get exactly the documented values and defaults.
#include <gtest/gtest.h>

#include <string>

#include "sim/spec_error.hpp"
#include "workloads/model_catalog.hpp"
#include "workload_test_util.hpp"

namespace clustersim::workloads {
namespace {

using testing::default_job_yaml;
using testing::parse_job;

// Expects a SpecError located at job.yaml:`line`, `field`, with `reason_part` in its reason.
void expect_error(const std::string& yaml, int gpus, int line, const std::string& field,
                  const std::string& reason_part) {
  try {
    parse_job(yaml, gpus);
    ADD_FAILURE() << "no error; expected one at " << field;
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), "job.yaml") << e.what();
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(e.reason().find(reason_part), std::string::npos) << e.what();
    const std::string prefix = "job.yaml:" + std::to_string(line) + ": " + field + ": ";
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

// The default job with one line replaced (1-based line numbers of default_job_yaml():
// 1 model, 2 parallelism, 3 tp, 4 pp, 5 dp, 6 sequence_parallel, 7 training, 8 seq_length,
// 9 micro_batch_size, 10 global_batch_size, 11 precision).
std::string with_line(int line, const std::string& text) {
  std::string yaml = default_job_yaml();
  std::size_t begin = 0;
  for (int i = 1; i < line; ++i) begin = yaml.find('\n', begin) + 1;
  const std::size_t end = yaml.find('\n', begin);
  return yaml.replace(begin, end - begin, text);
}

TEST(JobSpec, DefaultJobParsesToTheDocumentedValues) {
  const WorkloadSpec s = parse_job(default_job_yaml(), 128);
  EXPECT_EQ(s.model.name, "gpt3_175b");
  EXPECT_EQ(s.model.layers, 96);
  EXPECT_EQ(s.model.hidden, 12288);
  EXPECT_EQ(s.model.head_dim, 128);
  EXPECT_EQ(s.model.position, PositionKind::Learned);
  EXPECT_EQ(s.model.max_position_embeddings, 2048);
  EXPECT_TRUE(s.model.tied_embeddings);
  EXPECT_EQ(s.parallel.tp, 4);
  EXPECT_EQ(s.parallel.pp, 8);
  EXPECT_EQ(s.parallel.dp, 4);
  EXPECT_TRUE(s.parallel.sequence_parallel);
  EXPECT_EQ(s.parallel.schedule, "1f1b");
  // NeMo recipe defaults for the data-parallel optimizer.
  EXPECT_TRUE(s.parallel.distributed_optimizer);
  EXPECT_TRUE(s.parallel.overlap_grad_reduce);
  EXPECT_TRUE(s.parallel.overlap_param_gather);
  EXPECT_TRUE(s.parallel.grad_reduce_in_fp32);
  EXPECT_EQ(s.training.seq_length, 2048);
  EXPECT_EQ(s.training.global_batch_size, 256);
  EXPECT_EQ(s.num_microbatches(), 64);
  EXPECT_EQ(s.gpus(), 128);
  EXPECT_EQ(compute_dtype(s), sim::DType::BF16);
}

TEST(JobSpec, DpIsDerivedAndGlobalBatchDefaultsToMbsTimesDp) {
  std::string yaml = with_line(5, "");
  const std::size_t gbs = yaml.find("  global_batch_size: 256\n");
  yaml.erase(gbs, std::string("  global_batch_size: 256\n").size());
  const WorkloadSpec s = parse_job(yaml, 256);
  EXPECT_EQ(s.parallel.dp, 8);
  EXPECT_EQ(s.training.global_batch_size, 8);
  EXPECT_EQ(s.num_microbatches(), 1);
}

TEST(JobSpec, Fp8SelectsFp8ComputeDtype) {
  EXPECT_EQ(compute_dtype(parse_job(with_line(11, "  precision: fp8"), 128)), sim::DType::FP8);
}

TEST(JobSpec, UnknownKeyIsRejectedWithItsLine) {
  expect_error(with_line(6, "  sequence_paralel: true"), 128, 6, "parallelism.sequence_paralel",
               "unknown key");
  expect_error(with_line(8, "  seq_lenght: 2048"), 128, 8, "training.seq_lenght", "unknown key");
}

TEST(JobSpec, RepeatedKeyIsRejectedWithBothLines) {
  // yaml-cpp keeps both entries and returns the first: without the check the later value would
  // be dropped silently.
  expect_error(with_line(6, "  tp: 8"), 128, 6, "parallelism.tp",
               "duplicate key 'tp' (first given at line 3)");
}

TEST(JobSpec, WrongTypeIsRejected) {
  expect_error(with_line(3, "  tp: four"), 128, 3, "parallelism.tp", "expected a decimal integer");
  // YAML 1.1 would read 010 as octal 8 and yaml-cpp 0x8 as hex: refused, not reinterpreted.
  expect_error(with_line(3, "  tp: 010"), 128, 3, "parallelism.tp", "got '010'");
  expect_error(with_line(3, "  tp: 0x4"), 128, 3, "parallelism.tp", "no leading zeros, no 0x");
  expect_error(with_line(6, "  sequence_parallel: maybe"), 128, 6,
               "parallelism.sequence_parallel", "expected true or false");
  // Quoted scalars are strings in YAML, and YAML 1.1's yes/no are strings in YAML 1.2: yaml-cpp
  // would convert both; refused.
  expect_error(with_line(3, "  tp: \"4\""), 128, 3, "parallelism.tp", "got '4'");
  expect_error(with_line(6, "  sequence_parallel: yes"), 128, 6, "parallelism.sequence_parallel",
               "expected true or false (unquoted), got 'yes'");
  expect_error(with_line(6, "  sequence_parallel: 'true'"), 128, 6, "parallelism.sequence_parallel",
               "expected true or false");
  EXPECT_NO_THROW(parse_job(with_line(6, "  sequence_parallel: True"), 128));
  expect_error("model: gpt3_175b\nparallelism: 4\ntraining:\n  seq_length: 2048\n", 128, 2,
               "parallelism", "expected a mapping");
  // model takes a catalog name or a mapping: a list is neither, and the message names both.
  expect_error("model: [gpt3_175b]\nparallelism: {tp: 4}\ntraining:\n  seq_length: 2048\n", 128, 1,
               "model", "expected a catalog model's name (model: llama3_70b) or a mapping");
}

TEST(JobSpec, OutOfRangeIsRejected) {
  expect_error(with_line(3, "  tp: 0"), 128, 3, "parallelism.tp", "out of range");
  expect_error(with_line(9, "  micro_batch_size: -1"), 128, 9, "training.micro_batch_size",
               "out of range");
}

TEST(JobSpec, ParallelSizesMustMultiplyToTheGpuCount) {
  expect_error(with_line(5, "  dp: 5"), 128, 5, "parallelism.dp",
               "tp*cp*dp*pp = 4*1*5*8 = 160 does not equal the cluster's 128 GPUs");
  // With dp omitted, the GPU count must be a multiple of tp*cp*pp.
  // (Errors about a whole mapping point at its first key.)
  expect_error(with_line(5, ""), 100, 3, "parallelism.dp", "not divisible by tp*cp*pp = 4*1*8 = 32");
}

TEST(JobSpec, GlobalBatchMustBeDivisibleByDpTimesMbs) {
  expect_error(with_line(10, "  global_batch_size: 250"), 128, 10, "training.global_batch_size",
               "not divisible by dp*micro_batch_size = 4*1 = 4");
}

TEST(JobSpec, HeadsAndWidthsMustBeDivisibleByTp) {
  // GPT-3: 96 heads; tp 5 (with pp 8, dp 4: 160 GPUs).
  expect_error(with_line(3, "  tp: 5"), 160, 3, "parallelism.tp", "model.heads (96)");
  // Llama3 8B: 32 heads but 8 kv heads; tp 16.
  std::string y = with_line(3, "  tp: 16");
  y.replace(0, std::string("model: gpt3_175b").size(), "model: llama3_8b");
  y.replace(y.find("  pp: 8"), 7, "  pp: 1");
  expect_error(y, 64, 3, "parallelism.tp", "model.kv_heads (8) is not divisible by tp (16)");
}

TEST(JobSpec, LayersMustBeDivisibleByPp) {
  // GPT-3 has 96 layers; pp 7 (with tp 4, dp 4: 112 GPUs).
  expect_error(with_line(4, "  pp: 7"), 112, 4, "parallelism.pp", "model.layers (96)");
}

TEST(JobSpec, UnknownModelListsTheCatalog) {
  expect_error(with_line(1, "model: gpt5"), 128, 1, "model", "unknown model 'gpt5'");
  expect_error(with_line(1, "model: gpt5"), 128, 1, "model", "llama3_70b");
  expect_error(with_line(1, "model: ../etc/passwd"), 128, 1, "model", "unknown model");
}

TEST(JobSpec, BadPrecisionListsTheChoices) {
  expect_error(with_line(11, "  precision: fp16"), 128, 11, "training.precision",
               "'fp16' is not one of: bf16, fp8");
}

TEST(JobSpec, MissingRequiredFieldsAreNamed) {
  expect_error(with_line(8, ""), 128, 9, "training", "missing required field 'seq_length'");
  expect_error(with_line(11, ""), 128, 8, "training", "missing required field 'precision'");
}

TEST(JobSpec, UnknownScheduleListsTheRegistry) {
  expect_error(with_line(6, "  schedule: gpipe"), 128, 6, "parallelism.schedule",
               "unknown pipeline schedule 'gpipe' (known: 1f1b, interleaved, zb_h1)");
}

TEST(JobSpec, ContextParallelSizeCountsInTheGpus) {
  // cp 2 with tp 4, pp 8, dp 4 needs 256 GPUs.
  expect_error(with_line(6, "  cp: 2"), 128, 5, "parallelism.dp", "tp*cp*dp*pp = 4*2*4*8 = 256");
  EXPECT_EQ(parse_job(with_line(6, "  cp: 2"), 256).parallel.cp, 2);
}

TEST(JobSpec, OverlapParamGatherNeedsTheDistributedOptimizer) {
  // Without the distributed optimizer the default turns off; asking for it is an error.
  EXPECT_FALSE(parse_job(with_line(6, "  distributed_optimizer: false"), 128).parallel.overlap_param_gather);
  expect_error(with_line(6, "  distributed_optimizer: false\n  overlap_param_gather: true"), 128, 7,
               "parallelism.overlap_param_gather", "needs zero_stage 1 or 2");
}

TEST(JobSpec, SequenceParallelNeedsSeqDivisibleByTp) {
  expect_error(with_line(8, "  seq_length: 2046"), 128, 8, "training.seq_length",
               "seq_length / cp (2046) is not divisible by tp (4) with sequence parallelism");
}

TEST(JobSpec, LearnedPositionsBoundTheSequence) {
  expect_error(with_line(8, "  seq_length: 4096"), 128, 8, "training.seq_length",
               "exceeds the model's learned position table (2048 positions)");
}

TEST(JobSpec, InlineModelIsValidated) {
  const std::string base = testing::small_llama_job(2, 2, 2, true, 8, 2);
  const WorkloadSpec ok = parse_job(base, 8);
  EXPECT_EQ(ok.model.name, "inline");
  EXPECT_EQ(ok.model.head_dim, 32);  // hidden / heads when omitted
  std::string bad = base;
  bad.replace(bad.find("kv_heads: 4"), 11, "kv_heads: 3");  // line 6
  expect_error(bad, 8, 6, "model.kv_heads", "heads (8) must be a multiple of kv_heads (3)");
  std::string learned = base;
  learned.replace(learned.find("position: rope"), 14, "position: learned");  // line 10
  expect_error(learned, 8, 10, "model.position", "needs max_position_embeddings");
  std::string missing = base;
  missing.erase(missing.find("  vocab: 1000\n"), 14);
  expect_error(missing, 8, 2, "model", "missing required field 'vocab'");
}

TEST(JobSpec, CatalogModelWithOverrides) {
  std::string yaml = with_line(1, "model: {catalog: gpt3_175b, layers: 48}");
  const WorkloadSpec s = parse_job(yaml, 128);
  EXPECT_EQ(s.model.layers, 48);
  EXPECT_EQ(s.model.hidden, 12288);
  EXPECT_EQ(s.model.name, "gpt3_175b+overrides");
  expect_error(with_line(1, "model: {catalog: gpt3_175b, layerz: 48}"), 128, 1, "model.layerz",
               "unknown key");
  expect_error(with_line(1, "model: {catalog: gpt3_175b, kv_heads: 7}"), 128, 1, "model.kv_heads",
               "must be a multiple of kv_heads (7)");
  expect_error(with_line(1, "model: {catalog: nope}"), 128, 1, "model.catalog", "unknown model");
  // A constraint between an overridden field and a catalog one blames the override, on the
  // job's line (it had blamed the catalog file's other field, at a line of the job's mapping:
  // the catalog mapping's YAML node was overwritten when the override was recorded).
  expect_error(with_line(1, "model: {catalog: gpt3_175b, heads: 95}"), 128, 1, "model.heads",
               "heads (95) must be a multiple of kv_heads (96)");
  expect_error(with_line(1, "model: {catalog: llama3_8b, heads: 30}"), 128, 1, "model.heads",
               "heads (30) must be a multiple of kv_heads (8)");
  expect_error(with_line(1, "model: {catalog: mixtral_8x7b, experts: 1}"), 128, 1, "model.experts",
               "top_k (2) exceeds experts (1)");
  // A model name is one printable line (it heads the text report's job line).
  expect_error(with_line(1, "model: {catalog: gpt3_175b, name: \"a\\nb\"}"), 128, 1, "model.name",
               "one non-empty line");
  expect_error(with_line(1, "model: {catalog: gpt3_175b, name: \"\"}"), 128, 1, "model.name", "one non-empty line");
  // The job's attention: gqa over DeepSeek-V3's MLA ranks blames the job's attention key.
  expect_error(with_line(1, "model: {catalog: deepseek_v3, attention: gqa}"), 128, 1, "model.attention",
               "q_lora_rank is only meaningful with attention: mla");
}

TEST(ModelCatalog, ListsAndLoadsTheCatalog) {
  const auto names = catalog_model_names();
  ASSERT_EQ(names, (std::vector<std::string>{"deepseek_v3", "gpt3_175b", "gpt4_class_moe",
                                             "llama2_70b", "llama3_405b", "llama3_70b", "llama3_8b",
                                             "llama4_maverick", "mixtral_8x22b", "mixtral_8x7b",
                                             "nemotron4_15b", "nemotron4_340b", "qwen3_235b_a22b",
                                             "qwen3_30b_a3b", "qwen3_32b"}));
  const ModelSpec m = load_catalog_model("llama3_405b");
  EXPECT_EQ(m.layers, 126);
  EXPECT_EQ(m.hidden, 16384);
  EXPECT_EQ(m.ffn, 53248);
  EXPECT_EQ(m.heads, 128);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.vocab, 128256);
  EXPECT_EQ(m.activation, Activation::Swiglu);
  EXPECT_EQ(m.norm, NormKind::RmsNorm);
  EXPECT_FALSE(m.tied_embeddings);
  EXPECT_THROW(load_catalog_model("gpt5"), SpecError);
}

}  // namespace
}  // namespace clustersim::workloads
