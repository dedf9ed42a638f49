// How long ops take. The roofline model (calib/roofline) and the measured-table model
// (calib/, from the probes) implement this; the engine only asks these questions.
// Documented in docs/cost-model.md.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "sim/trace.hpp"
#include "sim/units.hpp"

namespace clustersim::sim {

/// Datasheet properties of one GPU, read by cost and memory models. Platforms own the values.
struct GpuSpec {
  std::string name;                 ///< e.g. "H100-SXM"
  FlopsPerSecond peak_bf16;         ///< dense BF16 tensor-core peak
  FlopsPerSecond peak_fp8;          ///< dense FP8 tensor-core peak
  FlopsPerSecond peak_fp32;         ///< non-tensor FP32 peak
  Bytes hbm_capacity;
  BytesPerSecond hbm_bandwidth;
  Watts tdp;
  /// Host side of the GPU (from the platform's node section), for optimizer offload:
  BytesPerSecond host_link_bandwidth;  ///< GPU <-> host link per direction (PCIe, NVLink-C2C)
  double host_cores_per_gpu = 0.0;     ///< host CPU cores per GPU (node cores / GPUs per node)
  BytesPerSecond host_memory_bandwidth_per_gpu;  ///< host DRAM peak per GPU (node peak / GPUs)
  int gpus_per_host = 0;  ///< GPUs (one rank each) sharing that host
  Bytes host_memory_per_gpu;  ///< host DRAM per GPU (node capacity / GPUs); 0 when not given

