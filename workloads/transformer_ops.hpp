// The ops of one microbatch through the parts of a decoder-only transformer, per rank, as
// Megatron-LM with Transformer Engine runs them: embedding, transformer layers (GQA or MLA
// attention, with context-parallel ring attention; dense MLP or MoE block with expert
// parallelism) and output head, forward and backward, with their tensor-parallel collectives
// (internal to workloads/). Definitions are split over transformer_ops.cpp (embedding, head,
// layers, MLP, TP helpers), attention_ops.cpp, moe_ops.cpp, mtp_ops.cpp, layer_pieces.cpp and fp8_ops.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/trace.hpp"
#include "workloads/dp_buckets.hpp"
#include "workloads/job_spec.hpp"
#include "workloads/program_builder.hpp"

namespace clustersim::workloads {

/// Per-rank sizes of one microbatch after context-, tensor- (and sequence-) parallel sharding.
struct RankShapes {
  std::int64_t micro_batch = 0;
  std::int64_t seq = 0;        ///< tokens of one sequence on this rank: seq_length / cp
  std::int64_t tokens = 0;     ///< micro_batch * seq: rows of every TP GEMM
  std::int64_t sp_tokens = 0;  ///< tokens / tp with sequence parallelism, else tokens
  std::int64_t hidden = 0;
  std::int64_t heads = 0, kv_heads = 0;      ///< heads per rank (heads / tp)
  std::int64_t head_dim = 0, v_head_dim = 0; ///< query/key and value head widths
  std::int64_t qkv_out = 0;    ///< GQA: (heads + 2 kv_heads) * head_dim / tp
  std::int64_t attn_out = 0;   ///< heads * v_head_dim / tp: input of the output projection
  std::int64_t fc1_out = 0;    ///< ffn / tp, doubled for SwiGLU (gate and up)
  std::int64_t ffn = 0;        ///< ffn / tp
  std::int64_t vocab = 0;      ///< padded vocab / tp
  std::int64_t position_rows = 0;  ///< learned position table rows (0 with RoPE)
  // MLA (per rank): compressed ranks and up-projection widths.
  std::int64_t q_lora = 0, kv_lora = 0, rope_dim = 0;
  std::int64_t q_up_out = 0;   ///< heads/tp * head_dim
  std::int64_t kv_up_out = 0;  ///< heads/tp * (head_dim - rope + v_head_dim)
  // MoE (per rank).
  std::int64_t experts = 0;
  std::int64_t local_experts = 0;  ///< experts / ep: the groups of the expert GEMMs
  std::int64_t moe_tokens = 0;     ///< tokens this rank routes: sp_tokens
  std::int64_t expert_rows = 0;    ///< rows of the rank's grouped expert GEMMs (busiest rank)
  std::int64_t expert_ffn = 0;     ///< expert_ffn / etp
  std::int64_t expert_fc1_out = 0; ///< expert_ffn / etp, doubled for SwiGLU
  double expert_load = 1.0;        ///< rows relative to the balanced load
  std::int64_t shared_ffn = 0;     ///< shared_expert_ffn / tp
  std::int64_t shared_fc1_out = 0;
  /// moe_shared_expert_overlap: the expert exchanges on the ep_comm stream, the shared experts
  /// beside them.
  bool shared_overlap = false;
  bool router_fp32 = false;  ///< training.moe_router_dtype fp32
  /// moe_token_dispatcher deepep: each exchange is one token exchange of the rank's tokens
  /// routed as `routing` (sim::CollectiveKind::TokenExchange) instead of an all-to-all of copies.
  bool deepep = false;
  sim::TokenRouting routing;
  /// delay_wgrad_compute: a split layer's backward runs the routed experts' weight gradients
  /// after the dispatch's backward exchange is launched (layer_backward_tail).
  bool delay_wgrad = false;
  /// fp8_recipe tensorwise (Transformer Engine's Float8CurrentScaling): every cast computes its
  /// tensor's amax first (fp8_ops.cpp).
  bool fp8_current_scaling = false;
  /// FP8 with a per-tensor recipe (delayed or tensorwise): Transformer Engine quantizes a
  /// sequence-parallel shard before its NCCL all-gather, so an FP8 linear's gathers carry 1 byte
  /// per element without userbuffers too (tp_gather_bytes).
  bool fp8_shard_gather = false;
  int cp = 1;
  bool ep_comm = false;        ///< ep > 1
  bool etp_comm = false;       ///< etp > 1
  sim::DType linear_dtype = sim::DType::BF16;     ///< transformer-layer GEMMs (FP8 with fp8)
  sim::DType attention_dtype = sim::DType::BF16;  ///< FP8 only with fp8_attention
  sim::AttentionKernel attention_kernel = sim::AttentionKernel::Cudnn;  ///< attention_backend
  /// Where the weight gradients of the fused linears go: main_grad (FP32 with
  /// grad_reduce_in_fp32, else BF16) under gradient_accumulation_fusion, else a new tensor.
  sim::GradAccum wgrad_accum = sim::GradAccum::None;
  bool tp_comm = false;            ///< tp > 1
  bool sequence_parallel = false;  ///< sequence parallel and tp > 1
  bool tp_overlap = false;         ///< tp_comm_overlap
  bool cp_all_gather = false;      ///< cp_comm_type all_gather (else the P2P ring)
  bool cp_a2a = false;             ///< cp_comm_type a2a (Ulysses: heads exchanged for sequence)
  bool tp_backward_blocking = false;  ///< tp_backward_comm: blocking, with tp > 1
  /// training.elementwise eager: the kernels of the layer's RMSNorm, RoPE and SwiGLU (the
  /// Hugging Face modules' unfused chains) and the attention output's transpose copy.
  sim::MemKernel norm_kernel = sim::MemKernel::Norm;
  sim::MemKernel rope_kernel = sim::MemKernel::Rope;
  sim::MemKernel act_kernel = sim::MemKernel::Activation;
  bool transpose_attn_out = false;
  /// Bytes per logit of the loss's forward and backward kernels (training.cross_entropy).
  double ce_forward_bytes = 0.0, ce_backward_bytes = 0.0;

