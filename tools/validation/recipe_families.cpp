#include "tools/validation/recipe_families.hpp"

#include <algorithm>
#include <cctype>

#include "sim/spec_error.hpp"

namespace clustersim::tools::validation {
namespace {

// The parallel layout and batch rule of the NVIDIA DGX Cloud benchmark recipe of each model
// (the recipes S0 reports and DGXC tabulates), used for what a case leaves unstated.
struct DgxcLayout {
  const char* model;
  int tp, pp, cp, vp;
  std::int64_t gbs_per_gpu_num, gbs_per_gpu_den;  // global batch = GPUs * num / den
  const char* cite;
};

constexpr DgxcLayout kDgxcLayouts[] = {
    {"llama3_8b", 1, 1, 2, 1, 16, 1, "DGXC-8B"},
    {"llama3_70b", 4, 4, 2, 5, 2, 1, "DGXC-70B"},
    {"llama3_405b", 8, 9, 2, 7, 252, 576, "DGXC-405B"},
    {"gpt3_175b", 4, 8, 1, 12, 2, 1, "DGXC-GPT3"},
};

// NeMo's userbuffers configurations for H100 (nemo/collections/llm/recipes/tp_overlap_configs/
// userbuffers.py), as the performance scripts pick them per model and precision
// (scripts/performance/llm/pretrain_<model>.py): userbuffers_{bf16,fp8}_h100_h8192_tp4_mbs1_
// seqlen8192 (Llama3-70B), _h16384_tp8_cp2_mbs1_seqlen8192 (405B), _h12288_tp4_mbs1_seqlen2048
// (GPT-3 175B). Ring-exchange roles keep TE's defaults (num_sm 1, no margin) and are not listed.
struct UserbuffersCfg {
  const char* model;
  const char* precision;
  const char* yaml;  // tp_comm_overlap_cfg as a YAML flow mapping
};
constexpr UserbuffersCfg kUserbuffers[] = {
    {"llama3_70b", "bf16",
     "{qkv_dgrad: {num_sm: 4, set_sm_margin: false}, qkv_wgrad: {num_sm: 24, set_sm_margin: false}, "
     "fc1_dgrad: {num_sm: 2, set_sm_margin: false}, fc1_wgrad: {num_sm: 4, set_sm_margin: false}, "
     "proj_fprop: {method: pipeline, num_sm: 24, num_splits: 4, set_sm_margin: true}, "
     "fc2_fprop: {method: pipeline, num_sm: 16, num_splits: 4, set_sm_margin: true}}"},
    {"llama3_70b", "fp8",
     "{qkv_dgrad: {num_sm: 4, set_sm_margin: false}, qkv_wgrad: {num_sm: 24, set_sm_margin: false}, "
     "fc1_dgrad: {num_sm: 2, set_sm_margin: false}, fc1_wgrad: {num_sm: 4, set_sm_margin: false}, "
     "proj_fprop: {method: ring_exchange, num_sm: 1, set_sm_margin: true}, "
     "fc2_fprop: {method: ring_exchange, num_sm: 1, set_sm_margin: true}}"},
    {"llama3_405b", "bf16",
     "{qkv_dgrad: {num_sm: 2, set_sm_margin: false}, qkv_wgrad: {num_sm: 24, set_sm_margin: false}, "
     "fc1_dgrad: {num_sm: 2, set_sm_margin: false}, fc1_wgrad: {num_sm: 2, set_sm_margin: false}, "
     "proj_fprop: {method: pipeline, num_sm: 24, num_splits: 4, set_sm_margin: true}, "
     "fc2_fprop: {method: pipeline, num_sm: 8, num_splits: 4, set_sm_margin: true}}"},
    {"llama3_405b", "fp8",
     "{qkv_dgrad: {num_sm: 2, set_sm_margin: false}, qkv_wgrad: {num_sm: 24, set_sm_margin: false}, "
     "fc1_dgrad: {num_sm: 2, set_sm_margin: false}, fc1_wgrad: {num_sm: 2, set_sm_margin: false}, "
     "proj_fprop: {method: ring_exchange, num_sm: 1, set_sm_margin: true}, "
     "fc2_fprop: {method: ring_exchange, num_sm: 1, set_sm_margin: true}}"},
    {"gpt3_175b", "bf16",
     "{qkv_dgrad: {num_sm: 4, set_sm_margin: false}, qkv_wgrad: {num_sm: 4, set_sm_margin: false}, "
     "fc1_dgrad: {num_sm: 2, set_sm_margin: false}, fc1_wgrad: {num_sm: 4, set_sm_margin: false}, "
     "proj_fprop: {method: pipeline, num_sm: 24, num_splits: 4, set_sm_margin: true}, "
     "fc2_fprop: {method: ring_exchange, num_sm: 1, set_sm_margin: true}}"},
    {"gpt3_175b", "fp8",
     "{qkv_dgrad: {num_sm: 4, set_sm_margin: false}, qkv_wgrad: {num_sm: 4, set_sm_margin: false}, "
     "fc1_dgrad: {num_sm: 2, set_sm_margin: false}, fc1_wgrad: {num_sm: 4, set_sm_margin: false}, "
     "proj_fprop: {method: ring_exchange, num_sm: 1, set_sm_margin: true}, "
     "fc2_fprop: {method: ring_exchange, num_sm: 1, set_sm_margin: true}}"},
};

// Llama 3 paper, Table 4: 16M tokens per batch at every scale (2,048 x 8,192).
constexpr std::int64_t kLlama3TokensPerBatch = std::int64_t{2048} * 8192;

void fill_int(DraftJob& j, const std::string& section, const std::string& key, std::int64_t v,
              const std::string& cite, int line) {
  j.fill(section, key, std::to_string(v), cite, line);
}

bool batch_stated(const ReferenceCase& rc) { return rc.config.gbs || rc.config.grad_accum; }

std::int64_t model_parallel(const DraftJob& j) {
  return j.get_int("parallelism", "tp", 1) * j.get_int("parallelism", "pp", 1) *
         j.get_int("parallelism", "cp", 1);
}

void fill_dgxc_layout(const FamilyInput& in, const DgxcLayout& l, DraftJob& j) {
  const int line = in.rc.line;
  fill_int(j, "parallelism", "tp", l.tp, l.cite, line);
  fill_int(j, "parallelism", "pp", l.pp, l.cite, line);
  if (l.cp > 1) fill_int(j, "parallelism", "cp", l.cp, l.cite, line);
  if (l.vp > 1 && j.get_int("parallelism", "pp", 1) > 1) {
    fill_int(j, "parallelism", "vp", l.vp, l.cite, line);
  }
  if (batch_stated(in.rc)) return;
  const std::int64_t scaled = in.gpus * l.gbs_per_gpu_num;
  if (scaled % l.gbs_per_gpu_den != 0) {
    throw SpecError(in.set.file, line, in.rc.id + ".config.gbs",
                    "unstated, and the recipe rule GPUs*" + std::to_string(l.gbs_per_gpu_num) +
                        "/" + std::to_string(l.gbs_per_gpu_den) + " [" + l.cite +
                        "] is not an integer at " + std::to_string(in.gpus) + " GPUs: state gbs");
  }
  fill_int(j, "training", "global_batch_size", scaled / l.gbs_per_gpu_den, l.cite, line);
}

std::int64_t model_layers(const FamilyInput& in) {
  const ReferenceModel* m = in.set.find_model(in.rc.config.model.value);
  if (m == nullptr) return 0;
  for (const auto& f : m->fields) {
    if (f.key != "layers") continue;
    try {
      return std::stoll(f.value);
    } catch (const std::exception&) {
      return 0;  // the job reader reports the malformed value
    }
  }
  return 0;
}

// NeMo's 405B recipe at PP8 VP8 counts the embedding and the loss as one layer each in the
// pipeline split (126 + 2 = 128 = 2 per chunk); applied wherever layers + 2, and not layers,
// divides evenly into pp * vp chunks.
void fill_pipeline_accounting(const FamilyInput& in, DraftJob& j) {
  const std::int64_t chunks = j.get_int("parallelism", "pp", 1) * j.get_int("parallelism", "vp", 1);
  const std::int64_t layers = model_layers(in);
  if (chunks < 2 || layers == 0 || layers % chunks == 0 || (layers + 2) % chunks != 0) return;
  j.fill("parallelism", "account_for_embedding_in_pipeline_split", "true", "NEMO-405B-SPLIT", in.rc.line);
  j.fill("parallelism", "account_for_loss_in_pipeline_split", "true", "NEMO-405B-SPLIT", in.rc.line);
}

void apply_nemo_dgxc(const FamilyInput& in, DraftJob& j) {
  const int line = in.rc.line;
  j.fill("training", "seq_length", "8192", "DGXC-RECIPES", line);
  j.fill("training", "micro_batch_size", "1", "DGXC-RECIPES", line);
  for (const auto& l : kDgxcLayouts) {
    if (in.rc.config.model.value == l.model) fill_dgxc_layout(in, l, j);
  }
  fill_pipeline_accounting(in, j);
  if (j.get_int("parallelism", "tp", 1) > 1) {
    j.fill("parallelism", "sequence_parallel", "true", "NEMO-PERF", line);
    j.fill("parallelism", "tp_comm_overlap", "true", "NEMO-PERF", line);
    const JobField* prec = j.find("training", "precision");
    for (const auto& ub : kUserbuffers) {
      if (in.rc.config.model.value == ub.model && prec != nullptr && prec->value == ub.precision) {
        j.fill("parallelism", "tp_comm_overlap_cfg", ub.yaml, "NEMO-UB", line);
      }
    }
  }
  j.fill("training", "expandable_segments", "true", "NEMO-PERF-ENV", line);
  j.fill("training", "cross_entropy", "fused", "NEMO-PERF-CE", line);
  const JobField* precision = j.find("training", "precision");
  if (precision != nullptr && precision->value == "fp8") {
    j.fill("parallelism", "grad_reduce_in_fp32", "false", "NEMO-PERF-FP8", line);
    j.fill("parallelism", "fp8_param_gather", "true", "NEMO-FP8-PARAMS", line);
  } else if (precision != nullptr && precision->value == "bf16") {
    j.fill("parallelism", "precision_aware_optimizer", "true", "NEMO-PERF-BF16", line);
  }
  j.fill("training", "attention_backend", "cudnn", "ASSUMED-ATTN", line);
}

void apply_llama3_paper(const FamilyInput& in, DraftJob& j) {
  const int line = in.rc.line;
  j.fill("training", "micro_batch_size", "1", "ASSUMED-MBS1", line);
  const std::int64_t seq = j.get_int("training", "seq_length", 0);
  if (!batch_stated(in.rc) && seq > 0 && kLlama3TokensPerBatch % seq == 0) {
    fill_int(j, "training", "global_batch_size", kLlama3TokensPerBatch / seq, "L3-T4", line);
  }
  if (j.get_int("parallelism", "tp", 1) > 1) {
    j.fill("parallelism", "sequence_parallel", "true", "ASSUMED-SP", line);
  }
  const auto& pipe = in.rc.config.pipeline;
  if (pipe && pipe->value == "interleaved" && j.get_int("parallelism", "pp", 1) == 16) {
    j.fill("parallelism", "vp", "8", "L3-PP", line);
    j.fill("parallelism", "account_for_embedding_in_pipeline_split", "true", "L3-PP", line);
    j.fill("parallelism", "account_for_loss_in_pipeline_split", "true", "L3-PP", line);
  }
  j.fill("parallelism", "zero_stage", "2", "L3-FSDP", line);
  j.fill("parallelism", "grad_reduce_in_fp32", "true", "L3-FP32", line);
  if (j.get_int("parallelism", "cp", 1) > 1) {
    j.fill("parallelism", "cp_comm_type", "all_gather", "L3-CP", line);
  }
  j.fill("training", "attention_backend", "cudnn", "ASSUMED-ATTN", line);
}

void apply_deepspeed_zero(const FamilyInput& in, DraftJob& j) {
  const int line = in.rc.line;
  j.fill("parallelism", "tp", "1", "DS-ZERO", line);
  j.fill("parallelism", "pp", "1", "DS-ZERO", line);
  j.fill("training", "mfu_convention", "causal", "S3-CONV", line);
  j.fill("parallelism", "grad_reduce_in_fp32", "false", "DS-BF16", line);
  j.fill("training", "cross_entropy", "eager", "DS-HF", line);
  j.fill("training", "elementwise", "eager", "DS-HF", line);
  j.fill("training", "attention_backend", "cudnn", "S3-ATTN", line);
  if (batch_stated(in.rc)) return;
  const std::int64_t mbs = j.get_int("training", "micro_batch_size", 0);
  const std::int64_t mp = model_parallel(j);
  if (mbs > 0 && in.gpus % mp == 0) {
    fill_int(j, "training", "global_batch_size", mbs * (in.gpus / mp), "DS-GA", line);
  }
}

void apply_none(const FamilyInput&, DraftJob&) {}

std::string first_word(const std::string& s) {
  const auto end = std::find_if(s.begin(), s.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0 || c == '(' || c == ',';
  });
  return std::string(s.begin(), end);
}

std::string family_names() {
  std::string out;
  for (const auto& f : recipe_families()) out += (out.empty() ? "" : ", ") + f.name;
  return out;
}

}  // namespace

