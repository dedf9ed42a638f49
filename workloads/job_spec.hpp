// The workload half of a job file: `model:`, `parallelism:` and `training:` (Megatron/NeMo
// vocabulary). Specs are plain structs; YAML stays inside the loaders. The format, every key,
// its default and its validation are documented in docs/job-spec.md.
#pragma once

#include <cstdint>
#include <string>

#include "sim/trace.hpp"
#include "sim/yaml_spec.hpp"

namespace clustersim::workloads {

/// MLP activation: GeLU (two linears) or SwiGLU (gate and up projections fused in FC1).
enum class Activation : std::uint8_t { Gelu, Swiglu };
/// Normalization layer: LayerNorm (weight + bias) or RMSNorm (weight only).
enum class NormKind : std::uint8_t { LayerNorm, RmsNorm };
/// Position encoding: learned absolute embeddings or rotary (RoPE).
enum class PositionKind : std::uint8_t { Learned, Rope };
/// Training precision: BF16 everywhere, or FP8 GEMMs in the transformer layers (Transformer
/// Engine, params and activations still BF16).
enum class Precision : std::uint8_t { BF16, FP8 };

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
};

/// How the job is split over GPUs, and the data-parallel optimizer settings.
struct ParallelSpec {
  int tp = 1;                           ///< tensor parallel size
  int pp = 1;                           ///< pipeline parallel size
  int dp = 1;                           ///< data parallel size
  int cp = 1;                           ///< context parallel size (only 1 until CP lands)
  bool sequence_parallel = false;       ///< Megatron sequence parallelism (with tp > 1)
  std::string schedule = "1f1b";        ///< pipeline schedule name (workloads/schedule.hpp)
  bool distributed_optimizer = true;    ///< ZeRO-1: optimizer state sharded over DP
  bool overlap_grad_reduce = true;      ///< bucketed gradient reduction overlapped with backward
  bool overlap_param_gather = true;     ///< parameter all-gather overlapped with next forward
  bool grad_reduce_in_fp32 = true;      ///< gradient buffers and their reduction in FP32
};

/// Batch and precision.
struct TrainingSpec {
  std::int64_t seq_length = 0;          ///< tokens per sequence
  std::int64_t micro_batch_size = 0;    ///< sequences per microbatch per data-parallel rank
  std::int64_t global_batch_size = 0;   ///< sequences per optimizer step, whole job
  Precision precision = Precision::BF16;
};

/// A validated workload: model, parallel layout and training settings.
struct WorkloadSpec {
  ModelSpec model;
  ParallelSpec parallel;
  TrainingSpec training;

  /// GPUs the layout uses: tp * cp * dp * pp.
  int gpus() const { return parallel.tp * parallel.cp * parallel.dp * parallel.pp; }
  /// Microbatches per step per pipeline: global_batch_size / (dp * micro_batch_size).
  std::int64_t num_microbatches() const {
    return training.global_batch_size / (parallel.dp * training.micro_batch_size);
  }
};

/// Reads `model`, `parallelism` and `training` from the top level of a job file and validates
/// them, cross-field constraints included (tp*pp*dp == gpus, divisibility of heads, layers,
/// batch). Marks those three keys known in `root`; the caller reads `cluster` and calls
/// root.finish(). `gpus` is the cluster's GPU count.
/// @throws SpecError located at the offending field (file:line, dotted field, reason).
WorkloadSpec parse_workload_spec(YamlMap& root, int gpus);

/// Element type of the transformer-layer GEMMs (BF16, or FP8 with precision fp8): the dtype
/// whose dense peak is the MFU denominator.
sim::DType compute_dtype(const WorkloadSpec& spec);

/// Names for reports and traces ("gelu", "rmsnorm", "rope", "fp8", ...).
const char* to_string(Activation v);
const char* to_string(NormKind v);
const char* to_string(PositionKind v);
const char* to_string(Precision v);

}  // namespace clustersim::workloads
