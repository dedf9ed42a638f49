// training.elementwise: eager against an independent measurement: the simulator's cost of one
// Llama-3.1-8B layer (forward + backward, no recompute, H200, measured cost model) beside the
// whole Hugging Face transformers LlamaDecoderLayer timed on an H200 (run 19,
// calib/probes/hf_layer.py, calib/data/h200/run19/hf_layer*.csv). The eager tables the model
// reads (membound_eager.csv) time each module alone; the layer measurement is not an input.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "calib/tables.hpp"
#include "platforms/builder.hpp"
#include "tools/job.hpp"
#include "tools/simulate.hpp"
#include "workloads/generator.hpp"

#ifndef CLUSTERSIM_SOURCE_DIR
#error "CLUSTERSIM_SOURCE_DIR must name the source tree"
#endif

namespace clustersim::tools {
namespace {

// The job `yaml` (written as TempDir/name.yaml) generated and costed from the measured tables,
// without the power state.
struct Costed {
  sim::Workload workload;
  std::unique_ptr<sim::CostModel> cost;
};

Costed costed(const std::string& name, const std::string& yaml) {
  const std::string path = ::testing::TempDir() + "/" + name + ".yaml";
  std::ofstream(path) << yaml;
  const Job job = load_job(path);
  auto platform = platforms::make_platform_builder(job.cluster.platform, job.cluster.gpus);
  Costed c{workloads::generate_workload(job.workload), make_cost_model("measured", platform->gpu())};
  sim::cost_workload(c.workload, *c.cost);
  return c;
}

// Four GPT-3 175B layers at one TP shard of `tp`, no sequence parallelism, micro batch 1, on
// `platform` (hgx_h200 unless said).
std::string gpt3_layer_yaml(int tp, int seq, const std::string& precision,
                            const std::string& platform = "hgx_h200") {
  std::ostringstream yaml;
  yaml << "cluster: {platform: " << platform << ", gpus: " << tp << "}\n"
       << "model: {catalog: gpt3_175b, layers: 4, max_position_embeddings: " << seq << "}\n"
       << "parallelism: {tp: " << tp << ", sequence_parallel: false, gradient_accumulation_fusion: false}\n"
       << "training: {seq_length: " << seq << ", micro_batch_size: 1, global_batch_size: 1, "
       << "precision: " << precision << "}\n";
  return yaml.str();
}

// Seconds of one layer's forward and backward ops (layer 1 of rank 0) of the job `yaml`, all
// compute ops but the data-parallel gradient scaling launched from that layer's backward (not
// the layer's work).
double layer_seconds_of(const std::string& name, const std::string& yaml) {
  const Costed c = costed(name, yaml);
  const sim::Program& p = c.workload.programs[0];
  double t = 0.0;
  for (const sim::Op& op : p.ops) {
    if (op.is_compute() && op.layer == 1 && !op.recompute && p.labels[op.label] != "dp_grad_scale") {
      t += op.duration_s;
    }
  }
  return t;
}

double layer_seconds(const std::string& elementwise, int seq, const std::string& platform = "hgx_h200") {
  std::ostringstream yaml;
  yaml << "cluster: {platform: " << platform << ", gpus: 8}\n"
          "model: {catalog: llama3_8b, layers: 4}\n"
          "parallelism: {tp: 1, gradient_accumulation_fusion: false}\n"
          "training: {seq_length: " << seq << ", micro_batch_size: 1, "
          "global_batch_size: 8, precision: bf16, elementwise: " << elementwise << "}\n";
  return layer_seconds_of(platform + "_eager_" + elementwise + std::to_string(seq), yaml.str());
}

// fwd_bwd_s of the HF layer without checkpointing, by sequence length, from the files of `dir`
// (under calib/data).
std::map<int, double> measured_layer(const std::string& dir, const std::vector<std::string>& files) {
  std::map<int, double> out;
  for (const auto& f : files) {
    const calib::CsvTable t =
        calib::read_csv(std::string(CLUSTERSIM_SOURCE_DIR) + "/calib/data/" + dir + "/" + f);
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      if (t.number(r, t.column("checkpointed")) == 0.0) {
        out[static_cast<int>(t.number(r, t.column("seq")))] = t.number(r, t.column("fwd_bwd_s"));
      }
    }
  }
  return out;
}

TEST(EagerLayer, EagerModulesPredictTheMeasuredHuggingFaceLayer) {
  const auto hf = measured_layer("h200/run19", {"hf_layer.csv", "hf_layer_128k.csv"});
  for (int seq : {2048, 8192, 32768, 131072}) {
    ASSERT_TRUE(hf.count(seq)) << seq;
    const double eager = layer_seconds("eager", seq), fused = layer_seconds("fused", seq);
    // Within 5% at every length (2026-11-30: +3.8%, +2.2%, -0.8%, +1.4%).
    EXPECT_NEAR(eager / hf.at(seq), 1.0, 0.05) << "seq " << seq;
    // The fused (Megatron/TE) kernels miss the eager element-wise time: 4-18% short.
    EXPECT_LT(fused, 0.97 * hf.at(seq)) << "seq " << seq;
  }
}

// The same layer on an H100 (run 94, calib/data/h100/run94/hf_layer.csv, the same probe and
// settings; the H100's eager modules are its own, measured in the same call) against the H100's
// costs: within 5% (2026-12-05: +1.6, +0.8, -2.2, -0.6% at 2k, 8k, 32k, 64k tokens; +3.2, +4.0,
// -0.2, +0.8% with the eager modules by the copies' ratio), and the H100 slower than the H200 in both.
TEST(EagerLayer, EagerModulesPredictTheMeasuredHuggingFaceLayerOnAnH100) {
  const auto hf = measured_layer("h100/run94", {"hf_layer.csv"});
  const auto h200 = measured_layer("h200/run19", {"hf_layer.csv"});
  for (int seq : {2048, 8192, 32768, 65536}) {
    ASSERT_TRUE(hf.count(seq)) << seq;
    const double eager = layer_seconds("eager", seq, "hgx_h100");
    if (std::getenv("EAGERLAYER_PRINT") != nullptr) {
      std::fprintf(stderr, "hgx_h100 seq %d: measured %.3f ms, simulated %.3f ms (%+.1f%%)\n", seq,
                   hf.at(seq) * 1e3, eager * 1e3, (eager / hf.at(seq) - 1.0) * 100.0);
    }
    EXPECT_NEAR(eager / hf.at(seq), 1.0, 0.05) << "seq " << seq;
    EXPECT_GT(hf.at(seq), h200.at(seq)) << "seq " << seq;
    EXPECT_GT(eager, layer_seconds("eager", seq)) << "seq " << seq;
  }
}

// GPT-3 175B's layer at its TP shard (run 32, calib/probes/gpt_layer.py,
// calib/data/h200/run32/gpt_layer_tp*.csv): one rank's kernels of a Megatron GPT layer (LayerNorm,
// biases, causal MHA, tanh GeLU) without the TP collectives, forward + backward queued behind
// heater matmuls on an H200, against the simulator's compute ops of the same layer (tp 4 and 8,
// no sequence parallelism, fused element-wise kernels, no power state: the probe runs the layer
// back to back, GEMMs most of the time). Stated tolerance: 10%.
TEST(GptLayer, CostsOfOneTensorParallelShardMatchTheMeasuredLayer) {
  for (const char* file : {"gpt_layer_tp4.csv", "gpt_layer_tp8.csv"}) {
    const calib::CsvTable t =
        calib::read_csv(std::string(CLUSTERSIM_SOURCE_DIR) + "/calib/data/h200/run32/" + file);
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      const int seq = static_cast<int>(t.number(r, t.column("seq")));
      const int tp = static_cast<int>(t.number(r, t.column("tp")));
      const double sim = layer_seconds_of("gpt_tp" + std::to_string(tp) + "_" + std::to_string(seq),
                                          gpt3_layer_yaml(tp, seq, "bf16"));
      const double measured = t.number(r, t.column("fwd_bwd_s"));
      EXPECT_NEAR(sim / measured, 1.0, 0.10) << "tp " << tp << " seq " << seq << ": simulated "
                                             << sim << " s, measured " << measured << " s";
    }
  }
}

