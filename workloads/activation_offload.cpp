#include "workloads/activation_offload.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "workloads/layer_memory.hpp"
#include "workloads/stage_layout.hpp"

namespace clustersim::workloads {
namespace {

double d(std::int64_t v) { return static_cast<double>(v); }

// A saved tensor: elements and bytes per element. Tensors under Megatron's minimum size are not
// offloaded (they stay in the group's GPU memory and cost no copy).
struct Saved {
  double elements = 0.0;
  double bytes_per = 0.0;
  double bytes() const { return elements >= kMinOffloadedElements ? elements * bytes_per : 0.0; }
};

std::size_t index(OffloadModule m) { return static_cast<std::size_t>(m); }

}  // namespace

// What each module saves for its backward under Megatron-core's Transformer Engine layer spec
// (the memory model's per-tensor terms, docs/memory-model.md "Activations"): linear_qkv is TE's
// LayerNormLinear, which saves the norm input (BF16) and the norm output it multiplies (FP8 with
// an FP8 recipe); the core attention saves q, k, v, its output and the FP32 log-sum-exp; the
// projection its input, which is the attention output itself unless an FP8 projection casts a
// BF16 output (then its own FP8 copy); a MoE layer's pre-MLP norm (a separate TENorm there) its
// input; the grouped expert FC1 its (FP8) input; the expert activation its BF16 input.
LayerOffload layer_offload(const WorkloadSpec& spec, int layer) {
  LayerOffload out;
  const TrainingSpec& t = spec.training;
  if (t.offload_modules.empty() || layer < 0 || layer >= spec.model.layers) return out;
  const LayerShape x = layer_shape(spec);
  const RankShapes& s = x.s;
  const double gin = t.precision == Precision::FP8 ? 1.0 : kBf16Bytes;
  const double att = t.fp8_attention ? 1.0 : kBf16Bytes;
  const double a = d(s.heads);
  const double g = spec.model.attention == AttentionKind::Mla ? a : d(s.kv_heads);
  const Saved output{x.t * a * d(s.v_head_dim), att};
  const bool shared_output = gin >= att;  // the projection's input is the output tensor
  const bool core = t.offloads(OffloadModule::CoreAttn);
  const bool proj = t.offloads(OffloadModule::AttnProj);
  auto add = [&](OffloadModule m, std::initializer_list<Saved> tensors) {
    if (!t.offloads(m)) return;
    for (const Saved& v : tensors) {
      out.copied[index(m)] += v.bytes();
      out.freed += v.bytes();
    }
  };
  add(OffloadModule::QkvLinear, {{x.tsp * x.h, kBf16Bytes}, {x.tin * x.h, gin}});
  add(OffloadModule::CoreAttn, {{x.t * a * d(s.head_dim), att},
                                {x.t * g * d(s.head_dim), att},
                                {x.t * g * d(s.v_head_dim), att},
                                {x.t * a, 4.0}});
  if (core) {
    out.copied[index(OffloadModule::CoreAttn)] += output.bytes();
    if (!shared_output || proj) out.freed += output.bytes();
  }
  if (proj) {
    const Saved input = shared_output ? output : Saved{x.t * a * d(s.v_head_dim), gin};
    out.copied[index(OffloadModule::AttnProj)] += input.bytes();
    if (!shared_output || !core) out.freed += input.bytes();
  }
  if (spec.model.is_moe_layer(layer)) {
    const double rows = d(s.expert_rows);
    add(OffloadModule::MlpNorm, {{x.tsp * x.h, kBf16Bytes}});
    add(OffloadModule::ExpertFc1, {{rows * x.h, gin}});
    add(OffloadModule::MoeAct, {{rows * d(s.expert_fc1_out), kBf16Bytes}});
  }
  return out;
}

std::vector<double> chunk_copied_bytes(const WorkloadSpec& spec, const std::vector<LayerRange>& chunks) {
  std::vector<double> out;
  for (const LayerRange& r : chunks) {
    double bytes = 0.0;
    for (int l = r.begin; l < r.end; ++l) {
      for (double b : layer_offload(spec, l).copied) bytes += b;
    }
    out.push_back(bytes);
  }
  return out;
}

double offload_kept_on_gpu(const WorkloadSpec& spec, const std::vector<LayerRange>& chunks) {
  double kept = 0.0, ahead = 0.0;
  for (const LayerRange& r : chunks) {
    std::array<double, kOffloadModuleCount> last{};
    for (int l = r.begin; l < r.end; ++l) {
      const LayerOffload o = layer_offload(spec, l);
      for (std::size_t m = 0; m < last.size(); ++m) {
        if (o.copied[m] > 0.0) last[m] = o.copied[m];
        ahead = std::max(ahead, o.copied[m]);
      }
    }
    double sum = 0.0;
    for (double b : last) sum += b;
    kept = std::max(kept, sum);
  }
  return kept + ahead;
}

namespace {

constexpr std::uint32_t kNone = UINT32_MAX;

// One module group of one layer pass: where its forward ends (the offload is issued after it),
// where its backward starts (waits for the reload) and ends (issues the next reload).
struct Group {
  OffloadModule module = OffloadModule::QkvLinear;
  int layer = 0;
  int microbatch = 0;
  double bytes = 0.0;
  std::uint32_t commit = kNone, wait = kNone, end = kNone;
  bool offload = true;
  std::size_t offload_op = SIZE_MAX;  // index in the added ops
};

// A model chunk's pass for one microbatch: its groups in forward order.
struct Chunk {
  std::vector<Group> groups;
  std::uint32_t forward_end = 0;    // its last commit
  std::uint32_t backward_start = 0;  // its first wait
  std::vector<std::size_t> stack;   // offloaded groups not yet reloaded (Megatron's _groups_to_reload)
};

bool starts(const std::string& label, const char* prefix) { return label.rfind(prefix, 0) == 0; }

// Ops of one layer pass, in program order.
using Pass = std::vector<std::uint32_t>;

std::uint32_t first_with(const sim::Program& p, const Pass& ops, const char* prefix, std::size_t from = 0) {
  for (std::size_t i = from; i < ops.size(); ++i) {
    if (starts(p.labels[p.ops[ops[i]].label], prefix)) return ops[i];
  }
  return kNone;
}

std::uint32_t last_with(const sim::Program& p, const Pass& ops, const char* prefix) {
  for (std::size_t i = ops.size(); i-- > 0;) {
    if (starts(p.labels[p.ops[ops[i]].label], prefix)) return ops[i];
  }
  return kNone;
}

std::size_t position(const Pass& ops, std::uint32_t op) {
  return static_cast<std::size_t>(std::find(ops.begin(), ops.end(), op) - ops.begin());
}

// A module whose ops all carry one label prefix commits after its last forward op, waits before
// its first backward op and ends with its last.
void by_prefix(const sim::Program& p, const Pass& fwd, const Pass& bwd, const char* prefix, Group& g) {
  g.commit = last_with(p, fwd, prefix);
  g.wait = first_with(p, bwd, prefix);
  g.end = last_with(p, bwd, prefix);
}

// Locates module `m`'s ops in a layer's forward and backward passes (docs/trace-format.md labels).
void locate(const sim::Program& p, const Pass& fwd, const Pass& bwd, Group& g) {
  switch (g.module) {
    case OffloadModule::QkvLinear: {
      g.commit = last_with(p, fwd, "qkv");
      g.wait = first_with(p, bwd, "qkv");
      // TE's LayerNormLinear ends its backward with the norm's.
      g.end = g.wait == kNone ? kNone : first_with(p, bwd, "norm_bwd", position(bwd, g.wait));
      break;
    }
    case OffloadModule::CoreAttn:
      by_prefix(p, fwd, bwd, "attn", g);
      break;
    case OffloadModule::AttnProj: {
      // Megatron commits after linear_proj returns, its reduce-scatter done: the residual add
      // that follows waits for both.
      const std::uint32_t proj = last_with(p, fwd, "proj");
      g.commit = proj == kNone ? kNone : first_with(p, fwd, "residual", position(fwd, proj));
      g.wait = first_with(p, bwd, "proj");
      g.end = last_with(p, bwd, "proj");
      break;
    }
    case OffloadModule::MlpNorm: {
      const std::uint32_t first = first_with(p, fwd, "norm");
      g.commit = first == kNone ? kNone : first_with(p, fwd, "norm", position(fwd, first) + 1);
      g.wait = g.end = first_with(p, bwd, "norm_bwd");
      break;
    }
    case OffloadModule::ExpertFc1:
      by_prefix(p, fwd, bwd, "expert_fc1", g);
      break;
    case OffloadModule::MoeAct:
      by_prefix(p, fwd, bwd, "expert_act", g);
      break;
  }
  if (g.commit == kNone || g.wait == kNone || g.end == kNone) {
    throw std::logic_error(std::string("activation offload: layer ") + std::to_string(g.layer) +
                           " of microbatch " + std::to_string(g.microbatch) + " has no " +
                           to_string(g.module) + " ops");
  }
}

// An added op, placed right after the existing op `after`; its dependencies are existing ops
// and earlier added ops.
struct Added {
  std::uint32_t after = 0;
  sim::Op op;
  std::vector<std::uint32_t> deps;
  std::vector<std::size_t> added_deps;
};

// The layer passes of the program, keyed by (microbatch, layer).
struct Passes {
  std::map<std::pair<int, int>, Pass> forward, backward;
};

Passes collect(const sim::Program& program, int layers) {
  Passes out;
  for (std::uint32_t i = 0; i < program.ops.size(); ++i) {
    const sim::Op& op = program.ops[i];
    if (op.layer < 0 || op.layer >= layers || op.microbatch < 0 || op.recompute) continue;
    const auto key = std::make_pair(op.microbatch, op.layer);
    if (op.phase == sim::Phase::Forward) out.forward[key].push_back(i);
    if (op.phase == sim::Phase::Backward) out.backward[key].push_back(i);
  }
  return out;
}

// The chunk passes in program order of their backward, each with its groups located.
std::vector<Chunk> build_chunks(const WorkloadSpec& spec, int stage, const sim::Program& program) {
  const Passes passes = collect(program, static_cast<int>(spec.model.layers));
  const auto ranges = stage_chunks(spec.model, spec.parallel, stage);
  std::map<std::pair<int, int>, Chunk> by_key;  // (microbatch, chunk)
  std::map<int, LayerOffload> bytes_of;         // per layer: the same for every microbatch
  for (const auto& [key, fwd] : passes.forward) {
    const auto [microbatch, layer] = key;
    const auto range = std::find_if(ranges.begin(), ranges.end(),
                                    [&](const LayerRange& r) { return layer >= r.begin && layer < r.end; });
    const Pass& bwd = passes.backward.at(key);
    auto cached = bytes_of.find(layer);
    if (cached == bytes_of.end()) cached = bytes_of.emplace(layer, layer_offload(spec, layer)).first;
    const LayerOffload& bytes = cached->second;
    Chunk& c = by_key[{microbatch, static_cast<int>(range - ranges.begin())}];
    for (const OffloadModule m : spec.training.offload_modules) {
      const bool moe_module = m == OffloadModule::MlpNorm || m == OffloadModule::ExpertFc1 ||
                              m == OffloadModule::MoeAct;
      if (moe_module && !spec.model.is_moe_layer(layer)) continue;
      Group g{m, layer, microbatch, bytes.copied[index(m)]};
      locate(program, fwd, bwd, g);
      c.groups.push_back(g);
    }
  }
  std::vector<Chunk> chunks;
  for (auto& [key, c] : by_key) {
    if (c.groups.empty()) continue;
    c.forward_end = 0;
    c.backward_start = kNone;
    for (const Group& g : c.groups) {
      c.forward_end = std::max(c.forward_end, g.commit);
      c.backward_start = std::min(c.backward_start, g.wait);
    }
    chunks.push_back(std::move(c));
  }
  std::sort(chunks.begin(), chunks.end(),
            [](const Chunk& a, const Chunk& b) { return a.backward_start < b.backward_start; });
  return chunks;
}

// Megatron keeps the last group of each module name on the GPU in a chunk whose backward is the
// next to run when its forward ends (should_bulk_offload), and in the step's first backward
// chunk (post_warmup_callback's offload margin), so that no backward starts on a reload.
void keep_last_groups(std::vector<Chunk>& chunks) {
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    std::uint32_t next_backward = kNone;
    for (const Chunk& other : chunks) {
      if (other.backward_start > chunks[k].forward_end) next_backward = std::min(next_backward, other.backward_start);
    }
    if (k != 0 && next_backward != chunks[k].backward_start) continue;
    std::vector<bool> seen(kOffloadModuleCount, false);
    for (std::size_t i = chunks[k].groups.size(); i-- > 0;) {
      Group& g = chunks[k].groups[i];
      if (seen[index(g.module)]) continue;
      seen[index(g.module)] = true;
      g.offload = false;
    }
  }
}

sim::Op copy_op(sim::Program& program, const Group& g, bool reload) {
  sim::Op op;
  op.shape = sim::MemBoundShape{sim::MemKernel::HostCopy};
  op.stream = reload ? sim::Stream::H2D : sim::Stream::D2H;
  op.phase = reload ? sim::Phase::Backward : sim::Phase::Forward;
  op.layer = g.layer;
  op.microbatch = g.microbatch;
  op.label = program.label_id(std::string(reload ? "reload_" : "offload_") + to_string(g.module));
  op.bytes = g.bytes;
  return op;
}

// Plays Megatron's manager over the backward order: a group's reload is issued at the end of
// the backward of the group after it in its chunk (the top of the chunk's stack), or, when the
// chunk has none left, the next backward chunk's top is pre-reloaded; a group whose reload was
// never issued is reloaded by the compute stream itself when its backward needs it.
std::vector<Added> plan_copies(sim::Program& program, std::vector<Chunk>& chunks,
                               std::vector<std::vector<std::size_t>>& waits) {
  std::vector<Added> added;
  for (Chunk& c : chunks) {
    for (std::size_t i = 0; i < c.groups.size(); ++i) {
      Group& g = c.groups[i];
      if (!g.offload) continue;
      c.stack.push_back(i);
      if (g.bytes <= 0.0) continue;
      g.offload_op = added.size();
      added.push_back({g.commit, copy_op(program, g, false), {g.commit}, {}});
    }
  }
  auto reload = [&](Group& g, std::uint32_t issue, bool blocking) {
    if (g.bytes <= 0.0) return;
    sim::Op op = copy_op(program, g, true);
    if (blocking) op.stream = sim::Stream::Compute;
    const std::uint32_t after = blocking ? g.wait - 1 : issue;
    added.push_back({after, std::move(op), blocking ? std::vector<std::uint32_t>{} : std::vector<std::uint32_t>{issue},
                     {g.offload_op}});
    waits[g.wait].push_back(added.size() - 1);
  };
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    Chunk& c = chunks[k];
    for (std::size_t i = c.groups.size(); i-- > 0;) {
      Group& g = c.groups[i];
      if (!c.stack.empty() && c.stack.back() == i) {  // never issued: reloaded in line
        c.stack.pop_back();
        reload(g, g.wait, true);
      }
      if (!c.stack.empty()) {
        Group& top = c.groups[c.stack.back()];
        c.stack.pop_back();
        reload(top, g.end, false);
      } else if (k + 1 < chunks.size() && chunks[k + 1].forward_end < g.end && !chunks[k + 1].stack.empty()) {
        Chunk& next = chunks[k + 1];
        Group& top = next.groups[next.stack.back()];
        next.stack.pop_back();
        reload(top, g.end, false);
      }
    }
  }
  return added;
}

