// Regression guard of the green suite (ctest label `slow`: left out of the sanitizer pass for
// time): the reference set as `clustersim validate` simulated it (2026-12-04; bounds moved on
// 2026-12-05 and 2026-12-06, below), with margins, so that a change which makes the simulator agree worse with
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
// Recorded 9.47% since 2026-12-06's point-to-point K/V shifts of context parallelism (9.35%
// before, with the TP stream's interference; 9.36% before that); 9.36% since (7.96% before,
// 7.03% before 2026-12-05): each interleaved
// model chunk reduces its own gradients after its last backward (Megatron's per-chunk DDP and
// align_grad_reduce), which made the vp > 1 points 0.1-4% faster, and on 2026-12-05 the H100's
// measured ratios to the H200 tables 1.5-2.5% faster; the simulator was already fast on most.
constexpr double kSetMean = 0.10;
constexpr double kSetPoint = 0.40;        // recorded 35.5% (l3_405b_16384_long_context)
// The DGX Cloud Llama 3.1 recipes (ids dgxc_llama3_*): every setting of these jobs is a
// published recipe's. Recorded 6.0% / 9.2% since 2026-12-06's point-to-point K/V shifts (5.8% /
// 8.5% before; 4.4% / 8.5% before the per-chunk reduction, within issue 7's 5% / 12%, which
// that change took the mean past).
constexpr double kRecipeMean = 0.065;
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
