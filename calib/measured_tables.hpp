// The measured tables of one GPU type (calib/data/<gpu>/, see its README.md) loaded as
// interpolation grids, and the stated rules that derive other GPUs' costs from them.
// Documented in docs/calibration.md.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "calib/host_costs.hpp"
#include "calib/log_grid.hpp"
#include "calib/copy_delay.hpp"
#include "calib/power_boost.hpp"
#include "calib/tables.hpp"
#include "calib/tf32_ratio.hpp"
#include "sim/cost_model.hpp"

namespace clustersim::calib {

/// Every table of one measured GPU, as grids keyed like the series ("gemm/bf16/fwd",
/// "attention/cudnn/gqa/bwd", "membound/copy", "nccl/default/default/all_reduce", ...).
class MeasuredTables {
 public:
  /// Loads the tables of `dir` (gemm_bf16.csv, gemm_fp8.csv, attention.csv, membound.csv,
  /// nccl_{default,ring_*,tree_*}.csv, gemm_catalog_{bf16,fp8}.csv, interference.csv, host_offload.csv;
  /// optional: gemm_fp8_fastacc.csv, gemm_tp_overlap_{fwd_wgrad,dgrad_fp8}.csv,
  /// gemm_busy_sms.csv, gemm_tf32.csv, attention_cp.csv, power_boost.csv with table_state.csv,
  /// interference_membound.csv, gemm_long_tokens.csv, attention_long.csv).
  /// @throws SpecError naming file, line and column for a missing or malformed table.
  static std::shared_ptr<const MeasuredTables> load(const std::string& dir);

  /// The grid of a key. @throws std::out_of_range naming the key.
  const LogGrid& grid(const std::string& key) const;
  bool has(const std::string& key) const { return grids_.count(key) != 0; }
  /// All grid keys, sorted.
  std::vector<std::string> keys() const;
  /// Measured GEMMs at real model shapes (validation, not used for costing).
  const std::vector<MeasuredSeries>& catalog() const { return catalog_; }
  /// GEMMs and attention measured beyond the grids' edges (gemm_long_tokens.csv,
  /// attention_long.csv; checks of the model's fallbacks there, not used for costing); empty
  /// when the directory has neither file.
  const std::vector<MeasuredSeries>& beyond() const { return beyond_; }
  /// Measured compute/communication interference.
  const std::vector<InterferencePoint>& interference() const { return interference_; }
  /// Host-offload figures (host_offload.csv): PCIe copies and host AdamW.
  const HostOffloadTable& host_offload() const { return host_offload_; }
  /// Clock boost of compute-bound kernels by their share of the time (power_boost.csv) and
  /// their tables' ratio to their own sustained state (table_state.csv); empty when the
  /// directory has no power_boost.csv.
  const PowerBoostTable& power_boost() const { return power_boost_; }
  /// Extra time per kernel beside host copies (copy_interference.csv, runs 80-81, and the shares
  /// of copy_pace_share.csv, runs 84, 88-91 and 97, when present); empty when the directory has no
  /// copy_interference.csv.
  const CopyDelayTable& copy_delay() const { return copy_delay_; }
  /// TF32 over BF16 GEMM times (gemm_tf32.csv, run 102); not loaded() when the directory has
  /// no such file.
  const Tf32Ratio& tf32_ratio() const { return tf32_ratio_; }
  /// Ranks of the NCCL tables (2 for the H200 data).
  int nccl_ranks() const { return nccl_ranks_; }
  /// The protocol ("ll", "ll128", "simple") NCCL chose for `collective` ("all_reduce",
  /// "all_gather", "reduce_scatter") at `bytes` (nccl-tests convention) in the default run: that
  /// of the largest logged size <= bytes (the smallest logged size below it); "" if none logged.
  std::string nccl_choice_protocol(const std::string& collective, double bytes) const;
  /// The algorithm and protocol NCCL chose for `collective` at `bytes`, by the same rule as
  /// nccl_choice_protocol(); nullptr if none logged.
  const NcclChoice* nccl_choice(const std::string& collective, double bytes) const;
  /// The key of the forced-algorithm/protocol table NCCL's choice at `bytes` was timed in
  /// ("nccl/ring/simple/all_reduce"), or "" when there is no choice or no such table. Between
  /// two logged sizes the choice of the smaller holds: NCCL's tuner switches where its own
  /// modelled times cross, not where the measured ones do (2-rank all_reduce: Ring/LL 7.8 us +
  /// 141 GB/s against Ring/Simple 15.2 us + 360 GB/s in nccl_default_init.log cross at 1.64 MiB,
  /// between the logged 1.5 MiB (LL) and 2 MiB (Simple), although the measured LL is still the
  /// faster at 2 MiB: 21.5 against 27.9 us).
  std::string nccl_chosen_table(const std::string& collective, double bytes) const;
  const std::string& dir() const { return dir_; }
  /// One line: GPU, date, driver and library versions of the tables.
  const std::string& provenance() const { return provenance_; }

