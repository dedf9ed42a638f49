// The cost-model registry's tables (tools/cost_models.hpp): the names the job file and the
// command line accept come from one place, and what each name means is a property of its entry.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "platforms/platform_spec.hpp"
#include "tools/cost_models.hpp"

namespace clustersim::tools {
namespace {

TEST(CostModels, EveryListedModelBuildsAndOnlyTheMeasuredOneHoldsFlash2) {
  ASSERT_EQ(cost_model_names().front(), "measured");  // the default, listed first
  const sim::GpuSpec h100 = platforms::find_platform("hgx_h100").gpu;
  for (const std::string& name : cost_model_names()) {
    EXPECT_NE(make_cost_model(name, h100), nullptr) << name;
  }
  EXPECT_TRUE(costs_flash2("measured"));    // FlashAttention-2 measured in calibration runs 52-53
  EXPECT_FALSE(costs_flash2("roofline"));   // FlashAttention-3's published rates only
  EXPECT_THROW(costs_flash2("analytic"), std::invalid_argument);
}

TEST(CostModels, EachProtocolNameMapsToItsOwnProtocolAndOthersAreRefused) {
  using P = sim::NcclProtocol;
  EXPECT_EQ(nccl_protocol(""), P::Default);  // NCCL's own choice
  EXPECT_EQ(nccl_protocol("LL"), P::LL);
  EXPECT_EQ(nccl_protocol("LL128"), P::LL128);
  EXPECT_EQ(nccl_protocol("Simple"), P::Simple);
  EXPECT_EQ(nccl_protocol("auto"), P::Auto);
  for (const std::string& name : nccl_protocol_names()) {
    EXPECT_NE(nccl_protocol(name), P::Default) << name;  // every listed name forces something
  }
  EXPECT_EQ(nccl_protocol_names().size(), 4u);
  EXPECT_THROW(nccl_protocol("ll128"), std::invalid_argument);  // NCCL_PROTO's spelling only
  EXPECT_THROW(nccl_protocol("Ring"), std::invalid_argument);
}

}  // namespace
}  // namespace clustersim::tools
