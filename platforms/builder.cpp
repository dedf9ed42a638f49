#include "platforms/builder.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <xbt/config.hpp>

#include <array>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "platforms/topology.hpp"
#include "sim/log.hpp"
#include "sim/units.hpp"

namespace clustersim::platforms {
namespace {

namespace kr = simgrid::kernel::routing;
namespace sg4 = simgrid::s4u;

// One netzone for the whole cluster. Routes are computed from the endpoints' indices in the
// zone (GPUs first, then CPUs) by Topology::path: no route tables, O(1) per transfer.
class FabricZone final : public kr::NetZoneImpl {
 public:
  FabricZone(const std::string& name, const Topology& topology)
      : NetZoneImpl(name), topo_(topology) {}

  // Creates hosts then links, in a fixed order (deterministic names and ids).
  std::vector<sg4::Host*> populate() {
    std::vector<sg4::Host*> gpus;
    gpus.reserve(static_cast<size_t>(topo_.gpus()));
    const double speed = topo_.spec().gpu.peak_bf16.value;
    for (int g = 0; g < topo_.gpus(); ++g) gpus.push_back(get_iface()->create_host(Topology::gpu_name(g), speed)->seal());
    for (int c = 0; c < topo_.cpus(); ++c) get_iface()->create_host(Topology::cpu_name(c), kCpuHostSpeed)->seal();
    for (int k = 0; k < kLinkKinds; ++k) create_links(static_cast<LinkKind>(k));
    return gpus;
  }

  // BuiltPlatform::fold_lanes. Pads stand in for the tier a route does not climb, so they are
  // scaled with their tier: every route keeps one sum of 1/bandwidth, hence one CM02 sharing
  // weight (builder.hpp), and max-min shares stay those of the full platform.
  std::string fold(const std::vector<int>& lane_of_gpu, std::unordered_map<sg4::Link*, int>& scaled) {
    const LaneSharing k = topo_.lane_sharing(lane_of_gpu);
    if (!k.problem.empty()) return k.problem;
    // A pad caps each flow at its bandwidth (FATPIPE): scaled, it must stay above a NIC's share.
    const double flow_max = topo_.link_class(LinkKind::NicUp).bandwidth / k.nic;
    for (const auto& [pad, lanes] : {std::pair{LinkKind::PadLeafUp, k.leaf}, std::pair{LinkKind::PadPodUp, k.pod}}) {
      const LinkClassInfo& info = topo_.link_class(pad);
      if (info.count > 0 && info.bandwidth / lanes < flow_max) {
        return std::string("a ") + info.prefix + " stand-in would cap flows below a NIC's rate";
      }
    }
    const std::array<std::pair<LinkKind, int>, 10> tiers = {{
        {LinkKind::NicUp, k.nic}, {LinkKind::NicDown, k.nic}, {LinkKind::LeafUp, k.leaf},
        {LinkKind::LeafDown, k.leaf}, {LinkKind::PadLeafUp, k.leaf}, {LinkKind::PadLeafDown, k.leaf},
        {LinkKind::PodUp, k.pod}, {LinkKind::PodDown, k.pod}, {LinkKind::PadPodUp, k.pod},
        {LinkKind::PadPodDown, k.pod}}};
    for (const auto& [kind, lanes] : tiers) {
      if (lanes <= 1) continue;
      for (sg4::Link* link : ifaces_[static_cast<size_t>(kind)]) {
        link->set_bandwidth(link->get_bandwidth() / lanes);
        if (!topo_.link_class(kind).fatpipe) scaled[link] = lanes;
      }
    }
    return "";
  }

  void get_local_route(const kr::NetPoint* src, const kr::NetPoint* dst, kr::Route* into,
                       double* latency) override {
    const Path p = topo_.path(static_cast<int>(src->id()), static_cast<int>(dst->id()));
    for (int i = 0; i < p.count; ++i) {
      const LinkRef& l = p.links[static_cast<size_t>(i)];
      const auto kind = static_cast<size_t>(l.kind);
      into->link_list_.push_back(links_[kind][static_cast<size_t>(l.index)]);
      if (latency != nullptr) *latency += topo_.link_class(l.kind).latency;
    }
  }

