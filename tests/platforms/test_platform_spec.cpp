// Platform files and the job's `cluster:` section: catalog figures, strict loading with
// file:line errors, overrides.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "platforms/cluster_spec.hpp"
#include "platforms/platform_spec.hpp"

namespace clustersim::platforms {
namespace {

// Writes `text` to a fresh file under the test's temp dir and returns its path.
std::string write_file(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("clustersim_plat_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

std::string read_catalog(const std::string& name) {
  std::ifstream in(std::string(CLUSTERSIM_PLATFORM_DIR) + "/" + name + ".yaml");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

// Expects `fn` to throw a SpecError whose message contains all of `parts`.
template <typename Fn>
void expect_spec_error(Fn fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no SpecError";
  } catch (const SpecError& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << " lacks " << p;
  }
}

TEST(PlatformCatalog, ListsAllPlatforms) {
  EXPECT_EQ(catalog_platforms(),
            (std::vector<std::string>{"gb200_nvl36", "gb200_nvl72", "gb300_nvl72", "hgx_b200", "hgx_b300",
                                      "hgx_h100", "hgx_h200"}));
}

TEST(PlatformCatalog, H100FiguresAreTheDatasheetOnes) {
  const PlatformSpec s = find_platform("hgx_h100");
  EXPECT_EQ(s.gpu.name, "H100-SXM");
  EXPECT_DOUBLE_EQ(s.gpu.peak_bf16.value, 989e12);
  EXPECT_DOUBLE_EQ(s.gpu.peak_fp8.value, 1979e12);
  EXPECT_DOUBLE_EQ(s.gpu.hbm_capacity.value, 81559.0 * 1024 * 1024);  // nvidia-smi's visible total
  EXPECT_DOUBLE_EQ(s.gpu.hbm_bandwidth.value, 3.35e12);
  EXPECT_DOUBLE_EQ(s.gpu.tdp.value, 700);
  EXPECT_DOUBLE_EQ(s.node.nvlink_bandwidth.value, 450e9);
  EXPECT_DOUBLE_EQ(s.node.nic_bandwidth.value, 50e9);  // 400 Gb/s
  EXPECT_EQ(s.node.nics_per_node, 8);
  EXPECT_EQ(s.fabric.kind, FabricKind::RailOptimized);
  EXPECT_EQ(s.fabric.domains_per_su, 32);
  EXPECT_EQ(s.fabric.tiers, 0);  // auto
}

TEST(PlatformCatalog, OtherPlatformsDifferWhereTheHardwareDoes) {
  const PlatformSpec h200 = find_platform("hgx_h200");
  EXPECT_DOUBLE_EQ(h200.gpu.peak_bf16.value, 989e12);
  EXPECT_DOUBLE_EQ(h200.gpu.hbm_capacity.value, 143771.0 * 1024 * 1024);  // as seen on the lent H200
  EXPECT_DOUBLE_EQ(h200.gpu.hbm_bandwidth.value, 4.8e12);
  const PlatformSpec b200 = find_platform("hgx_b200");
  EXPECT_DOUBLE_EQ(b200.gpu.peak_bf16.value, 2250e12);
  EXPECT_DOUBLE_EQ(b200.gpu.tdp.value, 1000);
  EXPECT_DOUBLE_EQ(b200.node.nvlink_bandwidth.value, 900e9);
  const PlatformSpec nvl72 = find_platform("gb200_nvl72");
  EXPECT_EQ(nvl72.node.nvlink_domain_size, 72);
  EXPECT_EQ(nvl72.node.gpus_per_node, 4);
  EXPECT_DOUBLE_EQ(nvl72.gpu.tdp.value, 1200);
  EXPECT_EQ(find_platform("gb200_nvl36").node.nvlink_domain_size, 36);
}

// The NVL72 trays' power: NVIDIA's GB200 compute tray figure (6,667 W) and the tray without its
// GPUs at their limit (an upper bound), which GB300 keeps with its own 1,400 W GPUs.
TEST(PlatformCatalog, Nvl72TraysTakeNvidiasTrayFigure) {
  const PlatformSpec gb200 = find_platform("gb200_nvl72");
  EXPECT_DOUBLE_EQ(gb200.power.node_rated.value, 6667.0);
  EXPECT_DOUBLE_EQ(gb200.power.node_other.value, 6667.0 - 4 * gb200.gpu.tdp.value);
  const PlatformSpec gb300 = find_platform("gb300_nvl72");
  EXPECT_DOUBLE_EQ(gb300.power.node_other.value, gb200.power.node_other.value);
  EXPECT_DOUBLE_EQ(gb300.power.node_rated.value, gb300.power.node_other.value + 4 * gb300.gpu.tdp.value);
  EXPECT_DOUBLE_EQ(find_platform("gb200_nvl36").power.node_rated.value, 6667.0);
}

TEST(PlatformCatalog, UnknownNameListsTheCatalog) {
  expect_spec_error([] { find_platform("hgx_h300"); }, {"unknown platform 'hgx_h300'", "hgx_h100", "gb200_nvl72"});
}

TEST(PlatformFile, UnknownKeyIsAnErrorWithFileAndLine) {
  const std::string text = replace(read_catalog("hgx_h100"), "  tdp: \"700W\"", "  tdp: \"700W\"\n  tdpp: 3");
  const std::string path = write_file("typo.yaml", text);
  int line = 0;
  {
    std::istringstream in(text);
    std::string l;
    for (int n = 1; std::getline(in, l); ++n)
      if (l.find("tdpp") != std::string::npos) line = n;
  }
  expect_spec_error([&] { load_platform_file(path); }, {path + ":" + std::to_string(line), "gpu.tdpp", "unknown key"});
}

TEST(PlatformFile, BadUnitNamesTheField) {
  const std::string path = write_file("unit.yaml", replace(read_catalog("hgx_h100"), "\"400Gbps\"", "\"400Gbs\""));
  expect_spec_error([&] { load_platform_file(path); }, {path + ":", "node.nic_bandwidth", "Gbs"});
}

TEST(PlatformFile, MissingFieldIsAnError) {
  const std::string path = write_file("missing.yaml", replace(read_catalog("hgx_h100"), "  peak_fp8: \"1979TFLOPS\"", ""));
  expect_spec_error([&] { load_platform_file(path); }, {"gpu", "missing required field 'peak_fp8'"});
}

TEST(PlatformFile, InconsistentDomainIsAnError) {
  const std::string path = write_file("domain.yaml", replace(read_catalog("hgx_h100"), "nvlink_domain_size: 8", "nvlink_domain_size: 12"));
  expect_spec_error([&] { load_platform_file(path); }, {path + ":", "node.nvlink_domain_size", "multiple of gpus_per_node"});
}

// A domain whose NICs need more leaves than a switch reaches holds no GPUs at any size: an error
// when the file is read, not "at most 0 GPUs" at the first --gpus.
TEST(PlatformFile, AFabricThatHoldsNoDomainIsAnError) {
  const std::string path = write_file("dom512.yaml", replace(read_catalog("hgx_h100"), "nvlink_domain_size: 8", "nvlink_domain_size: 512"));
  expect_spec_error([&] { load_platform_file(path); }, {path + ":39: node.nvlink_domain_size", "holds no whole NVLink domain"});
}

TEST(PlatformFile, RailsMustFitALeaf) {
  const std::string path = write_file("rails.yaml", replace(read_catalog("hgx_h100"), "domains_per_su: 32", "domains_per_su: 24"));
  expect_spec_error([&] { load_platform_file(path); }, {"fabric", "rail_optimized"});
}

ClusterSpec parse_cluster(const std::string& yaml, const std::string& origin = "job.yaml") {
  YamlMap root = YamlMap::load_string(yaml, origin);
  YamlMap cluster = root.get_map("cluster");
  return parse_cluster_section(cluster);
}

TEST(ClusterSection, CatalogPlatform) {
  const ClusterSpec c = parse_cluster("cluster: {platform: hgx_h100, gpus: 128}\n");
  EXPECT_EQ(c.gpus, 128);
  EXPECT_EQ(c.platform.name, "hgx_h100");
}

TEST(ClusterSection, OverridesChangeFigures) {
  const ClusterSpec c = parse_cluster(
      "cluster:\n  platform: gb200_nvl72\n  gpus: 144\n"
      "  overrides: {nic_bandwidth: \"800Gbps\", oversubscription: {leaf: 2}, nvlink_domain_size: 36}\n");
  EXPECT_DOUBLE_EQ(c.platform.node.nic_bandwidth.value, 100e9);
  EXPECT_DOUBLE_EQ(c.platform.fabric.oversubscription.leaf, 2.0);
  EXPECT_DOUBLE_EQ(c.platform.fabric.oversubscription.spine, 1.0);  // untouched
  EXPECT_EQ(c.platform.node.nvlink_domain_size, 36);
  // Recorded as given, for the reports' job line.
  EXPECT_EQ(c.platform.overridden, (std::vector<std::string>{"nic_bandwidth=800Gbps", "oversubscription={leaf: 2}",
                                                            "nvlink_domain_size=36"}));
  EXPECT_TRUE(find_platform("gb200_nvl72").overridden.empty());
}

TEST(ClusterSection, UnknownOverrideIsAnErrorAtItsLine) {
  expect_spec_error([] { parse_cluster("cluster:\n  platform: hgx_h100\n  gpus: 64\n  overrides:\n    nic_speed: 1\n"); },
                    {"job.yaml:5", "cluster.overrides.nic_speed", "not a platform figure", "nic_bandwidth"});
}

// Each read as "not given" when 0: no host-memory check, and TCO pricing instead of a rental.
TEST(ClusterSection, AZeroHostMemoryOrRentalPriceIsAnError) {
  expect_spec_error([] { parse_cluster("cluster:\n  platform: hgx_h100\n  gpus: 64\n  overrides:\n    host_memory_capacity: 0B\n"); },
                    {"job.yaml:5", "cluster.overrides.host_memory_capacity", "must be positive"});
  expect_spec_error([] { parse_cluster("cluster:\n  platform: hgx_h100\n  gpus: 64\n  overrides:\n    rental_usd_per_gpu_hour: 0\n"); },
                    {"job.yaml:5", "cluster.overrides.rental_usd_per_gpu_hour", "out of range"});
}

// A denormal bandwidth or rate aborted SimGrid's solver and a 1e300 s latency deadlocked it:
// figures beyond any hardware are errors at their line.
TEST(ClusterSection, FiguresBeyondAnyHardwareAreErrors) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"nic_bandwidth", "\"4e-324Gbps\""}, {"nvlink_bandwidth", "\"1e20GB/s\""},
      {"hbm_bandwidth", "\"4e-324TB/s\""}, {"peak_bf16", "\"1e-320TFLOPS\""},
      {"nic_latency", "\"1e308s\""},       {"switch_latency", "2s"},
      {"tdp", "\"1e300W\""}};
  for (const auto& [key, value] : bad) {
    expect_spec_error([&] { parse_cluster("cluster:\n  platform: hgx_h100\n  gpus: 64\n  overrides:\n    " + key + ": " + value + "\n"); },
                      {"job.yaml:5", "cluster.overrides." + key, "must lie within"});
  }
  // Zero latency is a figure (an ideal link); a real one passes.
  const ClusterSpec c = parse_cluster("cluster:\n  platform: hgx_h100\n  gpus: 64\n  overrides: {nic_latency: 0us, switch_latency: 1us}\n");
  EXPECT_DOUBLE_EQ(c.platform.node.nic_latency.value, 0.0);
}

TEST(ClusterSection, InconsistentOverrideIsAnError) {
  expect_spec_error([] { parse_cluster("cluster:\n  platform: hgx_h100\n  gpus: 64\n  overrides: {gpus_per_node: 3}\n"); },
                    {"job.yaml:4", "cluster.overrides", "multiple of gpus_per_node"});
  // At the override that breaks it, not the first line of the block.
  expect_spec_error([] { parse_cluster("cluster:\n  platform: hgx_h100\n  gpus: 64\n  overrides:\n"
                                       "    nic_bandwidth: 800Gbps\n    nvlink_domain_size: 36\n"); },
                    {"job.yaml:6", "cluster.overrides.nvlink_domain_size", "multiple of gpus_per_node"});
}

// A power limit below the GPU's activity powers: the board cannot draw them. Lowering tdp alone
// once left every figure as it was, silently; with the activity powers lowered too it is valid.
TEST(ClusterSection, GpuPowersCannotExceedTheTdp) {
  expect_spec_error([] { parse_cluster("cluster: {platform: hgx_h100, gpus: 64, overrides: {tdp: 500W}}\n"); },
                    {"cluster.overrides.tdp", "cannot exceed the GPU's tdp (500 W", "the highest is 692 W"});
  // At the tdp the overrides lowered, whatever comes before it.
  expect_spec_error([] { parse_cluster("cluster:\n  platform: hgx_h100\n  gpus: 64\n  overrides:\n"
                                       "    nic_bandwidth: 800Gbps\n    tdp: 500W\n"); },
                    {"job.yaml:6", "cluster.overrides.tdp", "cannot exceed"});
  EXPECT_NO_THROW(parse_cluster("cluster: {platform: hgx_h100, gpus: 64, overrides: {tdp: 500W, "
                                "gpu_tensor: 495W, gpu_memory_bound: 490W}}\n"));
}

// The provisioned view is the activity view's ceiling: raising the tdp alone by override once put
// the activity view (node_other 2880 W + GPUs by activity) above node_rated (10.2 kW).
TEST(ClusterSection, NodeRatedMustHoldTheGpusAtTdpAndTheRestOfTheNode) {
  expect_spec_error([] { parse_cluster("cluster: {platform: hgx_h100, gpus: 16, overrides: {tdp: 1000W, gpu_tensor: 990W}}\n"); },
                    {"cluster.overrides", "node_rated must hold", "(node_other): 10880 W"});
  EXPECT_NO_THROW(parse_cluster("cluster: {platform: hgx_h100, gpus: 16, overrides: {tdp: 1000W, gpu_tensor: 990W, "
                                "node_rated: 10880W}}\n"));
}

TEST(ClusterSection, GpusMustFitTheNodesAndTheFabric) {
  expect_spec_error([] { parse_cluster("cluster: {platform: hgx_h100, gpus: 100}\n"); },
                    {"job.yaml:1", "cluster.gpus", "multiple of gpus_per_node (8)"});
  // Part of one node: a divisor of gpus_per_node.
  EXPECT_EQ(parse_cluster("cluster: {platform: hgx_h100, gpus: 2}\n").gpus, 2);
  EXPECT_EQ(parse_cluster("cluster: {platform: hgx_h100, gpus: 1}\n").gpus, 1);
  expect_spec_error([] { parse_cluster("cluster: {platform: hgx_h100, gpus: 3}\n"); },
                    {"cluster.gpus", "divide gpus_per_node (8)"});
  expect_spec_error([] { parse_cluster("cluster: {platform: hgx_h100, gpus: 0}\n"); }, {"cluster.gpus"});
  expect_spec_error([] { parse_cluster("cluster: {platform: hgx_h100, gpus: 4096, overrides: {tiers: 2}}\n"); },
                    {"cluster.gpus", "2-tier", "at most 2048 GPUs"});
  EXPECT_EQ(parse_cluster("cluster: {platform: gb200_nvl72, gpus: 16384}\n").gpus, 16384);
}

// tiers takes 2, 3 or auto: 'Auto' had been answered "expected a decimal integer".
TEST(ClusterSection, TiersAreTwoThreeOrAutoAndCountsTakeTheirNumber) {
  for (const char* tiers : {"Auto", "4", "two"}) {
    const std::string yaml = std::string("cluster: {platform: hgx_h100, gpus: 64, overrides: {tiers: ") + tiers + "}}\n";
    expect_spec_error([&] { parse_cluster(yaml); },
                      {"overrides.tiers", std::string("expected 2, 3 or auto, got '") + tiers + "'"});
  }
  EXPECT_EQ(parse_cluster("cluster: {platform: hgx_h100, gpus: 64, overrides: {tiers: 3}}\n").platform.fabric.tiers, 3);
  // One domain per scalable unit: "1 domain", not "1 domains".
  expect_spec_error([] { parse_cluster("cluster: {platform: hgx_h100, gpus: 64, overrides: {domains_per_su: 1}}\n"); },
                    {"whole rails of 1 domain (", "the 8 NICs of a domain"});
}

TEST(ClusterSection, UnknownPlatformAndUnknownKey) {
  expect_spec_error([] { parse_cluster("cluster: {platform: dgx_h100, gpus: 64}\n"); },
                    {"job.yaml:1", "cluster.platform", "unknown platform 'dgx_h100'", "hgx_h100", "path ending in .yaml"});
  expect_spec_error([] { parse_cluster("cluster: {platform: hgx_h100, gpus: 64, gpu: 3}\n"); }, {"cluster.gpu", "unknown key"});
  expect_spec_error([] { parse_cluster("cluster:\n  platform: /nonexistent/p.yaml\n  gpus: 64\n"); },
                    {"job.yaml:2", "cluster.platform", "/nonexistent/p.yaml", "cannot open"});
}

TEST(ClusterSection, PlatformFileRelativeToTheJob) {
  const std::string platform = write_file("mine.yaml", replace(read_catalog("hgx_h100"), "name: hgx_h100", "name: mine"));
  const std::string job = write_file("job.yaml", "cluster: {platform: mine.yaml, gpus: 16}\n");
  YamlMap root = YamlMap::load_file(job);
  YamlMap cluster = root.get_map("cluster");
  const ClusterSpec c = parse_cluster_section(cluster);
  EXPECT_EQ(c.platform.name, "mine");
  EXPECT_EQ(c.platform.source_file, platform);
  // Errors in the user's platform file name that file.
  write_file("mine.yaml", replace(read_catalog("hgx_h100"), "kind: rail_optimized", "kind: rails"));
  expect_spec_error([&] { parse_cluster_section(cluster); }, {platform + ":", "fabric.kind", "rail_optimized"});
}

}  // namespace
}  // namespace clustersim::platforms
