#include "workloads/job_checks.hpp"

#include <vector>

#include "workloads/stage_layout.hpp"
#include "workloads/schedule.hpp"

namespace clustersim::workloads {
namespace {

std::string str(long long v) { return std::to_string(v); }

// The op programs hold every op of every microbatch of every layer (docs/engine.md, "Speed"), so
// their memory grows with microbatches x layers: about 13 KB per layer pass measured for a
// 16-GPU job (2026-12-01: 10,000 microbatches of a 4-layer TP2 PP2 job peaked at 540 MB). This
// many passes would need over 13 GiB; a step beyond it is refused rather than left to run out
// of memory. Real jobs stay far below (Llama 3 405B on 16,384 GPUs: 16 x 128).
constexpr long long kMaxLayerPasses = 1LL << 20;

using Found = std::optional<SpecViolation>;

Found par(const std::string& key, const std::string& reason) {
  return SpecViolation{"parallelism", key, reason};
}
Found train(const std::string& key, const std::string& reason) {
  return SpecViolation{"training", key, reason};
}

Found not_divisible(const std::string& key, const std::string& what, long long value,
                    const std::string& by_name, long long by) {
  if (value % by == 0) return std::nullopt;
  return par(key, what + " (" + str(value) + ") is not divisible by " + by_name + " (" + str(by) + ")");
}

// Megatron divides heads, query groups and MLP widths by tp (megatron.core.utils.divide), and
// expert MLP widths by the expert tensor parallel size.
Found check_tensor_parallel(const WorkloadSpec& w) {
  const ModelSpec& m = w.model;
  const ParallelSpec& p = w.parallel;
  if (auto v = not_divisible("tp", "model.heads", m.heads, "tp", p.tp)) return v;
  if (auto v = not_divisible("tp", "model.kv_heads", m.kv_heads, "tp", p.tp)) return v;
  const bool dense_mlp = m.experts == 0 || m.first_dense_layers > 0 || m.moe_layer_interval > 1;
  if (dense_mlp) {
    if (auto v = not_divisible("tp", "model.ffn", m.ffn, "tp", p.tp)) return v;
  }
  if (m.shared_expert_ffn > 0) {
    if (auto v = not_divisible("tp", "model.shared_expert_ffn", m.shared_expert_ffn, "tp", p.tp)) return v;
  }
  if (p.tp_backward_comm == TpBackwardComm::Blocking &&
      (m.attention == AttentionKind::Mla || m.experts > 0)) {
    return par("tp_backward_comm", "blocking is modelled for dense GQA/MHA models only (MLA and MoE "
                                   "layers keep Megatron-core's overlapped backward)");
  }
  if (p.tp_comm_overlap && !(p.sequence_parallel && p.tp > 1)) {
    // Megatron-LM validate_args: TP communication overlap needs sequence parallelism.
    return par("tp_comm_overlap", "needs tp > 1 and sequence_parallel: true (Transformer Engine "
                                  "overlaps the sequence-parallel all-gathers and reduce-scatters)");
  }
  return std::nullopt;
}

// Megatron-core's flex dispatcher (MoEFlexTokenDispatcher): a TP x EP group of more than one
// rank, no shared-expert overlap (set_shared_experts raises NotImplementedError); expert TP
// inside DeepEP's exchange is not modelled here.
Found check_deepep(const WorkloadSpec& w) {
  const ParallelSpec& p = w.parallel;
  const char* key = "moe_token_dispatcher";
  if (w.model.experts == 0) return par(key, "deepep needs a MoE model (model.experts)");
  if (p.ep < 2) return par(key, "deepep needs ep > 1 (the flex dispatcher exchanges over TP x EP)");
  if (p.etp != 1) {
    return par(key, "deepep is modelled with etp: 1 only (expert tensor parallelism inside "
                    "DeepEP's exchange is not)");
  }
  if (p.moe_shared_expert_overlap) {
    return par(key, "deepep cannot run with moe_shared_expert_overlap (Megatron-core's flex "
                    "dispatcher does not support it)");
  }
  return std::nullopt;
}

// Megatron-core's combined 1F1B (docs/user-guide/features/moe_a2a_overlap.md, "Requirements";
// megatron/training/arguments.py): expert parallelism, the interleaved schedule under a
// pipeline, no shared-expert overlap, at most one MTP layer, and no full recompute under
// delayed-scaling FP8 (the replay would update the amax history twice). Megatron-FSDP's PP-1
// path is not modelled here, so ZeRO-3 is refused.
Found check_ep_overlap(const WorkloadSpec& w) {
  const ParallelSpec& p = w.parallel;
  const TrainingSpec& t = w.training;
  const char* key = "overlap_moe_expert_parallel_comm";
  if (w.model.experts == 0 || p.ep < 2) {
    return par(key, "needs a MoE model with ep > 1 (it overlaps the expert-parallel exchanges)");
  }
  if (p.pp > 1 && !schedule_traits(p.schedule).model_chunks) {
    return par(key, "with pp > 1 needs the interleaved schedule (vp >= 2): Megatron-core extends "
                    "it, not 1f1b, to pair forwards and backwards");
  }
  if (p.moe_shared_expert_overlap) {
    return par(key, "cannot run with moe_shared_expert_overlap (Megatron-core requires it off)");
  }
  if (w.model.mtp_layers > 1) {
    return par(key, "supports at most one MTP layer (model.mtp_layers)");
  }
  if (p.zero_stage == 3) {
    return par(key, "is not modelled with zero_stage 3 (Megatron-FSDP's combined schedule)");
  }
  if (t.recompute == Recompute::Full && t.precision == Precision::FP8 &&
      t.fp8_recipe == Fp8Recipe::Delayed) {
    return train("recompute", "full recompute under overlap_moe_expert_parallel_comm needs a "
                              "current-scaling FP8 recipe (fp8_recipe: tensorwise or blockwise): "
                              "the replay would update delayed scaling's amax history twice");
  }
  return std::nullopt;
}

// Megatron-core: num_moe_experts % expert_model_parallel_size == 0; expert and tensor
// parallelism together need sequence parallelism (arguments.py); ep and etp carve tp*cp*dp.
Found check_experts(const WorkloadSpec& w) {
  const ModelSpec& m = w.model;
  const ParallelSpec& p = w.parallel;
  const TrainingSpec& t = w.training;
  if (m.experts == 0) {
    if (p.ep > 1) return par("ep", "expert parallelism needs a MoE model (model.experts)");
    if (p.etp != p.tp && p.etp != 1) return par("etp", "expert tensor parallelism needs a MoE model");
    if (t.moe_imbalance != 1.0) return train("moe_imbalance", "needs a MoE model");
    if (t.moe_capacity_factor > 0.0) return train("moe_capacity_factor", "needs a MoE model");
    if (t.moe_permute_fusion) return train("moe_permute_fusion", "needs a MoE model");
    if (t.moe_router_fp32) return train("moe_router_dtype", "needs a MoE model");
  }
  if (t.moe_pad_to_capacity && p.moe_token_dispatcher == MoeDispatcher::DeepEp) {
    return train("moe_pad_expert_input_to_capacity", "not modelled with DeepEP's token exchange "
                                                     "(the all-to-all dispatcher's drop_and_pad only)");
  }
  if (p.moe_shared_expert_overlap && m.shared_expert_ffn == 0) {
    // Megatron-core hands the shared experts to the token dispatcher only when there are some
    // (MoELayer: use_shared_expert and shared_expert_overlap).
    return par("moe_shared_expert_overlap", "needs a MoE model with shared experts "
                                            "(model.shared_expert_ffn)");
  }
  if (p.moe_token_dispatcher == MoeDispatcher::DeepEp) {
    if (auto v = check_deepep(w)) return v;
  }
  if (p.overlap_moe_expert_parallel_comm) {
    if (auto v = check_ep_overlap(w)) return v;
  }
  if (m.experts == 0) return std::nullopt;
  if (auto v = not_divisible("ep", "model.experts", m.experts, "ep", p.ep)) return v;
  if (auto v = not_divisible("etp", "model.expert_ffn", m.expert_ffn, "etp", p.etp)) return v;
  const long long stage_ranks = static_cast<long long>(p.tp) * p.cp * p.dp;
  if (stage_ranks % (static_cast<long long>(p.ep) * p.etp) != 0) {
    return par("ep", "etp*ep = " + str(p.etp) + "*" + str(p.ep) +
                         " does not divide the tp*cp*dp = " + str(stage_ranks) +
                         " ranks of a pipeline stage");
  }
  if (p.tp > 1 && !p.sequence_parallel) {
    // Megatron-LM asserts sequence parallelism for MoE with tensor parallelism (arguments.py);
    // the token dispatchers route each rank's sequence-parallel shard.
    return par("sequence_parallel", "a MoE model with tp > 1 needs sequence_parallel: true");
  }
  if (p.etp > 1 && t.precision == Precision::FP8 && t.fp8_recipe == Fp8Recipe::Tensorwise) {
    // Transformer Engine's GroupedLinear asserts tp_size 1 under Float8CurrentScaling (the TP
    // communication of the experts happens outside it, so it cannot share their scales).
    return train("fp8_recipe", "tensorwise needs etp: 1 for the experts (Transformer Engine's "
                               "GroupedLinear supports no expert TP with current scaling)");
  }
  if (t.moe_imbalance > p.ep) {
    return train("moe_imbalance", "cannot exceed ep (" + str(p.ep) +
                                      "): a rank receives at most every token of its EP group");
  }
  return std::nullopt;
}

// ZB-H1 as the authors' patch of Megatron's 1F1B runs it (workloads/schedule.cpp): their
// WeightGradStore defers the weight gradients of Megatron's own linear layers and grouped GEMMs.
Found check_zero_bubble(const WorkloadSpec& w) {
  const ParallelSpec& p = w.parallel;
  if (!schedule_traits(p.schedule).defers_weight_grads) return std::nullopt;
  if (p.tp_comm_overlap) {
    return par("tp_comm_overlap", "is not modelled with schedule zb_h1: Transformer Engine's userbuffer "
                                  "overlap pairs each weight-gradient GEMM with a communication of "
                                  "the backward that a deferred W no longer runs beside");
  }
  if (!w.training.offload_modules.empty()) {
    return train("offload_modules", "activation offloading (Megatron-core's manager) is not modelled "
                                    "with schedule zb_h1");
  }
  if (p.zero_stage >= 2) {
    return par("zero_stage", "schedule zb_h1 runs Megatron's distributed optimizer: use zero_stage "
                             "0 or 1 (gradients reduced once per step, after the last W)");
  }
  if (p.optimizer_offload == OptimizerOffload::Cpu) {
    return par("optimizer_offload", "cpu is DeepSpeed's ZeRO-Offload; schedule zb_h1 is a Megatron "
                                    "schedule");
  }
  if (p.overlap_moe_expert_parallel_comm) {
    return par("overlap_moe_expert_parallel_comm", "Megatron-core's combined 1F1B is its own "
                                                   "schedule; it does not combine with zb_h1");
  }
  return std::nullopt;
}

Found check_pipeline(const WorkloadSpec& w) {
  const ParallelSpec& p = w.parallel;
  // A layout states vp through its number of virtual stages.
  const std::string vp_key = p.pipeline_layout.empty() ? "vp" : "pipeline_layout";
  if (auto v = check_zero_bubble(w)) return v;
  const bool chunks = schedule_traits(p.schedule).model_chunks;
  if (chunks && p.vp < 2) {
    return par("schedule", "the interleaved schedule needs vp >= 2 model chunks per stage");
  }
  if (p.vp > 1 && !chunks) {
    return par(vp_key, "vp > 1 runs Megatron's interleaved schedule; schedule '" + p.schedule +
                         "' has one model chunk per stage");
  }
  if (p.vp > 1 && p.pp < 2) return par(vp_key, "virtual pipeline stages need pp >= 2");
  const bool uneven = p.first_stage_layers > 0 || p.last_stage_layers > 0;
  if (uneven && p.pp < 2) {
    return par("num_layers_in_first_pipeline_stage", "uneven stages need pp >= 2");
  }
  if (uneven && (p.account_for_embedding || p.account_for_loss)) {
    // Megatron-core asserts these two ways of shaping the split are exclusive.
    return par("num_layers_in_first_pipeline_stage",
               "cannot be combined with account_for_embedding/loss_in_pipeline_split");
  }
  std::string error;
  if (virtual_stage_layers(w.model, p, &error).empty()) {
    const std::string key = !p.pipeline_layout.empty()  ? "pipeline_layout"
                            : p.first_stage_layers > 0 ? "num_layers_in_first_pipeline_stage"
                            : p.last_stage_layers > 0 ? "num_layers_in_last_pipeline_stage"
                                                      : "pp";
    return par(key, error);
  }
  if (p.vp > 1 && w.num_microbatches() % p.pp != 0) {
    // Megatron forward_backward_pipelining_with_interleaving.
    return train("global_batch_size", "the interleaved schedule needs the number of microbatches (" +
                                          str(w.num_microbatches()) + ") to be divisible by pp (" +
                                          str(p.pp) + ")");
  }
  return std::nullopt;
}

Found check_data_parallel(const WorkloadSpec& w) {
  const ParallelSpec& p = w.parallel;
  if (p.zero_stage == 3 && p.pp > 1) {
    // DeepSpeed's PipelineEngine rejects ZeRO-2/3 with pipelining and Megatron's FSDP has no
    // pipeline support; per-layer re-gathering would repeat for every microbatch of every stage.
    // ZeRO-2 with pipelining is accepted: Llama 3 (arXiv 2407.21783, Sec. 3.3.2) shards
    // gradients and optimizer states but keeps parameters after the forward.
    return par("zero_stage", "ZeRO-3 / FSDP with pipeline parallelism (pp > 1) is not supported "
                             "(use zero_stage 1 or 2)");
  }
  if (p.zero_stage == 3 && w.model.mtp_layers > 0) {
    // Multi-token prediction is a Megatron-core module; ZeRO-3 here is DeepSpeed's or FSDP2's.
    return par("zero_stage", "ZeRO-3 / FSDP (DeepSpeed, PyTorch) has no multi-token prediction "
                             "(model.mtp_layers is Megatron-core's): use zero_stage 0-2");
  }
  if (p.optimizer_offload == OptimizerOffload::Cpu && p.zero_stage == 0) {
    return par("optimizer_offload", "CPU optimizer offload needs zero_stage >= 1 (a sharded "
                                    "optimizer, as DeepSpeed ZeRO-Offload and Megatron's "
                                    "optimizer_cpu_offload use)");
  }
  if (p.optimizer_offload == OptimizerOffload::Cpu && p.zero_impl == ZeroImpl::Fsdp2) {
    return par("optimizer_offload", "optimizer_offload: cpu is DeepSpeed's ZeRO-Offload; FSDP2's "
                                    "CPUOffloadPolicy (parameters and gradients on the host) is "
                                    "not modelled");
  }
  return std::nullopt;
}

// FlashAttention-2 has BF16/FP16 kernels with one head dimension for q, k and v (flash-attn 2,
// flash_api.cpp; PyTorch's flash backend alike): no FP8 attention and no MLA (192/128).
Found check_attention_backend(const WorkloadSpec& w) {
  const TrainingSpec& t = w.training;
  if (t.attention_backend != sim::AttentionKernel::Flash2) return std::nullopt;
  if (t.fp8_attention) {
    return train("attention_backend", "flash2 has no FP8 kernels: fp8_attention needs cudnn");
  }
  if (w.model.head_dim != w.model.value_head_dim()) {
    return train("attention_backend",
                 "flash2 needs one head dimension for queries, keys and values; the model's are " +
                     str(w.model.head_dim) + " and " + str(w.model.value_head_dim()) +
                     " (MLA): use cudnn");
  }
  return std::nullopt;
}

// cp_comm_type a2a (Transformer Engine's AttnFuncWithCPAndQKVOA2A) splits the rank's heads over
// the CP group: TE asserts that the query and key-value heads divide by cp.
Found check_cp_a2a(const WorkloadSpec& w) {
  const ParallelSpec& p = w.parallel;
  if (p.cp_comm_type != CpCommType::A2a || p.cp == 1) return std::nullopt;
  const ModelSpec& m = w.model;
  if (m.attention == AttentionKind::Mla) {
    return par("cp_comm_type", "a2a is not modelled with MLA attention (use p2p or all_gather)");
  }
  if (w.training.fp8_attention) {
    return par("cp_comm_type", "a2a is not modelled with fp8_attention (use p2p or all_gather)");
  }
  const std::int64_t heads = m.heads / p.tp, kv = m.kv_heads / p.tp;
  if (heads % p.cp != 0 || kv % p.cp != 0) {
    return par("cp_comm_type", "a2a splits each rank's heads over cp: heads/tp (" + str(heads) +
                                   ") and kv_heads/tp (" + str(kv) + ") must be divisible by cp (" +
                                   str(p.cp) + ")");
  }
  return std::nullopt;
}

Found check_sequence(const WorkloadSpec& w) {
  const ModelSpec& m = w.model;
  const ParallelSpec& p = w.parallel;
  const TrainingSpec& t = w.training;
  if (p.cp > 1 && t.seq_length % (2 * p.cp) != 0) {
    // Load-balanced causal context parallelism splits each sequence into 2*cp chunks
    // (Megatron get_batch_on_this_cp_rank, Transformer Engine).
    return train("seq_length", "seq_length (" + str(t.seq_length) + ") is not divisible by 2*cp = " +
                                   str(2 * p.cp) + " (load-balanced causal chunks)");
  }
  if (p.sequence_parallel && p.tp > 1 && (t.seq_length / p.cp) % p.tp != 0) {
    return train("seq_length", "seq_length / cp (" + str(t.seq_length / p.cp) +
                                   ") is not divisible by tp (" + str(p.tp) +
                                   ") with sequence parallelism");
  }
  if (m.position == PositionKind::Learned && t.seq_length > m.max_position_embeddings) {
    return train("seq_length", "seq_length " + str(t.seq_length) +
                                   " exceeds the model's learned position table (" +
                                   str(m.max_position_embeddings) + " positions)");
  }
  if (t.fp8_attention && t.precision != Precision::FP8) {
    return train("fp8_attention", "needs precision: fp8");
  }
  if (w.parallel.fp8_param_gather && t.precision != Precision::FP8) {
    return par("fp8_param_gather", "needs precision: fp8 (FP8 parameters)");
  }
  return check_attention_backend(w);
}

// The global batch: whole microbatches per data-parallel rank, and a step small enough to play.
Found check_batch(const WorkloadSpec& w) {
  const ModelSpec& m = w.model;
  const ParallelSpec& p = w.parallel;
  const TrainingSpec& t = w.training;
  const long long per_step = static_cast<long long>(p.dp) * t.micro_batch_size;
  if (t.global_batch_size % per_step != 0) {
    return train("global_batch_size", "global_batch_size (" + str(t.global_batch_size) +
                                          ") is not divisible by dp*micro_batch_size = " + str(p.dp) +
                                          "*" + str(t.micro_batch_size) + " = " + str(per_step));
  }
  const long long microbatches = t.global_batch_size / per_step;
  const long long passes = microbatches * (m.trained_layers() + 2);  // + embedding and output layer
  if (passes > kMaxLayerPasses) {
    return train("global_batch_size",
                 str(microbatches) + " microbatches per step x (" + str(m.trained_layers()) +
                     " layers + embedding and head) = " + str(passes) +
                     " layer passes; the simulator generates each one (with --microbatches auto "
                     "too, which counts the step's FLOPs and power state on the whole program) "
                     "and above " + str(kMaxLayerPasses) + " its programs would need more than "
                     "13 GiB: simulate fewer microbatches (once the pipeline is full, the step "
                     "grows linearly with them)");
  }
  return std::nullopt;
}

// Megatron-core's fine-grained activation offloading, as modelled: Megatron's TE layers without
// recomputation, the per-microbatch schedules, and modules the model has.
Found check_activation_offload(const WorkloadSpec& w) {
  const TrainingSpec& t = w.training;
  const ParallelSpec& p = w.parallel;
  if (t.offload_modules.empty()) return std::nullopt;
  const char* key = "offload_modules";
  if (t.recompute != Recompute::None) {
    return train(key, "is modelled without recompute (recompute: none): what a recomputed module "
                      "saves under offloading is not modelled");
  }
  if (t.elementwise == Elementwise::Eager) {
    return train(key, "is Megatron-core's; elementwise: eager is the Hugging Face family");
  }
  if (p.zero_stage == 3 || p.optimizer_offload == OptimizerOffload::Cpu) {
    return train(key, "is not modelled with zero_stage 3 or optimizer_offload: cpu");
  }
  if (t.offloads(OffloadModule::QkvLinear) && w.model.attention == AttentionKind::Mla) {
    return train(key, "qkv_linear is not modelled for MLA (its down and up projections)");
  }
  if (t.offloads(OffloadModule::CoreAttn) && p.cp > 1) {
    return train(key, "core_attn is not modelled with context parallelism (cp > 1)");
  }
  const bool moe_module = t.offloads(OffloadModule::MlpNorm) || t.offloads(OffloadModule::ExpertFc1) ||
                          t.offloads(OffloadModule::MoeAct);
  if (moe_module && w.model.experts == 0) {
    return train(key, "mlp_norm, expert_fc1 and moe_act offload MoE layers' tensors; the model has "
                      "no MoE layers");
  }
  return std::nullopt;
}

// Megatron-core's recompute_modules, where the module exists (TransformerLayer and MoELayer
// set a module's recompute only when it is not an IdentityOp or absent; here naming one the
// model lacks is an error, not a silent no-op).
Found check_recompute_modules(const WorkloadSpec& w) {
  const TrainingSpec& t = w.training;
  const ModelSpec& m = w.model;
  if (t.recompute_modules.empty()) return std::nullopt;
  const char* key = "recompute_modules";
  if (t.elementwise == Elementwise::Eager) {
    return train(key, "are Megatron-core's; elementwise: eager is the Hugging Face family");
  }
  bool dense_layer = false;
  for (std::int64_t l = 0; l < m.layers; ++l) dense_layer = dense_layer || !m.is_moe_layer(l);
  if (t.recomputes(RecomputeModule::Mlp) && !dense_layer) {
    return train(key, "mlp recomputes dense MLPs; every layer of the model is a MoE layer (use moe)");
  }
  const bool moe = t.recomputes(RecomputeModule::Moe) || t.recomputes(RecomputeModule::MoeAct) ||
                   t.recomputes(RecomputeModule::SharedExperts);
  if (moe && m.experts == 0) return train(key, "moe, moe_act and shared_experts need a MoE model");
  if (t.recomputes(RecomputeModule::SharedExperts) && m.shared_expert_ffn == 0) {
    return train(key, "shared_experts: the model has no shared experts");
  }
  if (t.recomputes(RecomputeModule::SharedExperts) && w.parallel.moe_shared_expert_overlap) {
    return train(key, "shared_experts cannot be recomputed with moe_shared_expert_overlap (Megatron-core's rule)");
  }
  if (t.recomputes(RecomputeModule::Moe) && w.parallel.overlap_moe_expert_parallel_comm) {
    return train(key, "moe with overlap_moe_expert_parallel_comm is not modelled");
  }
  if (t.recomputes(RecomputeModule::MlaUpProj) && m.attention != AttentionKind::Mla) {
    return train(key, "mla_up_proj needs MLA attention");
  }
  if (t.recomputes(RecomputeModule::MlaUpProj) && t.fp8_attention) {
    return train(key, "mla_up_proj with fp8_attention is not modelled (what FP8 attention keeps of "
                      "the discarded q, k, v)");
  }
  const bool discards = t.recomputes(RecomputeModule::MoeAct) || t.recomputes(RecomputeModule::Layernorm);
  if (discards && t.precision == Precision::FP8 && t.fp8_recipe == Fp8Recipe::Delayed) {
    // Megatron-core TransformerConfig.__post_init__.
    return train(key, "delayed scaling does not support moe_act and layernorm recompute for FP8 "
                      "(Megatron-core's rule; use fp8_recipe tensorwise or blockwise)");
  }
  if (t.recomputes(RecomputeModule::Layernorm) && m.attention != AttentionKind::Mla && m.experts == 0) {
    return train(key, "layernorm recomputes MLA's input norm and MoE layers' pre-MLP norm; Transformer "
                      "Engine's layer spec fuses this model's norms into its linears (nothing to recompute)");
  }
  return std::nullopt;
}

}  // namespace

std::optional<SpecViolation> find_violation(const WorkloadSpec& spec) {
  if (auto v = check_activation_offload(spec)) return v;
  if (auto v = check_recompute_modules(spec)) return v;
  if (auto v = check_tensor_parallel(spec)) return v;
  if (auto v = check_experts(spec)) return v;
  if (auto v = check_sequence(spec)) return v;
  if (auto v = check_cp_a2a(spec)) return v;
  if (auto v = check_batch(spec)) return v;
  if (auto v = check_pipeline(spec)) return v;
  if (auto v = check_data_parallel(spec)) return v;
  return std::nullopt;
}

void check_workload_spec(const WorkloadSpec& spec, const YamlMap& parallelism,
                         const YamlMap& training) {
  const auto v = find_violation(spec);
  if (!v) return;
  const YamlMap& map = v->section == "training" ? training : parallelism;
  // Keys that are absent in the file (a default was used) are reported at the block.
  YamlMap probe = map;
  throw probe.has(v->key) ? map.error(v->key, v->reason)
                          : SpecError(map.file(), map.line(), map.path() + "." + v->key, v->reason);
}

}  // namespace clustersim::workloads
