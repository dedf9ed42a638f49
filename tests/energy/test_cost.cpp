// Cost model: rental and TCO prices per GPU-hour, cost per million tokens and per run.
#include <gtest/gtest.h>

#include <stdexcept>

#include "energy/cost_model.hpp"

namespace clustersim::energy {
namespace {

TEST(CostModel, RentalPriceIsThePriceWhateverThePower) {
  CostInputs in;
  in.rental_usd_per_gpu_hour = 1.42;
  EXPECT_DOUBLE_EQ(gpu_hour_cost(in, 1800.0).total(), 1.42);
  EXPECT_DOUBLE_EQ(gpu_hour_cost(in, 0.0).total(), 1.42);
}

TEST(CostModel, TcoAddsDepreciationElectricityAndOpex) {
  CostInputs in;
  in.pricing = Pricing::Tco;
  in.capex_usd = 250000;
  in.capex_unit_gpus = 8;
  in.depreciation_years = 5;
  in.usd_per_kwh = 0.08;
  in.opex_usd_per_gpu_year = 876.6;
  const GpuHourCost c = gpu_hour_cost(in, 1500.0);
  EXPECT_DOUBLE_EQ(c.capex, 250000.0 / 8 / (5 * 8766.0));
  EXPECT_DOUBLE_EQ(c.electricity, 1.5 * 0.08);
  EXPECT_DOUBLE_EQ(c.opex, 0.1);
  EXPECT_DOUBLE_EQ(c.total(), c.capex + c.electricity + c.opex);
  // A rack of 72 at 3.9 M$ costs more per GPU than a server of 8 at 250 k$.
  CostInputs rack = in;
  rack.capex_usd = 3.9e6;
  rack.capex_unit_gpus = 72;
  EXPECT_NEAR(gpu_hour_cost(rack, 0).capex / gpu_hour_cost(in, 0).capex,
              3.9e6 / 72 / (250000.0 / 8), 1e-12);
}

TEST(CostModel, CostPerTokenFollowsFromPriceAndThroughput) {
  // $1.42 per GPU-hour at 728 tokens/s/GPU: 1.42 / (728 * 3600) * 1e6 $ per million tokens.
  const CostMetrics m = cost_metrics(1.42, 728.0, 128, 300e9);
  EXPECT_NEAR(m.usd_per_million_tokens, 0.54182, 1e-5);
  EXPECT_NEAR(m.cost_to_train_usd, 300e3 * m.usd_per_million_tokens, 1e-6);
  EXPECT_DOUBLE_EQ(m.time_to_train_s, 300e9 / (728.0 * 128));
}

TEST(CostModel, RejectsMissingOrNonsensePrices) {
  CostInputs rental;  // no price
  EXPECT_THROW(gpu_hour_cost(rental, 100), std::invalid_argument);
  CostInputs tco;
  tco.pricing = Pricing::Tco;
  tco.capex_usd = 1e5;
  tco.depreciation_years = 5;
  EXPECT_THROW(gpu_hour_cost(tco, 100), std::invalid_argument);  // no GPUs per unit
  EXPECT_THROW(cost_metrics(1.0, 0.0, 8, 1.0), std::invalid_argument);
  EXPECT_THROW(cost_metrics(1.0, 10.0, 0, 1.0), std::invalid_argument);
}

}  // namespace
}  // namespace clustersim::energy
