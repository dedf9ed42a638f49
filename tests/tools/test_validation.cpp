// The validation target (ctest label `validation`): every point of tests/validation/measured.yaml
// through `clustersim validate`; fails if the mean absolute error over the simulated points
// exceeds 5% or any point exceeds 12% (issue 7). Points that cannot be simulated yet are listed
// as skipped with their reason; points above VALIDATION_MAX_GPUS are skipped for CI time and
// say so. No threshold is loosened and nothing is fitted here.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

namespace {

constexpr double kMeanThreshold = 0.05;
constexpr double kPointThreshold = 0.12;

int run(const std::string& cmd, std::string& output) {
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), static_cast<int>(buf.size()), pipe) != nullptr) output += buf.data();
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(Validation, ReferenceSetWithinThresholds) {
  const std::string json = ::testing::TempDir() + "/validation.json";
  std::string cmd = std::string(CLUSTERSIM_BIN) + " validate " + REFERENCE_FILE + " -j 2 --json " + json;
  if (VALIDATION_MAX_GPUS > 0) cmd += " --max-gpus " + std::to_string(VALIDATION_MAX_GPUS);
  std::string output;
  const int rc = run(cmd, output);
  std::cout << output;
  ASSERT_TRUE(rc == 0 || rc == 1) << "validate failed to run (exit " << rc << ")";
  std::ifstream in(json);
  ASSERT_TRUE(in) << "no JSON written";
  const auto j = nlohmann::json::parse(in);
  for (const auto& s : j["not_simulated"]) {
    std::cout << "SKIPPED " << s["id"].get<std::string>() << " @ " << s["gpus"] << " GPUs: "
              << s["reason"].get<std::string>() << "\n";
  }
  if (j["cases"].empty()) GTEST_SKIP() << "no reference point could be simulated (see SKIPPED lines)";
  for (const auto& c : j["cases"]) {
    EXPECT_LE(std::fabs(c["rel_error"].get<double>()), kPointThreshold)
        << c["id"].get<std::string>() << " @ " << c["gpus"] << " GPUs: measured " << c["measured"]
        << ", simulated " << c["simulated"];
  }
  EXPECT_LE(j["mean_abs_error"].get<double>(), kMeanThreshold)
      << "mean absolute error over " << j["cases"].size() << " points";
}

}  // namespace
