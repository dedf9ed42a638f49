#include "calib/roofline_cost_model.hpp"

#include "calib/host_costs.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <variant>

namespace clustersim::calib {
namespace {

// Achieved large-GEMM throughput ("maximum achievable matmul FLOPS", MAMF) as measured with the
// mamf-finder benchmark of Stas Bekman's ml-engineering book (compute/accelerator/README.md),
// divided by the datasheet dense peak. Reproduced in ../shared/reference/measured.yaml
// (hardware:) with the design seeds. H200 BF16: no published MAMF; the H200 has the H100 SXM's
// GH100 die, SM count and clocks (NVIDIA H200 datasheet: 989 TFLOP/s dense BF16, same as H100),
// so the H100 figure is used.
//
// Attention: FlashAttention-3 (Shah et al., arXiv 2407.08608, Figs. 5-6), H100 SXM5 BF16,
// head dim 128, causal, 8k-16k tokens: forward reaches about 610-640 TFLOP/s, backward about
// 450-500 TFLOP/s. Read off the figures, so approximate: 0.62 and 0.46 of 989.
// HBM: streaming kernels reach about 90% of the datasheet bandwidth on H100/H200 (e.g.
// BabelStream/nvbandwidth copy results of ~3.0 of 3.35 TB/s on H100 SXM).
// Blackwell figures: MAMF as above; attention and HBM fractions are taken equal to Hopper's
// until measured (stated in describe()).
const std::map<std::string, RooflineEfficiencies>& table() {
  static const std::map<std::string, RooflineEfficiencies> kTable = {
      {"H100-SXM",
       {794.5 / 989.0, 1402.6 / 1979.0, 0.62, 0.46, 0.90,
        "MAMF 794.5/1402.6 TFLOP/s (ml-engineering mamf-finder); FA3 paper; ~90% HBM"}},
      {"H200-SXM",
       {794.5 / 989.0, 1453.4 / 1979.0, 0.62, 0.46, 0.90,
        "MAMF BF16 of H100 (same GH100 die), FP8 1453.4 TFLOP/s; FA3 paper; ~90% HBM"}},
      {"B200",
       {1745.0 / 2250.0, 3432.5 / 4500.0, 0.62, 0.46, 0.90,
        "MAMF 1745/3432.5 TFLOP/s; attention and HBM fractions assumed as Hopper"}},
      {"GB200",
       {1822.0 / 2500.0, 3615.6 / 5000.0, 0.62, 0.46, 0.90,
        "MAMF 1822/3615.6 TFLOP/s; attention and HBM fractions assumed as Hopper"}},
      // Blackwell Ultra: B200's / GB200's dense peaks, so their MAMF fractions (no B300 MAMF).
      {"B300",
       {1745.0 / 2250.0, 3432.5 / 4500.0, 0.62, 0.46, 0.90,
        "B200's MAMF 1745/3432.5 TFLOP/s (same dense peaks); attention and HBM fractions assumed "
        "as Hopper"}},
      {"GB300",
       {1822.0 / 2500.0, 3615.6 / 5000.0, 0.62, 0.46, 0.90,
        "GB200's MAMF 1822/3615.6 TFLOP/s (same dense peaks); attention and HBM fractions assumed "
        "as Hopper"}},
  };
  return kTable;
}

// NCCL's own tuning model (src/graph/tuning.cc of NCCL 2.28, the version calibrated): Ring/Simple
// base latency 8.4 us per call, per-step hardware latency 3.4 us over NVLink and 14.0 us over
// the network (hwLat NET Ring Simple; older releases had 9.6 us, used here until 2026-12-07).
constexpr double kNcclBaseLatency = 8.4e-6;
constexpr double kNcclNvlinkStepLatency = 3.4e-6;
constexpr double kNcclNetStepLatency = 14.0e-6;
// Bus bandwidth achieved by NCCL, as a fraction of the link rate:
//  - NVLink: 8x H200 ring all_reduce 367.2 GB/s busbw at 16 GiB of 450 GB/s per direction
//    (stas00/ml-engineering network/README.md, NCCL 2.27.7) -> 0.816;
//  - InfiniBand NDR 400G: 46-48 GB/s busbw per NIC of 50 GB/s (NVIDIA nccl-tests issues #290 and
//    #267, maintainers' answers) -> 47/50 = 0.94.
constexpr double kNvlinkEfficiency = 367.2 / 450.0;
constexpr double kNetEfficiency = 47.0 / 50.0;

}  // namespace

RooflineEfficiencies roofline_efficiencies(const std::string& gpu_name) {
  const auto& t = table();
  auto it = t.find(gpu_name);
  if (it == t.end()) {
    std::string known;
    for (const auto& [name, eff] : t) known += (known.empty() ? "" : ", ") + name;
    throw std::invalid_argument("no cited roofline efficiencies for GPU '" + gpu_name +
                                "' (known: " + known + ")");
  }
  return it->second;
}

std::vector<std::string> roofline_gpus() {
  std::vector<std::string> out;
  for (const auto& entry : table()) out.push_back(entry.first);
  return out;
}

RooflineCostModel::RooflineCostModel(sim::GpuSpec gpu)
    : RooflineCostModel(gpu, roofline_efficiencies(gpu.name)) {}

RooflineCostModel::RooflineCostModel(sim::GpuSpec gpu, RooflineEfficiencies eff)
    : gpu_(std::move(gpu)), eff_(std::move(eff)) {
  if (gpu_.peak_bf16.value <= 0 || gpu_.hbm_bandwidth.value <= 0) {
    throw std::invalid_argument("GPU '" + gpu_.name + "' needs positive peaks and HBM bandwidth");
  }
}

double RooflineCostModel::memory_time(double bytes) const {
  return bytes / (gpu_.hbm_bandwidth.value * eff_.hbm);
}

// max(FLOPs at the MAMF rate, operand and output bytes at the HBM rate). GemmShape::splits and
// sm_margin (Transformer Engine's TP overlap) are ignored: the roofline has no measurement of
// split or SM-limited GEMMs, so such a GEMM costs as much as the plain one (docs/cost-model.md).
double RooflineCostModel::gemm_time(const sim::GemmShape& g, double flops) const {
  // Grouped expert GEMMs: each group its own GEMM (weights read once per group).
  if (g.groups != 1) {
    return static_cast<double>(g.groups) * gemm_time(sim::one_group(g), flops / g.groups);
  }
  const double m = static_cast<double>(g.m), n = static_cast<double>(g.n),
               k = static_cast<double>(g.k);
  if (flops <= 0.0) flops = 2.0 * m * n * k;
  const bool fp8 = g.dtype == sim::DType::FP8;
  const double rate = gpu_.peak(g.dtype) * (fp8 ? eff_.gemm_fp8 : eff_.gemm_bf16);
  // Operands in the compute dtype, output in BF16 (Transformer Engine writes BF16 for FP8 GEMMs).
  const double bytes = (m * k + k * n) * sim::dtype_bytes(g.dtype) + m * n * 2.0;
  return std::max(flops / rate, memory_time(bytes));
}

double RooflineCostModel::attention_time(const sim::AttentionShape& a, double flops) const {
  if (a.kernel == sim::AttentionKernel::Flash2) {
    throw std::invalid_argument(
        "attention_backend flash2: the roofline model holds FlashAttention-3's published rates "
        "only; FlashAttention-2's are measured tables (the default measured cost model)");
  }
  const double eff = a.backward ? eff_.attention_bwd : eff_.attention_fwd;
  return flops / (gpu_.peak(sim::DType::BF16) * eff);
}

double RooflineCostModel::compute_time(const sim::Op& op) const {
  if (const auto* g = std::get_if<sim::GemmShape>(&op.shape)) return gemm_time(*g, op.flops);
  if (const auto* a = std::get_if<sim::AttentionShape>(&op.shape)) {
    return attention_time(*a, op.flops);
  }
  if (const auto* mb = std::get_if<sim::MemBoundShape>(&op.shape)) {
    // Optimizer offload: the host link at its measured efficiency, and the host AdamW step at
    // the GPU's share of the host DRAM peak (calib/host_costs.hpp).
    // Host-memory ops (Adam, clip, cast) at that DRAM share too; a pageable copy at the link.
    if (mb->kernel == sim::MemKernel::HostCopy || mb->kernel == sim::MemKernel::HostCopyPageable) {
      return host_copy_seconds(gpu_, op.bytes, kHostLinkEfficiency);
    }
    if (sim::is_host_kernel(mb->kernel)) {
      return host_optimizer_seconds(gpu_, op.bytes, gpu_.host_memory_bandwidth_per_gpu.value);
    }
    return memory_time(op.bytes);
  }
  throw std::invalid_argument("compute_time called on a communication op");
}

sim::CollectiveParams RooflineCostModel::collective_params(sim::CollectiveKind /*kind*/,
                                                           double /*bytes*/, int /*group_size*/,
                                                           sim::LinkClass link) const {
  if (link == sim::LinkClass::NVLink) {
    return {kNcclBaseLatency, kNcclNvlinkStepLatency, kNvlinkEfficiency};
  }
  return {kNcclBaseLatency, kNcclNetStepLatency, kNetEfficiency};
}

sim::CollectiveParams RooflineCostModel::p2p_params(double /*bytes*/, sim::LinkClass link) const {
  // One step of the same protocol model; point-to-point reaches the same link efficiency.
  if (link == sim::LinkClass::NVLink) return {kNcclBaseLatency, 0.0, kNvlinkEfficiency};
  return {kNcclBaseLatency, kNcclNetStepLatency, kNetEfficiency};
}

std::string RooflineCostModel::describe() const {
  std::ostringstream out;
  out << "roofline (" << gpu_.name << "): GEMM " << eff_.gemm_bf16 * 100 << "% BF16 / "
      << eff_.gemm_fp8 * 100 << "% FP8 of peak; " << eff_.source
      << "; NCCL latency model of tuning.cc";
  return out.str();
}

}  // namespace clustersim::calib
