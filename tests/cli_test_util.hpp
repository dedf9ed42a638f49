// Runs the clustersim binary of the build (CLUSTERSIM_BIN, a compile definition of the test
// target) as a user would, capturing its exit code and its stdout and stderr together.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace clustersim::cli_test {

/// Exit code (-1 if the process did not exit normally) and stdout + stderr.
struct Result {
  int exit_code = -1;
  std::string output;
};

/// Runs `CLUSTERSIM_BIN args` through the shell.
inline Result run_cli(const std::string& args) {
  const std::string cmd = std::string(CLUSTERSIM_BIN) + " " + args + " 2>&1";
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), static_cast<int>(buf.size()), pipe) != nullptr) r.output += buf.data();
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace clustersim::cli_test
