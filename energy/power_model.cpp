#include "energy/power_model.hpp"

#include <stdexcept>
#include <string>

namespace clustersim::energy {
namespace {

void check_shape(const ClusterShape& s, double pue) {
  if (s.gpus <= 0 || s.gpus_per_node <= 0 || s.gpus_per_domain <= 0 || s.nics_per_node < 0 ||
      s.switch_ports < 0) {
    throw std::invalid_argument(
        "cluster shape needs positive gpus, gpus_per_node, "
        "gpus_per_domain and non-negative NIC and port counts");
  }
  if (!(pue >= 1.0)) {
    throw std::invalid_argument("PUE must be at least 1 (facility power includes IT power), not " +
                                std::to_string(pue));
  }
}

// Shares of the units every view counts the same way.
void add_shared_units(const SystemPower& sys, const ClusterShape& s, PowerBreakdown& out) {
  out.nic_w = sys.nic.value * s.nics_per_node / s.gpus_per_node;
  out.nvswitch_w = sys.nvswitch_tray.value * sys.nvswitch_trays_per_domain / s.gpus_per_domain;
  out.network_w = sys.switch_port.value * s.switch_ports / s.gpus;
}

}  // namespace

double gpu_average_power(const GpuPower& gpu, const ActivityTimes& a) {
  if (a.tensor_s < 0 || a.memory_bound_s < 0 || a.communication_s < 0 || a.waiting_s < 0) {
    throw std::invalid_argument("activity times must be non-negative");
  }
  const double step = a.step_s();
  if (!(step > 0)) throw std::invalid_argument("activity times must add up to a positive step");
  const double joules = a.tensor_s * gpu.tensor.value + a.memory_bound_s * gpu.memory_bound.value +
                        a.communication_s * gpu.communication.value +
                        a.waiting_s * gpu.waiting.value;
  return joules / step;
}

PowerBreakdown activity_power(const SystemPower& sys, const ClusterShape& s,
                              const ActivityTimes& activity, double pue) {
  check_shape(s, pue);
  PowerBreakdown out;
  out.pue = pue;
  out.gpu_w = gpu_average_power(sys.gpu, activity);
  out.host_w = sys.node_other.value / s.gpus_per_node;
  add_shared_units(sys, s, out);
  return out;
}

PowerBreakdown provisioned_power(const SystemPower& sys, const ClusterShape& s, double pue) {
  check_shape(s, pue);
  const double gpus_at_tdp = sys.gpu.tdp.value * s.gpus_per_node;
  if (sys.node_rated.value < gpus_at_tdp) {
    throw std::invalid_argument("node_rated (" + std::to_string(sys.node_rated.value) +
                                " W) is below its GPUs at their power limit (" +
                                std::to_string(gpus_at_tdp) + " W)");
  }
  PowerBreakdown out;
  out.pue = pue;
  out.gpu_w = sys.gpu.tdp.value;
  out.host_w = (sys.node_rated.value - gpus_at_tdp) / s.gpus_per_node;
  add_shared_units(sys, s, out);
  return out;
}

EnergyMetrics energy_metrics(double facility_w_per_gpu, double tokens_per_s_per_gpu,
                             double train_tokens) {
  if (!(facility_w_per_gpu > 0) || !(tokens_per_s_per_gpu > 0) || !(train_tokens >= 0)) {
    throw std::invalid_argument("energy metrics need positive power and throughput");
  }
  constexpr double kJoulesPerKwh = 3.6e6;
  EnergyMetrics m;
  m.joules_per_token = facility_w_per_gpu / tokens_per_s_per_gpu;
  m.kwh_per_million_tokens = m.joules_per_token * 1e6 / kJoulesPerKwh;
  m.tokens_per_household_year = kUsHouseholdKwhPerYear * kJoulesPerKwh / m.joules_per_token;
  m.train_tokens = train_tokens;
  m.energy_to_train_mwh = train_tokens * m.joules_per_token / kJoulesPerKwh / 1e3;
  return m;
}

}  // namespace clustersim::energy