// GPT-3 175B's TP4 layer shard in BF16 and FP8 (run 57, calib/probes/gpt_layer.py --precision,
// calib/data/h200/run57/; run 56 the same with a one-call profile): the FP8 linears as Transformer Engine's delayed-scaling recipe runs
// them on Hopper (torch._scaled_mm: E4M3 activations and weights, E5M2 gradients, fast
// accumulation forward, split accumulation backward, TN layouts), the casts eager PyTorch
// kernels, which are not TE's fused ones and take 42% of the FP8 layer's time. What the probe
// and TE run alike is the GEMMs. The profiler's GEMM kernel time of one forward + backward,
// after 8 s of them back to back (the layer's own power state), against the simulated GEMM ops
// of the same layer costed from the tables and put in the power state at the layer's measured
// share (GEMM and attention time over the whole; CostModel::sustained_state x clock_boost): a
// check of the tables and the power-state curves on a real mix they were not derived from.
// Stated tolerance: 10% BF16, 15% FP8 (2026-12-02: BF16 -2.0..+0.1%; FP8 +9.0..+10.5%, the
// simulation slower: the probe's FP8 GEMMs ran at 1.49-1.64 GHz, above what the boost curve
// gives at their share, 0.55-0.60, and 8-9% faster than the tables).
struct LayerGemmPoint {
  double measured_gemm_s, predicted_gemm_s, share;
};

