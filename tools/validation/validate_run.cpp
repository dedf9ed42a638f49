#include "tools/validation/validate_run.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <iomanip>
#include <set>
#include <sstream>
#include <stdexcept>

#include "sim/spec_error.hpp"
#include "sim/units.hpp"
#include "tools/csv.hpp"
#include "tools/simulate.hpp"
#include "tools/step_figures.hpp"
#include "tools/validation/case_job.hpp"
#include "tools/validation/recipe_families.hpp"
#include "workloads/flops.hpp"

namespace clustersim::tools::validation {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Defaults of one case, merged over its points: key -> values in order of appearance.
struct CaseDefaults {
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;
  std::vector<std::string> cites;

  void add(const JobField& f) {
    const auto it = std::find(keys.begin(), keys.end(), f.key);
    if (it == keys.end()) {
      keys.push_back(f.key);
      values.push_back({f.value});
      cites.push_back(f.cite);
      return;
    }
    auto& v = values[static_cast<std::size_t>(it - keys.begin())];
    if (std::find(v.begin(), v.end(), f.value) == v.end()) v.push_back(f.value);
  }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      std::string joined;
      for (const auto& v : values[i]) joined += (joined.empty() ? "" : "/") + v;
      out.push_back(keys[i] + "=" + joined + " [" + cites[i] + "]");
    }
    return out;
  }
};

std::string field_value(const CaseJob& job, const std::string& section, const std::string& key) {
  for (const auto& f : job.fields) {
    if (f.section == section && f.key == key) return f.value;
  }
  return "";
}

double metric_of(const RunReport& r, Metric m) {
  switch (m) {
    case Metric::StepTime: return r.step.step_time_s;
    case Metric::Mfu: return r.mfu;
    case Metric::TflopsPerGpu: return r.tflops_per_gpu;
  }
  return 0.0;
}

bool selected(const ValidateOptions& options, const ReferenceCase& rc) {
  return options.cases.empty() ||
         std::find(options.cases.begin(), options.cases.end(), rc.id) != options.cases.end();
}

void check_case_filter(const ReferenceSet& set, const ValidateOptions& options) {
  for (const auto& id : options.cases) {
    const bool known = std::any_of(set.cases.begin(), set.cases.end(),
                                   [&](const ReferenceCase& rc) { return rc.id == id; });
    if (known) continue;
    std::string ids;  // the file's, for the message
    for (const auto& rc : set.cases) ids += (ids.empty() ? "" : ", ") + rc.id;
    throw SpecError(set.file, 0, "cases", "no case with id '" + id + "' (the file's: " + ids + ")");
  }
}

// What a worker process simulates for one point.
struct PointTask {
  std::string replicas;  ///< --replicas, empty for the job's own
  Metric metric;
  bool band;       ///< also each end of the stated uncertainty (--uncertainty)
  bool decompose;  ///< the point has measured buckets: profile rank 0 and split its step
};

// Simulates one point in a worker; the JSON its parent reads back (value, replicas, wall, step,
// breakdown, and split / split_error / band where asked).
std::string simulate_point(const Job& job, const PointTask& t) {
  SimulateOptions so = options_from_job(job);
  if (!t.replicas.empty()) so.replicas = t.replicas;
  if (t.decompose) so.profile_rank = 0;  // the rank the source's script profiles
  const RunReport r = simulate_job(job, so);
  nlohmann::ordered_json j = {{"value", metric_of(r, t.metric)},
                              {"replicas", r.replicas},
                              {"wall", r.step.sim_wall_s},
                              {"step_time_s", r.step.step_time_s},
                              {"breakdown", nlohmann::ordered_json::parse(breakdown_json(r.step.breakdown))}};
  if (t.decompose) {
    try {  // a step that cannot be split keeps its point; the report says why
      const StepSplit split = split_step(
          r.profile.value(), r.tflops_per_gpu * 1e12 * r.step.step_time_s,
          workloads::attention_flop_share(job.workload.model, job.workload.training.seq_length,
                                          workloads::mfu_convention_from(r.mfu_convention)));
      j["split"] = {split.attention_tflops, split.rest_tflops, split.attention_kernel_share};
    } catch (const std::invalid_argument& e) {
      j["split_error"] = e.what();
    }
  }
  if (t.band) {
    for (const sim::CostCorner c : {sim::CostCorner::Fast, sim::CostCorner::Slow}) {
      so.corner = c;
      j["band"].push_back(metric_of(simulate_job(job, so), t.metric));
    }
  }
  return j.dump();
}

