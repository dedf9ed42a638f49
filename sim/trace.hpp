// The per-rank op graph: the contract between workloads/ (which generates it), calib/ (which
// costs its compute ops) and sim/ (which plays it). Documented for users in docs/trace-format.md.
//
// Ranks that run the same op sequence share one Program (in Megatron all ranks of a pipeline
// stage do); a rank's communicators are not stored in ops but resolved through RankLayout, so a
// 16,384-rank job holds a handful of programs, not 16,384 copies.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace clustersim::sim {

/// Element type a kernel computes in. FP32: FP32 operands on the CUDA cores (non-tensor); TF32:
/// FP32 operands on the tensor cores (cuBLAS CUBLAS_COMPUTE_32F_FAST_TF32, which Transformer
/// Engine's general_gemm uses for FP32 inputs).
enum class DType : std::uint8_t { BF16, FP8, FP32, TF32 };

/// Execution streams. Ops of one stream run one after another in program order, as kernels
/// on one CUDA stream do; ops of different streams overlap unless a dependency orders them.
/// CpComm carries the context-parallel ring exchange of K/V blocks (Transformer Engine runs it
/// on a stream of its own, overlapped with the attention compute). AmaxComm carries Transformer
/// Engine's FP8 amax all-reduces, which TE issues on the compute stream and the compute stream
/// waits for (a program makes the next compute op depend on each); a stream of their own lets
/// the identical-replica reduction of the engine mirror them like other data-parallel collectives.
/// EpComm carries a MoE layer's expert-parallel all-to-alls and expert-TP collectives when
/// Megatron-core's moe_shared_expert_overlap runs the shared experts beside them (the
/// dispatcher's collectives stay on the main CUDA stream, the shared experts move to a side
/// stream; here the roles are swapped, which orders the same work the same way).
enum class Stream : std::uint8_t { Compute, TpComm, PpComm, DpComm, CpComm, AmaxComm, EpComm, D2H, H2D };
/// Number of Stream values. D2H and H2D are copy-engine streams (activation offloading): their
/// ops are host copies that run beside compute without taking SMs.
inline constexpr int kStreamCount = 9;

/// Training phase an op belongs to (for breakdowns and the timeline).
enum class Phase : std::uint8_t { Forward, Backward, Optimizer };

/// Communicator kinds; the ranks of each are given by RankLayout::group(). The expert kinds
/// (EP, ETP, EDP) are carved from the same ranks as Megatron-core's expert rank generator does;
/// DPCP is Megatron's data-parallel group with context parallelism (gradients and the
/// distributed optimizer span dp x cp); EMB is the embedding group (first and last pipeline
/// stage, for the tied word-embedding gradient); AMAX is Megatron's amax reduction group with
/// context parallelism (the tp x cp x dp ranks of a pipeline stage, over which Transformer
/// Engine reduces FP8 amaxes: megatron/core/parallel_state.py, get_amax_reduction_group).
enum class GroupKind : std::uint8_t { TP, CP, DP, PP, EP, ETP, EDP, DPCP, EMB, AMAX };
/// Number of GroupKind values (the engine sizes per-communicator tables with it).
inline constexpr int kGroupKindCount = 10;

/// Collective operations: NCCL semantics; TokenExchange, a MoE token dispatch or combine as
/// DeepEP's normal kernels run it (CollectiveSpec::routing; docs/engine.md, "Token exchange");
/// RingShift, each member sending `bytes` to the next member of the group and receiving as
/// much from the previous one as a pair of NCCL point-to-point calls (context parallelism's K/V
/// ring exchange, Transformer Engine's batched isend/irecv).
enum class CollectiveKind : std::uint8_t { AllReduce, AllGather, ReduceScatter, AllToAll, TokenExchange, RingShift };

/// Pipeline neighbour of a rank (RankLayout::pp_peer()).
enum class Peer : std::uint8_t { None, PrevStage, NextStage };

