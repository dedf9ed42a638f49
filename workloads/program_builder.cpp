#include "workloads/program_builder.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <variant>

#include "workloads/flops.hpp"

namespace clustersim::workloads {

void ProgramBuilder::set_context(sim::Phase phase, int layer, int microbatch) {
  phase_ = phase;
  layer_ = layer;
  microbatch_ = microbatch;
}

namespace {
constexpr std::uint32_t kUnplaced = 0xffffffffu;
}  // namespace

// An op is held back (placed later with its W group) when the builder holds back weight
// gradients and it is one, or added in a WgradInputScope, or when it depends on an op that is
// held back. A held-back op leaves the ops deferred to the next compute op (defer()) to the next
// op that is not held back: they were posted for the pass being built, not for its W.
std::uint32_t ProgramBuilder::add(sim::OpShape shape, sim::Stream stream, const std::string& label,
                                  double flops, double bytes, std::vector<std::uint32_t> deps) {
  const bool hold = resolve(deps) || (holding_ && (capture_all_ || adding_wgrad_));
  if (!hold && stream == sim::Stream::Compute && !deferred_.empty()) {
    for (std::uint32_t dep : deferred_) {
      if (std::find(deps.begin(), deps.end(), dep) == deps.end()) deps.push_back(dep);
    }
    deferred_.clear();
    if (resolve(deps)) throw std::logic_error("op '" + label + "' waits for a held-back weight gradient");
    std::sort(deps.begin(), deps.end());
  }
  sim::Op op;
  op.shape = std::move(shape);
  op.stream = stream;
  op.phase = phase_;
  op.layer = layer_;
  op.microbatch = microbatch_;
  op.recompute = recompute_;
  op.label = program_.label_id(label);
  op.flops = flops;
  op.bytes = bytes;
  op.deps = std::move(deps);
  if (!hold) return append(std::move(op));
  if (!holding_ && stream == sim::Stream::Compute) {
    throw std::logic_error("op '" + label + "' on the compute stream waits for a held-back weight gradient");
  }
  // The W group being built, or else the newest group among those of the op's held-back deps.
  std::size_t group = groups_.size() - 1;
  if (!holding_) {
    std::uint32_t newest = 0;
    for (std::uint32_t dep : op.deps) {
      if (dep & kDeferredBit) newest = std::max(newest, group_of_seq_[dep & ~kDeferredBit]);
    }
    group = newest - first_group_;
  }
  const auto seq = static_cast<std::uint32_t>(placed_.size());
  placed_.push_back(kUnplaced);
  group_of_seq_.push_back(static_cast<std::uint32_t>(first_group_ + group));
  index_of_seq_.push_back(static_cast<std::uint32_t>(groups_[group].size()));
  groups_[group].push_back({std::move(op), seq});
  return seq | kDeferredBit;
}

bool ProgramBuilder::resolve(std::vector<std::uint32_t>& deps) const {
  bool waits = false;
  for (std::uint32_t& dep : deps) {
    if ((dep & kDeferredBit) == 0) continue;
    const std::uint32_t real = placed_.at(dep & ~kDeferredBit);
    if (real == kUnplaced) {
      waits = true;
    } else {
      dep = real;
    }
  }
  return waits;
}

std::uint32_t ProgramBuilder::append(sim::Op op) {
  const auto index = static_cast<std::uint32_t>(program_.ops.size());
  for (std::uint32_t dep : op.deps) {
    if (dep >= index) {
      throw std::logic_error("op '" + program_.labels.at(op.label) + "' depends on a later op");
    }
  }
  const bool compute = op.stream == sim::Stream::Compute;
  program_.ops.push_back(std::move(op));
  if (compute) last_compute_ = index;
  return index;
}

sim::Op& ProgramBuilder::op_at(std::uint32_t id) {
  if ((id & kDeferredBit) == 0) {
    if (id >= program_.ops.size()) throw std::logic_error("no op " + std::to_string(id));
    return program_.ops[id];
  }
  const std::uint32_t seq = id & ~kDeferredBit;
  if (seq >= placed_.size()) throw std::logic_error("no held-back op " + std::to_string(seq));
  if (placed_[seq] != kUnplaced) return program_.ops[placed_[seq]];
  return groups_.at(group_of_seq_[seq] - first_group_).at(index_of_seq_[seq]).op;
}

void ProgramBuilder::begin_deferred_wgrads() {
  if (holding_) throw std::logic_error("begin_deferred_wgrads while already holding back");
  holding_ = true;
  groups_.emplace_back();
}

void ProgramBuilder::end_deferred_wgrads() { holding_ = false; }

void ProgramBuilder::place_oldest_wgrads() {
  if (groups_.empty() || (holding_ && groups_.size() == 1)) {
    throw std::logic_error("place_oldest_wgrads: no W group waits");
  }
  std::vector<HeldOp> group = std::move(groups_.front());
  groups_.pop_front();
  ++first_group_;
  for (HeldOp& held : group) {
    if (resolve(held.op.deps)) throw std::logic_error("a W group's op waits for a later group");
    std::sort(held.op.deps.begin(), held.op.deps.end());
    placed_[held.seq] = append(std::move(held.op));
  }
}

std::uint32_t ProgramBuilder::gemm(const std::string& label, std::int64_t m, std::int64_t n,
                                   std::int64_t k, sim::DType dtype, double out_bytes,
                                   std::vector<std::uint32_t> deps) {
  return add_gemm(label, {m, n, k, dtype}, sim::Fp8Scaling::Block2D1D, out_bytes, std::move(deps));
}

// `block`: how Transformer Engine's Float8BlockScaling scales this GEMM's operands when the
// builder runs FP8 GEMMs block-scaled (set_fp8_block_scaling).
std::uint32_t ProgramBuilder::add_gemm(const std::string& label, sim::GemmShape shape,
                                       sim::Fp8Scaling block, double out_bytes,
                                       std::vector<std::uint32_t> deps) {
  if (fp8_block_ && shape.dtype == sim::DType::FP8) shape.fp8_scaling = block;
  const std::int64_t m = shape.m, n = shape.n, k = shape.k;
  const double md = static_cast<double>(m), nd = static_cast<double>(n), kd = static_cast<double>(k);
  const double bytes = (md * kd + kd * nd) * sim::dtype_bytes(shape.dtype) + md * nd * out_bytes;
  return add(shape, sim::Stream::Compute, label, gemm_flops(shape), bytes, std::move(deps));
}

std::uint32_t ProgramBuilder::wgrad(const std::string& label, std::int64_t in, std::int64_t out,
                                    std::int64_t tokens, sim::DType dtype, sim::GradAccum accum,
                                    std::vector<std::uint32_t> deps) {
  // Output bytes per element: BF16 written; FP32 main_grad read and written; BF16 main_grad
  // read and written.
  const double out_bytes = accum == sim::GradAccum::F32 ? 8.0 : accum == sim::GradAccum::BF16 ? 4.0 : 2.0;
  sim::GemmShape shape{in, out, tokens, dtype};
  shape.grad_accum = accum;
  // Transformer Engine's Float8BlockScaling quantizes the weight gradient's two operands (the
  // output gradient and the input, both activations) in 1x128 blocks.
  adding_wgrad_ = true;
  const std::uint32_t op = add_gemm(label, shape, sim::Fp8Scaling::Block1D1D, out_bytes, std::move(deps));
  adding_wgrad_ = false;
  last_wgrad_ = op;
  return op;
}

void ProgramBuilder::set_gemm_groups(std::uint32_t op, int groups, sim::GroupAxis axis) {
  auto* g = std::get_if<sim::GemmShape>(&op_at(op).shape);
  if (g == nullptr) throw std::logic_error("set_gemm_groups on an op that is not a GEMM");
  const std::int64_t dim = axis == sim::GroupAxis::K ? g->k : g->m;
  if (groups < 1 || groups > dim) throw std::logic_error("set_gemm_groups: groups outside 1..m (or k)");
  g->groups = groups;
  g->group_axis = axis;
}

void ProgramBuilder::set_gemm_execution(std::uint32_t op, int splits, int sm_margin,
                                        int busy_sms) {
  auto* g = std::get_if<sim::GemmShape>(&op_at(op).shape);
  if (g == nullptr) throw std::logic_error("set_gemm_execution on an op that is not a GEMM");
  if (splits < 1 || sm_margin < 0 || busy_sms < 0) {
    throw std::logic_error("set_gemm_execution: bad splits, margin or busy SMs");
  }
  g->splits = splits;
  g->sm_margin = sm_margin;
  g->busy_sms = busy_sms;
}

std::size_t ProgramBuilder::gemms_since(std::size_t first, sim::DType dtype) const {
  std::size_t n = 0;
  for (std::size_t i = first; i < program_.ops.size(); ++i) {
    const auto* g = std::get_if<sim::GemmShape>(&program_.ops[i].shape);
    if (g != nullptr && g->dtype == dtype && !program_.ops[i].recompute) ++n;
  }
  return n;
}

std::uint32_t ProgramBuilder::attention(const std::string& label, const sim::AttentionShape& shape,
                                        double bytes) {
  return add(shape, sim::Stream::Compute, label, attention_flops(shape), bytes);
}

std::uint32_t ProgramBuilder::mem(const std::string& label, sim::MemKernel kernel, double bytes,
                                  std::vector<std::uint32_t> deps) {
  return add(sim::MemBoundShape{kernel}, sim::Stream::Compute, label, 0.0, bytes, std::move(deps));
}

std::uint32_t ProgramBuilder::host(const std::string& label, sim::MemKernel kernel,
                                   sim::HostThreads threads, double bytes,
                                   std::vector<std::uint32_t> deps) {
  if (!sim::is_host_kernel(kernel)) {
    throw std::logic_error(std::string("ProgramBuilder::host: '") + sim::to_string(kernel) +
                           "' is not a host kernel");
  }
  return add(sim::MemBoundShape{kernel, threads}, sim::Stream::Compute, label, 0.0, bytes,
             std::move(deps));
}

std::uint32_t ProgramBuilder::collective(const std::string& label, sim::CollectiveKind kind,
                                         sim::GroupKind group, sim::Stream stream, double bytes,
                                         std::vector<std::uint32_t> deps) {
  return add(sim::CollectiveSpec{kind, group, {}}, stream, label, 0.0, bytes, std::move(deps));
}

std::uint32_t ProgramBuilder::token_exchange(const std::string& label, sim::GroupKind group,
                                             sim::Stream stream, double bytes,
                                             const sim::TokenRouting& routing,
                                             std::vector<std::uint32_t> deps) {
  return add(sim::CollectiveSpec{sim::CollectiveKind::TokenExchange, group, routing}, stream, label,
             0.0, bytes, std::move(deps));
}

std::uint32_t ProgramBuilder::p2p(const std::string& label, sim::Peer send_to, sim::Peer recv_from,
                                  double bytes, sim::Stream stream, std::vector<std::uint32_t> deps) {
  return add(sim::P2PSpec{send_to, recv_from}, stream, label, 0.0, bytes, std::move(deps));
}

}  // namespace clustersim::workloads