  /// Shapes of `spec`.
  static RankShapes of(const WorkloadSpec& spec);
  /// Sets the MoE sizes (`gate`: 2 for SwiGLU's gate and up, else 1); moe_ops.cpp.
  void set_moe(const WorkloadSpec& spec, std::int64_t gate);
};

/// Told, during a backward pass whose gradients are reduced, which op completes the
/// gradient of each parameter group (data-parallel bucket launch).
class GradSink {
 public:
  virtual ~GradSink() = default;
  /// `op` has produced the gradients of (`group`, `layer`).
  virtual void gradient_ready(ParamGroup group, int layer, std::uint32_t op) = 0;
};

/// Emits the ops of the model parts into a builder. `param_deps` are ops (parameter
/// all-gathers) the first op of the part must wait for; `sink` may be null.
class TransformerOps {
 public:
  /// Keeps references to `builder` and `spec`.
  TransformerOps(ProgramBuilder& builder, const WorkloadSpec& spec);

  /// Word (and position) embedding of one microbatch, with its TP reduction (first stage; with
  /// `prefix` "mtp_", the MTP's embedding of the tokens one further ahead, at the layer set).
  void embedding_forward(std::vector<std::uint32_t> param_deps, const std::string& prefix = "");
  /// Forward of transformer layer `layer` (global index) for one microbatch.
  void layer_forward(int layer, std::vector<std::uint32_t> param_deps);
  /// Final norm, output head and vocab-parallel cross entropy (last stage; `prefix` as above:
  /// an MTP depth's final norm and pass through the shared head).
  void head_forward(std::vector<std::uint32_t> param_deps, const std::string& prefix = "");
  /// Backward of the cross entropy, output head and final norm (last stage).
  void head_backward(GradSink* sink, const std::string& prefix = "");
  /// Forward of transformer layer `layer` re-run from its checkpoint before the backward (full
  /// recompute; ops marked recompute), collectives included, after `param_deps`.
  void layer_recompute(int layer, std::vector<std::uint32_t> param_deps);
  /// Backward of transformer layer `layer`, preceded by its recomputation when `recompute`
  /// (full recompute of a layer checkpointed alone) or by the core attention's (selective):
  /// dgrad and wgrad GEMMs, attention backward, comm.
  void layer_backward(int layer, GradSink* sink, std::vector<std::uint32_t> param_deps = {},
                      bool recompute = false);
  /// Megatron-core's fine-grained layer nodes (combined 1F1B, layer_pieces.cpp): a MoE layer
  /// with expert exchanges runs as 3 compute pieces with an exchange after each of the first
  /// two (forward: attention + router | dispatch | experts | combine | unpermutation; backward
  /// the reverse); any other layer is one piece. Returns 3 or 1.
  int layer_pieces(int layer) const;
  /// Compute piece `piece` of layer `layer`'s forward; piece 0 waits for `param_deps`.
  /// @throws std::logic_error for a piece the layer does not have.
  void layer_forward_piece(int layer, int piece, std::vector<std::uint32_t> param_deps);
  /// Compute piece `piece` of layer `layer`'s backward. Piece 0 waits for `deps` (parameter
  /// gathers) and, with `recompute`, first re-runs the layer's forward (its exchanges in line);
  /// piece 1 returns the shared experts' input-gradient reduction, which piece 2 takes as
  /// `deps` (its norm backward waits for it). A one-piece layer is layer_backward.
  /// @throws std::logic_error for a piece the layer does not have.
  std::vector<std::uint32_t> layer_backward_piece(int layer, int piece, GradSink* sink,
                                                  std::vector<std::uint32_t> deps, bool recompute);
  /// What runs after compute piece `piece` of layer `layer`'s backward without gating the exchange
  /// after it: with delay_wgrad_compute the routed experts' weight gradients after piece 1 (the
  /// dispatch's backward exchange starts after their data gradients); nothing otherwise.
  void layer_backward_tail(int layer, int piece, GradSink* sink);
  /// The expert exchange after compute piece `after_piece` (0 or 1) of layer `layer`'s forward
  /// (dispatch, combine) or backward (the combine's backward, the dispatch's) on the ep_comm
  /// stream, its first op after `after`. Returns its ops.
  std::vector<std::uint32_t> layer_exchange(int layer, bool backward, int after_piece,
                                            const std::vector<std::uint32_t>& after);
  /// Backward of the embeddings (first stage; `prefix` as above).
  void embedding_backward(GradSink* sink, const std::string& prefix = "");
  /// Forward of MTP depth `depth` (Megatron-core MultiTokenPredictionLayer, mtp_ops.cpp): its
  /// embedding (waiting for `embedding_deps`), enorm and hnorm, the concatenation, eh_proj and
  /// the depth's transformer layer (waiting for `param_deps`), one microbatch.
  void mtp_forward(int depth, std::vector<std::uint32_t> param_deps,
                   std::vector<std::uint32_t> embedding_deps);
  /// Backward of MTP depth `depth` after its head's: the layer, eh_proj, norms and embedding.
  /// `sink` is told of the depth's gradients; `embedding_sink` of the embedding's (null when
  /// the first stage's embedding, on the same rank, reports them).
  void mtp_backward(int depth, GradSink* sink, GradSink* embedding_sink);

