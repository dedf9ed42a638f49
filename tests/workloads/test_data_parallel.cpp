// Data parallelism: parameters per stage, Megatron's gradient buckets, and the reduce-scatter,
// all-gather and optimizer ops of the distributed optimizer in the generated programs.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "workloads/dp_buckets.hpp"
#include "workloads/flops.hpp"
#include "workloads/generator.hpp"
#include "workloads/model_catalog.hpp"
#include "workload_test_util.hpp"

namespace clustersim::workloads {
namespace {

using testing::parse_job;

const std::string& label(const sim::Program& p, std::size_t i) { return p.labels[p.ops[i].label]; }

std::vector<std::size_t> ops_labelled(const sim::Program& p, const std::string& name) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    if (label(p, i) == name) out.push_back(i);
  }
  return out;
}

std::vector<ParamInfo> synthetic(std::vector<std::int64_t> sizes) {
  std::vector<ParamInfo> out;
  for (auto n : sizes) out.push_back({ParamGroup::Qkv, 0, n, false, false});
  return out;
}

TEST(GradBuckets, FilledFromTheEndAndClosedOnceFull) {
  const auto buckets = build_grad_buckets(synthetic({10, 20, 30, 40}), 50, false, 1);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].params, (std::vector<std::size_t>{3, 2}));
  EXPECT_EQ(buckets[0].numel, 70);
  EXPECT_EQ(buckets[1].params, (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(buckets[1].numel, 30);
  // No bucket size: one bucket.
  EXPECT_EQ(build_grad_buckets(synthetic({10, 20, 30, 40}), std::nullopt, false, 1).size(), 1u);
}

// Megatron turns bucketing off on every pipeline stage but the first (its reduction runs once per
// step); ZeRO-2 reduce-scatters every microbatch and keeps its buckets on every stage (DeepSpeed
// reduce_bucket_size, FSDP per unit). Without overlap_grad_reduce there is one bucket.
TEST(GradBuckets, Zero2KeepsItsBucketsOnLaterPipelineStages) {
  ParallelSpec p;
  p.dp = 128;
  p.overlap_grad_reduce = true;
  p.zero_stage = 1;
  EXPECT_EQ(stage_bucket_size(p, 0), std::optional<std::int64_t>(128'000'000));
  EXPECT_FALSE(stage_bucket_size(p, 1).has_value());
  p.zero_stage = 2;
  EXPECT_EQ(stage_bucket_size(p, 1), std::optional<std::int64_t>(128'000'000));
  p.overlap_grad_reduce = false;
  EXPECT_FALSE(stage_bucket_size(p, 0).has_value());
}

TEST(GradBuckets, DistributedOptimizerPadsParamsAndBucketEnds) {
  // Params start on 64-element boundaries; bucket ends on multiples of lcm(dp=4, 128) = 128.
  // p3 [0,40) p2 [64,94) -> bucket [0,128); p1 [128,148) p0 [192,202) -> bucket [128,256).
  const auto buckets = build_grad_buckets(synthetic({10, 20, 30, 40}), 50, true, 4);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].numel, 128);
  EXPECT_EQ(buckets[0].params_numel, 70);
  EXPECT_EQ(buckets[1].numel, 128);
  // dp = 384: divisor lcm(384, 128) = 384.
  EXPECT_EQ(build_grad_buckets(synthetic({1000}), std::nullopt, true, 384)[0].numel, 1152);
}

TEST(GradBuckets, SharedEmbeddingGetsItsOwnBucket) {
  auto params = synthetic({5, 6, 7});
  params[0].shared_embedding = true;
  const auto buckets = build_grad_buckets(params, std::nullopt, true, 2);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].params, (std::vector<std::size_t>{2, 1}));
  EXPECT_EQ(buckets[1].params, (std::vector<std::size_t>{0}));
}

