// Reading the probes' CSV tables (calib/data/<gpu>/*.csv, written by calib/probes/): provenance
// lines ("# key: value"), one header row, data rows. Reading is strict: a missing column, a
// non-numeric cell, a row of the wrong width or a failed correctness spot check is a SpecError
// naming the file, the line and the column, never a silent skip. Documented in
// docs/calibration.md.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace clustersim::calib {

/// One CSV file of a probe, as text.
struct CsvTable {
  std::string path;
  /// "# key: value" lines in file order (before and after the rows); lines without ": " have
  /// an empty key.
  std::vector<std::pair<std::string, std::string>> provenance;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;  ///< 1-based source line of each row
  int header_line = 0;     ///< 1-based line of the header row

  /// Index of a column. @throws SpecError (file, header line, column, "missing column").
  std::size_t column(const std::string& name) const;
  /// A cell as a finite number. @throws SpecError (file, line, column, reason).
  double number(std::size_t row, std::size_t col) const;
  /// A cell as text (no check).
  const std::string& text(std::size_t row, std::size_t col) const { return rows[row][col]; }
  /// The first provenance value with this key, or "" if there is none.
  std::string provenance_value(const std::string& key) const;
};

/// Reads a probe CSV. @throws SpecError if the file cannot be read, has no header row, has a row
/// whose number of cells differs from the header's, or has no data rows.
CsvTable read_csv(const std::string& path);

/// A measured time at a point of a table's axes (e.g. m, n, k of a GEMM).
struct MeasuredPoint {
  std::vector<double> coords;  ///< one value per axis, in the axis' unit
  double time_s = 0.0;         ///< median time per call, s
  int line = 0;                ///< source line, for messages
};

/// The points of one kernel configuration, e.g. "gemm/bf16/fwd" over axes (m, n, k).
struct MeasuredSeries {
  std::string key;                ///< "gemm/bf16/fwd", "attention/cudnn/gqa/fwd", ...
  std::string file;               ///< source file
  std::vector<std::string> axes;  ///< axis names ("m", "n", "k"; "seq", "heads"; "bytes")
  std::vector<MeasuredPoint> points;
};