/// Memory-bound kernel families (each has its own measured bandwidth efficiency).
enum class MemKernel : std::uint8_t {
  Elementwise,   ///< residual add, dropout, bias, scaling
  Norm,          ///< LayerNorm / RMSNorm
  Activation,    ///< GeLU / SwiGLU
  Rope,          ///< rotary position embedding
  CrossEntropy,  ///< softmax + cross-entropy over the vocabulary
  Optimizer,     ///< AdamW update of a parameter shard
  Copy,          ///< plain device copy
  HostCopy,      ///< copy between host and device over PCIe; bytes cross the PCIe link
  HostOptimizer, ///< AdamW step on the host CPU (optimizer offload); bytes of host memory traffic
  HostElementwise, ///< element-wise pass over host memory (offload's gradient clip); host bytes
  HostCast,        ///< FP32 -> BF16 conversion on the host (offload's parameter copy); host bytes
  HostCopyPageable,  ///< host-to-device copy from pageable memory (staged by the driver); PCIe bytes
  /// Eager PyTorch modules of Hugging Face transformers' Llama layer (training.elementwise:
  /// eager), each a chain of unfused kernels; bytes are those of the fused op they replace
  /// (Norm, Rope, Activation), the measured tables are keyed by them (docs/trace-format.md).
  RmsNormEager,  ///< LlamaRMSNorm: to float32, pow, mean, rsqrt, mul, to bfloat16, weight mul
  RopeEager,     ///< apply_rotary_pos_emb on the heads-transposed q and k views
  SwigluEager,   ///< act_fn(gate) * up of LlamaMLP
};

/// Where a weight-gradient GEMM's output goes (docs/trace-format.md). Megatron's
/// gradient_accumulation_fusion (Transformer Engine: fuse_wgrad_accumulation) has the GEMM add
/// its result into the main_grad buffer (beta = 1), FP32 or, with grad_reduce_in_fp32 off, BF16;
/// without it (PyTorch autograd, DeepSpeed, FSDP) the GEMM writes a new BF16 tensor.
enum class GradAccum : std::uint8_t {
  None,  ///< not a fused weight gradient: the output is written (beta = 0)
  F32,   ///< accumulated into an FP32 main_grad (read and written, 8 B per element)
  BF16,  ///< accumulated into a BF16 main_grad (4 B per element)
};

/// The dimension a grouped GEMM's groups split (GemmShape::groups): the rows (m) of a forward
/// or data-gradient GEMM, or the contraction (k) of a weight gradient, which the trace writes
/// as (in, out, tokens).
enum class GroupAxis : std::uint8_t {
  M,  ///< m / groups rows per group
  K,  ///< k / groups tokens per group
};

/// How an FP8 GEMM's operands are scaled: one scale per tensor (Transformer Engine's delayed
/// scaling), or in blocks as TE's Float8BlockScaling recipe runs them through cuBLASLt
/// (DeepSeek-V3's fine-grained FP8): weights in 128x128 blocks and activations or gradients in
/// 1x128 blocks (forward and data-gradient GEMMs), or both operands in 1x128 blocks (weight
/// gradients).
enum class Fp8Scaling : std::uint8_t { Tensor, Block2D1D, Block1D1D };

/// The fused-attention kernel library an attention op runs (docs/trace-format.md,
/// `training.attention_backend`): cuDNN's SDPA graph (Transformer Engine's FusedAttention,
/// PyTorch SDPA's cuDNN backend) or FlashAttention-2 (the flash-attn package, PyTorch SDPA's
/// flash backend). Each has its own measured tables (calib/data/h200/attention*.csv).
enum class AttentionKernel : std::uint8_t {
  Cudnn,   ///< cuDNN SDPA
  Flash2,  ///< FlashAttention-2
};

/// How many CPU threads each rank's host-side offload work runs with (host_* kernels).
enum class HostThreads : std::uint8_t {
  PerRank,   ///< each rank its share of the host's cores (deepspeed --bind_cores_to_rank)
  AllCores,  ///< every rank PyTorch's default, all cores: the ranks of a node oversubscribe them
};

