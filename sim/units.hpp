// Physical quantities used across clustersim, with the parsers that turn YAML strings
// such as "400Gbps", "450GB/s", "2us", "80GiB", "989TFLOPS" or "700W" into them.
// Units are parsed once, at the input boundary; everything inside works in SI base units.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace clustersim {

/// Thrown by the unit parsers when a string is not a valid quantity of the requested kind.
/// what() is a short reason ("unknown unit 'Gbs' (expected one of: bps, Kbps, ...)").
class UnitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A number of bytes (double: sizes above 2^53 are not needed, fractional bytes appear in shares).
struct Bytes {
  double value = 0.0;
};
/// A duration in seconds.
struct Seconds {
  double value = 0.0;
};
/// A bandwidth in bytes per second.
struct BytesPerSecond {
  double value = 0.0;
};
/// A compute rate in floating-point operations per second.
struct FlopsPerSecond {
  double value = 0.0;
};
/// A power in watts.
struct Watts {
  double value = 0.0;
};

/// Parses a size: "80GiB", "141GB", "4KiB", "512B". Decimal (kB, MB, GB, TB) and binary
/// (KiB, MiB, GiB, TiB) prefixes. @throws UnitError on a malformed or negative value.
Bytes parse_bytes(std::string_view text);
/// Parses a bandwidth: bits per second ("400Gbps", "100Mbps") or bytes per second ("450GB/s",
/// "4.8TB/s", "3.35TBps"); decimal prefixes only, as datasheets use them. @throws UnitError.
BytesPerSecond parse_bandwidth(std::string_view text);
/// Parses a duration: "2us", "1.5ms", "300ns", "10s", "1h", "30min". @throws UnitError.
Seconds parse_duration(std::string_view text);
/// Parses a compute rate: "989TFLOPS", "1.979PFLOPS", "500GFLOPS". @throws UnitError.
FlopsPerSecond parse_flops(std::string_view text);
/// Parses a power: "700W", "1.2kW". @throws UnitError.
Watts parse_power(std::string_view text);

/// Formats seconds with an adapted unit ("12.3 ms", "4.56 s"), for human-readable reports.
std::string format_seconds(double seconds);
/// Formats bytes with a binary prefix ("78.2 GiB").
std::string format_bytes(double bytes);
/// A count and its noun, singular for exactly one: count_noun(1, "node", "nodes") is "1 node",
/// count_noun(2, "node", "nodes") "2 nodes".
std::string count_noun(long long count, std::string_view singular, std::string_view plural);

}  // namespace clustersim
