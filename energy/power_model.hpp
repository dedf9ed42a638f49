// Power of a training job per GPU, all-in: the GPU by what it does during the simulated step,
// the rest of its server, its share of NICs, NVLink switch trays and scale-out switch ports,
// and the facility overhead (PUE). Two views of the same hardware:
//  - activity (what the job draws): each GPU activity class at its measured power;
//  - provisioned (what the facility must supply): every figure at its rated maximum.
// Plain structs in, plain structs out; figures and their sources live in the platform catalog
// (platforms/catalog/*.yaml, `power:`) and docs/energy.md.
#pragma once

#include "sim/units.hpp"

namespace clustersim::energy {

/// Time of one step, per GPU (averaged over GPUs), by what the GPU is doing. The four classes
/// add up to the step time.
struct ActivityTimes {
  double tensor_s = 0.0;         ///< tensor-core kernels: GEMMs and attention, s
  double memory_bound_s = 0.0;   ///< memory-bound kernels (norms, activations, optimizer), s
  double communication_s = 0.0;  ///< compute stream waiting on collectives (exposed comm), s
  double waiting_s = 0.0;        ///< compute stream idle: pipeline bubbles, waiting on peers, s

  /// Sum of the four classes, s.
  double step_s() const { return tensor_s + memory_bound_s + communication_s + waiting_s; }
};

/// GPU board power per activity class (a board runs at one of these while in that class).
struct GpuPower {
  Watts tensor;         ///< GEMM/attention loop
  Watts memory_bound;   ///< streaming HBM kernel
  Watts communication;  ///< NCCL collective moving data, nothing else running
  Watts waiting;        ///< context alive, no kernel or a kernel spinning on a peer
  Watts tdp;            ///< power limit: the provisioned figure
};

/// Everything but the GPU boards, per unit, and how many units a GPU shares.
struct SystemPower {
  GpuPower gpu;
  Watts node_other;     ///< one server/compute tray without its GPUs, while training
  Watts node_rated;     ///< one server/compute tray at its rated maximum, GPUs included
  Watts nic;            ///< one scale-out NIC not already counted in the node figures
  Watts nvswitch_tray;  ///< one NVLink switch tray outside the nodes (rack-scale domains)
  Watts switch_port;    ///< one scale-out switch port (switch and its transceiver share)
  int nvswitch_trays_per_domain = 0;
};

/// How the job's GPUs share the units of SystemPower.
struct ClusterShape {
  int gpus = 0;  ///< GPUs of the job
  int gpus_per_node = 0;
  int nics_per_node = 0;
  int gpus_per_domain = 0;    ///< NVLink domain size
  double switch_ports = 0.0;  ///< scale-out switch ports the job's NICs use (leaf, spine, core)
};

/// Average power per GPU by where it goes. All W per GPU.
struct PowerBreakdown {
  double gpu_w = 0.0;       ///< the GPU board
  double host_w = 0.0;      ///< its share of the server/tray without GPUs
  double nic_w = 0.0;       ///< its share of NICs not in the node figures
  double nvswitch_w = 0.0;  ///< its share of NVLink switch trays
  double network_w = 0.0;   ///< its share of scale-out switch ports
  double pue = 1.0;         ///< facility power / IT power

  /// IT power per GPU (everything above), W.
  double it_w() const { return gpu_w + host_w + nic_w + nvswitch_w + network_w; }
  /// Facility (utility) power per GPU: it_w() x pue, W.
  double facility_w() const { return it_w() * pue; }
};

/// Average GPU board power over a step: each class's time at its power, divided by the step.
/// @throws std::invalid_argument if the step time is not positive or a time is negative.
double gpu_average_power(const GpuPower& gpu, const ActivityTimes& activity);

/// Activity view: the GPU by activity, the rest at its training-time figures, times `pue`.
/// @throws std::invalid_argument on a non-positive shape count, a pue below 1, or bad activity.
PowerBreakdown activity_power(const SystemPower& system, const ClusterShape& shape,
                              const ActivityTimes& activity, double pue);

/// Provisioned view: the GPU at its power limit and the server at its rated maximum (the
/// non-GPU share is node_rated minus the node's GPUs at tdp), times `pue`.
/// @throws std::invalid_argument as activity_power, or when node_rated is below the GPUs' tdp.
PowerBreakdown provisioned_power(const SystemPower& system, const ClusterShape& shape, double pue);

/// Annual electricity use of an average US household, kWh: 10,791 (US EIA, Residential
/// Energy Consumption Survey / "How much electricity does an American home use?", 2022
/// figure, the one S0 uses).
inline constexpr double kUsHouseholdKwhPerYear = 10791.0;

/// Energy per token and what it means at scale.
struct EnergyMetrics {
  double joules_per_token = 0.0;           ///< facility J per trained token
  double kwh_per_million_tokens = 0.0;     ///< facility kWh per 10^6 tokens
  double tokens_per_household_year = 0.0;  ///< tokens trained on one US household-year
  double train_tokens = 0.0;               ///< N, tokens to train
  double energy_to_train_mwh = 0.0;        ///< facility MWh to train N tokens
};

/// Energy metrics from facility watts per GPU and tokens/s per GPU.
/// @throws std::invalid_argument unless watts and tokens/s are positive and train_tokens >= 0.
EnergyMetrics energy_metrics(double facility_w_per_gpu, double tokens_per_s_per_gpu,
                             double train_tokens);

}  // namespace clustersim::energy