/// True for the kernels that run on the host CPU or its link (host_copy, host_optimizer, ...).
bool is_host_kernel(MemKernel v);

/// C[m,n] = A[m,k] * B[k,n] on one GPU.
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::BF16;
  /// How Transformer Engine's userbuffers TP overlap runs the GEMM (docs/trace-format.md):
  /// as `splits` chunk GEMMs of m/splits rows (ring exchange: tp; pipeline: num_splits), and
  /// with `sm_margin` SMs left to its communication kernel. 1 and 0: a plain GEMM.
  std::int32_t splits = 1;
  std::int32_t sm_margin = 0;
  /// SMs that the userbuffers communication kernel overlapping this GEMM holds while it runs
  /// (TE's bulk and pipeline methods; ring exchange moves data with copy engines: 0). While a
  /// tensor-parallel communication op is in flight the engine runs the GEMM at
  /// 1/CostModel::held_sm_slowdown of its rate (docs/engine.md). 0: no such kernel.
  std::int32_t busy_sms = 0;
  /// Weight-gradient GEMMs under gradient accumulation fusion: the main_grad the output is
  /// added into (CostModel::compute_time charges the measured cost of that accumulation).
  GradAccum grad_accum = GradAccum::None;
  /// MoE experts as Megatron-core runs them (TE's GroupedLinear, or SequentialMLP's loop): the
  /// op is `groups` GEMMs of equal size, one per local expert with its own weight, splitting
  /// the token dimension `group_axis`; m, n, k are the whole op's (FLOPs unchanged). Cost models
  /// charge `groups` x the time of one group (one_group(); calibration run 75). 1: one GEMM.
  std::int32_t groups = 1;
  GroupAxis group_axis = GroupAxis::M;
  /// FP8 GEMMs: the scaling of their operands (CostModel: block-scaled GEMMs at the measured
  /// ratio to per-tensor ones). Tensor for every other dtype.
  Fp8Scaling fp8_scaling = Fp8Scaling::Tensor;
};

/// One group of a grouped GEMM: `group_axis` divided by `groups` (rounded to the nearest, at
/// least 1); the shape itself when groups == 1. @throws std::invalid_argument if groups < 1.
GemmShape one_group(const GemmShape& g);

/// Fused (flash) attention on one GPU. FLOPs follow the causal mask when `causal`.
struct AttentionShape {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq_q = 0, seq_kv = 0;
  std::int64_t head_dim = 0;     ///< query/key head dimension
  std::int64_t head_dim_v = 0;   ///< value head dimension (== head_dim except MLA)
  bool causal = true;
  bool backward = false;
  DType dtype = DType::BF16;
  AttentionKernel kernel = AttentionKernel::Cudnn;  ///< which library's kernel runs it
};

/// A memory-bound kernel moving `bytes` (reads + writes) through HBM.
struct MemBoundShape {
  MemKernel kernel = MemKernel::Elementwise;
  /// Threads of a host kernel's rank (ignored by device kernels).
  HostThreads host_threads = HostThreads::PerRank;
};

/// SMs DeepEP's normal dispatch and combine kernels run on (Megatron-core TransformerConfig
/// moe_deepep_num_sms, default 20, passed to DeepEP's Buffer.set_num_sms): a GEMM beside such an
/// exchange has the others.
inline constexpr int kDeepEpSms = 20;

/// Top-k routing of a MoE layer's tokens, for a TokenExchange: `experts` routed experts spread
/// evenly and contiguously over the group's members in group order (member i holds experts
/// [i e, (i+1) e), e = experts / group size, as Megatron-core numbers local experts), each token
/// going to `top_k` distinct experts chosen uniformly (balanced routing); with node-limited
/// routing (Megatron-core moe_router_num_groups / moe_router_group_topk; DeepSeek-V3 8 / 4) the
/// experts form `groups` contiguous router groups and a token's experts lie in `group_topk` of
/// them, chosen uniformly. groups == 0: no group limit.
struct TokenRouting {
  std::int32_t experts = 0;
  std::int32_t top_k = 0;
  std::int32_t groups = 0;
  std::int32_t group_topk = 0;
  bool operator==(const TokenRouting&) const = default;
};

