#include "platforms/platform_spec.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>

#include "platforms/topology.hpp"
#include "sim/units.hpp"

#ifndef CLUSTERSIM_PLATFORM_DIR
#error "CLUSTERSIM_PLATFORM_DIR must name the platform catalog directory"
#endif

namespace clustersim::platforms {
namespace {

enum class Section { Gpu, Node, Fabric, Power, Economics };

// One platform figure: its key (the same in the platform file and in `overrides:`), the section
// it lives in, and how it is read. `partial` is true for overrides, where a nested mapping may
// name only some of its entries.
struct Field {
  const char* key;
  Section section;
  void (*read)(YamlMap& map, const char* key, PlatformSpec& spec, bool partial);
};

constexpr std::int64_t kMaxCount = 1 << 20;

void read_kind(YamlMap& m, const char* k, PlatformSpec& s, bool /*partial*/) {
  const std::string kind = m.get_enum(k, {"rail_optimized", "non_rail"});
  s.fabric.kind = kind == "rail_optimized" ? FabricKind::RailOptimized : FabricKind::NonRail;
}

void read_tiers(YamlMap& m, const char* k, PlatformSpec& s, bool /*partial*/) {
  const std::string text = m.get_string(k);
  if (text == "auto") {
    s.fabric.tiers = 0;
    return;
  }
  // Not "expected a decimal integer" for 'Auto': auto is one of the values.
  if (text != "2" && text != "3") throw m.error(k, "expected 2, 3 or auto, got '" + text + "'");
  s.fabric.tiers = static_cast<int>(m.get_int(k, 2, 3));
}

void read_oversubscription(YamlMap& m, const char* k, PlatformSpec& s, bool partial) {
  YamlMap o = m.get_map(k);
  Oversubscription& v = s.fabric.oversubscription;
  constexpr double kMax = 64.0;
  v.leaf = partial ? o.get_double_or("leaf", v.leaf, 1.0, kMax) : o.get_double("leaf", 1.0, kMax);
  v.spine = partial ? o.get_double_or("spine", v.spine, 1.0, kMax) : o.get_double("spine", 1.0, kMax);
  o.finish();
}

int read_count(YamlMap& m, const char* k) { return static_cast<int>(m.get_int(k, 1, kMaxCount)); }

// Plausible bounds of the physical figures: far beyond any GPU, link or switch built and far
// inside SimGrid's arithmetic (a denormal bandwidth or rate aborts its solver, a 1e300 s latency
// deadlocks it, and such figures print as hundreds of digits). Zero and negative values are
// left to validate()'s cross-field messages.
template <class Q>
Q bounded(YamlMap& m, const char* k, Q q, double lo, double hi, const char* range) {
  if ((q.value > 0 && q.value < lo) || q.value > hi) throw m.error(k, std::string("must lie within ") + range);
  return q;
}
FlopsPerSecond read_flops(YamlMap& m, const char* k) {
  return bounded(m, k, m.get_flops(k), 1e9, 1e18, "1GFLOPS .. 1000PFLOPS");
}
BytesPerSecond read_bandwidth(YamlMap& m, const char* k) {
  return bounded(m, k, m.get_bandwidth(k), 1e6, 1e15, "1MB/s .. 1000TB/s");
}
Seconds read_latency(YamlMap& m, const char* k) { return bounded(m, k, m.get_duration(k), 0.0, 1.0, "0s .. 1s"); }
Bytes read_capacity(YamlMap& m, const char* k) { return bounded(m, k, m.get_bytes(k), 1.0, 1e15, "1B .. 1000TB"); }
Watts read_watts(YamlMap& m, const char* k) { return bounded(m, k, m.get_power(k), 1e-3, 1e6, "0.001W .. 1MW"); }

const std::vector<Field>& power_and_cost_fields() {
  using S = Section;
  using P = PlatformSpec;
  static const std::vector<Field> kFields = {
      {"gpu_tensor", S::Power, [](YamlMap& m, const char* k, P& s, bool) { s.power.gpu_tensor = read_watts(m, k); }},
      {"gpu_memory_bound", S::Power, [](YamlMap& m, const char* k, P& s, bool) { s.power.gpu_memory_bound = read_watts(m, k); }},
      {"gpu_communication", S::Power, [](YamlMap& m, const char* k, P& s, bool) { s.power.gpu_communication = read_watts(m, k); }},
      {"gpu_waiting", S::Power, [](YamlMap& m, const char* k, P& s, bool) { s.power.gpu_waiting = read_watts(m, k); }},
      {"node_other", S::Power, [](YamlMap& m, const char* k, P& s, bool) { s.power.node_other = read_watts(m, k); }},
      {"node_rated", S::Power, [](YamlMap& m, const char* k, P& s, bool) { s.power.node_rated = read_watts(m, k); }},
      {"nic", S::Power, [](YamlMap& m, const char* k, P& s, bool) { s.power.nic = read_watts(m, k); }},
      {"nvswitch_tray", S::Power, [](YamlMap& m, const char* k, P& s, bool) { s.power.nvswitch_tray = read_watts(m, k); }},
      {"nvswitch_trays_per_domain", S::Power, [](YamlMap& m, const char* k, P& s, bool) { s.power.nvswitch_trays_per_domain = static_cast<int>(m.get_int(k, 0, 1024)); }},
      {"switch_port", S::Power, [](YamlMap& m, const char* k, P& s, bool) { s.power.switch_port = read_watts(m, k); }},
      {"capex_usd", S::Economics, [](YamlMap& m, const char* k, P& s, bool) { s.cost.capex_usd = m.get_double(k, 1.0, 1e12); }},
      {"capex_unit", S::Economics, [](YamlMap& m, const char* k, P& s, bool) { s.cost.capex_unit = m.get_enum(k, {"node", "domain"}); }},
      {"rental_usd_per_gpu_hour", S::Economics, [](YamlMap& m, const char* k, P& s, bool) {
         // Absent means no rental price (0); a given one is a price, so 0 is an error.
         if (m.has(k)) s.cost.rental_usd_per_gpu_hour = m.get_double(k, 1e-6, 1e4);
       }},
  };
  return kFields;
}

const std::vector<Field>& fields() {
  using S = Section;
  using P = PlatformSpec;
  static const std::vector<Field> kFields = {
      {"name", S::Gpu, [](YamlMap& m, const char* k, P& s, bool) { s.gpu.name = m.get_string(k); s.gpu_name_at = m.location(k); }},
      {"peak_bf16", S::Gpu, [](YamlMap& m, const char* k, P& s, bool) { s.gpu.peak_bf16 = read_flops(m, k); }},
      {"peak_fp8", S::Gpu, [](YamlMap& m, const char* k, P& s, bool) { s.gpu.peak_fp8 = read_flops(m, k); }},
      {"peak_fp32", S::Gpu, [](YamlMap& m, const char* k, P& s, bool) { s.gpu.peak_fp32 = read_flops(m, k); }},
      {"hbm_capacity", S::Gpu, [](YamlMap& m, const char* k, P& s, bool) { s.gpu.hbm_capacity = read_capacity(m, k); }},
      {"hbm_bandwidth", S::Gpu, [](YamlMap& m, const char* k, P& s, bool) { s.gpu.hbm_bandwidth = read_bandwidth(m, k); }},
      {"tdp", S::Gpu, [](YamlMap& m, const char* k, P& s, bool) { s.gpu.tdp = read_watts(m, k); }},
      {"gpus_per_node", S::Node, [](YamlMap& m, const char* k, P& s, bool) { s.node.gpus_per_node = read_count(m, k); }},
      {"nvlink_domain_size", S::Node, [](YamlMap& m, const char* k, P& s, bool) { s.node.nvlink_domain_size = read_count(m, k); }},
      {"nvlink_bandwidth", S::Node, [](YamlMap& m, const char* k, P& s, bool) { s.node.nvlink_bandwidth = read_bandwidth(m, k); }},
      {"nvlink_latency", S::Node, [](YamlMap& m, const char* k, P& s, bool) { s.node.nvlink_latency = read_latency(m, k); }},
      {"nics_per_node", S::Node, [](YamlMap& m, const char* k, P& s, bool) { s.node.nics_per_node = read_count(m, k); }},
      {"nic_bandwidth", S::Node, [](YamlMap& m, const char* k, P& s, bool) { s.node.nic_bandwidth = read_bandwidth(m, k); }},
      {"nic_latency", S::Node, [](YamlMap& m, const char* k, P& s, bool) { s.node.nic_latency = read_latency(m, k); }},
      {"host_link_bandwidth", S::Node, [](YamlMap& m, const char* k, P& s, bool) { s.node.host_link_bandwidth = read_bandwidth(m, k); }},
      {"host_cpu_cores", S::Node, [](YamlMap& m, const char* k, P& s, bool) { s.node.host_cpu_cores = read_count(m, k); }},
      {"host_memory_bandwidth", S::Node, [](YamlMap& m, const char* k, P& s, bool) { s.node.host_memory_bandwidth = read_bandwidth(m, k); }},
      {"host_memory_capacity", S::Node, [](YamlMap& m, const char* k, P& s, bool) {
         if (!m.has(k)) return;
         s.node.host_memory_capacity = read_capacity(m, k);
         // Absent means unknown (not checked); a given capacity of 0 would read the same.
         if (!(s.node.host_memory_capacity.value > 0)) throw m.error(k, "must be positive");
       }},
      {"kind", S::Fabric, read_kind},
      {"domains_per_su", S::Fabric, [](YamlMap& m, const char* k, P& s, bool) { s.fabric.domains_per_su = read_count(m, k); }},
      {"tiers", S::Fabric, read_tiers},
      {"switch_radix", S::Fabric, [](YamlMap& m, const char* k, P& s, bool) { s.fabric.switch_radix = static_cast<int>(m.get_int(k, 4, 4096)); }},
      {"oversubscription", S::Fabric, read_oversubscription},
      {"switch_latency", S::Fabric, [](YamlMap& m, const char* k, P& s, bool) { s.fabric.switch_latency = read_latency(m, k); }},
  };
  return kFields;
}

const Field* find_field(const std::string& key) {
  for (const auto* list : {&fields(), &power_and_cost_fields()}) {
    for (const auto& f : *list) {
      if (key == f.key) return &f;
    }
  }
  return nullptr;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

void read_section(YamlMap& root, const char* name, Section section, PlatformSpec& spec) {
  YamlMap map = root.get_map(name);
  for (const auto* list : {&fields(), &power_and_cost_fields()}) {
    for (const auto& f : *list) {
      if (f.section == section) f.read(map, f.key, spec, false);
    }
  }
  map.finish();
}

// Power figures must describe a GPU that draws something and a server that holds its GPUs.
// Where a cross-field problem is reported: at the first of `keys` the user wrote, in whichever
// section of the file holds it (`sections`: `at` is the file's root; keys are unique across
// sections, as overrides name them flat) or in the job's overrides (`at` is the `overrides:`
// block); else at `section`, or at the overrides block.
SpecError blame(const YamlMap& at, bool sections, const char* section,
                const std::vector<const char*>& keys, const std::string& reason) {
  YamlMap map = at;
  for (const char* k : keys) {
    if (!sections) {
      if (map.has(k)) return map.error(k, reason);
      continue;
    }
    for (const char* sec : {"gpu", "node", "fabric", "power", "economics"}) {
      if (!map.has(sec)) continue;
      YamlMap child = map.get_map(sec);
      if (child.has(k)) return child.error(k, reason);
    }
  }
  return at.error(sections ? section : "", reason);
}

// The keys among `figures` whose value is not positive, for blame().
std::vector<const char*> not_positive(std::initializer_list<std::pair<const char*, double>> figures) {
  std::vector<const char*> bad;
  for (const auto& [key, value] : figures) {
    if (!(value > 0)) bad.push_back(key);
  }
  return bad;
}

void validate_power(const PlatformSpec& s, const YamlMap& at, bool sections) {
  const PowerFigures& p = s.power;
  if (!p.present) return;
  const auto powers = not_positive({{"gpu_tensor", p.gpu_tensor.value}, {"gpu_memory_bound", p.gpu_memory_bound.value},
                                    {"gpu_communication", p.gpu_communication.value}, {"gpu_waiting", p.gpu_waiting.value}});
  if (!powers.empty()) {
    throw blame(at, sections, "power", powers,
                      "GPU powers (gpu_tensor, gpu_memory_bound, gpu_communication, gpu_waiting) must be positive");
  }
  // A board's power limit caps what it draws in every activity (nvidia-smi power.limit): a
  // figure above tdp describes another GPU or another limit.
  const double most = std::max({p.gpu_tensor.value, p.gpu_memory_bound.value,
                                p.gpu_communication.value, p.gpu_waiting.value});
  if (most > s.gpu.tdp.value) {
    std::vector<const char*> over;
    for (const auto& [key, w] : {std::pair{"gpu_tensor", p.gpu_tensor.value}, {"gpu_memory_bound", p.gpu_memory_bound.value},
                                 {"gpu_communication", p.gpu_communication.value}, {"gpu_waiting", p.gpu_waiting.value}}) {
      if (w > s.gpu.tdp.value) over.push_back(key);
    }
    over.push_back("tdp");  // or the limit the overrides lowered
    throw blame(at, sections, "power", over,
                "GPU powers (gpu_tensor, gpu_memory_bound, gpu_communication, gpu_waiting) cannot exceed "
                "the GPU's tdp (" + std::to_string(static_cast<long long>(s.gpu.tdp.value)) + " W, its "
                "power limit); the highest is " + std::to_string(static_cast<long long>(most)) + " W");
  }
  // The provisioned view (GPUs at tdp, the rest of node_rated for the host) is the ceiling of the
  // activity view (GPUs by activity, node_other for the host) only if node_rated holds both.
  const double ceiling = p.node_other.value + s.gpu.tdp.value * s.node.gpus_per_node;
  if (p.node_rated.value < ceiling) {
    throw blame(at, sections, "power", {"node_rated", "node_other", "tdp", "gpus_per_node"},
                "node_rated must hold the node's GPUs at their tdp and the rest of the node while training "
                "(node_other): " + std::to_string(static_cast<long long>(ceiling)) + " W");
  }
}

// Cross-field checks, reported at the figure the user gave (blame()).
void validate(const PlatformSpec& s, const YamlMap& at, bool sections) {
  const auto& g = s.gpu;
  const auto peaks = not_positive({{"peak_bf16", g.peak_bf16.value}, {"peak_fp8", g.peak_fp8.value}, {"peak_fp32", g.peak_fp32.value}});
  if (!peaks.empty()) throw blame(at, sections, "gpu", peaks, "peaks (peak_bf16, peak_fp8, peak_fp32) must be positive");
  const auto gpu_figures = not_positive({{"hbm_capacity", g.hbm_capacity.value}, {"hbm_bandwidth", g.hbm_bandwidth.value}, {"tdp", g.tdp.value}});
  if (!gpu_figures.empty()) throw blame(at, sections, "gpu", gpu_figures, "hbm_capacity, hbm_bandwidth and tdp must be positive");
  const auto& n = s.node;
  const auto bandwidths = not_positive({{"nvlink_bandwidth", n.nvlink_bandwidth.value}, {"nic_bandwidth", n.nic_bandwidth.value},
                                        {"host_link_bandwidth", n.host_link_bandwidth.value},
                                        {"host_memory_bandwidth", n.host_memory_bandwidth.value}});
  if (!bandwidths.empty()) {
    throw blame(at, sections, "node", bandwidths,
                      "bandwidths (nvlink_bandwidth, nic_bandwidth, host_link_bandwidth, host_memory_bandwidth) must be positive");
  }
  if (n.nvlink_domain_size % n.gpus_per_node != 0)
    throw blame(at, sections, "node", {"nvlink_domain_size", "gpus_per_node"},
                "nvlink_domain_size (" + std::to_string(n.nvlink_domain_size) +
                ") must be a multiple of gpus_per_node (" + std::to_string(n.gpus_per_node) + ")");
  if (n.gpus_per_node % n.nics_per_node != 0)
    throw blame(at, sections, "node", {"nics_per_node", "gpus_per_node"},
                "gpus_per_node (" + std::to_string(n.gpus_per_node) + ") must be a multiple of nics_per_node (" +
                std::to_string(n.nics_per_node) + ")");
  const auto& f = s.fabric;
  if (f.switch_radix % 2 != 0) throw blame(at, sections, "fabric", {"switch_radix"}, "switch_radix must be even (half the ports face down)");
  const int down = f.switch_radix / 2;
  const int nics_per_domain = n.nics_per_node * (n.nvlink_domain_size / n.gpus_per_node);
  if (f.kind == FabricKind::RailOptimized) {
    if (down % f.domains_per_su != 0 || nics_per_domain % (down / f.domains_per_su) != 0)
      throw blame(at, sections, "fabric", {"domains_per_su", "switch_radix", "nvlink_domain_size", "nics_per_node"},
                  "rail_optimized: a leaf's " + std::to_string(down) + " NIC ports must hold whole rails of " +
                  count_noun(f.domains_per_su, "domain", "domains") + " (domains_per_su must divide switch_radix/2, and "
                  "the rails per leaf must divide the " + count_noun(nics_per_domain, "NIC", "NICs") + " of a domain)");
  } else if (down % n.nics_per_node != 0) {
    throw blame(at, sections, "fabric", {"switch_radix", "nics_per_node", "kind"},
                "non_rail: nics_per_node (" + std::to_string(n.nics_per_node) + ") must divide switch_radix/2 (" +
                std::to_string(down) + ")");
  }
  if (f.oversubscription.leaf > down || f.oversubscription.spine > down)
    throw blame(at, sections, "fabric", {"oversubscription", "switch_radix"},
                "oversubscription must not exceed switch_radix/2 (" + std::to_string(down) +
                "): a switch's uplinks must carry at least one NIC's bandwidth");
  if (Topology::max_gpus_any(s) < n.nvlink_domain_size)
    throw blame(at, sections, "fabric", {"nvlink_domain_size", "switch_radix", "nics_per_node", "domains_per_su"},
                "the fabric holds no whole NVLink domain: one domain's " + std::to_string(nics_per_domain) +
                " NICs need more leaves than a " + std::to_string(f.switch_radix) +
                "-port switch can connect (a smaller nvlink_domain_size or fewer nics_per_node, or a "
                "larger switch_radix)");
}

// The cost models see a GPU's share of its host (optimizer offload): copied from the node.
void share_host(PlatformSpec& s) {
  const double gpus = s.node.gpus_per_node;
  s.gpu.host_link_bandwidth = s.node.host_link_bandwidth;
  s.gpu.host_cores_per_gpu = s.node.host_cpu_cores / gpus;
  s.gpu.host_memory_bandwidth_per_gpu = BytesPerSecond{s.node.host_memory_bandwidth.value / gpus};
  s.gpu.gpus_per_host = s.node.gpus_per_node;
  s.gpu.host_memory_per_gpu = Bytes{s.node.host_memory_capacity.value / gpus};
}

}  // namespace

const char* to_string(FabricKind kind) {
  return kind == FabricKind::RailOptimized ? "rail_optimized" : "non_rail";
}

PlatformSpec load_platform_file(const std::string& path) {
  YamlMap root = YamlMap::load_file(path);
  PlatformSpec spec;
  spec.source_file = path;
  spec.name = root.get_string("name");
  spec.description = root.get_string("description");
  read_section(root, "gpu", Section::Gpu, spec);
  read_section(root, "node", Section::Node, spec);
  read_section(root, "fabric", Section::Fabric, spec);
  if (root.has("power")) {
    read_section(root, "power", Section::Power, spec);
    spec.power.present = true;
  }
  if (root.has("economics")) {
    read_section(root, "economics", Section::Economics, spec);
    spec.cost.present = true;
    YamlMap economics = root.get_map("economics");
    if (economics.has("capex_usd") && !economics.has("capex_unit") &&
        spec.node.nvlink_domain_size != spec.node.gpus_per_node) {
      throw economics.error("capex_usd", "give capex_unit (node: a " +
                                             std::to_string(spec.node.gpus_per_node) +
                                             "-GPU node; domain: a " +
                                             std::to_string(spec.node.nvlink_domain_size) +
                                             "-GPU NVLink domain): here they differ");
    }
  }
  root.finish();
  validate(spec, root, true);
  validate_power(spec, root, true);
  share_host(spec);
  return spec;
}

std::vector<std::string> catalog_platforms() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(CLUSTERSIM_PLATFORM_DIR, ec)) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

PlatformSpec find_platform(const std::string& name) {
  const auto known = catalog_platforms();
  if (std::find(known.begin(), known.end(), name) == known.end()) {
    throw SpecError(CLUSTERSIM_PLATFORM_DIR, 0, "platform",
                    "unknown platform '" + name + "' (known: " + join(known) + ")");
  }
  return load_platform_file(std::string(CLUSTERSIM_PLATFORM_DIR) + "/" + name + ".yaml");
}

std::vector<std::string> overridable_keys() {
  std::vector<std::string> keys;
  for (const auto* list : {&fields(), &power_and_cost_fields()}) {
    for (const auto& f : *list) keys.emplace_back(f.key);
  }
  return keys;
}

void apply_overrides(PlatformSpec& spec, YamlMap& overrides) {
  for (const std::string& key : overrides.keys()) {
    const Field* field = find_field(key);
    if (field == nullptr) {
      throw overrides.error(key, "'" + key + "' is not a platform figure (overridable: " +
                                     join(overridable_keys()) + ")");
    }
    const bool power = field->section == Section::Power;
    if ((power && !spec.power.present) || (field->section == Section::Economics && !spec.cost.present)) {
      throw overrides.error(key, "platform '" + spec.name + "' has no " +
                                     (power ? "power" : "economics") + ": section to override");
    }
    field->read(overrides, field->key, spec, true);
    spec.overridden.push_back(key + "=" + overrides.flow_text(key));
  }
  overrides.finish();
  validate(spec, overrides, false);
  validate_power(spec, overrides, false);
  share_host(spec);
}

}  // namespace clustersim::platforms
