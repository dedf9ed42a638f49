#include "workloads/job_spec.hpp"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "workloads/enum_names.hpp"
#include "workloads/job_checks.hpp"
#include "workloads/model_catalog.hpp"
#include "workloads/schedule.hpp"
#include "workloads/stage_layout.hpp"

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

// tp*cp*dp*pp must equal the cluster's GPU count; dp may be omitted and is then derived.
int read_dp(YamlMap& p, const ParallelSpec& s, int gpus) {
  const std::int64_t others = std::int64_t{s.tp} * s.cp * s.pp;
  const std::string names = "tp*cp*pp = " + str(s.tp) + "*" + str(s.cp) + "*" + str(s.pp);
  if (!p.has("dp")) {
    if (gpus % others != 0) {
      throw SpecError(p.file(), p.line(), p.path() + ".dp",
                      "dp is omitted and the cluster's " + str(gpus) +
                          " GPUs are not divisible by " + names + " = " + str(others));
    }
    return static_cast<int>(gpus / others);
  }
  const std::int64_t dp = p.get_int("dp", 1, kMaxParallel);
  if (others * dp != gpus) {
    throw p.error("dp", "tp*cp*dp*pp = " + str(s.tp) + "*" + str(s.cp) + "*" + str(dp) + "*" +
                            str(s.pp) + " = " + str(others * dp) + " does not equal the cluster's " +
                            str(gpus) + " GPUs");
  }
  return static_cast<int>(dp);
}

// "tp-cp-ep-dp-pp": each of the five dimensions once, fastest-varying first.
std::array<sim::GroupKind, 5> read_rank_order(YamlMap& p) {
  const std::string text = p.get_string_or("rank_order", "tp-cp-ep-dp-pp");
  const std::vector<std::pair<std::string, sim::GroupKind>> dims = {
      {"tp", sim::GroupKind::TP}, {"cp", sim::GroupKind::CP}, {"ep", sim::GroupKind::EP},
      {"dp", sim::GroupKind::DP}, {"pp", sim::GroupKind::PP}};
  std::array<sim::GroupKind, 5> order{};
  std::size_t n = 0;
  std::size_t pos = 0;
  std::vector<std::string> seen;
  while (pos <= text.size()) {
    const std::size_t dash = std::min(text.find('-', pos), text.size());
    const std::string token = text.substr(pos, dash - pos);
    auto it = std::find_if(dims.begin(), dims.end(), [&](const auto& d) { return d.first == token; });
    if (it == dims.end() || std::find(seen.begin(), seen.end(), token) != seen.end() || n == 5) {
      throw p.error("rank_order", "'" + text + "' must name tp, cp, ep, dp and pp once each, "
                                  "separated by '-' (Megatron's order, e.g. tp-cp-ep-dp-pp)");
    }
    seen.push_back(token);
    order[n++] = it->second;
    pos = dash + 1;
  }
  if (n != 5) throw p.error("rank_order", "'" + text + "' must name all of tp, cp, ep, dp, pp");
  return order;
}

// ZeRO stage from zero_stage, fsdp and distributed_optimizer (which must agree when several
// are given). Default 1: the distributed optimizer of the NeMo 2.0 recipes.
int read_zero_stage(YamlMap& p) {
  int stage = static_cast<int>(p.get_int_or("zero_stage", 1, 0, 3));
  if (p.has("fsdp") && p.get_bool("fsdp")) {
    if (p.has("zero_stage") && stage != 3) {
      throw p.error("fsdp", "fsdp: true is ZeRO stage 3, but zero_stage is " + str(stage));
    }
    stage = 3;
  }
  if (p.has("distributed_optimizer")) {
    const bool dist = p.get_bool("distributed_optimizer");
    if ((p.has("zero_stage") || p.has("fsdp")) && dist != (stage >= 1)) {
      throw p.error("distributed_optimizer", "contradicts the ZeRO stage " + str(stage) +
                                                 " (distributed_optimizer means stage >= 1)");
    }
    if (!p.has("zero_stage") && !p.has("fsdp")) stage = dist ? 1 : 0;
  }
  return stage;
}

