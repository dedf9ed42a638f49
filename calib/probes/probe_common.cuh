// Shared helpers of the CUDA calibration probes: error checks, deterministic random data that
// the host can recompute for spot checks, CUDA-event timing with medians, GPU telemetry through
// NVML (opened with dlopen, so no NVML header or link-time library is needed) and CSV output
// with a provenance header. Probes are stand-alone programs; they print progress to stderr and
// write their tables to the file given by --out.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace probes {

/// Throws std::runtime_error naming the call site when a CUDA runtime call fails.
#define PROBE_CUDA(call)                                                                  \
  do {                                                                                    \
    cudaError_t err_ = (call);                                                            \
    if (err_ != cudaSuccess)                                                              \
      throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(err_) +     \
                               " at " + __FILE__ + ":" + std::to_string(__LINE__));       \
  } while (0)

/// Checks the last kernel launch.
#define PROBE_LAUNCH() PROBE_CUDA(cudaGetLastError())

// ---------------------------------------------------------------------------------------
// Deterministic random values: value(seed, i) in [-1, 1), identical on host and device.
// ---------------------------------------------------------------------------------------

/// SplitMix64 finaliser (Steele et al., "Fast splittable pseudorandom number generators").
__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Uniform value in [-1, 1) for element i of the stream `seed`.
__host__ __device__ inline float rand_val(std::uint64_t seed, std::uint64_t i) {
  const std::uint64_t r = mix64(seed * 0x100000001B3ull ^ mix64(i));
  return static_cast<float>(r >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

/// Rounds a float to the nearest bfloat16 (ties to even), as __float2bfloat16_rn does.
inline float host_bf16_round(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  u &= 0xFFFF0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Fills n bf16 values with rand_val(seed, i) * scale + offset.
void fill_bf16(__nv_bfloat16* p, std::size_t n, std::uint64_t seed, float scale = 1.0f,
               float offset = 0.0f, cudaStream_t s = nullptr);
/// Fills n floats with rand_val(seed, i) * scale + offset.
void fill_f32(float* p, std::size_t n, std::uint64_t seed, float scale = 1.0f,
              float offset = 0.0f, cudaStream_t s = nullptr);

// ---------------------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------------------

/// Median of a non-empty sample.
double median(std::vector<double> v);

/// Timing result of one configuration: median seconds per call and the sample count.
struct Timing {
  double median_s = 0.0;
  double min_s = 0.0;
  double max_s = 0.0;
  int samples = 0;
  int calls_per_sample = 0;
};

/// Enqueues a one-thread kernel on `stream` that spins for `cycles` SM clock cycles: work
/// queued behind it starts back to back once it ends, so events around that work time the GPU,
/// not the host's launch rate.
void launch_spin(cudaStream_t stream, long long cycles);
/// SM clock cycles in `seconds` at the current device's top clock.
long long spin_cycles(double seconds);

/// Times `launch` (which enqueues one call on `stream`) with CUDA events: warm-up calls, then
/// `samples` samples of `calls` back-to-back calls each, where `calls` is chosen so that a
/// sample lasts at least `min_sample_s`; the number of samples is reduced for slow calls so
/// that the whole measurement stays near `budget_s` (never below `min_samples`). Each sample's
/// calls are queued behind GPU work that outlasts the host's enqueuing, so host launch time is
/// not in the times: a one-thread spin (launch_spin), or, when `heater` is given, that many
/// calls of `heater` (e.g. a large GEMM that keeps the GPU at its sustained power state); the
/// spin or the number of heater calls doubles until the host got ahead.
Timing time_calls(cudaStream_t stream, const std::function<void(int)>& launch,
                  int max_samples = 21, int min_samples = 5, double min_sample_s = 5e-4,
                  double budget_s = 0.4, const std::function<void()>* heater = nullptr);

// ---------------------------------------------------------------------------------------
// Telemetry (NVML through dlopen; absent NVML gives empty readings, never an error)
// ---------------------------------------------------------------------------------------

/// One reading of a GPU's clocks, power and temperature.
struct Telemetry {
  bool valid = false;
  unsigned sm_mhz = 0, mem_mhz = 0, temp_c = 0;
  double power_w = 0.0;
  unsigned long long throttle = 0;  ///< NVML clocks-event-reason bit mask
};

/// Reads telemetry of the CUDA device `device`.
Telemetry read_telemetry(int device);
/// "sm=1980MHz mem=3201MHz power=120.5W temp=35C throttle=0x0".
std::string to_string(const Telemetry& t);

// ---------------------------------------------------------------------------------------
// CSV with provenance
// ---------------------------------------------------------------------------------------

/// Writes "# key: value" provenance lines, a header row, data rows and a trailing provenance
/// block (telemetry after the run). Values containing commas are not supported (not needed).
class CsvWriter {
 public:
  /// Opens `path` and writes the provenance of `probe` for the listed CUDA devices.
  CsvWriter(const std::string& path, const std::string& probe, const std::vector<int>& devices,
            int argc, char** argv, const std::map<std::string, std::string>& extra);
  ~CsvWriter();
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  /// Writes the column header row.
  void header(const std::vector<std::string>& columns);
  /// Writes one data row (flushed, so a killed probe leaves complete rows behind).
  void row(const std::vector<std::string>& cells);

 private:
  std::ofstream out_;
  std::vector<int> devices_;
};

/// Formats a double with `digits` significant digits.
std::string fmt(double v, int digits = 6);

/// Simple "--key value" argument reader; flags without a value read as "1".
class Args {
 public:
  Args(int argc, char** argv);
  std::string get(const std::string& key, const std::string& fallback) const;
  double num(const std::string& key, double fallback) const;
  bool has(const std::string& key) const { return values_.count(key) != 0; }

 private:
  std::map<std::string, std::string> values_;
};

/// Parses a comma-separated list of integers ("1024,2048").
std::vector<long long> parse_list(const std::string& text);
/// Splits a comma-separated list of names ("copy,gelu").
std::vector<std::string> parse_list_names(const std::string& text);

/// A probe's main(): runs `run`; an exception is reported as "NAME probe: what" on stderr and
/// gives exit status 1.
int probe_main(const char* name, int (*run)(int, char**), int argc, char** argv);

}  // namespace probes
