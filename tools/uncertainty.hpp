// The step at both ends of the cost model's stated uncertainty (`clustersim run --uncertainty`):
// the envelope of the figures if every kernel class and network transfer were at the fast, or
// at the slow, end of its bounds together. Documented in docs/outputs.md and docs/cost-model.md
// ("Stated uncertainty").
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "tools/job.hpp"
#include "tools/simulate.hpp"

namespace clustersim::tools {

/// The figures of one end of the band.
struct BandEnd {
  double step_time_s = 0.0;
  double mfu = 0.0;
  double tokens_per_s_per_gpu = 0.0;
  std::optional<double> joules_per_token;        ///< absent without platform power figures
  std::optional<double> usd_per_million_tokens;  ///< absent without a price
};

/// The step simulated at the fast and at the slow end of the stated uncertainty.
struct UncertaintyBand {
  std::string bounds;  ///< the bounds and their sources, one line (calib::uncertainty_text)
  BandEnd fast;        ///< every class at its lower bound
  BandEnd slow;        ///< every class at its upper bound
};

/// The stated uncertainty of the cost model `cost` ("measured", "roofline") for the job's GPU.
/// @throws SpecError (at `--uncertainty`) when that model states none (the roofline).
sim::CostUncertainty require_stated_uncertainty(const Job& job, const std::string& cost);

/// Simulates the job twice more, with options.corner fast and slow (the other options as given).
/// @throws SpecError (at `--uncertainty`) for a cost model that states no uncertainty (the
/// roofline); SpecError and std::runtime_error as simulate_job.
UncertaintyBand simulate_band(const Job& job, SimulateOptions options);

/// The `uncertainty` object of run's JSON (docs/outputs.md): {"bounds", "step_time_s": [fast,
/// slow], "mfu": [...], ...}, each pair ordered fast end first.
nlohmann::ordered_json band_json(const UncertaintyBand& band);

/// Report lines: the ranges beside the nominal figures, and what the band does not cover.
std::string band_text(const UncertaintyBand& band, const RunReport& nominal);

}  // namespace clustersim::tools
