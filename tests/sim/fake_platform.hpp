// A minimal platform and cost model for engine tests: N GPUs on a star, each with one
// up and one down link of `bw` bytes/s and zero latency (or, given `latency_s`, GPU i's two links
// latency_s[i] each: a route from a to b carries latency_s[a] + latency_s[b]); GPUs are grouped
// into NVLink domains of `domain` GPUs only as far as the engine's link classes are concerned.
#pragma once

#include <simgrid/s4u.hpp>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/cost_model.hpp"
#include "sim/platform.hpp"
#include "sim/rank_layout.hpp"
#include "sim/workload.hpp"

namespace clustersim::test {

class StarPlatform : public sim::PlatformBuilder {
 public:
  StarPlatform(int gpus, double bw, int domain = 8, std::vector<double> latency_s = {})
      : gpus_(gpus), bw_(bw), domain_(domain), latency_s_(std::move(latency_s)) {
    if (latency_s_.size() > static_cast<size_t>(gpus)) {
      throw std::invalid_argument("more latencies than GPUs");
    }
    latency_s_.resize(static_cast<size_t>(gpus), 0.0);
    gpu_.name = "test-gpu";
    gpu_.peak_bf16 = FlopsPerSecond{1e15};
  }
  sim::BuiltPlatform build(simgrid::s4u::Engine& /*engine*/) const override {
    auto* zone = simgrid::s4u::create_star_zone("star");
    sim::BuiltPlatform out;
    out.gpus_per_node = domain_;
    out.nvlink_domain_size = domain_;
    for (int i = 0; i < gpus_; ++i) {
      auto* host = zone->create_host("gpu" + std::to_string(i), 1e15);
      const double lat = latency_s_[static_cast<size_t>(i)];
      auto* up = zone->create_link("up" + std::to_string(i), bw_)->set_latency(lat);
      auto* down = zone->create_link("down" + std::to_string(i), bw_)->set_latency(lat);
      zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                      {simgrid::s4u::LinkInRoute(up)}, false);
      zone->add_route(nullptr, host->get_netpoint(), nullptr, nullptr,
                      {simgrid::s4u::LinkInRoute(down)}, false);
      out.gpus.push_back(host);
    }
    zone->seal();
    return out;
  }
  int gpu_count() const override { return gpus_; }
  int nvlink_domain_size() const override { return domain_; }
  const sim::GpuSpec& gpu() const override { return gpu_; }
  std::string describe() const override { return "test star"; }

 private:
  int gpus_;
  double bw_;
  int domain_;
  std::vector<double> latency_s_;
  sim::GpuSpec gpu_;
};

/// Costs compute ops at op.flops / 1e15 s; collectives with the given latencies, efficiency 1.
class SimpleCost : public sim::CostModel {
 public:
  explicit SimpleCost(double base = 0.0, double step = 0.0) : base_(base), step_(step) {}
  double compute_time(const sim::Op& op) const override {
    if (!op.is_compute()) throw std::invalid_argument("not a compute op");
    return op.flops / 1e15;
  }
  sim::CollectiveParams collective_params(sim::CollectiveKind, double, int,
                                          sim::LinkClass) const override {
    return {base_, step_, 1.0};
  }
  sim::CollectiveParams p2p_params(double, sim::LinkClass) const override {
    return {base_, 0.0, 1.0};
  }
  std::string describe() const override { return "simple"; }

 private:
  double base_;
  double step_;
};

/// A workload of `ranks` ranks in one TP group (RankLayout(ranks, 1, 1, 1)) whose single program
/// is one collective `spec` of `bytes` on the compute stream.
inline sim::Workload one_collective_job(int ranks, double bytes, const sim::CollectiveSpec& spec) {
  sim::Workload w;
  w.layout = sim::RankLayout(ranks, 1, 1, 1);
  sim::Program p;
  p.labels = {"collective"};
  sim::Op op;
  op.shape = spec;
  op.bytes = bytes;
  op.stream = sim::Stream::Compute;
  p.ops.push_back(op);
  w.programs.push_back(std::move(p));
  w.program_of_rank.assign(static_cast<size_t>(ranks), 0);
  return w;
}

}  // namespace clustersim::test
