#include "tools/reliability_report.hpp"

#include <stdexcept>

#include "energy/defaults.hpp"
#include "energy/failure_catalog.hpp"
#include "workloads/memory.hpp"

namespace clustersim::tools {
namespace {

SpecError reliability_error(const Job& job, const std::string& key, const std::string& reason) {
  const auto& o = job.reliability.origin;
  if (o.file.empty()) return SpecError(job.origin, 0, key.empty() ? "reliability" : "reliability." + key, reason);
  return energy::section_error(o, key, reason);
}

}  // namespace

bool has_reliability_section(const Job& job) { return !job.reliability.origin.file.empty(); }

double checkpoint_bytes(const workloads::ModelSpec& m) {
  // Every parameter, not the active ones the MFU counts: a MoE checkpoint holds all experts.
  return workloads::count_parameters(m).total * energy::kCheckpointBytesPerParam;
}

bool has_multi_node_domains(const platforms::PlatformSpec& p) {
  return p.node.nvlink_domain_size > p.node.gpus_per_node;
}

energy::ReliabilityInputs reliability_inputs(const Job& job, std::optional<double> domain_mtbf_h) {
  const auto& r = job.reliability;
  energy::ReliabilityInputs in;
  in.modes = energy::llama3_failure_modes();
  for (auto& mode : in.modes) {
    const auto it = r.mode_mtbf_h.find(mode.name);
    if (it != r.mode_mtbf_h.end()) {
      mode.mtbf_h = it->second;
      mode.source = "job input";
    }
  }
  const std::optional<double> domain = domain_mtbf_h ? domain_mtbf_h : r.domain_mtbf_h;
  if (!has_multi_node_domains(job.cluster.platform) && r.domain_mtbf_h) {
    // A one-node NVLink domain fails with its node (the host and GPU modes); counting it again
    // as a domain would add a failure per node at the given MTBF, silently.
    throw reliability_error(job, "domain_mtbf",
                            "platform '" + job.cluster.platform.name + "' has no NVLink domain beyond "
                            "one node; domain_mtbf applies to multi-node domains (NVL72 racks)");
  }
  if (has_multi_node_domains(job.cluster.platform) && !domain) {
    const std::string reason = "platform '" + job.cluster.platform.name + "' has NVLink domains of " +
                               std::to_string(job.cluster.platform.node.nvlink_domain_size) +
                               " GPUs that fail as a unit (backplane, switch trays); no public "
                               "MTBF exists: give reliability.domain_mtbf";
    // Without a reliability section, the line that asks for it is the platform's.
    const auto& at = job.cluster.platform_at;
    if (!has_reliability_section(job) && !at.file.empty()) {
      throw at.error(reason + " (add a reliability: section)");
    }
    throw reliability_error(job, "domain_mtbf", reason);
  }
  if (domain) {
    if (r.recovery.spare_domains >= 0 && !r.domain_repair_given) {
      throw reliability_error(job, "domain_repair",
                              "NVLink-domain failures with a finite number of spare domains need "
                              "reliability.domain_repair (no public figure exists)");
    }
    in.modes.push_back(energy::nvlink_domain_failure_mode(*domain));
  }
  in.recovery = r.recovery;
  in.checkpoint.bytes = checkpoint_bytes(job.workload.model);
  in.checkpoint.write_bandwidth = r.storage_write_bandwidth;
  in.checkpoint.read_bandwidth = r.storage_read_bandwidth;
  in.checkpoint.interval_s = r.checkpoint_interval_s;
  in.trials = r.trials;
  in.seed = r.seed;
  return in;
}

energy::RunShape run_shape(const Job& job, double tokens_per_s_per_gpu) {
  const auto& node = job.cluster.platform.node;
  energy::RunShape s;
  s.gpus = job.cluster.gpus;
  s.gpus_per_node = node.gpus_per_node;
  s.gpus_per_domain = node.nvlink_domain_size;
  s.work_s = job.energy.train_tokens / (tokens_per_s_per_gpu * job.cluster.gpus);
  return s;
}

void check_reliability_section(const Job& job) {
  if (has_reliability_section(job)) (void)reliability_inputs(job, std::nullopt);
}

RunWithFailures run_with_failures(const Job& job, double tokens_per_s_per_gpu) {
  RunWithFailures out;
  out.shape = run_shape(job, tokens_per_s_per_gpu);
  try {
    out.reliability = energy::simulate_run(reliability_inputs(job), out.shape);
  } catch (const std::invalid_argument& e) {
    throw reliability_error(job, "", e.what());  // inputs the reader could not judge alone
  }
  return out;
}

nlohmann::ordered_json reliability_json(const RunWithFailures& run) {
  const auto& r = run.reliability;
  return {{"job_mtbf_s", r.system_mtbf_s},
          {"checkpoint_interval_s", r.checkpoint_interval_s},
          {"checkpoint_write_s", r.checkpoint_write_s},
          {"failure_free_s", run.shape.work_s},
          {"wall_s",
           {{"mean", r.wall_s.mean},
            {"ci95", {r.wall_s.ci95_low, r.wall_s.ci95_high}},
            {"p05", r.wall_s.p05},
            {"p95", r.wall_s.p95}}},
          {"goodput", {{"mean", r.goodput.mean}, {"ci95", {r.goodput.ci95_low, r.goodput.ci95_high}}}},
          {"interruptions", r.failures.mean},
          {"trials", r.trials}};
}

}  // namespace clustersim::tools
