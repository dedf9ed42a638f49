// The XML export and the SimGrid plugin give the same platform as the builder: same flow
// times for transfers that share links in every way the fabric allows.
#include <gtest/gtest.h>

#include <simgrid/s4u/Engine.hpp>

#include <cstdlib>
#include <sstream>

#include "platforms/platform_spec.hpp"
#include "platforms/summary.hpp"
#include "platforms/topology.hpp"
#include "sim/engine.hpp"
#include "tests/platforms/flow_harness.hpp"

namespace clustersim::platforms {
namespace {

using test::Flow;
using test::gpu;
using test::Loader;
using test::run_flows;

// Transfers of every path class, several sharing a NIC or a leaf uplink, different sizes.
std::vector<Flow> mixed_flows(const Topology& t) {
  const int d = t.spec().node.nvlink_domain_size;
  return {{gpu(0), gpu(1), 3e9},          {gpu(0), gpu(d), 1e9},     {gpu(0), gpu(d + 1), 2e9},
          {gpu(2), gpu(d + 1), 1.5e9},    {gpu(d + 2), gpu(0), 1e9}, {gpu(3), Topology::cpu_name(0), 2e9},
          {Topology::cpu_name(0), gpu(1), 1e9}, {gpu(7), gpu(7), 1e9}, {gpu(t.gpus() - 1), gpu(4), 5e8}};
}

void expect_same_times(const std::vector<double>& a, const std::vector<double>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_GT(a[i], 0.0);
    EXPECT_NEAR(a[i], b[i], 1e-12 * a[i]) << "flow " << i;
  }
}

TEST(Export, XmlLoadedByPlainSimGridGivesTheSameFlowTimes) {
  for (const auto& [name, gpus] : {std::pair<std::string, int>{"hgx_h100", 64}, {"gb200_nvl72", 144}}) {
    const PlatformSpec s = find_platform(name);
    const auto flows = mixed_flows(Topology(s, gpus));
    expect_same_times(run_flows(s, gpus, flows, Loader::Builder), run_flows(s, gpus, flows, Loader::Xml));
  }
}

TEST(Export, XmlListsEveryRouteAndTheNetworkConfig) {
  std::ostringstream xml;
  write_simgrid_xml(find_platform("hgx_h100"), 16, xml);
  const std::string text = xml.str();
  for (const char* part : {"routing=\"Full\"", "value=\"CM02\"", "network/weight-S", "<host id=\"gpu15\"",
                           "<link id=\"nic_up_8\" bandwidth=\"50000000000Bps\"", "sharing_policy=\"FATPIPE\""})
    EXPECT_NE(text.find(part), std::string::npos) << part;
  size_t routes = 0;
  for (size_t at = text.find("<route "); at != std::string::npos; at = text.find("<route ", at + 1)) ++routes;
  EXPECT_EQ(routes, 16u * 16u + 2u * 16u);  // GPU pairs (self included), GPU <-> own CPU
  std::ostringstream big;
  EXPECT_THROW(write_simgrid_xml(find_platform("hgx_h100"), 264, big), std::invalid_argument);
}

// A user's platform name and description are text: escaped in the zone id, and no "--" inside
// the header comment (either made the file malformed XML).
TEST(Export, NamesAndDescriptionsAreEscaped) {
  PlatformSpec s = find_platform("hgx_h100");
  s.name = "a&b<c>\"d";
  s.description = "x -- y";
  std::ostringstream xml;
  write_simgrid_xml(s, 8, xml);
  const std::string text = xml.str();
  EXPECT_NE(text.find("<zone id=\"clustersim_a&amp;b&lt;c&gt;&quot;d\""), std::string::npos);
  const std::size_t open = text.find("<!--");
  const std::size_t close = text.find("-->", open);
  ASSERT_NE(close, std::string::npos);
  EXPECT_EQ(text.substr(open + 4, close - open - 4).find("--"), std::string::npos) << text.substr(open, close - open);
}

TEST(Export, PluginBuildsTheSamePlatformInAnySimGridProgram) {
  const PlatformSpec s = find_platform("hgx_b200");
  const auto flows = mixed_flows(Topology(s, 128));
  expect_same_times(run_flows(s, 128, flows, Loader::Builder), run_flows(s, 128, flows, Loader::Plugin));
}

TEST(Export, PluginWithoutItsVariablesFailsWithAMessage) {
  try {
    sim::run_in_subprocess([] {
      ::unsetenv("CLUSTERSIM_PLATFORM");
      ::setenv("CLUSTERSIM_GPUS", "64", 1);
      int argc = 1;
      char arg0[] = "plugin_test";
      char* argv[] = {arg0, nullptr};
      simgrid::s4u::Engine engine(&argc, argv);
      engine.load_platform(CLUSTERSIM_PLUGIN_PATH);  // throws before any actor exists
      return std::string();
    });
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("CLUSTERSIM_PLATFORM"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace clustersim::platforms
