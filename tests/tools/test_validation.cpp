// The validation target (ctest label `reference`): every point of tests/validation/measured.yaml
// through `clustersim validate`; fails if the mean absolute error over the simulated points
// exceeds 5% or any point exceeds 12% (issue 7). Points that cannot be simulated yet are listed
// as skipped with their reason; points above VALIDATION_MAX_GPUS are skipped for CI time and
// say so. No threshold is loosened and nothing is fitted here.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "validation_run.hpp"

namespace {

constexpr double kMeanThreshold = 0.05;
constexpr double kPointThreshold = 0.12;

TEST(Validation, ReferenceSetWithinThresholds) {
  const auto j = clustersim::test::validate_reference_set("validation", VALIDATION_MAX_GPUS);
  ASSERT_FALSE(j.is_null());
  if (j["cases"].empty()) GTEST_SKIP() << "no reference point could be simulated (see SKIPPED lines)";
  for (const auto& c : j["cases"]) {
    EXPECT_LE(std::fabs(c["rel_error"].get<double>()), kPointThreshold)
        << c["id"].get<std::string>() << " @ " << c["gpus"] << " GPUs: measured " << c["measured"]
        << ", simulated " << c["simulated"];
  }
  EXPECT_LE(j["mean_abs_error"].get<double>(), kMeanThreshold)
      << "mean absolute error over " << j["cases"].size() << " points";
}

}  // namespace
