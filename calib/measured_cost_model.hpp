// The measured cost model: every compute op costed from the kernel tables measured on H200 GPUs
// (calib/data/h200), interpolated in log-log space over shapes; NVLink collectives from the
// measured 2-GPU NCCL tables; other GPUs derived with stated rules. Documented in
// docs/calibration.md.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "calib/measured_tables.hpp"
#include "calib/roofline_cost_model.hpp"
#include "calib/held_sm_factor.hpp"
#include "calib/tp_overlap_factor.hpp"
#include "calib/fp8_block.hpp"
#include "calib/wgrad_accum.hpp"
#include "sim/cost_model.hpp"

namespace clustersim::calib {

/// Compute that overlaps a collective, for interference lookups.
enum class OverlapCompute { Gemm, Attention, MemoryBound };

/// Measured slowdowns of compute and communication when they overlap.
struct InterferenceFactors {
  double compute_slowdown = 1.0;  ///< compute time while an all_reduce runs / alone
  double comm_slowdown = 1.0;     ///< all_reduce time while compute runs / alone
};

/// An op class that fell outside the measured grids, with how often it happened.
struct OutOfGridOp {
  std::string what;   ///< "GEMM bf16 8192x106496x16384: n above 32768; edge-rate roofline"
  std::size_t count = 0;
};

/// CostModel from measured tables (H200) or derived from them (H100, B200, GB200, B300,
/// GB300).
class MeasuredCostModel : public sim::CostModel {
 public:
  /// @param gpu the platform's GPU; its name selects the derivation rule, its peaks and HBM
  /// bandwidth scale the rule where they differ from the datasheet figures the rule states
  /// (platform_scale).
  /// @throws std::invalid_argument if the GPU has no rule, a peak or the HBM bandwidth is not
  /// positive, or no cited roofline figures (the scale-out network parameters are the roofline's).
  MeasuredCostModel(sim::GpuSpec gpu, std::shared_ptr<const MeasuredTables> tables);

  /// Seconds for a GEMM, attention or memory-bound op (see docs/calibration.md for the lookup of
  /// each). Ops outside the measured grids are costed by the fallback and recorded (warning
  /// logged once per distinct op). @throws std::invalid_argument for a communication op.
  double compute_time(const sim::Op& op) const override;
  /// NVLink: base latency and per-byte efficiency from the measured 2-GPU NCCL tables (at each
  /// size the algorithm/protocol NCCL itself chose), 3.4 us per step, looked up at the 2-GPU
  /// size with the same per-step chunk (bytes x 2 / group_size); Network: the roofline's cited
  /// figures.
  sim::CollectiveParams collective_params(sim::CollectiveKind kind, double bytes, int group_size,
                                          sim::LinkClass link) const override;
  /// NVLink all-reduce, all-gather and reduce-scatter with a protocol other than Default: the
  /// measured Ring table of that protocol (nccl_ring_ll/ll128/simple.csv), or for Auto the one
  /// of the three with the lowest time at this size (NCCL's tuner picks the lowest modelled
  /// time). All-to-all and the network: as collective_params (no per-protocol figures).
  sim::CollectiveParams protocol_collective_params(sim::CollectiveKind kind, double bytes,
                                                   int group_size, sim::LinkClass link,
                                                   sim::NcclProtocol proto) const override;
  /// NVLink: from the measured one-way send table; Network: the roofline's figures.
  sim::CollectiveParams p2p_params(double bytes, sim::LinkClass link) const override;
  /// Interference from calib/data/h200/interference.csv (H200, NCCL 2.28.9 all_reduce at the
  /// default channel count overlapping an 8192^3 BF16 GEMM or a causal cuDNN SDPA fwd+bwd):
  /// GEMM and memory-bound ops take the GEMM row, attention the attention row; collectives of
  /// every kind and point-to-point transfers take the all_reduce factor at the same buffer size.
  /// Derived GPUs (H100, B200, GB200, B300, GB300) take the H200 ratios unchanged (docs/cost-model.md).
  sim::Interference interference(sim::ComputeClass compute, double comm_bytes) const override;
  /// The share of a kernel's time beside host copies: the class's slowdown inside steps with
  /// copies issued in pace (copy_pace_share.csv, runs 84, 88-91 and 97, CopyDelayTable::paced_share),
  /// else the share of copy_interference.csv's line for the class and directions (runs 80-81);
  /// no fixed time per call (docs/cost-model.md). Also for the H100 (same die, PCIe Gen5 x16);
  /// none for GPUs whose rule does not carry it (B200, GB200), for no copies and without the table.
  sim::CopyDelay copy_kernel_delay(sim::ComputeClass compute, bool d2h, bool h2d) const override;
  /// GEMMs with busy_sms: the held-SM ratio measured in run 18 (calib/held_sm_factor.hpp),
  /// applied unchanged to derived GPUs; 1 for other compute ops and without the table.
  /// @throws std::invalid_argument for a communication op.
  double held_sm_slowdown(const sim::Op& op) const override;
  /// GEMMs (by dtype) and attention: power_boost.csv (runs 24-25 on an H200) at `share`; also
  /// for the H100 (same die and 700 W limit); 1 for GPUs whose rule does not carry it (B200,
  /// GB200: not measured), for other ops and without the table.
  double clock_boost(const sim::Op& op, double share) const override;
  /// GEMMs (BF16 and FP32: gemm_bf16; FP8 forward with fast accumulation: gemm_fp8_fastacc;
  /// FP8 backward: gemm_fp8) and attention (attention_fwd / attention_bwd at sqrt(seq_q x
  /// seq_kv), the unmasked context-parallel blocks included): table_state.csv (runs 49-51 on
  /// an H200), on the GPUs that take the power state (H200, H100); 1 otherwise and without it.
  double sustained_state(const sim::Op& op) const override;
  /// True where the GPU's rule takes the H200's power state and power_boost.csv was loaded.
  bool has_power_state() const override;
  /// The rule's stated uncertainty (DerivationRule::uncertainty): for the measured GPU the
  /// tables' spread between GPUs and runs, for a derived one the derivation's stated range.
  sim::CostUncertainty uncertainty() const override;
  /// One line: measured or derived, the tables' provenance, the rule for derived GPUs.
  std::string describe() const override;

