// Runs `clustersim validate` on the shipped reference set and reads its --json report: shared by
// the validation target (test_validation.cpp, label `reference`) and the regression guard of the
// green suite (test_validation_guard.cpp).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

namespace clustersim::test {

/// Exit status of `cmd` (stderr folded into `output`), or -1 if it did not exit normally.
inline int run_command(const std::string& cmd, std::string& output) {
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), static_cast<int>(buf.size()), pipe) != nullptr) output += buf.data();
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The JSON report of `clustersim validate REFERENCE_FILE -j 2` (its table echoed to stdout, its
/// not-simulated points as SKIPPED lines), written under `name` in the test's temp directory.
/// `max_gpus` > 0 skips points above that many GPUs. Fails the calling test (ADD_FAILURE) and
/// returns null if validate did not run or wrote no JSON.
inline nlohmann::json validate_reference_set(const std::string& name, int max_gpus) {
  const std::string json = ::testing::TempDir() + "/" + name + ".json";
  std::string cmd = std::string(CLUSTERSIM_BIN) + " validate " + REFERENCE_FILE +
                    " -j 2 --json " + json;
  if (max_gpus > 0) cmd += " --max-gpus " + std::to_string(max_gpus);
  std::string output;
  const int rc = run_command(cmd, output);
  std::cout << output;
  if (rc != 0 && rc != 1) {
    ADD_FAILURE() << "validate failed to run (exit " << rc << ")";
    return nullptr;
  }
  std::ifstream in(json);
  if (!in) {
    ADD_FAILURE() << "no JSON written to " << json;
    return nullptr;
  }
  auto j = nlohmann::json::parse(in);
  for (const auto& s : j["not_simulated"]) {
    std::cout << "SKIPPED " << s["id"].get<std::string>() << " @ " << s["gpus"] << " GPUs: "
              << s["reason"].get<std::string>() << "\n";
  }
  return j;
}

}  // namespace clustersim::test
