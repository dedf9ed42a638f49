// The ops of one microbatch through the parts of a dense decoder-only transformer, per rank,
// as Megatron-LM with Transformer Engine runs them: embedding, transformer layers and output
// head, forward and backward, with their tensor-parallel collectives (internal to workloads/).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/trace.hpp"
#include "workloads/dp_buckets.hpp"
#include "workloads/job_spec.hpp"
#include "workloads/program_builder.hpp"

namespace clustersim::workloads {

/// Per-rank sizes of one microbatch after tensor-parallel (and sequence-parallel) sharding.
struct RankShapes {
  std::int64_t micro_batch = 0, seq = 0;
  std::int64_t tokens = 0;     ///< micro_batch * seq: rows of every GEMM
  std::int64_t sp_tokens = 0;  ///< tokens / tp with sequence parallelism, else tokens
  std::int64_t hidden = 0;
  std::int64_t heads = 0, kv_heads = 0, head_dim = 0;  ///< heads per rank
  std::int64_t qkv_out = 0;    ///< (heads + 2 kv_heads) * head_dim / tp
  std::int64_t attn_out = 0;   ///< heads * head_dim / tp
  std::int64_t fc1_out = 0;    ///< ffn / tp, doubled for SwiGLU (gate and up)
  std::int64_t ffn = 0;        ///< ffn / tp
  std::int64_t vocab = 0;      ///< padded vocab / tp
  std::int64_t position_rows = 0;  ///< learned position table rows (0 with RoPE)
  sim::DType linear_dtype = sim::DType::BF16;  ///< transformer-layer GEMMs (FP8 with fp8)
  bool tp_comm = false;        ///< tp > 1
  bool sequence_parallel = false;  ///< sequence parallel and tp > 1

  /// Shapes of `spec`.
  static RankShapes of(const WorkloadSpec& spec);
};

/// Told, during the backward pass whose gradients are reduced, which op completes the
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

  /// Word (and position) embedding of one microbatch, with its TP reduction (first stage).
  void embedding_forward(std::vector<std::uint32_t> param_deps);
  /// Forward of transformer layer `layer` (global index) for one microbatch.
  void layer_forward(int layer, std::vector<std::uint32_t> param_deps);
  /// Final norm, output head and vocab-parallel cross entropy (last stage).
  void head_forward(std::vector<std::uint32_t> param_deps);
  /// Backward of the cross entropy, output head and final norm (last stage).
  void head_backward(GradSink* sink);
  /// Backward of transformer layer `layer`: dgrad and wgrad GEMMs, attention backward, TP comm.
  void layer_backward(int layer, GradSink* sink);
  /// Backward of the embeddings (first stage).
  void embedding_backward(GradSink* sink);

  /// Bytes of one pipeline activation (or its gradient): [seq (/tp with SP), mbs, hidden] BF16.
  double pipeline_message_bytes() const;
  /// The per-rank sizes used.
  const RankShapes& shapes() const { return s_; }

 private:
  double act_bytes(std::int64_t rows, std::int64_t cols) const;
  void tp_blocking(const std::string& label, sim::CollectiveKind kind, double bytes);
  void gather_sequence();
  void reduce_output();
  std::vector<std::uint32_t> column_backward(const std::string& name, std::int64_t in,
                                             std::int64_t out, sim::DType dtype, ParamGroup group,
                                             int layer, GradSink* sink);
  void row_backward(const std::string& name, std::int64_t in, std::int64_t out, ParamGroup group,
                    int layer, GradSink* sink);
  std::uint32_t norm_backward(const std::string& label, std::vector<std::uint32_t> deps);
  double dense_embedding_grad_bytes(std::int64_t rows) const;

  ProgramBuilder& b_;
  const WorkloadSpec& spec_;
  RankShapes s_;
};

}  // namespace clustersim::workloads
