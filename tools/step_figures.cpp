#include "tools/step_figures.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>

#include "tools/simulate.hpp"

#include "workloads/memory.hpp"

namespace clustersim::tools {

std::string simulate_figures(const Job& job, const std::string& replicas) {
  SimulateOptions options = options_from_job(job);
  if (!replicas.empty()) options.replicas = replicas;
  const RunReport r = simulate_job(job, options);
  const auto& b = r.step.breakdown;
  const nlohmann::json j = {{"step_time_s", r.step.step_time_s},
                            {"mfu", r.mfu},
                            {"tflops_per_gpu", r.tflops_per_gpu},
                            {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
                            {"compute_s", b.compute_s},
                            {"exposed_comm_s", b.exposed_comm_s},
                            {"bubble_s", b.bubble_s},
                            {"replicas", r.replicas}};
  return j.dump();
}

StepFigures parse_figures(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    StepFigures f;
    f.step_time_s = j.at("step_time_s").get<double>();
    f.mfu = j.at("mfu").get<double>();
    f.tflops_per_gpu = j.at("tflops_per_gpu").get<double>();
    f.tokens_per_s_per_gpu = j.at("tokens_per_s_per_gpu").get<double>();
    f.compute_s = j.at("compute_s").get<double>();
    f.exposed_comm_s = j.at("exposed_comm_s").get<double>();
    f.bubble_s = j.at("bubble_s").get<double>();
    f.replicas = j.at("replicas").get<std::string>();
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("malformed simulation result: ") + e.what());
  }
}

MemoryFit memory_fit(const Job& job) {
  const double capacity = job.cluster.platform.gpu.hbm_capacity.value;
  const workloads::MemoryReport report = workloads::estimate_memory(
      job.workload, capacity, job.cluster.platform.gpu.host_memory_per_gpu.value);
  const auto& largest = report.worst().dominant();
  return MemoryFit{report.peak_bytes(), capacity,          report.fits(),
                   report.oom_message(), report.worst_rank, report.worst_stage,
                   largest.name,         largest.bytes,           report.reserved_bytes()};
}

}  // namespace clustersim::tools