  /// Which table serves each op class and whether it is measured or derived, one line each.
  std::vector<std::string> table_sources() const;
  /// Ops costed outside the measured grids since construction, in first-seen order.
  std::vector<OutOfGridOp> out_of_grid() const;
  /// Measured interference at the NCCL default channel count, averaged over the measured GPUs
  /// and interpolated in log(bytes) between the measured all_reduce sizes (clamped at the ends).
  InterferenceFactors interference(OverlapCompute compute, double comm_bytes) const;
  /// Time in s of one GEMM of the measured table `key` ("gemm/bf16/dgrad", "gemm/fp8/tn", ...)
  /// at (m, n, k) in that table's layout, as the model reads the table: interpolated inside the
  /// grid, the edge-rate roofline outside it; on the measured GPU's scale (no derivation rule).
  /// For checks of one layout (calib check); ops are costed by compute_time().
  /// @throws std::out_of_range for an unknown key.
  double table_gemm_time(const std::string& key, double m, double n, double k) const;
  /// Time in s of the measured memory-bound kernel `kernel` ("copy", "rmsnorm", ...: a kernel of
  /// membound.csv) at `bytes` on this model's GPU: its own table where the rule has one
  /// (DerivationRule::own_membound), else the derivation rule applied above the kernel's floor.
  /// For checks of one kernel (calib check); ops are costed by compute_time().
  /// @throws std::out_of_range for a kernel the tables lack.
  double table_membound_time(const std::string& kernel, double bytes) const {
    return kernel_time("membound/" + kernel, bytes);
  }
  /// Memory-bound kernels come from this GPU's own table (DerivationRule::own_membound).
  bool has_own_membound() const { return !own_membound_.empty(); }
  /// The file of this GPU's own table `key` ("membound/copy", ...), "" when the model does not
  /// read one for it.
  std::string own_table_file(const std::string& key) const {
    const auto it = own_membound_.find(key);
    return it == own_membound_.end() ? std::string() : it->second.file();
  }
  /// The derivation rule in use.
  const DerivationRule& rule() const { return rule_; }
  /// The rule's speed-ups at this platform's GPU figures (peaks, HBM bandwidth).
  const PlatformScale& scale() const { return scale_; }