/// A collective over the rank's communicator of kind `group`. Op::bytes is the NCCL buffer
/// size per rank: the whole buffer for AllReduce, the gathered output for AllGather, the input
/// for ReduceScatter, the whole send buffer for AllToAll; for TokenExchange the rank's tokens
/// once each (tokens x hidden x element bytes), before any copy per destination.
struct CollectiveSpec {
  CollectiveKind kind = CollectiveKind::AllReduce;
  GroupKind group = GroupKind::TP;
  TokenRouting routing;  ///< TokenExchange only; zeros otherwise
};

/// Batched point-to-point exchange with pipeline neighbours (Megatron's combined
/// send_forward_recv_backward etc.): everything is posted, then waited on together.
/// Op::bytes is the size of each transfer.
struct P2PSpec {
  Peer send_to = Peer::None;
  Peer recv_from = Peer::None;
};

using OpShape = std::variant<GemmShape, AttentionShape, MemBoundShape, CollectiveSpec, P2PSpec>;

/// One op of a rank's program.
struct Op {
  OpShape shape;
  Stream stream = Stream::Compute;
  Phase phase = Phase::Forward;
  std::int32_t layer = -1;       ///< transformer layer (global index), -1 for none
  std::int32_t microbatch = -1;  ///< microbatch index, -1 for none
  std::uint16_t label = 0;       ///< index into Program::labels ("qkv", "fc1", "tp_ag", ...)
  bool recompute = false;        ///< true for recomputed forward work (counts in HFU, not MFU)
  double flops = 0.0;            ///< floating-point operations this op executes
  double bytes = 0.0;            ///< HBM traffic (compute ops) or message size (comm ops), bytes
  std::vector<std::uint32_t> deps;  ///< earlier ops (index in Program::ops) that must finish first
  double duration_s = -1.0;      ///< compute time from the CostModel; -1 until costed
  /// Slowdown while a TP communication kernel holds GemmShape::busy_sms SMs
  /// (CostModel::held_sm_slowdown); 1 until costed and for ops without busy SMs.
  double held_slowdown = 1.0;
  /// Slowdown of a GEMM while a DeepEP token exchange of its rank runs on the ep_comm stream
  /// beside it, its kernels holding kDeepEpSms SMs (CostModel::held_sm_slowdown of the GEMM
  /// with that many busy SMs); 1 until costed, for other ops, and in programs without such
  /// exchanges.
  double ep_held_slowdown = 1.0;

  /// A GEMM, attention or memory-bound kernel (the first three OpShape alternatives).
  bool is_compute() const { return shape.index() <= 2; }
  /// A collective of a communicator group.
  bool is_collective() const { return std::holds_alternative<CollectiveSpec>(shape); }
  /// A point-to-point transfer between pipeline neighbours.
  bool is_p2p() const { return std::holds_alternative<P2PSpec>(shape); }
};

/// The op sequence of one or more ranks.
struct Program {
  std::vector<Op> ops;
  std::vector<std::string> labels;  ///< names referenced by Op::label
  /// Returns the label id for `name`, adding it if new.
  std::uint16_t label_id(const std::string& name);
};

/// Names for enums (used by the trace writer, reports and error messages).
const char* to_string(DType v);
const char* to_string(Stream v);
const char* to_string(Phase v);
const char* to_string(GroupKind v);
const char* to_string(CollectiveKind v);
const char* to_string(Peer v);
const char* to_string(MemKernel v);
const char* to_string(HostThreads v);
const char* to_string(GradAccum v);
const char* to_string(GroupAxis v);
const char* to_string(Fp8Scaling v);
const char* to_string(AttentionKernel v);
/// Bytes per element of a dtype.
double dtype_bytes(DType v);

}  // namespace clustersim::sim