 private:
  void create_links(LinkKind kind) {
    const LinkClassInfo& info = topo_.link_class(kind);
    auto& out = links_[static_cast<size_t>(kind)];
    out.reserve(static_cast<size_t>(info.count));
    for (int i = 0; i < info.count; ++i) {
      sg4::Link* link = get_iface()->create_link(topo_.link_name({kind, i}), info.bandwidth);
      link->set_latency(info.latency);
      if (info.fatpipe) link->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE);
      out.push_back(link->seal()->get_impl());
      ifaces_[static_cast<size_t>(kind)].push_back(link);
    }
  }

  Topology topo_;
  std::array<std::vector<simgrid::kernel::resource::StandardLinkImpl*>, kLinkKinds> links_;
  std::array<std::vector<sg4::Link*>, kLinkKinds> ifaces_;  ///< the same links, for fold()
};

class FabricBuilder final : public sim::PlatformBuilder {
 public:
  FabricBuilder(const PlatformSpec& spec, int gpus) : topo_(spec, gpus) {}

  sim::BuiltPlatform build(sg4::Engine& engine) const override {
    set_weight_s(engine);
    auto zone = std::make_unique<FabricZone>("clustersim_" + topo_.spec().name, topo_);
    if (engine.get_netzone_root() != zone->get_iface()) zone->get_iface()->set_parent(engine.get_netzone_root());
    // SimGrid owns zones from here on: the engine deletes the root, a parent its children.
    FabricZone* owned = zone.release();
    sim::BuiltPlatform out;
    out.gpus = owned->populate();
    owned->get_iface()->seal();
    out.gpus_per_node = topo_.spec().node.gpus_per_node;
    out.nvlink_domain_size = topo_.spec().node.nvlink_domain_size;
    out.nvlink_bandwidth = topo_.spec().node.nvlink_bandwidth.value;
    out.network_bandwidth = topo_.spec().node.nic_bandwidth.value *
                            topo_.spec().node.nics_per_node / topo_.spec().node.gpus_per_node;
    out.fold_lanes = [owned](const std::vector<int>& lanes, std::unordered_map<sg4::Link*, int>& scaled) {
      return owned->fold(lanes, scaled);
    };
    module_logger("platforms")->info("built {}", describe());
    return out;
  }
  int gpu_count() const override { return topo_.gpus(); }
  int nvlink_domain_size() const override { return topo_.spec().node.nvlink_domain_size; }
  const sim::GpuSpec& gpu() const override { return topo_.spec().gpu; }
  std::string describe() const override {
    const auto& s = topo_.spec();
    const std::string nodes =
        topo_.gpus() < s.node.gpus_per_node
            ? "1 node, " + std::to_string(topo_.gpus()) + " of its " + std::to_string(s.node.gpus_per_node)
            : count_noun(topo_.nodes(), "node", "nodes") + " x " + std::to_string(s.node.gpus_per_node);
    std::string changed;
    for (const auto& o : s.overridden) changed += (changed.empty() ? " (overrides: " : ", ") + o;
    if (!changed.empty()) changed += ")";
    return s.name + changed + ": " + nodes + " " + s.gpu.name + ", NVLink domains of " +
           std::to_string(s.node.nvlink_domain_size) + ", " + to_string(s.fabric.kind) + " " +
           std::to_string(topo_.tiers()) + "-tier fat-tree";
  }

 private:
  // network/weight-S makes CM02 sharing independent of route latency (builder.hpp). SimGrid
  // refuses configuration changes once a netzone exists, so an engine that already has one must
  // carry the value already.
  static void set_weight_s(sg4::Engine& engine) {
    const std::string item = "network/weight-S";
    if (engine.get_netzone_root() == nullptr) {
      sg4::Engine::set_config(item, kWeightS);
    } else if (simgrid::config::get_value<double>(item) != kWeightS) {
      throw std::logic_error("platforms: build() needs network/weight-S=" + std::to_string(kWeightS) +
                             " but a netzone already exists; build the platform first");
    }
  }

  Topology topo_;
};

}  // namespace

std::unique_ptr<sim::PlatformBuilder> make_platform_builder(const PlatformSpec& spec, int gpus) {
  return std::make_unique<FabricBuilder>(spec, gpus);
}

}  // namespace clustersim::platforms
