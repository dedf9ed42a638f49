// `clustersim sweep JOB.yaml --gpus N --space tp=1,2,4,8 pp=... [-j N] [--shard K/N] [--csv F]`
// `clustersim sweep merge SHARD.csv... [--csv F]`
#include <algorithm>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "platforms/topology.hpp"
#include "sim/spec_error.hpp"
#include "tools/accuracy_notes.hpp"
#include "tools/commands.hpp"
#include "tools/progress.hpp"
#include "tools/step_figures.hpp"
#include "tools/svg_plot.hpp"
#include "tools/sweep.hpp"
#include "tools/worker_pool.hpp"

namespace clustersim::tools {
namespace {

struct SweepArgs {
  std::string job;
  std::int64_t gpus = 0;
  std::vector<std::string> space;
  std::string csv = "sweep.csv";
  std::string shard = "1/1";
  int jobs = 0;
  std::string replicas;
  std::size_t top = 10;
  double memory_margin = 0.0;  ///< fraction of HBM a simulated configuration may exceed
};

struct MergeArgs {
  std::vector<std::string> files;
  std::string csv = "sweep.csv";
  std::size_t top = 10;
};

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Whether `m` is over the GPU's HBM (not the host's pinned memory) by at most `margin` of it.
bool hbm_excess_within(const MemoryFit& m, double margin) {
  const double over = m.peak_bytes - m.capacity_bytes;
  return over > 0.0 && over <= margin * m.capacity_bytes;
}

void set(CsvTable& t, std::vector<std::string>& row, const std::string& col, const std::string& v) {
  row[t.column(col)] = v;
}

void set_memory(CsvTable& t, std::vector<std::string>& row, const MemoryFit& m) {
  set(t, row, "peak_memory_gib", csv_number(m.peak_bytes / kGiB, 2));
  set(t, row, "memory_headroom_gib", csv_number((m.capacity_bytes - m.peak_bytes) / kGiB, 2));
}

// Builds every configuration's row; returns the simulation tasks and the rows they fill.
std::vector<std::function<std::string()>> prepare(const SweepArgs& args,
                                                  const std::vector<SweepAxis>& axes,
                                                  CsvTable& table, std::vector<std::size_t>& task_row) {
  const JobTemplate tmpl = JobTemplate::load(args.job);
  // A GPU count the job's platform cannot hold fails every configuration alike: say so once, of
  // --gpus (unless the platform itself is swept, when each is judged on its own).
  const bool platform_swept =
      std::any_of(axes.begin(), axes.end(), [](const SweepAxis& a) { return a.dim.name == "platform"; });
  if (!platform_swept) {
    const std::string problem =
        platforms::Topology::check(tmpl.base().cluster.platform, static_cast<int>(args.gpus));
    if (!problem.empty()) throw SpecError("<command line>", 0, "--gpus", problem);
  }
  const std::int64_t gbs = tmpl.base().workload.training.global_batch_size;
  const std::string fingerprint =
      sweep_fingerprint(tmpl.text(), args.gpus, axes, args.replicas, args.memory_margin);
  const std::string space = std::to_string(space_size(axes));
  std::vector<std::function<std::string()>> tasks;
  for (const std::size_t id : shard_ids(space_size(axes), parse_shard(args.shard))) {
    const auto values = config_values(axes, id);
    std::vector<std::string> row(table.header.size());
    set(table, row, "config", std::to_string(id));
    set(table, row, "sweep", fingerprint);
    set(table, row, "space", space);
    for (std::size_t i = 0; i < axes.size(); ++i) set(table, row, axes[i].dim.name, values[i]);
    try {
      const Job job = tmpl.derive(sweep_overrides(axes, values, args.gpus, gbs));
      set(table, row, "dp", std::to_string(job.workload.parallel.dp));
      const MemoryFit memory = memory_fit(job);
      set_memory(table, row, memory);
      if (!memory.fits && !hbm_excess_within(memory, args.memory_margin)) {
        set(table, row, "status", kSweepOutOfMemory);
        set(table, row, "reason", memory.message);
      } else {
        // Simulated within --memory-margin: ranked, and said so beside its negative headroom.
        if (!memory.fits) set(table, row, "reason", "tight (within --memory-margin): " + memory.message);
        const std::string replicas = args.replicas;
        tasks.push_back([job, replicas] { return simulate_figures(job, replicas); });
        task_row.push_back(table.rows.size());
      }
    } catch (const SpecError& e) {
      set(table, row, "status", kSweepInvalid);
      set(table, row, "reason", e.field() + ": " + e.reason());
    } catch (const std::invalid_argument& e) {
      set(table, row, "status", kSweepInvalid);
      set(table, row, "reason", e.what());
    }
    table.rows.push_back(std::move(row));
  }
  return tasks;
}

// One line for the configurations over the GPU's HBM: how far over, and which component
// dominates how often; one for those whose HBM fits but whose pinned host memory (activation
// offloading) does not, which MemoryReport::fits() refuses too (each configuration's own
// message is in the CSV's reason column).
std::string memory_summary(const CsvTable& table) {
  double lo = 0.0, hi = 0.0;
  std::size_t n = 0, host = 0, tight = 0;
  std::map<std::string, std::size_t> dominant;
  const std::string marker = "the largest component is ";
  for (const auto& row : table.rows) {
    if (row[table.column("status")] != kSweepOutOfMemory) continue;
    const double over = -std::stod(row[table.column("memory_headroom_gib")]);
    if (over <= 0.0) {
      ++host;
      continue;
    }
    const double capacity = std::stod(row[table.column("peak_memory_gib")]) - over;
    if (over <= kMemoryModelMargin * capacity) ++tight;
    lo = n == 0 ? over : std::min(lo, over);
    hi = n == 0 ? over : std::max(hi, over);
    ++n;
    const std::string& reason = row[table.column("reason")];
    const auto at = reason.find(marker);
    if (at != std::string::npos) {
      const auto start = at + marker.size();
      ++dominant[reason.substr(start, reason.find(' ', start) - start)];
    }
  }
  std::ostringstream out;
  out << std::fixed << std::setprecision(1);
  if (n > 0) {
    out << "  " << n << "x " << kSweepOutOfMemory << ": over the GPU's HBM by " << lo << "-" << hi
        << " GiB; largest component:";
    const char* sep = " ";
    for (const auto& [name, k] : dominant) {
      out << sep << name << " " << k << "x";
      sep = ", ";
    }
    out << " (each configuration's message: the CSV's reason column)\n";
    if (tight > 0) {
      out << "  " << tight << " of them within " << 100 * kMemoryModelMargin
          << "% of the HBM, where the model errs high for Megatron jobs (docs/memory-model.md): "
             "--memory-margin "
          << kMemoryModelMargin << " simulates and ranks them\n";
    }
  }
  if (host > 0) {
    out << "  " << host << "x " << kSweepOutOfMemory
        << ": HBM fits, the offloaded activations over the host's pinned-memory share (the CSV's "
           "reason column)\n";
  }
  return out.str();
}

// Configurations simulated to a result (status ok).
std::size_t simulated_count(const CsvTable& table) {
  const std::size_t status = table.column("status");
  return static_cast<std::size_t>(std::count_if(table.rows.begin(), table.rows.end(),
                                                [&](const auto& row) { return row[status] == kSweepOk; }));
}

void report_pruning(const CsvTable& table, std::size_t space, const SweepArgs& args) {
  std::map<std::string, std::size_t> count;
  std::map<std::string, std::size_t> reasons;
  for (const auto& row : table.rows) {
    const std::string& status = row[table.column("status")];
    ++count[status];
    if (status != kSweepOk && status != kSweepOutOfMemory) {
      ++reasons[status + ": " + row[table.column("reason")]];
    }
  }
  std::cout << "space: " << space << " configurations; shard " << args.shard << ": "
            << table.rows.size() << "; simulated " << count[kSweepOk] + count[kSweepFailed]
            << " (" << count[kSweepFailed] << " failed); pruned " << count[kSweepInvalid]
            << " invalid, " << count[kSweepOutOfMemory] << " over memory\n";
  std::cout << "memory pruning: workloads memory model (per-GPU peak of the worst pipeline "
               "stage vs HBM, docs/memory-model.md)\n";
  const std::string memory = memory_summary(table);
  if (!reasons.empty() || !memory.empty()) {
    std::cout << "why configurations were pruned or failed (count):\n";
  }
  for (const auto& [reason, n] : reasons) std::cout << "  " << n << "x " << reason << "\n";
  std::cout << memory;
}

int sweep_command(const SweepArgs& args) {
  if (args.job.empty()) throw std::invalid_argument("sweep needs a job file (or: sweep merge)");
  if (args.gpus <= 0) throw std::invalid_argument("sweep needs --gpus N");
  check_output_paths({{"--csv", args.csv}}, {args.job});
  const auto axes = parse_space(args.space);
  CsvTable table;
  table.header = sweep_header(axes);
  std::vector<std::size_t> task_row;
  const auto tasks = prepare(args, axes, table, task_row);
  ProgressBar bar("simulating configurations", tasks.size());
  const int jobs = args.jobs > 0 ? args.jobs : default_worker_count();
  const auto results = run_in_workers(tasks, jobs, [&bar](std::size_t d, std::size_t) { bar.update(d); });
  bar.finish();
  std::vector<std::vector<std::string>> notes;  // of the simulated configurations
  for (std::size_t t = 0; t < results.size(); ++t) {
    auto& row = table.rows[task_row[t]];
    if (!results[t].ok) {
      set(table, row, "status", kSweepFailed);
      set(table, row, "reason", results[t].output);
      continue;
    }
    const StepFigures f = parse_figures(results[t].output);
    notes.push_back(f.accuracy_notes);
    set(table, row, "status", kSweepOk);
    set(table, row, "tokens_per_s_per_gpu", csv_number(f.tokens_per_s_per_gpu, 1));
    set(table, row, "mfu", csv_number(f.mfu, 4));
    set(table, row, "step_time_s", csv_number(f.step_time_s, 4));
    set(table, row, "compute_s", csv_number(f.compute_s, 4));
    set(table, row, "exposed_comm_s", csv_number(f.exposed_comm_s, 4));
    set(table, row, "bubble_s", csv_number(f.bubble_s, 4));
    set(table, row, "replicas", f.replicas);
    const auto energy = energy_and_failure_fields(f);
    for (std::size_t c = 0; c < energy.size(); ++c) set(table, row, energy_and_failure_columns()[c], energy[c]);
  }
  rank_sweep_table(table);
  write_text_file(args.csv, to_csv(table));
  report_pruning(table, space_size(axes), args);
  std::cout << "\ntop " << args.top << " by tokens/s/GPU:\n" << top_table(table, args.top)
            << accuracy_summary(notes);
  std::cout << "wrote " << args.csv << "\n";
  // A shard may hold only pruned configurations (its siblings simulate the rest); a whole sweep
  // that simulated none answers nothing, so it fails as scale does.
  if (parse_shard(args.shard).count == 1 && simulated_count(table) == 0) {
    std::cerr << "error: no configuration could be simulated (the reasons above)\n";
    return 1;
  }
  return 0;
}

int merge_command(const MergeArgs& args) {
  check_output_paths({{"--csv", args.csv}}, args.files);
  std::vector<std::pair<std::string, CsvTable>> shards;
  for (const auto& file : args.files) {
    std::ifstream in(file);
    if (!in) throw SpecError(file, 0, "", "cannot open file");
    std::stringstream text;
    text << in.rdbuf();
    shards.emplace_back(file, parse_csv(text.str(), file));
  }
  const CsvTable merged = merge_sweep_tables(shards);
  write_text_file(args.csv, to_csv(merged));
  std::cout << "merged " << shards.size() << " shard outputs, " << merged.rows.size()
            << " configurations\n\ntop " << args.top << " by tokens/s/GPU:\n"
            << top_table(merged, args.top) << "wrote " << args.csv << "\n";
  if (simulated_count(merged) == 0) {
    std::cerr << "error: no configuration of the merged sweep was simulated\n";
    return 1;
  }
  return 0;
}

void register_merge(CLI::App* sweep, int& exit_code) {
  auto args = std::make_shared<MergeArgs>();
  CLI::App* merge = sweep->add_subcommand(
      "merge", "Combine the CSV outputs of sweep shards (--shard K/N) into one ranked CSV");
  merge->add_option("files", args->files, "Shard CSV files")->required()->check(CLI::ExistingFile);
  merge->add_option("--csv", args->csv, "Merged CSV output (default sweep.csv)");
  merge->add_option("--top", args->top, "Rows of the table on stdout (default 10)")
      ->check(decimal_integer())
      ->check(CLI::Range(1, 1 << 20));
  merge->callback([args, &exit_code] { exit_code = run_guarded_usage([&] { return merge_command(*args); }); });
}

}  // namespace

