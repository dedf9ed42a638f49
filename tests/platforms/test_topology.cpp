// Topology arithmetic: which links a transfer crosses, hop counts per path class, switch
// counts against NVIDIA's published SuperPOD table, bisection figures.
#include <gtest/gtest.h>

#include <regex>

#include "platforms/builder.hpp"
#include "platforms/platform_spec.hpp"
#include "platforms/summary.hpp"
#include "platforms/topology.hpp"

namespace clustersim::platforms {
namespace {

std::vector<std::string> names(const Topology& t, int src, int dst) {
  const Path p = t.path(src, dst);
  std::vector<std::string> out;
  for (int i = 0; i < p.count; ++i) out.push_back(t.link_name(p.links[static_cast<size_t>(i)]));
  return out;
}

using V = std::vector<std::string>;

TEST(Topology, HgxPathClassesAndHops) {
  const Topology t(find_platform("hgx_h100"), 512);  // 2 SUs of 32 nodes, 16 leaves, 2 tiers
  EXPECT_EQ(t.tiers(), 2);
  EXPECT_EQ(t.leaves(), 16);
  // Same node: NVLink through the NVSwitch.
  EXPECT_EQ(t.path(3, 5).cls, PathClass::NVLink);
  EXPECT_EQ(t.path(3, 5).switch_hops, 1);
  EXPECT_EQ(names(t, 3, 5), (V{"nvl_up_3", "nvl_down_5"}));
  // Same rail, same SU: one leaf; the stand-ins keep the route shape.
  EXPECT_EQ(t.path(3, 11).cls, PathClass::Leaf);
  EXPECT_EQ(t.path(3, 11).switch_hops, 1);
  EXPECT_EQ(names(t, 3, 11), (V{"nic_up_3", "pad_leaf_up_3", "pad_leaf_down_11", "nic_down_11"}));
  // Cross rail in the SU: leaf, spine, leaf.
  EXPECT_EQ(t.path(3, 12).cls, PathClass::Spine);
  EXPECT_EQ(t.path(3, 12).switch_hops, 3);
  EXPECT_EQ(names(t, 3, 12), (V{"nic_up_3", "leaf_up_3", "leaf_down_4", "nic_down_12"}));
  // Same rail, other SU (GPU 256 + 3 is node 32, rail 3): leaf 8 + 3.
  EXPECT_EQ(t.path(3, 259).cls, PathClass::Spine);
  EXPECT_EQ(names(t, 3, 259), (V{"nic_up_3", "leaf_up_3", "leaf_down_11", "nic_down_259"}));
  EXPECT_EQ(names(t, 3, 3), (V{"hbm_copy"}));
  EXPECT_EQ(names(t, 3, 512), (V{"host_up_3"}));   // cpu0 is endpoint 512
  EXPECT_EQ(names(t, 513, 9), (V{"host_down_9"}));  // cpu1 -> gpu9
  EXPECT_THROW(t.path(513, 0), std::invalid_argument);
}

TEST(Topology, LatencyIsNicsPlusSwitchesCrossed) {
  const PlatformSpec s = find_platform("hgx_h100");
  const Topology t(s, 4096);  // 16 SUs: 3 tiers, 4 spine groups
  ASSERT_EQ(t.tiers(), 3);
  ASSERT_EQ(t.pods(), 4);
  const double nic = s.node.nic_latency.value, sw = s.fabric.switch_latency.value;
  EXPECT_DOUBLE_EQ(t.path_latency(0, 1), s.node.nvlink_latency.value);
  EXPECT_DOUBLE_EQ(t.path_latency(0, 8), 2 * nic + sw);
  EXPECT_DOUBLE_EQ(t.path_latency(0, 9), 2 * nic + 3 * sw);
  EXPECT_EQ(t.path(0, 1024).cls, PathClass::Core);  // SU 4 is in spine group 1
  EXPECT_EQ(t.path(0, 1024).switch_hops, 5);
  EXPECT_DOUBLE_EQ(t.path_latency(0, 1024), 2 * nic + 5 * sw);
  EXPECT_EQ(names(t, 0, 1024), (V{"nic_up_0", "leaf_up_0", "pod_up_0", "pod_down_1", "leaf_down_32", "nic_down_1024"}));
  EXPECT_EQ(names(t, 0, 8), (V{"nic_up_0", "pad_leaf_up_0", "pad_leaf_down_8", "pad_pod_up_0", "pad_pod_down_8", "nic_down_8"}));
}

TEST(Topology, Nvl72RackIsOneNvlinkDomainAndLeavesHoldFourRails) {
  const Topology t(find_platform("gb200_nvl72"), 1152);  // 16 racks = 2 SUs
  EXPECT_EQ(t.nodes(), 288);
  EXPECT_EQ(t.domains(), 16);
  EXPECT_EQ(t.leaves(), 36);  // 18 per SU
  EXPECT_EQ(t.path(0, 71).cls, PathClass::NVLink);  // tray 0 to tray 17 of the rack
  EXPECT_EQ(t.path(0, 72).cls, PathClass::Leaf);    // rail 0 of racks 0 and 1
  EXPECT_EQ(t.path(0, 75).cls, PathClass::Leaf);    // rails 0-3 share leaf 0
  EXPECT_EQ(t.path(0, 76).cls, PathClass::Spine);   // rail 4 is on leaf 1
  EXPECT_EQ(t.path(0, 8 * 72).cls, PathClass::Spine);  // rack 8 is in SU 1
  EXPECT_EQ(t.leaf_of_nic(8 * 72), 18);
}

TEST(Topology, NonRailPutsANodesNicsOnOneLeaf) {
  PlatformSpec s = find_platform("hgx_h100");
  s.fabric.kind = FabricKind::NonRail;
  const Topology t(s, 256);
  EXPECT_EQ(t.leaves(), 8);  // 4 nodes of 8 NICs per 32-port leaf
  EXPECT_EQ(t.path(0, 9).cls, PathClass::Leaf);   // node 1, other rail: same leaf
  EXPECT_EQ(t.path(0, 32).cls, PathClass::Spine);  // node 4: next leaf
}

// NVIDIA DGX SuperPOD B200 RA, "Larger DGX SuperPOD component counts": SUs -> leaf, spine, core.
TEST(Topology, LaneSharingCountsCoordinatesPerTier) {
  // TP8 lanes (local GPU index) on HGX, 3 tiers: one rail per leaf, all 8 lanes per spine group.
  std::vector<int> tp8(4096);
  for (int g = 0; g < 4096; ++g) tp8[static_cast<size_t>(g)] = g % 8;
  const LaneSharing hgx = Topology(find_platform("hgx_h100"), 4096).lane_sharing(tp8);
  EXPECT_EQ(hgx.problem, "");
  EXPECT_EQ(hgx.nic, 1);
  EXPECT_EQ(hgx.leaf, 1);
  EXPECT_EQ(hgx.pod, 8);
  // NVL72: a leaf holds four rails of the racks, so four lanes share it.
  std::vector<int> nvl(1152);
  for (int g = 0; g < 1152; ++g) nvl[static_cast<size_t>(g)] = g % 4;
  const LaneSharing rack = Topology(find_platform("gb200_nvl72"), 1152).lane_sharing(nvl);
  EXPECT_EQ(rack.leaf, 4);
  // Two lanes on the first spine groups, four on the others: uneven. Idle GPUs (-1) do not count.
  std::vector<int> uneven(4096, -1);
  for (int g = 0; g < 3072; ++g) uneven[static_cast<size_t>(g)] = g < 2048 ? g % 2 : g % 4;
  EXPECT_NE(Topology(find_platform("hgx_h100"), 4096).lane_sharing(uneven).problem.find("spine groups"),
            std::string::npos);
  std::vector<int> half(4096, -1);
  for (int g = 0; g < 2048; ++g) half[static_cast<size_t>(g)] = g % 8;
  EXPECT_EQ(Topology(find_platform("hgx_h100"), 4096).lane_sharing(half).pod, 8);
}

TEST(Topology, SwitchCountsMatchNvidiaSuperPodTable) {
  const PlatformSpec s = find_platform("hgx_b200");
  struct Row { int sus, leaf, spine, core; };
  for (const Row r : {Row{2, 16, 8, 0}, Row{4, 32, 16, 0}, Row{8, 64, 32, 0}, Row{16, 128, 128, 64},
                      Row{32, 256, 256, 128}, Row{64, 512, 512, 256}}) {
    const TopologySummary sum = summarize(s, r.sus * 256);
    EXPECT_EQ(sum.tiers, r.core > 0 ? 3 : 2) << r.sus;
    EXPECT_EQ(sum.leaf_switches, r.leaf) << r.sus;
    EXPECT_EQ(sum.spine_switches, r.spine) << r.sus;
    EXPECT_EQ(sum.core_switches, r.core) << r.sus;
  }
}

// Switch counts and link bandwidths take their uplink ports from one rounding (uplink_ports):
// for a ratio that does not divide radix/2 (3:1 on 64 ports: 10.67 -> 11 ports) every leaf
// uplink lands on a spine port with no spine to spare, and the built ratio is down / those ports.
TEST(Topology, SwitchCountsAndBuiltRatiosShareTheWholeUplinkPorts) {
  EXPECT_EQ(uplink_ports(64, 1), 32);
  EXPECT_EQ(uplink_ports(64, 3), 11);
  EXPECT_EQ(uplink_ports(64, 2.5), 13);  // 12.8
  EXPECT_EQ(uplink_ports(64, 32), 1);
  EXPECT_DOUBLE_EQ(built_oversubscription(64, 3), 32.0 / 11);
  PlatformSpec s = find_platform("hgx_b200");
  const double nic = s.node.nic_bandwidth.value;
  for (const double leaf : {1.0, 2.5, 3.0, 5.0, 7.0}) {
    for (const double spine : {1.0, 3.0}) {
      s.fabric.oversubscription = {leaf, spine};
      for (const int gpus : {1280, 2048, 4096}) {  // 2 and 3 tiers (40 leaves: 8.125 spines of ports)
        const Topology t(s, gpus);
        const TopologySummary sum = summarize(s, gpus);
        const int up = uplink_ports(64, leaf), spine_up = uplink_ports(64, spine);
        const std::string at = std::to_string(leaf) + ":1 / " + std::to_string(spine) + ":1 at " + std::to_string(gpus);
        EXPECT_DOUBLE_EQ(sum.built_leaf, 32.0 / up) << at;
        EXPECT_DOUBLE_EQ(sum.built_spine, 32.0 / spine_up) << at;
        EXPECT_NEAR(t.leaf_uplink_bandwidth(), up * nic, 1e-12 * up * nic) << at;
        if (sum.tiers == 2) {
          const long long ports = static_cast<long long>(sum.leaf_switches) * up;
          EXPECT_GE(sum.spine_switches * 64LL, ports) << at;
          EXPECT_LT((sum.spine_switches - 1) * 64LL, ports) << at;
          continue;
        }
        // 3 tiers: per spine group, leaf uplinks on the spines' 32 leaf-facing ports; the
        // spines' uplinks on the core switches' 64 ports.
        const long long group_ports = static_cast<long long>(t.leaves_per_pod()) * up;
        const long long per_group = sum.spine_switches / t.pods();
        EXPECT_GE(per_group * 32, group_ports) << at;
        EXPECT_LT((per_group - 1) * 32, group_ports) << at;
        const long long core_ports = static_cast<long long>(sum.spine_switches) * spine_up;
        EXPECT_GE(sum.core_switches * 64LL, core_ports) << at;
        EXPECT_LT((sum.core_switches - 1) * 64LL, core_ports) << at;
      }
    }
  }
}

TEST(Topology, BisectionOfTheClosingNoteClusters) {
  const TopologySummary h = summarize(find_platform("hgx_h100"), 2048);
  EXPECT_DOUBLE_EQ(h.bisection_bandwidth, 1024 * 50e9);  // 51.2 TB/s
  EXPECT_DOUBLE_EQ(h.injection_bandwidth_per_gpu, 50e9);
  EXPECT_DOUBLE_EQ(h.nvlink_bisection_per_domain, 4 * 450e9);
  const TopologySummary n = summarize(find_platform("gb200_nvl72"), 16 * 72);
  EXPECT_DOUBLE_EQ(n.bisection_bandwidth, 576 * 50e9);  // 28.8 TB/s
  EXPECT_DOUBLE_EQ(n.nvlink_bisection_per_domain, 36 * 900e9);  // 32.4 TB/s
  EXPECT_EQ(n.nvlink_domains, 16);
  // A 2:1 leaf halves it: half the leaves' uplinks carry half of their NICs' bandwidth.
  PlatformSpec over = find_platform("hgx_h100");
  over.fabric.oversubscription.leaf = 2;
  EXPECT_DOUBLE_EQ(summarize(over, 2048).bisection_bandwidth, 512 * 50e9);
  // 3:1 is built with whole ports, 11 uplinks of 32 (2.91:1): the capacity and the 11 spines the
  // switch count gives agree (the capacity had taken 10.67 ports).
  over.fabric.oversubscription.leaf = 3;
  const TopologySummary third = summarize(over, 2048);
  EXPECT_DOUBLE_EQ(third.bisection_bandwidth, 32 * 11 * 50e9);
  EXPECT_EQ(third.spine_switches, 11);
  EXPECT_DOUBLE_EQ(third.built_leaf, 32.0 / 11);
  // Three spine groups, each as fast as its NICs (non-blocking): the halves split one group,
  // so the cut is the NICs' 10,944 / 2 x 100 GB/s (it had counted one group's uplinks, 3 / 2 = 1).
  const TopologySummary odd = summarize(find_platform("hgx_b300"), 10944);
  ASSERT_EQ(odd.tiers, 3);
  EXPECT_DOUBLE_EQ(odd.bisection_bandwidth, 5472 * 100e9);
  // Part of a node: its own GPUs' NICs and NVLink ports (all eight had been counted).
  const TopologySummary two = summarize(find_platform("hgx_h100"), 2);
  EXPECT_DOUBLE_EQ(two.bisection_bandwidth, 50e9);
  EXPECT_DOUBLE_EQ(two.nvlink_bisection_per_domain, 450e9);
  EXPECT_DOUBLE_EQ(summarize(find_platform("hgx_h100"), 1).bisection_bandwidth, 0.0);
}

// With tiers: auto the limit named is the larger of the 2- and 3-tier capacities: 64-GPU NVLink
// domains fill a 2-tier fabric at 2,048 GPUs and cannot form a 3-tier one (it said "at most 0").
TEST(Topology, TooManyGpusNamesTheLargestFabricThatFits) {
  PlatformSpec s = find_platform("hgx_h100");
  s.node.nvlink_domain_size = 64;
  EXPECT_EQ(Topology::check(s, 2048), "");
  const std::string problem = Topology::check(s, 4096);
  EXPECT_NE(problem.find("at most 2048 GPUs"), std::string::npos) << problem;
}

TEST(Topology, EveryPlatformBuildsFrom8To16384Gpus) {
  for (const auto& name : catalog_platforms()) {
    const PlatformSpec s = find_platform(name);
    for (int gpus : {8, 64, 1024, 4096, 16384}) {
      EXPECT_EQ(Topology::check(s, gpus), "") << name << " " << gpus;
      const Topology t(s, gpus);
      // Every network route has the same sum of 1/bandwidth (fair weight-S sharing).
      const auto inv_sum = [&t](int a, int b) {
        const Path p = t.path(a, b);
        double sum = 0;
        for (int i = 0; i < p.count; ++i) sum += 1.0 / t.link_class(p.links[static_cast<size_t>(i)].kind).bandwidth;
        return sum;
      };
      const int far = gpus - 1, domain = s.node.nvlink_domain_size;
      if (far >= domain) {
        EXPECT_DOUBLE_EQ(inv_sum(0, far), inv_sum(0, domain)) << name << " " << gpus;
      }
    }
  }
}

TEST(Topology, SummaryTextNamesTheFigures) {
  const std::string text = format_summary(summarize(find_platform("hgx_h100"), 2048));
  for (const char* part : {"2048 x H100-SXM on 256 nodes of 8", "256 of 8 GPUs", "2 tiers", "64 leaf, 32 spine",
                           "scalable units 8", "bisection         51.2 TB/s", "injection         50 GB/s",
                           "nic 4096 x 50 GB/s", "leaf-spine 128 x 1.6 TB/s"})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
}

// A GPU count that fills no whole number of NVLink domains: the summary says what the last
// domain holds (it had said "2 of 72 GPUs" for 100 GPUs on NVL72 racks); whole domains say nothing.
TEST(Topology, SummaryNamesAPartlyFilledNvlinkDomain) {
  const PlatformSpec s = find_platform("gb200_nvl72");
  const std::string text = format_summary(summarize(s, 100));
  EXPECT_NE(text.find("nvlink domains    2 of 72 GPUs (the last holds 28),"), std::string::npos) << text;
  EXPECT_NE(format_summary(summarize(s, 8)).find("1 of 72 GPUs (holding 8),"), std::string::npos);
  EXPECT_NE(format_summary(summarize(s, 144)).find("2 of 72 GPUs, "), std::string::npos);
  EXPECT_NE(format_summary(summarize(find_platform("hgx_h100"), 16)).find("2 of 8 GPUs, "), std::string::npos);
}

// One node is "1 node" in the summary and the run's platform line (both had said "1 nodes").
TEST(Topology, OneNodeIsSingular) {
  const PlatformSpec s = find_platform("hgx_h100");
  const std::string text = format_summary(summarize(s, 8));
  EXPECT_NE(text.find("8 x H100-SXM on 1 node of 8\n"), std::string::npos) << text;
  EXPECT_NE(format_summary(summarize(s, 16)).find("on 2 nodes of 8"), std::string::npos);
  EXPECT_NE(make_platform_builder(s, 8)->describe().find(": 1 node x 8 H100-SXM,"), std::string::npos)
      << make_platform_builder(s, 8)->describe();
  EXPECT_NE(make_platform_builder(s, 16)->describe().find(": 2 nodes x 8 H100-SXM,"), std::string::npos);
}

// Bandwidths print with a decimal prefix chosen after rounding and never in exponent notation:
// a what-if NIC of 1e300 Gb/s had printed "1.25e+293 PB/s" and, overflowing, "inf PB/s".
TEST(Topology, SummaryRatesNeverTurnToExponents) {
  PlatformSpec s = find_platform("hgx_h100");
  s.node.nic_bandwidth.value = 1.25e308;  // "1e300Gbps": x 8 NICs / 8 GPUs overflows to inf
  s.node.nvlink_bandwidth.value = 999.96e9;
  s.node.host_link_bandwidth.value = 12e18;  // 12 EB/s, the largest prefix
  const std::regex exponent("[0-9]e[-+]?[0-9]|\\binf\\b|\\bnan\\b");
  std::string text = format_summary(summarize(s, 16));
  EXPECT_FALSE(std::regex_search(text, exponent)) << text;
  for (const char* part : {"injection         over 9999 EB/s per GPU", "nic 32 x over 9999 EB/s",
                           "1 TB/s per GPU per direction", "host 32 x 12 EB/s"})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  s.node.nic_bandwidth.value = 1.25e-5;  // "0.0001bps"
  text = format_summary(summarize(s, 16));
  EXPECT_FALSE(std::regex_search(text, exponent)) << text;
  EXPECT_NE(text.find("injection         under 0.0001 B/s per GPU"), std::string::npos) << text;
}

}  // namespace
}  // namespace clustersim::platforms
