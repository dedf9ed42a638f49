// ZeRO-3 / FSDP synchronisation: every unit (embedding, transformer layer, head) keeps only its
// 1/(dp*cp) parameter shard (routed experts: 1/edp); its parameters are all-gathered before its
// forward and again before its backward, one unit ahead (the gather for a unit may start when
// the previous unit starts: FSDP's forward/backward prefetch of one module, DeepSpeed's prefetch
// bucket), and its gradients are reduce-scattered right after its backward, every microbatch.
// PyTorch FSDP2 (zero_impl: fsdp2, torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py)
// adds two things DeepSpeed's gather into a flat buffer of parameter views does not: each
// all-gather's output is copied into the unsharded parameters on the compute stream once the
// gather is done (foreach_all_gather_copy_out: split_with_sizes_copy, read and write 2 B per
// parameter), and the root module (fully_shard(model): the embedding and the output head here)
// is not resharded after its forward (_fsdp_state.py, _lazy_init: "for training, the parameters
// would be freed and all-gathered immediately"), so the backward gathers only the layers.
#include <map>

#include "workloads/dp_sync.hpp"

namespace clustersim::workloads {
namespace {

constexpr double kParamBytes = 2.0;  // BF16 parameters (see dp_sync.cpp)

class ShardedParamSync : public ParamSync {
 public:
  ShardedParamSync(ProgramBuilder& builder, const WorkloadSpec& spec, int stage)
      : b_(builder), spec_(spec), params_(stage_parameters(spec, stage)) {
    for (const auto& p : params_) {
      auto& unit = units_[unit_of(p)];
      (p.expert ? unit.expert : unit.dense) += static_cast<double>(p.numel);
      // Tied embeddings on one stage: the head reads the word embedding, which DeepSpeed's
      // pre-forward and pre-backward hooks of the head module gather again (stage 3 fetches a
      // module's parameters, shared ones included, whenever the module runs).
      if (p.group == ParamGroup::WordEmbedding && spec.model.tied_embeddings && spec.parallel.pp == 1) {
        tied_head_ += static_cast<double>(p.numel);
      }
    }
  }

  void begin_step() override {
    b_.set_context(sim::Phase::Optimizer, -1, -1);
    b_.mem("zero_grad", sim::MemKernel::Elementwise, shard() * grad_bytes());
  }

  std::vector<std::uint32_t> forward_deps(int unit, int /*microbatch*/) override {
    if (fsdp2() && unit == kHeadUnit) return {};  // gathered with the root, before the embedding
    return gather(unit);
  }
  std::vector<std::uint32_t> backward_deps(int unit) override {
    if (fsdp2() && unit < 0) return {};  // FSDP2's root keeps its parameters from the forward
    return gather(unit);
  }

  void unit_backward_done(int unit) override {
    const auto it = units_.find(unit);
    if (it == units_.end()) return;
    std::vector<std::uint32_t> after = b_.after_last_compute();
    // With CPU offload the reduced partition goes to the host at the accumulation boundary,
    // i.e. after the unit's backward of the last microbatch (ZeRO-3 has no pipeline).
    const bool boundary = ++backwards_[unit] == spec_.num_microbatches();
    reduce(it->second.dense, dense_grad_group(spec_), spec_.dp_cp(), after, boundary);
    reduce(it->second.expert, sim::GroupKind::EDP, spec_.edp(), after, boundary);
  }

  GradSink* backward_sink(bool /*last_of_chunk*/) override { return nullptr; }
  void gradient_ready(ParamGroup, int, std::uint32_t) override {}

  void end_step() override {
    b_.set_context(sim::Phase::Optimizer, -1, -1);
    std::vector<std::uint32_t> deps;
    if (last_reduce_) deps.push_back(*last_reduce_);
    const double replicated = static_cast<double>(tp_allreduced_numel(params_, spec_.parallel));
    if (replicated > 0.0) {
      deps.push_back(b_.collective("tp_ar_sp_grads", sim::CollectiveKind::AllReduce,
                                   sim::GroupKind::TP, sim::Stream::Compute,
                                   replicated * grad_bytes() / spec_.dp_cp(), deps));
    }
    emit_optimizer_step(b_, spec_, shard(), deps, /*grads_on_host=*/offload());
  }

