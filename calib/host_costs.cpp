#include "calib/host_costs.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "calib/tables.hpp"
#include "sim/spec_error.hpp"

namespace clustersim::calib {
namespace {

// Copies from this size up are bandwidth-bound (host_offload.csv: flat from 16 MiB on).
constexpr double kBandwidthBoundBytes = 64.0 * 1024 * 1024;
// The measured GPU's host link: H200 SXM, PCIe Gen5 x16, 64 GB/s per direction (H200 datasheet).
constexpr double kMeasuredLinkBytesPerS = 64e9;

// The concurrent rows of `op`: all-cores aggregate over per-rank aggregate, by processes.
Curve all_cores_share(const CsvTable& t, const std::string& path, const std::string& op) {
  const std::size_t kind = t.column("kind"), name = t.column("op"), procs = t.column("procs");
  const std::size_t threads = t.column("threads"), gbps = t.column("GBps");
  std::map<double, std::pair<double, double>> by_procs;  // procs -> (all cores, per rank)
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (t.text(r, kind) != "concurrent" || t.text(r, name) != op) continue;
    auto& pair = by_procs[t.number(r, procs)];
    (t.number(r, threads) == 0.0 ? pair.first : pair.second) = t.number(r, gbps);
  }
  Curve out{{1.0, 1.0}};
  for (const auto& [p, rates] : by_procs) {
    if (rates.first <= 0.0 || rates.second <= 0.0) {
      throw SpecError(path, 0, "threads", "concurrent " + op + " rows need threads 0 and the per-rank share");
    }
    out.emplace_back(p, rates.first / rates.second);
  }
  if (out.size() < 2) throw SpecError(path, 0, "kind", "no concurrent rows of " + op);
  return out;
}

// The single-process rows of `op` by threads (0: PyTorch's default, `default_threads`).
Curve by_threads(const CsvTable& t, const std::string& path, const std::string& op,
                 double default_threads) {
  const std::size_t kind = t.column("kind"), name = t.column("op"), threads = t.column("threads");
  const std::size_t gbps = t.column("GBps");
  Curve out;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (t.text(r, kind) != "single" || t.text(r, name) != op) continue;
    const double n = t.number(r, threads);
    out.emplace_back(n == 0.0 ? default_threads : n, t.number(r, gbps) * 1e9);
  }
  if (out.empty()) throw SpecError(path, 0, "op", "no single-process rows of " + op);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void load_offload_step(const std::string& path, HostOffloadTable& out) {
  const CsvTable t = read_csv(path);
  const std::size_t check = t.column("check");
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (t.number(r, check) != 1.0) {
      throw SpecError(path, t.lines[r], "check", "spot check failed (re-measure)");
    }
  }
  const std::string threads = t.provenance_value("torch_default_threads");
  if (threads.empty() || threads.find_first_not_of("0123456789") != std::string::npos) {
    throw SpecError(path, 0, "torch_default_threads", "the provenance header must give it");
  }
  const double default_threads = std::stod(threads);
  out.clip = {by_threads(t, path, "clip_mul", default_threads), all_cores_share(t, path, "clip_mul")};
  out.cast = {by_threads(t, path, "cast_fp32_bf16", default_threads),
              all_cores_share(t, path, "cast_fp32_bf16")};
  out.adam.all_cores_share = all_cores_share(t, path, "adam");
  out.pageable_h2d = by_threads(t, path, "h2d_pageable_bf16", default_threads);
}

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
      out.adam.by_threads.emplace_back(t.number(r, threads), t.number(r, gbps) * 1e9);
    }
  }
  if (out.adam.by_threads.empty() || copies.empty()) {
    throw SpecError(path, 0, "kind", "needs pcie rows of 64 MiB and more and host_adam rows");
  }
  std::sort(out.adam.by_threads.begin(), out.adam.by_threads.end());
  // Median over sizes and both directions (one 128 MiB host-to-device row dips to 51.8 GB/s).
  std::sort(copies.begin(), copies.end());
  const std::size_t n = copies.size();
  const double median = n % 2 ? copies[n / 2] : 0.5 * (copies[n / 2 - 1] + copies[n / 2]);
  out.link_efficiency = median / kMeasuredLinkBytesPerS;
  out.cpu = t.provenance_value("cpu_model") + ", " + t.provenance_value("cpu_logical_cores") +
            " logical cores";
  const auto slash = path.find_last_of('/');
  load_offload_step((slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) +
                        "offload_step.csv",
                    out);
  return out;
}

double curve_at(const Curve& c, double x) {
  if (x <= c.front().first) return c.front().second;
  if (x >= c.back().first) return c.back().second;
  const auto hi = std::lower_bound(c.begin(), c.end(), std::make_pair(x, 0.0));
  const auto lo = hi - 1;
  const double f = (x - lo->first) / (hi->first - lo->first);
  return lo->second + f * (hi->second - lo->second);
}

double adam_rate(const HostOffloadTable& table, double threads) {
  return curve_at(table.adam.by_threads, threads);
}

double host_op_seconds(const sim::GpuSpec& gpu, double bytes, const HostOpCurves& op,
                       sim::HostThreads threads) {
  const double per_rank = host_optimizer_seconds(gpu, bytes, curve_at(op.by_threads, gpu.host_cores_per_gpu));
  if (threads == sim::HostThreads::PerRank) return per_rank;
  return per_rank / curve_at(op.all_cores_share, static_cast<double>(gpu.gpus_per_host));
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
