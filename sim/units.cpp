#include "sim/units.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

namespace clustersim {
namespace {

struct Suffix {
  std::string_view name;
  double factor;
};

// A number that starts the text but is no finite double ("1e400Gbps"), or whose value in the
// unit's base is not ("2e300Gbps").
UnitError out_of_range(std::string_view text) {
  return UnitError("'" + std::string(text) + "': the number is too large or too small to represent");
}

// Splits "12.5GiB" into 12.5 and "GiB". Leading/trailing spaces are allowed.
std::pair<double, std::string_view> split_number(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  double value = 0.0;
  const auto* begin = text.data();
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec == std::errc::result_out_of_range) {  // "1e400Gbps" starts with a number, just not a double
    throw out_of_range(text);
  }
  if (ec != std::errc() || ptr == begin) {
    throw UnitError("'" + std::string(text) + "' does not start with a number");
  }
  if (!std::isfinite(value) || value < 0.0) {
    throw UnitError("'" + std::string(text) + "' must be a finite, non-negative quantity");
  }
  std::string_view unit(ptr, static_cast<size_t>(end - ptr));
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  return {value, unit};
}

template <size_t N>
double parse_with(std::string_view text, const std::array<Suffix, N>& suffixes, const char* kind) {
  auto [value, unit] = split_number(text);
  for (const auto& s : suffixes) {
    if (unit == s.name) {
      const double scaled = value * s.factor;  // "2e300Gbps" is finite, its bytes/s are not
      if (!std::isfinite(scaled)) {
        throw out_of_range(text);
      }
      return scaled;
    }
  }
  std::string expected;
  for (const auto& s : suffixes) {
    if (!expected.empty()) expected += ", ";
    expected += s.name;
  }
  throw UnitError("'" + std::string(text) + "' is not a " + kind + " (unit '" + std::string(unit) +
                  "'; expected one of: " + expected + ")");
}

constexpr double kK = 1e3, kM = 1e6, kG = 1e9, kT = 1e12, kP = 1e15;
constexpr double kKi = 1024.0, kMi = kKi * 1024.0, kGi = kMi * 1024.0, kTi = kGi * 1024.0;

}  // namespace

Bytes parse_bytes(std::string_view text) {
  static constexpr std::array<Suffix, 10> kSuffixes{{{"B", 1.0},
                                                     {"kB", kK},
                                                     {"KB", kK},
                                                     {"MB", kM},
                                                     {"GB", kG},
                                                     {"TB", kT},
                                                     {"KiB", kKi},
                                                     {"MiB", kMi},
                                                     {"GiB", kGi},
                                                     {"TiB", kTi}}};
  return Bytes{parse_with(text, kSuffixes, "size")};
}

BytesPerSecond parse_bandwidth(std::string_view text) {
  static constexpr std::array<Suffix, 15> kSuffixes{{{"bps", 1.0 / 8},
                                                     {"Kbps", kK / 8},
                                                     {"Mbps", kM / 8},
                                                     {"Gbps", kG / 8},
                                                     {"Tbps", kT / 8},
                                                     {"B/s", 1.0},
                                                     {"kB/s", kK},
                                                     {"MB/s", kM},
                                                     {"GB/s", kG},
                                                     {"TB/s", kT},
                                                     {"Bps", 1.0},
                                                     {"kBps", kK},
                                                     {"MBps", kM},
                                                     {"GBps", kG},
                                                     {"TBps", kT}}};
  return BytesPerSecond{parse_with(text, kSuffixes, "bandwidth")};
}

Seconds parse_duration(std::string_view text) {
  static constexpr std::array<Suffix, 7> kSuffixes{{{"ns", 1e-9},
                                                    {"us", 1e-6},
                                                    {"ms", 1e-3},
                                                    {"s", 1.0},
                                                    {"min", 60.0},
                                                    {"h", 3600.0},
                                                    {"d", 86400.0}}};
  return Seconds{parse_with(text, kSuffixes, "duration")};
}

FlopsPerSecond parse_flops(std::string_view text) {
  static constexpr std::array<Suffix, 5> kSuffixes{
      {{"FLOPS", 1.0}, {"GFLOPS", kG}, {"TFLOPS", kT}, {"PFLOPS", kP}, {"MFLOPS", kM}}};
  return FlopsPerSecond{parse_with(text, kSuffixes, "compute rate")};
}

Watts parse_power(std::string_view text) {
  static constexpr std::array<Suffix, 3> kSuffixes{{{"W", 1.0}, {"kW", kK}, {"MW", kM}}};
  return Watts{parse_with(text, kSuffixes, "power")};
}

std::string format_seconds(double seconds) {
  char buf[64];
  if (seconds >= 1.0) {
    std::snprintf(buf, sizeof buf, "%.3f s", seconds);
  } else if (seconds >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f us", seconds * 1e6);
  }
  return buf;
}

std::string format_bytes(double bytes) {
  char buf[64];
  if (bytes >= kGi) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / kGi);
  } else if (bytes >= kMi) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / kMi);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  }
  return buf;
}

std::string count_noun(long long count, std::string_view singular, std::string_view plural) {
  return std::to_string(count) + " " + std::string(count == 1 ? singular : plural);
}

}  // namespace clustersim
