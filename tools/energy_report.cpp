#include "tools/energy_report.hpp"

#include <iomanip>
#include <sstream>
#include <variant>

#include "energy/spec_io.hpp"
#include "platforms/summary.hpp"

namespace clustersim::tools {
namespace {

energy::SystemPower system_power(const platforms::PlatformSpec& p) {
  const auto& f = p.power;
  energy::SystemPower s;
  s.gpu = {f.gpu_tensor, f.gpu_memory_bound, f.gpu_communication, f.gpu_waiting, p.gpu.tdp};
  s.node_other = f.node_other;
  s.node_rated = f.node_rated;
  s.nic = f.nic;
  s.nvswitch_tray = f.nvswitch_tray;
  s.switch_port = f.switch_port;
  s.nvswitch_trays_per_domain = f.nvswitch_trays_per_domain;
  return s;
}

// The job's GPUs and the switch ports its NICs use in a fat-tree of the topology's tiers: per
// NIC one leaf port down, the leaf's share of uplinks (1 / leaf oversubscription, as built with
// whole uplink ports: platforms::built_oversubscription) and the spine ports they land on, and
// with 3 tiers the spine's uplinks and core ports likewise.
// This is the job's share of a fabric built for whole scalable units.
energy::ClusterShape cluster_shape(const platforms::PlatformSpec& p, int gpus) {
  const platforms::TopologySummary t = platforms::summarize(p, gpus);
  const double leaf_up = 1.0 / t.built_leaf;
  double ports_per_nic = 1.0 + 2.0 * leaf_up;
  if (t.tiers == 3) ports_per_nic += 2.0 * leaf_up / t.built_spine;
  energy::ClusterShape s;
  s.gpus = gpus;
  s.gpus_per_node = p.node.gpus_per_node;
  s.nics_per_node = p.node.nics_per_node;
  s.gpus_per_domain = p.node.nvlink_domain_size;
  s.switch_ports = ports_per_nic * gpus / p.node.gpus_per_node * p.node.nics_per_node;
  return s;
}

SpecError economics_error(const Job& job, const std::string& key, const std::string& reason) {
  const auto& o = job.economics.origin;
  if (o.file.empty()) return SpecError(job.origin, 0, "economics", reason);
  return energy::section_error(o, key, reason);
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

// Three significant digits, scientific when large ("1.15e+09").
std::string sig3(double v) {
  std::ostringstream s;
  s << std::setprecision(3) << v;
  return s.str();
}

}  // namespace

double memory_bound_share(const sim::Workload& w) {
  std::vector<double> mem(w.programs.size(), 0.0), all(w.programs.size(), 0.0);
  for (std::size_t p = 0; p < w.programs.size(); ++p) {
    for (const auto& op : w.programs[p].ops) {
      // Copy-stream ops (activation offloading) run beside the compute stream on copy engines.
      if (!op.is_compute() || op.stream == sim::Stream::D2H || op.stream == sim::Stream::H2D) continue;
      all[p] += op.duration_s;
      if (std::holds_alternative<sim::MemBoundShape>(op.shape)) mem[p] += op.duration_s;
    }
  }
  double m = 0, a = 0;
  for (const auto program : w.program_of_rank) {
    m += mem[program];
    a += all[program];
  }
  return a > 0 ? m / a : 0.0;
}

energy::CostInputs resolve_cost_inputs(const Job& job, std::optional<energy::Pricing> fallback) {
  const auto& e = job.economics;
  const auto& plat = job.cluster.platform;
  // The job's rental price, else the platform's; 0 when neither gives one.
  const double rental = e.rental_usd_per_gpu_hour.value_or(plat.cost.rental_usd_per_gpu_hour);
  energy::CostInputs in;
  in.pricing =
      e.pricing
          ? *e.pricing
          : (fallback ? *fallback : (rental > 0 ? energy::Pricing::Rental : energy::Pricing::Tco));
  if (in.pricing == energy::Pricing::Rental) {
    if (!(rental > 0)) {
      throw economics_error(job, "usd_per_gpu_hour",
                            "platform '" + plat.name +
                                "' lists no rental price: give economics.usd_per_gpu_hour or "
                                "use pricing: tco");
    }
    in.rental_usd_per_gpu_hour = rental;
    return in;
  }
  // A unit belongs to the price it gives: alone it would re-price the platform's capital cost
  // (GB200 NVL72's $3.9M rack charged per 4-GPU tray is 18x too much).
  if (e.capex_unit && !e.capex_usd) {
    throw economics_error(job, "capex_unit",
                          "a unit without economics.capex_usd would re-price the capital cost platform '" +
                              plat.name + "' states" +
                              (plat.cost.present ? " per " + plat.cost.capex_unit : "") +
                              ": give capex_usd with its unit, or neither");
  }
  const double capex = e.capex_usd ? *e.capex_usd : (plat.cost.present ? plat.cost.capex_usd : 0.0);
  if (!(capex > 0)) {
    throw economics_error(job, "capex_usd",
                          "platform '" + plat.name +
                              "' lists no capital cost: "
                              "give economics.capex_usd and capex_unit for TCO pricing");
  }
  // The job's unit, else the platform's, which a platform stating no capital cost does not have:
  // then only a platform whose node is its whole NVLink domain (HGX) may leave it unsaid; on a
  // rack platform a price without its unit would be charged per tray or per rack by guess.
  std::string unit = e.capex_unit ? *e.capex_unit : plat.cost.capex_unit;
  if (!e.capex_unit && !plat.cost.present) {
    if (plat.node.nvlink_domain_size != plat.node.gpus_per_node) {
      throw economics_error(
          job, "capex_unit",
          "platform '" + plat.name + "' states no capital cost to take the unit from, and its " +
              std::to_string(plat.node.gpus_per_node) + "-GPU nodes are not its " +
              std::to_string(plat.node.nvlink_domain_size) +
              "-GPU NVLink domains: give capex_unit: node or domain with capex_usd");
    }
    unit = "node";
  }
  in.capex_usd = capex;
  in.capex_unit_gpus = unit == "domain" ? plat.node.nvlink_domain_size : plat.node.gpus_per_node;
  in.depreciation_years = e.depreciation_years;
  in.usd_per_kwh = e.usd_per_kwh;
  in.opex_usd_per_gpu_year = e.opex_usd_per_gpu_year;
  return in;
}

namespace {
// The economics keys a job gives that its resolved pricing ignores, as one note.
std::string unused_economics(const energy::EconomicsSection& e, energy::Pricing pricing) {
  std::string keys;
  const bool rental = pricing == energy::Pricing::Rental;
  if (rental) {
    for (const auto& k : e.tco_keys) keys += (keys.empty() ? "" : ", ") + k;
  } else if (e.rental_usd_per_gpu_hour) {
    keys = "usd_per_gpu_hour";
  }
  if (keys.empty()) return "";
  return "economics." + keys + (rental ? ": TCO inputs, unused with rental pricing"
                                       : ": a rental input, unused with TCO pricing") +
         (e.pricing ? "" : " (the default here; set economics.pricing to choose)");
}
}  // namespace

std::optional<EnergyReport> evaluate_energy(const Job& job, const EnergyStepInputs& f,
                                            std::optional<energy::Pricing> default_pricing,
                                            bool require_price) {
  const auto& plat = job.cluster.platform;
  if (!plat.power.present) return std::nullopt;
  EnergyReport r;
  const auto& b = f.breakdown;
  r.activity = {b.compute_s * (1.0 - f.memory_bound_share), b.compute_s * f.memory_bound_share,
                b.exposed_comm_s, b.bubble_s};
  const energy::SystemPower sys = system_power(plat);
  const energy::ClusterShape shape = cluster_shape(plat, f.gpus);
  const double pue = job.energy.pue;
  const double n = job.energy.train_tokens;
  r.activity_power = energy::activity_power(sys, shape, r.activity, pue);
  r.provisioned = energy::provisioned_power(sys, shape, pue);
  r.energy = energy::energy_metrics(r.activity_power.facility_w(), f.tokens_per_s_per_gpu, n);
  r.energy_provisioned =
      energy::energy_metrics(r.provisioned.facility_w(), f.tokens_per_s_per_gpu, n);
  try {
    const energy::CostInputs in = resolve_cost_inputs(job, default_pricing);
    r.pricing = in.pricing;
    r.gpu_hour = energy::gpu_hour_cost(in, r.activity_power.facility_w());
    r.cost = energy::cost_metrics(r.gpu_hour.total(), f.tokens_per_s_per_gpu, f.gpus, n);
    r.unused_inputs = unused_economics(job.economics, in.pricing);
  } catch (const SpecError& e) {
    if (require_price) throw;
    r.cost_note = e.reason();
  }
  return r;
}

void add_energy_json(nlohmann::ordered_json& j, const EnergyReport& r) {
  auto watts = [](const energy::PowerBreakdown& p) {
    return nlohmann::ordered_json{{"gpu", p.gpu_w},
                                  {"host", p.host_w},
                                  {"nic", p.nic_w},
                                  {"nvswitch", p.nvswitch_w},
                                  {"network", p.network_w},
                                  {"it", p.it_w()},
                                  {"facility", p.facility_w()}};
  };
  nlohmann::ordered_json e;
  e["pue"] = r.activity_power.pue;
  e["activity_s"] = {{"tensor", r.activity.tensor_s},
                     {"memory_bound", r.activity.memory_bound_s},
                     {"communication", r.activity.communication_s},
                     {"waiting", r.activity.waiting_s}};
  e["w_per_gpu"] = watts(r.activity_power);
  e["w_per_gpu_provisioned"] = watts(r.provisioned);
  e["joules_per_token"] = r.energy.joules_per_token;
  e["joules_per_token_provisioned"] = r.energy_provisioned.joules_per_token;
  e["kwh_per_million_tokens"] = r.energy.kwh_per_million_tokens;
  e["tokens_per_household_year"] = r.energy.tokens_per_household_year;
  e["train_tokens"] = r.energy.train_tokens;
  e["energy_to_train_mwh"] = r.energy.energy_to_train_mwh;
  j["energy"] = e;
  if (!r.pricing) {
    j["cost"] = {{"note", r.cost_note}};
    return;
  }
  j["cost"] = {{"pricing", energy::to_string(*r.pricing)},
               {"usd_per_gpu_hour", r.gpu_hour.total()},
               {"capex_usd_per_gpu_hour", r.gpu_hour.capex},
               {"electricity_usd_per_gpu_hour", r.gpu_hour.electricity},
               {"opex_usd_per_gpu_hour", r.gpu_hour.opex},
               {"usd_per_million_tokens", r.cost.usd_per_million_tokens},
               {"cost_to_train_usd", r.cost.cost_to_train_usd},
               {"time_to_train_s", r.cost.time_to_train_s}};
  if (!r.unused_inputs.empty()) j["cost"]["unused_inputs"] = r.unused_inputs;
}

std::string energy_text(const EnergyReport& r) {
  const auto& p = r.activity_power;
  std::ostringstream out;
  out << "power/GPU     " << fixed(p.facility_w(), 0) << " W all-in (GPU " << fixed(p.gpu_w, 0)
      << ", host " << fixed(p.host_w, 0) << ", NIC " << fixed(p.nic_w, 0) << ", NVSwitch "
      << fixed(p.nvswitch_w, 0) << ", network " << fixed(p.network_w, 0) << "; IT "
      << fixed(p.it_w(), 0) << " W x PUE " << fixed(p.pue, 2) << "); provisioned "
      << fixed(r.provisioned.facility_w(), 0) << " W\n";
  out << "energy        " << fixed(r.energy.joules_per_token, 2) << " J/token ("
      << fixed(r.energy_provisioned.joules_per_token, 2) << " provisioned), "
      << sig3(r.energy.tokens_per_household_year) << " tokens per US household-year, "
      << sig3(r.energy.energy_to_train_mwh) << " MWh for " << sig3(r.energy.train_tokens)
      << " tokens\n";
  if (!r.pricing) {
    out << "cost          n/a: " << r.cost_note << "\n";
    return out.str();
  }
  out << "cost          $" << fixed(r.cost.usd_per_million_tokens, 3) << " per million tokens ("
      << energy::to_string(*r.pricing) << " $" << fixed(r.gpu_hour.total(), 3) << "/GPU-h), $"
      << fixed(r.cost.cost_to_train_usd / 1e6, 3) << "M and "
      << fixed(r.cost.time_to_train_s / 86400.0, 1) << " days for " << sig3(r.cost.train_tokens)
      << " tokens (no failures)\n";
  if (!r.unused_inputs.empty()) out << "              " << r.unused_inputs << "\n";
  return out.str();
}

}  // namespace clustersim::tools
