// Subcommands of the clustersim CLI. Each registers itself on the CLI11 app and, when run,
// stores its process exit code in `exit_code` (0 ok, 1 simulation/runtime failure, 2 bad input;
// `run` also 3: the job does not fit in GPU memory, not simulated).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace clustersim::tools {

/// Runs a subcommand body and maps its outcome to the CLI's exit codes: its return value, 2
/// for SpecError (bad input, "error: FILE:LINE: FIELD: REASON" on stderr), 1 for any other
/// exception. Never lets an exception escape.
int run_guarded(const std::function<int()>& body);
/// As run_guarded, but std::invalid_argument (a bad option value or job variant) also maps to 2.
int run_guarded_usage(const std::function<int()>& body);

/// Accepts a plain decimal integer only: the option parser would read a leading zero as octal
/// ("010" is 8) and "0x10" as hex. For integer options and each element of an integer list.
const CLI::Validator& decimal_integer();
/// Accepts a comma-separated list of plain decimal integers from `min` to `max` with every item
/// present: "64,,128", ",64" and "64," are refused (CLI11's delimiter would drop the empty item
/// silently). For list options that keep the raw text; parse_integer_list reads it afterwards.
CLI::Validator decimal_integer_list(std::int64_t min, std::int64_t max);
/// The integers of list arguments decimal_integer_list accepted, in order ("64,128" "256":
/// 64, 128, 256). @throws std::invalid_argument on an item that is not an integer.
std::vector<std::int64_t> parse_integer_list(const std::vector<std::string>& raw);

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
/// `clustersim tco A.yaml B.yaml [--json FILE] [--replicas MODE]`
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