// Megatron-core's --pipeline-model-parallel-layout: its virtual stages give vp (arguments.py
// derives the virtual pipeline size from it) and replace the other ways of shaping the split.
void read_pipeline_layout(YamlMap& p, ParallelSpec& s) {
  const char* key = "pipeline_layout";
  std::string error;
  s.pipeline_layout = expand_pipeline_layout(p.get_string(key), error);
  if (s.pipeline_layout.empty()) throw p.error(key, error);
  const auto stages = static_cast<long long>(s.pipeline_layout.size());
  if (stages % s.pp != 0) {
    throw p.error(key, str(stages) + " virtual stages are not a multiple of pp = " + str(s.pp));
  }
  if (p.has("vp") && p.get_int("vp", 1, kMaxParallel) != stages / s.pp) {
    throw p.error("vp", "contradicts pipeline_layout's " + str(stages) + " virtual stages over pp = " +
                            str(s.pp) + " (vp " + str(stages / s.pp) + ")");
  }
  // Megatron-core's TransformerConfig refuses the uneven stage sizes and a true account_for_*.
  for (const char* other : {"num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage"}) {
    if (p.has(other)) throw p.error(other, "cannot be combined with pipeline_layout");
  }
  for (const char* other : {"account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"}) {
    if (p.has(other) && p.get_bool(other)) throw p.error(other, "cannot be combined with pipeline_layout");
  }
  s.vp = static_cast<int>(stages / s.pp);
}

void read_pipeline_split(YamlMap& p, ParallelSpec& s) {
  s.vp = static_cast<int>(p.get_int_or("vp", 1, 1, kMaxParallel));
  if (p.has("pipeline_layout")) read_pipeline_layout(p, s);
  s.schedule = p.get_string_or("schedule", s.vp > 1 ? "interleaved" : "1f1b");
  if (find_pipeline_schedule(s.schedule) == nullptr) {
    throw p.error("schedule", "unknown pipeline schedule '" + s.schedule +
                                  "' (known: " + join(pipeline_schedule_names()) + ")");
  }
  s.first_stage_layers =
      static_cast<int>(p.get_int_or("num_layers_in_first_pipeline_stage", 0, 1, kMaxParallel));
  s.last_stage_layers =
      static_cast<int>(p.get_int_or("num_layers_in_last_pipeline_stage", 0, 1, kMaxParallel));
  s.account_for_embedding = p.get_bool_or("account_for_embedding_in_pipeline_split", false);
  s.account_for_loss = p.get_bool_or("account_for_loss_in_pipeline_split", false);
}