TEST(GradBuckets, MegatronDefaultBucketSize) {
  EXPECT_EQ(default_bucket_size(4), 40'000'000);
  EXPECT_EQ(default_bucket_size(128), 128'000'000);
  ParallelSpec p;
  p.dp = 8;
  EXPECT_EQ(stage_bucket_size(p, 0), 40'000'000);
  EXPECT_EQ(stage_bucket_size(p, 1), std::nullopt);  // only the first stage buckets
  p.overlap_grad_reduce = false;
  EXPECT_EQ(stage_bucket_size(p, 0), std::nullopt);
}

std::int64_t total_numel(const std::vector<ParamInfo>& params) {
  std::int64_t n = 0;
  for (const auto& p : params) n += p.numel;
  return n;
}

WorkloadSpec catalog_spec(const std::string& model, int tp, int pp) {
  WorkloadSpec spec;
  spec.model = load_catalog_model(model);
  spec.parallel.tp = tp;
  spec.parallel.pp = pp;
  return spec;
}

TEST(StageParameters, Llama3_8BHasItsPublishedParameterCount) {
  // Hugging Face meta-llama/Llama-3.1-8B: 8,030,261,248 parameters.
  EXPECT_EQ(total_numel(stage_parameters(catalog_spec("llama3_8b", 1, 1), 0)), 8'030'261'248);
}

TEST(StageParameters, ShardsCoverTheModelAcrossTpAndPp) {
  const WorkloadSpec full = catalog_spec("llama3_70b", 1, 1);
  const WorkloadSpec split = catalog_spec("llama3_70b", 4, 4);
  std::int64_t covered = 0;
  for (int stage = 0; stage < 4; ++stage) {
    for (const auto& p : stage_parameters(split, stage)) covered += p.sp_replicated ? p.numel : 4 * p.numel;
  }
  // Vocab padded from 128256 to 128512 for tp 4, in the embedding and the head.
  EXPECT_EQ(covered, total_numel(stage_parameters(full, 0)) + 2 * 256 * 8192);
}

class DefaultJob : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    spec_ = std::make_unique<WorkloadSpec>(parse_job(testing::default_job_yaml(), 128));
    workload_ = std::make_unique<sim::Workload>(generate_workload(*spec_));
  }
  static void TearDownTestSuite() {
    workload_.reset();
    spec_.reset();
  }
  static std::vector<GradBucket> buckets(int stage) {
    return build_grad_buckets(stage_parameters(*spec_, stage), stage_bucket_size(spec_->parallel, stage),
                              true, 4);
  }
  static inline std::unique_ptr<WorkloadSpec> spec_;
  static inline std::unique_ptr<sim::Workload> workload_;
};

TEST_F(DefaultJob, FirstStageReducesBucketsAsTheLastBackwardCompletesThem) {
  const sim::Program& p = workload_->programs[0];
  const auto expected = buckets(0);
  ASSERT_GT(expected.size(), 10u);
  const auto rs = ops_labelled(p, "dp_rs");
  ASSERT_EQ(rs.size(), expected.size());
  std::size_t last_backward = 0;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].phase == sim::Phase::Backward && p.ops[i].is_compute()) last_backward = i;
  }
  for (std::size_t b = 0; b < rs.size(); ++b) {
    const sim::Op& op = p.ops[rs[b]];
    const auto& c = std::get<sim::CollectiveSpec>(op.shape);
    EXPECT_EQ(c.kind, sim::CollectiveKind::ReduceScatter);
    EXPECT_EQ(c.group, sim::GroupKind::DP);
    EXPECT_EQ(op.stream, sim::Stream::DpComm);
    EXPECT_DOUBLE_EQ(op.bytes, static_cast<double>(expected[b].numel) * 4.0);  // FP32 grads
    // Each reduction waits for its bucket's 1/dp scaling (read + write of the bucket on the
    // compute stream), which waits for the backward op that completed the bucket.
    ASSERT_EQ(op.deps.size(), 1u);
    const sim::Op& scale = p.ops[op.deps[0]];
    EXPECT_EQ(label(p, op.deps[0]), "dp_grad_scale");
    EXPECT_EQ(scale.stream, sim::Stream::Compute);
    EXPECT_DOUBLE_EQ(scale.bytes, 2.0 * op.bytes);
    ASSERT_EQ(scale.deps.size(), 1u);
    const sim::Op& producer = p.ops[scale.deps[0]];
    EXPECT_EQ(producer.microbatch, 63);  // the last of 256 / (4 * 1) microbatches
    EXPECT_EQ(producer.phase, sim::Phase::Backward);
  }
  EXPECT_LT(rs.front(), last_backward);  // overlapped with the backward, not after it
  // The shared embedding bucket last.
  EXPECT_EQ(label(p, p.ops[p.ops[rs.back()].deps[0]].deps[0]), "embedding_bwd");
}

