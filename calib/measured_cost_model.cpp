#include "calib/measured_cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <utility>
#include <variant>

#include "sim/log.hpp"
#include "sim/spec_error.hpp"

namespace clustersim::calib {
namespace {

// NVLink 4 rate of the measured H200s, per direction: 450 GB/s (NVIDIA H200 datasheet, 900 GB/s
// total; ../shared/reference/measured.yaml nvlink_gbps_per_dir). The engine divides a flow by
// bandwidth_efficiency and sends it through the platform's NVLink links, so the measured NCCL
// times are expressed as fractions of this rate.
constexpr double kMeasuredNvlinkBytesPerS = 450e9;
// Per-step NVLink latency by protocol: NCCL 2.28.3's tuning table as printed at init on the
// measured machine (calib/data/h200/nccl_default_init.log), Ring AllReduce minus AllGather for
// 2 ranks (one ring step more): LL 7.8 - 7.2 = 0.6 us, LL128 17.8 - 15.9 = 1.9 us, Simple
// 15.2 - 11.8 = 3.4 us. The measured GPU times agree for LL: 1 KiB all_reduce 6.1 us against
// all_gather 5.4 us (nccl_ring_ll.csv).
constexpr double kNvlinkStepLatencyLL = 0.6e-6;
constexpr double kNvlinkStepLatencyLL128 = 1.9e-6;
constexpr double kNvlinkStepLatencySimple = 3.4e-6;
// NCCL sends point-to-point messages of up to NCCL_P2P_LL_THRESHOLD bytes per peer with the LL
// protocol (NCCL environment-variable docs: default 16384).
constexpr double kP2pLLThresholdBytes = 16384.0;
// Lower bound of a bandwidth efficiency: only guards the division for message sizes whose
// measured time is within noise of the latency (there the latency term dominates anyway).
constexpr double kMinEfficiency = 0.01;

double d(std::int64_t v) { return static_cast<double>(v); }

// Whether two paths name one directory (trailing slashes, relative paths and links included);
// false when either does not exist.
bool same_path(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

std::string collective_name(sim::CollectiveKind k) {
  switch (k) {
    case sim::CollectiveKind::AllReduce: return "all_reduce";
    case sim::CollectiveKind::AllGather: return "all_gather";
    case sim::CollectiveKind::ReduceScatter: return "reduce_scatter";
    // No DeepEP table: a token exchange's links run at the all-to-all's efficiency (the engine
    // asks for AllToAll itself, sim/engine_shared.cpp).
    case sim::CollectiveKind::AllToAll:
    case sim::CollectiveKind::TokenExchange: return "all_to_all";
    // A ring shift is point-to-point sends (the engine asks for p2p_params).
    case sim::CollectiveKind::RingShift: break;
  }
  throw std::invalid_argument("unknown collective kind");
}

}  // namespace

MeasuredCostModel::MeasuredCostModel(sim::GpuSpec gpu, std::shared_ptr<const MeasuredTables> tables)
    : gpu_(std::move(gpu)),
      rule_(derivation_rule(gpu_.name)),
      scale_(platform_scale(rule_, gpu_.peak_bf16.value / 1e12, gpu_.peak_fp8.value / 1e12,
                            gpu_.hbm_bandwidth.value / 1e12, gpu_.tdp.value)),
      tables_(std::move(tables)),
      roofline_(gpu_),
      tp_overlap_(*tables_),
      held_sms_(*tables_),
      wgrad_accum_(*tables_),
      fp8_block_(*tables_) {
  if (!tables_) throw std::invalid_argument("MeasuredCostModel needs loaded tables");
  if (same_path(tables_->dir(), default_measured_dir())) {
    for (const auto& file : rule_.own_membound) {
      auto grids = load_membound_grids(calib_data_dir() + "/" + file);
      own_membound_.merge(grids);
      if (!grids.empty()) {
        throw SpecError(calib_data_dir() + "/" + file, 0, grids.begin()->first,
                        "table defined twice (also in " + own_membound_.at(grids.begin()->first).file() + ")");
      }
    }
  }
  if (!scale_.note.empty()) module_logger("calib")->warn("{}: {}", gpu_.name, scale_.note);
  overlap_points_ = {interference_points("gemm"), interference_points("attention"),
                     interference_points("membound")};
}

sim::Phase MeasuredCostModel::kernel_phase(const sim::Op& op) {
  // A recomputed forward (recompute: full, or selective's replay) sits in the backward pass
  // but runs the forward's kernels: TE's fprop GEMM with fast FP8 accumulation, the forward
  // GEMM layout, the eager modules' forward (docs/cost-model.md).
  return op.recompute ? sim::Phase::Forward : op.phase;
}

double MeasuredCostModel::compute_time(const sim::Op& op) const {
  const sim::Phase phase = kernel_phase(op);
  if (const auto* g = std::get_if<sim::GemmShape>(&op.shape)) return gemm_time(*g, phase);
  if (const auto* a = std::get_if<sim::AttentionShape>(&op.shape)) return attention_time(*a);
  if (const auto* mb = std::get_if<sim::MemBoundShape>(&op.shape)) {
    if (sim::is_host_kernel(mb->kernel)) {
      if (op.bytes < 0.0) throw std::invalid_argument("host op with negative bytes");
      return host_time(mb->kernel, mb->host_threads, op.bytes);
    }
    return membound_time(mb->kernel, op.bytes, phase);
  }
  throw std::invalid_argument("compute_time called on a communication op");
}

double MeasuredCostModel::held_sm_slowdown(const sim::Op& op) const {
  if (!op.is_compute()) throw std::invalid_argument("held_sm_slowdown called on a communication op");
  const auto* g = std::get_if<sim::GemmShape>(&op.shape);
  if (g == nullptr || g->busy_sms == 0) return 1.0;
  return held_sms_(*g, kernel_phase(op), [this](const std::string& what) { note_out_of_grid(what); });
}

bool MeasuredCostModel::fp8_fast_accum(sim::Phase phase) const {
  return phase != sim::Phase::Backward && tables_->has("gemm/fp8/tn_fastacc");
}

double MeasuredCostModel::gemm_time(const sim::GemmShape& g, sim::Phase phase) const {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0) {
    throw std::invalid_argument("GEMM with a non-positive dimension");
  }
  // Grouped expert GEMMs: one GEMM per local expert, as TE's GroupedLinear launches them
  // (calibration run 75: its four streams overlap them by under 1% at the median).
  if (g.groups != 1) return static_cast<double>(g.groups) * gemm_time(sim::one_group(g), phase);
  const OutOfGridNote note = [this](const std::string& what) { note_out_of_grid(what); };
  double t = plain_gemm_time(g, phase);
  // The measured ratio applies unchanged to derived GPUs: their rule divided t above.
  if (g.splits != 1 || g.sm_margin != 0) t *= tp_overlap_(g, phase, note);
  // The accumulation's extra time is main_grad's HBM traffic (it tracks m x n at the HBM's
  // rate where the GEMM is short, run 48): derived GPUs scale it as memory-bound kernels.
  if (g.grad_accum != sim::GradAccum::None) t += wgrad_accum_.extra_time(g, note) / scale_.memory;
  return t;
}

double MeasuredCostModel::plain_gemm_time(const sim::GemmShape& g, sim::Phase phase) const {
  const double m = d(g.m), n = d(g.n), k = d(g.k);
  if (g.dtype == sim::DType::FP8 && g.fp8_scaling != sim::Fp8Scaling::Tensor) {
    // Block scaling (Float8BlockScaling): cuBLASLt promotes each 128-deep block itself, so the
    // per-tensor reference is the split-accumulation table, times the measured ratio (run 78).
    const OutOfGridNote note = [this](const std::string& what) { note_out_of_grid(what); };
    return gemm_lookup("gemm/fp8/tn", m, n, k, 1.0, "fp8") * fp8_block_.ratio(g, note) / scale_.gemm_fp8;
  }
  if (g.dtype == sim::DType::FP8) {
    // Transformer Engine runs the forward FP8 GEMM with fast accumulation and the two backward
    // GEMMs with split (2x) accumulation (transformer_engine/pytorch/module/base.py:
    // _2X_ACC_FPROP = False, _2X_ACC_DGRAD = _2X_ACC_WGRAD = True).
    return (fp8_fast_accum(phase) ? gemm_lookup("gemm/fp8/tn_fastacc", m, n, k, 1.0, "fp8/fastacc")
                 : gemm_lookup("gemm/fp8/tn", m, n, k, 1.0, "fp8")) /
           scale_.gemm_fp8;
  }
  double t = 0.0;
  if (phase != sim::Phase::Backward) {
    t = gemm_lookup("gemm/bf16/fwd", m, n, k, 2.0, "bf16/fwd");
  } else {
    // The op does not say whether it is the data or the weight gradient: geometric mean of both
    // tables. The trace writes wgrad as (in, out, tokens), the table as (out, in, tokens).
    t = geometric_mean({gemm_lookup("gemm/bf16/dgrad", m, n, k, 2.0, "bf16/dgrad"),
                        gemm_lookup("gemm/bf16/wgrad", n, m, k, 2.0, "bf16/wgrad")});
  }
  t /= scale_.gemm_bf16;
  if (g.dtype == sim::DType::FP32) {
    note_out_of_grid("GEMM fp32 (no FP32 table): BF16 time x peak_bf16/peak_fp32");
    t *= gpu_.peak_bf16.value / gpu_.peak_fp32.value;
  }
  if (g.dtype == sim::DType::TF32) {
    if (tables_->tf32_ratio().loaded()) return t * tables_->tf32_ratio().ratio(phase);
    // Without the table: half the BF16 tensor-core rate and twice the operand bytes, so both
    // terms of the BF16 time double (GpuSpec::peak's datasheet ratio).
    note_out_of_grid("GEMM tf32 (no gemm_tf32.csv): BF16 time x peak_bf16/peak_tf32 = 2 (datasheets)");
    t *= gpu_.peak_bf16.value / gpu_.peak(sim::DType::TF32);
  }
  return t;
}

double MeasuredCostModel::table_gemm_time(const std::string& key, double m, double n, double k) const {
  const double elem_bytes = key.rfind("gemm/fp8/", 0) == 0 ? 1.0 : 2.0;
  return gemm_lookup(key, m, n, k, elem_bytes, key.substr(key.find('/') + 1));
}

// In the grid: log-log interpolation. Outside: the roofline of the grid's edge - the measured
// rate at the nearest in-grid shape (coordinates clamped) applied to this GEMM's FLOPs, a memory
// term at the measured copy bandwidth, and never below the grid's smallest GEMM (launch floor).
double MeasuredCostModel::gemm_lookup(const std::string& key, double m, double n, double k,
                                      double elem_bytes, const std::string& label) const {
  const LogGrid& g = tables_->grid(key);
  const std::vector<double> x{m, n, k};
  if (g.contains(x)) return g.time_at(x);
  const auto c = g.clamp(x);
  const double rate = 2.0 * c[0] * c[1] * c[2] / g.time_at(c);
  const double bytes = (m * k + k * n) * elem_bytes + m * n * 2.0;
  const double floor = g.time_at({g.axis(0).front(), g.axis(1).front(), g.axis(2).front()});
  note_out_of_grid("GEMM " + label + " " + shape_text(x) + " outside " + range_text(g) +
                   ": edge-rate roofline");
  return std::max({2.0 * m * n * k / rate, bytes / copy_bandwidth(), floor});
}

sim::CollectiveParams MeasuredCostModel::nvlink_params(const std::string& key, double bytes0,
                                                       double share_factor, int steps0) const {
  const LogGrid& g = tables_->grid(key);
  const double lat = g.node_time(0);  // the smallest message: latency only
  const double lo = g.axis(0).front(), hi = g.axis(0).back();
  double t = 0.0;
  if (bytes0 <= lo) {
    t = lat;
  } else if (bytes0 > hi) {
    note_out_of_grid(key + " above " + shape_text({hi}) + " bytes: efficiency of the largest size");
    t = lat + (g.time_at({hi}) - lat) * bytes0 / hi;
  } else {
    t = g.time_at({bytes0});
  }
  sim::CollectiveParams p;
  p.step_latency_s = step_latency(key, bytes0);
  p.base_latency_s = std::max(0.0, lat - steps0 * p.step_latency_s);
  // The bandwidth term carries the rest of the measured time, so the engine's formula gives it
  // back exactly (also where NCCL's per-step latencies exceed the smallest message's time).
  const double excess = t - (p.base_latency_s + steps0 * p.step_latency_s);
  double eff = excess > 0.0 ? share_factor * bytes0 / (kMeasuredNvlinkBytesPerS * excess) : 1.0;
  p.bandwidth_efficiency = std::clamp(eff, kMinEfficiency, 1.0);
  return p;
}

// The per-step latency of the protocol a table's message of `bytes0` used: the protocol in the
// key ("nccl/ring/ll/all_reduce"), NCCL's logged choice for the "nccl_choice" series, and for
// the default run's point-to-point based tables (all_to_all, send) LL up to NCCL's P2P LL
// threshold per peer.
double MeasuredCostModel::step_latency(const std::string& key, double bytes0) const {
  // Keys: "nccl/ALGO/PROTO/COLLECTIVE" or "nccl/nccl_choice/COLLECTIVE".
  const std::string choice = "nccl/nccl_choice/";
  std::string proto;
  if (key.rfind(choice, 0) == 0) {
    proto = tables_->nccl_choice_protocol(key.substr(choice.size()), bytes0);
  } else if (key.rfind("nccl/default/", 0) == 0) {
    proto = bytes0 / tables_->nccl_ranks() <= kP2pLLThresholdBytes ? "ll" : "simple";
  } else if (key.find("/ll128/") != std::string::npos) {
    proto = "ll128";
  } else if (key.find("/ll/") != std::string::npos) {
    proto = "ll";
  }
  if (proto == "ll") return kNvlinkStepLatencyLL;
  if (proto == "ll128") return kNvlinkStepLatencyLL128;
  return kNvlinkStepLatencySimple;
}

sim::CollectiveParams MeasuredCostModel::collective_params(sim::CollectiveKind kind, double bytes,
                                                           int group_size,
                                                           sim::LinkClass link) const {
  if (link == sim::LinkClass::Network) return roofline_.collective_params(kind, bytes, group_size, link);
  // all_to_all is point-to-point based and was not logged: its default-run table serves.
  if (kind == sim::CollectiveKind::AllToAll) {
    return nvlink_collective(kind, bytes, group_size, "nccl/default/default/");
  }
  // NCCL's own choice at this size (nccl_default_algo_choice.csv), costed from the table of the
  // run that forced that algorithm and protocol (timed without NCCL's debug logging, see
  // measured_tables.cpp): NCCL switches protocols at a size (Ring/LL up to 1.5 MiB, Ring/Simple
  // from 2 MiB for the 2-GPU all_reduce), it does not blend them, so between logged sizes the
  // time is that protocol's, not an interpolation across the switch. Without a logged choice or
  // its table: the spliced nccl_choice series.
  const int p0 = tables_->nccl_ranks();
  const double bytes0 = bytes * p0 / std::max(group_size, 2);
  const std::string table = tables_->nccl_chosen_table(collective_name(kind), bytes0);
  const std::string series = table.empty() ? "nccl/nccl_choice/"
                                           : table.substr(0, table.rfind('/') + 1);
  return nvlink_collective(kind, bytes, group_size, series);
}

sim::CollectiveParams MeasuredCostModel::nvlink_collective(sim::CollectiveKind kind, double bytes,
                                                           int group_size,
                                                           const std::string& series) const {
  const int p0 = tables_->nccl_ranks();
  const int p = std::max(group_size, 2);
  const bool ar = kind == sim::CollectiveKind::AllReduce;
  const int steps0 = ar ? 2 * (p0 - 1) : (kind == sim::CollectiveKind::AllToAll ? 1 : p0 - 1);
  const double share = ar ? 2.0 * (p0 - 1) / p0 : static_cast<double>(p0 - 1) / p0;
  // A ring step moves bytes/p: look up the 2-GPU size with the same per-step chunk.
  const double bytes0 = bytes * p0 / p;
  return nvlink_params(series + collective_name(kind), bytes0, share, steps0);
}

sim::CollectiveParams MeasuredCostModel::protocol_collective_params(sim::CollectiveKind kind,
                                                                    double bytes, int group_size,
                                                                    sim::LinkClass link,
                                                                    sim::NcclProtocol proto) const {
  if (link == sim::LinkClass::Network || proto == sim::NcclProtocol::Default ||
      kind == sim::CollectiveKind::AllToAll) {
    return collective_params(kind, bytes, group_size, link);
  }
  using P = sim::NcclProtocol;
  const std::vector<std::pair<P, const char*>> tables = {
      {P::LL, "ll"}, {P::LL128, "ll128"}, {P::Simple, "simple"}};
  // Time of the collective over 2 ranks at the same per-step chunk, as NCCL's tuner models it.
  const int p0 = tables_->nccl_ranks();
  const double bytes0 = bytes * p0 / std::max(group_size, 2);
  const double share = (kind == sim::CollectiveKind::AllReduce ? 2.0 : 1.0) * (p0 - 1) / p0;
  const int steps0 = (kind == sim::CollectiveKind::AllReduce ? 2 : 1) * (p0 - 1);
  sim::CollectiveParams best;
  double best_t = -1.0;
  for (const auto& [which, name] : tables) {
    if (proto != P::Auto && proto != which) continue;
    const auto c = nvlink_collective(kind, bytes, group_size, std::string("nccl/ring/") + name + "/");
    const double t = c.base_latency_s + steps0 * c.step_latency_s +
                     share * bytes0 / (kMeasuredNvlinkBytesPerS * c.bandwidth_efficiency);
    if (best_t < 0.0 || t < best_t) {
      best = c;
      best_t = t;
    }
  }
  return best;
}

sim::CollectiveParams MeasuredCostModel::p2p_params(double bytes, sim::LinkClass link) const {
  if (link == sim::LinkClass::Network) return roofline_.p2p_params(bytes, link);
  sim::CollectiveParams p = nvlink_params("nccl/default/default/send", bytes, 1.0, 0);
  p.step_latency_s = 0.0;  // the engine charges base + step once per transfer
  return p;
}

// The default-channel rows of interference.csv for one compute kind, one point per all_reduce
// size, averaged over the measured GPUs (both ranks of the 2-GPU run), by increasing size.
std::vector<InterferencePoint> MeasuredCostModel::interference_points(const std::string& name) const {
  std::map<double, std::vector<InterferencePoint>> by_bytes;
  for (const auto& p : tables_->interference()) {
    if (p.compute == name && p.channels == "default") by_bytes[p.bytes].push_back(p);
  }
  std::vector<InterferencePoint> pts;
  for (const auto& [bytes, rows] : by_bytes) {
    InterferencePoint m = rows.front();
    m.compute_slowdown = m.comm_slowdown = 0.0;
    for (const auto& r : rows) {
      m.compute_slowdown += r.compute_slowdown / static_cast<double>(rows.size());
      m.comm_slowdown += r.comm_slowdown / static_cast<double>(rows.size());
    }
    pts.push_back(m);
  }
  return pts;
}

InterferenceFactors MeasuredCostModel::interference(OverlapCompute compute, double comm_bytes) const {
  const auto index = static_cast<std::size_t>(compute);
  const char* names[] = {"gemm", "attention", "membound"};
  const auto& pts = overlap_points_[index];
  if (pts.empty()) throw std::out_of_range(std::string("no interference measurement for ") + names[index]);
  if (comm_bytes <= pts.front().bytes) return {pts.front().compute_slowdown, pts.front().comm_slowdown};
  if (comm_bytes >= pts.back().bytes) return {pts.back().compute_slowdown, pts.back().comm_slowdown};
  std::size_t j = 0;
  while (pts[j + 1].bytes < comm_bytes) ++j;
  const double w = std::log(comm_bytes / pts[j].bytes) / std::log(pts[j + 1].bytes / pts[j].bytes);
  return {pts[j].compute_slowdown * (1 - w) + pts[j + 1].compute_slowdown * w,
          pts[j].comm_slowdown * (1 - w) + pts[j + 1].comm_slowdown * w};
}

sim::Interference MeasuredCostModel::interference(sim::ComputeClass compute,
                                                 double comm_bytes) const {
  // Memory-bound kernels take their own row (run 28: element-wise adds beside the all_reduce);
  // without it, the GEMM row (both stream through HBM while NCCL copies through it).
  OverlapCompute kind = OverlapCompute::Gemm;
  if (compute == sim::ComputeClass::Attention) kind = OverlapCompute::Attention;
  if (compute == sim::ComputeClass::MemoryBound && !overlap_points_[2].empty()) {
    kind = OverlapCompute::MemoryBound;
  }
  const auto f = interference(kind, std::max(comm_bytes, 1.0));
  return {std::max(1.0, f.compute_slowdown), std::max(1.0, f.comm_slowdown)};
}

// Kernels beside copies issued in pace with the step, as an offload manager issues them: per
// class the slowdown measured inside such steps against the same step's kernels apart from the
// copies (runs 84 on an H200, 88, 89, 91 and 97 on H100s; calib/data/h200/copy_pace_share.csv,
// 20 / 15 / 20 points: GEMMs +1.1% +- 0.5%, attention -2.2% +- 1.7%, memory-bound -0.9% +- 0.4%,
// the last two charged 0). copy_interference.csv's lines (runs 80-81), measured call by call beside
// a backlog of copies, charge attention 11.5-14% and every GEMM call 20-35 us that these steps do
// not show (tests/calib/test_copy_pace.cpp); without the paced table their share is charged.
sim::CopyDelay MeasuredCostModel::copy_kernel_delay(sim::ComputeClass compute, bool d2h, bool h2d) const {
  if (!rule_.host_copy_delay || !(d2h || h2d)) return {};
  const CopyDelayTable& t = tables_->copy_delay();
  if (t.has_paced()) return {0.0, t.paced_share(compute)};
  sim::CopyDelay d = t.delay(compute, (d2h ? CopyDelayTable::kDeviceToHost : 0) |
                                          (h2d ? CopyDelayTable::kHostToDevice : 0));
  d.fixed_s = 0.0;
  return d;
}

void MeasuredCostModel::note_out_of_grid(const std::string& what) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, fresh] = out_of_grid_.try_emplace(what, 0);
  ++it->second;
  if (fresh) {
    out_of_grid_order_.push_back(what);
    module_logger("calib")->info("outside the measured tables: {}", what);
  }
}

std::vector<OutOfGridOp> MeasuredCostModel::out_of_grid() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<OutOfGridOp> out;
  for (const auto& w : out_of_grid_order_) out.push_back({w, out_of_grid_.at(w)});
  return out;
}

}  // namespace clustersim::calib
