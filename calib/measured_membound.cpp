// The measured model's memory-bound and host kernels (docs/cost-model.md): membound.csv and
// membound_eager.csv of the measured GPU, or of the GPU itself where its rule names its own
// (DerivationRule::own_membound); host ops of optimizer offload from host_offload.csv.
#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "calib/measured_cost_model.hpp"

namespace clustersim::calib {
namespace {

// Memory-bound kernel families of the trace -> measured kernels (membound.csv). Families with two
// kernels take the geometric mean of both (the op does not say which one the model uses).
const std::map<sim::MemKernel, std::vector<std::string>>& kernel_tables() {
  static const std::map<sim::MemKernel, std::vector<std::string>> kMap = {
      {sim::MemKernel::Elementwise, {"copy"}},  // residual add, bias, dropout: streaming
      {sim::MemKernel::Norm, {"rmsnorm", "layernorm"}},
      {sim::MemKernel::Activation, {"swiglu", "gelu"}},
      {sim::MemKernel::Rope, {"rope"}},
      {sim::MemKernel::CrossEntropy, {"cross_entropy"}},
      {sim::MemKernel::Optimizer, {"adamw"}},
      {sim::MemKernel::Copy, {"copy"}},
  };
  return kMap;
}

// Hugging Face's eager modules (membound_eager.csv: "<name>_fwd" / "_bwd") -> the fused kernel
// family each replaces, for data directories without the table.
const std::map<sim::MemKernel, sim::MemKernel>& eager_kernels() {
  static const std::map<sim::MemKernel, sim::MemKernel> kMap = {
      {sim::MemKernel::RmsNormEager, sim::MemKernel::Norm},
      {sim::MemKernel::RopeEager, sim::MemKernel::Rope},
      {sim::MemKernel::SwigluEager, sim::MemKernel::Activation},
  };
  return kMap;
}

}  // namespace

double MeasuredCostModel::grid_time(const std::string& key, const LogGrid& g, double bytes) const {
  const double lo = g.axis(0).front(), hi = g.axis(0).back();
  if (bytes < lo) {
    note_out_of_grid(key + " below " + shape_text({lo}) + " bytes: launch floor");
    return g.time_at({lo});
  }
  if (bytes > hi) {
    note_out_of_grid(key + " above " + shape_text({hi}) + " bytes: bandwidth at the largest size");
    return bytes / hi * g.time_at({hi});
  }
  return g.time_at({bytes});
}

// A small call's time is its floor, the launch and the round trips of the GPU's front end
// (calibration run 62: 1.7 us for a 32 KiB copy, 3.0-3.5 us for the norms, flat up to ~0.5 MiB,
// operands L2-resident there: the probe's 64 rotating slots fit in the L2 up to 0.5 MiB),
// which a faster or slower HBM does not change; the time above it is the bytes over the
// bandwidth, which scales with HBM bandwidth (docs/calibration.md, "Other GPUs").
double MeasuredCostModel::kernel_time(const std::string& key, double bytes) const {
  // This GPU's own table, which only a platform HBM figure other than the rule's scales, or the
  // measured GPU's by the rule's speed-up (1 on the measured GPU: the table's time as is).
  const auto own = own_membound_.find(key);
  const bool measured_here = own != own_membound_.end();
  const LogGrid& g = measured_here ? own->second : tables_->grid(key);
  const double speedup = measured_here ? scale_.memory / rule_.memory : scale_.memory;
  const double t = grid_time(key, g, bytes), floor = g.node_time(0);
  if (speedup == 1.0 || t <= floor) return t;
  return floor + (t - floor) / speedup;
}

double MeasuredCostModel::membound_time(sim::MemKernel kernel, double bytes,
                                        sim::Phase phase) const {
  if (bytes < 0.0) throw std::invalid_argument("memory-bound op with negative bytes");
  if (bytes == 0.0) return 0.0;
  if (const auto eager = eager_kernels().find(kernel); eager != eager_kernels().end()) {
    return eager_time(kernel, eager->second, bytes, phase);
  }
  const auto it = kernel_tables().find(kernel);
  if (it == kernel_tables().end() || it->second.empty()) {
    note_out_of_grid(std::string("memory-bound ") + sim::to_string(kernel) +
                     ": not measured, roofline figure");
    sim::Op op;
    op.shape = sim::MemBoundShape{kernel};
    op.bytes = bytes;
    return roofline_.compute_time(op);
  }
  std::vector<double> times;
  for (const auto& name : it->second) times.push_back(kernel_time("membound/" + name, bytes));
  return geometric_mean(times);
}

double MeasuredCostModel::host_time(sim::MemKernel kernel, sim::HostThreads threads,
                                    double bytes) const {
  const HostOffloadTable& host = tables_->host_offload();
  const double cores = gpu_.host_cores_per_gpu;
  switch (kernel) {
    case sim::MemKernel::HostCopy: return host_copy_seconds(gpu_, bytes, host.link_efficiency);
    case sim::MemKernel::HostCopyPageable:
      // The driver stages a pageable copy through pinned memory with CPU copies: never faster
      // than a pinned copy over the link.
      return std::max(bytes / curve_at(host.pageable_h2d, cores),
                      host_copy_seconds(gpu_, bytes, host.link_efficiency));
    case sim::MemKernel::HostOptimizer:
      return host_op_seconds(gpu_, bytes, host.adam, threads);
    case sim::MemKernel::HostElementwise: return host_op_seconds(gpu_, bytes, host.clip, threads);
    case sim::MemKernel::HostCast: return host_op_seconds(gpu_, bytes, host.cast, threads);
    default: break;
  }
  throw std::logic_error(std::string("host_time: not a host kernel: ") + sim::to_string(kernel));
}

double MeasuredCostModel::eager_time(sim::MemKernel kernel, sim::MemKernel fused, double bytes,
                                     sim::Phase phase) const {
  const std::string key = std::string("membound/") + sim::to_string(kernel) +
                          (phase == sim::Phase::Backward ? "_bwd" : "_fwd");
  if (!tables_->has(key)) {
    note_out_of_grid(std::string("memory-bound ") + sim::to_string(kernel) +
                     ": no membound_eager table, costed as the fused kernel");
    return membound_time(fused, bytes, phase);
  }
  return kernel_time(key, bytes);
}


double MeasuredCostModel::copy_bandwidth() const {
  const LogGrid& g = tables_->grid("membound/copy");
  const double hi = g.axis(0).back();
  return hi / g.time_at({hi});
}

}  // namespace clustersim::calib