TEST_F(DefaultJob, LaterStagesReduceOneBucketAfterTheSchedule) {
  const sim::Program& p = workload_->programs[3];
  const auto rs = ops_labelled(p, "dp_rs");
  ASSERT_EQ(rs.size(), 1u);
  const sim::Op& op = p.ops[rs[0]];
  EXPECT_EQ(op.stream, sim::Stream::DpComm);
  EXPECT_DOUBLE_EQ(op.bytes, static_cast<double>(buckets(3)[0].numel) * 4.0);
  ASSERT_EQ(op.deps.size(), 1u);
  EXPECT_EQ(label(p, op.deps[0]), "dp_grad_scale");
  ASSERT_EQ(p.ops[op.deps[0]].deps.size(), 1u);
  EXPECT_EQ(label(p, p.ops[op.deps[0]].deps[0]), "pp_send_bwd");
}

// Interleaved: Megatron gives each model chunk its own DistributedDataParallel and gradient
// buffer, bucketing only the first chunk (they once shared buckets, so a later chunk's gradients
// waited for the stage's very last backward), and with align_grad_reduce launches a chunk's
// whole reduction `pipeline rank` backward steps after the chunk's last backward.
TEST(InterleavedDataParallel, EachChunkReducesItsOwnGradientsAlignedOverTheStages) {
  const WorkloadSpec spec = parse_job(
      "model: {layers: 8, hidden: 1024, ffn: 4096, heads: 16, kv_heads: 4, head_dim: 64, vocab: 32000,\n"
      "        activation: swiglu, norm: rmsnorm, position: rope, tied_embeddings: false, bias: false}\n"
      "parallelism: {tp: 1, pp: 2, vp: 2, dp: 2}\n"
      "training: {seq_length: 1024, micro_batch_size: 1, global_batch_size: 8, precision: bf16}\n", 4);
  const sim::Workload w = generate_workload(spec);
  const sim::Program& p = w.programs[1];  // stage 1: chunks of layers 2-3 and 6-7 (+ norm, head)
  const auto rs = ops_labelled(p, "dp_rs");
  ASSERT_EQ(rs.size(), 2u);
  const double layer = 1024.0 * (1024 + 2 * 256) + 1024.0 * 1024 + 2 * 1024.0 * 4096 + 4096.0 * 1024 + 2 * 1024;
  const double head = 32000.0 * 1024 + 1024;
  // The last chunk first, then the first; FP32 gradients.
  EXPECT_DOUBLE_EQ(p.ops[rs[0]].bytes, 4.0 * (2 * layer + head));
  EXPECT_DOUBLE_EQ(p.ops[rs[1]].bytes, 4.0 * (2 * layer));
  const auto producer = [](const sim::Program& q, std::size_t r) -> const sim::Op& {
    return q.ops[q.ops[q.ops[r].deps[0]].deps[0]];  // reduction <- 1/dp scaling <- producer
  };
  // Backward order (pp 2, 4 microbatches): chunk 1 mb 0-1, chunk 0 mb 0-1, chunk 1 mb 2-3,
  // chunk 0 mb 2-3. Stage 1 launches chunk 1's one backward step after its last (mb 3), i.e.
  // after chunk 0's backward of mb 2, and chunk 0's after the schedule.
  EXPECT_EQ(producer(p, rs[0]).microbatch, 2);
  EXPECT_EQ(producer(p, rs[0]).layer, 2);
  EXPECT_EQ(producer(p, rs[1]).microbatch, 3);
  std::size_t last_backward = 0;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].phase == sim::Phase::Backward && p.ops[i].is_compute()) last_backward = i;
  }
  EXPECT_LT(rs[0], last_backward);  // the last chunk's reduction overlaps the first chunk's backward
  // Stage 0 launches chunk 1's right after its last backward (layers 4-5, mb 3).
  const sim::Program& first = w.programs[0];
  const auto rs0 = ops_labelled(first, "dp_rs");
  ASSERT_GE(rs0.size(), 2u);
  EXPECT_EQ(producer(first, rs0[0]).microbatch, 3);
  EXPECT_EQ(producer(first, rs0[0]).layer, 4);
}

