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

/// A curve of (x, y) points sorted by x, read linearly between them and flat beyond the ends.
using Curve = std::vector<std::pair<double, double>>;

/// Host-side operation of the offloaded optimizer step (offload_step.csv): throughput of one
/// process by its thread count, and what every rank of a host running it at once with all the
/// host's cores (PyTorch's default threads) keeps of the throughput each would have with its
/// share of them, by ranks per host.
struct HostOpCurves {
  Curve by_threads;       ///< (threads, bytes/s), one process on the measuring host's cores
  Curve all_cores_share;  ///< (processes, all-cores aggregate / per-rank aggregate); (1, 1) first
};

/// Host-offload figures measured on one machine (host_offload.csv, offload_step.csv).
struct HostOffloadTable {
  double link_efficiency = kHostLinkEfficiency;  ///< achieved / datasheet, one direction
  /// Host AdamW: throughput by CPU threads in bytes/s of host memory traffic (28 B per
  /// parameter: FP32 weight, first and second moment read and written, FP32 gradient read;
  /// host_offload.csv), and its all-cores share (offload_step.csv).
  HostOpCurves adam;
  HostOpCurves clip;           ///< in-place multiply of the FP32 gradient (8 B per parameter)
  HostOpCurves cast;           ///< FP32 -> BF16 conversion (6 B per parameter)
  Curve pageable_h2d;          ///< (threads, bytes/s) of a host-to-device copy from pageable memory
  std::string cpu;  ///< CPU model and core count of the measuring host
};

/// Reads host_offload.csv and, beside it, offload_step.csv. @throws SpecError naming file,
/// line and column.
HostOffloadTable load_host_offload(const std::string& path);

/// Reads offload_step.csv into `table` (clip, cast, pageable copy, all-cores shares).
/// @throws SpecError naming file, line and column.
void load_offload_step(const std::string& path, HostOffloadTable& table);

/// `curve` at `x`: linear between points, the end values beyond them. Precondition: not empty.
double curve_at(const Curve& curve, double x);

/// Seconds of a host-memory op moving `bytes` in each of the GPU's host's ranks at once: the
/// measured rate for the GPU's share of cores, never above its share of the host's DRAM peak,
/// times the measured all-cores share for that many ranks per host when `threads` is AllCores.
/// @throws std::invalid_argument if the platform gives no host memory bandwidth.
double host_op_seconds(const sim::GpuSpec& gpu, double bytes, const HostOpCurves& op,
                       sim::HostThreads threads);

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
