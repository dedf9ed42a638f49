#include "workloads/stage_layout.hpp"

#include <algorithm>
#include <stdexcept>

namespace clustersim::workloads {
namespace {

std::string str(long long v) { return std::to_string(v); }

// Layers per virtual stage with explicit first/last stage sizes: the first (last) stage's
// layers spread evenly over its vp chunks, the rest evenly over the middle stages' chunks.
std::vector<int> uneven_counts(const ModelSpec& m, const ParallelSpec& p, std::string& error) {
  const int pp = p.pp, vp = p.vp;
  const int first = p.first_stage_layers, last = p.last_stage_layers;
  const int middle_stages = pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const long long rest = m.layers - first - last;
  if (rest < 0 || (middle_stages == 0 && rest != 0)) {
    error = "first and last stage layers (" + str(first) + " + " + str(last) +
            ") do not add up with the model's " + str(m.layers) + " layers";
    return {};
  }
  if (middle_stages > 0 && rest % (static_cast<long long>(middle_stages) * vp) != 0) {
    error = "the " + str(rest) + " layers left for the " + str(middle_stages) +
            " middle stages are not divisible by middle stages * vp = " + str(middle_stages * vp);
    return {};
  }
  for (int n : {first, last}) {
    if (n > 0 && n % vp != 0) {
      error = "an uneven stage's " + str(n) + " layers are not divisible by vp = " + str(vp);
      return {};
    }
  }
  const int per_middle = middle_stages > 0 ? static_cast<int>(rest / (middle_stages * vp)) : 0;
  std::vector<int> counts(static_cast<std::size_t>(pp * vp), per_middle);
  for (int c = 0; c < vp; ++c) {
    if (first > 0) counts[static_cast<std::size_t>(c * pp)] = first / vp;
    if (last > 0) counts[static_cast<std::size_t>(c * pp + pp - 1)] = last / vp;
  }
  return counts;
}

}  // namespace

std::vector<LayerRange> virtual_stage_layers(const ModelSpec& m, const ParallelSpec& p,
                                             std::string* error) {
  std::string why;
  const int stages = p.pp * p.vp;
  std::vector<int> counts;
  if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
    counts = uneven_counts(m, p, why);
  } else {
    // Megatron-core: with account_for_embedding/loss the embedding and the loss take the place
    // of one layer each in the even split, and the first (last) virtual stage builds one layer
    // fewer.
    const int extra = (p.account_for_embedding ? 1 : 0) + (p.account_for_loss ? 1 : 0);
    const long long slots = m.layers + extra;
    if (slots % stages != 0) {
      why = "model.layers (" + str(m.layers) + (extra > 0 ? " + " + str(extra) + " for embedding/loss" : "") +
            ") is not divisible by pp*vp = " + str(stages) +
            "; give num_layers_in_first/last_pipeline_stage or account_for_*_in_pipeline_split";
    } else {
      counts.assign(static_cast<std::size_t>(stages), static_cast<int>(slots / stages));
      if (p.account_for_embedding) --counts.front();
      if (p.account_for_loss) --counts.back();
    }
  }
  std::vector<LayerRange> out;
  int begin = 0;
  for (int n : counts) {
    if (n < 0) why = "a virtual stage would get a negative number of layers";
    out.push_back({begin, begin + n});
    begin += n;
  }
  if (why.empty() && begin != m.layers) why = "the split does not cover the model's layers";
  if (!why.empty()) {
    if (error != nullptr) *error = why;
    return {};
  }
  return out;
}

std::vector<LayerRange> recompute_groups(const TrainingSpec& t, const LayerRange& chunk) {
  std::vector<LayerRange> groups;
  if (t.recompute != Recompute::Full) return groups;
  const int n = std::max(1, t.recompute_num_layers);
  if (t.recompute_method == RecomputeMethod::Block) {
    for (int l = chunk.begin; l < std::min(chunk.end, chunk.begin + n); ++l) groups.push_back({l, l + 1});
    return groups;
  }
  for (int l = chunk.begin; l < chunk.end; l += n) groups.push_back({l, std::min(chunk.end, l + n)});
  return groups;
}

const LayerRange* recompute_group_of(const std::vector<LayerRange>& groups, int layer) {
  for (const LayerRange& g : groups) {
    if (layer >= g.begin && layer < g.end) return &g;
  }
  return nullptr;
}

std::vector<bool> recomputed_layers(const WorkloadSpec& spec) {
  std::vector<bool> out(static_cast<std::size_t>(spec.model.layers), false);
  if (spec.training.recompute != Recompute::Full) return out;
  std::string error;
  const auto all = virtual_stage_layers(spec.model, spec.parallel, &error);
  if (all.empty()) throw std::invalid_argument("invalid pipeline split: " + error);
  for (const LayerRange& chunk : all) {
    for (const LayerRange& g : recompute_groups(spec.training, chunk)) {
      for (int l = g.begin; l < g.end; ++l) out[static_cast<std::size_t>(l)] = true;
    }
  }
  return out;
}

std::vector<LayerRange> stage_chunks(const ModelSpec& m, const ParallelSpec& p, int stage) {
  if (stage < 0 || stage >= p.pp) throw std::invalid_argument("stage out of range");
  std::string error;
  const auto all = virtual_stage_layers(m, p, &error);
  if (all.empty()) throw std::invalid_argument("invalid pipeline split: " + error);
  std::vector<LayerRange> out;
  for (int c = 0; c < p.vp; ++c) out.push_back(all[static_cast<std::size_t>(c * p.pp + stage)]);
  return out;
}

}  // namespace clustersim::workloads
