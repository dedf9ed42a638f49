// Runs the clustersim binary of the build (CLUSTERSIM_BIN, a compile definition of the test
// target) as a user would, capturing its exit code and its stdout and stderr together.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
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

/// A scratch file path in the test's temporary directory. It carries the test process's id, so
/// two build trees testing on one machine at once never read each other's outputs.
inline std::string scratch(const std::string& name) {
  return ::testing::TempDir() + "/clustersim-" + std::to_string(::getpid()) + "-" + name;
}

/// The whole text of a file ("" when it cannot be read).
inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The JSON document in a file. @throws nlohmann::json::parse_error when it holds none.
inline nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(slurp(path)); }

#ifdef TEST_DATA_DIR
/// A file of the test target's data directory (TEST_DATA_DIR, a compile definition).
inline std::string data(const std::string& name) { return std::string(TEST_DATA_DIR) + "/" + name; }
#endif

}  // namespace clustersim::cli_test