const std::vector<RecipeFamily>& recipe_families() {
  static const std::vector<RecipeFamily> kFamilies = {
      {"nemo_dgxc",
       "NVIDIA DGX Cloud benchmark recipes (NeMo, Megatron-core) on H100: MBS 1, seq 8192, the "
       "recipe's layout and batch rule per model, sequence parallelism and TP comm overlap with tp>1",
       {"S0", "DGXC"},
       apply_nemo_dgxc},
      {"llama3_paper",
       "Llama 3 pre-training as described in arXiv 2407.21783: 16M tokens per batch, interleaved "
       "pipeline of 128 slots, FSDP without resharding (ZeRO-2)",
       {"L3"},
       apply_llama3_paper},
      {"deepspeed_zero",
       "DeepSpeed ZeRO on one node: pure data parallelism, gradient accumulation 1, BF16 "
       "gradient reduction, Hugging Face transformers' eager modules and loss, causal MFU",
       {"S3"},
       apply_deepspeed_zero},
      {"none", "no defaults: the case states every field the job needs", {}, apply_none},
  };
  return kFamilies;
}

const RecipeFamily& family_of(const ReferenceSet& set, const ReferenceCase& rc) {
  if (rc.recipe) {
    for (const auto& f : recipe_families()) {
      if (f.name == rc.recipe->value) return f;
    }
    throw SpecError(set.file, rc.recipe->line, rc.id + ".recipe",
                    "unknown recipe family '" + rc.recipe->value + "' (known: " +
                        family_names() + ")");
  }
  const std::string tag = first_word(rc.source);
  for (const auto& f : recipe_families()) {
    if (std::find(f.sources.begin(), f.sources.end(), tag) != f.sources.end()) return f;
  }
  throw SpecError(set.file, rc.line, rc.id + ".source",
                  "source '" + rc.source + "' names no recipe family (sources known: S0, DGXC, "
                  "L3, S3); add recipe: one of " + family_names());
}

