#include "workloads/passes.hpp"

#include <algorithm>
#include <memory>
#include <utility>

#include "workloads/flops.hpp"

namespace clustersim::workloads {
namespace {

// Appends pieces to a plan, consecutive compute closures into one piece.
class PlanWriter {
 public:
  explicit PlanWriter(PassPlan& plan) : plan_(plan) {}
  void compute(std::function<void()> emit) {
    open_piece();
    plan_.compute.back().push_back(std::move(emit));
  }
  /// Runs after the current piece without gating the exchange after it.
  void tail(std::function<void()> emit) {
    open_piece();
    plan_.tails.back().push_back(std::move(emit));
  }
  void exchange(PassPlan::Exchange emit) {
    open_piece();
    plan_.exchanges.push_back(std::move(emit));
  }

 private:
  void open_piece() {
    if (plan_.compute.size() > plan_.exchanges.size()) return;
    plan_.compute.emplace_back();
    plan_.tails.emplace_back();
  }

  PassPlan& plan_;
};

// Plays one plan piece by piece: a compute piece waits for the exchange before it (and the
// first for the plan's waits); an exchange starts after the plan's last compute op.
class PassRunner {
 public:
  PassRunner(ProgramBuilder& b, const PassPlan& plan) : b_(b), plan_(plan), pending_(plan.wait) {}
  bool has_compute() const { return next_compute_ < plan_.compute.size(); }
  bool has_exchange() const {
    return next_exchange_ < plan_.exchanges.size() && next_exchange_ < next_compute_;
  }
  void compute() {
    b_.set_context(plan_.phase, -1, plan_.microbatch);
    for (std::uint32_t op : pending_) b_.defer(op);
    pending_.clear();
    const std::size_t first = b_.size();
    for (const auto& emit : plan_.compute[next_compute_]) emit();
    // The piece's own last compute op (a piece that added none leaves the previous one).
    if (auto op = b_.last_compute(); op && *op >= first) last_ = op;
    for (const auto& emit : plan_.tails[next_compute_]) emit();
    ++next_compute_;
  }
  void exchange() {
    b_.set_context(plan_.phase, -1, plan_.microbatch);
    std::vector<std::uint32_t> after;
    if (last_) after.push_back(*last_);
    pending_ = plan_.exchanges[next_exchange_++](after);
  }
  std::optional<std::uint32_t> last() const { return last_; }

