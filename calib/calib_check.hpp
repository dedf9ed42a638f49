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
  double long_op_s = 0.0;
};

/// Runs the check. `model` must be built on `tables` for the measured GPU (H200-SXM).
/// @throws std::invalid_argument if the model is a derived one (its times are not measured).
CheckReport run_calib_check(const MeasuredTables& tables, const MeasuredCostModel& model,
                            double long_op_s = 50e-6);

/// Fixed-width text table of a report (one row per table, goal column), for the CLI.
std::string format_check_report(const CheckReport& report);

}  // namespace clustersim::calib
