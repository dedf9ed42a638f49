// Parallel worker processes for validate, scale and sweep. Each task runs in its own forked
// process (so each may host a SimGrid engine; simulate_job forks once more for the engine),
// at most `jobs` at a time; results come back in task order, whatever order they finish in.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace clustersim::tools {

/// What one task produced.
struct TaskResult {
  bool ok = false;     ///< the task returned (false: it threw or its process died)
  std::string output;  ///< the returned string, or the error message
  double cpu_s = 0.0;  ///< CPU time (user + system) of the worker and the processes it waited for
};

/// Called in the parent after each task completes: (tasks done, total).
using ProgressFn = std::function<void(std::size_t done, std::size_t total)>;

/// Runs every task in a forked worker process, `jobs` (>= 1) at a time, and returns their
/// results in task order. An exception in a task (or a crash of its process) becomes a result
/// with ok = false and the message. @throws std::runtime_error if fork or pipe fail.
std::vector<TaskResult> run_in_workers(const std::vector<std::function<std::string()>>& tasks,
                                       int jobs, const ProgressFn& progress = {});

/// The default worker count: the number of online CPUs (at least 1).
int default_worker_count();

}  // namespace clustersim::tools
