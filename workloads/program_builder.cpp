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

std::uint32_t ProgramBuilder::add(sim::OpShape shape, sim::Stream stream, const std::string& label,
                                  double flops, double bytes, std::vector<std::uint32_t> deps) {
  const auto index = static_cast<std::uint32_t>(program_.ops.size());
  if (stream == sim::Stream::Compute && !deferred_.empty()) {
    for (std::uint32_t dep : deferred_) {
      if (std::find(deps.begin(), deps.end(), dep) == deps.end()) deps.push_back(dep);
    }
    deferred_.clear();
    std::sort(deps.begin(), deps.end());
  }
  for (std::uint32_t dep : deps) {
    if (dep >= index) throw std::logic_error("op '" + label + "' depends on a later op");
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
  program_.ops.push_back(std::move(op));
  if (stream == sim::Stream::Compute) last_compute_ = index;
  return index;
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
  return add_gemm(label, shape, sim::Fp8Scaling::Block1D1D, out_bytes, std::move(deps));
}

void ProgramBuilder::set_gemm_groups(std::uint32_t op, int groups, sim::GroupAxis axis) {
  auto* g = op < program_.ops.size() ? std::get_if<sim::GemmShape>(&program_.ops[op].shape) : nullptr;
  if (g == nullptr) throw std::logic_error("set_gemm_groups on an op that is not a GEMM");
  const std::int64_t dim = axis == sim::GroupAxis::K ? g->k : g->m;
  if (groups < 1 || groups > dim) throw std::logic_error("set_gemm_groups: groups outside 1..m (or k)");
  g->groups = groups;
  g->group_axis = axis;
}

void ProgramBuilder::set_gemm_execution(std::uint32_t op, int splits, int sm_margin,
                                        int busy_sms) {
  auto* g = op < program_.ops.size() ? std::get_if<sim::GemmShape>(&program_.ops[op].shape) : nullptr;
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
