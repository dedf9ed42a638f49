// Regression guard of the green suite (ctest label `slow`: left out of the sanitizer pass for
// time): the reference set as `clustersim validate` simulated it (2026-12-04; bounds moved on
// 2026-12-05, below), with margins, so that a change which makes the simulator agree worse with
// the published measurements fails CI instead of only moving the numbers of docs/validation.md.
// It is not issue 7's acceptance check (test_validation.cpp, label `reference`, which the whole
// set still misses); its bounds are the recorded accuracy, not goals. A deliberate model change that moves past them updates them here
// and in docs/validation.md ("The validation ctest") in the same commit.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "validation_run.hpp"

namespace {

constexpr int kPoints = 51;               // every point of the shipped set
// Recorded 7.87% since 2026-12-05 (7.03% before): the H100's GEMM and memory-bound times are
// an H100's measured ratios to the H200 tables (calibration runs 85 and 87), 1.5-2.5% faster
// than the former same-die rule, and the simulator was already fast on most H100 points.
constexpr double kSetMean = 0.085;
constexpr double kSetPoint = 0.40;        // recorded 36.5% (l3_405b_16384_long_context)
// The DGX Cloud Llama 3.1 recipes (ids dgxc_llama3_*): every setting of these jobs is a
// published recipe's, and they are held to issue 7's own thresholds (recorded 4.3%, 8.3%).
constexpr double kRecipeMean = 0.05;
constexpr double kRecipePoint = 0.12;

TEST(ValidationGuard, ReferenceSetAccuracyDoesNotRegress) {
  const auto j = clustersim::test::validate_reference_set("validation_guard", 0);
  ASSERT_FALSE(j.is_null());
  EXPECT_TRUE(j["not_simulated"].empty()) << "every point of the set is simulated";
  ASSERT_EQ(j["cases"].size(), static_cast<std::size_t>(kPoints));
  double recipe_sum = 0.0;
  int recipe_points = 0;
  for (const auto& c : j["cases"]) {
    const std::string id = c["id"].get<std::string>();
    const double err = std::fabs(c["rel_error"].get<double>());
    EXPECT_LE(err, kSetPoint) << id << " @ " << c["gpus"] << " GPUs";
    if (id.rfind("dgxc_llama3_", 0) == 0) {
      EXPECT_LE(err, kRecipePoint) << id << " @ " << c["gpus"] << " GPUs: measured "
                                   << c["measured"] << ", simulated " << c["simulated"];
      recipe_sum += err;
      ++recipe_points;
    }
  }
  EXPECT_LE(j["mean_abs_error"].get<double>(), kSetMean) << "whole set";
  ASSERT_EQ(recipe_points, 17);
  EXPECT_LE(recipe_sum / recipe_points, kRecipeMean) << "DGX Cloud Llama 3.1 recipes";
}

}  // namespace
