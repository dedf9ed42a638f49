#include "tools/job.hpp"

#include <stdexcept>

#include "calib/measured_tables.hpp"
#include "sim/yaml_spec.hpp"
#include "tools/cost_models.hpp"

namespace clustersim::tools {
namespace {

// FlashAttention-2's tables hold for the GPUs whose derivation rule covers them (the measured
// H200 and the H100, calib::DerivationRule::flash2): elsewhere the job is wrong at its key. A GPU
// without any rule is left to the cost model, which names the known ones.
void check_attention_backend(Job& job, YamlMap& root) {
  const YamlMap training = root.get_map("training");
  job.attention_backend_at = training.location("attention_backend");
  if (job.workload.training.attention_backend != sim::AttentionKernel::Flash2) return;
  const std::string& gpu = job.cluster.platform.gpu.name;
  bool covered = false;
  try {
    covered = calib::derivation_rule(gpu).flash2;
  } catch (const std::invalid_argument&) {
    return;
  }
  if (covered) return;
  throw training.error("attention_backend",
                       "flash2: FlashAttention-2 is measured on the H200 (and holds for the H100, same "
                       "die); no rule derives it for " + gpu + " (its attention is cuDNN's "
                       "scaled by the MAMF ratio): use cudnn");
}

}  // namespace

Job parse_job(YamlMap root) {
  Job job;
  job.origin = root.file();
  YamlMap cluster = root.get_map("cluster");
  job.cluster = platforms::parse_cluster_section(cluster);
  job.workload = workloads::parse_workload_spec(root, job.cluster.gpus);
  check_attention_backend(job, root);
  job.energy = energy::parse_energy_section(root);
  job.economics = energy::parse_economics_section(root);
  job.reliability = energy::parse_reliability_section(root);
  if (auto sim = root.get_map_opt("simulation")) {
    job.simulation.replicas = sim->get_enum_or("replicas", "auto", {"auto", "full", "identical"});
    if (sim->has("replicas")) job.simulation.replicas_at = sim->location("replicas");
    job.simulation.cost = sim->get_enum_or("cost_model", "measured", cost_model_names());
    job.simulation.nccl_algo =
        sim->get_enum_or("nccl_algo", "", {"", "ring", "tree", "hierarchical", "nvls"});
    job.simulation.interference = sim->get_bool_or("interference", true);
    job.simulation.cost_isolated_tp = sim->get_bool_or("cost_isolated_tp", true);
    job.simulation.fold_tp = sim->get_bool_or("fold_tp", true);
    job.simulation.power_state = sim->get_bool_or("power_state", true);
    job.simulation.microbatches = sim->get_enum_or("microbatches", "all", {"all", "auto"});
    std::vector<std::string> protocols = {""};
    protocols.insert(protocols.end(), nccl_protocol_names().begin(), nccl_protocol_names().end());
    job.simulation.nccl_proto = sim->get_enum_or("nccl_proto", "", protocols);
    sim->finish();
  }
  root.finish();
  return job;
}

const std::string& default_job_yaml() {
  static const std::string kYaml =
      "# GPT-3 175B on 128 H100 (16 HGX nodes), as in case s0_gpt3_175b_128_bf16\n"
      "cluster:\n"
      "  platform: hgx_h100\n"
      "  gpus: 128\n"
      "model: gpt3_175b\n"
      "parallelism:\n"
      "  tp: 4\n"
      "  pp: 8\n"
      "  dp: 4\n"
      "  sequence_parallel: true\n"
      "training:\n"
      "  seq_length: 2048\n"
      "  micro_batch_size: 1\n"
      "  global_batch_size: 256\n"
      "  precision: bf16\n";
  return kYaml;
}

Job load_job(const std::string& path) { return parse_job(YamlMap::load_file(path)); }

Job load_default_job() {
  return parse_job(YamlMap::load_string(default_job_yaml(), "<built-in default>"));
}

}  // namespace clustersim::tools
