#include "sim/cost_corner.hpp"

#include <stdexcept>
#include <utility>
#include <variant>

namespace clustersim::sim {

namespace {

void check_bounds(const RelativeBounds& b, const char* what) {
  if (b.lo > 0.0 || b.hi < 0.0 || b.lo <= -1.0) {
    throw std::invalid_argument(std::string("cost model's stated uncertainty of ") + what +
                                " must satisfy -1 < lo <= 0 <= hi, got lo " + std::to_string(b.lo) +
                                ", hi " + std::to_string(b.hi));
  }
}

}  // namespace

const char* to_string(CostCorner corner) { return corner == CostCorner::Fast ? "fast" : "slow"; }

CornerCostModel::CornerCostModel(std::unique_ptr<CostModel> inner, CostCorner corner)
    : inner_(std::move(inner)), corner_(corner) {
  if (!inner_) throw std::invalid_argument("CornerCostModel needs a cost model");
  bounds_ = inner_->uncertainty();
  if (!bounds_.stated) {
    throw std::invalid_argument("the cost model states no uncertainty of its times: " +
                                inner_->describe());
  }
  static constexpr const char* kNames[kComputeClassCount] = {"GEMMs", "attention",
                                                             "memory-bound kernels"};
  for (int c = 0; c < kComputeClassCount; ++c) check_bounds(bounds_.compute[c], kNames[c]);
  check_bounds(bounds_.memory_bound_small, "small memory-bound calls");
  check_bounds(bounds_.network, "network transfers");
}

double CornerCostModel::compute_time(const Op& op) const {
  const double t = inner_->compute_time(op);
  const ComputeClass cls = compute_class(op);
  const RelativeBounds* b = &bounds_.compute[static_cast<int>(cls)];
  if (cls == ComputeClass::MemoryBound) {
    // Host kernels and copies (optimizer offload) are the host's and the PCIe link's, which
    // the GPU's bounds do not cover: left at the inner model's time.
    if (is_host_kernel(std::get<MemBoundShape>(op.shape).kernel)) return t;
    if (bounds_.small_bytes > 0.0 && op.bytes < bounds_.small_bytes) b = &bounds_.memory_bound_small;
  }
  return t * (1.0 + pick(*b));
}

CollectiveParams CornerCostModel::network_adjusted(CollectiveParams p, LinkClass link) const {
  if (link == LinkClass::Network) p.bandwidth_efficiency /= 1.0 + pick(bounds_.network);
  return p;
}

CollectiveParams CornerCostModel::collective_params(CollectiveKind kind, double bytes,
                                                    int group_size, LinkClass link) const {
  return network_adjusted(inner_->collective_params(kind, bytes, group_size, link), link);
}

CollectiveParams CornerCostModel::protocol_collective_params(CollectiveKind kind, double bytes,
                                                             int group_size, LinkClass link,
                                                             NcclProtocol proto) const {
  return network_adjusted(
      inner_->protocol_collective_params(kind, bytes, group_size, link, proto), link);
}

CollectiveParams CornerCostModel::p2p_params(double bytes, LinkClass link) const {
  return network_adjusted(inner_->p2p_params(bytes, link), link);
}

Interference CornerCostModel::interference(ComputeClass compute, double comm_bytes) const {
  return inner_->interference(compute, comm_bytes);
}

CopyDelay CornerCostModel::copy_kernel_delay(ComputeClass compute, bool d2h, bool h2d) const {
  return inner_->copy_kernel_delay(compute, d2h, h2d);
}

double CornerCostModel::held_sm_slowdown(const Op& op) const { return inner_->held_sm_slowdown(op); }

double CornerCostModel::clock_boost(const Op& op, double share) const {
  return inner_->clock_boost(op, share);
}

double CornerCostModel::sustained_state(const Op& op) const { return inner_->sustained_state(op); }

std::string CornerCostModel::describe() const {
  return inner_->describe() + "; at the " + to_string(corner_) + " end of its stated uncertainty";
}

}  // namespace clustersim::sim
