// Energy, power and cost of a simulated step: wires the platform's power and cost figures, the
// job's `energy:` and `economics:` sections and the simulated step into energy/. Reported by
// `clustersim run` (docs/outputs.md) and `clustersim tco` (docs/energy.md).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "energy/cost_model.hpp"
#include "energy/power_model.hpp"
#include "sim/engine.hpp"
#include "sim/workload.hpp"
#include "tools/job.hpp"

namespace clustersim::tools {

/// Power, energy and cost of one job at its simulated throughput.
struct EnergyReport {
  energy::ActivityTimes activity;         ///< per GPU, s of one step
  energy::PowerBreakdown activity_power;  ///< W per GPU, what the job draws
  energy::PowerBreakdown provisioned;     ///< W per GPU, everything at its rated maximum
  energy::EnergyMetrics energy;           ///< from activity_power
  energy::EnergyMetrics energy_provisioned;
  std::optional<energy::Pricing> pricing;  ///< absent when no price is known (see cost_note)
  energy::GpuHourCost gpu_hour;
  energy::CostMetrics cost;
  std::string cost_note;  ///< why cost is absent, when it is
  /// Economics inputs the job gives that its pricing does not use ("economics.capex_usd,
  /// usd_per_kwh: TCO inputs, unused with rental pricing ..."); empty when all count.
  std::string unused_inputs;
};

/// Inputs of evaluate_energy taken from a simulated step.
struct EnergyStepInputs {
  sim::Breakdown breakdown;  ///< of the simulated step, s
  double tokens_per_s_per_gpu = 0.0;
  double memory_bound_share = 0.0;  ///< of compute-stream busy time
  int gpus = 0;
};

/// Share of compute-stream busy time spent in memory-bound kernels, over all ranks of a
/// costed workload (the rest is GEMMs and attention).
double memory_bound_share(const sim::Workload& workload);

/// Resolves the job's pricing against its platform: `economics.pricing` if given, else
/// `default_pricing` if set, else rental when a rental price is known and TCO otherwise.
/// @throws SpecError (at the job's economics section) when the chosen pricing lacks a figure.
energy::CostInputs resolve_cost_inputs(const Job& job,
                                       std::optional<energy::Pricing> default_pricing);

/// Power, energy and (when a price is known) cost; nullopt when the platform has no `power:`.
/// With `require_price`, a missing price is a SpecError instead of a cost_note.
/// @throws SpecError for inconsistent economics, std::invalid_argument for impossible figures.
std::optional<EnergyReport> evaluate_energy(const Job& job, const EnergyStepInputs& figures,
                                            std::optional<energy::Pricing> default_pricing,
                                            bool require_price);

/// Adds "energy" and "cost" objects (keys in docs/outputs.md) to a report's JSON.
void add_energy_json(nlohmann::ordered_json& j, const EnergyReport& report);
/// Human-readable power, energy and cost lines.
std::string energy_text(const EnergyReport& report);

}  // namespace clustersim::tools
