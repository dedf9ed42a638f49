// The clock boost of compute-bound kernels under the power limit: how much faster GEMMs and
// attention run than back to back in their own sustained power state when the GPU also runs
// lower-power work, by the share of time they take. Read from calib/data/<gpu>/power_boost.csv
// (derived by calib/scripts/power_boost.py from runs 24-25, calib/probes/power_phases.py), with
// the ratio of that sustained state to the tables' rates from table_state.csv (run 49,
// calib/scripts/table_state.py). Documented in docs/cost-model.md, "Power state".
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

  /// Reads table_state.csv (columns kind, seq, ratio, min, max: runs 49-51,
  /// calib/scripts/table_state.py) into this table: per kind ("gemm_bf16", "gemm_fp8",
  /// "gemm_fp8_fastacc": one row with seq 0, for every shape; "attention_fwd",
  /// "attention_bwd": one row per sequence length, increasing), the rate back to back in the
  /// kind's own sustained power state over its table's rate. Each ratio must be in (0.5, 1.5]
  /// and within [min, max]. @throws SpecError naming file, line and column.
  void load_state(const std::string& path);
  /// The state ratio of `kind` at sequence length `seq` (ignored for a kind with one seq-0
  /// row): linear in log(seq) between its rows, the end rows' ratio outside them; 1 for a kind
  /// table_state.csv does not have (or without it).
  double state(const std::string& kind, double seq = 0.0) const;
  /// The table_state.csv read ("" if none).
  const std::string& state_file() const { return state_file_; }

 private:
  std::string file_, state_file_;
  std::map<std::string, std::vector<std::pair<double, double>>> curves_;
  std::map<std::string, std::vector<std::pair<double, double>>> states_;  // (seq, ratio)
};

}  // namespace clustersim::calib
