// `clustersim calib check`: how well the measured cost model predicts measurements it was not
// given. Leave-one-out over every measured grid (each node predicted from its neighbours), and
// the GEMMs measured at the catalog models' real shapes (most of them between grid nodes)
// against the model. Goal (issue 5): median error <= 3%, max <= 10% per table.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "calib/measured_cost_model.hpp"
#include "calib/measured_tables.hpp"

namespace clustersim::calib {

/// Errors of one table: |predicted - measured| / measured over its points.
struct CheckRow {
  std::string table;  ///< grid key or catalog series with a suffix
  std::string file;
  std::size_t points = 0;
  double median = 0.0;
  double max = 0.0;
  std::size_t over_10pct = 0;
  std::string worst;  ///< the point with the largest error
  /// True when median <= 3% and max <= 10% (the goal).
  bool meets_goal() const { return median <= 0.03 && max <= 0.10; }
};

/// The whole check.
struct CheckReport {
  std::vector<CheckRow> loo;       ///< leave-one-out, every node
  std::vector<CheckRow> loo_long;  ///< leave-one-out, nodes measured at >= long_op_s
  std::vector<CheckRow> catalog;   ///< model vs measured catalog GEMMs, in and outside the grid
  /// Model vs GEMMs and attention measured beyond the grids (MeasuredTables::beyond()): per
  /// series, one row for the points beyond the grid (the model's fallbacks) and one for those
  /// the grid covers (this run against the grid's own measurement at its edge or its nodes).
  std::vector<CheckRow> beyond;
  /// Leave-one-out of the tables that the model reads through another table, as it reads them.
  /// TP-overlap and held-SM grids (gemm_tp/, gemm_busy/): each node held out of the grid and of
  /// its reference grid, the predicted ratio against the measured one (the model multiplies its
  /// dense plain-GEMM time by these ratios, so this is the error they add to a GEMM's time).
  /// NCCL's choice (nccl/nccl_choice/): each node predicted from the neighbours in the table of
  /// the algorithm and protocol NCCL chose at its size. Row names: "<key> / <what it is read
  /// through>".
  std::vector<CheckRow> model_reads;
  /// A derived GPU's model against that GPU's own measurements (check_derived_gpu), per run.
  std::vector<CheckRow> derived;
  double long_op_s = 0.0;
};

/// The reference grid of a TP-overlap or held-SM grid key, as the cost model divides by it
/// (calib/tp_overlap_factor.cpp, calib/held_sm_factor.cpp): gemm_tp margin_1_S and split_C_0 ->
/// full_1_0, split_C_S -> split_C_0; gemm_busy busy_0_S and busy_S_S -> busy_0_0, margin_S_0 ->
/// full_0_0. Empty for a reference grid itself and for keys of other tables.
std::string factor_reference_key(const std::string& key);

/// Runs the check. `model` must be built on `tables` for the measured GPU (H200-SXM).
/// @throws std::invalid_argument if the model is a derived one (its times are not measured).
CheckReport run_calib_check(const MeasuredTables& tables, const MeasuredCostModel& model,
                            double long_op_s = 50e-6);

/// A derived GPU's model (`derived`: the H100's, whose rule takes an H100's measured ratios)
/// against one run of that GPU's own probes in `run_dir` (calib/data/h100/run85, run87: the same
/// probes and procedures as the H200 tables), rows appended to `report.derived`, named "RUN
/// WHAT" (RUN the directory's name): the catalog GEMMs of gemm_catalog.csv, BF16 forward and FP8
/// with split accumulation (the model's backward FP8 table, as the H200's catalog rows), and each
/// memory-bound kernel of membound.csv at every size (MeasuredCostModel::table_membound_time;
/// where the GPU's own memory-bound table averages this run, the run is held out of it instead:
/// predicted by the geometric mean of the other runs the table names, at the table's nodes, and
/// named "RUN membound/KERNEL (held out)").
/// @throws std::invalid_argument for the measured GPU's model; SpecError (file, line, column)
/// for a missing or malformed file; std::out_of_range for a memory-bound kernel of the run that
/// the model's tables lack.
void check_derived_gpu(CheckReport& report, const MeasuredCostModel& derived, const std::string& run_dir);

/// One row per measured table as the model reads it: its model_reads row where it has one,
/// else its leave-one-out row over every node.
std::vector<CheckRow> as_the_model_reads(const CheckReport& report);

/// Fixed-width text table of a report (one row per table, goal column), for the CLI.
std::string format_check_report(const CheckReport& report);

}  // namespace clustersim::calib
