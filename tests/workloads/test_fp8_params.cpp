// parallelism.fp8_param_gather (Megatron's fp8_param_gather, NeMo's fp8_params): FP8 layer GEMM
// weights gathered by the distributed optimizer as 1 B per element, and their memory.
#include <gtest/gtest.h>

#include <string>

#include "workload_test_util.hpp"
#include "workloads/dp_buckets.hpp"
#include "workloads/generator.hpp"
#include "workloads/memory.hpp"

namespace clustersim::workloads {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The small Llama job (dp 8) with extra parallelism lines.
std::string job(const std::string& precision, const std::string& extra) {
  std::string yaml = testing::small_llama_job(1, 1, 8, false, 8, 1, precision);
  const std::string at = "parallelism:\n";
  yaml.insert(yaml.find(at) + at.size(), extra);
  return yaml;
}

double dp_ag_bytes(const std::string& yaml) {
  const sim::Workload w = generate_workload(testing::parse_job(yaml, 8));
  const sim::Program& p = w.programs[0];
  double bytes = 0.0;
  for (const auto& op : p.ops) {
    if (p.labels[op.label] == "dp_ag") bytes += op.bytes;
  }
  return bytes;
}

double linear_elements(const WorkloadSpec& spec) {
  double n = 0.0;
  for (const auto& prm : stage_parameters(spec, 0)) {
    if (is_linear_weight(prm)) n += static_cast<double>(prm.numel);
  }
  return n;
}

TEST(Fp8Params, NeedFp8AndTheDistributedOptimizer) {
  testing::expect_spec_error(job("bf16", "  fp8_param_gather: true\n"), 8,
                             "parallelism.fp8_param_gather", "needs precision: fp8");
  testing::expect_spec_error(job("fp8", "  fp8_param_gather: true\n  zero_stage: 0\n"), 8,
                             "parallelism.fp8_param_gather", "needs zero_stage 1");
  testing::expect_spec_error(job("fp8", "  fp8_param_gather: true\n  zero_stage: 2\n"), 8,
                             "parallelism.fp8_param_gather", "needs zero_stage 1");
}

TEST(Fp8Params, ParameterAllGathersMoveOneBytePerLinearWeight) {
  const std::string fp8 = job("fp8", "  fp8_param_gather: true\n");
  const double plain = dp_ag_bytes(job("fp8", ""));
  const double linear = linear_elements(testing::parse_job(fp8, 8));
  ASSERT_GT(linear, 0.0);
  // Every bucket is gathered once a step: the FP8 weights save 1 B each, nothing else changes.
  EXPECT_DOUBLE_EQ(dp_ag_bytes(fp8), plain - linear);
  EXPECT_DOUBLE_EQ(dp_ag_bytes(job("bf16", "")), plain);
}

TEST(Fp8Params, Fp8WeightsHoldOneByteAndTheirTransposeOneMore) {
  const WorkloadSpec with = testing::parse_job(job("fp8", "  fp8_param_gather: true\n"), 8);
  const WorkloadSpec without = testing::parse_job(job("fp8", ""), 8);
  const auto a = estimate_memory(with, 80.0 * kGiB).stages[0];
  const auto b = estimate_memory(without, 80.0 * kGiB).stages[0];
  const double linear = linear_elements(with);
  EXPECT_DOUBLE_EQ(b.bytes("weights") - a.bytes("weights"), linear);        // 2 B -> 1 B
  EXPECT_DOUBLE_EQ(a.bytes("fp8_weight_caches"), linear);                    // transposes only
  EXPECT_DOUBLE_EQ(b.bytes("fp8_weight_caches"), 2.0 * linear);              // copy + transpose
}

}  // namespace
}  // namespace clustersim::workloads
