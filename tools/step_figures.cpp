#include "tools/step_figures.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

#include "tools/csv.hpp"
#include "tools/simulate.hpp"
#include "tools/uncertainty.hpp"

#include "workloads/memory.hpp"

namespace clustersim::tools {

namespace {

// An optional figure of StepFigures with its name (CSV column and JSON key of the worker's text)
// and CSV decimals.
struct FigureColumn {
  const char* name;
  std::optional<double> StepFigures::*figure;
  int digits;
};

// The energy, cost and failure figures, in column order.
const FigureColumn kFigureColumns[] = {
    {"power_w_per_gpu", &StepFigures::power_w_per_gpu, 1},
    {"joules_per_token", &StepFigures::joules_per_token, 4},
    {"tokens_per_household_year", &StepFigures::tokens_per_household_year, 0},
    {"energy_to_train_mwh", &StepFigures::energy_to_train_mwh, 2},
    {"usd_per_million_tokens", &StepFigures::usd_per_million_tokens, 4},
    {"cost_to_train_usd", &StepFigures::cost_to_train_usd, 0},
    {"goodput", &StepFigures::goodput, 4},
    {"goodput_ci95_low", &StepFigures::goodput_ci95_low, 4},
    {"goodput_ci95_high", &StepFigures::goodput_ci95_high, 4},
    {"interruptions", &StepFigures::interruptions, 1},
    {"days_to_train", &StepFigures::days_to_train, 2},
    {"usd_per_million_tokens_with_failures", &StepFigures::usd_per_million_tokens_with_failures, 4},
};

// The band of the stated uncertainty (`scale --uncertainty`), likewise.
const FigureColumn kBandColumns[] = {
    {"step_time_fast_s", &StepFigures::step_time_fast_s, 4},
    {"step_time_slow_s", &StepFigures::step_time_slow_s, 4},
    {"mfu_fast", &StepFigures::mfu_fast, 4},
    {"mfu_slow", &StepFigures::mfu_slow, 4},
};

template <std::size_t N>
std::vector<std::string> column_names(const FigureColumn (&columns)[N]) {
  std::vector<std::string> n;
  for (const auto& c : columns) n.emplace_back(c.name);
  return n;
}

template <std::size_t N>
std::vector<std::string> column_fields(const FigureColumn (&columns)[N], const StepFigures& f) {
  std::vector<std::string> fields;
  for (const auto& c : columns) {
    const auto& v = f.*c.figure;
    fields.push_back(v ? csv_number(*v, c.digits) : std::string());
  }
  return fields;
}

template <std::size_t N>
void read_columns(const FigureColumn (&columns)[N], const std::vector<std::string>& header,
                  const std::vector<std::string>& fields, StepFigures& f) {
  for (const auto& c : columns) {
    const auto at = std::find(header.begin(), header.end(), c.name);
    if (at == header.end()) continue;
    const std::string& text = fields.at(static_cast<std::size_t>(at - header.begin()));
    if (text.empty()) continue;
    const std::optional<double> v = parse_number(text);
    if (!v) throw std::invalid_argument(std::string(c.name) + ": '" + text + "' is not a number");
    f.*c.figure = *v;
  }
}

// A column's figure from a worker's JSON text, when present.
void read_json_column(const FigureColumn& c, const nlohmann::json& j, StepFigures& f) {
  const auto it = j.find(c.name);
  if (it != j.end()) f.*c.figure = it->get<double>();
}

// Energy and cost as `clustersim run` reports them and, for a job with a reliability section,
// its training run with failures.
void add_energy_and_failures(StepFigures& f, const RunReport& r, const Job& job) {
  if (r.energy) {
    f.power_w_per_gpu = r.energy->activity_power.facility_w();
    f.joules_per_token = r.energy->energy.joules_per_token;
    f.tokens_per_household_year = r.energy->energy.tokens_per_household_year;
    f.energy_to_train_mwh = r.energy->energy.energy_to_train_mwh;
    if (r.energy->pricing) {
      f.usd_per_million_tokens = r.energy->cost.usd_per_million_tokens;
      f.cost_to_train_usd = r.energy->cost.cost_to_train_usd;
    }
  }
  if (!has_reliability_section(job)) return;
  const auto rel = run_with_failures(job, r.tokens_per_s_per_gpu).reliability;
  f.goodput = rel.goodput.mean;
  f.goodput_ci95_low = rel.goodput.ci95_low;
  f.goodput_ci95_high = rel.goodput.ci95_high;
  f.interruptions = rel.failures.mean;
  f.days_to_train = rel.wall_s.mean / 86400.0;
  if (f.usd_per_million_tokens && rel.goodput.mean > 0.0) {
    f.usd_per_million_tokens_with_failures = *f.usd_per_million_tokens / rel.goodput.mean;
  }
}

}  // namespace

std::string simulate_figures(const Job& job, const std::string& replicas, bool uncertainty) {
  SimulateOptions options = options_from_job(job);
  if (!replicas.empty()) override_replicas(options, replicas);
  const RunReport r = simulate_job(job, options);
  const auto& b = r.step.breakdown;
  nlohmann::json j = {{"step_time_s", r.step.step_time_s},
                      {"mfu", r.mfu},
                      {"tflops_per_gpu", r.tflops_per_gpu},
                      {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
                      {"compute_s", b.compute_s},
                      {"exposed_comm_s", b.exposed_comm_s},
                      {"bubble_s", b.bubble_s},
                      {"replicas", r.replicas},
                      {"accuracy_notes", r.accuracy_notes}};
  StepFigures f;
  add_energy_and_failures(f, r, job);
  for (const auto& c : kFigureColumns) {
    if (f.*c.figure) j[c.name] = *(f.*c.figure);
  }
  if (uncertainty) {
    const UncertaintyBand band = simulate_band(job, options);
    j["step_time_fast_s"] = band.fast.step_time_s;
    j["step_time_slow_s"] = band.slow.step_time_s;
    j["mfu_fast"] = band.fast.mfu;
    j["mfu_slow"] = band.slow.mfu;
  }
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
    f.accuracy_notes = j.at("accuracy_notes").get<std::vector<std::string>>();
    for (const auto& c : kFigureColumns) read_json_column(c, j, f);
    for (const auto& c : kBandColumns) read_json_column(c, j, f);
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("malformed simulation result: ") + e.what());
  }
}

const std::vector<std::string>& energy_and_failure_columns() {
  static const std::vector<std::string> names = column_names(kFigureColumns);
  return names;
}

std::vector<std::string> energy_and_failure_fields(const StepFigures& f) {
  return column_fields(kFigureColumns, f);
}

void read_energy_and_failure_fields(const std::vector<std::string>& header,
                                    const std::vector<std::string>& fields, StepFigures& f) {
  read_columns(kFigureColumns, header, fields, f);
}

const std::vector<std::string>& band_columns() {
  static const std::vector<std::string> names = column_names(kBandColumns);
  return names;
}

std::vector<std::string> band_fields(const StepFigures& f) { return column_fields(kBandColumns, f); }

void read_band_fields(const std::vector<std::string>& header, const std::vector<std::string>& fields,
                      StepFigures& f) {
  read_columns(kBandColumns, header, fields, f);
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
