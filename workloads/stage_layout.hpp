// How the transformer layers are split over pipeline stages and model chunks (virtual stages),
// as Megatron-core's get_num_layers_to_build / get_transformer_layer_offset do it: an even split
// by default; uneven first and last stages (num_layers_in_first/last_pipeline_stage); or the
// embedding and the loss counted as one layer each (account_for_embedding/loss_in_pipeline_split,
// which NeMo's Llama 3.1 405B performance recipes use for 126 layers on pp 8 x vp 8); or an
// explicit layout (pipeline_layout, Megatron-core's PipelineParallelLayerLayout).
#pragma once

#include <string>
#include <vector>

#include "workloads/job_spec.hpp"

namespace clustersim::workloads {

/// Layers [begin, end) of one model chunk.
struct LayerRange {
  int begin = 0;
  int end = 0;
  int size() const { return end - begin; }
};

/// Megatron-core's --pipeline-model-parallel-layout string expanded to its virtual stages, in
/// virtual-stage order (stage v = chunk * pp + rank), each a string of 'E' (embedding), 't'
/// (transformer layer), 'm' (MTP layer) and 'L' (loss), as PipelineParallelLayerLayout's
/// parse_str_to_list does it: commas dropped, then "(...)*n" repeated, then "x*n", then split
/// at '|'. Returns an empty vector and sets `error` for an unknown character, a group left
/// unexpanded or an expansion beyond 1e6 characters.
std::vector<std::string> expand_pipeline_layout(const std::string& text, std::string& error);

/// Why an expanded layout (ParallelSpec::pipeline_layout) does not fit `model` on pp stages,
/// as Megatron-core's validate_layer_layout checks it: a multiple of pp virtual stages, 'E'
/// once and first (in virtual stage 0), 'L' once and last, model.layers 't's, model.mtp_layers
/// 'm's after every 't'; and, as modelled here, the MTP layers in the last virtual stage.
/// Empty when it fits.
std::string pipeline_layout_error(const std::vector<std::string>& layout, const ModelSpec& model, int pp);

/// Layer ranges of the pp*vp virtual stages, in model order: virtual stage v = chunk * pp +
/// stage (Megatron's interleaving: chunk c of stage s holds virtual stage c*pp + s).
/// Returns an empty vector and sets `error` (when not null) if the split is impossible.
std::vector<LayerRange> virtual_stage_layers(const ModelSpec& model, const ParallelSpec& parallel,
                                             std::string* error = nullptr);

/// The chunks of pipeline stage `stage`: vp ranges, chunk 0 first.
/// @throws std::invalid_argument if the split is impossible or stage is outside [0, pp).
std::vector<LayerRange> stage_chunks(const ModelSpec& model, const ParallelSpec& parallel, int stage);

/// The layers of `chunk` that full recompute checkpoints, as the groups recomputed together
/// before their backward (Megatron-core TransformerBlock._checkpointed_forward): uniform,
/// consecutive groups of recompute_num_layers layers covering the chunk (the last may be
/// shorter); block, each of the chunk's first recompute_num_layers layers alone, the rest not
/// recomputed. Empty unless training.recompute is full.
std::vector<LayerRange> recompute_groups(const TrainingSpec& training, const LayerRange& chunk);

/// The group of `groups` (recompute_groups) holding `layer`, or nullptr when it is not recomputed.
const LayerRange* recompute_group_of(const std::vector<LayerRange>& groups, int layer);

/// Decoder layers full recompute re-runs, over every chunk of every stage (false for all
/// unless training.recompute is full). @throws std::invalid_argument if the split is impossible.
std::vector<bool> recomputed_layers(const WorkloadSpec& spec);

}  // namespace clustersim::workloads