LayerGemmPoint layer_gemm_point(const calib::CsvTable& t, std::size_t r, const std::string& precision,
                                const std::string& platform = "hgx_h200") {
  const int seq = static_cast<int>(t.number(r, t.column("seq")));
  const Costed c = costed(platform + "_gpt3_" + precision + std::to_string(seq),
                          gpt3_layer_yaml(4, seq, precision, platform));
  LayerGemmPoint p{};
  p.measured_gemm_s = t.number(r, t.column("sustained_gemm_s"));
  p.share = (p.measured_gemm_s + t.number(r, t.column("sustained_attention_s"))) /
            t.number(r, t.column("sustained_fwd_bwd_s"));
  for (const sim::Op& op : c.workload.programs[0].ops) {
    if (op.layer == 1 && !op.recompute && std::holds_alternative<sim::GemmShape>(op.shape)) {
      p.predicted_gemm_s += op.duration_s / (c.cost->sustained_state(op) * c.cost->clock_boost(op, p.share));
    }
  }
  return p;
}

// The same layer on an H100 (run 85, calib/data/h100/run85/, the same probe and settings)
// against the H100's derived costs (the H200 tables by the H100 rule), same tolerances.
TEST(GptLayer, Fp8AndBf16GemmsInTheLayersOwnPowerStateMatchTheMeasuredLayer) {
  const std::pair<const char*, const char*> runs[] = {{"h200/run57", "hgx_h200"}, {"h100/run85", "hgx_h100"}};
  for (const auto& [dir, platform] : runs) {
    for (const std::string precision : {"bf16", "fp8"}) {
      const calib::CsvTable t = calib::read_csv(std::string(CLUSTERSIM_SOURCE_DIR) + "/calib/data/" + dir +
                                                "/gpt_layer_tp4_" + precision + ".csv");
      ASSERT_EQ(t.rows.size(), 3u) << dir << " " << precision;
      for (std::size_t r = 0; r < t.rows.size(); ++r) {
        const LayerGemmPoint p = layer_gemm_point(t, r, precision, platform);
        if (std::getenv("GPTLAYER_PRINT") != nullptr) {
          std::fprintf(stderr, "%s %s seq %g: share %.3f, GEMMs measured %.3f ms, predicted %.3f ms (%+.1f%%)\n",
                       platform, precision.c_str(), t.number(r, t.column("seq")), p.share,
                       p.measured_gemm_s * 1e3, p.predicted_gemm_s * 1e3,
                       (p.predicted_gemm_s / p.measured_gemm_s - 1.0) * 100.0);
        }
        EXPECT_NEAR(p.predicted_gemm_s / p.measured_gemm_s, 1.0, precision == "fp8" ? 0.15 : 0.10)
            << platform << " " << precision << " seq " << t.number(r, t.column("seq"));
      }
    }
  }
}

}  // namespace
}  // namespace clustersim::tools
