#include "tools/uncertainty.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <utility>

#include "calib/measured_tables.hpp"
#include "sim/spec_error.hpp"
#include "tools/cost_models.hpp"

namespace clustersim::tools {

namespace {

BandEnd band_end(const RunReport& r) {
  BandEnd e;
  e.step_time_s = r.step.step_time_s;
  e.mfu = r.mfu;
  e.tokens_per_s_per_gpu = r.tokens_per_s_per_gpu;
  if (r.energy) {
    e.joules_per_token = r.energy->energy.joules_per_token;
    if (r.energy->pricing) e.usd_per_million_tokens = r.energy->cost.usd_per_million_tokens;
  }
  return e;
}

nlohmann::ordered_json ends(double fast, double slow) { return nlohmann::ordered_json::array({fast, slow}); }

// "8.05-8.49 s (-1.9%..+3.4%)": the range and its ends against the nominal value.
std::string range(double a, double b, double nominal, int precision, const std::string& unit) {
  const double lo = std::min(a, b), hi = std::max(a, b);
  std::ostringstream out;
  out << std::fixed << std::setprecision(precision) << lo << "-" << hi << unit << " ("
      << std::showpos << std::setprecision(1) << 100.0 * (lo / nominal - 1.0) << "%.."
      << 100.0 * (hi / nominal - 1.0) << "%)";
  return out.str();
}

}  // namespace

sim::CostUncertainty require_stated_uncertainty(const Job& job, const std::string& cost) {
  const sim::CostUncertainty bounds = make_cost_model(cost, job.cluster.platform)->uncertainty();
  if (!bounds.stated) {
    throw SpecError("--uncertainty", 0, "",
                    "the " + cost + " cost model states no uncertainty of its times, so it has "
                    "no fast or slow end: use the measured model (--cost measured)");
  }
  return bounds;
}

UncertaintyBand simulate_band(const Job& job, SimulateOptions options) {
  UncertaintyBand band;
  band.bounds = calib::uncertainty_text(require_stated_uncertainty(job, options.cost));
  options.timeline = false;
  options.profile_rank.reset();
  for (const sim::CostCorner corner : {sim::CostCorner::Fast, sim::CostCorner::Slow}) {
    options.corner = corner;
    const BandEnd end = band_end(simulate_job(job, options));
    (corner == sim::CostCorner::Fast ? band.fast : band.slow) = end;
  }
  return band;
}

nlohmann::ordered_json band_json(const UncertaintyBand& band) {
  nlohmann::ordered_json j;
  j["bounds"] = band.bounds;
  j["step_time_s"] = ends(band.fast.step_time_s, band.slow.step_time_s);
  j["mfu"] = ends(band.fast.mfu, band.slow.mfu);
  j["tokens_per_s_per_gpu"] = ends(band.fast.tokens_per_s_per_gpu, band.slow.tokens_per_s_per_gpu);
  if (band.fast.joules_per_token && band.slow.joules_per_token) {
    j["joules_per_token"] = ends(*band.fast.joules_per_token, *band.slow.joules_per_token);
  }
  if (band.fast.usd_per_million_tokens && band.slow.usd_per_million_tokens) {
    j["usd_per_million_tokens"] =
        ends(*band.fast.usd_per_million_tokens, *band.slow.usd_per_million_tokens);
  }
  return j;
}

std::string band_text(const UncertaintyBand& band, const RunReport& nominal) {
  std::ostringstream out;
  out << "uncertainty   step time " << range(band.fast.step_time_s, band.slow.step_time_s,
                                             nominal.step.step_time_s, 3, " s")
      << ", MFU " << range(100.0 * band.fast.mfu, 100.0 * band.slow.mfu, 100.0 * nominal.mfu, 1, "%")
      << ", tokens/s/GPU "
      << range(band.fast.tokens_per_s_per_gpu, band.slow.tokens_per_s_per_gpu,
               nominal.tokens_per_s_per_gpu, 1, "");
  if (nominal.energy && band.fast.joules_per_token && band.slow.joules_per_token) {
    out << ", J/token "
        << range(*band.fast.joules_per_token, *band.slow.joules_per_token,
                 nominal.energy->energy.joules_per_token, 2, "");
  }
  out << "\n              every kernel class and network transfer at the fast, then the slow end of "
         "the cost model's stated bounds together (an envelope, not a confidence interval): "
      << band.bounds
      << "\n              not covered: NVLink collectives (2-GPU tables), interference, the power "
         "state, host kernels, and the model's own error against measured steps "
         "(docs/validation.md)\n";
  return out.str();
}

}  // namespace clustersim::tools