 private:
  std::string dir_, provenance_;
  std::map<std::string, LogGrid> grids_;
  std::vector<MeasuredSeries> catalog_;
  std::vector<MeasuredSeries> beyond_;
  std::vector<InterferencePoint> interference_;
  HostOffloadTable host_offload_;
  PowerBoostTable power_boost_;
  CopyDelayTable copy_delay_;
  Tf32Ratio tf32_ratio_;
  int nccl_ranks_ = 0;
  std::vector<NcclChoice> nccl_choices_;
};

/// Directory of the measured H200 tables compiled into the library
/// (CLUSTERSIM_CALIB_DIR "/h200").
std::string default_measured_dir();

/// The repository's calibration data (CLUSTERSIM_CALIB_DIR: calib/data), which holds
/// default_measured_dir() and the files of DerivationRule::own_membound.
std::string calib_data_dir();

/// The memory-bound tables of a membound.csv file ("membound/copy", "membound/rmsnorm", ...),
/// each kernel's grid over bytes.
/// @throws SpecError naming file, line and column for a missing or malformed file.
std::map<std::string, LogGrid> load_membound_grids(const std::string& path);

/// How a GPU's costs follow from the measured (H200) tables: each factor divides the measured
/// time of its op class. The measured GPU itself has all factors 1 and `measured` true.
struct DerivationRule {
  std::string gpu;
  bool measured = false;
  double gemm_bf16 = 1.0;   ///< BF16 GEMM speed-up over the measured GPU
  double gemm_fp8 = 1.0;    ///< FP8 GEMM speed-up
  double attention = 1.0;   ///< fused-attention speed-up
  double memory = 1.0;      ///< memory-bound kernel speed-up (HBM bandwidth ratio)
  std::string basis;        ///< the rule and its sources
  /// Stated uncertainty of the times (measured: the tables' spread between GPUs and runs;
  /// derived: the derivation's stated range), with its sources in `basis`.
  sim::CostUncertainty uncertainty;
  /// The measured GPU's power-state boost applies (power_boost.csv): same die and power limit.
  bool power_boost = false;
  /// The datasheet figures the ratios above hold for (dense TFLOP/s, TB/s). A platform whose
  /// GPU states other figures under the same name (a user's platform file or
  /// `cluster.overrides`) scales the derived times by its figures over these: compute-bound
  /// kernels by the peak (same architecture, time ~ 1 / peak), memory-bound ones by the HBM
  /// bandwidth (time ~ bytes / bandwidth). See PlatformScale.
  double peak_bf16_tflops = 0.0;
  double peak_fp8_tflops = 0.0;
  double hbm_tbps = 0.0;
  /// The board power limit the ratios hold for (W): 700 for the H200 the tables come from.
  /// Another tdp is stated in PlatformScale::note but scales nothing: no kernel was measured
  /// under another limit.
  double tdp_w = 0.0;
  /// FlashAttention-2's tables apply (attention_backend: flash2): the measured GPU and GPUs of
  /// its architecture. Elsewhere no rule derives them (the attention speed-up above is cuDNN's).
  bool flash2 = false;
  /// The measured GPU's extra time per kernel beside host copies applies (copy_pace_share.csv,
  /// else copy_interference.csv; runs 84, 88-91 and 97 on an H200 and H100s agree):
  /// the same GPU and PCIe Gen5 x16 host link. Not on GPUs whose host link or copy engines differ
  /// (B200, GB200's NVLink-C2C): not measured.
  bool host_copy_delay = false;
  /// This GPU's own memory-bound kernels, measured by the probes and procedures of the H200's
  /// membound.csv and membound_eager.csv (same formats), as paths relative to the repository's
  /// calibration data (calib/data); empty when none were measured. They replace the derived
  /// kernel times (`memory` then applies only to kernels the files lack and to main_grad
  /// accumulation's extra traffic) when the model reads
  /// the repository's tables, against which they were measured; with another data directory
  /// the rule's `memory` applies to all.
  std::vector<std::string> own_membound;
  /// This GPU's kernel times come from another architecture's measurements: the Blackwell GPUs,
  /// derived from the H200's Hopper tables by MAMF and HBM ratios (the H100 shares the H200's
  /// die; the H200 is measured).
  bool cross_architecture = false;
};

/// The rule's speed-ups scaled to a platform's own GPU figures: rule ratio x platform figure /
/// the rule's datasheet figure. All 1 for the measured GPU at its datasheet figures.
struct PlatformScale {
  double gemm_bf16 = 1.0;  ///< BF16 GEMM speed-up over the measured tables
  double gemm_fp8 = 1.0;   ///< FP8 GEMM speed-up
  double attention = 1.0;  ///< fused-attention speed-up (BF16 tensor cores)
  double memory = 1.0;     ///< memory-bound kernel speed-up
  /// "peak_bf16 500 TFLOP/s vs the rule's 989: GEMM BF16 and attention x0.506; ..." for each
  /// figure that differs from the rule's, empty when none does.
  std::string note;
};

/// The speed-ups `rule` gives a GPU with these datasheet figures (TFLOP/s, TFLOP/s, TB/s, W).
/// @throws std::invalid_argument if a figure is not positive.
PlatformScale platform_scale(const DerivationRule& rule, double peak_bf16_tflops,
                             double peak_fp8_tflops, double hbm_tbps, double tdp_w);

/// One line of a stated uncertainty: "GEMM +-2%, attention +-5%, memory-bound +-1% (+-7% below
/// 8 MiB), network transfers -2.1%..+2.2% (sources)".
std::string uncertainty_text(const sim::CostUncertainty& u);

/// The rule for a GPU: "H200-SXM" (measured), "H100-SXM", "B200", "GB200", "B300",
/// "GB300".
/// @throws std::invalid_argument for a GPU with no rule (the message lists the known ones).
const DerivationRule& derivation_rule(const std::string& gpu_name);

/// Names of the GPUs the measured model can cost (measured, or with a derivation rule), sorted.
std::vector<std::string> measured_model_gpus();

}  // namespace clustersim::calib
