// Megatron-core's fine-grained activation offloading (--fine-grained-activation-offloading
// --offload-modules; megatron/core/pipeline_parallel/fine_grained_activation_offload.py): what
// each offloaded module's saved tensors weigh, and the host copies and waits it adds to a
// stage's program. docs/memory-model.md ("Activation offloading") and docs/trace-format.md
// ("Activation offloading") describe the rules.
#pragma once

#include <array>
#include <vector>

#include "sim/trace.hpp"
#include "workloads/job_spec.hpp"
#include "workloads/stage_layout.hpp"

namespace clustersim::workloads {

/// Number of OffloadModule values.
inline constexpr int kOffloadModuleCount = 6;

/// Megatron-core's default min_offloaded_tensor_size: saved tensors of fewer elements stay on
/// the GPU (ChunkOffloadHandler.tensor_need_offloading_checker).
inline constexpr double kMinOffloadedElements = 1024.0 * 1024.0;

/// What offloading one layer's modules moves and frees for one microbatch on one rank.
struct LayerOffload {
  /// Bytes each module's group copies to the host (and back), by OffloadModule; 0 for modules
  /// not offloaded, absent from the layer (MoE modules of a dense layer) or whose every saved
  /// tensor is below kMinOffloadedElements.
  std::array<double, kOffloadModuleCount> copied{};
  /// GPU bytes the layer's offloaded groups release: a tensor that a module not offloaded also
  /// saves (the attention output, which a BF16 projection keeps as its input) stays.
  double freed = 0.0;
};

/// The offload bytes of layer `layer` under spec.training.offload_modules (all zero without).
LayerOffload layer_offload(const WorkloadSpec& spec, int layer);

/// Bytes each of a stage's model `chunks` copies to the host per microbatch (its layers' groups).
std::vector<double> chunk_copied_bytes(const WorkloadSpec& spec, const std::vector<LayerRange>& chunks);

/// GPU bytes offloading leaves beside the resident activations (Megatron's manager): the last
/// group of each offloaded module of one chunk (the step's first backward chunk, or one whose
/// backward runs right after its forward) and the largest group, reloaded ahead of its backward.
double offload_kept_on_gpu(const WorkloadSpec& spec, const std::vector<LayerRange>& chunks);

/// Adds the offload and reload copies to `program`, the program of pipeline stage `stage` of
/// `spec` (generate_stage_program's output, with offload_modules set): a host copy on the d2h
/// stream after each offloaded module's forward, and one on the h2d stream back, issued when
/// Megatron's manager issues it (after the backward of the module group that follows in the
/// forward, or before the next chunk's backward), which the module's backward waits for. The
/// last group of each module name of a chunk whose backward comes next, and of the step's first
/// backward chunk, stays on the GPU, as Megatron keeps it. Op indices are renumbered.
/// @throws std::logic_error if a layer lacks the ops of an offloaded module (a generator bug).
void add_activation_offload(const WorkloadSpec& spec, int stage, sim::Program& program);

}  // namespace clustersim::workloads
