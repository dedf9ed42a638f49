// `clustersim tco A.yaml B.yaml [--json FILE] [--replicas MODE]`: two jobs side by side,
// throughput, power, energy per token, cost per token and performance per TCO dollar, then the
// same with failures (Monte-Carlo over a whole training run), and where B stops winning: the
// relative speed and the NVLink-domain MTBF at which the two break even. docs/energy.md.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "sim/spec_error.hpp"
#include "tools/commands.hpp"
#include "tools/csv.hpp"
#include "tools/svg_plot.hpp"
#include "tools/reliability_report.hpp"
#include "tools/simulate.hpp"
#include "tools/uncertainty.hpp"

namespace clustersim::tools {
namespace {

struct TcoArgs {
  std::string a, b, json, replicas;  // replicas: "" = the job's simulation.replicas
  bool uncertainty = false;
};

// One job of the comparison, evaluated.
struct Side {
  Job job;
  RunReport run;
  EnergyReport energy;
  RunWithFailures failures;

  double tokens_per_usd() const { return 1e6 / energy.cost.usd_per_million_tokens; }
  double tokens_per_usd_with_failures() const {
    return tokens_per_usd() * failures.reliability.goodput.mean;
  }
};

Side evaluate(Job job, const std::string& replicas) {
  const std::string path = job.origin;
  Side s{std::move(job), {}, {}, {}};
  SimulateOptions options = options_from_job(s.job);
  if (!replicas.empty()) override_replicas(options, replicas);
  s.run = simulate_job(s.job, options);
  auto e = evaluate_energy(
      s.job,
      {s.run.step.breakdown, s.run.tokens_per_s_per_gpu, s.run.memory_bound_share, s.run.gpus},
      energy::Pricing::Tco, true);
  if (!e) {
    throw SpecError(path, 0, "cluster.platform",
                    "platform '" + s.job.cluster.platform.name + "' has no power: figures");
  }
  s.energy = *e;
  s.failures = run_with_failures(s.job, s.run.tokens_per_s_per_gpu);
  return s;
}

std::string num(double v, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

std::string interval(const energy::Estimate& e, double scale, int digits) {
  return num(e.mean * scale, digits) + " [" + num(e.ci95_low * scale, digits) + ", " +
         num(e.ci95_high * scale, digits) + "]";
}

void row(std::ostream& out, const std::string& label, const std::string& a, const std::string& b) {
  out << std::left << std::setw(30) << label << std::setw(34) << a << b << "\n";
}

void print_steady_state(std::ostream& out, const Side& a, const Side& b) {
  auto both = [&](const std::string& label, auto f) { row(out, label, f(a), f(b)); };
  both("job",
       [](const Side& s) { return std::filesystem::path(s.job.origin).filename().string(); });
  both("GPUs", [](const Side& s) {
    return std::to_string(s.run.gpus) + " x " + s.job.cluster.platform.gpu.name;
  });
  // The memory model's verdict: a comparison whose job does not fit is not one to buy on.
  both("memory/GPU (GiB)", [](const Side& s) {
    if (!s.run.memory) return std::string("n/a");
    const auto& m = *s.run.memory;
    return num(m.peak_bytes / (1024.0 * 1024 * 1024), 1) + " of " +
           num(m.capacity_bytes / (1024.0 * 1024 * 1024), 1) + (m.fits ? "" : " DOES NOT FIT");
  });
  both("step time (s)", [](const Side& s) { return num(s.run.step.step_time_s, 3); });
  both("MFU", [](const Side& s) { return num(100 * s.run.mfu, 1) + "%"; });
  both("tokens/s/GPU", [](const Side& s) { return num(s.run.tokens_per_s_per_gpu, 1); });
  both("power/GPU all-in (W)",
       [](const Side& s) { return num(s.energy.activity_power.facility_w(), 0); });
  both("  GPU / host / network+NVSw", [](const Side& s) {
    const auto& p = s.energy.activity_power;
    return num(p.gpu_w, 0) + " / " + num(p.host_w, 0) + " / " +
           num(p.network_w + p.nvswitch_w + p.nic_w, 0);
  });
  both("power/GPU provisioned (W)",
       [](const Side& s) { return num(s.energy.provisioned.facility_w(), 0); });
  both("J/token (provisioned)", [](const Side& s) {
    return num(s.energy.energy.joules_per_token, 2) + " (" +
           num(s.energy.energy_provisioned.joules_per_token, 2) + ")";
  });
  both("TCO $/GPU-h (capex+power)", [](const Side& s) {
    const auto& c = s.energy.gpu_hour;
    return num(c.total(), 3) + " (" + num(c.capex, 3) + "+" + num(c.electricity, 3) + ")";
  });
  both("$ per million tokens",
       [](const Side& s) { return num(s.energy.cost.usd_per_million_tokens, 3); });
  both("perf/TCO (M tokens per $)", [](const Side& s) { return num(s.tokens_per_usd() / 1e6, 3); });
}

void print_with_failures(std::ostream& out, const Side& a, const Side& b) {
  auto both = [&](const std::string& label, auto f) { row(out, label, f(a), f(b)); };
  both("tokens to train",
       [](const Side& s) { return num(s.job.energy.train_tokens / 1e12, 2) + "e12"; });
  both("job MTBF (h)",
       [](const Side& s) { return num(s.failures.reliability.system_mtbf_s / 3600, 2); });
  both("checkpoint every (min)", [](const Side& s) {
    return num(s.failures.reliability.checkpoint_interval_s / 60, 1) + " (write " +
           num(s.failures.reliability.checkpoint_write_s, 1) + " s)";
  });
  both("failure-free time (days)",
       [](const Side& s) { return num(s.failures.shape.work_s / 86400, 1); });
  both("time to train (days) [95% CI]",
       [](const Side& s) { return interval(s.failures.reliability.wall_s, 1 / 86400.0, 1); });
  both("interruptions",
       [](const Side& s) { return num(s.failures.reliability.failures.mean, 0); });
  both("goodput [95% CI]",
       [](const Side& s) { return interval(s.failures.reliability.goodput, 100, 2); });
  both("cost to train ($M)", [](const Side& s) {
    const double wall_s = s.failures.reliability.wall_s.mean;
    return significant_number(wall_s * s.run.gpus * s.energy.gpu_hour.total() / 3600 / 1e6, 3);
  });
  both("perf/TCO with failures",
       [](const Side& s) { return num(s.tokens_per_usd_with_failures() / 1e6, 3); });
}

// B's perf-per-TCO advantage over A with failures, when B's (or A's) domains fail every mtbf_h.
double ratio_at_domain_mtbf(const Side& a, const Side& b, double mtbf_h, int trials) {
  auto goodput = [&](const Side& s) {
    if (!has_multi_node_domains(s.job.cluster.platform)) return s.failures.reliability.goodput.mean;
    auto in = reliability_inputs(s.job, mtbf_h);
    in.trials = trials;
    return energy::simulate_run(in, s.failures.shape).goodput.mean;
  };
  return b.tokens_per_usd() * goodput(b) / (a.tokens_per_usd() * goodput(a));
}

// The speeds of B over A at which B's perf/TCO equals A's, without and with failures.
struct BreakEven {
  double speed = 0.0;
  double speed_with_failures = 0.0;
};

BreakEven print_break_even(std::ostream& out, const Side& a, const Side& b, nlohmann::ordered_json& j) {
  const double speed = b.run.tokens_per_s_per_gpu / a.run.tokens_per_s_per_gpu;
  const double ratio = b.tokens_per_usd() / a.tokens_per_usd();
  const double ratio_f = b.tokens_per_usd_with_failures() / a.tokens_per_usd_with_failures();
  const double tco_ratio = b.energy.gpu_hour.total() / a.energy.gpu_hour.total();
  out << "\nB vs A: TCO per GPU-hour x" << num(tco_ratio, 2) << ", speed per GPU x" << num(speed, 2)
      << ", perf/TCO x" << num(ratio, 2) << " (x" << num(ratio_f, 2) << " with failures)\n";
  // The speed at which B's perf/TCO equals A's: B wins above it, loses below.
  if (ratio >= 1.0) {
    out << "B stops winning per TCO below a speed of x" << num(speed / ratio, 2) << " A's (x"
        << num(speed / ratio_f, 2) << " with failures)\n";
  } else {
    out << "B does not win per TCO here; it would from a speed of x" << num(speed / ratio, 2)
        << " A's (x" << num(speed / ratio_f, 2) << " with failures)\n";
  }
  j["tco_per_gpu_hour_ratio"] = tco_ratio;
  j["speed_ratio"] = speed;
  j["perf_per_tco_ratio"] = ratio;
  j["perf_per_tco_ratio_with_failures"] = ratio_f;
  j["break_even_speed_ratio"] = speed / ratio;
  j["break_even_speed_ratio_with_failures"] = speed / ratio_f;
  return {speed / ratio, speed / ratio_f};
}

void print_domain_sweep(std::ostream& out, const Side& a, const Side& b,
                        nlohmann::ordered_json& j) {
  if (!has_multi_node_domains(a.job.cluster.platform) &&
      !has_multi_node_domains(b.job.cluster.platform))
    return;
  const int trials = std::min(b.job.reliability.trials, 300);
  out << "\nNVLink-domain (rack) MTBF sweep, " << trials
      << " runs each: perf/TCO B/A with failures\n";
  nlohmann::ordered_json sweep = nlohmann::ordered_json::array();
  for (double mtbf : {300.0, 1e3, 3e3, 1e4, 3e4, 1e5, 1e6}) {
    const double r = ratio_at_domain_mtbf(a, b, mtbf, trials);
    out << "  " << std::setw(9) << num(mtbf, 0) << " h   x" << num(r, 3) << "\n";
    sweep.push_back({{"domain_mtbf_h", mtbf}, {"perf_per_tco_ratio", r}});
  }
  j["domain_mtbf_sweep"] = sweep;
  double lo = std::log10(10.0), hi = std::log10(1e7);
  const double r_lo = ratio_at_domain_mtbf(a, b, std::pow(10, lo), trials) - 1;
  const double r_hi = ratio_at_domain_mtbf(a, b, std::pow(10, hi), trials) - 1;
  if ((r_lo < 0) == (r_hi < 0)) {
    out << "break-even domain MTBF: none between 10 h and 1e7 h\n";
    j["break_even_domain_mtbf_h"] = nullptr;
    return;
  }
  for (int i = 0; i < 30; ++i) {
    const double mid = (lo + hi) / 2;
    const bool below = ratio_at_domain_mtbf(a, b, std::pow(10, mid), trials) - 1 < 0;
    ((below == (r_lo < 0)) ? lo : hi) = mid;
  }
  out << "break-even domain MTBF: " << num(std::pow(10, (lo + hi) / 2), 0) << " h per rack\n";
  j["break_even_domain_mtbf_h"] = std::pow(10, (lo + hi) / 2);
}

// B's speed per GPU over A's with each side at either end of its stated kernel-cost uncertainty
// (run --uncertainty), against the break-even speed at the nominal TCO per GPU-hour.
void print_speed_band(std::ostream& out, const Side& a, const Side& b, const std::string& replicas,
                      const BreakEven& even_at, nlohmann::ordered_json& j) {
  auto band = [&](const Side& s) {
    SimulateOptions options = options_from_job(s.job);
    if (!replicas.empty()) override_replicas(options, replicas);
    return simulate_band(s.job, options);
  };
  const UncertaintyBand ua = band(a), ub = band(b);
  const double lo = ub.slow.tokens_per_s_per_gpu / ua.fast.tokens_per_s_per_gpu;
  const double hi = ub.fast.tokens_per_s_per_gpu / ua.slow.tokens_per_s_per_gpu;
  const double even = even_at.speed, even_f = even_at.speed_with_failures;
  auto verdict = [&](double x) {
    return x < lo ? "B wins across it" : x > hi ? "B loses across it" : "inside it: not decided";
  };
  out << "\nwith each side at either end of its stated uncertainty (docs/cost-model.md): speed per "
         "GPU x"
      << num(lo, 2) << "-x" << num(hi, 2) << "; break-even x" << num(even, 2) << ", "
      << verdict(even) << " (x" << num(even_f, 2) << " with failures, " << verdict(even_f)
      << ")\n  A: " << ua.bounds << "\n  B: " << ub.bounds << "\n";
  j["speed_ratio_band"] = {lo, hi};
}

nlohmann::ordered_json side_json(const Side& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(report_json(s.run));
  add_energy_json(j, s.energy);  // the TCO-priced evaluation replaces run's default pricing
  j["reliability"] = reliability_json(s.failures);
  return j;
}

int tco_command(const TcoArgs& args) {
  check_output_paths({{"--json", args.json}}, {args.a, args.b});
  // Both jobs' reliability inputs before either simulation, which may take minutes.
  Job job_a = load_job(args.a), job_b = load_job(args.b);
  // tco always runs with failures: a rack-scale job needs its domain MTBF, section or not.
  for (const Job* job : {&job_a, &job_b}) (void)reliability_inputs(*job);
  const Side a = evaluate(std::move(job_a), args.replicas);
  const Side b = evaluate(std::move(job_b), args.replicas);
  std::ostringstream out;
  row(out, "", "A", "B");
  print_steady_state(out, a, b);
  out << "\nwith failures (Monte-Carlo, " << a.failures.reliability.trials << " / "
      << b.failures.reliability.trials
      << " runs, seeds " << a.job.reliability.seed << " / " << b.job.reliability.seed << ")\n";
  print_with_failures(out, a, b);
  nlohmann::ordered_json cmp;
  const BreakEven even = print_break_even(out, a, b, cmp);
  for (const auto& [side, label] : {std::pair{&a, "A"}, std::pair{&b, "B"}}) {
    for (const auto& note : side->run.accuracy_notes) out << "accuracy " << label << "    " << note << "\n";
  }
  if (args.uncertainty) print_speed_band(out, a, b, args.replicas, even, cmp);
  print_domain_sweep(out, a, b, cmp);
  std::cout << out.str();
  if (!args.json.empty()) {
    nlohmann::ordered_json j = {{"a", side_json(a)}, {"b", side_json(b)}, {"comparison", cmp}};
    write_text_file(args.json, j.dump(2) + "\n");
  }
  // As `run` refuses such a job (exit 3), a comparison with one is reported but not passed.
  bool fits = true;
  for (const Side* s : {&a, &b}) {
    if (s->run.memory && !s->run.memory->fits) {
      std::cerr << "error: " << s->job.origin << " does not fit in GPU memory (memory/GPU above; "
                << "clustersim memory " << s->job.origin << " says where it goes)\n";
      fits = false;
    }
  }
  return fits ? 0 : kExitOutOfMemory;
}

}  // namespace

void register_tco_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<TcoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tco",
      "Compare two jobs per TCO dollar: throughput, power, J/token, $/M tokens, then the "
      "same with failures and where B stops winning (docs/energy.md)");
  cmd->add_option("a", args->a, "Job A (YAML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("b", args->b, "Job B (YAML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--json", args->json, "Also write both reports and the comparison as JSON");
  cmd->add_option("--replicas", args->replicas,
                  "Replica reduction, as for `run` (overrides the jobs' simulation.replicas)")
      ->check(CLI::IsMember({"auto", "full", "identical"}));
  cmd->add_flag("--uncertainty", args->uncertainty,
                "Also simulate each job at both ends of its cost model's stated uncertainty and "
                "say whether the break-even speed lies inside B's speed range over A "
                "(docs/energy.md; 3x the simulation time)");
  cmd->callback([args, &exit_code] { exit_code = run_guarded([&] { return tco_command(*args); }); });
}

}  // namespace clustersim::tools