// Prepares one point: its outcome skeleton and, when the job can be built, the task.
std::function<std::string()> prepare(const ReferenceSet& set, const ReferenceCase& rc,
                                     const MeasuredPoint& p, const ValidateOptions& options,
                                     PointOutcome& o, CaseDefaults& defaults) {
  o.id = rc.id;
  o.gpus = point_gpus(rc, p);
  o.metric = p.metric;
  o.measured = p.value;
  o.measured_peak_gib = p.peak_memory_gib;
  o.peak_memory_metric = p.peak_memory_metric;
  o.measured_buckets = p.buckets;
  if (options.max_gpus > 0 && o.gpus > options.max_gpus) {
    o.reason = "skipped for time: " + count_noun(o.gpus, "GPU", "GPUs") + " > --max-gpus " +
               std::to_string(options.max_gpus);
    return {};
  }
  try {
    const CaseJob cj = build_case_job(set, rc, p);
    o.family = cj.family;
    o.platform = field_value(cj, "cluster", "platform");
    const std::string seq = field_value(cj, "training", "seq_length");
    o.seq = seq.empty() ? 0 : std::stoll(seq);
    for (const auto& f : cj.fields) {
      if (!f.cite.empty()) defaults.add(f);
    }
    o.job_yaml = cj.yaml;
    const Job job = load_case_job(set, rc, cj);
    try {
      const MemoryFit fit = memory_fit(job);
      o.estimated_peak_gib = fit.peak_bytes / kGiB;
      o.estimated_compared_gib =
          (o.peak_memory_metric == "max_memory_reserved" ? fit.reserved_bytes : fit.peak_bytes) / kGiB;
      o.capacity_gib = fit.capacity_bytes / kGiB;
    } catch (const std::invalid_argument&) {
      // the memory model rejects the spec; the simulation will say why
    }
    const PointTask task{options.replicas, p.metric, options.uncertainty, p.buckets.has_value()};
    return [job, task] { return simulate_point(job, task); };
  } catch (const SpecError& e) {
    o.reason = e.what();
  }
  return {};
}

// Whether the point's measured value lies between the ends of its band (false without one).
bool inside_band(const PointOutcome& o) {
  if (!o.band) return false;
  const auto [lo, hi] = std::minmax(o.band->first, o.band->second);
  return o.measured >= lo && o.measured <= hi;
}

void summarize(ValidationSummary& s) {
  double sum = 0.0;
  for (const auto& o : s.points) {
    if (!o.simulated) continue;
    ++s.simulated;
    const double a = std::fabs(o.rel_error);
    sum += a;
    if (a >= s.max_abs_error) {
      s.max_abs_error = a;
      s.max_point = o.id + " @ " + count_noun(o.gpus, "GPU", "GPUs");
    }
  }
  s.mean_abs_error = s.simulated > 0 ? sum / static_cast<double>(s.simulated) : 0.0;
  for (const auto& o : s.points) {
    if (!o.simulated || !o.band) continue;
    ++s.band_points;
    if (inside_band(o)) ++s.within_band;
  }
}

std::string point_detail(const PointOutcome& o) {
  std::ostringstream d;
  if (o.seq > 0) d << "seq " << o.seq;
  if (!o.platform.empty()) d << (o.seq > 0 ? ", " : "") << o.platform;
  return d.str();
}

// A step under a second keeps 3 significant digits (0.004 s had printed as 0.00).
std::string fmt_metric(Metric m, double v) {
  if (m == Metric::StepTime && v > 0 && v < 1) return significant_number(v, 3);
  return csv_number(v, m == Metric::Mfu ? 3 : (m == Metric::StepTime ? 2 : 1));
}

}  // namespace

std::size_t count_points(const ReferenceSet& set, const ValidateOptions& options) {
  std::size_t n = 0;
  for (const auto& rc : set.cases) {
    if (!selected(options, rc)) continue;
    for (const auto& p : rc.points) {
      if (options.max_gpus == 0 || point_gpus(rc, p) <= options.max_gpus) ++n;
    }
  }
  return n;
}

