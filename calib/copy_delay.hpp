// Kernels beside activation offloading's host copies: how much longer a kernel call takes while
// pinned device-to-host and/or host-to-device copies run on the GPU's copy engines. Read from
// calib/data/<gpu>/copy_interference.csv (calibration runs 80-81, calib/probes/
// copy_interference.py). Documented in docs/cost-model.md, "Kernels beside host copies".
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

 private:
  std::array<std::array<sim::CopyDelay, 4>, sim::kComputeClassCount> delay_{};
  std::string file_;
};

}  // namespace clustersim::calib
