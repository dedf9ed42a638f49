// GEMMs as Transformer Engine's userbuffers TP overlap runs them: the factor by which such a GEMM
// takes longer than the plain GEMM of the same shape, from the ratios measured by
// calib/probes/gemm_tp_overlap.cu (runs 12 and 42, calib/data/h200/gemm_tp_overlap_*.csv). TE
// (transformer_engine/common/comm_gemm_overlap/comm_gemm_overlap.cpp) runs the GEMM of a
// ring-exchange or pipelined overlap as N chunk GEMMs of m/N rows on up to three streams, and
// with set_sm_margin plans cuBLASLt for sm_count - S SMs (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET),
// leaving S SMs to its communication kernel. Documented in docs/cost-model.md ("GEMMs under TP
// overlap") and docs/calibration.md.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "calib/log_grid.hpp"
#include "calib/measured_tables.hpp"
#include "sim/trace.hpp"

namespace clustersim::calib {

/// SMs of the measured GPU: the H200 SXM has 132 SMs, as the H100 SXM (NVIDIA H200 and H100
/// datasheets; GH100 in its SXM5 configuration), and the probe's provenance says so
/// (calib/data/h200/gemm_tp_overlap_*.csv, "# sm_count: 132"). The margin GEMMs were planned for
/// 132 - S SMs; a margin is a count of these SMs.
constexpr int kMeasuredSmCount = 132;

/// The chunk count of the pipelined splits that were also measured with a margin (run 12:
/// split_4_16 and split_4_24, as TE's pipelined reduce-scatter overlap runs num_splits = 4).
constexpr int kPipelineChunks = 4;

/// Piecewise linear through `pts` (sorted by x, at least two), extended linearly beyond the
/// first and last segments.
double piecewise_linear(const std::vector<std::pair<double, double>>& pts, double x);

/// The measured layouts a TP-overlap ratio of `g` is read from, each with the GEMM's coordinates
/// in that table: FP8 -> fp8/tn; BF16 (and FP32) forward -> bf16/fwd; backward with splits > 1
/// -> bf16/dgrad (TE splits only the data gradient); other backward GEMMs -> bf16/dgrad at
/// (m, n, k) and bf16/wgrad at (n, m, k) (the trace writes a wgrad as (in, out, tokens), the
/// table as (out, in, tokens); the op does not say which of the two it is, so callers take the
/// geometric mean of the parts' ratios).
std::vector<std::pair<std::string, std::vector<double>>> overlap_layouts(const sim::GemmShape& g,
                                                                         sim::Phase phase);

/// One grid of a TP-overlap or held-SM table: "<prefix><dtype>/<layout>/<variant>_<a>_<b>".
struct OverlapGrid {
  std::string layout;   ///< "<dtype>/<layout>", e.g. "bf16/fwd"
  std::string variant;  ///< "full", "margin", "split", "busy"
  int a = 0, b = 0;     ///< the two counts of the key (chunks and margin; margin and busy SMs)
  const LogGrid* grid = nullptr;
};

/// The grids of `tables` whose keys start with `prefix` ("gemm_tp/", "gemm_busy/") and parse as
/// above, in key order (keys that do not parse are skipped).
std::vector<OverlapGrid> overlap_grids(const MeasuredTables& tables, const std::string& prefix);

/// The source files of the `full` grids of `layouts` (a map of name -> struct with a
/// `const LogGrid* full`), without repeats, in key order.
template <typename Layouts>
std::vector<std::string> full_grid_files(const Layouts& layouts) {
  std::vector<std::string> out;
  for (const auto& [name, l] : layouts) {
    if (l.full == nullptr) continue;
    const std::string& f = l.full->file();
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  }
  return out;
}

/// Receives a description of a lookup that left the measured tables (the cost model lists it).
using OutOfGridNote = std::function<void(const std::string&)>;

/// The measured TP-overlap factor of a GEMM: time of the GEMM as TE's overlap runs it (`splits`
/// chunk GEMMs, `sm_margin` SMs left free) / time of the plain GEMM, both at the sustained
/// power state and in the same pass (calib/probes/gemm_tp_overlap.cu). The cost model multiplies
/// its plain GEMM time by it; for derived GPUs the ratio is applied unchanged (the derivation
/// rule divides the final time as for any GEMM).
class TpOverlapFactor {
 public:
  /// Indexes the "gemm_tp/<dtype>/<layout>/<variant>_<chunks>_<margin>" grids of `tables`
  /// (which must outlive this object). Tables without them are allowed: every factor is then 1.
  explicit TpOverlapFactor(const MeasuredTables& tables);

  /// True if the tables hold at least one TP-overlap layout.
  bool loaded() const { return !layouts_.empty(); }
  /// The source files of the loaded layouts, without repeats, in key order.
  std::vector<std::string> files() const;

  /// Factor for `g` (1 for splits 1 and sm_margin 0). Layout: FP8 -> fp8/tn; BF16 (and FP32)
  /// forward -> bf16/fwd; backward with splits > 1 -> bf16/dgrad (TE splits only the data
  /// gradient), otherwise the geometric mean of bf16/dgrad at (m, n, k) and bf16/wgrad at
  /// (n, m, k). Rules per (N = splits, S = sm_margin), with R a measured ratio at (m, n, k)
  /// clamped to the grid:
  ///  - margin only: piecewise linear in S through (0, 1) and the measured S; above the largest
  ///    measured S_max: R(S_max) (132 - S_max) / (132 - S);
  ///  - split only: linear in log2 N through (1, 1) and the measured N; above the largest: its R;
  ///  - both: R_split(N) x I(S), I(S) = R(split_4_S) / R(split_4_0) piecewise linear in S from
  ///    I(0) = 1 over the measured pipeline margins, above the largest S_p:
  ///    I(S_p) R_margin(S) / R_margin(S_p).
  /// Clamped shapes, N above the measured splits and missing tables (factor 1) go to `note`.
  /// @throws std::invalid_argument if splits < 1, sm_margin < 0 or sm_margin >= 132.
  double operator()(const sim::GemmShape& g, sim::Phase phase, const OutOfGridNote& note) const;

 private:
  /// The grids of one (dtype, layout), e.g. "bf16/fwd".
  struct Layout {
    std::string name;
    const LogGrid* full = nullptr;
    std::map<int, const LogGrid*> margin;    ///< S -> margin_1_S
    std::map<int, const LogGrid*> split;     ///< N -> split_N_0
    std::map<int, const LogGrid*> pipeline;  ///< S > 0 -> split_4_S
  };
  /// The layout `name` if it has every table that (N, S) needs, else nullptr.
  const Layout* usable(const std::string& name, int splits, int margin) const;
  double layout_factor(const Layout& l, const std::vector<double>& x, int splits, int margin,
                       const OutOfGridNote& note) const;
  double margin_factor(const Layout& l, const std::vector<double>& x, int margin) const;
  double split_factor(const Layout& l, const std::vector<double>& x, int splits,
                      const OutOfGridNote& note) const;
  double pipeline_margin_impact(const Layout& l, const std::vector<double>& x, int margin) const;

  std::map<std::string, Layout> layouts_;
};

}  // namespace clustersim::calib
