#include "calib/host_costs.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "calib/tables.hpp"
#include "sim/spec_error.hpp"

namespace clustersim::calib {
namespace {

// Copies from this size up are bandwidth-bound (host_offload.csv: flat from 16 MiB on).
constexpr double kBandwidthBoundBytes = 64.0 * 1024 * 1024;
// The measured GPU's host link: H200 SXM, PCIe Gen5 x16, 64 GB/s per direction (H200 datasheet).
constexpr double kMeasuredLinkBytesPerS = 64e9;

}  // namespace

HostOffloadTable load_host_offload(const std::string& path) {
  const CsvTable t = read_csv(path);
  const std::size_t kind = t.column("kind"), variant = t.column("variant"), size = t.column("size");
  const std::size_t threads = t.column("threads"), gbps = t.column("GBps"), check = t.column("check");
  HostOffloadTable out;
  std::vector<double> copies;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string k = t.text(r, kind), v = t.text(r, variant);
    const bool ok = k == "host_adam" ? t.number(r, check) <= 1e-5 : t.number(r, check) == 1.0;
    if (!ok) {
      throw SpecError(path, t.lines[r], "check", "spot check failed for " + k + " (re-measure)");
    }
    if (k == "pcie" && (v == "h2d_pinned" || v == "d2h_pinned") && t.number(r, size) >= kBandwidthBoundBytes) {
      copies.push_back(t.number(r, gbps) * 1e9);
    } else if (k == "host_adam") {
      out.adam.emplace_back(t.number(r, threads), t.number(r, gbps) * 1e9);
    }
  }
  if (out.adam.empty() || copies.empty()) {
    throw SpecError(path, 0, "kind", "needs pcie rows of 64 MiB and more and host_adam rows");
  }
  std::sort(out.adam.begin(), out.adam.end());
  // Median over sizes and both directions (one 128 MiB host-to-device row dips to 51.8 GB/s).
  std::sort(copies.begin(), copies.end());
  const std::size_t n = copies.size();
  const double median = n % 2 ? copies[n / 2] : 0.5 * (copies[n / 2 - 1] + copies[n / 2]);
  out.link_efficiency = median / kMeasuredLinkBytesPerS;
  out.cpu = t.provenance_value("cpu_model") + ", " + t.provenance_value("cpu_logical_cores") +
            " logical cores";
  return out;
}

double adam_rate(const HostOffloadTable& table, double threads) {
  const auto& a = table.adam;
  if (threads <= a.front().first) return a.front().second;
  if (threads >= a.back().first) return a.back().second;
  const auto hi = std::lower_bound(a.begin(), a.end(), std::make_pair(threads, 0.0));
  const auto lo = hi - 1;
  const double f = (threads - lo->first) / (hi->first - lo->first);
  return lo->second + f * (hi->second - lo->second);
}

double host_copy_seconds(const sim::GpuSpec& gpu, double bytes, double efficiency) {
  if (gpu.host_link_bandwidth.value <= 0.0) {
    throw std::invalid_argument("GPU '" + gpu.name + "': the platform gives no host_link_bandwidth");
  }
  return bytes / (gpu.host_link_bandwidth.value * efficiency);
}

double host_optimizer_seconds(const sim::GpuSpec& gpu, double bytes, double rate) {
  if (gpu.host_memory_bandwidth_per_gpu.value <= 0.0) {
    throw std::invalid_argument("GPU '" + gpu.name +
                                "': the platform gives no host_memory_bandwidth for optimizer offload");
  }
  return bytes / std::min(rate, gpu.host_memory_bandwidth_per_gpu.value);
}

}  // namespace clustersim::calib