// The data-parallel optimizer: ZeRO stage and implementation, gradient reduction and parameter
// gathering (defaults above read_parallelism).
void read_data_parallel_optimizer(YamlMap& p, ParallelSpec& s) {
  s.zero_stage = read_zero_stage(p);
  const bool fsdp = p.has("fsdp") && p.get_bool("fsdp");
  s.zero_impl = fsdp ? ZeroImpl::Fsdp2 : ZeroImpl::DeepSpeed;
  if (p.has("zero_impl")) {
    if (s.zero_stage != 3) throw p.error("zero_impl", "only meaningful with ZeRO stage 3 (zero_stage: 3 or fsdp: true)");
    s.zero_impl = read_enum(p, "zero_impl", kZeroImplNames);
  }
  s.distributed_optimizer = s.zero_stage >= 1;
  s.zero_init = p.get_bool_or("zero_init", true);
  if (p.has("zero_init") && s.zero_stage != 3) {
    throw p.error("zero_init", "only means something with zero_stage 3 (below it every GPU "
                               "holds the whole model anyway)");
  }
  s.overlap_grad_reduce = p.get_bool_or("overlap_grad_reduce", true);
  const bool gather_possible = (s.zero_stage == 1 || s.zero_stage == 2) && s.overlap_grad_reduce;
  s.overlap_param_gather = p.get_bool_or("overlap_param_gather", gather_possible);
  if (s.overlap_param_gather && !gather_possible) {
    // Megatron-LM validate_args asserts both for --overlap-param-gather; with ZeRO-3 parameters
    // are gathered per layer instead.
    throw p.error("overlap_param_gather", "needs zero_stage 1 or 2 (distributed optimizer) and "
                                          "overlap_grad_reduce: true");
  }
  // Megatron-LM forces FP32 main_grad accumulation and reduction for BF16 (zero_stage 0-1).
  // Under ZeRO-2/3 DeepSpeed accumulates in the model dtype (runtime/engine.py,
  // get_data_types: FP32 only for BF16 without ZeRO) and communication_data_type defaults to
  // it; FSDP2's MixedPrecisionPolicy reduces in param_dtype when reduce_dtype is None.
  s.grad_reduce_in_fp32 = p.get_bool_or("grad_reduce_in_fp32", s.zero_stage <= 1);
  s.precision_aware_optimizer = p.get_bool_or("precision_aware_optimizer", false);
  s.fp8_param_gather = p.get_bool_or("fp8_param_gather", false);
  if (s.fp8_param_gather && s.zero_stage != 1) {
    // Megatron-LM validate_args: --fp8-param-gather needs the distributed optimizer (or a
    // sharded data-parallel implementation this simulator runs as zero_stage 2/3 without it).
    throw p.error("fp8_param_gather", "needs zero_stage 1 (Megatron's distributed optimizer "
                                      "gathers the FP8 parameters)");
  }
  // Megatron-LM's --gradient-accumulation-fusion is on unless --no-gradient-accumulation-fusion
  // (megatron/training/arguments.py); NeMo's GPTConfig sets it whenever Apex's
  // fused_weight_gradient_mlp_cuda imports (nemo/collections/llm/gpt/model/base.py:
  // gradient_accumulation_fusion = _grad_accum_fusion_available), as in NeMo's containers. It
  // adds into the main_grad of Megatron's DDP buffers, which ZeRO-2/3 (DeepSpeed, FSDP) lack.
  s.gradient_accumulation_fusion = p.get_bool_or("gradient_accumulation_fusion", s.zero_stage <= 1);
  if (s.gradient_accumulation_fusion && s.zero_stage >= 2) {
    throw p.error("gradient_accumulation_fusion", "adds into Megatron's main_grad buffer, which "
                                                  "zero_stage 2 and 3 (DeepSpeed, FSDP) do not keep");
  }
}

// TP communication overlap (Transformer Engine userbuffers), pipeline transfer overlap and the
// host optimizer offload. Needs the schedule (read_pipeline_split) and the ZeRO stage.
void read_overlap_and_offload(YamlMap& p, ParallelSpec& s) {
  s.tp_comm_overlap = p.get_bool_or("tp_comm_overlap", false);
  if (p.has("tp_backward_comm")) {
    s.tp_backward_comm = read_enum(p, "tp_backward_comm", kTpBackwardCommNames);
    if (s.tp_backward_comm == TpBackwardComm::Blocking && s.tp_comm_overlap) {
      throw p.error("tp_backward_comm", "blocking contradicts tp_comm_overlap: true (Transformer "
                                        "Engine's userbuffers overlap the backward collectives)");
    }
  }
  if (auto cfg = p.get_map_opt("tp_comm_overlap_cfg")) {
    if (!s.tp_comm_overlap) {
      throw p.error("tp_comm_overlap_cfg", "is given but tp_comm_overlap is not true");
    }
    s.tp_overlap_cfg = read_tp_overlap_cfg(*cfg);
  }
  // Megatron-LM's training arguments overlap P2P by default (--no-overlap-p2p-communication
  // turns it off) and force it off outside the interleaved schedule (arguments.py).
  const bool chunks = schedule_traits(s.schedule).model_chunks;
  s.overlap_p2p_comm = p.get_bool_or("overlap_p2p_comm", chunks);
  if (s.overlap_p2p_comm && !chunks) {
    throw p.error("overlap_p2p_comm", "Megatron overlaps pipeline transfers only in the interleaved "
                                      "schedule (schedule " + s.schedule + " sends and receives them "
                                      "blocking, 1f1b batching each pair)");
  }
  s.moe_shared_expert_overlap = p.get_bool_or("moe_shared_expert_overlap", false);
  s.overlap_moe_expert_parallel_comm = p.get_bool_or("overlap_moe_expert_parallel_comm", false);
  s.delay_wgrad_compute = p.get_bool_or("delay_wgrad_compute", false);
  if (s.delay_wgrad_compute && !s.overlap_moe_expert_parallel_comm) {
    // Megatron-LM's arguments: --delay-wgrad-compute is for the combined 1F1B schedule.
    throw p.error("delay_wgrad_compute", "needs overlap_moe_expert_parallel_comm: true (it adds "
                                         "overlap windows to the combined 1F1B schedule)");
  }
  if (p.has("moe_token_dispatcher")) {
    s.moe_token_dispatcher = read_enum(p, "moe_token_dispatcher", kMoeDispatcherNames);
  }
  s.optimizer_offload = p.has("optimizer_offload") ? read_enum(p, "optimizer_offload", kOffloadNames)
                                                   : OptimizerOffload::None;
  if (p.has("offload_threads")) {
    if (s.optimizer_offload != OptimizerOffload::Cpu) {
      throw p.error("offload_threads", "only meaningful with optimizer_offload: cpu");
    }
    s.offload_threads = read_enum(p, "offload_threads", kHostThreadsNames);
  }
}