 private:
  /// The plain GEMM time x the measured TP-overlap factor when g.splits or g.sm_margin say
  /// that TE's userbuffers overlap runs it (calib/tp_overlap_factor.hpp), plus, for a weight
  /// gradient added into main_grad (g.grad_accum), the measured extra time of that
  /// accumulation (calib/wgrad_accum.hpp) at the platform's HBM bandwidth.
  double gemm_time(const sim::GemmShape& g, sim::Phase phase) const;
  /// The GEMM run plainly: the tables at (m, n, k) for its dtype and phase.
  double plain_gemm_time(const sim::GemmShape& g, sim::Phase phase) const;
  /// Whether an FP8 GEMM of `phase` is costed from the fast-accumulation table (Transformer
  /// Engine's forward GEMMs, when the table exists).
  bool fp8_fast_accum(sim::Phase phase) const;
  /// The pass whose kernels `op` runs: forward for a recomputed forward (op.recompute), else
  /// op.phase.
  static sim::Phase kernel_phase(const sim::Op& op);
  double gemm_lookup(const std::string& key, double m, double n, double k, double elem_bytes,
                     const std::string& label) const;
  double attention_time(const sim::AttentionShape& a) const;
  /// "cudnn" or "flash" (the tables' backend of `a`'s kernel); throws std::invalid_argument
  /// for FlashAttention-2 where no table or rule covers it.
  std::string attention_library(const sim::AttentionShape& a) const;
  double membound_time(sim::MemKernel kernel, double bytes, sim::Phase phase) const;
  /// A host kernel (optimizer offload) from host_offload.csv and offload_step.csv: copies over
  /// the host link, host-memory ops at the measured rate for the rank's threads, capped at the
  /// GPU's share of the host DRAM peak.
  double host_time(sim::MemKernel kernel, sim::HostThreads threads, double bytes) const;
  /// An eager Hugging Face module (RmsNormEager, RopeEager, SwigluEager): its measured table by
  /// phase (membound_eager.csv, "membound/<name>_fwd|_bwd"), keyed by the fused op's bytes;
  /// without the table, the `fused` kernel family it replaces (listed).
  double eager_time(sim::MemKernel kernel, sim::MemKernel fused, double bytes,
                    sim::Phase phase) const;
  /// Memory-bound table `key` at `bytes` on this GPU: from this GPU's own table where it has
  /// one (own_membound_), scaled only by the platform's HBM bandwidth over the rule's; else the
  /// measured time with only its part above the kernel's floor (its smallest measured call:
  /// launch and DRAM latency, which HBM bandwidth does not change) divided by the rule's memory
  /// speed-up.
  double kernel_time(const std::string& key, double bytes) const;
  /// `g`'s time at `bytes`: interpolated inside, the smallest call's time below and the largest
  /// call's bandwidth above (noted as out of grid).
  double grid_time(const std::string& key, const LogGrid& g, double bytes) const;
  double copy_bandwidth() const;
  /// Per-step NVLink latency (s) of the NCCL protocol behind table `key` at `bytes0`.
  double step_latency(const std::string& key, double bytes0) const;
  sim::CollectiveParams nvlink_params(const std::string& series, double bytes_equiv,
                                      double share_factor, int steps) const;
  void note_out_of_grid(const std::string& what) const;
  /// table_sources' text for a memory-bound table: this GPU's own file when it has `key`
  /// (own_membound_), else `file` and `how` it is derived.
  std::string membound_source(const std::string& key, const std::string& file,
                              const std::string& how) const;
  /// table_sources' lines for the GEMM factors of TP overlap and held SMs (when loaded).
  void add_overlap_sources(std::vector<std::string>& out) const;
  /// table_sources' line for the power state.
  std::string power_state_source() const;
  sim::CollectiveParams nvlink_collective(sim::CollectiveKind kind, double bytes, int group_size,
                                          const std::string& series) const;
  std::vector<InterferencePoint> interference_points(const std::string& name) const;

  sim::GpuSpec gpu_;
  const DerivationRule& rule_;
  PlatformScale scale_;  ///< rule_ at gpu_'s figures: what the tables' times are divided by
  std::shared_ptr<const MeasuredTables> tables_;
  /// This GPU's own memory-bound tables (DerivationRule::own_membound) when the tables are the
  /// repository's; empty otherwise.
  std::map<std::string, LogGrid> own_membound_;
  RooflineCostModel roofline_;  ///< network parameters and unmeasured host-side kernels
  TpOverlapFactor tp_overlap_;  ///< GEMMs split or planned for fewer SMs by TE's TP overlap
  HeldSmFactor held_sms_;       ///< GEMMs beside SMs held by TE's communication kernels
  WgradAccumCost wgrad_accum_;  ///< weight gradients added into main_grad (run 48)
  Fp8BlockFactor fp8_block_;    ///< block-scaled FP8 GEMMs (run 78)
  /// gemm, attention, membound (empty without interference_membound.csv: the GEMM row serves)
  std::array<std::vector<InterferencePoint>, 3> overlap_points_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::size_t> out_of_grid_;
  mutable std::vector<std::string> out_of_grid_order_;
};

}  // namespace clustersim::calib
