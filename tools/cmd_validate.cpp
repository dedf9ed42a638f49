// `clustersim validate [FILE] [--json FILE] [-j N] [--replicas R] [--max-gpus N] [--case ID]`
#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include "sim/spec_error.hpp"
#include "sim/units.hpp"
#include "tools/commands.hpp"
#include "tools/progress.hpp"
#include "tools/svg_plot.hpp"
#include "tools/validation/case_plots.hpp"
#include "tools/validation/validate_run.hpp"

namespace clustersim::tools {
namespace {

struct ValidateArgs {
  std::string file = CLUSTERSIM_REFERENCE_FILE;
  std::string json;
  int jobs = 0;
  std::string replicas;
  std::int64_t max_gpus = 0;
  std::vector<std::string> cases;
  bool dry_run = false;
  bool show_jobs = false;
  std::string plot_dir;
  bool uncertainty = false;
};

void write_plots(const validation::ValidationSummary& summary, const ValidateArgs& args) {
  std::vector<std::string> ids;
  for (const auto& p : summary.points) {
    if (std::find(ids.begin(), ids.end(), p.id) == ids.end()) ids.push_back(p.id);
  }
  std::vector<std::string> unplotted;
  for (const auto& id : ids) {
    const auto plots = validation::case_plots(summary, id);
    if (plots.empty()) unplotted.push_back(id);
    for (const auto& [suffix, spec] : plots) {
      const std::string path = args.plot_dir + "/" + id + suffix + ".svg";
      write_text_file(path, render_svg(spec));
      std::cout << "wrote " << path << "\n";
    }
  }
  // A chart needs two simulated points of one metric (docs/validation.md).
  for (const auto& id : unplotted) {
    std::cout << "no chart for " << id << ": it needs two simulated points of one metric\n";
  }
}

int validate_command(const ValidateArgs& args) {
  check_output_paths({{"--json", args.json}}, {args.file});
  const auto set = validation::load_reference_set(args.file);
  validation::ValidateOptions options;
  options.jobs = args.jobs > 0 ? args.jobs : default_worker_count();
  options.replicas = args.replicas;
  options.max_gpus = args.max_gpus;
  options.cases = args.cases;
  options.dry_run = args.dry_run;
  options.uncertainty = args.uncertainty;
  ProgressBar bar("simulating reference points", validation::count_points(set, options));
  options.progress = [&bar](std::size_t done, std::size_t total) {
    bar.set_total(total);
    bar.update(done);
  };
  const auto summary = validation::run_validation(set, options);
  bar.finish();
  if (args.show_jobs) {
    for (const auto& p : summary.points) {
      std::cout << "# job of " << p.id << " @ " << count_noun(p.gpus, "GPU", "GPUs") << "\n" << p.job_yaml << "\n";
    }
  }
  std::cout << validation::validation_text(summary);
  if (!args.plot_dir.empty()) write_plots(summary, args);
  if (!args.json.empty()) write_text_file(args.json, validation::validation_json(summary));
  return summary.simulated > 0 || args.dry_run ? 0 : 1;
}

}  // namespace

void register_validate_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Simulate every case of a reference set of measured training runs and report "
                  "measured vs simulated (step time where given, else MFU or TFLOP/s/GPU) with "
                  "the mean and max absolute error (docs/validation.md)");
  cmd->add_option("file", args->file,
                  "Reference file (schema in docs/validation.md); default: the repository's "
                  "tests/validation/measured.yaml")
      ->check(CLI::ExistingFile);
  cmd->add_option("--json", args->json,
                  "Also write {\"cases\": [{id, gpus, metric, measured, simulated, rel_error}], "
                  "mean_abs_error, max_abs_error, not_simulated, defaults} to FILE");
  cmd->add_option("-j,--jobs", args->jobs,
                  "Worker processes simulating in parallel (default: the number of CPUs)")
      ->check(decimal_integer())
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--replicas", args->replicas,
                  "Replica reduction for every point: auto (default; the rule of clustersim run), "
                  "full, identical (docs/engine.md)")
      ->check(CLI::IsMember({"auto", "full", "identical"}));
  cmd->add_option("--max-gpus", args->max_gpus,
                  "Skip points above this many GPUs (reported as skipped for time)")
      ->check(decimal_integer())
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--case", args->cases, "Only this case id (repeatable)");
  cmd->add_flag("--uncertainty", args->uncertainty,
                "Also simulate every point with every kernel class and network transfer at the "
                "fast, then the slow end of the cost model's stated uncertainty: a band per "
                "point and how many measured values lie inside (3x the time)");
  cmd->add_flag("--dry-run", args->dry_run,
                "Build and check the job of every point, list what would run, simulate nothing");
  cmd->add_option("--plot", args->plot_dir,
                  "Write SVG charts of each case with two or more points into this existing "
                  "directory: CASE.svg (simulated vs measured), CASE_ratio.svg (two platforms), "
                  "CASE_memory.svg (peak memory)")
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--show-jobs", args->show_jobs,
                "Print the job YAML each point becomes (runnable with clustersim run)");
  cmd->callback([args, &exit_code] { exit_code = run_guarded([&] { return validate_command(*args); }); });
}

}  // namespace clustersim::tools