// Defaults: tp, pp, cp, vp, ep = 1 and sequence_parallel = false are Megatron-LM's argument
// defaults; etp defaults to tp (Megatron-core: expert_tensor_parallel_size None -> tp); the
// data-parallel optimizer settings are those of the NeMo 2.0 pre-training recipes
// (nemo/collections/llm/recipes/*.py: distributed_fused_adam_* sets use_distributed_optimizer,
// trainer() sets DistributedDataParallelConfig(grad_reduce_in_fp32=True,
// overlap_grad_reduce=True, overlap_param_gather=True)); tp_comm_overlap and
// precision_aware_optimizer default to false as in Megatron-LM. docs/job-spec.md lists them.
ParallelSpec read_parallelism(YamlMap& p, int gpus) {
  reject_unknown_keys(p, {"tp", "pp", "dp", "cp", "vp", "ep", "etp", "sequence_parallel",
                          "schedule", "rank_order", "num_layers_in_first_pipeline_stage",
                          "zero_init",
                          "num_layers_in_last_pipeline_stage",
                          "account_for_embedding_in_pipeline_split",
                          "account_for_loss_in_pipeline_split", "pipeline_layout", "zero_stage", "fsdp", "zero_impl",
                          "distributed_optimizer", "overlap_grad_reduce", "overlap_param_gather",
                          "grad_reduce_in_fp32", "precision_aware_optimizer", "fp8_param_gather",
                          "gradient_accumulation_fusion", "tp_comm_overlap", "tp_comm_overlap_cfg",
                          "overlap_p2p_comm",
                          "optimizer_offload", "offload_threads", "cp_comm_type",
                          "tp_backward_comm", "moe_shared_expert_overlap",
                          "moe_token_dispatcher", "overlap_moe_expert_parallel_comm",
                          "delay_wgrad_compute"});
  ParallelSpec s;
  s.tp = static_cast<int>(p.get_int_or("tp", 1, 1, kMaxParallel));
  s.pp = static_cast<int>(p.get_int_or("pp", 1, 1, kMaxParallel));
  s.cp = static_cast<int>(p.get_int_or("cp", 1, 1, kMaxParallel));
  s.ep = static_cast<int>(p.get_int_or("ep", 1, 1, kMaxParallel));
  s.etp = static_cast<int>(p.get_int_or("etp", s.tp, 1, kMaxParallel));
  s.sequence_parallel = p.get_bool_or("sequence_parallel", false);
  read_pipeline_split(p, s);
  s.rank_order = read_rank_order(p);
  read_data_parallel_optimizer(p, s);
  read_overlap_and_offload(p, s);
  s.cp_comm_type = p.has("cp_comm_type") ? read_enum(p, "cp_comm_type", kCpCommNames) : CpCommType::P2p;
  s.dp = read_dp(p, s, gpus);
  return s;
}

