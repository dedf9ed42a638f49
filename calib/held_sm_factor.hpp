// GEMMs beside SMs held by another kernel, as Transformer Engine's userbuffers communication
// kernels (bulk all-gather / reduce-scatter, pipelined reduce-scatter) hold num_sm SMs while they
// overlap a GEMM: the factor by which the GEMM runs slower while they are held, from runs 18 and
// 43 of calib/probes/gemm_tp_overlap.cu (calib/data/h200/gemm_busy_sms.csv). Documented in
// docs/cost-model.md ("GEMMs under TP overlap") and docs/calibration.md.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "calib/log_grid.hpp"
#include "calib/measured_tables.hpp"
#include "calib/tp_overlap_factor.hpp"
#include "sim/trace.hpp"

namespace clustersim::calib {

/// The measured held-SM factor of a GEMM: its time while `busy_sms` SMs are held by another
/// kernel / its time alone, at the sustained power state (runs 18 and 43). The engine applies it
/// only while the overlapping communication is in flight; the GEMM's own time (plain x the
/// TP-overlap factor of its splits and margin) is costed without it.
class HeldSmFactor {
 public:
  /// Indexes the "gemm_busy/<dtype>/<layout>/<variant>_<margin>_<busy>" grids of `tables`
  /// (which must outlive this object). Tables without them are allowed: every factor is then 1.
  explicit HeldSmFactor(const MeasuredTables& tables);

  /// True if the tables hold at least one held-SM layout.
  bool loaded() const { return !layouts_.empty(); }
  /// The source files of the loaded layouts, without repeats.
  std::vector<std::string> files() const;

  /// Factor for `g` (1 for busy_sms 0), layouts as overlap_layouts (geometric mean over the
  /// parts), shapes clamped to the grid. With S = busy_sms and R(S) a measured ratio:
  ///  - planned for every SM (sm_margin 0): R(S) = busy_0_S / busy_0_0 (the reference holds no
  ///    SM but makes the same hand-over), piecewise linear in S through (0, 1) and the measured
  ///    S; above the largest measured S_max: R(S_max) (132 - S_max) / (132 - S), the GEMM's
  ///    SMs shrinking in proportion;
  ///  - planned for 132 - sm_margin SMs: R(S) = (busy_S_S / busy_0_0) / (margin_S_0 / full_0_0),
  ///    what holding the SMs adds to the margin the GEMM was planned with, piecewise linear
  ///    through (0, 1) and the measured S; above the largest, its ratio;
  ///  - the factor is at least 1 (a held SM never speeds a GEMM; ratios below 1 are noise).
  /// Clamped shapes and missing tables (factor 1) go to `note`.
  /// @throws std::invalid_argument if busy_sms < 0 or >= 132.
  double operator()(const sim::GemmShape& g, sim::Phase phase, const OutOfGridNote& note) const;

 private:
  /// The grids of one (dtype, layout), e.g. "bf16/fwd".
  struct Layout {
    std::string name;
    const LogGrid* full = nullptr;                 ///< full_0_0
    const LogGrid* busy0 = nullptr;                ///< busy_0_0
    std::map<int, const LogGrid*> busy;            ///< S > 0 -> busy_0_S
    std::map<int, const LogGrid*> margin;          ///< S -> margin_S_0
    std::map<int, const LogGrid*> busy_margin;     ///< S -> busy_S_S
  };
  double layout_factor(const Layout& l, const std::vector<double>& x, int busy, bool margin) const;

  std::map<std::string, Layout> layouts_;
};

}  // namespace clustersim::calib