void register_sweep_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Enumerate parallelism configurations of a job at a GPU count, prune invalid "
               "and over-memory ones (with reasons), simulate the rest in parallel worker "
               "processes, write a ranked CSV and print the top 10 (docs/scaling-and-sweeps.md)");
  cmd->add_option("job", args->job, "Job YAML; its global batch is kept")->check(CLI::ExistingFile);
  cmd->add_option("--gpus", args->gpus, "GPU count of every configuration")
      ->check(decimal_integer())
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--space", args->space,
                  "Dimensions and values: tp=1,2,4,8 pp=1,2 vp=1,2 cp=1,2 ep=1 etp=1 mbs=1,2 "
                  "zero=0,1,2,3 recompute=none,selective,full attention=cudnn,flash2 "
                  "platform=gb200_nvl72,gb300_nvl72 ... (docs/scaling-and-sweeps.md; dp is derived)")
      ->expected(1, -1);
  cmd->add_option("--csv", args->csv, "Ranked CSV output (default sweep.csv)");
  cmd->add_option("--shard", args->shard,
                  "Run only shard K of N (configs with id % N == K-1), e.g. $SLURM_ARRAY_TASK_ID/8; "
                  "combine outputs with 'sweep merge'");
  cmd->add_option("-j,--jobs", args->jobs, "Worker processes (default: the number of CPUs)")
      ->check(decimal_integer())
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--replicas", args->replicas,
                  "auto, full or identical (default: the job's simulation.replicas, else auto)")
      ->check(CLI::IsMember({"auto", "full", "identical"}));
  cmd->add_option("--memory-margin", args->memory_margin,
                  "Simulate and rank configurations the memory model puts over the GPU's HBM by "
                  "at most this fraction of it (default 0: pruned)")
      ->check(finite_number())
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--top", args->top, "Rows of the table on stdout (default 10)")
      ->check(decimal_integer())
      ->check(CLI::Range(1, 1 << 20));
  register_merge(cmd, exit_code);
  cmd->callback([cmd, args, &exit_code] {
    if (cmd->got_subcommand("merge")) return;
    exit_code = run_guarded_usage([&] { return sweep_command(*args); });
  });
}

}  // namespace clustersim::tools