// Megatron-LM --fp8-recipe (with --fp8-format): Transformer Engine's DelayedScaling by default,
// Float8BlockScaling (blockwise) or Float8CurrentScaling (tensorwise). Both compute their scales
// from the tensor being cast: there is no amax history to reduce; FP8 attention is modelled
// with the delayed recipe only.
void read_fp8_recipe(YamlMap& t, TrainingSpec& s) {
  if (!t.has("fp8_recipe")) return;
  if (s.precision != Precision::FP8) throw t.error("fp8_recipe", "needs precision: fp8");
  s.fp8_recipe = read_enum(t, "fp8_recipe", kFp8RecipeNames);
  if (s.fp8_recipe == Fp8Recipe::Delayed) return;
  const std::string recipe = to_string(s.fp8_recipe);
  if (t.has("fp8_reduce_amax")) {
    throw t.error("fp8_reduce_amax", recipe + " scaling keeps no amax history to reduce");
  }
  if (s.fp8_attention) {
    throw t.error("fp8_attention", "FP8 attention is modelled with the delayed recipe only");
  }
  s.fp8_reduce_amax = false;
}

// Megatron-LM's --recompute-method and --recompute-num-layers apply to full recompute only
// (arguments.py rejects them with selective granularity); NeMo's defaults: uniform, 1.
void read_recompute_layers(YamlMap& t, TrainingSpec& s) {
  for (const char* key : {"recompute_method", "recompute_num_layers"}) {
    if (t.has(key) && s.recompute != Recompute::Full) {
      throw t.error(key, "applies to recompute: full only");
    }
  }
  if (t.has("recompute_method")) s.recompute_method = read_enum(t, "recompute_method", kRecomputeMethodNames);
  s.recompute_num_layers = static_cast<int>(t.get_int_or("recompute_num_layers", 1, 1, 1 << 20));
}

// Megatron-core's --recompute-modules (TransformerConfig.recompute_modules, default
// ["core_attn"]) name what selective recompute re-runs; Megatron ignores them under full
// recompute, so we refuse them there.
void read_recompute_modules(YamlMap& t, TrainingSpec& s) {
  if (!t.has("recompute_modules")) return;
  if (s.recompute != Recompute::Selective) {
    throw t.error("recompute_modules", "applies to recompute: selective only");
  }
  std::vector<std::string> names;
  for (const auto& entry : kRecomputeModuleNames) names.emplace_back(entry.name);
  const std::vector<std::string> listed = t.get_enum_list("recompute_modules", names);
  if (listed.empty()) throw t.error("recompute_modules", "is empty (omit it for core_attn alone)");
  for (const auto& entry : kRecomputeModuleNames) {
    if (std::find(listed.begin(), listed.end(), entry.name) != listed.end()) {
      s.recompute_modules.push_back(entry.value);
    }
  }
}

// global_batch_size defaults to micro_batch_size * dp * gradient_accumulation_steps (1 when
// absent), as Megatron-LM derives it (arguments.py); recompute none, cross entropy unfused and
// the megatron MFU convention are Megatron-LM's defaults; dropless MoE routing (no capacity
// factor) is Megatron-core's default (moe_expert_capacity_factor None).
// Megatron-core's --offload-modules choices. attn_norm is named only to say why it is refused:
// Transformer Engine's layer spec fuses the input norm into linear_qkv, and Megatron skips an
// attn_norm offload when input_layernorm is that IdentityOp (TransformerLayer.offload_attn_norm).
void read_offload_modules(YamlMap& t, TrainingSpec& s) {
  if (!t.has("offload_modules")) return;
  std::vector<std::string> names;
  for (const auto& entry : kOffloadModuleNames) names.emplace_back(entry.name);
  names.emplace_back("attn_norm");
  for (const std::string& name : t.get_enum_list("offload_modules", names)) {
    if (name == "attn_norm") {
      throw t.error("offload_modules",
                    "attn_norm offloads nothing here: Transformer Engine's layer spec fuses the input "
                    "norm into linear_qkv (Megatron skips it); offload qkv_linear instead");
    }
    for (const auto& entry : kOffloadModuleNames) {
      if (name == entry.name) s.offload_modules.push_back(entry.value);
    }
  }
  std::sort(s.offload_modules.begin(), s.offload_modules.end());
}