TEST_F(DefaultJob, ParameterAllGathersRunAheadOfTheFirstMicrobatch) {
  const sim::Program& p = workload_->programs[0];
  const auto expected = buckets(0);
  const auto ag = ops_labelled(p, "dp_ag");
  ASSERT_EQ(ag.size(), expected.size());
  const auto first_forward = ops_labelled(p, "embedding").front();
  for (std::size_t i = 0; i < ag.size(); ++i) {
    EXPECT_LT(ag[i], first_forward);
    EXPECT_EQ(p.ops[ag[i]].stream, sim::Stream::DpComm);
    // Forward order: the last bucket (embedding) is gathered first.
    EXPECT_DOUBLE_EQ(p.ops[ag[i]].bytes, static_cast<double>(expected[expected.size() - 1 - i].numel) * 2.0);
  }
  for (std::size_t i : ops_labelled(p, "norm")) {
    const sim::Op& op = p.ops[i];
    const bool first_op_of_layer = i > 0 && p.ops[i - 1].layer != op.layer;
    if (!first_op_of_layer) continue;
    if (op.microbatch == 0) {
      ASSERT_FALSE(op.deps.empty()) << "layer " << op.layer;
      for (auto d : op.deps) EXPECT_EQ(label(p, d), "dp_ag");
    } else {
      EXPECT_TRUE(op.deps.empty());
    }
  }
}

TEST_F(DefaultJob, OptimizerWaitsForEveryReductionAndUpdatesTheShard) {
  for (int stage : {0, 7}) {
    const sim::Program& p = workload_->programs[stage];
    const auto opt = ops_labelled(p, "optimizer");
    ASSERT_EQ(opt.size(), 1u);
    const sim::Op& op = p.ops[opt[0]];
    EXPECT_EQ(op.phase, sim::Phase::Optimizer);
    for (std::size_t rs : ops_labelled(p, "dp_rs")) {
      EXPECT_NE(std::find(op.deps.begin(), op.deps.end(), rs), op.deps.end());
    }
    std::int64_t numel = 0;
    for (const auto& b : buckets(stage)) numel += b.numel;
    EXPECT_DOUBLE_EQ(op.bytes, static_cast<double>(numel) / 4 * 38.0);
  }
}

std::string with_dp_options(const std::string& options) {
  std::string yaml = testing::small_llama_job(2, 1, 2, true, 4, 1);
  const std::string anchor = "  sequence_parallel: true\n";
  return yaml.insert(yaml.find(anchor) + anchor.size(), options);
}

TEST(DataParallelOptions, WithoutOverlapReductionsAndGathersBlockAfterTheBackward) {
  const sim::Program p = generate_workload(parse_job(
      with_dp_options("  overlap_grad_reduce: false\n  overlap_param_gather: false\n"), 4)).programs[0];
  const auto rs = ops_labelled(p, "dp_rs");
  const auto ag = ops_labelled(p, "dp_ag");
  const auto opt = ops_labelled(p, "optimizer");
  ASSERT_EQ(rs.size(), 1u);
  ASSERT_EQ(ag.size(), 1u);
  EXPECT_EQ(p.ops[rs[0]].stream, sim::Stream::Compute);
  EXPECT_EQ(p.ops[ag[0]].stream, sim::Stream::Compute);
  EXPECT_GT(ag[0], opt[0]);
  std::size_t last_backward = 0;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].phase == sim::Phase::Backward && p.ops[i].is_compute()) last_backward = i;
  }
  EXPECT_GT(rs[0], last_backward);
}

