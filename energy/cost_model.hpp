// What GPU time costs and what a token costs: from a rental price per GPU-hour, or from the
// total cost of ownership (all-in capital cost depreciated linearly, electricity at the
// facility, other operating cost). Plain structs; figures and sources in docs/energy.md.
#pragma once

#include <string>

namespace clustersim::energy {

/// How GPU time is priced.
enum class Pricing { Rental, Tco };

/// Hours in a year of 365.25 days (depreciation and annual operating cost are spread over it).
inline constexpr double kHoursPerYear = 8766.0;

/// Inputs of the cost model. Money in US dollars.
struct CostInputs {
  Pricing pricing = Pricing::Rental;
  double rental_usd_per_gpu_hour = 0.0;  ///< Rental: price of one GPU-hour
  double capex_usd = 0.0;                ///< Tco: all-in capital cost of one unit (server, rack)
  int capex_unit_gpus = 0;               ///< Tco: GPUs in that unit
  double depreciation_years = 0.0;       ///< Tco: straight-line depreciation period
  double usd_per_kwh = 0.0;              ///< Tco: electricity price at the facility meter
  double opex_usd_per_gpu_year = 0.0;    ///< Tco: other operating cost (space, support, staff)
};

/// Cost of one GPU-hour and its parts, USD.
struct GpuHourCost {
  double capex = 0.0;        ///< depreciation share (Tco)
  double electricity = 0.0;  ///< facility energy of one GPU for one hour (Tco)
  double opex = 0.0;         ///< other operating cost (Tco)
  double rental = 0.0;       ///< the rental price (Rental)
  /// Total USD per GPU-hour.
  double total() const { return capex + electricity + opex + rental; }
};

/// Cost of one GPU-hour. `facility_w_per_gpu` is the average facility power of one GPU (the
/// energy the electricity bill meters); it is unused for rentals.
/// @throws std::invalid_argument on non-positive prices, capex, unit size or years, or
/// negative power or opex.
GpuHourCost gpu_hour_cost(const CostInputs& inputs, double facility_w_per_gpu);

/// What tokens cost at a given throughput.
struct CostMetrics {
  double usd_per_gpu_hour = 0.0;
  double usd_per_million_tokens = 0.0;
  double train_tokens = 0.0;       ///< N
  double cost_to_train_usd = 0.0;  ///< N tokens at the failure-free throughput
  double time_to_train_s = 0.0;    ///< N / (tokens/s/GPU x GPUs), failure-free
};

/// Cost metrics for `gpus` GPUs at `tokens_per_s_per_gpu`.
/// @throws std::invalid_argument unless price, throughput and gpus are positive, N >= 0.
CostMetrics cost_metrics(double usd_per_gpu_hour, double tokens_per_s_per_gpu, int gpus,
                         double train_tokens);

/// "rental" or "tco".
const char* to_string(Pricing pricing);

}  // namespace clustersim::energy