const std::vector<Citation>& citations() {
  static const std::vector<Citation> kCitations = {
      {"GPU-CATALOG", "platforms/catalog: the HGX platform of the GPU the source names (8 GPUs "
                      "and 8 x 400 Gb/s NICs per node, rail-optimized fat-tree; S0's EOS "
                      "cluster: 8 x 400G InfiniBand per H100 node)"},
      {"MODEL-CATALOG", "workloads/models/NAME.yaml: norm, position, bias and tied embeddings "
                        "of the catalog model of the same name; the entry's fields override it"},
      {"DGXC-RECIPES", "NVIDIA/dgxc-benchmarking llama3.1 README (v25.04) tables: MBS 1, "
                       "SeqLen 8192 for every H100 configuration (measured.yaml: seq 8192 "
                       "unless noted, MBS 1)"},
      {"DGXC-8B", "dgxc-benchmarking Llama 3.1 8B (v25.04, case dgxc_llama3_8b): TP1 PP1 CP2, "
                  "GBS 16 x GPUs"},
      {"DGXC-70B", "dgxc-benchmarking llama3.1/README_70b.md (24.09): TP4 PP4 CP2 VP5 MBS1, "
                   "GBS = nodes x 16 = 2 x GPUs"},
      {"DGXC-405B", "dgxc-benchmarking llama3.1/README_405b.md (24.09), full-model scales "
                    "576/1152/2304 H100: TP8 PP9 CP2 VP7 MBS1, GBS = GPUs x 252 / 576"},
      {"DGXC-GPT3", "dgxc-benchmarking GPT-3 175B (24.11, case dgxc_gpt3_175b): TP4 PP8 VP12 "
                    "MBS1, seq 2048, GBS 2 x GPUs"},
      {"NEMO-PERF", "NeMo 2.0 nemo/collections/llm/recipes/llama3_70b.py: trainer("
                    "sequence_parallelism=True); pretrain_recipe_performance() adds "
                    "MegatronCommOverlapCallback(tp_comm_overlap=True); gpt3_175b.py likewise "
                    "(userbuffers_*_h100_h12288_tp4_mbs1_seqlen2048)"},
      {"NEMO-PERF-FP8", "NeMo scripts/performance/llm/pretrain_llama3_70b.py and "
                        "pretrain_gpt3_175b.py (the DGX Cloud benchmark scripts): with compute "
                        "dtype fp8, plugins = bf16_with_fp8_mixed() and "
                        "plugins.grad_reduce_in_fp32 = False (BF16 keeps bf16_mixed()'s FP32 "
                        "gradient reduction)"},
      {"NEMO-FP8-PARAMS", "NeMo nemo/collections/llm/recipes/precision/mixed_precision.py, "
                          "bf16_with_fp8_mixed(): fp8_params = True (later releases: "
                          "fp8_param_gather = True), i.e. Megatron's fp8_param_gather: the layer "
                          "GEMM weights are Transformer Engine FP8 parameters, gathered by the "
                          "distributed optimizer as FP8"},
      {"NEMO-PERF-ENV", "NeMo scripts/performance/helpers.py, slurm_executor(): every benchmark "
                        "job runs with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (and "
                        "NCCL_NVLS_ENABLE=0)"},
      {"NEMO-PERF-CE", "NeMo GPTConfig (nemo/collections/llm/gpt/model/base.py): "
                       "cross_entropy_loss_fusion=True; scripts/performance/helpers.py, "
                       "set_primary_perf_configs(): cross_entropy_fusion_impl = \"te\" "
                       "(Transformer Engine's fused cross entropy keeps only the BF16 logits)"},
      {"NEMO-PERF-BF16", "NeMo scripts/performance/helpers.py, set_primary_perf_configs(): with "
                         "compute dtype bf16, optim.config.use_precision_aware_optimizer = True "
                         "(Megatron OptimizerConfig.store_param_remainders defaults to True)"},
      {"NEMO-UB", "NeMo nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py, the "
                  "H100 configuration the performance scripts (scripts/performance/llm/"
                  "pretrain_{llama3_70b,llama3_405b,gpt3_175b}.py) pass as tp_comm_overlap_cfg "
                  "for the model and precision: userbuffers_{bf16,fp8}_h100_h8192_tp4_mbs1_"
                  "seqlen8192, _h16384_tp8_cp2_mbs1_seqlen8192, _h12288_tp4_mbs1_seqlen2048"},
      {"NEMO-405B-SPLIT", "NVIDIA/cloudai src/cloudai/workloads/nemo_run/cloudai_nemorun.py, "
                          "cloudai_llama3_405b_recipe (NeMo; TP8 PP8 CP2 VP8): "
                          "account_for_embedding_in_pipeline_split and "
                          "account_for_loss_in_pipeline_split = True"},
      {"L3-T4", "Llama 3 Herd of Models (arXiv 2407.21783), Table 4: 16M tokens per batch"},
      {"L3-PP", "ibid. Sec. 3.3.2: one layer removed from the first and the last stage, the "
                "first chunk holding only the embedding and the last only the output and loss: "
                "126 layers + 2 = 128 slots over pp 16 x vp 8 chunks (Megatron "
                "account_for_embedding/loss_in_pipeline_split)"},
      {"L3-FSDP", "ibid. Sec. 3.3.2: FSDP shards optimizer states and gradients but does not "
                  "reshard weights after the forward: ZeRO stage 2 (parameters gathered once "
                  "per step)"},
      {"L3-FP32", "ibid. Sec. 3.3.2 (numerical stability): FP32 gradient accumulation over the "
                  "micro-batches and FP32 reduce-scatters across the data-parallel workers"},
      {"L3-CP", "ibid. Sec. 3.3.2: all-gather based context parallelism (K and V all-gathered, "
                "then attention of the local Q chunks; not the P2P ring), chosen for GQA's small "
                "K/V and for document masks"},
      {"ASSUMED-MBS1", "not stated by the source: micro batch 1, as every recipe of the "
                       "reference set that states it"},
      {"ASSUMED-SP", "not stated by the source: Megatron-style TP with sequence parallelism, as "
                     "every TP recipe of the reference set"},
      {"ASSUMED-ATTN", "not stated by the source: cuDNN's fused attention (Transformer Engine's "
                       "FusedAttention; PyTorch's SDPA picks it on Hopper), the faster of the two "
                       "measured libraries (docs/cost-model.md, Attention kernels)"},
      {"S3-ATTN", "the S3 scripts run FlashAttention-3 on H200 and FlashAttention-4 on B200, "
                  "neither installed on the GPU machine nor measured: cuDNN's fused attention, "
                  "the measured library nearest their speed (FlashAttention-2 is 1.7-2.1x "
                  "slower on H200; docs/validation.md, S3)"},
      {"DS-ZERO", "DeepSpeed ZeRO (Rajbhandari et al. 2020, arXiv 1910.02054): data parallelism "
                  "only, each GPU runs whole layers (tp = pp = 1)"},
      {"DS-HF", "DeepSpeed trains Hugging Face transformers models (Bekman et al. 2025, ALST, "
                "arXiv 2506.13996; the S3 scripts load AutoModelForCausalLM); transformers' Llama "
                "runs RMSNorm, RoPE and SwiGLU as eager PyTorch modules and its loss upcasts the "
                "logits to FP32 (training.elementwise: eager, cross_entropy: eager) unless a "
                "kernel library such as Liger-Kernel patches them, which a case then states (S3's "
                "sweep does: its benchmark.py runs with USE_LIGER=1)"},
      {"DS-GA", "DeepSpeed configuration docs: gradient_accumulation_steps defaults to 1, so "
                "global batch = micro batch x GPUs"},
      {"DS-BF16", "DeepSpeed runtime/config.py: communication_data_type defaults to None, i.e. "
                  "the training dtype, so BF16 runs reduce gradients in BF16 (as "
                  "docs/memory-model.md's S3 job)"},
      {"S3-CONV", "measured.yaml, case s3_llama31_8b_seq_sweep: model FLOPs count causal "
                  "attention (6*s^2*d*L), recompute excluded"},
  };
  return kCitations;
}

std::string platform_for_gpu(const std::string& gpu_name_or_tag) {
  std::string n;
  for (char c : gpu_name_or_tag) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string sxm = "-sxm";
  if (n.size() > sxm.size() && n.compare(n.size() - sxm.size(), sxm.size(), sxm) == 0) {
    n.resize(n.size() - sxm.size());
  }
  static const std::vector<std::pair<std::string, std::string>> kTable = {
      {"h100", "hgx_h100"}, {"h200", "hgx_h200"}, {"b200", "hgx_b200"}, {"gb200", "gb200_nvl72"},
      {"b300", "hgx_b300"}, {"gb300", "gb300_nvl72"}};
  for (const auto& [gpu, platform] : kTable) {
    if (n == gpu) return platform;
  }
  return "";
}

}  // namespace clustersim::tools::validation
