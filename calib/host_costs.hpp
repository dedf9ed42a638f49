// Costs of CPU optimizer offload: host<->device copies over the GPU's host link and the AdamW
// step on the host CPU. Both cost models use these; the measured model reads its figures from
// host_offload.csv (calib/probes/host_offload.py). Documented in docs/calibration.md.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/cost_model.hpp"

namespace clustersim::calib {

/// Pinned host<->device copy bandwidth achieved on the lent H200 SXM (PCIe Gen5 x16, 64 GB/s per
/// direction by the datasheet): median 55.0 GB/s over both directions from 64 MiB to 2 GiB
/// (calib/data/h200/host_offload.csv, 2026-11-29), i.e. 0.86 of the link. Applied to every
/// platform's host link (stated as derived for other links, e.g. NVLink-C2C on GB200).
constexpr double kHostLinkEfficiency = 55.0 / 64.0;

/// Host-offload figures measured on one machine (host_offload.csv).
struct HostOffloadTable {
  double link_efficiency = kHostLinkEfficiency;  ///< achieved / datasheet, one direction
  /// Host AdamW throughput by CPU threads, in bytes/s of host memory traffic (28 B per parameter:
  /// FP32 weight, first and second moment read and written, FP32 gradient read); sorted.
  std::vector<std::pair<double, double>> adam;
  std::string cpu;  ///< CPU model and core count of the measuring host
};

/// Reads host_offload.csv. @throws SpecError naming file, line and column.
HostOffloadTable load_host_offload(const std::string& path);

/// Host AdamW throughput (bytes/s) with `threads` CPU threads: linear interpolation between the
/// measured thread counts, the end values beyond them.
double adam_rate(const HostOffloadTable& table, double threads);

/// Seconds to move `bytes` one way between host and GPU over the GPU's host link at
/// `efficiency` of its datasheet rate. @throws std::invalid_argument if the platform gives no
/// host link bandwidth.
double host_copy_seconds(const sim::GpuSpec& gpu, double bytes, double efficiency);

/// Seconds of the host AdamW step moving `bytes` of host memory at `rate` bytes/s, never faster
/// than the GPU's share of the host's DRAM peak. @throws std::invalid_argument if the platform
/// gives no host memory bandwidth.
double host_optimizer_seconds(const sim::GpuSpec& gpu, double bytes, double rate);

}  // namespace clustersim::calib
