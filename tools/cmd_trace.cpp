// `clustersim trace JOB.yaml --rank R --out FILE`: writes the op program of one rank as JSON
// lines (docs/trace-format.md), without simulating anything.
#include <iostream>
#include <memory>
#include <string>

#include "sim/spec_error.hpp"
#include "tools/commands.hpp"
#include "tools/job.hpp"
#include "workloads/generator.hpp"
#include "workloads/trace_io.hpp"

namespace clustersim::tools {
namespace {

struct TraceArgs {
  std::string job;
  int rank = 0;
  std::string out;
};

// Returns the process exit code: 0 written, 2 rank outside the job.
int trace_command(const TraceArgs& args) {
  check_output_paths({{"--out", args.out}}, {args.job});
  const Job job = load_job(args.job);
  const sim::Workload workload = workloads::generate_workload(job.workload);
  const int world = workload.layout.world();
  if (args.rank < 0 || args.rank >= world) {
    std::cerr << "error: --rank " << args.rank << " is outside the job's ranks [0, " << world
              << ")\n";
    return 2;
  }
  workloads::write_rank_trace_file(args.out, workload, args.rank);
  const auto stage = workload.layout.coord(args.rank, sim::GroupKind::PP);
  std::cout << "wrote " << workload.program(args.rank).ops.size() << " ops of rank " << args.rank
            << " (pipeline stage " << stage << ") of " << workload.description << " to "
            << args.out << "\n";
  return 0;
}

}  // namespace

void register_trace_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<TraceArgs>();
  CLI::App* cmd = app.add_subcommand(
      "trace", "Write the op program of one rank of a job as JSON lines (docs/trace-format.md)");
  cmd->add_option("job", args->job, "Job YAML (docs/job-spec.md)")->required();
  cmd->add_option("--rank", args->rank, "Rank whose program to write (0 .. GPUs-1)")
      ->required()
      ->check(decimal_integer());
  cmd->add_option("--out", args->out, "Output file (JSON lines)")->required();
  cmd->callback([args, &exit_code] {
    exit_code = run_guarded([&] { return trace_command(*args); });
  });
}

}  // namespace clustersim::tools