  /// Dense peak for a dtype, FLOP/s. FP32 maps to peak_fp32; TF32 to half the BF16 peak (the
  /// dense TF32 tensor-core rate of the H100, H200 and B200 datasheets: 494.7 of 989.4 TFLOP/s
  /// on H100 SXM, 1.1 of 2.25 PFLOP/s on B200).
  double peak(DType dtype) const;
};

/// Where a collective's bytes travel: inside an NVLink domain or over the scale-out network.
enum class LinkClass { NVLink, Network };

/// NCCL cost parameters for one collective call.
/// The engine charges base_latency_s once per call plus step_latency_s per algorithm step over
/// links of this class (NCCL's own tuning model: latency = base + steps x hw latency), and
/// sends bytes / bandwidth_efficiency through the platform's links.
struct CollectiveParams {
  double base_latency_s = 0.0;       ///< fixed cost per call (kernel launch, protocol setup), s
  double step_latency_s = 0.0;       ///< cost per algorithm step over this link class, s
  double bandwidth_efficiency = 1.0; ///< achieved fraction of the link bandwidth in (0, 1]
};

/// NCCL protocol of collectives (NCCL_PROTO): the one NCCL itself picks (Default), one forced,
/// or the fastest measured at each message size (Auto, as NCCL's tuner picks by its model).
enum class NcclProtocol : std::uint8_t { Default, LL, LL128, Simple, Auto };

/// What a compute kernel is, as far as interference with communication goes: the measurements
/// (calib/data/h200/interference.csv) distinguish tensor-core GEMMs from attention kernels.
enum class ComputeClass : std::uint8_t { Gemm, Attention, MemoryBound };
inline constexpr int kComputeClassCount = 3;

/// The class of a compute op (GemmShape, AttentionShape, MemBoundShape in that order).
/// Precondition: op.is_compute().
inline ComputeClass compute_class(const Op& op) {
  return static_cast<ComputeClass>(op.shape.index());
}

/// Slowdowns of compute and communication that overlap on one GPU (both >= 1; 1: none).
struct Interference {
  double compute_slowdown = 1.0;  ///< compute time while the communication runs / time alone
  double comm_slowdown = 1.0;     ///< communication time while compute runs / time alone
};

/// Extra time of a kernel beside host copies: a fixed part per call and a share of its time.
struct CopyDelay {
  double fixed_s = 0.0;  ///< seconds per kernel call
  double share = 0.0;    ///< fraction of the kernel's own duration
  bool none() const { return fixed_s <= 0.0 && share <= 0.0; }
};

/// Relative bounds of a stated uncertainty: the true value lies in [x (1 + lo), x (1 + hi)],
/// with lo <= 0 <= hi (e.g. {-0.1, 0.1} for +-10%).
struct RelativeBounds {
  double lo = 0.0;
  double hi = 0.0;
};

/// A cost model's stated uncertainty of the times it gives (docs/cost-model.md, "Stated
/// uncertainty"): per compute class, for memory-bound calls below `small_bytes`, and for the
/// time of transfers over the scale-out network (its bandwidth term). `stated` false: the
/// model states none. The bounds are each figure's own (a measurement's spread, a derivation's
/// stated range), not the error of the simulation as a whole (docs/validation.md).
struct CostUncertainty {
  bool stated = false;
  std::array<RelativeBounds, kComputeClassCount> compute{};  ///< by ComputeClass
  RelativeBounds memory_bound_small;  ///< memory-bound calls of fewer than small_bytes
  double small_bytes = 0.0;           ///< bytes; 0: one bound for every memory-bound call
  RelativeBounds network;             ///< transfers over LinkClass::Network
  std::string basis;                  ///< one line: the bounds and their sources
};

/// Cost of ops on one GPU type.
class CostModel {
 public:
  virtual ~CostModel() = default;
  /// Duration in seconds of a compute op (GemmShape, AttentionShape or MemBoundShape; MemBound
  /// uses op.bytes). @throws std::invalid_argument for a communication op.
  virtual double compute_time(const Op& op) const = 0;
  /// NCCL parameters of a collective of `bytes` per rank over `group_size` ranks.
  virtual CollectiveParams collective_params(CollectiveKind kind, double bytes, int group_size,
                                             LinkClass link) const = 0;
  /// collective_params under NCCL protocol `proto`. Default implementation: the protocol is
  /// ignored (a model without per-protocol figures answers as for NcclProtocol::Default).
  virtual CollectiveParams protocol_collective_params(CollectiveKind kind, double bytes,
                                                      int group_size, LinkClass link,
                                                      NcclProtocol proto) const {
    (void)proto;
    return collective_params(kind, bytes, group_size, link);
  }
  /// Parameters of one point-to-point transfer.
  virtual CollectiveParams p2p_params(double bytes, LinkClass link) const = 0;
  /// Interference between a compute kernel of class `compute` and one communication op (NCCL
  /// collective or point-to-point) of `comm_bytes` (Op::bytes) in flight on the same GPU at the
  /// same time. Default: none (a model without a measurement must not invent one).
  virtual Interference interference(ComputeClass compute, double comm_bytes) const {
    (void)compute;
    (void)comm_bytes;
    return {};
  }
  /// How much longer a compute kernel of class `compute` takes while host copies run on its
  /// GPU's copy engines (activation offloading's d2h and h2d streams; `d2h` and `h2d` say which
  /// directions are in flight): a kernel of duration t alone takes t + fixed_s + share x t. The
  /// engine charges it per op, spread over the op's time beside the copies (docs/engine.md).
  /// Default: none (a model without a measurement must not invent one).
  virtual CopyDelay copy_kernel_delay(ComputeClass compute, bool d2h, bool h2d) const {
    (void)compute;
    (void)d2h;
    (void)h2d;
    return {};
  }
  /// How much slower a compute op runs while the SMs its GemmShape::busy_sms names are held by
  /// the overlapping communication kernel: time then / time alone (>= 1; the engine applies it
  /// while a tensor-parallel communication op is in flight, docs/engine.md). Default: 1 (a model
  /// without a measurement must not invent one). @throws std::invalid_argument for a
  /// communication op or a busy_sms outside the GPU's SMs.
  virtual double held_sm_slowdown(const Op& op) const {
    (void)op;
    return 1.0;
  }
  /// How much faster a compute-bound op (a GEMM or attention) runs than compute_time says
  /// when its rank also runs lower-power work: under the GPU's power limit the clock rises
  /// above the sustained state of back-to-back compute in which tables are measured
  /// (docs/cost-model.md, "Power state"). `share` is the share of the rank's GPU compute time,
  /// at compute_time's speeds, in compute-bound ops (GEMMs and attention): the rest, memory-bound
  /// kernels, draws less power and leaves the limit room.
  /// Returns >= 1; 1 for other ops. Default: 1 (a model without a measurement must not invent
  /// one).
  virtual double clock_boost(const Op& op, double share) const {
    (void)op;
    (void)share;
    return 1.0;
  }
  /// The rate of a compute-bound op (a GEMM or attention) run back to back in its own
  /// sustained power state, over the rate compute_time charges (docs/cost-model.md, "Power
  /// state": tables measured behind BF16 heater GEMMs need not be in that state; FP8 GEMMs,
  /// which draw more power per clock, sustain a lower clock on their own). clock_boost() is a
  /// ratio to that state, so the power state charges compute_time / (sustained_state x
  /// clock_boost). Returns a ratio in (0, 2]; 1 for other ops. Default: 1.
  virtual double sustained_state(const Op& op) const {
    (void)op;
    return 1.0;
  }
  /// Whether clock_boost and sustained_state hold a measured power state for this model's GPU;
  /// false where both answer 1 for every op, so the power state changes nothing. Default: false.
  virtual bool has_power_state() const { return false; }
  /// The stated uncertainty of this model's times (CostUncertainty). Default: none stated.
  virtual CostUncertainty uncertainty() const { return {}; }
  /// One line naming the model and the sources of its numbers (shown in reports).
  virtual std::string describe() const = 0;
};

}  // namespace clustersim::sim
