// Interpolation over a measured table: a complete cartesian grid of 1 to 3 axes (GEMM m x n x k,
// attention seq x heads, bytes of a memory-bound kernel or a collective), multilinear in
// (log coordinate, log time). Kernel times are close to power laws of their dimensions
// (time ~ m n k for a saturated GEMM, ~ bytes for a streaming kernel), so straight lines in
// log-log space follow them between grid points, and a measured point is reproduced exactly.
// Also the leave-one-out predictor that `clustersim calib check` reports.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "calib/tables.hpp"

namespace clustersim::calib {

/// A measured series arranged as a complete grid, interpolated in log-log space.
class LogGrid {
 public:
  /// @throws SpecError (file, line, axis, reason) if a coordinate is not positive, a point
  /// appears twice, or the points do not fill the cartesian product of their axis values (the
  /// message names the first missing point).
  explicit LogGrid(const MeasuredSeries& series);

  /// The measured series' key ("gemm/bf16/fwd", ...).
  const std::string& key() const { return key_; }
  /// The CSV it was read from.
  const std::string& file() const { return file_; }
  /// Number of axes.
  std::size_t dims() const { return axes_.size(); }
  /// Sorted distinct values of axis d (unit of the table: elements, bytes, ...).
  const std::vector<double>& axis(std::size_t d) const { return axes_[d]; }
  /// Name of axis d (the CSV column: "m", "bytes", ...).
  const std::string& axis_name(std::size_t d) const { return names_[d]; }
  /// Number of measured points.
  std::size_t size() const { return log_t_.size(); }

  /// True if every coordinate lies within its axis' measured range.
  bool contains(const std::vector<double>& x) const;
  /// x with each coordinate clamped to its axis' measured range (the nearest in-grid point).
  /// @throws std::invalid_argument if x has the wrong size.
  std::vector<double> clamp(const std::vector<double>& x) const;
  /// Interpolated time in s at x (one coordinate per axis, all > 0). Coordinates outside an
  /// axis' range are clamped to it: callers that must not extrapolate check contains() first.
  /// @throws std::invalid_argument if x has the wrong size or a coordinate is not positive.
  double time_at(const std::vector<double>& x) const;
  /// Measured time of node i (flat index in [0, size())), s.
  double node_time(std::size_t i) const;
  /// Coordinates of node i.
  std::vector<double> node_coords(std::size_t i) const;
  /// Source line of node i.
  int node_line(std::size_t i) const { return lines_[i]; }
  /// Flat index of the node at exactly `x`, or size() if the grid has no node there.
  std::size_t node_at(const std::vector<double>& x) const;
  /// "m=1024 n=512 k=2048": node i's coordinates with the axis names, for messages.
  std::string node_text(std::size_t i) const;
  /// Prediction of node i without using it (leave-one-out), s: along every axis where the node
  /// has a neighbour on each side, the log-log line between those two neighbours; the mean (in
  /// log time) over such axes. A node at the edge of every axis is extrapolated along each axis
  /// from its two nearest nodes. With no neighbours at all (a 1-point axis) it returns NaN.
  double loo_predict(std::size_t i) const;

 private:
  std::vector<std::size_t> unflat(std::size_t i) const;
  std::size_t flat(const std::vector<std::size_t>& idx) const;
  double line_predict(const std::vector<std::size_t>& idx, std::size_t d, std::size_t a,
                      std::size_t b) const;

  std::string key_, file_;
  std::vector<std::string> names_;
  std::vector<std::vector<double>> axes_;      ///< sorted distinct values per axis
  std::vector<std::vector<double>> log_axes_;  ///< their logarithms
  std::vector<double> log_t_;                  ///< log time, row-major over the axes
  std::vector<int> lines_;
};

/// "m 1024-65536, n 512-32768, ..." : each axis' name and measured range, for messages.
std::string range_text(const LogGrid& grid);

/// "2048x12288x3072": a point's coordinates joined by "x", for messages.
std::string shape_text(const std::vector<double>& x);

/// Leave-one-out error of a table: every node predicted from the others.
struct LooStats {
  std::string key, file;
  std::size_t points = 0;   ///< nodes evaluated
  double median = 0.0;      ///< median |predicted - measured| / measured
  double max = 0.0;
  std::size_t over_10pct = 0;
  std::string worst;        ///< coordinates of the worst node ("m=1024 n=512 k=2048")
};
/// Leave-one-out over the nodes whose measured time is at least `min_time_s`.
/// Returns points = 0 if none qualifies.
LooStats leave_one_out(const LogGrid& grid, double min_time_s = 0.0);

/// exp of the mean of the logs of `v` (all > 0); for averaging times of kernels or runs.
double geometric_mean(const std::vector<double>& v);

}  // namespace clustersim::calib