TrainingSpec read_training(YamlMap& t, int dp) {
  reject_unknown_keys(t, {"seq_length", "micro_batch_size", "global_batch_size",
                          "gradient_accumulation_steps", "precision", "fp8_attention",
                          "attention_backend",
                          "fp8_reduce_amax", "fp8_recipe", "recompute", "recompute_method",
                          "recompute_num_layers", "recompute_modules",
                          "cross_entropy", "elementwise", "mfu_convention", "moe_imbalance",
                          "moe_capacity_factor", "moe_pad_expert_input_to_capacity",
                          "moe_permute_fusion", "moe_router_dtype", "expandable_segments",
                          "offload_modules"});
  TrainingSpec s;
  s.seq_length = t.get_int("seq_length", 1, kMaxSeq);
  s.micro_batch_size = t.get_int("micro_batch_size", 1, kMaxBatch);
  const std::int64_t accumulation = t.get_int_or("gradient_accumulation_steps", 1, 1, kMaxBatch);
  s.global_batch_size =
      t.get_int_or("global_batch_size", s.micro_batch_size * dp * accumulation, 1, kMaxBatch);
  if (t.has("gradient_accumulation_steps") && t.has("global_batch_size") &&
      s.global_batch_size != s.micro_batch_size * dp * accumulation) {
    throw t.error("gradient_accumulation_steps",
                  "global_batch_size (" + str(s.global_batch_size) + ") != micro_batch_size * dp * "
                  "gradient_accumulation_steps = " + str(s.micro_batch_size) + "*" + str(dp) + "*" +
                  str(accumulation));
  }
  s.precision = read_enum(t, "precision", kPrecisionNames);
  s.fp8_attention = t.get_bool_or("fp8_attention", false);
  if (t.has("attention_backend")) {
    s.attention_backend = read_enum(t, "attention_backend", kAttentionBackendNames);
  }
  s.fp8_reduce_amax = t.get_bool_or("fp8_reduce_amax", true);
  if (t.has("fp8_reduce_amax") && s.precision != Precision::FP8) {
    throw t.error("fp8_reduce_amax", "needs precision: fp8");
  }
  read_fp8_recipe(t, s);
  if (t.has("recompute")) s.recompute = read_enum(t, "recompute", kRecomputeNames);
  read_recompute_layers(t, s);
  read_recompute_modules(t, s);
  if (t.has("cross_entropy")) s.cross_entropy = read_enum(t, "cross_entropy", kCrossEntropyNames);
  if (t.has("elementwise")) s.elementwise = read_enum(t, "elementwise", kElementwiseNames);
  s.mfu_convention = t.get_enum_or("mfu_convention", "megatron", {"megatron", "causal"});
  s.moe_imbalance = t.get_double_or("moe_imbalance", 1.0, 1.0, 1e6);
  s.moe_capacity_factor = t.get_double_or("moe_capacity_factor", 0.0, 0.0, 1e6);
  s.expandable_segments = t.get_bool_or("expandable_segments", false);
  read_offload_modules(t, s);
  if (t.has("moe_capacity_factor") && s.moe_capacity_factor <= 0.0) {
    throw t.error("moe_capacity_factor", "must be > 0 (omit it for dropless routing)");
  }
  s.moe_pad_to_capacity = t.get_bool_or("moe_pad_expert_input_to_capacity", false);
  s.moe_permute_fusion = t.get_bool_or("moe_permute_fusion", false);
  // Megatron-core's None (the input dtype) is bf16 here; fp64 (FP64 GEMMs) is not modelled.
  s.moe_router_fp32 = t.get_enum_or("moe_router_dtype", "bf16", {"bf16", "fp32"}) == "fp32";
  if (s.moe_pad_to_capacity && s.moe_capacity_factor <= 0.0) {
    // Megatron-core TransformerConfig: padding to capacity needs a capacity factor.
    throw t.error("moe_pad_expert_input_to_capacity", "needs training.moe_capacity_factor (the capacity to pad to)");
  }
  return s;
}

}  // namespace

