// The clock boost of compute-bound kernels under the power limit: how much faster GEMMs and
// attention run than their tables (measured back to back, in the GPU's sustained power state)
// when the GPU also runs lower-power work, by the share of time they take. Read from
// calib/data/<gpu>/power_boost.csv (derived by calib/scripts/power_boost.py from runs 24-25,
// calib/probes/power_phases.py). Documented in docs/cost-model.md, "Power state".
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace clustersim::calib {

/// Measured boost curves, one per kind ("gemm_bf16", "gemm_fp8", "attention").
class PowerBoostTable {
 public:
  /// Reads power_boost.csv (columns kind, share, boost). Per kind the shares must increase and
  /// end at 1 with boost 1, and every boost must be >= 1.
  /// @throws SpecError naming file, line and column.
  static PowerBoostTable load(const std::string& path);

  /// Boost of `kind` at `share` (the kind-class share of a rank's compute time at table speed,
  /// in [0, 1]): linear between measured shares, the lowest share's boost below it, 1 at 1.
  /// 1 for a kind the table does not have.
  double boost(const std::string& kind, double share) const;
  bool empty() const { return curves_.empty(); }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::map<std::string, std::vector<std::pair<double, double>>> curves_;
};

}  // namespace clustersim::calib
