#include "workloads/job_spec.hpp"

#include <initializer_list>
#include <string>

#include "workloads/enum_names.hpp"
#include "workloads/model_catalog.hpp"
#include "workloads/schedule.hpp"

namespace clustersim::workloads {
namespace {

// Upper bounds that only reject nonsense: 2^20 ranks along one dimension is 64x the largest
// cluster the simulator targets (16,384 GPUs).
constexpr std::int64_t kMaxParallel = std::int64_t{1} << 20;
constexpr std::int64_t kMaxSeq = std::int64_t{1} << 24;
constexpr std::int64_t kMaxBatch = std::int64_t{1} << 30;

std::string str(std::int64_t v) { return std::to_string(v); }

// Checks for unknown keys before any value is read, so that a misspelt key is reported as
// such rather than as a missing required one.
void reject_unknown_keys(YamlMap& map, std::initializer_list<const char*> known) {
  for (const char* key : known) map.has(key);
  map.finish();
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// tp*pp*dp must equal the cluster's GPU count; dp may be omitted and is then derived.
int read_dp(YamlMap& p, const ParallelSpec& s, int gpus) {
  const std::int64_t tp_pp = std::int64_t{s.tp} * s.pp;
  if (!p.has("dp")) {
    if (gpus % tp_pp != 0) {
      throw SpecError(p.file(), p.line(), p.path() + ".dp",
                      "dp is omitted and the cluster's " + str(gpus) +
                          " GPUs are not divisible by tp*pp = " + str(tp_pp));
    }
    return static_cast<int>(gpus / tp_pp);
  }
  const std::int64_t dp = p.get_int("dp", 1, kMaxParallel);
  if (tp_pp * dp != gpus) {
    throw p.error("dp", "tp*pp*dp = " + str(s.tp) + "*" + str(s.pp) + "*" + str(dp) + " = " +
                            str(tp_pp * dp) + " does not equal the cluster's " + str(gpus) +
                            " GPUs");
  }
  return static_cast<int>(dp);
}

// Defaults: tp, pp = 1 and sequence_parallel = false are Megatron-LM's argument defaults;
// the data-parallel optimizer settings are those of the NeMo 2.0 pre-training recipes
// (nemo/collections/llm/recipes/*.py: distributed_fused_adam_* sets use_distributed_optimizer,
// trainer() sets DistributedDataParallelConfig(grad_reduce_in_fp32=True,
// overlap_grad_reduce=True, overlap_param_gather=True)). docs/job-spec.md lists them.
ParallelSpec read_parallelism(YamlMap& p, int gpus) {
  reject_unknown_keys(p, {"tp", "pp", "dp", "cp", "sequence_parallel", "schedule",
                          "distributed_optimizer", "overlap_grad_reduce", "overlap_param_gather",
                          "grad_reduce_in_fp32"});
  ParallelSpec s;
  s.tp = static_cast<int>(p.get_int_or("tp", 1, 1, kMaxParallel));
  s.pp = static_cast<int>(p.get_int_or("pp", 1, 1, kMaxParallel));
  if (p.has("cp") && p.get_int("cp", 1, kMaxParallel) != 1) {
    throw p.error("cp", "context parallelism (cp > 1) is not implemented yet; use cp: 1");
  }
  s.sequence_parallel = p.get_bool_or("sequence_parallel", false);
  s.schedule = p.get_string_or("schedule", "1f1b");
  if (find_pipeline_schedule(s.schedule) == nullptr) {
    throw p.error("schedule", "unknown pipeline schedule '" + s.schedule +
                                  "' (known: " + join(pipeline_schedule_names()) + ")");
  }
  s.distributed_optimizer = p.get_bool_or("distributed_optimizer", true);
  s.overlap_grad_reduce = p.get_bool_or("overlap_grad_reduce", true);
  s.overlap_param_gather = p.get_bool_or("overlap_param_gather", true);
  s.grad_reduce_in_fp32 = p.get_bool_or("grad_reduce_in_fp32", true);
  if (s.overlap_param_gather && !(s.distributed_optimizer && s.overlap_grad_reduce)) {
    // Megatron-LM validate_args asserts both for --overlap-param-gather.
    throw p.error("overlap_param_gather",
                  "needs distributed_optimizer: true and overlap_grad_reduce: true");
  }
  s.dp = read_dp(p, s, gpus);
  return s;
}

// global_batch_size defaults to micro_batch_size * dp, as in Megatron-LM (arguments.py).
TrainingSpec read_training(YamlMap& t, int dp) {
  reject_unknown_keys(t, {"seq_length", "micro_batch_size", "global_batch_size", "precision"});
  TrainingSpec s;
  s.seq_length = t.get_int("seq_length", 1, kMaxSeq);
  s.micro_batch_size = t.get_int("micro_batch_size", 1, kMaxBatch);
  s.global_batch_size = t.get_int_or("global_batch_size", s.micro_batch_size * dp, 1, kMaxBatch);
  s.precision = read_enum(t, "precision", kPrecisionNames);
  return s;
}

void require_divisible(const YamlMap& map, const std::string& key, const std::string& what,
                       std::int64_t value, const std::string& by_name, std::int64_t by) {
  if (value % by != 0) {
    throw map.error(key, what + " (" + str(value) + ") is not divisible by " + by_name + " (" +
                             str(by) + ")");
  }
}

// Constraints between sections; each error points at the parallelism/training key to change.
void check_consistency(const WorkloadSpec& w, const YamlMap& p, const YamlMap& t) {
  const ModelSpec& m = w.model;
  const ParallelSpec& par = w.parallel;
  const TrainingSpec& tr = w.training;
  // Megatron divides heads, query groups and the MLP width by tp (megatron.core.utils.divide).
  require_divisible(p, "tp", "model.heads", m.heads, "tp", par.tp);
  require_divisible(p, "tp", "model.kv_heads", m.kv_heads, "tp", par.tp);
  require_divisible(p, "tp", "model.ffn", m.ffn, "tp", par.tp);
  // Non-interleaved pipelines hold layers / pp layers per stage.
  require_divisible(p, "pp", "model.layers", m.layers, "pp", par.pp);
  if (par.sequence_parallel && par.tp > 1) {
    require_divisible(t, "seq_length", "seq_length", tr.seq_length, "tp (sequence parallel)", par.tp);
  }
  if (m.position == PositionKind::Learned && tr.seq_length > m.max_position_embeddings) {
    throw t.error("seq_length", "seq_length " + str(tr.seq_length) +
                                    " exceeds the model's learned position table (" +
                                    str(m.max_position_embeddings) + " positions)");
  }
  const std::int64_t per_step = std::int64_t{par.dp} * tr.micro_batch_size;
  if (tr.global_batch_size % per_step != 0) {
    // Only reachable with an explicit global_batch_size (the default is dp*micro_batch_size).
    throw t.error("global_batch_size",
                  "global_batch_size (" + str(tr.global_batch_size) +
                      ") is not divisible by dp*micro_batch_size = " + str(par.dp) + "*" +
                      str(tr.micro_batch_size) + " = " + str(per_step));
  }
}

}  // namespace

WorkloadSpec parse_workload_spec(YamlMap& root, int gpus) {
  WorkloadSpec spec;
  spec.model = parse_model_section(root);
  YamlMap parallelism = root.get_map("parallelism");
  spec.parallel = read_parallelism(parallelism, gpus);
  YamlMap training = root.get_map("training");
  spec.training = read_training(training, spec.parallel.dp);
  check_consistency(spec, parallelism, training);
  return spec;
}

sim::DType compute_dtype(const WorkloadSpec& spec) {
  return spec.training.precision == Precision::FP8 ? sim::DType::FP8 : sim::DType::BF16;
}

const char* to_string(Activation v) { return name_of(v, kActivationNames); }
const char* to_string(NormKind v) { return name_of(v, kNormNames); }
const char* to_string(PositionKind v) { return name_of(v, kPositionNames); }
const char* to_string(Precision v) { return name_of(v, kPrecisionNames); }

}  // namespace clustersim::workloads
