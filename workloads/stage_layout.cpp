#include "workloads/stage_layout.hpp"

#include <algorithm>
#include <cctype>
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

// One pass of "(group)*n" or "x*n" repetition over `text`, leftmost first and non-overlapping
// as Python's re.sub: `group` is true for "\(([^)]+)\)\*(\d+)", false for "(.)\*(\d+)".
bool unroll(std::string& text, bool group, std::string& error) {
  constexpr std::size_t kMaxLength = 1000000;
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t body_begin = i, body_end = i + 1, star = i + 1;
    if (group) {
      const std::size_t close = text[i] == '(' ? text.find(')', i + 1) : std::string::npos;
      if (close == std::string::npos || close == i + 1) {
        out += text[i++];
        continue;
      }
      body_begin = i + 1;
      body_end = close;
      star = close + 1;
    }
    std::size_t digits = star + 1;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) != 0) ++digits;
    if (star >= text.size() || text[star] != '*' || digits == star + 1) {
      out += text[i++];
      continue;
    }
    std::size_t first_digit = star + 1;
    while (first_digit + 1 < digits && text[first_digit] == '0') ++first_digit;  // leading zeros
    if (digits - first_digit > 6) {
      error = "a repetition count above 999999";
      return false;
    }
    const std::size_t n = std::stoul(text.substr(first_digit, digits - first_digit));
    const std::string body = text.substr(body_begin, body_end - body_begin);
    if (out.size() + n * body.size() > kMaxLength) {
      error = "expands beyond " + std::to_string(kMaxLength) + " characters";
      return false;
    }
    for (std::size_t k = 0; k < n; ++k) out += body;
    i = digits;
  }
  text = out;
  return true;
}

int count(const std::string& stage, char c) { return static_cast<int>(std::count(stage.begin(), stage.end(), c)); }

}  // namespace

std::vector<std::string> expand_pipeline_layout(const std::string& text, std::string& error) {
  std::string s;
  for (char c : text) {
    if (c != ',') s += c;  // purely cosmetic commas
  }
  if (!unroll(s, true, error) || !unroll(s, false, error)) return {};
  std::vector<std::string> stages(1);
  for (char c : s) {
    if (c == '|') {
      stages.emplace_back();
    } else if (c == 'E' || c == 't' || c == 'm' || c == 'L') {
      stages.back() += c;
    } else {
      const auto byte = static_cast<unsigned char>(c);
      const std::string shown = std::isprint(byte) != 0 ? std::string(1, c) : "byte " + std::to_string(byte);
      error = "'" + shown + "' is not a layer (E, t, m, L, with '|' between stages, x*n and (...)*n)";
      return {};
    }
  }
  return stages;
}

std::string pipeline_layout_error(const std::vector<std::string>& layout, const ModelSpec& m, int pp) {
  const int stages = static_cast<int>(layout.size());
  if (stages % pp != 0) return str(stages) + " virtual stages are not a multiple of pp = " + str(pp);
  // Each virtual stage of a rank beyond one per layer, MTP layer, embedding and loss would hold
  // nothing; so many empty stages only slow the simulation down (a layout of 1e6 hangs it).
  const long long most = m.layers + m.mtp_layers + 2;
  if (stages / pp > most) {
    return "gives vp = " + str(stages / pp) + ", more virtual stages per rank than the model's layers, MTP "
           "layers, embedding and loss (" + str(most) + ")";
  }
  std::string flat;
  for (const std::string& stage : layout) flat += stage;
  if (flat.empty() || flat.front() != 'E' || layout.front().empty() || layout.front().front() != 'E') {
    return "must start with the embedding, E, in the first virtual stage";
  }
  if (flat.back() != 'L' || layout.back().empty() || layout.back().back() != 'L') {
    return "must end with the loss, L, in the last virtual stage";
  }
  if (count(flat, 'E') != 1 || count(flat, 'L') != 1) return "names E and L once each";
  if (count(flat, 't') != m.layers) {
    return "holds " + str(count(flat, 't')) + " transformer layers (t); the model has " + str(m.layers);
  }
  if (count(flat, 'm') != m.mtp_layers) {
    return "holds " + str(count(flat, 'm')) + " MTP layers (m); the model has " + str(m.mtp_layers);
  }
  const std::size_t first_mtp = flat.find('m');
  if (first_mtp != std::string::npos && flat.find('t', first_mtp) != std::string::npos) {
    return "transformer layers (t) must come before the MTP layers (m)";
  }
  if (count(layout.back(), 'm') != m.mtp_layers) {
    return "MTP layers outside the last virtual stage (a standalone MTP stage) are not modelled";
  }
  return {};
}

std::vector<LayerRange> virtual_stage_layers(const ModelSpec& m, const ParallelSpec& p,
                                             std::string* error) {
  std::string why;
  const int stages = p.pp * p.vp;
  std::vector<int> counts;
  if (!p.pipeline_layout.empty()) {
    why = pipeline_layout_error(p.pipeline_layout, m, p.pp);
    if (why.empty() && static_cast<int>(p.pipeline_layout.size()) != stages) {
      why = "the layout's " + str(static_cast<long long>(p.pipeline_layout.size())) +
            " virtual stages are not pp*vp = " + str(stages);
    }
    for (const std::string& stage : p.pipeline_layout) counts.push_back(count(stage, 't'));
  } else if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
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
