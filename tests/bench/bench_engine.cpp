// Simulator speed: one training step of Llama3-405B as the Llama 3 paper trained it (TP8,
// PP16 interleaved (vp 4, embedding and loss counted in the stage split), seq 8192, 16
// microbatches per pipeline: global batch 2,048 at 16,384 GPUs) at growing GPU counts, Mixtral
// 8x22B with expert parallelism at 2,048 and 16,384 GPUs, DeepSeek-V3 with EP64 across 8 nodes
// at 2,048 GPUs (also at its report's batch, as steady-state windows) and on GB200 NVL72 racks
// at 1,024 and 16,384 GPUs (on 1,536 H200 also under the combined 1F1B and with activation
// offloading), Llama3-405B under the zero-bubble ZB-H1 schedule at 16,384 GPUs, and the default
// GPT-3 175B job on 128 GPUs. Reports wall time per simulated step, simulated events
// per second and the simulation process's peak RSS. Replicas "auto": above 256 GPUs the
// identical-replica reduction (docs/engine.md).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <fstream>
#include <string>

#include "tools/job.hpp"
#include "tools/simulate.hpp"

namespace {

// `schedule`: "interleaved" (vp 4) or a schedule of one chunk per stage.
std::string write_job(int gpus, const std::string& schedule = "interleaved") {
  const int dp = gpus / 128;
  const std::string path = "/tmp/clustersim_bench_" + std::to_string(gpus) + "_" + schedule + ".yaml";
  std::ofstream out(path);
  out << "cluster: {platform: hgx_h100, gpus: " << gpus << "}\n"
      << "model: llama3_405b\n"
      << "parallelism: {tp: 8, pp: 16, vp: " << (schedule == "interleaved" ? 4 : 1)
      << ", schedule: " << schedule << ", dp: " << dp
      << ", sequence_parallel: true, account_for_embedding_in_pipeline_split: true, "
         "account_for_loss_in_pipeline_split: true}\n"
      << "training: {seq_length: 8192, micro_batch_size: 1, global_batch_size: " << dp * 16
      << ", precision: bf16}\n";
  return path;
}

void report(benchmark::State& state, double events, double wall) {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);  // simulations run in forked children
  state.counters["events"] = events;
  state.counters["events_per_s"] = events / wall;
  state.counters["sim_wall_s"] = wall;
  state.counters["peak_rss_MiB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// Simulates `job` once per iteration and reports the last simulation's figures.
void run_steps(benchmark::State& state, const clustersim::tools::Job& job,
               const clustersim::tools::SimulateOptions& options = {}) {
  double events = 0, wall = 0;
  for (auto _ : state) {
    const auto r = clustersim::tools::simulate_job(job, options);
    events = static_cast<double>(r.step.events);
    wall = r.step.sim_wall_s;
  }
  report(state, events, wall);
}

void BM_Llama405bStep(benchmark::State& state) {
  run_steps(state, clustersim::tools::load_job(write_job(static_cast<int>(state.range(0)))));
}
BENCHMARK(BM_Llama405bStep)
    ->Arg(128)
    ->Arg(1024)
    ->Arg(4096)
    ->Arg(16384)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

// The same job under the zero-bubble ZB-H1 schedule (one chunk per stage): the W passes held
// back and placed later by the generator (docs/trace-format.md).
void BM_Llama405bZeroBubbleStep(benchmark::State& state) {
  run_steps(state, clustersim::tools::load_job(write_job(static_cast<int>(state.range(0)), "zb_h1")));
}
BENCHMARK(BM_Llama405bZeroBubbleStep)->Arg(16384)->Unit(benchmark::kSecond)->Iterations(1);

// Mixtral 8x22B with expert parallelism across nodes (TP8 PP4 EP8, seq 4096, 16 microbatches
// per pipeline): the EP all-to-alls tie the data-parallel ranks of a stage together, so the
// replica reduction mirrors expert-data-parallel replicas (docs/engine.md).
std::string write_moe_job(int gpus) {
  const std::string path = "/tmp/clustersim_bench_moe_" + std::to_string(gpus) + ".yaml";
  std::ofstream out(path);
  out << "cluster: {platform: hgx_h100, gpus: " << gpus << "}\n"
      << "model: mixtral_8x22b\n"
      << "parallelism: {tp: 8, pp: 4, ep: 8, sequence_parallel: true}\n"
      << "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: " << gpus / 2
      << ", precision: bf16}\n";
  return path;
}

void BM_MixtralStep(benchmark::State& state) {
  run_steps(state, clustersim::tools::load_job(write_moe_job(static_cast<int>(state.range(0)))));
}
BENCHMARK(BM_MixtralStep)->Arg(2048)->Arg(16384)->Unit(benchmark::kSecond)->Iterations(1);

// DeepSeek-V3 laid out as its report trained it (arXiv 2412.19437, Sec. 3.2: PP16, EP64 over 8
// nodes, 2,048 GPUs; here TP1, DP128, so two expert-data-parallel replicas), seq 4096, 16
// microbatches per pipeline: every MoE layer's all-to-alls span 64 ranks on 8 nodes, the
// heaviest flow pattern of the catalog (docs/engine.md, "All-to-all across domains").
std::string write_deepseek_job(int global_batch = 2048, const std::string& dispatcher = "alltoall") {
  const std::string path = "/tmp/clustersim_bench_deepseek_2048_" + std::to_string(global_batch) + "_" +
                           dispatcher + ".yaml";
  std::ofstream out(path);
  out << "cluster: {platform: hgx_h100, gpus: 2048}\n"
      << "model: deepseek_v3\n"
      << "parallelism: {tp: 1, pp: 16, ep: 64, num_layers_in_first_pipeline_stage: 1, "
         "num_layers_in_last_pipeline_stage: 4, moe_token_dispatcher: " << dispatcher << "}\n"
      << "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: " << global_batch
      << ", precision: bf16, recompute: full}\n";
  return path;
}

void BM_DeepSeekV3Step(benchmark::State& state) {
  run_steps(state, clustersim::tools::load_job(write_deepseek_job()));
}
BENCHMARK(BM_DeepSeekV3Step)->Unit(benchmark::kSecond)->Iterations(1);

// The same with DeepEP's token exchanges (moe_token_dispatcher: deepep, docs/engine.md "Token
// exchange"): each rank's fanout over its EP group is computed once, then one flow per domain.
void BM_DeepSeekV3DeepEpStep(benchmark::State& state) {
  run_steps(state, clustersim::tools::load_job(write_deepseek_job(2048, "deepep")));
}
BENCHMARK(BM_DeepSeekV3DeepEpStep)->Unit(benchmark::kSecond)->Iterations(1);

// DeepSeek-V3 on 1,536 H200 in an interleaved layout (PP3 VP7, embedding and loss counted in the
// split, EP64 over 8 nodes, DeepEP, blockwise FP8), 12 microbatches per pipeline, with the
// parallelism and training options `parallel` and `training` add.
std::string write_deepseek_h200_job(const std::string& name, const std::string& parallel,
                                    const std::string& training) {
  const std::string path = "/tmp/clustersim_bench_deepseek_" + name + ".yaml";
  std::ofstream(path) << "cluster: {platform: hgx_h200, gpus: 1536}\n"
                      << "model: deepseek_v3\n"
                      << "parallelism: {tp: 1, pp: 3, vp: 7, schedule: interleaved, ep: 64, "
                         "account_for_embedding_in_pipeline_split: true, "
                         "account_for_loss_in_pipeline_split: true, moe_token_dispatcher: deepep"
                      << parallel << "}\n"
                      << "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 6144, "
                         "precision: fp8, fp8_recipe: blockwise" << training << "}\n";
  return path;
}

// Combined 1F1B (overlap_moe_expert_parallel_comm, docs/trace-format.md) with full recompute:
// every paired pass's token exchanges run beside the other pass's GEMMs, which DeepEP's held SMs
// slow.
void BM_DeepSeekV3CombinedStep(benchmark::State& state) {
  run_steps(state, clustersim::tools::load_job(write_deepseek_h200_job(
                       "combined", ", overlap_moe_expert_parallel_comm: true", ", recompute: full")));
}
BENCHMARK(BM_DeepSeekV3CombinedStep)->Unit(benchmark::kSecond)->Iterations(1);

// Activation offloading (training.offload_modules, docs/trace-format.md): the same layout without
// the combined schedule and without recompute, five modules' saved tensors copied to the host
// and back on the d2h and h2d streams (docs/studies/deepseek_v3_offload.yaml).
void BM_DeepSeekV3OffloadStep(benchmark::State& state) {
  run_steps(state, clustersim::tools::load_job(write_deepseek_h200_job(
                       "offload", "", ", offload_modules: [core_attn, attn_proj, mlp_norm, expert_fc1, moe_act]")));
}
BENCHMARK(BM_DeepSeekV3OffloadStep)->Unit(benchmark::kSecond)->Iterations(1);

// The same at the report's own batch (15,360 sequences: 120 microbatches per pipeline), played as
// the steady-state windows of 16 and 17 microbatches (`simulation.microbatches: auto`,
// docs/engine.md); playing all 120 takes about 4-5 minutes and 46 M events.
void BM_DeepSeekV3ReportBatchWindowed(benchmark::State& state) {
  clustersim::tools::SimulateOptions options;
  options.microbatches = "auto";
  run_steps(state, clustersim::tools::load_job(write_deepseek_job(15360)), options);
}
BENCHMARK(BM_DeepSeekV3ReportBatchWindowed)->Unit(benchmark::kSecond)->Iterations(1);

// DeepSeek-V3 on GB200 NVL72 racks, PP16 EP64 with TP1: a stage's 64 ranks straddle racks of
// 72, so most EP groups hold unequal numbers of members per NVLink domain (docs/engine.md,
// "All-to-all": their remote traffic bundled by overlap), FP8, 16 microbatches per pipeline.
std::string write_deepseek_gb200_job(int gpus) {
  const std::string path = "/tmp/clustersim_bench_deepseek_gb200_" + std::to_string(gpus) + ".yaml";
  std::ofstream out(path);
  out << "cluster: {platform: gb200_nvl72, gpus: " << gpus << "}\n"
      << "model: deepseek_v3\n"
      << "parallelism: {tp: 1, pp: 16, ep: 64, num_layers_in_first_pipeline_stage: 3, "
         "num_layers_in_last_pipeline_stage: 2}\n"
      << "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: " << gpus
      << ", precision: fp8}\n";
  return path;
}

void BM_DeepSeekV3Gb200Step(benchmark::State& state) {
  run_steps(state, clustersim::tools::load_job(write_deepseek_gb200_job(static_cast<int>(state.range(0)))));
}
BENCHMARK(BM_DeepSeekV3Gb200Step)->Arg(1024)->Arg(16384)->Unit(benchmark::kSecond)->Iterations(1);

void BM_DefaultGpt3Step(benchmark::State& state) {
  run_steps(state, clustersim::tools::load_default_job());
}
BENCHMARK(BM_DefaultGpt3Step)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
