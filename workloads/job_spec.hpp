// The workload half of a job file: `model:`, `parallelism:` and `training:` (Megatron/NeMo
// vocabulary). Specs are plain structs; YAML stays inside the loaders. The format, every key,
// its default and its validation are documented in docs/job-spec.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "sim/rank_layout.hpp"
#include "sim/trace.hpp"
#include "sim/yaml_spec.hpp"
#include "workloads/tp_overlap.hpp"

namespace clustersim::workloads {

/// MLP activation: GeLU or squared ReLU (two linears), or SwiGLU (gate and up projections
/// fused in FC1).
enum class Activation : std::uint8_t { Gelu, Swiglu, SquaredRelu };
/// Attention: multi-head / grouped-query (GQA, MQA) or multi-head latent attention (MLA,
/// DeepSeek-V2/V3: low-rank compressed queries and keys/values, decoupled RoPE).
enum class AttentionKind : std::uint8_t { Gqa, Mla };
/// Normalization layer: LayerNorm (weight + bias) or RMSNorm (weight only).
enum class NormKind : std::uint8_t { LayerNorm, RmsNorm };
/// Position encoding: learned absolute embeddings or rotary (RoPE).
enum class PositionKind : std::uint8_t { Learned, Rope };
/// Training precision: BF16 everywhere, or FP8 GEMMs in the transformer layers (Transformer
/// Engine, params and activations still BF16).
enum class Precision : std::uint8_t { BF16, FP8 };
/// Activation recomputation (Megatron --recompute-granularity): none; selective recomputes the
/// core attention (flash attention forward) in the backward; full checkpoints every layer's
/// input and recomputes the whole layer forward before its backward (uniform method, 1 layer).
enum class Recompute : std::uint8_t { None, Selective, Full };
/// Transformer Engine's FP8 recipe (Megatron-LM --fp8-recipe): delayed scaling (per-tensor
/// scales from an amax history, reduced over the amax group), blockwise (Float8BlockScaling:
/// 128x128 weight blocks and 1x128 activation and gradient blocks, scales computed locally, no
/// amax reduction; DeepSeek-V3's fine-grained FP8), or tensorwise (Float8CurrentScaling: one
/// scale per tensor from its own amax, computed before each cast; no amax history).
enum class Fp8Recipe : std::uint8_t { Delayed, Blockwise, Tensorwise };
/// A module whose saved activations Megatron-core's fine-grained activation offloading copies to
/// pinned host memory after its forward and back before its backward (--offload-modules; in
/// the order a layer's forward runs them): linear_qkv (the input norm fused into it by
/// Transformer Engine's layer spec), the core attention, the attention projection, the MoE
/// layers' pre-MLP norm, the routed experts' FC1 and their activation function.
enum class OffloadModule : std::uint8_t { QkvLinear, CoreAttn, AttnProj, MlpNorm, ExpertFc1, MoeAct };
/// A module selective recompute re-runs in the backward (Megatron-core --recompute-modules,
/// TransformerConfig.recompute_modules): the core attention; the routed experts' activation
/// function; the norms that are modules of their own (MLA's input norm, a MoE layer's pre-MLP
/// norm); MLA's up projections and RoPE; a dense layer's MLP (its norm fused in); a MoE layer's
/// whole MoE block; the shared experts. MoeAct, Layernorm and MlaUpProj discard their outputs
/// (CheckpointWithoutOutput), the others keep only their inputs (tensor_parallel.checkpoint).
enum class RecomputeModule : std::uint8_t { CoreAttn, MoeAct, Layernorm, MlaUpProj, Mlp, Moe, SharedExperts };
/// Which layers full recompute checkpoints (Megatron-LM --recompute-method): uniform, every layer
/// of a chunk, in consecutive groups of recompute_num_layers recomputed together; block, only
/// the first recompute_num_layers layers of each chunk, one by one, the rest kept whole.
enum class RecomputeMethod : std::uint8_t { Uniform, Block };
/// Cross-entropy implementation, for memory: unfused (Megatron's vocab-parallel cross entropy
/// keeps the FP32 softmax for the backward), fused (Megatron --cross-entropy-loss-fusion: the
/// BF16 logits are reused for the gradient), chunked (the output GEMM and the loss are computed
/// in sequence chunks, as Liger's fused linear cross entropy does: logits never exist whole),
/// eager (Hugging Face transformers' loss: the logits upcast to FP32, then PyTorch's
/// cross_entropy, whose backward builds dense FP32 gradients beside the saved log-softmax).
enum class CrossEntropy : std::uint8_t { Unfused, Fused, Chunked, Eager };
/// How the layer's element-wise work runs: fused kernels (Megatron-core / Transformer Engine:
/// one kernel per norm, RoPE and activation), or the eager PyTorch modules of Hugging Face
/// transformers' Llama layer (LlamaRMSNorm, apply_rotary_pos_emb, act_fn(gate) * up, and the
/// attention output's transpose to contiguous), each a chain of unfused kernels (measured:
/// calib/probes/eager_ops.py). LayerNorm and GeLU are single PyTorch kernels either way.
enum class Elementwise : std::uint8_t { Fused, Eager };
/// Where the optimizer runs: on the GPU, or on the host CPU (DeepSpeed offload_optimizer,
/// Megatron optimizer_cpu_offload): states in host memory, gradients and parameters over PCIe.
enum class OptimizerOffload : std::uint8_t { None, Cpu };
/// Whose ZeRO-3 the job runs, for what it keeps in memory and how its optimizer steps
/// (docs/memory-model.md): DeepSpeed (BF16 parameter shards, FP32 master and moments in the
/// optimizer) or PyTorch FSDP2 (fully_shard with BF16 compute: the FP32 parameter shards are the
/// master weights, gradient shards are freed by zero_grad(set_to_none=True)).
enum class ZeroImpl : std::uint8_t { DeepSpeed, Fsdp2 };
/// How context parallelism moves keys and values (Megatron --cp-comm-type, Transformer Engine):
/// a ring of point-to-point K/V blocks overlapped with attention (p2p), or an all-gather of the
/// whole K/V before attention and a reduce-scatter of their gradients after it (all_gather, as
/// the Llama 3 paper trained long context).
enum class CpCommType : std::uint8_t { P2p, AllGather, A2a };
/// How the backward of a column-parallel linear reduces its input gradient over TP
/// (tp_backward_comm): overlapped with the weight-gradient GEMM on the TP stream, with sequence
/// parallelism after re-gathering the input shard during the data-gradient GEMM (Megatron-core's
/// LinearWithGradAccumulationAndAsyncCommunication, Transformer Engine's Linear); or blocking on
/// the compute stream after both GEMMs, the gathered input kept from the forward (plain
/// torch.autograd TP regions, and Megatron-LM's --no-async-tensor-model-parallel-allreduce for
/// the all-reduce without sequence parallelism).
enum class TpBackwardComm : std::uint8_t { Overlapped, Blocking };
/// How MoE tokens reach their experts (moe_token_dispatcher): Megatron-core's all-to-all
/// dispatcher (a copy per routed expert over NCCL's all-to-all, then an expert-TP all-gather),
/// or its flex dispatcher with DeepEP (a copy per GPU holding one of the token's experts, once
/// per NVLink domain across the network, forwarded inside it; docs/engine.md "Token exchange").
enum class MoeDispatcher : std::uint8_t { AllToAll, DeepEp };
/// A dense decoder-only transformer. All sizes are counts (no units).
struct ModelSpec {
  std::string name;                     ///< catalog name, or "inline" / "<catalog>+overrides"
  std::int64_t layers = 0;              ///< transformer layers (Megatron num_layers)
  std::int64_t hidden = 0;              ///< model width (hidden_size)
  std::int64_t ffn = 0;                 ///< MLP inner width (ffn_hidden_size)
  std::int64_t heads = 0;               ///< query heads (num_attention_heads)
  std::int64_t kv_heads = 0;            ///< key/value heads (num_query_groups; == heads for MHA)
  std::int64_t head_dim = 0;            ///< per-head width (kv_channels)
  std::int64_t vocab = 0;               ///< tokenizer vocabulary, before Megatron's padding
  Activation activation = Activation::Gelu;
  NormKind norm = NormKind::LayerNorm;
  PositionKind position = PositionKind::Rope;
  std::int64_t max_position_embeddings = 0;  ///< rows of the learned position table; 0 for RoPE
  bool tied_embeddings = false;         ///< output head shares the word-embedding matrix
  bool bias = false;                    ///< linear layers have biases (add_bias_linear)
  // Attention variant. head_dim is the query/key head width (MLA: nope + rope parts).
  AttentionKind attention = AttentionKind::Gqa;
  std::int64_t v_head_dim = 0;          ///< value head width (0: head_dim)
  std::int64_t q_lora_rank = 0;         ///< MLA: query compression rank (0: uncompressed)
  std::int64_t kv_lora_rank = 0;        ///< MLA: key/value compression rank
  std::int64_t rope_head_dim = 0;       ///< MLA: decoupled RoPE part of head_dim (qk_rope_head_dim)
  /// Per-head norms of the queries and keys after the QKV projection, before RoPE (Megatron-core
  /// qk_layernorm with GQA: SelfAttention's q_layernorm / k_layernorm over kv_channels, of the
  /// model's norm kind; Qwen3, OLMo 2). GQA/MHA only: MLA's latent norms are always modelled.
  bool qk_layernorm = false;
  // Mixture of experts (experts == 0: dense model).
  std::int64_t experts = 0;             ///< routed experts per MoE layer (num_moe_experts)
  std::int64_t top_k = 0;               ///< experts each token is routed to (moe_router_topk)
  std::int64_t expert_ffn = 0;          ///< MLP width of one routed expert (moe_ffn_hidden_size)
  std::int64_t shared_expert_ffn = 0;   ///< MLP width of the shared experts (0: none)
  std::int64_t first_dense_layers = 0;  ///< leading dense layers (DeepSeek first_k_dense_replace)
  std::int64_t moe_layer_interval = 1;  ///< every k-th layer after those is MoE (Llama 4: 2)
  /// Node-limited routing (Megatron-core moe_router_num_groups / moe_router_group_topk;
  /// DeepSeek-V3: 8 / 4): the experts form router_groups contiguous groups and each token's
  /// experts lie in router_group_topk of them. 0 / 0: no group limit.
  std::int64_t router_groups = 0;
  std::int64_t router_group_topk = 0;
  /// Multi-token prediction depth (Megatron-core mtp_num_layers; DeepSeek-V3 trained with 1):
  /// after the decoder, on the last pipeline stage, each depth embeds the tokens one further
  /// ahead, projects them with the previous depth's hidden states (eh_proj) and runs one more
  /// transformer layer (global index layers + depth, of the last decoder layer's kind) and the
  /// shared output head and loss.
  std::int64_t mtp_layers = 0;