 private:
  ProgramBuilder& b_;
  const PassPlan& plan_;
  std::vector<std::uint32_t> pending_;
  std::size_t next_compute_ = 0, next_exchange_ = 0;
  std::optional<std::uint32_t> last_;
};

// The pieces of a layer's forward: one, or for a split MoE layer attention | dispatch |
// experts | combine | unpermutation (TransformerOps::layer_pieces).
void layer_forward_plan(const PassContext& c, PlanWriter& w, int layer, int mb, bool split) {
  if (!split || c.ops.layer_pieces(layer) == 1) {
    w.compute([&c, layer, mb] {
      c.amax.counted([&] { c.ops.layer_forward(layer, c.sync.forward_deps(layer, mb)); });
    });
    return;
  }
  w.compute([&c, layer, mb] {
    c.amax.counted([&] { c.ops.layer_forward_piece(layer, 0, c.sync.forward_deps(layer, mb)); });
  });
  for (int piece = 1; piece < 3; ++piece) {
    w.exchange([&c, layer, piece](const std::vector<std::uint32_t>& after) {
      return c.ops.layer_exchange(layer, false, piece - 1, after);
    });
    w.compute([&c, layer, piece] { c.amax.counted([&] { c.ops.layer_forward_piece(layer, piece, {}); }); });
  }
}

// What the backward of `layer` needs before its first piece, asked for in backward order as
// Megatron's full recompute runs it (recompute_groups: a group of several layers re-runs its
// forwards, each after its parameters' gathers, before the backward of its last layer).
struct BackwardStart {
  std::vector<std::uint32_t> deps;
  bool recompute = false;
};
BackwardStart backward_start(const PassContext& c, const std::vector<LayerRange>& groups, int layer) {
  const LayerRange* g = recompute_group_of(groups, layer);
  if (g == nullptr) return {c.sync.backward_deps(layer), false};
  if (g->size() == 1) return {c.sync.backward_deps(layer), true};
  if (layer == g->end - 1) {
    std::vector<std::vector<std::uint32_t>> deps(static_cast<std::size_t>(g->size()));
    for (int l = g->end; l-- > g->begin;) deps[static_cast<std::size_t>(l - g->begin)] = c.sync.backward_deps(l);
    for (int l = g->begin; l < g->end; ++l) c.ops.layer_recompute(l, deps[static_cast<std::size_t>(l - g->begin)]);
  }
  return {};
}

using Groups = std::shared_ptr<const std::vector<LayerRange>>;

void layer_backward_plan(const PassContext& c, PlanWriter& w, const Groups& groups, int layer,
                         GradSink* sink, bool split) {
  if (!split || c.ops.layer_pieces(layer) == 1) {
    w.compute([&c, groups, layer, sink] {
      BackwardStart start = backward_start(c, *groups, layer);
      c.ops.layer_backward(layer, sink, std::move(start.deps), start.recompute);
      c.sync.unit_backward_done(layer);
    });
    return;
  }
  auto comm = std::make_shared<std::vector<std::uint32_t>>();
  w.compute([&c, groups, layer, sink] {
    BackwardStart start = backward_start(c, *groups, layer);
    c.ops.layer_backward_piece(layer, 0, sink, std::move(start.deps), start.recompute);
  });
  w.exchange([&c, layer](const std::vector<std::uint32_t>& after) { return c.ops.layer_exchange(layer, true, 0, after); });
  w.compute([&c, layer, sink, comm] { *comm = c.ops.layer_backward_piece(layer, 1, sink, {}, false); });
  w.tail([&c, layer, sink] { c.ops.layer_backward_tail(layer, 1, sink); });
  w.exchange([&c, layer](const std::vector<std::uint32_t>& after) { return c.ops.layer_exchange(layer, true, 1, after); });
  w.compute([&c, layer, sink, comm] {
    c.ops.layer_backward_piece(layer, 2, sink, std::move(*comm), false);
    c.sync.unit_backward_done(layer);
  });
}

void defer_all(ProgramBuilder& b, const std::vector<std::uint32_t>& deps) {
  for (std::uint32_t d : deps) b.defer(d);
}

}  // namespace

// The amax reductions of Transformer Engine's delayed-scaling FP8 recipe. TE reduces the amaxes
// of every FP8 tensor of an fp8_autocast region over the region's fp8_group (MAX all-reduce)
// when the region's forward ends and when its backward ends
// (transformer_engine/pytorch/fp8.py, FP8GlobalStateManager.reduce_and_update_fp8_tensors;
// DelayedScaling.reduce_amax defaults to True). Megatron-core puts each model chunk's layers in
// one region (TransformerBlock.forward; the output layer is outside) with fp8_group = its amax
// reduction group, the tp x cp x dp ranks of the pipeline stage (parallel_state.py,
// get_amax_reduction_group). The buffer holds one FP32 amax per FP8 tensor: input, weight and
// output of each FP8 GEMM in the forward (3), gradient in and out in the backward (2). TE
// launches the all-reduce on the compute stream and the scale update waits for it, so the next
// compute op depends on it; recomputed forwards reuse the saved scales and reduce nothing.
AmaxReductions::AmaxReductions(ProgramBuilder& b, const WorkloadSpec& spec, int chunks)
    : b_(b), on_(fp8_amax_reduced(spec)), gemms_(static_cast<std::size_t>(chunks), 0) {}

void AmaxReductions::counted(const std::function<void()>& emit) {
  const std::size_t first = b_.size();
  emit();
  count_ += b_.gemms_since(first, sim::DType::FP8);
}

void AmaxReductions::forward_done(int chunk) {
  if (!on_) return;
  gemms_[static_cast<std::size_t>(chunk)] = count_;
  emit("fp8_amax_fwd", 3.0 * static_cast<double>(count_));
}

void AmaxReductions::backward_done(int chunk) {
  if (on_) emit("fp8_amax_bwd", 2.0 * static_cast<double>(gemms_[static_cast<std::size_t>(chunk)]));
}

void AmaxReductions::emit(const char* label, double amaxes) {
  if (amaxes <= 0.0) return;
  constexpr double kAmaxBytes = 4.0;  // FP32
  std::vector<std::uint32_t> after = b_.after_last_compute();
  b_.defer(b_.collective(label, sim::CollectiveKind::AllReduce, sim::GroupKind::AMAX,
                         sim::Stream::AmaxComm, amaxes * kAmaxBytes, std::move(after)));
}

PassPlan forward_plan(const PassContext& c, int chunk, int mb, bool split) {
  PassPlan plan{sim::Phase::Forward, mb, {}, {}, {}, {}};
  PlanWriter w(plan);
  const Stage& st = c.stage;
  w.compute([&c, &st, chunk, mb] {
    if (st.first(chunk)) c.ops.embedding_forward(c.sync.forward_deps(kEmbeddingUnit, mb));
    c.amax.begin_forward();
  });
  const LayerRange& range = st.chunks[static_cast<std::size_t>(chunk)];
  for (int layer = range.begin; layer < range.end; ++layer) layer_forward_plan(c, w, layer, mb, split);
  w.compute([&c, &st, chunk, mb] {
    ProgramBuilder& b = c.builder;
    const int depths = st.last(chunk) ? st.mtp_layers : 0;
    if (depths > 0) {
      // The depths' embedding reads this stage's embedding parameters, or with tied embeddings
      // the output layer's.
      std::vector<std::uint32_t> embedding = c.sync.forward_deps(kEmbeddingUnit, mb);
      for (std::uint32_t d : c.sync.forward_deps(kHeadUnit, mb)) embedding.push_back(d);
      std::sort(embedding.begin(), embedding.end());
      embedding.erase(std::unique(embedding.begin(), embedding.end()), embedding.end());
      for (int depth = 0; depth < depths; ++depth) {
        c.amax.counted([&] { c.ops.mtp_forward(depth, c.sync.forward_deps(st.layers + depth, mb), embedding); });
      }
    }
    c.amax.forward_done(chunk);
    if (!st.last(chunk)) return;
    const std::vector<std::uint32_t> head_deps = c.sync.forward_deps(kHeadUnit, mb);
    c.ops.head_forward(head_deps);
    for (int depth = 0; depth < depths; ++depth) {
      b.set_layer(st.layers + depth);
      c.ops.head_forward(head_deps, "mtp_");
    }
  });
  return plan;
}

PassPlan backward_plan(const PassContext& c, int chunk, int mb, GradSink* sink, bool split) {
  PassPlan plan{sim::Phase::Backward, mb, {}, {}, {}, {}};
  PlanWriter w(plan);
  const Stage& st = c.stage;
  w.compute([&c, &st, chunk, sink] {
    if (!st.last(chunk)) return;
    ProgramBuilder& b = c.builder;
    defer_all(b, c.sync.backward_deps(kHeadUnit));
    // The MTP depths, deepest first, each after its pass through the head; the shared head and
    // embedding report their gradients once: at the main head's backward, and at the first
    // stage's embedding backward when that is on this rank too (pp 1).
    for (int depth = st.mtp_layers; depth-- > 0;) {
      b.set_layer(st.layers + depth);
      c.ops.head_backward(nullptr, "mtp_");
      c.ops.mtp_backward(depth, sink, st.first(0) ? nullptr : sink);
      c.sync.unit_backward_done(st.layers + depth);
    }
    c.ops.head_backward(sink);
    c.sync.unit_backward_done(kHeadUnit);
  });
  const LayerRange& range = st.chunks[static_cast<std::size_t>(chunk)];
  // Shared by the plan's closures, which run after this function returns.
  const Groups groups = std::make_shared<const std::vector<LayerRange>>(recompute_groups(st.training, range));
  for (int layer = range.end; layer-- > range.begin;) layer_backward_plan(c, w, groups, layer, sink, split);
  w.compute([&c, &st, chunk, sink] {
    c.amax.backward_done(chunk);
    if (!st.first(chunk)) return;
    defer_all(c.builder, c.sync.backward_deps(kEmbeddingUnit));
    c.ops.embedding_backward(sink);
    c.sync.unit_backward_done(kEmbeddingUnit);
  });
  return plan;
}

std::optional<std::uint32_t> run_pass(ProgramBuilder& b, const PassPlan& plan) {
  PassRunner r(b, plan);
  while (r.has_compute()) {
    r.compute();
    if (r.has_exchange()) r.exchange();
  }
  return r.last();
}

PassEnds run_combined(ProgramBuilder& b, const PassPlan& forward, const PassPlan& backward) {
  PassRunner f(b, forward), r(b, backward);
  r.compute();
  while (f.has_compute() || r.has_compute()) {
    if (f.has_compute()) f.compute();
    if (r.has_exchange()) r.exchange();
    if (f.has_exchange()) f.exchange();
    if (r.has_compute()) r.compute();
  }
  return {f.last(), r.last()};
}

}  // namespace clustersim::workloads