ValidationSummary run_validation(const ReferenceSet& set, const ValidateOptions& options) {
  check_case_filter(set, options);
  ValidationSummary s;
  s.reference = set.file;
  std::vector<std::function<std::string()>> tasks;
  std::vector<std::size_t> task_point;
  for (const auto& rc : set.cases) {
    if (!selected(options, rc)) continue;
    CaseDefaults defaults;
    for (const auto& p : rc.points) {
      PointOutcome o;
      auto task = prepare(set, rc, p, options, o, defaults);
      if (task) {
        tasks.push_back(std::move(task));
        task_point.push_back(s.points.size());
      }
      s.points.push_back(std::move(o));
    }
    s.defaults.emplace_back(rc.id, defaults.lines());
    if (!rc.not_compared.empty()) s.not_compared.emplace_back(rc.id, rc.not_compared);
  }
  if (options.dry_run) {
    for (const std::size_t i : task_point) s.points[i].reason = "dry run: the job is valid";
    tasks.clear();
  }
  const auto results = run_in_workers(tasks, options.jobs, options.progress);
  for (std::size_t t = 0; t < results.size(); ++t) {
    PointOutcome& o = s.points[task_point[t]];
    o.cpu_s = results[t].cpu_s;
    if (!results[t].ok) {
      o.reason = "simulation failed: " + results[t].output;
      continue;
    }
    const auto j = nlohmann::ordered_json::parse(results[t].output);
    o.simulated = true;
    o.simulated_value = j["value"].get<double>();
    o.replicas = j["replicas"].get<std::string>();
    o.sim_wall_s = j["wall"].get<double>();
    o.step_time_s = j["step_time_s"].get<double>();
    o.breakdown_json = j["breakdown"].dump();
    o.rel_error = (o.simulated_value - o.measured) / o.measured;
    if (j.contains("band")) o.band = {j["band"][0].get<double>(), j["band"][1].get<double>()};
    if (j.contains("split")) {
      o.simulated_split = StepSplit{j["split"][0].get<double>(), j["split"][1].get<double>(),
                                    j["split"][2].get<double>()};
    }
    if (j.contains("split_error")) o.split_error = j["split_error"].get<std::string>();
  }
  summarize(s);
  return s;
}

// Simulated points whose job the memory model puts over the GPU's HBM: validate simulates them
// anyway (the measurement says the job ran), and says so.
void over_memory_text(const ValidationSummary& s, std::ostream& out) {
  bool header = false;
  for (const auto& o : s.points) {
    if (!o.simulated || !o.estimated_peak_gib || !o.capacity_gib) continue;
    if (*o.estimated_peak_gib <= *o.capacity_gib) continue;
    if (!header) {
      out << "\nOver the GPU's memory by the memory model, simulated anyway (docs/memory-model.md):\n";
      header = true;
    }
    out << std::fixed << std::setprecision(1) << "  " << o.id << " @ " << count_noun(o.gpus, "GPU", "GPUs") << ": "
        << *o.estimated_peak_gib << " of " << *o.capacity_gib << " GiB\n";
  }
}

// "  -1.8%..+1.9% inside": the errors of the band's ends, and whether the measured lies between.
std::string band_cell(const PointOutcome& o) {
  if (!o.band) return "";
  const auto [lo, hi] = std::minmax(o.band->first, o.band->second);
  std::ostringstream c;
  c << std::fixed << std::setprecision(1) << std::showpos << "  "
    << 100.0 * (lo - o.measured) / o.measured << "%.." << 100.0 * (hi - o.measured) / o.measured
    << "%" << std::noshowpos << (inside_band(o) ? " inside" : "");
  return c.str();
}

// Width of the case column: the longest point id, at least 30 characters.
int id_width(const ValidationSummary& s) {
  std::size_t w = 30;
  for (const auto& o : s.points) w = std::max(w, o.id.size() + 1);
  return static_cast<int>(w);
}

// The header of validate's tables: case, gpus, job, `label` (metric or part), measured,
// simulated, error (no newline).
void table_header(std::ostream& out, int width, const char* label) {
  out << std::left << std::setw(width) << "case" << std::right << std::setw(6) << "gpus" << "  "
      << std::left << std::setw(22) << "job" << std::setw(15) << label << std::right
      << std::setw(9) << "measured" << std::setw(11) << "simulated" << std::setw(9) << "error";
}

