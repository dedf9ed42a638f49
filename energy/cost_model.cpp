#include "energy/cost_model.hpp"

#include <stdexcept>

namespace clustersim::energy {

const char* to_string(Pricing pricing) { return pricing == Pricing::Rental ? "rental" : "tco"; }

GpuHourCost gpu_hour_cost(const CostInputs& in, double facility_w_per_gpu) {
  GpuHourCost c;
  if (in.pricing == Pricing::Rental) {
    if (!(in.rental_usd_per_gpu_hour > 0)) {
      throw std::invalid_argument("rental pricing needs a positive price per GPU-hour");
    }
    c.rental = in.rental_usd_per_gpu_hour;
    return c;
  }
  if (!(in.capex_usd > 0) || in.capex_unit_gpus <= 0 || !(in.depreciation_years > 0) ||
      !(in.usd_per_kwh >= 0) || !(in.opex_usd_per_gpu_year >= 0) || !(facility_w_per_gpu >= 0)) {
    throw std::invalid_argument(
        "TCO pricing needs positive capex, GPUs per capex unit and "
        "depreciation years, and non-negative power price, opex and power");
  }
  c.capex = in.capex_usd / in.capex_unit_gpus / (in.depreciation_years * kHoursPerYear);
  c.electricity = facility_w_per_gpu / 1e3 * in.usd_per_kwh;
  c.opex = in.opex_usd_per_gpu_year / kHoursPerYear;
  return c;
}

CostMetrics cost_metrics(double usd_per_gpu_hour, double tokens_per_s_per_gpu, int gpus,
                         double train_tokens) {
  if (!(usd_per_gpu_hour > 0) || !(tokens_per_s_per_gpu > 0) || gpus <= 0 || !(train_tokens >= 0)) {
    throw std::invalid_argument("cost metrics need a positive price, throughput and GPU count");
  }
  CostMetrics m;
  m.usd_per_gpu_hour = usd_per_gpu_hour;
  const double tokens_per_gpu_hour = tokens_per_s_per_gpu * 3600.0;
  m.usd_per_million_tokens = usd_per_gpu_hour / tokens_per_gpu_hour * 1e6;
  m.train_tokens = train_tokens;
  m.cost_to_train_usd = train_tokens / 1e6 * m.usd_per_million_tokens;
  m.time_to_train_s = train_tokens / (tokens_per_s_per_gpu * gpus);
  return m;
}

}  // namespace clustersim::energy
