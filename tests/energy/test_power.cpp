// Power model: activity-weighted GPU power, shares of shared units, provisioned view, metrics.
#include <gtest/gtest.h>

#include <stdexcept>

#include "energy/power_model.hpp"

namespace clustersim::energy {
namespace {

SystemPower hgx_like() {
  SystemPower s;
  s.gpu = {Watts{700}, Watts{650}, Watts{300}, Watts{100}, Watts{700}};
  s.node_other = Watts{2880};
  s.node_rated = Watts{10200};
  s.nic = Watts{20};
  s.nvswitch_tray = Watts{400};
  s.nvswitch_trays_per_domain = 0;
  s.switch_port = Watts{8.5};
  return s;
}

ClusterShape shape128() { return {128, 8, 8, 8, 1024}; }

TEST(PowerModel, GpuPowerIsTheTimeWeightedMeanOfItsActivityClasses) {
  const SystemPower s = hgx_like();
  // 2 s at 700 W, 1 s at 650 W, 1 s at 300 W, 1 s at 100 W over a 5 s step.
  const ActivityTimes a{2.0, 1.0, 1.0, 1.0};
  EXPECT_DOUBLE_EQ(gpu_average_power(s.gpu, a), (1400.0 + 650.0 + 300.0 + 100.0) / 5.0);
  // All the step in one class gives exactly that class's power.
  EXPECT_DOUBLE_EQ(gpu_average_power(s.gpu, {0, 0, 0, 3.0}), 100.0);
}

TEST(PowerModel, ActivityViewSharesNodeNicSwitchAndTrayPowerPerGpu) {
  SystemPower s = hgx_like();
  s.nvswitch_trays_per_domain = 9;
  ClusterShape shape{144, 4, 4, 72, 576};
  const PowerBreakdown p = activity_power(s, shape, {1.0, 0, 0, 0}, 1.5);
  EXPECT_DOUBLE_EQ(p.gpu_w, 700.0);
  EXPECT_DOUBLE_EQ(p.host_w, 2880.0 / 4);
  EXPECT_DOUBLE_EQ(p.nic_w, 20.0 * 4 / 4);
  EXPECT_DOUBLE_EQ(p.nvswitch_w, 400.0 * 9 / 72);
  EXPECT_DOUBLE_EQ(p.network_w, 8.5 * 576 / 144);
  EXPECT_DOUBLE_EQ(p.it_w(), 700.0 + 720.0 + 20.0 + 50.0 + 34.0);
  EXPECT_DOUBLE_EQ(p.facility_w(), p.it_w() * 1.5);
}

TEST(PowerModel, ProvisionedViewChargesTdpAndTheRatedServer) {
  const PowerBreakdown p = provisioned_power(hgx_like(), shape128(), 1.0);
  EXPECT_DOUBLE_EQ(p.gpu_w, 700.0);
  EXPECT_DOUBLE_EQ(p.host_w, (10200.0 - 8 * 700.0) / 8);  // 575 W
  const PowerBreakdown a = activity_power(hgx_like(), shape128(), {1.0, 1.0, 1.0, 1.0}, 1.0);
  EXPECT_GT(p.it_w(), a.it_w());  // never below what the job draws with these figures
}

TEST(PowerModel, RejectsImpossibleInputs) {
  const SystemPower s = hgx_like();
  EXPECT_THROW(activity_power(s, shape128(), {1, 0, 0, 0}, 0.9), std::invalid_argument);
  EXPECT_THROW(activity_power(s, shape128(), {0, 0, 0, 0}, 1.2), std::invalid_argument);
  EXPECT_THROW(activity_power(s, shape128(), {1, -1, 0, 1}, 1.2), std::invalid_argument);
  SystemPower under = s;
  under.node_rated = Watts{5000};  // below 8 x 700 W
  EXPECT_THROW(provisioned_power(under, shape128(), 1.2), std::invalid_argument);
  ClusterShape bad = shape128();
  bad.gpus_per_node = 0;
  EXPECT_THROW(provisioned_power(s, bad, 1.2), std::invalid_argument);
}

TEST(PowerModel, EnergyMetricsFollowFromWattsAndTokens) {
  const EnergyMetrics m = energy_metrics(1800.0, 500.0, 300e9);
  EXPECT_DOUBLE_EQ(m.joules_per_token, 3.6);
  EXPECT_DOUBLE_EQ(m.kwh_per_million_tokens, 1.0);  // 3.6 MJ = 1 kWh
  EXPECT_NEAR(m.tokens_per_household_year, 10791.0 * 1e6, 1e-3);
  EXPECT_NEAR(m.energy_to_train_mwh, 300e9 * 3.6 / 3.6e9, 1e-9);
  EXPECT_THROW(energy_metrics(0.0, 500.0, 1.0), std::invalid_argument);
  EXPECT_THROW(energy_metrics(100.0, 0.0, 1.0), std::invalid_argument);
}

}  // namespace
}  // namespace clustersim::energy