  /// Bytes of one pipeline activation (or its gradient): [seq (/tp with SP), mbs, hidden] BF16.
  double pipeline_message_bytes() const;
  /// The per-rank sizes used.
  const RankShapes& shapes() const { return s_; }

 private:
  // transformer_ops.cpp: helpers
  double act_bytes(std::int64_t rows, std::int64_t cols) const;
  double tp_gather_bytes(const std::string& label, std::int64_t rows, std::int64_t cols,
                         sim::DType dtype) const;
  void tp_blocking(const std::string& label, sim::CollectiveKind kind, double bytes);
  void gather_sequence(std::int64_t cols = 0, const std::string& label = "",
                       sim::DType dtype = sim::DType::BF16);
  void reduce_output();
  void linear_in(const std::string& label, std::int64_t n, std::int64_t k, sim::DType dtype);
  void linear_out(const std::string& label, std::int64_t n, std::int64_t k);
  /// Pass of a linear layer's GEMM: forward, data gradient, weight gradient.
  enum class LinearPass : std::uint8_t { Fprop, Dgrad, Wgrad };
  void tp_overlap_gemm(std::uint32_t gemm, const std::string& label, LinearPass pass);
  /// With transpose_attn_out, the attention output's (or its gradient's) copy to contiguous.
  void attn_out_transpose(const std::string& label);
  /// The FP8 quantization of a GEMM operand [rows, cols] (fp8_ops.cpp); `tp_amax`: its scale
  /// is shared over the TP group (Transformer Engine's current scaling of an operand gathered
  /// for sequence parallelism).
  void fp8_quantize(const std::string& label, std::int64_t rows, std::int64_t cols,
                    double bytes_per_element, sim::DType dtype, bool tp_amax = false);
  std::vector<std::uint32_t> column_backward(const std::string& name, std::int64_t in,
                                             std::int64_t out, sim::DType dtype, ParamGroup group,
                                             int layer, GradSink* sink);
  void column_backward_blocking(const std::string& name, std::int64_t in, std::int64_t out,
                                sim::DType dtype, ParamGroup group, int layer, GradSink* sink,
                                double full);
  void row_backward(const std::string& name, std::int64_t in, std::int64_t out, ParamGroup group,
                    int layer, GradSink* sink);
  std::uint32_t norm_forward(std::vector<std::uint32_t> deps = {});
  std::uint32_t norm_backward(const std::string& label, std::vector<std::uint32_t> deps);
  /// Bytes of a dense embedding table's gradient of `rows` rows; `summed`: added to another
  /// gradient of the same table instead of into main_grad.
  double dense_embedding_grad_bytes(std::int64_t rows, bool summed = false) const;
  /// The MLP's first linear (input gathered over TP with SP) and its activation.
  void mlp_fc1_forward(const std::string& prefix, std::int64_t fc1_out, std::int64_t ffn);
  void mlp_forward(const std::string& prefix, std::int64_t fc1_out, std::int64_t ffn);
  /// Backward of the MLP's second linear and of its activation.
  void mlp_fc2_backward(const std::string& prefix, std::int64_t ffn, ParamGroup fc2, int layer,
                        GradSink* sink);
  std::vector<std::uint32_t> mlp_backward(const std::string& prefix, std::int64_t fc1_out,
                                          std::int64_t ffn, ParamGroup fc1, ParamGroup fc2,
                                          int layer, GradSink* sink);
  void layer_forward_ops(int layer, std::vector<std::uint32_t> param_deps);
  /// Norm, attention block, residual and the MLP's norm of a layer's forward.
  void layer_attention_forward(int layer, std::vector<std::uint32_t> param_deps);
  /// Start of a layer's backward: with `recompute` its forward re-run from its checkpoint (after
  /// `param_deps`), else the next compute op waits for `param_deps`.
  void begin_layer_backward(int layer, std::vector<std::uint32_t> param_deps, bool recompute);
  /// From the MLP's norm backward (after `comm`) through the attention block's backward.
  void layer_attention_backward(int layer, GradSink* sink, std::vector<std::uint32_t> comm);
  // attention_ops.cpp
  void attention_forward();
  void mla_q_up_forward();
  void moe_recompute();
  void mla_kv_up_forward(bool gather_rope_key);
  void gqa_qk_forward();
  void gqa_qk_backward();
  void attention_core_forward();
  void cp_attention_steps(bool backward, double own_bytes, double other_bytes);
  void cp_ring_forward(const std::vector<std::uint32_t>& launch, double full_bytes,
                       std::int64_t qo_cols);
  std::vector<std::uint32_t> attention_backward(int layer, GradSink* sink);
  void attention_core_backward();
  void cp_a2a_exchange(const std::string& label, const std::vector<std::int64_t>& widths);
  sim::AttentionShape cp_a2a_shape(bool backward) const;
  double kv_block_bytes() const;
  // mtp_ops.cpp
  void mtp_projection_forward();
  // moe_ops.cpp
  void moe_forward();
  /// Router, top-k and permutation of the token copies (before the dispatch).
  void moe_route_forward();
  /// The all-to-all dispatcher's copy of the rank's expert rows by local expert (`label`); none
  /// with DeepEP or one local expert.
  void sort_by_local_expert(const char* label);
  /// The routed experts' grouped linears and activation (between dispatch and combine), with
  /// the sort by local expert before and the unsort after.
  void moe_experts_forward();
  /// Unpermutation after the combine; with `shared_mlp` the shared experts run here too.
  void moe_output_forward(bool shared_mlp);
  std::vector<std::uint32_t> moe_backward(int layer, GradSink* sink);
  /// Backward of the shared experts as a TP-sharded MLP; returns its input-gradient reduction.
  std::vector<std::uint32_t> shared_experts_backward(int layer, GradSink* sink);
  /// Backward of the unpermutation, after `deps` (before the combine's backward exchange).
  void moe_output_backward(std::vector<std::uint32_t> deps);
  /// Which gradients of the routed experts a backward emits.
  enum class ExpertGrads : std::uint8_t {
    All,     ///< data and weight gradients in autograd order
    Data,    ///< the data gradients only (their weight gradients deferred)
    Weight   ///< the deferred weight gradients only
  };
  /// Backward of the routed experts (between the two backward exchanges).
  void moe_experts_backward(int layer, GradSink* sink, ExpertGrads grads);
  /// Backward of the permutation and the router (after the dispatch's backward exchange).
  void moe_route_backward(int layer, GradSink* sink);
  void router_fp32_backward(int layer, GradSink* sink);
  std::vector<std::uint32_t> expert_exchange(const std::string& label, bool dispatch,
                                             sim::Stream stream,
                                             const std::vector<std::uint32_t>* after = nullptr);
  /// The exchange `label`; with moe_shared_expert_overlap on the ep_comm stream with `shared`
  /// (the shared experts' part it overlaps) emitted beside it, else on the compute stream.
  void exchange_beside(const std::string& label, bool dispatch, const std::function<void()>& shared);
  /// Marks expert GEMM `op` as one GEMM per local expert splitting `axis` (TE's GroupedLinear);
  /// returns `op`.
  std::uint32_t grouped(std::uint32_t op, sim::GroupAxis axis);

  ProgramBuilder& b_;
  const WorkloadSpec& spec_;
  RankShapes s_;
};

}  // namespace clustersim::workloads
