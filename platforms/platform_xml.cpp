// SimGrid XML export of a cluster (declared in summary.hpp): a Full-routing zone that lists
// every route Topology::path computes, so stock SimGrid reproduces the custom zone exactly.
#include <cstdio>
#include <stdexcept>
#include <string>

#include "platforms/builder.hpp"
#include "platforms/summary.hpp"
#include "platforms/topology.hpp"
#include "sim/units.hpp"

namespace clustersim::platforms {
namespace {

// Shortest decimal that reads back as the same double.
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void write_route(const Topology& t, int src, int dst, const std::string& src_name,
                 const std::string& dst_name, std::ostream& out) {
  const Path p = t.path(src, dst);
  out << "    <route src=\"" << src_name << "\" dst=\"" << dst_name << "\" symmetrical=\"NO\">";
  for (int i = 0; i < p.count; ++i) out << "<link_ctn id=\"" << t.link_name(p.links[static_cast<size_t>(i)]) << "\"/>";
  out << "</route>\n";
}

void write_links(const Topology& t, std::ostream& out) {
  for (int k = 0; k < kLinkKinds; ++k) {
    const auto kind = static_cast<LinkKind>(k);
    const LinkClassInfo& info = t.link_class(kind);
    for (int i = 0; i < info.count; ++i) {
      out << "    <link id=\"" << t.link_name({kind, i}) << "\" bandwidth=\"" << num(info.bandwidth)
          << "Bps\" latency=\"" << num(info.latency) << "s\""
          << (info.fatpipe ? " sharing_policy=\"FATPIPE\"" : "") << "/>\n";
    }
  }
}

// `text` as an XML attribute value: the five predefined entities.
std::string xml_attribute(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

// `text` inside an XML comment, which may not hold "--": each '-' after a '-' becomes "=".
std::string xml_comment(const std::string& text) {
  std::string out;
  for (const char c : text) out += (c == '-' && !out.empty() && out.back() == '-') ? '=' : c;
  if (!out.empty() && out.back() == '-') out += ' ';
  return out;
}

}  // namespace

void write_simgrid_xml(const PlatformSpec& spec, int gpus, std::ostream& out) {
  if (gpus > kMaxXmlGpus) {
    throw std::invalid_argument("the XML export lists every route; it is limited to " +
                                std::to_string(kMaxXmlGpus) + " GPUs");
  }
  const Topology t(spec, gpus);
  out << "<?xml version='1.0'?>\n"
      << "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      << "<!-- " << xml_comment("clustersim: " + spec.name + ", " + count_noun(gpus, "GPU", "GPUs") + " (" +
                                spec.description + "); generated from " + spec.source_file)
      << " -->\n"
      << "<platform version=\"4.1\">\n"
      << "  <config>\n"
      << "    <prop id=\"network/model\" value=\"CM02\"/>\n"
      << "    <prop id=\"network/crosstraffic\" value=\"0\"/>\n"
      << "    <prop id=\"network/TCP-gamma\" value=\"0\"/>\n"
      << "    <prop id=\"network/weight-S\" value=\"" << num(kWeightS) << "\"/>\n"
      << "  </config>\n"
      << "  <zone id=\"clustersim_" << xml_attribute(spec.name) << "\" routing=\"Full\">\n";
  for (int g = 0; g < t.gpus(); ++g)
    out << "    <host id=\"" << Topology::gpu_name(g) << "\" speed=\"" << num(spec.gpu.peak_bf16.value) << "f\"/>\n";
  for (int c = 0; c < t.cpus(); ++c) out << "    <host id=\"" << Topology::cpu_name(c) << "\" speed=\"" << num(kCpuHostSpeed) << "f\"/>\n";
  write_links(t, out);
  for (int s = 0; s < t.gpus(); ++s) {
    for (int d = 0; d < t.gpus(); ++d) write_route(t, s, d, Topology::gpu_name(s), Topology::gpu_name(d), out);
    const int cpu = t.node_of(s);
    write_route(t, s, t.gpus() + cpu, Topology::gpu_name(s), Topology::cpu_name(cpu), out);
    write_route(t, t.gpus() + cpu, s, Topology::cpu_name(cpu), Topology::gpu_name(s), out);
  }
  out << "  </zone>\n</platform>\n";
}

}  // namespace clustersim::platforms
