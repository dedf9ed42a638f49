// Kernels beside activation offloading's host copies: how much longer a kernel call takes while
// pinned device-to-host and/or host-to-device copies run on the GPU's copy engines. Read from
// calib/data/<gpu>/copy_interference.csv (calibration runs 80-81, calib/probes/
// copy_interference.py: kernels timed call by call beside a backlog of copies) and
// copy_pace_share.csv (runs 84, 88, 89, 91 and 97, calib/probes/copy_pace.py: kernels inside a step
// with copies issued in pace, calib/scripts/copy_pace_share.py). Documented in
// docs/cost-model.md, "Kernels beside host copies".
#pragma once

#include <array>
#include <string>

#include "sim/cost_model.hpp"

namespace clustersim::calib {

/// Measured extra time per kernel call beside host copies, by compute class and copy directions.
class CopyDelayTable {
 public:
  /// Directions of host copies in flight: bit 1 device-to-host, bit 2 host-to-device.
  static constexpr int kDeviceToHost = 1;
  static constexpr int kHostToDevice = 2;

  /// Reads copy_interference.csv (columns kernel, background, seconds_alone, seconds_beside,
  /// covered, check; kernel names start with gemm_, attention_ or copy_, backgrounds are d2h,
  /// h2d, both). A row whose check failed, whose copies did not cover the timed window or
  /// whose times are not positive is an error. @throws SpecError naming file, line and column.
  static CopyDelayTable load(const std::string& path);

  /// How much longer a call of class `compute` takes while copies of `directions` (bits above)
  /// run: the least-squares line of (seconds_beside - seconds_alone) over seconds_alone through
  /// the table's rows of that class and background, fixed part and share each at least 0 (the
  /// other refitted alone when one would be negative). None for directions 0 and for a class or
  /// background the table lacks.
  sim::CopyDelay delay(sim::ComputeClass compute, int directions) const;
  /// True before load() or for a table without rows.
  bool empty() const { return file_.empty(); }
  const std::string& file() const { return file_; }

  /// Reads copy_pace_share.csv (columns class, slowdown; classes gemm, attention and other, the
  /// last the memory-bound kernels): per class the mean of its points' slowdowns, at least 0 (a
  /// copy does not speed a kernel; below 0 is noise). A class without points keeps none. An
  /// unknown class is an error. @throws SpecError naming file, line and column.
  void load_paced(const std::string& path);
  /// True once load_paced() has read a table.
  bool has_paced() const { return !paced_file_.empty(); }
  const std::string& paced_file() const { return paced_file_; }
  /// The share of a kernel's time beside copies issued in pace with a step, for `compute`
  /// (load_paced); 0 without that table.
  double paced_share(sim::ComputeClass compute) const {
    return paced_share_[static_cast<std::size_t>(compute)];
  }

 private:
  std::array<std::array<sim::CopyDelay, 4>, sim::kComputeClassCount> delay_{};
  std::string file_;
  std::array<double, sim::kComputeClassCount> paced_share_{};
  std::string paced_file_;
};

}  // namespace clustersim::calib
