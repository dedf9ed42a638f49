// The checkpoint a reliability run writes and reloads holds every parameter, not the active ones
// the MFU counts: until 2026-12-06 a MoE checkpoint was sized from its activated weights
// (DeepSeek-V3: 37B of 671B, 18x too small, a checkpoint interval 4x too short).
#include <gtest/gtest.h>

#include "energy/defaults.hpp"
#include "tools/reliability_report.hpp"
#include "workloads/model_catalog.hpp"

namespace clustersim::tools {
namespace {

double checkpoint_params_b(const std::string& model) {
  return checkpoint_bytes(workloads::load_catalog_model(model)) / energy::kCheckpointBytesPerParam / 1e9;
}

TEST(CheckpointSize, HoldsEveryParameterOfTheModel) {
  // Published totals (the catalog's own test holds them to 3%): DeepSeek-V3 671B (37B active,
  // arXiv 2412.19437), Mixtral 8x7B 46.7B (12.9B active, arXiv 2401.04088), Llama 3.1 405B.
  EXPECT_NEAR(checkpoint_params_b("deepseek_v3"), 671.0, 671.0 * 0.03);
  EXPECT_NEAR(checkpoint_params_b("mixtral_8x7b"), 46.7, 46.7 * 0.03);
  EXPECT_NEAR(checkpoint_params_b("llama3_405b"), 405.0, 405.0 * 0.03);
  // 14 bytes each: BF16 weights, FP32 main weights, two FP32 Adam moments.
  EXPECT_NEAR(checkpoint_bytes(workloads::load_catalog_model("llama3_405b")) / 1e12, 5.7, 0.1);
}

}  // namespace
}  // namespace clustersim::tools
