// `clustersim scale JOB.yaml --gpus 64,128,... --mode weak|strong [--csv F] [--svg F] [-j N]`
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "platforms/topology.hpp"
#include "sim/spec_error.hpp"
#include "sim/units.hpp"
#include "tools/accuracy_notes.hpp"
#include "tools/commands.hpp"
#include "tools/progress.hpp"
#include "tools/reliability_report.hpp"
#include "tools/scale.hpp"
#include "tools/uncertainty.hpp"
#include "tools/validation/case_job.hpp"
#include "tools/validation/reference_set.hpp"
#include "tools/worker_pool.hpp"

namespace clustersim::tools {
namespace {

struct ScaleArgs {
  std::string job;
  std::vector<std::string> gpus_text;  ///< --gpus as given (decimal_integer_list checks it)
  std::vector<std::int64_t> gpus;
  std::string mode = "weak";
  std::string csv = "scale.csv";
  std::string svg = "scale.svg";
  std::string title;
  int jobs = 0;
  std::string replicas;
  std::string reference = CLUSTERSIM_REFERENCE_FILE;
  std::vector<std::string> measured_cases;
  bool uncertainty = false;
};

// The measured MFU of the named reference cases (points that state an MFU).
std::vector<MeasuredMfu> measured_points(const ScaleArgs& args) {
  std::vector<MeasuredMfu> out;
  if (args.measured_cases.empty()) return out;
  const auto set = validation::load_reference_set(args.reference);
  for (const auto& id : args.measured_cases) {
    const auto it = std::find_if(set.cases.begin(), set.cases.end(),
                                 [&](const auto& rc) { return rc.id == id; });
    if (it == set.cases.end()) throw SpecError(set.file, 0, "cases", "no case with id '" + id + "'");
    const std::size_t before = out.size();
    for (const auto& p : it->points) {
      const std::int64_t g = validation::point_gpus(*it, p);
      if (p.stated_mfu && g > 0) out.push_back({g, *p.stated_mfu});
    }
    if (out.size() == before) {
      throw SpecError(set.file, it->line, "cases." + id,
                      "--measured-case: the case states no MFU at a GPU count, so there is nothing to "
                      "draw beside the simulated MFU");
    }
  }
  return out;
}

std::vector<ScaleRow> run_points(const JobTemplate& tmpl, const ScaleArgs& args, ScaleMode mode) {
  std::vector<ScaleRow> rows;
  std::vector<std::function<std::string()>> tasks;
  std::vector<std::size_t> task_row;
  for (const std::int64_t g : args.gpus) {
    ScaleRow row;
    row.point = scale_point(tmpl.base(), g, mode);
    if (!row.point.invalid.empty()) {
      row.status = "invalid";
      row.reason = row.point.invalid;
    } else {
      try {
        const Job job = tmpl.derive(scale_overrides(row.point));
        try {
          row.memory = memory_fit(job);
        } catch (const std::invalid_argument&) {
          // the memory model rejects the spec; the simulation reports why
        }
        const std::string replicas = args.replicas;
        const bool band = args.uncertainty;
        tasks.push_back([job, replicas, band] { return simulate_figures(job, replicas, band); });
        task_row.push_back(rows.size());
      } catch (const SpecError& e) {
        row.status = "invalid";
        row.reason = e.what();
      }
    }
    rows.push_back(std::move(row));
  }
  ProgressBar bar("simulating " + count_noun(static_cast<long long>(tasks.size()), "GPU count", "GPU counts"),
                  tasks.size());
  const int jobs = args.jobs > 0 ? args.jobs : default_worker_count();
  const auto results = run_in_workers(tasks, jobs, [&bar](std::size_t d, std::size_t) { bar.update(d); });
  bar.finish();
  for (std::size_t t = 0; t < results.size(); ++t) {
    ScaleRow& row = rows[task_row[t]];
    if (results[t].ok) {
      row.figures = parse_figures(results[t].output);
      if (row.memory && !row.memory->fits) row.reason = "memory model: " + row.memory->message;
    } else {
      row.status = "failed";
      row.reason = results[t].output;
    }
  }
  compute_efficiency(rows);
  return rows;
}

// What the efficiency column is relative to (the smallest simulated count, which a count not
// simulated may have left larger than the smallest asked for), and the counts simulated though
// the memory model puts them over the GPU's HBM (`run` refuses those without --ignore-oom).
std::string efficiency_and_memory_notes(const std::vector<ScaleRow>& rows) {
  std::int64_t asked = 0;
  std::size_t over = 0;
  for (const auto& r : rows) {
    asked = asked == 0 ? r.point.gpus : std::min(asked, r.point.gpus);
    if (r.figures && r.memory && !r.memory->fits) ++over;
  }
  std::ostringstream out;
  if (const ScaleRow* base = efficiency_base(rows)) {
    out << "scaling efficiency: tokens/s/GPU relative to " << base->point.gpus
        << " GPUs, the smallest count simulated";
    if (asked < base->point.gpus) out << " (the smallest asked for, " << asked << ", was not)";
    out << "\n";
  }
  if (over > 0) {
    out << over << " simulated count(s) over the GPU's HBM by the memory model (status reason; it errs "
        << "high for Megatron jobs, docs/memory-model.md): `run` refuses such a job without --ignore-oom\n";
  }
  return out.str();
}

std::string table(const std::vector<ScaleRow>& rows) {
  std::ostringstream out;
  out << std::setw(8) << "gpus" << std::setw(8) << "dp" << std::setw(9) << "gbs" << std::setw(10)
      << "step s" << std::setw(8) << "MFU" << std::setw(12) << "tok/s/GPU" << std::setw(8)
      << "eff" << std::setw(10) << "mem GiB" << std::setw(8) << "J/tok" << std::setw(8)
      << "$/Mtok" << std::setw(9) << "goodput"
      << (std::any_of(rows.begin(), rows.end(), [](const ScaleRow& r) { return r.figures && r.figures->mfu_fast; })
              ? "  MFU band"
              : "")
      << "  status\n";
  // dp and the batch are 0 for a GPU count that is not a multiple of tp*cp*pp: none, not 0.
  const auto count = [](std::int64_t v) { return v > 0 ? std::to_string(v) : std::string("-"); };
  for (const auto& r : rows) {
    out << std::setw(8) << r.point.gpus << std::setw(8) << count(r.point.dp) << std::setw(9)
        << count(r.point.global_batch) << std::fixed;
    if (r.figures) {
      out << std::setw(10) << std::setprecision(3) << r.figures->step_time_s << std::setw(7)
          << std::setprecision(1) << 100 * r.figures->mfu << "%" << std::setw(12)
          << r.figures->tokens_per_s_per_gpu << std::setw(7) << 100 * r.efficiency << "%";
    } else {
      out << std::setw(10) << "-" << std::setw(8) << "-" << std::setw(12) << "-" << std::setw(8) << "-";
    }
    out << std::setw(10) << (r.memory ? csv_number(r.memory->peak_bytes / (1 << 30), 1) : "-");
    const auto figure = [&r](std::optional<double> StepFigures::*f) {
      return r.figures && (*r.figures).*f ? csv_number(*((*r.figures).*f), 3) : std::string("-");
    };
    out << std::setw(8) << figure(&StepFigures::joules_per_token) << std::setw(8)
        << figure(&StepFigures::usd_per_million_tokens) << std::setw(9)
        << (r.figures && r.figures->goodput ? csv_number(100.0 * *r.figures->goodput, 1) + "%" : "-");
    if (r.figures && r.figures->mfu_fast && r.figures->mfu_slow) {
      out << "  " << csv_number(100.0 * *r.figures->mfu_slow, 1) << "-"
          << csv_number(100.0 * *r.figures->mfu_fast, 1) << "%";
    }
    out << "  " << r.status << (r.reason.empty() ? "" : ": " + r.reason) << "\n";
  }
  return out.str();
}

struct PlotArgs {
  std::string csv;
  std::string svg = "scale.svg";
  std::string mode = "weak";
  std::string title = "scaling study";
  std::string reference = CLUSTERSIM_REFERENCE_FILE;
  std::vector<std::string> measured_cases;
};

int plot_command(const PlotArgs& args) {
  check_output_paths({{"--svg", args.svg}}, {args.csv, args.reference});
  std::ifstream in(args.csv);
  if (!in) throw SpecError(args.csv, 0, "", "cannot open file");
  std::stringstream text;
  text << in.rdbuf();
  const auto rows = scale_rows_from_csv(parse_csv(text.str(), args.csv), args.csv);
  ScaleArgs measured;
  measured.reference = args.reference;
  measured.measured_cases = args.measured_cases;
  write_text_file(args.svg, render_svg(scale_plot(rows, parse_scale_mode(args.mode), args.title,
                                                  measured_points(measured), "measured MFU")));
  std::cout << "wrote " << args.svg << "\n";
  return 0;
}

void register_plot(CLI::App* scale, int& exit_code) {
  auto args = std::make_shared<PlotArgs>();
  CLI::App* plot = scale->add_subcommand("plot", "Draw the SVG of a scale CSV again, without simulating");
  plot->add_option("csv", args->csv, "CSV written by clustersim scale")->required()->check(CLI::ExistingFile);
  plot->add_option("--svg", args->svg, "SVG output (default scale.svg)");
  plot->add_option("--mode", args->mode, "weak or strong (legend)")->check(CLI::IsMember({"weak", "strong"}));
  plot->add_option("--title", args->title, "Plot title");
  auto* measured =
      plot->add_option("--measured-case", args->measured_cases, "Measured MFU of this reference case (repeatable)");
  plot->add_option("--reference", args->reference, "Reference file for --measured-case")
      ->check(CLI::ExistingFile)
      ->needs(measured);
  plot->callback([args, &exit_code] { exit_code = run_guarded_usage([&] { return plot_command(*args); }); });
}

// With nothing to plot, a plot an earlier run left at `path` would pass for this run's: it is
// removed if it is one (a regular file that starts as an SVG, never the CSV just written, a link
// or a directory: a mistyped --svg must not delete a job file). Returns whether there was one.
// @throws std::runtime_error when it cannot be removed.
bool remove_stale_plot(const std::string& path, const std::string& csv) {
  std::error_code ec;
  if (std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::regular) return false;
  if (std::filesystem::equivalent(path, csv, ec)) return false;
  std::string head(5, '\0');
  std::ifstream(path).read(head.data(), 5);
  if (head.rfind("<svg", 0) != 0 && head != "<?xml") return false;
  if (!std::filesystem::remove(path, ec) && ec) {
    throw std::runtime_error("no GPU count could be simulated, and the plot of an earlier run, " + path +
                             ", cannot be removed: " + ec.message());
  }
  return true;
}

// What the table's "-" in the energy, cost and goodput columns means, when no point has them.
std::string missing_figure_notes(const std::vector<ScaleRow>& rows, const Job& job) {
  const auto none = [&rows](std::optional<double> StepFigures::*f) {
    return std::none_of(rows.begin(), rows.end(),
                        [f](const ScaleRow& r) { return r.figures && (*r.figures).*f; });
  };
  std::string notes;
  if (none(&StepFigures::joules_per_token)) {
    notes += "no energy: the platform states no power: figures (docs/energy.md)\n";
  } else if (none(&StepFigures::usd_per_million_tokens)) {
    notes += "no cost: no price for this platform; give the job economics: (docs/energy.md)\n";
  }
  if (!has_reliability_section(job)) {
    notes += "no goodput: the job has no reliability: section (reliability: {} takes every "
             "default; docs/energy.md)\n";
  }
  return notes;
}

// The accuracy notes of the simulated points, for accuracy_summary.
std::vector<std::vector<std::string>> point_notes(const std::vector<ScaleRow>& rows) {
  std::vector<std::vector<std::string>> notes;
  for (const auto& r : rows) {
    if (r.figures) notes.push_back(r.figures->accuracy_notes);
  }
  return notes;
}

int scale_command(const ScaleArgs& args) {
  if (args.job.empty() || args.gpus.empty()) throw std::invalid_argument("scale needs JOB.yaml and --gpus");
  std::set<std::int64_t> seen;
  for (const std::int64_t g : args.gpus) {
    if (!seen.insert(g).second) {
      throw std::invalid_argument("--gpus: " + std::to_string(g) + " is given twice");
    }
  }
  check_output_paths({{"--csv", args.csv}, {"--svg", args.svg}}, {args.job, args.reference});
  const ScaleMode mode = parse_scale_mode(args.mode);
  const JobTemplate tmpl = JobTemplate::load(args.job);
  if (args.uncertainty) require_stated_uncertainty(tmpl.base(), tmpl.base().simulation.cost);
  const auto measured = measured_points(args);
  const auto rows = run_points(tmpl, args, mode);
  std::cout << "job: " << args.job << " (" << to_string(mode) << " scaling: tp, cp, pp kept, "
            << (mode == ScaleMode::Weak ? "batch per data-parallel replica kept" : "global batch kept")
            << ")\n" << table(rows);
  const bool simulated = std::any_of(rows.begin(), rows.end(), [](const auto& r) { return r.figures.has_value(); });
  if (simulated) {
    std::cout << efficiency_and_memory_notes(rows) << missing_figure_notes(rows, tmpl.base())
              << accuracy_summary(point_notes(rows));
  }
  write_text_file(args.csv, to_csv(scale_csv(rows)));
  std::cout << "wrote " << args.csv << "\n";
  if (!simulated) {
    const bool removed = remove_stale_plot(args.svg, args.csv);
    std::cerr << "error: no GPU count could be simulated; no plot written"
              << (removed ? " (the earlier " + args.svg + " removed)" : std::string()) << "\n";
    return 1;
  }
  const std::string title = args.title.empty() ? tmpl.base().workload.model.name + ", " +
                                                     to_string(mode) + " scaling"
                                               : args.title;
  write_text_file(args.svg, render_svg(scale_plot(rows, mode, title, measured, "measured MFU")));
  std::cout << "wrote " << args.svg << "\n";
  return 0;
}

}  // namespace

void register_scale_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ScaleArgs>();
  CLI::App* cmd = app.add_subcommand(
      "scale", "Simulate a job at several GPU counts (tp, cp, pp kept, dp grows): CSV of step "
               "time, MFU, tokens/s/GPU, breakdown, peak memory, and an SVG plot");
  cmd->add_option("job", args->job, "Job YAML (docs/job-spec.md)")->check(CLI::ExistingFile);
  cmd->add_option("--gpus", args->gpus_text, "GPU counts, e.g. 64,128,256 (each once)")
      ->check(decimal_integer_list(1, platforms::kMaxClusterGpus));
  cmd->add_option("--mode", args->mode,
                  "weak (default): keep the batch per data-parallel replica (global batch grows "
                  "with dp); strong: keep the global batch")
      ->check(CLI::IsMember({"weak", "strong"}));
  cmd->add_option("--csv", args->csv, "CSV output (default scale.csv)");
  cmd->add_option("--svg", args->svg, "SVG plot output (default scale.svg)");
  cmd->add_option("--title", args->title, "Plot title");
  cmd->add_option("-j,--jobs", args->jobs, "Worker processes (default: the number of CPUs)")
      ->check(decimal_integer())
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--replicas", args->replicas,
                  "auto, full or identical (default: the job's simulation.replicas, else auto)")
      ->check(CLI::IsMember({"auto", "full", "identical"}));
  auto* measured = cmd->add_option("--measured-case", args->measured_cases,
                                   "Draw the measured MFU of this reference case beside the curve (repeatable)");
  cmd->add_option("--reference", args->reference,
                  "Reference file for --measured-case (default tests/validation/measured.yaml)")
      ->check(CLI::ExistingFile)
      ->needs(measured);
  cmd->add_flag("--uncertainty", args->uncertainty,
                "Also simulate each point at both ends of the cost model's stated uncertainty: "
                "step_time_fast_s, step_time_slow_s, mfu_fast, mfu_slow columns and the MFU band "
                "in the plot (3x the time; docs/scaling-and-sweeps.md)");
  register_plot(cmd, exit_code);
  cmd->callback([cmd, args, &exit_code] {
    if (cmd->got_subcommand("plot")) return;
    exit_code = run_guarded_usage([&] {
      args->gpus = parse_integer_list(args->gpus_text);
      return scale_command(*args);
    });
  });
}

}  // namespace clustersim::tools
