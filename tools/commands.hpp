// Subcommands of the clustersim CLI. Each registers itself on the CLI11 app and, when run,
// stores its process exit code in `exit_code` (0 ok, 1 simulation/runtime failure, 2 bad input;
// `run` and `tco` also 3: a job does not fit in GPU memory).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace clustersim::tools {

/// Exit code of `run` (before simulating) and `tco` (after reporting) when a job does not fit in
/// GPU memory by the memory model.
inline constexpr int kExitOutOfMemory = 3;

/// Runs a subcommand body and maps its outcome to the CLI's exit codes: its return value, 2
/// for SpecError (bad input, "error: FILE:LINE: FIELD: REASON" on stderr), 1 for any other
/// exception. Never lets an exception escape.
int run_guarded(const std::function<int()>& body);
/// As run_guarded, but std::invalid_argument (a bad option value or job variant) also maps to 2.
int run_guarded_usage(const std::function<int()>& body);

/// Accepts a plain decimal integer only: the option parser would read a leading zero as octal
/// ("010" is 8) and "0x10" as hex. For integer options and each element of an integer list.
const CLI::Validator& decimal_integer();
/// Accepts a finite real number: CLI11's Range lets "nan" through (every comparison with it is
/// false). For real-valued options, before their range.
const CLI::Validator& finite_number();
/// Accepts a comma-separated list of plain decimal integers from `min` to `max` with every item
/// present: "64,,128", ",64" and "64," are refused (CLI11's delimiter would drop the empty item
/// silently). For list options that keep the raw text; parse_integer_list reads it afterwards.
CLI::Validator decimal_integer_list(std::int64_t min, std::int64_t max);
/// The integers of list arguments decimal_integer_list accepted, in order ("64,128" "256":
/// 64, 128, 256). @throws std::invalid_argument on an item that is not an integer.
std::vector<std::int64_t> parse_integer_list(const std::vector<std::string>& raw);

/// Refuses an output file that is one of the command's inputs or another of its outputs: a
/// mistyped `--csv job.yaml` must not overwrite the job. `outputs`: (option, path) pairs;
/// `inputs`: the files the command reads (names that are not files are skipped). Empty paths are
/// skipped; paths are compared as files (`./a.yaml` is `a.yaml`). @throws SpecError at
/// "<command line>", field the option, naming the path.
void check_output_paths(const std::vector<std::pair<std::string, std::string>>& outputs,
                        const std::vector<std::string>& inputs);

/// `clustersim run [JOB.yaml] [--json FILE] [--trace FILE] [--ignore-oom]`: stops with exit
/// code 3 before simulating when the memory model says the job does not fit
void register_run_command(CLI::App& app, int& exit_code);
/// `clustersim calib check [--data DIR] [--json FILE]`: leave-one-out accuracy of the measured
/// cost model per table (docs/calibration.md); exit 0 whether or not the goal is met
void register_calib_command(CLI::App& app, int& exit_code);
/// `clustersim platform show NAME --gpus N [--xml FILE]`
void register_platform_command(CLI::App& app, int& exit_code);
/// `clustersim trace JOB.yaml --rank R --out FILE`
void register_trace_command(CLI::App& app, int& exit_code);
/// `clustersim tco A.yaml B.yaml [--json FILE] [--replicas MODE]`: exit 3 after the comparison
/// when either job does not fit in GPU memory
void register_tco_command(CLI::App& app, int& exit_code);
/// `clustersim memory JOB.yaml [--json FILE]`
void register_memory_command(CLI::App& app, int& exit_code);
/// `clustersim validate [FILE] [--json FILE] [-j N]`: measured vs simulated (docs/validation.md)
void register_validate_command(CLI::App& app, int& exit_code);
/// `clustersim scale JOB.yaml --gpus 64,128,... --mode weak|strong`: CSV and SVG of a scaling study
void register_scale_command(CLI::App& app, int& exit_code);
/// `clustersim sweep JOB.yaml --gpus N --space ...` and `clustersim sweep merge`: ranked configs
void register_sweep_command(CLI::App& app, int& exit_code);

}  // namespace clustersim::tools
