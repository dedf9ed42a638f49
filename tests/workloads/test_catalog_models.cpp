// The catalog's MoE, MLA and other additions: parameter totals against the published figures
// (a wrong dimension, expert count or MoE layer pattern moves them by far more than the 3%
// tolerance), MoE layer placement, and the MFU FLOP convention for MoE (active experts only).
#include <gtest/gtest.h>

#include "workloads/flops.hpp"
#include "workloads/memory.hpp"
#include "workloads/model_catalog.hpp"

namespace clustersim::workloads {
namespace {

void expect_params(const std::string& name, double total_b, double active_b, double tolerance) {
  const ParameterCount c = count_parameters(load_catalog_model(name));
  EXPECT_NEAR(c.total / 1e9, total_b, total_b * tolerance) << name;
  EXPECT_NEAR(c.active / 1e9, active_b, active_b * tolerance) << name;
}

TEST(CatalogModels, ParameterTotalsMatchThePublishedFigures) {
  // DeepSeek-V3 report (arXiv 2412.19437): 671B total, 37B activated (the 14B MTP module apart).
  expect_params("deepseek_v3", 671.0, 37.0, 0.03);
  // Mixtral paper (arXiv 2401.04088): 46.7B total, 12.9B active; 8x22B: 141B / 39B (Mistral).
  expect_params("mixtral_8x7b", 46.7, 12.9, 0.03);
  expect_params("mixtral_8x22b", 141.0, 39.0, 0.03);
  // Qwen3 model cards: 235B-A22B 235B total, 22B activated; 30B-A3B 30.5B, 3.3B.
  expect_params("qwen3_235b_a22b", 235.0, 22.0, 0.03);
  expect_params("qwen3_30b_a3b", 30.5, 3.3, 0.03);
  // Llama 4 Maverick (Meta model card): 400B total, 17B active.
  expect_params("llama4_maverick", 400.0, 17.0, 0.03);
  // GPT-4-class estimate (SemiAnalysis): ~1.8T total; 2 x 111B + 55B = 277B active + embeddings.
  expect_params("gpt4_class_moe", 1.8e3, 280.0, 0.03);
  // Dense models: Llama 2 70B, Llama 3.1 405B, Nemotron-4 15B (15.6B incl. embeddings) and 340B.
  expect_params("llama2_70b", 69.0, 69.0, 0.03);
  expect_params("llama3_405b", 405.0, 405.0, 0.03);
  expect_params("nemotron4_15b", 15.6, 15.6, 0.03);
  expect_params("nemotron4_340b", 341.0, 341.0, 0.03);
}

TEST(CatalogModels, MoeLayerPlacement) {
  const ModelSpec ds = load_catalog_model("deepseek_v3");
  EXPECT_FALSE(ds.is_moe_layer(2));
  EXPECT_TRUE(ds.is_moe_layer(3));
  EXPECT_EQ(ds.moe_layers(), 58);
  const ModelSpec mav = load_catalog_model("llama4_maverick");
  EXPECT_FALSE(mav.is_moe_layer(0));
  EXPECT_TRUE(mav.is_moe_layer(1));
  EXPECT_EQ(mav.moe_layers(), 24);
  EXPECT_EQ(ds.attention, AttentionKind::Mla);
  EXPECT_EQ(ds.value_head_dim(), 128);
}

TEST(CatalogModels, MoeModelFlopsCountOnlyTheActiveExperts) {
  // Megatron-LM num_floating_point_operations: top_k routed experts + shared experts per token.
  const ModelSpec m = load_catalog_model("mixtral_8x7b");
  const double n_active = count_parameters(m).active;
  const double per_token = model_flops_per_sample(m, 1, MfuConvention::Megatron);
  // 6 N per token (+ a negligible attention term at s = 1); N excludes the input embedding and
  // the norms, the routers.
  EXPECT_NEAR(per_token / 6.0, n_active - m.vocab * m.hidden, 0.01 * n_active);
  EXPECT_LT(per_token, 6.0 * 0.3 * count_parameters(m).total);
}

}  // namespace
}  // namespace clustersim::workloads