  /// Value head width: v_head_dim, or head_dim when not set.
  std::int64_t value_head_dim() const { return v_head_dim > 0 ? v_head_dim : head_dim; }
  /// True if transformer layer `layer` (0-based) has a MoE block instead of a dense MLP:
  /// experts > 0, layer >= first_dense_layers and (layer - first_dense_layers + 1) is a multiple
  /// of moe_layer_interval (Hugging Face Llama 4's moe_layers; DeepSeek-V3 with interval 1). An
  /// MTP depth's layer (layer >= layers) is of the last decoder layer's kind, as Megatron-LM
  /// builds it (pretrain_gpt.py: the MTP block spec from get_gpt_decoder_layer_specs(...)[-1]).
  bool is_moe_layer(std::int64_t layer) const {
    if (layer >= layers && layers > 0) layer = layers - 1;
    return experts > 0 && layer >= first_dense_layers &&
           (layer - first_dense_layers + 1) % moe_layer_interval == 0;
  }
  /// Number of MoE layers (of the decoder; the MTP layers not counted).
  std::int64_t moe_layers() const {
    std::int64_t n = 0;
    for (std::int64_t l = 0; l < layers; ++l) n += is_moe_layer(l) ? 1 : 0;
    return n;
  }
  /// Transformer layers a token passes through in training: the decoder's and the MTP layers.
  std::int64_t trained_layers() const { return layers + mtp_layers; }
  /// With pipelining the last stage holds the word embedding too (the tied output layer, or the
  /// MTP's embedding), summed with the first stage's over the embedding group.
  bool embedding_on_last_stage() const { return tied_embeddings || mtp_layers > 0; }
};

/// Default rank order, fastest first: Megatron-core's "tp-cp-ep-dp-pp".
inline constexpr std::array<sim::GroupKind, 5> kDefaultRankOrder = {
    sim::GroupKind::TP, sim::GroupKind::CP, sim::GroupKind::EP, sim::GroupKind::DP,
    sim::GroupKind::PP};

/// How the job is split over GPUs, and the data-parallel optimizer settings.
struct ParallelSpec {
  int tp = 1;                           ///< tensor parallel size
  int pp = 1;                           ///< pipeline parallel size
  int dp = 1;                           ///< data parallel size
  int cp = 1;                           ///< context parallel size (ring attention)
  int vp = 1;                           ///< model chunks per pipeline rank (interleaved schedule)
  int ep = 1;                           ///< expert parallel size
  int etp = 1;                          ///< expert tensor parallel size
  bool sequence_parallel = false;       ///< Megatron sequence parallelism (with tp > 1)
  std::string schedule = "1f1b";        ///< pipeline schedule name (workloads/schedule.hpp)
  std::array<sim::GroupKind, 5> rank_order = kDefaultRankOrder;  ///< fastest-varying first
  int first_stage_layers = 0;           ///< layers of the first stage (0: even split)
  int last_stage_layers = 0;            ///< layers of the last stage (0: even split)
  bool account_for_embedding = false;   ///< the embedding counts as a layer in the split
  bool account_for_loss = false;        ///< the loss (output head) counts as a layer in the split
  /// Megatron-core --pipeline-model-parallel-layout, expanded (expand_pipeline_layout): each
  /// virtual stage's layers, in virtual-stage order; empty: the split above.
  std::vector<std::string> pipeline_layout;
  int zero_stage = 1;                   ///< 0 DDP, 1 distributed optimizer, 2 + sharded
                                        ///< gradients, 3 + sharded parameters (FSDP)
  bool distributed_optimizer = true;    ///< zero_stage >= 1: optimizer state sharded over DP
  ZeroImpl zero_impl = ZeroImpl::DeepSpeed;  ///< ZeRO-3 only (zero_impl; fsdp: true -> fsdp2)
  /// ZeRO-3: parameters are created already sharded (DeepSpeed zero.Init, FSDP, Megatron).
  /// false: the rank's unsharded part of the BF16 model (its TP shard, stage and experts; the
  /// whole model at tp = pp = ep = 1) is built on every GPU and partitioned afterwards
  /// (DeepSpeed's engine moves a module built without zero.Init to the GPU before ZeRO-3
  /// partitions it), so the memory peak is at least that part.
  bool zero_init = true;
  bool overlap_grad_reduce = true;      ///< bucketed gradient reduction overlapped with backward
  bool overlap_param_gather = true;     ///< parameter all-gather overlapped with next forward
  bool grad_reduce_in_fp32 = true;      ///< gradient buffers and their reduction in FP32
  /// Megatron gradient_accumulation_fusion (TE fuse_wgrad_accumulation): weight-gradient GEMMs
  /// add into the main_grad buffer (FP32, or BF16 without grad_reduce_in_fp32) instead of
  /// writing a new tensor. Default: on with zero_stage 0-1 (Megatron's DDP buffers), off with
  /// 2-3 (DeepSpeed and FSDP have no main_grad).
  bool gradient_accumulation_fusion = true;
  /// Megatron use_precision_aware_optimizer (Transformer Engine FusedAdam with the default
  /// store_param_remainders): the FP32 master weight is kept as the 16 bits the BF16 parameter
  /// lacks, so Adam holds 10 B per parameter instead of 12.
  bool precision_aware_optimizer = false;
  /// Megatron fp8_param_gather (NeMo's fp8_params): the layer GEMM weights are FP8 parameters
  /// (Transformer Engine fp8_model_init), so the distributed optimizer all-gathers them as 1 B
  /// per element and no BF16 copy of them is kept. Needs precision fp8 and zero_stage 1.
  bool fp8_param_gather = false;
  bool tp_comm_overlap = false;         ///< TE userbuffers: TP collectives overlapped with GEMMs
  /// Megatron overlap_p2p_comm: pipeline transfers posted asynchronously and waited for by the
  /// pass that consumes them (interleaved schedule only; its default there).
  bool overlap_p2p_comm = false;
  /// How TE runs each overlapped GEMM (tp_comm_overlap_cfg; TE's defaults when absent).
  TpOverlapConfig tp_overlap_cfg = TpOverlapConfig::te_defaults();
  OptimizerOffload optimizer_offload = OptimizerOffload::None;
  /// CPU threads of each rank's offloaded optimizer work (offload_threads). all_cores: PyTorch's
  /// default in every rank, what the deepspeed launcher leaves without --bind_cores_to_rank
  /// (deepspeed/launcher/launch.py sets OMP_NUM_THREADS only with it); per_rank: its share.
  sim::HostThreads offload_threads = sim::HostThreads::AllCores;
  CpCommType cp_comm_type = CpCommType::P2p;  ///< context-parallel K/V exchange
  /// Column-parallel input-gradient reduction (tp_backward_comm; Megatron's overlap by default).
  TpBackwardComm tp_backward_comm = TpBackwardComm::Overlapped;
  /// Megatron-core moe_shared_expert_overlap: the shared experts run beside the MoE layer's
  /// expert-parallel all-to-alls (and expert-TP collectives) instead of after them, with their
  /// own TP collectives in line and no userbuffers overlap. Off: Megatron-LM's default; NeMo's
  /// DeepSeekConfig turns it on. Needs a MoE model with shared experts.
  bool moe_shared_expert_overlap = false;
  /// Megatron-core's token dispatcher: alltoall (moe_token_dispatcher_type alltoall, the
  /// default) or deepep (flex with the DeepEP backend). DeepEP needs ep > 1, etp 1 (expert
  /// tensor parallelism inside its exchange is not modelled) and no shared-expert overlap (the
  /// flex dispatcher raises NotImplementedError for it).
  MoeDispatcher moe_token_dispatcher = MoeDispatcher::AllToAll;
  /// Megatron-core overlap_moe_expert_parallel_comm (combined 1F1B): the forward of one
  /// microbatch and the backward of another run together, layer by layer, each one's expert
  /// dispatch and combine exchanges on their own stream beside the other's compute
  /// (workloads/schedule.hpp pipeline_steps). Needs a MoE model, ep > 1, the interleaved
  /// schedule when pp > 1 and no shared-expert overlap (job_checks.cpp lists the rest).
  bool overlap_moe_expert_parallel_comm = false;
  /// Megatron-core delay_wgrad_compute (Transformer Engine's delayed weight gradients) under the
  /// combined 1F1B: a paired backward launches the dispatch's backward exchange after the routed
  /// experts' data gradients and computes their weight gradients beside it. Needs
  /// overlap_moe_expert_parallel_comm.
  bool delay_wgrad_compute = false;
};

/// Batch and precision.
struct TrainingSpec {
  std::int64_t seq_length = 0;          ///< tokens per sequence
  std::int64_t micro_batch_size = 0;    ///< sequences per microbatch per data-parallel rank
  std::int64_t global_batch_size = 0;   ///< sequences per optimizer step, whole job
  Precision precision = Precision::BF16;
  bool fp8_attention = false;           ///< TE fp8_dot_product_attention (with precision fp8)
  /// The fused-attention library (attention_backend): cuDNN (Transformer Engine's
  /// FusedAttention, PyTorch SDPA on Hopper) or FlashAttention-2.
  sim::AttentionKernel attention_backend = sim::AttentionKernel::Cudnn;
  bool fp8_reduce_amax = true;          ///< TE DelayedScaling.reduce_amax (with precision fp8)
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;  ///< with precision fp8 (Megatron's default: delayed)
  Recompute recompute = Recompute::None;
  /// Full recompute only (Megatron-LM --recompute-method / --recompute-num-layers; NeMo's
  /// defaults uniform and 1): the grouping or the number of layers per chunk checkpointed.
  RecomputeMethod recompute_method = RecomputeMethod::Uniform;
  int recompute_num_layers = 1;
  /// Selective recompute only: the modules re-run, in RecomputeModule order, none twice; empty
  /// means Megatron's default, the core attention alone.
  std::vector<RecomputeModule> recompute_modules;
  /// True if selective recompute re-runs `m` (recompute selective, and `m` listed, or CoreAttn
  /// with no list).
  bool recomputes(RecomputeModule m) const;
  CrossEntropy cross_entropy = CrossEntropy::Unfused;
  Elementwise elementwise = Elementwise::Fused;  ///< fused kernels or eager PyTorch modules
  std::string mfu_convention = "megatron";  ///< "megatron" or "causal" (workloads/flops.hpp)
  double moe_imbalance = 1.0;           ///< tokens the busiest EP rank receives / the average
  double moe_capacity_factor = 0.0;     ///< expert capacity / average load; 0: dropless
  /// Megatron-core moe_pad_expert_input_to_capacity (drop_and_pad): every expert's input padded
  /// to its capacity, so each rank exchanges and computes capacity_factor x the average rows.
  bool moe_pad_to_capacity = false;
  /// Megatron-core moe_permute_fusion: Transformer Engine's fused permute and unpermute; the
  /// fused unpermute reads the token copies once and writes the weighted sum per token.
  bool moe_permute_fusion = false;
  /// Megatron-core moe_router_dtype fp32 (false: None, the input's BF16): the router's forward
  /// GEMM writes FP32 logits and its backward GEMMs run on FP32 operands (TF32 tensor cores).
  bool moe_router_fp32 = false;
  bool expandable_segments = false;     ///< PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
                                        ///< (memory model: less fragmentation)
  /// Megatron-core --fine-grained-activation-offloading --offload-modules: the modules whose
  /// saved activations go to the host (docs/memory-model.md, "Activation offloading"); in
  /// OffloadModule order, none twice; empty: no offloading.
  std::vector<OffloadModule> offload_modules;
  /// True if `m` is offloaded.
  bool offloads(OffloadModule m) const;
};

/// A validated workload: model, parallel layout and training settings.
struct WorkloadSpec {
  ModelSpec model;
  ParallelSpec parallel;
  TrainingSpec training;