 private:
  struct Unit {
    double dense = 0.0;
    double expert = 0.0;
  };

  static int unit_of(const ParamInfo& p) {
    if (p.layer >= 0) return p.layer;
    const bool embedding = p.group == ParamGroup::WordEmbedding || p.group == ParamGroup::PositionEmbedding;
    return embedding ? kEmbeddingUnit : kHeadUnit;
  }

  double grad_bytes() const { return spec_.parallel.grad_reduce_in_fp32 ? 4.0 : 2.0; }
  bool fsdp2() const { return spec_.parallel.zero_impl == ZeroImpl::Fsdp2; }
  bool offload() const { return spec_.parallel.optimizer_offload == OptimizerOffload::Cpu; }

  double shard() const {
    double total = 0.0;
    for (const auto& [id, unit] : units_) {
      total += unit.dense / spec_.dp_cp() + unit.expert / spec_.edp();
    }
    return total;
  }

  // All-gathers of the unit's dense and expert parameters, allowed to start as soon as the
  // previous unit started (one unit of prefetch).
  std::vector<std::uint32_t> gather(int unit) {
    std::vector<std::uint32_t> anchor;
    if (anchor_) anchor.push_back(*anchor_);
    anchor_ = b_.last_compute();
    const auto it = units_.find(unit);
    if (it == units_.end()) return {};
    std::vector<std::uint32_t> out;
    auto ag = [&](double numel, sim::GroupKind group, int size) {
      if (numel <= 0.0 || size <= 1) return;
      const std::uint32_t gathered = b_.collective("fsdp_ag", sim::CollectiveKind::AllGather, group,
                                                   sim::Stream::DpComm, numel * kParamBytes, anchor);
      out.push_back(fsdp2() ? b_.mem("fsdp_copy_out", sim::MemKernel::Copy,
                                     2.0 * numel * kParamBytes, {gathered})
                            : gathered);
    };
    double dense = it->second.dense;
    if (fsdp2() && unit == kEmbeddingUnit) {  // FSDP2's root group: the embedding and the head
      if (const auto head = units_.find(kHeadUnit); head != units_.end()) dense += head->second.dense;
    }
    if (!fsdp2() && unit == kHeadUnit) dense += tied_head_;
    ag(dense, dense_grad_group(spec_), spec_.dp_cp());
    ag(it->second.expert, sim::GroupKind::EDP, spec_.edp());
    return out;
  }

  void reduce(double numel, sim::GroupKind group, int size, const std::vector<std::uint32_t>& after,
              bool boundary) {
    if (numel <= 0.0) return;
    std::vector<std::uint32_t> reduced = after;
    if (size > 1) {
      // overlap_grad_reduce: false is DeepSpeed's overlap_comm: false, the reduction in line on
      // the compute stream (stage3.py reduces on the current stream without overlap_comm).
      const auto stream = spec_.parallel.overlap_grad_reduce ? sim::Stream::DpComm : sim::Stream::Compute;
      last_reduce_ = b_.collective("fsdp_rs", sim::CollectiveKind::ReduceScatter, group, stream,
                                   numel * grad_bytes(), after);
      reduced = {*last_reduce_};
    }
    if (offload() && boundary) emit_grad_offload(b_, numel / size, std::move(reduced));
  }

  ProgramBuilder& b_;
  const WorkloadSpec spec_;
  std::vector<ParamInfo> params_;
  std::map<int, Unit> units_;
  std::map<int, std::int64_t> backwards_;  ///< backward passes seen per unit
  double tied_head_ = 0.0;  ///< word-embedding elements the head gathers again (tied, one stage)
  std::optional<std::uint32_t> anchor_;
  std::optional<std::uint32_t> last_reduce_;
};

}  // namespace

std::unique_ptr<ParamSync> make_param_sync(ProgramBuilder& builder, const WorkloadSpec& spec, int stage) {
  if (spec.parallel.zero_stage == 3) return std::make_unique<ShardedParamSync>(builder, spec, stage);
  return std::make_unique<DataParallelSync>(builder, spec, stage);
}

}  // namespace clustersim::workloads
