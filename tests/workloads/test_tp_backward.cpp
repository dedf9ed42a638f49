// parallelism.tp_backward_comm: the column-parallel input-gradient reduction overlapped with the
// weight-gradient GEMM (Megatron-core, the default) or blocking after both GEMMs in autograd
// order (plain torch.autograd TP regions, calib/probes/tp_model.py): the ops, their streams and
// order, the kept activations, and the rejections.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "workloads/generator.hpp"
#include "workloads/layer_memory.hpp"
#include "workloads/memory.hpp"
#include "workload_test_util.hpp"

namespace clustersim::workloads {
namespace {

std::string job(bool sp, const std::string& extra) {
  return "model:\n  layers: 2\n  hidden: 256\n  ffn: 1024\n  heads: 8\n  kv_heads: 4\n  vocab: 1024\n"
         "  activation: swiglu\n  norm: rmsnorm\n  position: rope\n  tied_embeddings: false\n"
         "  bias: false\nparallelism:\n  tp: 2\n  sequence_parallel: " + std::string(sp ? "true" : "false") +
         "\n" + extra +
         "training:\n  seq_length: 256\n  micro_batch_size: 1\n  precision: bf16\n"
         "  global_batch_size: 1\n";
}

WorkloadSpec spec_of(bool sp, const std::string& extra) {
  return testing::parse_job(job(sp, extra), 2);
}

// Labels of layer 0's backward ops on rank 0, in program order, with "@tp" for the TP stream.
std::vector<std::string> layer_backward(const sim::Workload& w) {
  const sim::Program& p = w.programs[0];
  std::vector<std::string> out;
  for (const auto& op : p.ops) {
    if (op.layer != 0 || op.phase != sim::Phase::Backward) continue;
    out.push_back(p.labels[op.label] + (op.stream == sim::Stream::TpComm ? "@tp" : ""));
  }
  return out;
}

int count_stream(const sim::Workload& w, sim::Stream stream) {
  int n = 0;
  for (const auto& op : w.programs[0].ops) n += op.stream == stream ? 1 : 0;
  return n;
}

TEST(TpBackward, OverlappedIsTheDefaultAndReducesOnTheTpStreamDuringTheWeightGradient) {
  const auto w = generate_workload(spec_of(false, ""));
  const auto ops = layer_backward(w);
  // fc1's input gradient is all-reduced on the TP stream, issued before its weight gradient.
  const auto ar = std::find(ops.begin(), ops.end(), "tp_ar@tp");
  ASSERT_NE(ar, ops.end());
  EXPECT_EQ(*(ar - 1), "fc1_dgrad");
  EXPECT_EQ(*(ar + 1), "fc1_wgrad");
  EXPECT_EQ(spec_of(false, "").parallel.tp_backward_comm, TpBackwardComm::Overlapped);
}

TEST(TpBackward, BlockingReducesOnTheComputeStreamAfterBothGemms) {
  for (bool sp : {false, true}) {
    const auto overlapped = generate_workload(spec_of(sp, ""));
    const auto blocking = generate_workload(spec_of(sp, "  tp_backward_comm: blocking\n"));
    const auto ops = layer_backward(blocking);
    const std::string reduce = sp ? "tp_rs" : "tp_ar";
    for (const std::string linear : {"fc1", "qkv"}) {
      const auto wgrad = std::find(ops.begin(), ops.end(), linear + "_wgrad");
      ASSERT_NE(wgrad, ops.end()) << linear;
      EXPECT_EQ(*(wgrad - 1), linear + "_dgrad") << linear;
      EXPECT_EQ(*(wgrad + 1), reduce) << linear << " sp " << sp;
    }
    // Nothing of the layers' backward is left on the TP stream; with SP the input is not
    // gathered again for the weight gradient (two all-gathers fewer per layer: qkv and fc1).
    EXPECT_EQ(std::count_if(ops.begin(), ops.end(),
                            [](const std::string& l) { return l.find("@tp") != std::string::npos; }),
              0) << "sp " << sp;
    const auto overlapped_ops = layer_backward(overlapped);
    const auto gathers = [](const std::vector<std::string>& v) {
      return std::count_if(v.begin(), v.end(), [](const std::string& l) { return l.rfind("tp_ag", 0) == 0; });
    };
    EXPECT_EQ(gathers(overlapped_ops) - gathers(ops), sp ? 2 : 0);
    EXPECT_EQ(count_stream(blocking, sim::Stream::TpComm), 0) << "sp " << sp;
    EXPECT_GT(count_stream(overlapped, sim::Stream::TpComm), 0) << "sp " << sp;
  }
}

TEST(TpBackward, BlockingWithSequenceParallelismKeepsTheGatheredGemmInputs) {
  const WorkloadSpec over = spec_of(true, ""), block = spec_of(true, "  tp_backward_comm: blocking\n");
  // The QKV and FC1 inputs: [256 tokens, 256] BF16 each instead of their 128-token shards.
  const double gathered_extra = 2 * (256.0 - 128.0) * 256 * 2;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(block, 0, Recompute::None) -
                       layer_activation_bytes(over, 0, Recompute::None),
                   gathered_extra);
  // ... and the backward needs no re-gathered input.
  EXPECT_DOUBLE_EQ(backward_transients(over, layer_shape(over), 0) -
                       backward_transients(block, layer_shape(block), 0),
                   256.0 * 256 * 2);
  // Without SP nothing changes: the inputs are whole either way.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(spec_of(false, "  tp_backward_comm: blocking\n"), 0, Recompute::None),
                   layer_activation_bytes(spec_of(false, ""), 0, Recompute::None));
}

TEST(TpBackward, Rejections) {
  using testing::expect_spec_error;
  expect_spec_error(job(true, "  tp_backward_comm: async\n"), 2, "parallelism.tp_backward_comm", "overlapped");
  expect_spec_error(job(true, "  tp_comm_overlap: true\n  tp_backward_comm: blocking\n"), 2,
                  "parallelism.tp_backward_comm", "contradicts tp_comm_overlap");
  expect_spec_error("model: mixtral_8x7b\nparallelism:\n  tp: 2\n  sequence_parallel: true\n"
                  "  tp_backward_comm: blocking\ntraining:\n  seq_length: 4096\n"
                  "  micro_batch_size: 1\n  precision: bf16\n",
                  2, "parallelism.tp_backward_comm", "dense GQA/MHA models only");
}

}  // namespace
}  // namespace clustersim::workloads