// Rebuilds the program with the added ops in place and every dependency renumbered.
void splice(sim::Program& program, std::vector<Added>& added, const std::vector<std::vector<std::size_t>>& waits) {
  std::vector<std::size_t> order(added.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return added[a].after < added[b].after; });
  const std::size_t n = program.ops.size();
  std::vector<std::uint32_t> old_to_new(n);
  std::vector<std::uint32_t> added_to_new(added.size(), kNone);
  std::vector<sim::Op> ops;
  ops.reserve(n + added.size());
  std::size_t next = 0;
  auto mapped = [](std::uint32_t id) {
    if (id == kNone) throw std::logic_error("activation offload: a copy depends on a later op");
    return id;
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    sim::Op op = std::move(program.ops[i]);
    for (auto& dep : op.deps) dep = old_to_new[dep];
    for (std::size_t a : waits[i]) op.deps.push_back(mapped(added_to_new[a]));
    old_to_new[i] = static_cast<std::uint32_t>(ops.size());
    ops.push_back(std::move(op));
    for (; next < order.size() && added[order[next]].after == i; ++next) {
      Added& a = added[order[next]];
      a.op.deps.clear();
      for (std::uint32_t dep : a.deps) a.op.deps.push_back(old_to_new[dep]);
      for (std::size_t dep : a.added_deps) a.op.deps.push_back(mapped(added_to_new[dep]));
      added_to_new[order[next]] = static_cast<std::uint32_t>(ops.size());
      ops.push_back(std::move(a.op));
    }
  }
  program.ops = std::move(ops);
}

}  // namespace

void add_activation_offload(const WorkloadSpec& spec, int stage, sim::Program& program) {
  if (spec.training.offload_modules.empty()) return;
  std::vector<Chunk> chunks = build_chunks(spec, stage, program);
  keep_last_groups(chunks);
  std::vector<std::vector<std::size_t>> waits(program.ops.size());
  std::vector<Added> added = plan_copies(program, chunks, waits);
  splice(program, added, waits);
}

}  // namespace clustersim::workloads