/// GEMM grid or shape list (gemm_*.csv): one series per (dtype, layout), key
/// "gemm/<dtype>/<layout>", axes m, n, k. Rows whose spot check exceeds 2% relative error are
/// an error. @throws SpecError.
std::vector<MeasuredSeries> load_gemm_series(const std::string& path);
/// GEMMs as Transformer Engine's userbuffers TP overlap runs them (gemm_tp_overlap_*.csv,
/// calib/probes/gemm_tp_overlap.cu): one series per (dtype, layout, variant, chunks, sm_margin),
/// key "gemm_tp/<dtype>/<layout>/<variant>_<chunks>_<sm_margin>" ("gemm_tp/bf16/fwd/full_1_0",
/// "gemm_tp/bf16/fwd/margin_1_24", "gemm_tp/fp8/tn/split_4_16"), axes m, n, k, value time_s.
/// Variants: "full" (chunks 1, margin 0), "margin" (chunks 1, margin > 0), "split" (chunks > 1,
/// any margin); chunks and sm_margin must be integers. Spot-check tolerance 2%.
/// @throws SpecError.
std::vector<MeasuredSeries> load_tp_overlap_series(const std::string& path);
/// GEMMs beside SMs held by another kernel (gemm_busy_sms.csv, run 18 of
/// calib/probes/gemm_tp_overlap.cu): one series per (dtype, layout, variant, sm_margin, sm_busy),
/// key "gemm_busy/<dtype>/<layout>/<variant>_<sm_margin>_<sm_busy>" ("gemm_busy/bf16/fwd/
/// busy_0_4": planned for every SM while 4 are held; "busy_16_16": planned for 132 - 16 while 16
/// are held; "full_0_0", "margin_16_0": the same GEMM alone), axes m, n, k, value time_s.
/// Variants: "full" (margin 0, busy 0), "margin" (margin > 0, busy 0), "busy" (busy >= 0, any
/// margin); chunks must be 1. Spot-check tolerance 2%. @throws SpecError.
std::vector<MeasuredSeries> load_busy_sms_series(const std::string& path);
/// Weight-gradient GEMMs writing or accumulating into main_grad (gemm_wgrad_accum.csv, run 48 of
/// calib/probes/gemm.cu --accumulate): one series per (dtype, layout, output), key
/// "gemm_accum/<dtype>/<layout>/<plain|f32|bf16>" from the `variant` column ("std": a new BF16
/// tensor written; "accum_f32" / "accum_bf16": added into an FP32 / BF16 output), axes m, n, k,
/// value time_s. Spot-check tolerance 2%. @throws SpecError for another variant.
std::vector<MeasuredSeries> load_wgrad_accum_series(const std::string& path);
/// FP8 GEMMs with per-tensor and block-scaled operands (gemm_fp8_block.csv, run 78 of
/// calib/probes/gemm.cu --block-scaling): one series per layout, key "gemm_block/fp8/<layout>"
/// (tn, tn_block2d1d, tn_block1d1d), axes m, n, k, value time_s. Spot-check tolerance 2%.
std::vector<MeasuredSeries> load_fp8_block_series(const std::string& path);
/// Attention table (attention.csv): one series per (backend, set, direction), key
/// "attention/<backend>/<set>/<direction>" (e.g. "attention/cudnn/gqa/fwd"), axes seq and
/// heads (batch x heads). Spot-check tolerance 2%. @throws SpecError.
std::vector<MeasuredSeries> load_attention_series(const std::string& path);
/// Unmasked attention blocks of context parallelism (attention_cp.csv,
/// calib/probes/attention_cp.py): one series per (backend, set, direction), key
/// "attention_cp/<backend>/<set>/<direction>", axes seq_q, kv_ratio (seq_kv / seq_q) and
/// batch x heads. Rows of causal blocks are an error (the file holds unmasked ones). Spot-check
/// tolerance 2%. @throws SpecError.
std::vector<MeasuredSeries> load_attention_cp_series(const std::string& path);
/// Memory-bound table (membound.csv): one series per kernel, key "membound/<kernel>", axis
/// bytes (moved per call). Spot-check tolerance 3%. @throws SpecError.
std::vector<MeasuredSeries> load_membound_series(const std::string& path);
/// NCCL table (nccl_*.csv): one series per (collective, algo, proto), key
/// "nccl/<algo>/<proto>/<collective>" with algo/proto lower case ("nccl/default/default/
/// all_reduce", "nccl/ring/ll128/all_gather"), axis bytes (nccl-tests size convention). Results
/// must be exact to 1e-4. All rows must have the same nranks. @throws SpecError.
std::vector<MeasuredSeries> load_nccl_series(const std::string& path);

/// NCCL's own choice of algorithm and protocol for one call of the default NCCL run
/// (nccl_default_algo_choice.csv, read off NCCL's TUNING debug log).
struct NcclChoice {
  std::string collective;  ///< "all_reduce", "all_gather", "reduce_scatter"
  double bytes = 0.0;      ///< size in the nccl-tests convention of the tables
  std::string algo;        ///< lower case: "ring", "tree"
  std::string proto;       ///< lower case: "ll", "ll128", "simple"
};
/// Reads the choice table. NCCL logs all_gather and reduce_scatter sizes per rank; they are
/// multiplied by `nranks` to match the tables. @throws SpecError.
std::vector<NcclChoice> load_nccl_choices(const std::string& path, int nranks);

/// Measured slowdowns when compute and an NCCL all_reduce overlap (interference.csv), averaged
/// over the ranks.
struct InterferencePoint {
  std::string compute;   ///< "gemm", "attention" or "membound"
  std::string channels;  ///< "default" or the NCCL channel (CTA) count
  double bytes = 0.0;    ///< all_reduce size per rank
  double compute_slowdown = 1.0;  ///< compute time with the collective / alone
  double comm_slowdown = 1.0;     ///< collective time with compute / alone
};
/// Reads interference.csv. @throws SpecError.
std::vector<InterferencePoint> load_interference(const std::string& path);

}  // namespace clustersim::calib