WorkloadSpec parse_workload_spec(YamlMap& root, int gpus) {
  WorkloadSpec spec;
  spec.model = parse_model_section(root);
  YamlMap parallelism = root.get_map("parallelism");
  spec.parallel = read_parallelism(parallelism, gpus);
  YamlMap training = root.get_map("training");
  spec.training = read_training(training, spec.parallel.dp);
  check_workload_spec(spec, parallelism, training);
  return spec;
}

sim::DType compute_dtype(const WorkloadSpec& spec) {
  return spec.training.precision == Precision::FP8 ? sim::DType::FP8 : sim::DType::BF16;
}

bool optimizer_param_remainders(const WorkloadSpec& spec) {
  const TrainingSpec& t = spec.training;
  const bool current_scaling = t.precision == Precision::FP8 && t.fp8_recipe != Fp8Recipe::Delayed;
  return spec.parallel.precision_aware_optimizer &&
         (!current_scaling || spec.parallel.optimizer_offload == OptimizerOffload::Cpu);
}

bool fp8_amax_reduced(const WorkloadSpec& spec) {
  const ParallelSpec& p = spec.parallel;
  return spec.training.precision == Precision::FP8 && spec.training.fp8_reduce_amax &&
         p.tp * p.cp * p.dp > 1;
}

const char* to_string(Activation v) { return name_of(v, kActivationNames); }
const char* to_string(NormKind v) { return name_of(v, kNormNames); }
const char* to_string(PositionKind v) { return name_of(v, kPositionNames); }
const char* to_string(Precision v) { return name_of(v, kPrecisionNames); }
const char* to_string(AttentionKind v) { return name_of(v, kAttentionNames); }
const char* to_string(Recompute v) { return name_of(v, kRecomputeNames); }
const char* to_string(CrossEntropy v) { return name_of(v, kCrossEntropyNames); }
const char* to_string(OptimizerOffload v) { return name_of(v, kOffloadNames); }
const char* to_string(ZeroImpl v) { return name_of(v, kZeroImplNames); }
const char* to_string(CpCommType v) { return name_of(v, kCpCommNames); }
const char* to_string(TpBackwardComm v) { return name_of(v, kTpBackwardCommNames); }
const char* to_string(MoeDispatcher v) { return name_of(v, kMoeDispatcherNames); }
const char* to_string(RecomputeMethod v) { return name_of(v, kRecomputeMethodNames); }
const char* to_string(Fp8Recipe v) { return name_of(v, kFp8RecipeNames); }
const char* to_string(OffloadModule v) { return name_of(v, kOffloadModuleNames); }

const char* to_string(RecomputeModule v) { return name_of(v, kRecomputeModuleNames); }

bool TrainingSpec::recomputes(RecomputeModule m) const {
  if (recompute != Recompute::Selective) return false;
  if (recompute_modules.empty()) return m == RecomputeModule::CoreAttn;
  return std::find(recompute_modules.begin(), recompute_modules.end(), m) != recompute_modules.end();
}

bool TrainingSpec::offloads(OffloadModule m) const {
  return std::find(offload_modules.begin(), offload_modules.end(), m) != offload_modules.end();
}

sim::RankLayout rank_layout(const WorkloadSpec& spec) {
  const ParallelSpec& p = spec.parallel;
  return sim::RankLayout(p.tp, p.cp, p.dp, p.pp, p.ep, p.etp, p.rank_order);
}

}  // namespace clustersim::workloads
