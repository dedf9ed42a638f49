// FLOP accounting against published figures and independent closed forms.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "workloads/flops.hpp"
#include "workloads/model_catalog.hpp"

namespace clustersim::workloads {
namespace {

double rel_err(double a, double b) { return std::abs(a - b) / std::abs(b); }

// DGX Cloud benchmark recipes (../shared/reference/measured.yaml, source DGXC) print the model
// FLOPs per sample at seq 8192: Llama3 70B 3.94e15, Llama3 405B 2.17e16 (megatron convention).
TEST(Flops, MatchesDgxCloudPerSampleFigures) {
  const double f70 = model_flops_per_sample(load_catalog_model("llama3_70b"), 8192, MfuConvention::Megatron);
  const double f405 = model_flops_per_sample(load_catalog_model("llama3_405b"), 8192, MfuConvention::Megatron);
  EXPECT_LT(rel_err(f70, 3.94e15), 0.01) << f70;
  EXPECT_LT(rel_err(f405, 2.17e16), 0.01) << f405;
  // Rounded to three digits the 70B figure is exact.
  EXPECT_NEAR(f70 / 1e15, 3.94, 0.005);
}

// Narayanan et al. 2021 (arXiv 2104.04473) eq. 3 without recomputation: per sequence
// 72*s*l*h^2 * (1 + s/(6h) + V/(12*l*h)) for a GPT with 4h MLP, MHA and vocabulary V.
TEST(Flops, MegatronConventionEqualsNarayananFormulaForGpt3) {
  const ModelSpec m = load_catalog_model("gpt3_175b");
  const double s = 2048, l = 96, h = 12288, v = 51200;
  const double expected = 72.0 * s * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h));
  EXPECT_LT(rel_err(model_flops_per_sample(m, 2048, MfuConvention::Megatron), expected), 1e-12);
}

TEST(Flops, CausalConventionHalvesOnlyAttention) {
  const ModelSpec m = load_catalog_model("llama3_8b");
  const double s = 8192;
  const double diff = model_flops_per_sample(m, 8192, MfuConvention::Megatron) -
                      model_flops_per_sample(m, 8192, MfuConvention::Causal);
  EXPECT_DOUBLE_EQ(diff, 6.0 * s * s * 4096.0 * 32.0);
  EXPECT_STREQ(to_string(MfuConvention::Causal), "causal");
}

// S3 (../shared/reference/measured.yaml, case s3_llama31_8b_seq_sweep) states, per sequence
// length, attention's share of Llama-3.1-8B's step FLOPs in its causal convention, to two
// digits: 0.13, 0.36, 0.53, 0.70, 0.77, 0.82 at 8K-256K tokens. The share the step
// decomposition of `validate` splits model FLOPs by must round to them.
TEST(Flops, AttentionShareMatchesS3StatedShares) {
  const ModelSpec m = load_catalog_model("llama3_8b");
  const std::vector<std::pair<std::int64_t, double>> stated = {
      {8192, 0.13}, {32768, 0.36}, {65536, 0.53}, {131072, 0.70}, {196608, 0.77}, {262144, 0.82}};
  for (const auto& [seq, share] : stated) {
    EXPECT_NEAR(attention_flop_share(m, seq, MfuConvention::Causal), share, 0.005) << seq;
  }
  // Unmasked, attention is twice the causal term: a/(d + 2a) against a/(d + a).
  const double c = attention_flop_share(m, 8192, MfuConvention::Causal);
  EXPECT_NEAR(attention_flop_share(m, 8192, MfuConvention::Megatron), 2 * c / (1 + c), 1e-12);
}

TEST(Flops, WeightCountOfLlama3_8B) {
  // Linear weights of one layer: q 4096^2, k and v 2*4096*1024, o 4096^2, gate/up/down 3*4096*14336.
  const ModelSpec m = load_catalog_model("llama3_8b");
  const double per_layer = 4096.0 * 4096 * 2 + 2.0 * 4096 * 1024 + 3.0 * 4096 * 14336;
  EXPECT_DOUBLE_EQ(layer_linear_weights(m), per_layer);
  EXPECT_DOUBLE_EQ(mfu_weight_count(m), 32 * per_layer + 4096.0 * 128256);
}

TEST(Flops, PaddedVocabFollowsMegatron) {
  EXPECT_EQ(padded_vocab(128256, 1), 128256);   // 1002 * 128
  EXPECT_EQ(padded_vocab(128256, 4), 128512);   // next multiple of 512
  EXPECT_EQ(padded_vocab(128256, 8), 129024);   // next multiple of 1024
  EXPECT_EQ(padded_vocab(50257, 1), 50304);
  EXPECT_EQ(padded_vocab(51200, 8), 51200);
}

TEST(Flops, GemmAndAttentionOps) {
  EXPECT_DOUBLE_EQ(gemm_flops({3, 5, 7, sim::DType::BF16}), 210.0);
  sim::AttentionShape a;
  a.batch = 2;
  a.heads = 4;
  a.kv_heads = 1;
  a.seq_q = a.seq_kv = 16;
  a.head_dim = a.head_dim_v = 8;
  a.causal = false;
  const double full = 4.0 * 2 * 4 * 16 * 16 * 8;  // QK^T and PV, 2 FLOPs per MAC
  EXPECT_DOUBLE_EQ(attention_flops(a), full);
  a.causal = true;
  EXPECT_DOUBLE_EQ(attention_flops(a), full / 2);
  a.backward = true;
  EXPECT_DOUBLE_EQ(attention_flops(a), 2.5 * full / 2);
}

TEST(Flops, HardwareFlopsCountPaddedVocabAndCausalFlashAttention) {
  const ModelSpec m = load_catalog_model("llama3_8b");
  const double s = 4096;
  const double gemm = 6.0 * s * (32 * layer_linear_weights(m) + 4096.0 * 128512);
  const double attention = 32 * 3.5 * 2.0 * s * s * 4096;
  EXPECT_DOUBLE_EQ(hardware_flops_per_sample(m, 4096, 4), gemm + attention);
}

}  // namespace
}  // namespace clustersim::workloads