TEST(DataParallelOptions, PlainDataParallelAllReducesAndUpdatesEverything) {
  const sim::Program p = generate_workload(parse_job(
      with_dp_options("  distributed_optimizer: false\n  overlap_param_gather: false\n"), 4)).programs[0];
  EXPECT_TRUE(ops_labelled(p, "dp_ag").empty());
  const auto ar = ops_labelled(p, "dp_ar");
  ASSERT_EQ(ar.size(), 1u);
  EXPECT_EQ(std::get<sim::CollectiveSpec>(p.ops[ar[0]].shape).kind, sim::CollectiveKind::AllReduce);
  const WorkloadSpec spec = parse_job(testing::small_llama_job(2, 1, 2, true, 4, 1), 4);
  const double numel = static_cast<double>(total_numel(stage_parameters(spec, 0)));
  EXPECT_DOUBLE_EQ(p.ops[ar[0]].bytes, numel * 4.0);  // no padding without the distributed optimizer
  EXPECT_DOUBLE_EQ(p.ops[ops_labelled(p, "optimizer")[0]].bytes, numel * 38.0);
}

TEST(DataParallelOptions, PrecisionAwareOptimizerMovesSixBytesLessPerParameter) {
  const sim::Program std_opt = generate_workload(parse_job(with_dp_options(""), 4)).programs[0];
  const sim::Program aware = generate_workload(
      parse_job(with_dp_options("  precision_aware_optimizer: true\n"), 4)).programs[0];
  const double standard = std_opt.ops[ops_labelled(std_opt, "optimizer")[0]].bytes;
  EXPECT_DOUBLE_EQ(aware.ops[ops_labelled(aware, "optimizer")[0]].bytes, standard * 32.0 / 38.0);
  // FP8 with tensorwise scaling: Megatron's own FP32 master shard, the standard 38 B step.
  WorkloadSpec fp8 = parse_job(with_dp_options("  precision_aware_optimizer: true\n"), 4);
  fp8.training.precision = Precision::FP8;
  fp8.training.fp8_recipe = Fp8Recipe::Tensorwise;
  const sim::Program current = generate_workload(fp8).programs[0];
  EXPECT_DOUBLE_EQ(current.ops[ops_labelled(current, "optimizer")[0]].bytes, standard);
}

TEST(DataParallelOptions, Bf16GradientReductionHalvesTheBytes) {
  const sim::Program fp32 = generate_workload(parse_job(with_dp_options(""), 4)).programs[0];
  const sim::Program bf16 =
      generate_workload(parse_job(with_dp_options("  grad_reduce_in_fp32: false\n"), 4)).programs[0];
  EXPECT_DOUBLE_EQ(bf16.ops[ops_labelled(bf16, "dp_rs")[0]].bytes * 2,
                   fp32.ops[ops_labelled(fp32, "dp_rs")[0]].bytes);
}

TEST(DataParallelOptions, NoDataParallelCommunicationWithDp1) {
  const sim::Workload w = generate_workload(parse_job(testing::small_llama_job(2, 2, 1, true, 4, 1), 4));
  for (const auto& p : w.programs) {
    for (const auto& op : p.ops) {
      const auto* c = std::get_if<sim::CollectiveSpec>(&op.shape);
      EXPECT_FALSE(c != nullptr && c->group == sim::GroupKind::DP);
    }
    EXPECT_EQ(ops_labelled(p, "optimizer").size(), 1u);
  }
}

}  // namespace
}  // namespace clustersim::workloads
