#include "tools/validation/case_plots.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace clustersim::tools::validation {
namespace {

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};

std::string metric_label(Metric m) {
  switch (m) {
    case Metric::StepTime: return "step time (s)";
    case Metric::Mfu: return "MFU";
    case Metric::TflopsPerGpu: return "model TFLOP/s per GPU";
  }
  return "";
}

struct Axis {
  bool by_seq = false;
  double x(const PointOutcome& o) const {
    return static_cast<double>(by_seq ? o.seq : o.gpus);
  }
  std::string label() const { return by_seq ? "sequence length (tokens)" : "GPUs"; }
};

std::vector<std::string> platforms_of(const std::vector<const PointOutcome*>& points) {
  std::vector<std::string> out;
  for (const auto* p : points) {
    if (std::find(out.begin(), out.end(), p->platform) == out.end()) out.push_back(p->platform);
  }
  return out;
}

PlotSpec metric_plot(const std::vector<const PointOutcome*>& pts, const Axis& axis,
                     const std::vector<std::string>& platforms, const std::string& id) {
  PlotSpec spec{id + ": simulated vs measured", axis.label(), metric_label(pts[0]->metric), true,
                pts[0]->metric == Metric::Mfu, 0.0, 0.0, {}};
  for (std::size_t i = 0; i < platforms.size(); ++i) {
    const std::string color = kColors[i % 4];
    PlotSeries sim{"simulated, " + platforms[i], {}, color, true, true, false};
    PlotSeries meas{"measured, " + platforms[i], {}, color, false, true, true};
    for (const auto* p : pts) {
      if (p->platform != platforms[i]) continue;
      meas.points.emplace_back(axis.x(*p), p->measured);
      if (p->simulated) sim.points.emplace_back(axis.x(*p), p->simulated_value);
    }
    if (!sim.points.empty()) spec.series.push_back(sim);
    spec.series.push_back(meas);
  }
  return spec;
}

PlotSpec ratio_plot(const std::vector<const PointOutcome*>& pts, const Axis& axis,
                    const std::vector<std::string>& platforms, const std::string& id) {
  std::map<double, const PointOutcome*> a;
  std::map<double, const PointOutcome*> b;
  for (const auto* p : pts) (p->platform == platforms[0] ? a : b)[axis.x(*p)] = p;
  const std::string name = platforms[1] + " / " + platforms[0];
  PlotSpec spec{id + ": " + name, axis.label(), "ratio", true, false, 0.0, 0.0, {}};
  PlotSeries sim{"simulated " + name, {}, kColors[0], true, true, false};
  PlotSeries meas{"measured " + name, {}, kColors[1], true, true, true};
  for (const auto& [x, pa] : a) {
    const auto it = b.find(x);
    if (it == b.end()) continue;
    meas.points.emplace_back(x, it->second->measured / pa->measured);
    if (pa->simulated && it->second->simulated) {
      sim.points.emplace_back(x, it->second->simulated_value / pa->simulated_value);
    }
  }
  if (!sim.points.empty()) spec.series.push_back(sim);
  spec.series.push_back(meas);
  return spec;
}

PlotSpec memory_plot(const std::vector<const PointOutcome*>& pts, const Axis& axis,
                     const std::vector<std::string>& platforms, const std::string& id) {
  const std::string metric = pts.empty() ? "device" : pts.front()->peak_memory_metric;
  const std::string title =
      id + ": peak memory per GPU" + (metric == "device" ? "" : " (" + metric + ")");
  PlotSpec spec{title, axis.label(), "GiB", true, false, 0.0, 0.0, {}};
  for (std::size_t i = 0; i < platforms.size(); ++i) {
    PlotSeries est{"memory model, " + platforms[i], {}, kColors[i % 4], true, true, false};
    PlotSeries meas{"measured, " + platforms[i], {}, kColors[i % 4], false, true, true};
    for (const auto* p : pts) {
      if (p->platform != platforms[i]) continue;
      if (p->measured_peak_gib) meas.points.emplace_back(axis.x(*p), *p->measured_peak_gib);
      if (p->estimated_compared_gib) {
        est.points.emplace_back(axis.x(*p), *p->estimated_compared_gib);
      }
    }
    if (!est.points.empty()) spec.series.push_back(est);
    if (!meas.points.empty()) spec.series.push_back(meas);
  }
  return spec;
}

}  // namespace

std::vector<std::pair<std::string, PlotSpec>> case_plots(const ValidationSummary& summary,
                                                         const std::string& id) {
  std::vector<const PointOutcome*> pts;
  for (const auto& o : summary.points) {
    if (o.id == id && o.seq > 0) pts.push_back(&o);
  }
  std::vector<std::pair<std::string, PlotSpec>> out;
  if (pts.size() < 2) return out;
  std::set<std::int64_t> seqs;
  for (const auto* p : pts) seqs.insert(p->seq);
  const Axis axis{seqs.size() > 1};
  const auto platforms = platforms_of(pts);
  // A case may give a step time at one count and only an MFU at another: one chart per metric
  // (suffixed by its name when there are several), never two metrics on one axis.
  std::map<Metric, std::vector<const PointOutcome*>> by_metric;
  for (const auto* p : pts) by_metric[p->metric].push_back(p);
  for (const auto& [metric, of] : by_metric) {
    if (by_metric.size() == 1) {
      out.emplace_back("", metric_plot(of, axis, platforms, id));
    } else if (of.size() >= 2) {
      out.emplace_back(std::string("_") + to_string(metric), metric_plot(of, axis, platforms_of(of), id));
    }
  }
  if (by_metric.size() == 1 && platforms.size() == 2 && pts[0]->metric != Metric::StepTime) {
    out.emplace_back("_ratio", ratio_plot(pts, axis, platforms, id));
  }
  const bool memory = std::any_of(pts.begin(), pts.end(), [](const auto* p) { return p->measured_peak_gib.has_value(); });
  if (memory) out.emplace_back("_memory", memory_plot(pts, axis, platforms, id));
  return out;
}

}  // namespace clustersim::tools::validation