// A table row's first four cells; the stream is left right-aligned for the figures.
void row_head(std::ostream& out, int width, const PointOutcome& o, const std::string& label) {
  out << std::left << std::setw(width) << o.id << std::right << std::setw(6) << o.gpus << "  "
      << std::left << std::setw(22) << point_detail(o) << std::setw(15) << label << std::right;
}

// The two parts of a decomposed point, measured and simulated, TFLOP/s.
struct BucketPart {
  const char* name;
  double measured;
  double simulated;
};
std::array<BucketPart, 2> bucket_parts(const PointOutcome& o) {
  return {BucketPart{"attention", o.measured_buckets->attention_tflops, o.simulated_split->attention_tflops},
          BucketPart{"rest", o.measured_buckets->rest_tflops, o.simulated_split->rest_tflops}};
}

// The simulated step decompositions beside the source's (MeasuredPoint::buckets).
void decomposition_text(const ValidationSummary& s, std::ostream& out) {
  const int width = id_width(s);
  bool header = false;
  for (const auto& o : s.points) {
    if (!o.measured_buckets || (!o.simulated_split && o.split_error.empty())) continue;
    if (!header) {
      out << "\nStep decomposition, as the source splits its step (rank 0: the step divided by the "
             "attention kernels' share of the kernel time, communication left out; each part's model "
             "FLOPs over its time; docs/validation.md), TFLOP/s, not in the mean:\n";
      table_header(out, width, "part");
      out << "\n";
      header = true;
    }
    if (!o.simulated_split) {
      out << std::left << std::setw(width) << o.id << std::right << std::setw(6) << o.gpus << "  "
          << point_detail(o) << ": not split: " << o.split_error << "\n";
      continue;
    }
    for (const BucketPart& p : bucket_parts(o)) {
      row_head(out, width, o, p.name);
      out << std::fixed << std::setprecision(1) << std::setw(9) << p.measured << std::setw(11)
          << p.simulated << std::setw(8) << std::showpos
          << 100.0 * (p.simulated - p.measured) / p.measured << std::noshowpos << "%\n";
    }
    out << std::setw(width + 6 + 2) << "" << "attention kernels " << std::setprecision(1)
        << 100.0 * o.simulated_split->attention_kernel_share << "% of the simulated kernel time\n";
  }
}

// The "buckets" object of a point's JSON entry.
nlohmann::ordered_json buckets_json(const PointOutcome& o) {
  nlohmann::ordered_json j;
  for (const BucketPart& p : bucket_parts(o)) {
    j[p.name] = {{"measured", p.measured},
                 {"simulated", p.simulated},
                 {"rel_error", (p.simulated - p.measured) / p.measured}};
  }
  j["attention_kernel_share"] = o.simulated_split->attention_kernel_share;
  return j;
}

// The citations the defaults carry ("key=value [TAG]"), in the list's order; nothing when no
// default was applied.
void sources_text(const ValidationSummary& s, std::ostream& out) {
  std::string used;
  for (const auto& [id, lines] : s.defaults) {
    for (const auto& l : lines) used += l + "\n";
  }
  bool any = false;
  for (const auto& c : citations()) {
    if (used.find("[" + c.tag + "]") == std::string::npos) continue;
    out << (any ? "" : "\nSources of the defaults:\n") << "  [" << c.tag << "] " << c.text << "\n";
    any = true;
  }
}

