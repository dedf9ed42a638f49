#include "calib/power_boost.hpp"

#include <algorithm>
#include <cmath>

#include "calib/tables.hpp"
#include "sim/spec_error.hpp"

namespace clustersim::calib {

PowerBoostTable PowerBoostTable::load(const std::string& path) {
  const CsvTable t = read_csv(path);
  const std::size_t kind = t.column("kind"), share = t.column("share"), boost = t.column("boost");
  PowerBoostTable out;
  out.file_ = path;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const double s = t.number(r, share), b = t.number(r, boost);
    if (s <= 0.0 || s > 1.0) throw SpecError(path, t.lines[r], "share", "must be in (0, 1]");
    if (b < 1.0) throw SpecError(path, t.lines[r], "boost", "must be >= 1 (a boost, not a slowdown)");
    auto& curve = out.curves_[t.text(r, kind)];
    if (!curve.empty() && s <= curve.back().first) {
      throw SpecError(path, t.lines[r], "share", "shares of a kind must increase");
    }
    curve.emplace_back(s, b);
  }
  for (const auto& [name, curve] : out.curves_) {
    if (curve.back().first != 1.0 || curve.back().second != 1.0) {
      throw SpecError(path, 0, "share", "kind '" + name + "' must end with share 1, boost 1");
    }
  }
  return out;
}

double PowerBoostTable::boost(const std::string& kind, double share) const {
  const auto it = curves_.find(kind);
  if (it == curves_.end()) return 1.0;
  const auto& c = it->second;
  share = std::clamp(share, 0.0, 1.0);
  if (share <= c.front().first) return c.front().second;
  for (std::size_t i = 1; i < c.size(); ++i) {
    if (share <= c[i].first) {
      const double w = (share - c[i - 1].first) / (c[i].first - c[i - 1].first);
      return c[i - 1].second + w * (c[i].second - c[i - 1].second);
    }
  }
  return 1.0;
}

void PowerBoostTable::load_state(const std::string& path) {
  const CsvTable t = read_csv(path);
  const std::size_t kind = t.column("kind"), seq = t.column("seq"), ratio = t.column("ratio"),
                    lo = t.column("min"), hi = t.column("max");
  std::map<std::string, std::vector<std::pair<double, double>>> states;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const double s = t.number(r, seq), k = t.number(r, ratio);
    if (s < 0.0) throw SpecError(path, t.lines[r], "seq", "must be >= 0");
    if (!(k > 0.5 && k <= 1.5)) {
      throw SpecError(path, t.lines[r], "ratio", "must be in (0.5, 1.5] (a power-state ratio)");
    }
    if (k < t.number(r, lo) || k > t.number(r, hi)) {
      throw SpecError(path, t.lines[r], "ratio", "must lie within [min, max] of its shapes");
    }
    auto& rows = states[t.text(r, kind)];
    if (!rows.empty() && (s == 0.0 || rows.back().first == 0.0 || s <= rows.back().first)) {
      throw SpecError(path, t.lines[r], "seq",
                      "a kind has one row with seq 0 or rows of increasing seq > 0");
    }
    rows.emplace_back(s, k);
  }
  states_ = std::move(states);
  state_file_ = path;
}

double PowerBoostTable::state(const std::string& kind, double seq) const {
  const auto it = states_.find(kind);
  if (it == states_.end()) return 1.0;
  const auto& rows = it->second;
  if (rows.size() == 1 || seq <= rows.front().first) return rows.front().second;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (seq <= rows[i].first) {
      const double w = std::log(seq / rows[i - 1].first) / std::log(rows[i].first / rows[i - 1].first);
      return rows[i - 1].second + w * (rows[i].second - rows[i - 1].second);
    }
  }
  return rows.back().second;
}

}  // namespace clustersim::calib
