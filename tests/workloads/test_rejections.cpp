// Invalid parallelism combinations are errors that say why, located at the key to change
// (the list docs/job-spec.md gives).
#include <gtest/gtest.h>

#include <string>

#include "workload_test_util.hpp"

namespace clustersim::workloads {
namespace {

// Parses `model: NAME` with the given parallelism and training lines on `gpus` GPUs and expects
// a SpecError at `field` whose reason contains `reason`.
void expect_rejected(const std::string& model, const std::string& parallel, const std::string& training,
                     int gpus, const std::string& field, const std::string& reason, int seq = 4096) {
  const std::string yaml = "model: " + model + "\nparallelism:\n" + parallel +
                           "training:\n  seq_length: " + std::to_string(seq) +
                           "\n  micro_batch_size: 1\n  precision: bf16\n" + training;
  testing::expect_spec_error(yaml, gpus, field, reason);
}

TEST(Rejections, ExpertParallelism) {
  expect_rejected("mixtral_8x7b", "  ep: 3\n", "", 3, "parallelism.ep",
                  "model.experts (8) is not divisible by ep (3)");
  expect_rejected("llama3_8b", "  ep: 2\n", "", 2, "parallelism.ep", "needs a MoE model");
  expect_rejected("mixtral_8x7b", "  tp: 2\n", "", 2, "parallelism.sequence_parallel",
                  "needs sequence_parallel");
  expect_rejected("mixtral_8x7b", "  ep: 4\n  etp: 2\n", "", 4, "parallelism.ep",
                  "does not divide the tp*cp*dp = 4 ranks");
  expect_rejected("mixtral_8x7b", "  ep: 2\n", "  moe_imbalance: 3\n", 2, "training.moe_imbalance",
                  "cannot exceed ep");
  // Padding to capacity needs the capacity (Megatron-core TransformerConfig).
  expect_rejected("mixtral_8x7b", "  ep: 2\n", "  moe_pad_expert_input_to_capacity: true\n", 2,
                  "training.moe_pad_expert_input_to_capacity", "needs training.moe_capacity_factor");
  // Only shared experts can run beside the exchanges (Mixtral has none; a dense model neither).
  expect_rejected("mixtral_8x7b", "  ep: 2\n  moe_shared_expert_overlap: true\n", "", 2,
                  "parallelism.moe_shared_expert_overlap", "needs a MoE model with shared experts");
  expect_rejected("llama3_8b", "  moe_shared_expert_overlap: true\n", "", 1,
                  "parallelism.moe_shared_expert_overlap", "needs a MoE model with shared experts");
}

// Megatron-core's flex dispatcher with DeepEP, as far as it is modelled.
TEST(Rejections, DeepEpDispatcher) {
  const std::string f = "parallelism.moe_token_dispatcher";
  expect_rejected("llama3_8b", "  moe_token_dispatcher: deepep\n", "", 1, f, "needs a MoE model");
  expect_rejected("mixtral_8x7b", "  moe_token_dispatcher: deepep\n", "", 1, f, "needs ep > 1");
  expect_rejected("mixtral_8x7b", "  tp: 2\n  ep: 2\n  sequence_parallel: true\n  moe_token_dispatcher: deepep\n",
                  "", 4, f, "etp: 1 only");
  expect_rejected("deepseek_v3", "  ep: 8\n  moe_shared_expert_overlap: true\n  moe_token_dispatcher: deepep\n",
                  "", 8, f, "moe_shared_expert_overlap");
  expect_rejected("mixtral_8x7b", "  ep: 2\n  moe_token_dispatcher: nccl\n", "", 2, f, "alltoall");
  // Node-limited routing in the model: groups divide the experts and hold top_k of them.
  const std::string training = "training: {seq_length: 4096, micro_batch_size: 1, precision: bf16}\n";
  testing::expect_spec_error("model: {catalog: mixtral_8x7b, router_groups: 3, router_group_topk: 1}\n" + training,
                             1, "model.router_groups", "must divide experts");
  testing::expect_spec_error("model: {catalog: mixtral_8x7b, router_groups: 4}\n" + training, 1,
                             "model.router_groups", "needs router_group_topk");
  testing::expect_spec_error("model: {catalog: deepseek_v3, router_groups: 8, router_group_topk: 9}\n" + training,
                             1, "model.router_group_topk", "at most router_groups");
  testing::expect_spec_error("model: {catalog: llama3_8b, router_groups: 8, router_group_topk: 4}\n" + training,
                             1, "model.router_groups", "needs experts");
}

// Multi-token prediction is Megatron-core's; ZeRO-3 here is DeepSpeed's or FSDP2's.
TEST(Rejections, MtpWithZero3) {
  testing::expect_spec_error(
      "model: {catalog: deepseek_v3, layers: 4, first_dense_layers: 1, mtp_layers: 1}\n"
      "parallelism: {zero_stage: 3}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, precision: bf16}\n",
      8, "parallelism.zero_stage", "no multi-token prediction");
}

// An interval longer than the MoE-eligible layers once left the model dense with ep applying to
// nothing; first_dense_layers doing the same was already refused.
TEST(Rejections, AMoeIntervalThatLeavesNoMoeLayer) {
  testing::expect_spec_error(
      "model: {catalog: mixtral_8x7b, layers: 4, moe_layer_interval: 100}\n"
      "parallelism: {ep: 4}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, precision: bf16}\n",
      4, "model.moe_layer_interval", "leaves no MoE layer among the 4 layers");
}

TEST(Rejections, ContextAndSequenceParallelism) {
  // Load-balanced causal chunks: seq must split into 2*cp chunks.
  expect_rejected("llama3_8b", "  cp: 4\n", "", 4, "training.seq_length", "not divisible by 2*cp = 8",
                  4100);
  // With sequence parallelism each CP rank's share must split over tp.
  expect_rejected("llama3_8b", "  tp: 8\n  cp: 2\n  sequence_parallel: true\n", "", 16,
                  "training.seq_length", "is not divisible by tp (8)", 4104);
}

TEST(Rejections, PipelineSplitsAndSchedules) {
  // GPT-3's 96 layers on pp 8 x vp 5 = 40 virtual stages.
  expect_rejected("gpt3_175b", "  tp: 4\n  pp: 8\n  vp: 5\n", "", 32, "parallelism.pp",
                  "not divisible by pp*vp = 40", 2048);
  expect_rejected("gpt3_175b", "  pp: 8\n  vp: 2\n  schedule: 1f1b\n", "", 8, "parallelism.vp",
                  "interleaved schedule", 2048);
  expect_rejected("gpt3_175b", "  pp: 8\n  schedule: interleaved\n", "", 8, "parallelism.schedule",
                  "needs vp >= 2", 2048);
  expect_rejected("gpt3_175b", "  pp: 8\n  vp: 2\n", "  global_batch_size: 4\n", 8,
                  "training.global_batch_size", "divisible by pp (8)", 2048);
  expect_rejected("llama3_405b", "  pp: 4\n  num_layers_in_first_pipeline_stage: 31\n", "", 4,
                  "parallelism.num_layers_in_first_pipeline_stage", "95 layers left");
  expect_rejected("llama3_405b",
                  "  pp: 2\n  num_layers_in_first_pipeline_stage: 62\n"
                  "  account_for_loss_in_pipeline_split: true\n", "", 2,
                  "parallelism.num_layers_in_first_pipeline_stage", "cannot be combined");
}

// A step of more layer passes than the simulator can hold is refused at the batch, never left
// to exhaust memory: 32 + 2 passes per microbatch of Llama3-8B, so 30,840 microbatches are the
// most (1,048,560 passes) and 30,841 one too many.
TEST(Rejections, StepTooLargeToPlayIsAnErrorAtTheBatch) {
  expect_rejected("llama3_8b", "  tp: 1\n", "  global_batch_size: 30841\n", 1,
                  "training.global_batch_size",
                  "30841 microbatches per step x (32 layers + embedding and head) = 1048594 layer "
                  "passes");
  EXPECT_NO_THROW(testing::parse_job("model: llama3_8b\nparallelism: {}\ntraining:\n"
                                     "  seq_length: 4096\n  micro_batch_size: 1\n"
                                     "  precision: bf16\n  global_batch_size: 30840\n", 1));
}

TEST(Rejections, DataParallelAndOverlapOptions) {
  expect_rejected("llama3_8b", "  pp: 2\n  zero_stage: 3\n", "", 4, "parallelism.zero_stage",
                  "pipeline parallelism");
  expect_rejected("llama3_8b", "  zero_stage: 2\n  fsdp: true\n", "", 2, "parallelism.fsdp", "stage 3");
  expect_rejected("llama3_8b", "  zero_stage: 0\n  optimizer_offload: cpu\n", "", 2,
                  "parallelism.optimizer_offload", "zero_stage >= 1");
  expect_rejected("llama3_8b", "  zero_stage: 2\n  zero_init: false\n", "", 2, "parallelism.zero_init",
                  "zero_stage 3");
  expect_rejected("llama3_8b", "  zero_stage: 2\n  zero_impl: fsdp2\n", "", 2, "parallelism.zero_impl",
                  "ZeRO stage 3");
  expect_rejected("llama3_8b", "  zero_stage: 3\n  zero_impl: fsdp3\n", "", 2, "parallelism.zero_impl",
                  "fsdp2");
  expect_rejected("llama3_8b", "  fsdp: true\n  optimizer_offload: cpu\n", "", 2,
                  "parallelism.optimizer_offload", "CPUOffloadPolicy");
  expect_rejected("llama3_8b", "  tp: 2\n  tp_comm_overlap: true\n", "", 2, "parallelism.tp_comm_overlap",
                  "sequence_parallel");
  expect_rejected("llama3_8b", "  rank_order: tp-dp-pp\n", "", 2, "parallelism.rank_order",
                  "must name");
  expect_rejected("llama3_8b", "  tp: 1\n", "  fp8_attention: true\n", 2, "training.fp8_attention",
                  "precision: fp8");
}

// FlashAttention-2 has no FP8 kernels and one head dimension for q, k and v (so not MLA); an
// unknown library name lists the known ones.
TEST(Rejections, AttentionBackend) {
  expect_rejected("llama3_8b", "  tp: 1\n", "  attention_backend: flash3\n", 1,
                  "training.attention_backend", "cudnn");
  expect_rejected("deepseek_v3", "  tp: 1\n", "  attention_backend: flash2\n", 1,
                  "training.attention_backend", "MLA");
  const std::string fp8 = "model: llama3_8b\nparallelism:\n  tp: 1\ntraining:\n  seq_length: 4096\n"
                          "  micro_batch_size: 1\n  precision: fp8\n  fp8_attention: true\n"
                          "  attention_backend: flash2\n";
  try {
    testing::parse_job(fp8, 1);
    ADD_FAILURE() << "accepted flash2 with fp8_attention";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field(), "training.attention_backend") << e.what();
    EXPECT_NE(e.reason().find("FP8"), std::string::npos) << e.what();
  }
  const WorkloadSpec ok = testing::parse_job(
      "model: llama3_8b\nparallelism:\n  tp: 1\ntraining:\n  seq_length: 4096\n"
      "  micro_batch_size: 1\n  precision: bf16\n  attention_backend: flash2\n", 1);
  EXPECT_EQ(ok.training.attention_backend, sim::AttentionKernel::Flash2);
}

}  // namespace
}  // namespace clustersim::workloads
