#include "calib/log_grid.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include "sim/spec_error.hpp"

namespace clustersim::calib {
namespace {

std::string describe_point(const std::vector<std::string>& names, const std::vector<double>& x) {
  std::ostringstream s;
  for (std::size_t d = 0; d < x.size(); ++d) s << (d ? " " : "") << names[d] << "=" << x[d];
  return s.str();
}

// Index of the segment [j, j+1] of `axis` that holds v (clamped), and the weight of j+1.
std::pair<std::size_t, double> locate(const std::vector<double>& axis, double v) {
  if (axis.size() == 1 || v <= axis.front()) return {0, 0.0};
  if (v >= axis.back()) return {axis.size() - 2, 1.0};
  const auto hi = std::upper_bound(axis.begin(), axis.end(), v);
  const std::size_t j = static_cast<std::size_t>(hi - axis.begin()) - 1;
  return {j, (v - axis[j]) / (axis[j + 1] - axis[j])};
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

LogGrid::LogGrid(const MeasuredSeries& s) : key_(s.key), file_(s.file), names_(s.axes) {
  const std::size_t dims = s.axes.size();
  if (dims == 0 || dims > 3 || s.points.empty()) {
    throw SpecError(s.file, 0, s.key, "a table needs 1 to 3 axes and at least one point");
  }
  axes_.resize(dims);
  for (const auto& p : s.points) {
    for (std::size_t d = 0; d < dims; ++d) {
      if (!(p.coords[d] > 0.0)) throw SpecError(s.file, p.line, names_[d], "must be positive");
      axes_[d].push_back(p.coords[d]);
    }
  }
  std::size_t total = 1;
  for (auto& a : axes_) {
    std::sort(a.begin(), a.end());
    a.erase(std::unique(a.begin(), a.end()), a.end());
    total *= a.size();
    std::vector<double> la;
    for (double v : a) la.push_back(std::log(v));
    log_axes_.push_back(std::move(la));
  }
  log_t_.assign(total, std::numeric_limits<double>::quiet_NaN());
  lines_.assign(total, 0);
  for (const auto& p : s.points) {
    std::vector<std::size_t> idx;
    for (std::size_t d = 0; d < dims; ++d) {
      idx.push_back(static_cast<std::size_t>(
          std::lower_bound(axes_[d].begin(), axes_[d].end(), p.coords[d]) - axes_[d].begin()));
    }
    const std::size_t f = flat(idx);
    if (lines_[f] != 0) {
      throw SpecError(s.file, p.line, s.key,
                      "duplicate point " + describe_point(names_, p.coords) + " (first at line " +
                          std::to_string(lines_[f]) + ")");
    }
    log_t_[f] = std::log(p.time_s);
    lines_[f] = p.line;
  }
  for (std::size_t f = 0; f < total; ++f) {
    if (lines_[f] == 0) {
      throw SpecError(s.file, 0, s.key,
                      "incomplete grid: no point at " + describe_point(names_, node_coords(f)));
    }
  }
}

std::size_t LogGrid::flat(const std::vector<std::size_t>& idx) const {
  std::size_t f = 0;
  for (std::size_t d = 0; d < axes_.size(); ++d) f = f * axes_[d].size() + idx[d];
  return f;
}

std::vector<std::size_t> LogGrid::unflat(std::size_t f) const {
  std::vector<std::size_t> idx(axes_.size());
  for (std::size_t d = axes_.size(); d-- > 0;) {
    idx[d] = f % axes_[d].size();
    f /= axes_[d].size();
  }
  return idx;
}

std::vector<double> LogGrid::node_coords(std::size_t f) const {
  const auto idx = unflat(f);
  std::vector<double> x;
  for (std::size_t d = 0; d < idx.size(); ++d) x.push_back(axes_[d][idx[d]]);
  return x;
}

double LogGrid::node_time(std::size_t f) const { return std::exp(log_t_.at(f)); }

std::size_t LogGrid::node_at(const std::vector<double>& x) const {
  if (x.size() != axes_.size()) return size();
  std::vector<std::size_t> idx;
  for (std::size_t d = 0; d < x.size(); ++d) {
    const auto it = std::lower_bound(axes_[d].begin(), axes_[d].end(), x[d]);
    if (it == axes_[d].end() || *it != x[d]) return size();
    idx.push_back(static_cast<std::size_t>(it - axes_[d].begin()));
  }
  return flat(idx);
}

std::string LogGrid::node_text(std::size_t i) const { return describe_point(names_, node_coords(i)); }

bool LogGrid::contains(const std::vector<double>& x) const {
  if (x.size() != axes_.size()) return false;
  for (std::size_t d = 0; d < x.size(); ++d) {
    if (x[d] < axes_[d].front() || x[d] > axes_[d].back()) return false;
  }
  return true;
}

std::vector<double> LogGrid::clamp(const std::vector<double>& x) const {
  if (x.size() != axes_.size()) throw std::invalid_argument("LogGrid::clamp: wrong number of coordinates");
  std::vector<double> c(x.size());
  for (std::size_t d = 0; d < x.size(); ++d) c[d] = std::clamp(x[d], axes_[d].front(), axes_[d].back());
  return c;
}

double LogGrid::time_at(const std::vector<double>& x) const {
  const std::size_t dims = axes_.size();
  if (x.size() != dims) throw std::invalid_argument(key_ + ": wrong number of coordinates");
  std::vector<std::pair<std::size_t, double>> seg;
  for (std::size_t d = 0; d < dims; ++d) {
    if (!(x[d] > 0.0)) throw std::invalid_argument(key_ + ": coordinates must be positive");
    seg.push_back(locate(log_axes_[d], std::log(x[d])));
  }
  double acc = 0.0;
  std::vector<std::size_t> idx(dims);
  for (std::size_t corner = 0; corner < (std::size_t{1} << dims); ++corner) {
    double w = 1.0;
    for (std::size_t d = 0; d < dims; ++d) {
      const bool upper = ((corner >> d) & 1u) != 0;
      w *= upper ? seg[d].second : 1.0 - seg[d].second;
      idx[d] = std::min(seg[d].first + (upper ? 1 : 0), axes_[d].size() - 1);
    }
    if (w > 0.0) acc += w * log_t_[flat(idx)];
  }
  return std::exp(acc);
}

// log time at node idx predicted along axis d from nodes a and b of that axis.
double LogGrid::line_predict(const std::vector<std::size_t>& idx, std::size_t d, std::size_t a,
                             std::size_t b) const {
  std::vector<std::size_t> ia = idx, ib = idx;
  ia[d] = a;
  ib[d] = b;
  const auto& la = log_axes_[d];
  const double w = (la[idx[d]] - la[a]) / (la[b] - la[a]);
  return (1.0 - w) * log_t_[flat(ia)] + w * log_t_[flat(ib)];
}

double LogGrid::loo_predict(std::size_t f) const {
  const auto idx = unflat(f);
  std::vector<double> preds;
  for (std::size_t d = 0; d < idx.size(); ++d) {
    if (idx[d] > 0 && idx[d] + 1 < axes_[d].size()) {
      preds.push_back(line_predict(idx, d, idx[d] - 1, idx[d] + 1));
    }
  }
  if (preds.empty()) {  // a corner: extrapolate along each axis from its two nearest nodes
    for (std::size_t d = 0; d < idx.size(); ++d) {
      const std::size_t n = axes_[d].size();
      if (n < 3) continue;
      preds.push_back(idx[d] == 0 ? line_predict(idx, d, 1, 2) : line_predict(idx, d, n - 2, n - 3));
    }
  }
  if (preds.empty()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0.0;
  for (double p : preds) sum += p;
  return std::exp(sum / static_cast<double>(preds.size()));
}

LooStats leave_one_out(const LogGrid& grid, double min_time_s) {
  LooStats s;
  s.key = grid.key();
  s.file = grid.file();
  std::vector<double> errs;
  for (std::size_t f = 0; f < grid.size(); ++f) {
    const double t = grid.node_time(f);
    if (t < min_time_s) continue;
    const double p = grid.loo_predict(f);
    if (std::isnan(p)) continue;
    const double e = std::fabs(p - t) / t;
    errs.push_back(e);
    if (e > 0.10) ++s.over_10pct;
    if (e >= s.max) {
      s.max = e;
      s.worst = grid.node_text(f);
    }
  }
  s.points = errs.size();
  if (!errs.empty()) s.median = median_of(errs);
  return s;
}

std::string shape_text(const std::vector<double>& x) {
  std::ostringstream s;
  for (std::size_t i = 0; i < x.size(); ++i) s << (i ? "x" : "") << x[i];
  return s.str();
}

std::string range_text(const LogGrid& g) {
  std::ostringstream s;
  for (std::size_t i = 0; i < g.dims(); ++i) {
    s << (i ? ", " : "") << g.axis_name(i) << " " << g.axis(i).front() << "-" << g.axis(i).back();
  }
  return s.str();
}

double geometric_mean(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

}  // namespace clustersim::calib