  /// GPUs the layout uses: tp * cp * dp * pp.
  int gpus() const { return parallel.tp * parallel.cp * parallel.dp * parallel.pp; }
  /// Ranks that hold the same dense parameters and reduce their gradients: dp * cp.
  int dp_cp() const { return parallel.dp * parallel.cp; }
  /// Ranks that hold the same experts: tp*cp*dp / (etp*ep).
  int edp() const {
    return parallel.tp * parallel.cp * parallel.dp / (parallel.etp * parallel.ep);
  }
  /// Microbatches per step per pipeline: global_batch_size / (dp * micro_batch_size).
  std::int64_t num_microbatches() const {
    return training.global_batch_size / (parallel.dp * training.micro_batch_size);
  }
};

/// Reads `model`, `parallelism` and `training` from the top level of a job file and validates
/// them, cross-field constraints included (tp*cp*dp*pp == gpus, divisibility of heads, layers,
/// experts, sequence and batch; combinations Megatron/NeMo reject; docs/job-spec.md lists all). Marks those three keys known in `root`; the caller reads `cluster` and calls
/// root.finish(). `gpus` is the cluster's GPU count.
/// @throws SpecError located at the offending field (file:line, dotted field, reason).
WorkloadSpec parse_workload_spec(YamlMap& root, int gpus);

/// Element type of the transformer-layer GEMMs (BF16, or FP8 with precision fp8): the dtype
/// whose dense peak is the MFU denominator.
sim::DType compute_dtype(const WorkloadSpec& spec);

/// Whether Transformer Engine reduces FP8 amaxes over Megatron's amax group (tp x cp x dp of a
/// stage): precision fp8 with training.fp8_reduce_amax and a group of more than one rank.
bool fp8_amax_reduced(const WorkloadSpec& spec);

/// Whether Adam keeps the FP32 master weight as the 16-bit remainder beside the BF16 parameter
/// (10 B of states per parameter instead of 12; the step moves 32 B instead of 38):
/// precision_aware_optimizer, unless precision fp8 runs a current-scaling recipe (tensorwise,
/// blockwise) without optimizer offload. Megatron-LM OptimizerConfig.__post_init__,
/// use_precision_aware_optimizer_no_fp8_or_ds_fp8: only then does the distributed optimizer
/// hand Transformer Engine's FusedAdam the master weights; otherwise it keeps its own FP32
/// master shard (shard_fp32_from_float16_groups).
bool optimizer_param_remainders(const WorkloadSpec& spec);

/// Names for reports and traces ("gelu", "rmsnorm", "rope", "fp8", ...).
const char* to_string(Activation v);
const char* to_string(NormKind v);
const char* to_string(PositionKind v);
const char* to_string(Precision v);
const char* to_string(AttentionKind v);
const char* to_string(Recompute v);
const char* to_string(CrossEntropy v);
const char* to_string(OptimizerOffload v);
const char* to_string(ZeroImpl v);
const char* to_string(CpCommType v);
/// "overlapped" or "blocking".
const char* to_string(TpBackwardComm v);
/// "delayed", "blockwise" or "tensorwise".
const char* to_string(Fp8Recipe v);
const char* to_string(OffloadModule v);
const char* to_string(RecomputeModule v);
/// "uniform" or "block".
const char* to_string(RecomputeMethod v);
/// "alltoall" or "deepep".
const char* to_string(MoeDispatcher v);

/// The rank layout of a spec (sizes and order). @throws std::invalid_argument as RankLayout.
sim::RankLayout rank_layout(const WorkloadSpec& spec);

}  // namespace clustersim::workloads
