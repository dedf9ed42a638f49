// The reference set of published, measured training results (tests/validation/measured.yaml,
// copied from ../shared/reference/measured.yaml) as plain structs. The schema is documented in
// docs/validation.md; a user's own file of the same schema (own `models:`, own cases) reads the
// same way. Reading is strict: unknown keys and malformed values are SpecErrors at file:line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace clustersim::tools::validation {

/// A value the source states, with the 1-based line it was read from.
template <typename T>
struct Stated {
  T value{};
  int line = 0;
};

/// One field of a `models:` entry, kept as written: the entry is the `model:` mapping of the job
/// that the case becomes, so the job reader validates it (and its errors point here).
struct ModelField {
  std::string key;
  std::string value;  ///< the scalar text
  int line = 0;
};

/// A model of the reference file.
struct ReferenceModel {
  std::string name;
  int line = 0;
  std::vector<ModelField> fields;
};

/// A job key a case states directly (`config.job.<section>.<key>`): any `parallelism` or
/// `training` key of docs/job-spec.md, checked when the job is parsed.
struct CaseJobKey {
  std::string section;  ///< "parallelism" or "training"
  std::string key;      ///< the job key, e.g. "moe_token_dispatcher"
  /// The value as YAML text that reads back as written: a scalar (quoted where the file quotes
  /// it or where it holds a flow indicator) or a flow sequence of such scalars.
  std::string yaml;
  int line = 0;  ///< of the key in the reference file
};

/// What a case's `config:` states. Absent fields are unstated by the source; the recipe family
/// of the case supplies documented defaults for them (tools/validation/recipe_families.hpp).
struct CaseConfig {
  int line = 0;
  Stated<std::string> model;
  std::optional<Stated<std::string>> gpu;        ///< GPU name, e.g. "H100-SXM"
  std::optional<Stated<std::string>> platform;   ///< catalog name or platform file (extension)
  std::vector<std::int64_t> gpus;                ///< one count or several (weak scaling)
  int gpus_line = 0;
  std::optional<Stated<std::int64_t>> tp, pp, dp, cp, vp, ep, mbs, grad_accum, seq, zero;
  std::optional<Stated<std::string>> gbs;        ///< integer or expression in `gpus`
  std::optional<Stated<std::string>> precision;  ///< bf16 | fp8
  std::optional<Stated<std::string>> pipeline;   ///< 1f1b | interleaved
  std::optional<Stated<std::string>> recompute;  ///< activation_checkpointing: none|selective|full
  std::optional<Stated<std::string>> optimizer_offload;  ///< none | cpu
  std::optional<Stated<std::string>> elementwise;        ///< fused | eager
  std::optional<Stated<std::string>> cross_entropy;      ///< unfused | fused | chunked | eager
  std::optional<Stated<bool>> sequence_parallel, tp_comm_overlap;
  std::optional<Stated<bool>> zero_init;                 ///< ZeRO-3 parameters built sharded
  std::vector<CaseJobKey> job;  ///< further job keys, in file order (config.job)
};

/// The metric a point compares.
enum class Metric : std::uint8_t {
  StepTime,      ///< seconds per training step
  Mfu,           ///< model FLOPs utilization in the source's convention
  TflopsPerGpu,  ///< model TFLOP/s per GPU in the source's convention
};

/// Name of a metric in outputs: "step_s", "mfu", "tflops_per_gpu".
const char* to_string(Metric metric);

/// A measured step split as S3's bench_decompose.py splits it (docs/validation.md, "Step
/// decomposition"): the step time divided by the attention kernels' share of the kernel time
/// (communication kernels excluded), each part's model FLOPs over its part of the step.
struct MeasuredBuckets {
  double attention_tflops = 0.0;  ///< attention's model FLOPs / its part of the step, TFLOP/s
  double rest_tflops = 0.0;       ///< the other model FLOPs / the rest of the step, TFLOP/s
  int line = 0;                   ///< of the attention_bucket figure
};

/// One measured number to reproduce: a case at one GPU count (and sequence length, platform).
struct MeasuredPoint {
  std::int64_t gpus = 0;    ///< 0: the case config's single count
  std::int64_t seq = 0;     ///< 0: the config's (or the recipe's) sequence length
  std::string gpu_tag;      ///< "" or the GPU the source names in the metric ("h200", "b200")
  Metric metric = Metric::Mfu;
  double value = 0.0;       ///< in the metric's unit (s, fraction, TFLOP/s)
  int line = 0;
  std::optional<double> peak_memory_gib;  ///< measured peak memory, where the source gives it
  /// What peak_memory_gib measures: "device" (all the GPU's memory in use, as nvidia-smi) or
  /// "max_memory_reserved" (PyTorch's caching allocator only); measured.peak_memory_metric.
  std::string peak_memory_metric = "device";
  std::optional<double> stated_mfu;       ///< the source's MFU at this point, where it gives one
  /// The step's decomposition, where the source gives one (attention_bucket, rest_bucket).
  std::optional<MeasuredBuckets> buckets;
};

/// A case of the reference set.
struct ReferenceCase {
  std::string id;
  std::string source;
  std::optional<Stated<std::string>> recipe;  ///< explicit recipe family (extension)
  int line = 0;
  CaseConfig config;
  std::vector<MeasuredPoint> points;
  std::vector<std::string> not_compared;  ///< measured figures validate does not compare, why
};

/// A whole reference file.
struct ReferenceSet {
  std::string file;
  std::vector<ReferenceModel> models;
  std::vector<ReferenceCase> cases;

  /// The model named `name`, or nullptr.
  const ReferenceModel* find_model(const std::string& name) const;
};

/// Reads a reference file. @throws SpecError (file:line, field, reason) for unreadable files,
/// invalid YAML, unknown keys, wrong types, duplicate ids, unknown models, empty measurements.
ReferenceSet load_reference_set(const std::string& path);

/// Same, from text that came from `origin` (tests). @throws SpecError.
ReferenceSet parse_reference_set(const std::string& text, const std::string& origin);

/// Column names of `by_seq` rows when a case gives no `columns:`: the order documented in
/// measured.yaml for case s3_llama31_8b_seq_sweep.
const std::vector<std::string>& default_by_seq_columns();

}  // namespace clustersim::tools::validation
