// Per-GPU peak memory of a training job, per pipeline stage, by component: weights, gradients
// and optimizer states by ZeRO stage and offload; activations of the microbatches in flight
// under the pipeline schedule by recompute mode, sequence and context parallelism (Korthikanti
// et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", arXiv
// 2205.05198, Sec. 4, generalized to GQA/MLA, gated MLPs, MoE and flash attention); the working
// set of the layer in backward; communication buffers; CUDA/cuBLAS/NCCL overheads and the
// caching allocator's fragmentation, measured (workloads/probes/memory_overheads.py).
// docs/memory-model.md derives every term.
#pragma once

#include <string>
#include <vector>

#include "workloads/job_spec.hpp"

namespace clustersim::workloads {

/// One component of a GPU's memory.
struct MemoryComponent {
  std::string name;   ///< "weights", "gradients", "optimizer_states", "activations", ...
  double bytes = 0.0;
  std::string basis;  ///< one line: how it is computed
};

/// Peak memory of the ranks of one pipeline stage (all ranks of a stage hold the same).
struct StageMemory {
  int stage = 0;
  int microbatches_in_flight = 0;  ///< peak number of (microbatch, model chunk) activations held
  std::vector<MemoryComponent> components;
  /// Pinned host memory of activation offloading at the stage's peak (the groups of every
  /// chunk-microbatch in flight on the host), bytes per GPU; 0 without offloading.
  double host_bytes = 0.0;

  /// Sum of the components, bytes.
  double total() const;
  /// The largest component.
  const MemoryComponent& dominant() const;
  /// Bytes of the component `name` (0 if absent).
  double bytes(const std::string& name) const;
};

/// The memory estimate of a job.
struct MemoryReport {
  std::vector<StageMemory> stages;  ///< one per pipeline stage
  int worst_stage = 0;              ///< stage with the largest total
  int worst_rank = 0;               ///< first rank of that stage (rank layout of the spec)
  double capacity_bytes = 0.0;      ///< HBM capacity of one GPU
  /// A GPU's share of its host's DRAM (node capacity / GPUs per node), bytes; 0 when the
  /// platform does not give it (then host_bytes is not checked).
  double host_capacity_bytes = 0.0;

  /// The worst stage.
  const StageMemory& worst() const { return stages.at(static_cast<std::size_t>(worst_stage)); }
  /// Peak bytes of the worst stage.
  double peak_bytes() const { return worst().total(); }
  /// What PyTorch's torch.cuda.max_memory_reserved() would report for the worst stage, bytes:
  /// the peak less the memory outside its caching allocator (CUDA context, cuBLAS's kernel
  /// images, NCCL). Benchmarks that print max_memory_reserved compare against this.
  double reserved_bytes() const;
  /// The stage pinning the most host memory for activation offloading.
  const StageMemory& host_worst() const;
  /// True if every stage's pinned host memory fits its GPU's share of the host (or the share
  /// is not known).
  bool host_fits() const;
  /// True if the worst stage fits in HBM and the offloaded activations in the host's DRAM.
  bool fits() const { return peak_bytes() <= capacity_bytes && host_fits(); }
  /// "rank R (pipeline stage S) needs X GiB but the GPU has Y GiB: over by Z GiB; the largest
  /// component is C (W GiB)", or when only the host is short, which stage pins how much of its
  /// share of the host -- empty when it fits.
  std::string oom_message() const;
};

/// Options of the per-layer activation formula (for checks against Korthikanti et al., whose
/// GPT layer keeps the attention scores and dropout masks).
struct ActivationOptions {
  bool flash_attention = true;  ///< fused attention: keeps output and log-sum-exp, not scores
  bool dropout = false;         ///< dropout after attention, projection and MLP (1-byte masks)
};

/// Bytes one rank keeps from the forward of transformer layer `layer` for one microbatch until
/// its backward, under `recompute`. Korthikanti et al.'s per-layer terms, per tensor: norm
/// inputs, GEMM inputs, q/k/v, attention output (or scores, softmax and masks without flash
/// attention), MLP activations; sharded over tp where Megatron shards them, over tp for the
/// rest with sequence parallelism; tokens are micro_batch * seq / cp.
double layer_activation_bytes(const WorkloadSpec& spec, int layer, Recompute recompute,
                              const ActivationOptions& options = {});

/// Peak memory of every pipeline stage of `spec` on GPUs of `hbm_capacity_bytes`, each GPU with
/// `host_capacity_bytes` of its host's DRAM for offloaded activations (0: not checked).
/// Deterministic. @throws std::invalid_argument for a spec the generator rejects.
MemoryReport estimate_memory(const WorkloadSpec& spec, double hbm_capacity_bytes,
                             double host_capacity_bytes = 0.0);

/// Parameter counts of a model: all weights, and those one token passes through (MoE: top_k
/// routed experts). Embedding and output head included (once when tied).
struct ParameterCount {
  double total = 0.0;
  double active = 0.0;
};
/// Counts the parameters of `model`: linear weights, routers, layer and final norms,
/// embeddings and output head, and the MTP depths (their norms, eh_proj and layer; the shared
/// embedding and head counted once) (biases and MLA's latent norms, < 0.01%, are left out).
ParameterCount count_parameters(const ModelSpec& model);

}  // namespace clustersim::workloads