std::string validation_text(const ValidationSummary& s) {
  std::ostringstream out;
  out << "reference set: " << s.reference << "\n\n";
  out << "Defaults for fields the sources leave unstated (recipe family of each case):\n";
  for (const auto& [id, lines] : s.defaults) {
    if (lines.empty()) continue;
    out << "  " << id << ":";
    for (const auto& l : lines) out << " " << l;
    out << "\n";
  }
  out << "\n";
  const int width = id_width(s);
  table_header(out, width, "metric");
  out << (s.band_points > 0 ? "  band (fast..slow end)" : "") << "\n";
  for (const auto& o : s.points) {
    if (!o.simulated) continue;
    row_head(out, width, o, to_string(o.metric));
    out << std::setw(9) << fmt_metric(o.metric, o.measured) << std::setw(11)
        << fmt_metric(o.metric, o.simulated_value) << std::setw(8) << std::showpos << std::fixed
        << std::setprecision(1) << 100.0 * o.rel_error << std::noshowpos << "%"
        << band_cell(o) << "\n";
  }
  out << std::fixed << std::setprecision(1) << "\nsimulated " << s.simulated << " of "
      << count_noun(static_cast<long long>(s.points.size()), "point", "points");
  if (s.simulated > 0) {
    out << ": mean |error| " << 100.0 * s.mean_abs_error << "%, max |error| "
        << 100.0 * s.max_abs_error << "% (" << s.max_point << ")";
  }
  out << "\n";
  if (s.band_points > 0) {
    out << "measured between the ends of the cost model's stated uncertainty (every kernel class "
           "and network transfer at its fast, then its slow end): "
        << s.within_band << " of " << s.band_points << " points\n";
  }
  decomposition_text(s, out);
  over_memory_text(s, out);
  if (s.simulated < s.points.size()) {
    const auto skipped = static_cast<long long>(s.points.size() - s.simulated);
    out << "\nNot simulated (" << count_noun(skipped, "point", "points") << "):\n";
    for (const auto& o : s.points) {
      if (o.simulated) continue;
      const std::string detail = point_detail(o);
      out << "  " << o.id << " @ " << count_noun(o.gpus, "GPU", "GPUs") << (detail.empty() ? "" : " (" + detail + ")")
          << ": " << o.reason << "\n";
    }
  }
  if (!s.not_compared.empty()) out << "\nMeasured figures read and not compared:\n";
  for (const auto& [id, items] : s.not_compared) {
    for (const auto& item : items) out << "  " << id << ": " << item << "\n";
  }
  sources_text(s, out);
  return out.str();
}

std::string validation_json(const ValidationSummary& s) {
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
  for (const auto& o : s.points) {
    nlohmann::ordered_json j = {{"id", o.id}, {"gpus", o.gpus}, {"metric", to_string(o.metric)},
                                {"measured", o.measured}};
    if (o.simulated) {
      j["simulated"] = o.simulated_value;
      j["rel_error"] = o.rel_error;
    }
    // Unknown (null) for a point skipped before its job was built.
    j["seq"] = o.seq > 0 ? nlohmann::ordered_json(o.seq) : nullptr;
    j["platform"] = o.platform.empty() ? nullptr : nlohmann::ordered_json(o.platform);
    j["family"] = o.family.empty() ? nullptr : nlohmann::ordered_json(o.family);
    if (o.measured_peak_gib) {
      j["measured_peak_gib"] = *o.measured_peak_gib;
      j["peak_memory_metric"] = o.peak_memory_metric;
      if (o.estimated_compared_gib) j["estimated_compared_gib"] = *o.estimated_compared_gib;
    }
    if (o.estimated_peak_gib) j["estimated_peak_gib"] = *o.estimated_peak_gib;
    if (o.capacity_gib) j["capacity_gib"] = *o.capacity_gib;
    if (o.simulated) {
      j["replicas"] = o.replicas;
      j["step_time_s"] = o.step_time_s;
      j["breakdown"] = nlohmann::ordered_json::parse(o.breakdown_json);
      j["sim_wall_s"] = o.sim_wall_s;
      j["cpu_s"] = o.cpu_s;
      if (o.band) j["band"] = {o.band->first, o.band->second};
      if (o.simulated_split && o.measured_buckets) j["buckets"] = buckets_json(o);
      if (!o.split_error.empty()) j["buckets_error"] = o.split_error;
      cases.push_back(j);
    } else {
      j["reason"] = o.reason;
      skipped.push_back(j);
    }
  }
  nlohmann::ordered_json defaults = nlohmann::ordered_json::object();
  for (const auto& [id, lines] : s.defaults) defaults[id] = lines;
  nlohmann::ordered_json doc = {{"reference", s.reference}, {"cases", cases}};
  doc["mean_abs_error"] = s.simulated > 0 ? nlohmann::ordered_json(s.mean_abs_error) : nullptr;
  doc["max_abs_error"] = s.simulated > 0 ? nlohmann::ordered_json(s.max_abs_error) : nullptr;
  doc["simulated_points"] = s.simulated;
  if (s.band_points > 0) doc["within_band_points"] = s.within_band;
  doc["not_simulated"] = skipped;
  nlohmann::ordered_json not_compared = nlohmann::ordered_json::object();
  for (const auto& [id, items] : s.not_compared) not_compared[id] = items;
  doc["not_compared"] = not_compared;
  doc["defaults"] = defaults;
  return doc.dump(2) + "\n";
}

}  // namespace clustersim::tools::validation
