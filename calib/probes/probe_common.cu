// Implementation of the probes' shared helpers (see probe_common.cuh).
#include "probe_common.cuh"

#include <iostream>

#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <sstream>

namespace probes {

namespace {

__global__ void fill_bf16_kernel(__nv_bfloat16* p, std::size_t n, std::uint64_t seed, float scale,
                                 float offset) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16_rn(rand_val(seed, i) * scale + offset);
}

__global__ void fill_f32_kernel(float* p, std::size_t n, std::uint64_t seed, float scale,
                                float offset) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = rand_val(seed, i) * scale + offset;
}

__global__ void spin_kernel(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

unsigned fill_blocks(std::size_t n) {
  return static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 132 * 16));
}

// Minimal NVML ABI (nvml.h is not part of every CUDA install): return codes are ints, handles
// opaque pointers. Names and signatures are those of NVML's public C API.
using NvmlDevice = void*;
struct Nvml {
  bool ok = false;
  int (*init)() = nullptr;
  int (*by_pci)(const char*, NvmlDevice*) = nullptr;
  int (*clock)(NvmlDevice, int, unsigned*) = nullptr;
  int (*power)(NvmlDevice, unsigned*) = nullptr;
  int (*temp)(NvmlDevice, int, unsigned*) = nullptr;
  int (*reasons)(NvmlDevice, unsigned long long*) = nullptr;
  int (*driver)(char*, unsigned) = nullptr;
};

template <typename F>
void load_sym(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

Nvml& nvml() {
  static Nvml n = [] {
    Nvml r;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (lib == nullptr) return r;
    load_sym(lib, "nvmlInit_v2", r.init);
    load_sym(lib, "nvmlDeviceGetHandleByPciBusId_v2", r.by_pci);
    load_sym(lib, "nvmlDeviceGetClockInfo", r.clock);
    load_sym(lib, "nvmlDeviceGetPowerUsage", r.power);
    load_sym(lib, "nvmlDeviceGetTemperature", r.temp);
    load_sym(lib, "nvmlDeviceGetCurrentClocksEventReasons", r.reasons);
    if (r.reasons == nullptr) load_sym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", r.reasons);
    load_sym(lib, "nvmlSystemGetDriverVersion", r.driver);
    r.ok = r.init != nullptr && r.by_pci != nullptr && r.clock != nullptr && r.init() == 0;
    return r;
  }();
  return n;
}

std::string driver_version() {
  char buf[96] = {0};
  if (nvml().ok && nvml().driver != nullptr && nvml().driver(buf, sizeof buf) == 0) return buf;
  return "unknown";
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

void fill_bf16(__nv_bfloat16* p, std::size_t n, std::uint64_t seed, float scale, float offset,
               cudaStream_t s) {
  fill_bf16_kernel<<<fill_blocks(n), 256, 0, s>>>(p, n, seed, scale, offset);
  PROBE_LAUNCH();
}

void fill_f32(float* p, std::size_t n, std::uint64_t seed, float scale, float offset,
              cudaStream_t s) {
  fill_f32_kernel<<<fill_blocks(n), 256, 0, s>>>(p, n, seed, scale, offset);
  PROBE_LAUNCH();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void launch_spin(cudaStream_t stream, long long cycles) {
  spin_kernel<<<1, 1, 0, stream>>>(cycles);
  PROBE_CUDA(cudaGetLastError());
}

long long spin_cycles(double seconds) {
  int device = 0, khz = 0;
  PROBE_CUDA(cudaGetDevice(&device));
  PROBE_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
  return static_cast<long long>(seconds * khz * 1e3);
}

Timing time_calls(cudaStream_t stream, const std::function<void(int)>& launch, int max_samples,
                  int min_samples, double min_sample_s, double budget_s,
                  const std::function<void()>* heater) {
  cudaEvent_t a, b, spun;
  PROBE_CUDA(cudaEventCreate(&a));
  PROBE_CUDA(cudaEventCreate(&b));
  PROBE_CUDA(cudaEventCreate(&spun));
  int counter = 0;
  long long spin = spin_cycles(5e-4);
  int heats = 1;
  auto run = [&](int calls) {
    for (;;) {
      if (heater != nullptr) {
        for (int i = 0; i < heats; ++i) (*heater)();
      } else {
        launch_spin(stream, spin);
      }
      PROBE_CUDA(cudaEventRecord(spun, stream));
      PROBE_CUDA(cudaEventRecord(a, stream));
      for (int i = 0; i < calls; ++i) launch(counter++);
      PROBE_CUDA(cudaEventRecord(b, stream));
      const cudaError_t q = cudaEventQuery(spun);
      if (q != cudaSuccess && q != cudaErrorNotReady) PROBE_CUDA(q);
      (void)cudaGetLastError();
      PROBE_CUDA(cudaEventSynchronize(b));
      float ms = 0.0f;
      PROBE_CUDA(cudaEventElapsedTime(&ms, a, b));
      // Done once the host enqueued every call before the spin ended (or the spin is ~1 s).
      if (q == cudaErrorNotReady || spin > (1LL << 31) || heats > 256) return ms * 1e-3 / calls;
      if (heater != nullptr) heats *= 2; else spin *= 2;
    }
  };
  run(1);                          // warm-up: first call (handles, caches, clocks)
  double est = run(2);             // second warm-up doubles as the estimate
  int calls = std::max(1, static_cast<int>(std::ceil(min_sample_s / std::max(est, 1e-7))));
  calls = std::min(calls, 2000);
  int samples = static_cast<int>(budget_s / std::max(est * calls, 1e-9));
  samples = std::clamp(samples, min_samples, max_samples);
  std::vector<double> t;
  for (int i = 0; i < samples; ++i) t.push_back(run(calls));
  PROBE_CUDA(cudaEventDestroy(a));
  PROBE_CUDA(cudaEventDestroy(b));
  PROBE_CUDA(cudaEventDestroy(spun));
  Timing r;
  r.median_s = median(t);
  r.min_s = *std::min_element(t.begin(), t.end());
  r.max_s = *std::max_element(t.begin(), t.end());
  r.samples = samples;
  r.calls_per_sample = calls;
  return r;
}

Telemetry read_telemetry(int device) {
  Telemetry t;
  Nvml& n = nvml();
  if (!n.ok) return t;
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess) return t;
  NvmlDevice h = nullptr;
  if (n.by_pci(bus, &h) != 0) return t;
  unsigned mw = 0;
  t.valid = n.clock(h, 1, &t.sm_mhz) == 0;  // NVML_CLOCK_SM = 1
  n.clock(h, 2, &t.mem_mhz);                // NVML_CLOCK_MEM = 2
  if (n.power != nullptr && n.power(h, &mw) == 0) t.power_w = mw * 1e-3;
  if (n.temp != nullptr) n.temp(h, 0, &t.temp_c);  // NVML_TEMPERATURE_GPU = 0
  if (n.reasons != nullptr) n.reasons(h, &t.throttle);
  return t;
}

std::string to_string(const Telemetry& t) {
  if (!t.valid) return "unavailable";
  std::ostringstream s;
  s << "sm=" << t.sm_mhz << "MHz mem=" << t.mem_mhz << "MHz power=" << fmt(t.power_w, 4)
    << "W temp=" << t.temp_c << "C clock_event_reasons=0x" << std::hex << t.throttle;
  return s.str();
}

std::string fmt(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

CsvWriter::CsvWriter(const std::string& path, const std::string& probe,
                     const std::vector<int>& devices, int argc, char** argv,
                     const std::map<std::string, std::string>& extra)
    : out_(path), devices_(devices) {
  if (!out_) throw std::runtime_error("cannot open " + path);
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  char host[128] = {0};
  gethostname(host, sizeof host - 1);
  out_ << "# probe: " << probe << "\n# date_utc: " << utc_now() << "\n# host: " << host
       << "\n# driver: " << driver_version() << " (CUDA driver API " << drv << ")"
       << "\n# cuda_runtime: " << rt << "\n";
  for (int d : devices_) {
    cudaDeviceProp p{};
    PROBE_CUDA(cudaGetDeviceProperties(&p, d));
    char bus[32] = {0};
    cudaDeviceGetPCIBusId(bus, sizeof bus, d);
    out_ << "# gpu" << d << ": " << p.name << " pci=" << bus << " sms=" << p.multiProcessorCount
         << " cc=" << p.major << "." << p.minor << " hbm_bytes=" << p.totalGlobalMem
         << " l2_bytes=" << p.l2CacheSize << "\n";
    out_ << "# gpu" << d << "_before: " << to_string(read_telemetry(d)) << "\n";
  }
  for (const auto& [k, v] : extra) out_ << "# " << k << ": " << v << "\n";
  out_ << "# command:";
  for (int i = 0; i < argc; ++i) out_ << " " << argv[i];
  out_ << "\n";
  out_.flush();
}

CsvWriter::~CsvWriter() {
  for (int d : devices_) out_ << "# gpu" << d << "_after: " << to_string(read_telemetry(d)) << "\n";
  out_ << "# finished_utc: " << utc_now() << "\n";
}

void CsvWriter::header(const std::vector<std::string>& columns) { row(columns); }

void CsvWriter::row(const std::vector<std::string>& cells) {
  for (std::size_t i = 0; i < cells.size(); ++i) out_ << (i ? "," : "") << cells[i];
  out_ << "\n";
  out_.flush();
}

Args::Args(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0) throw std::runtime_error("unexpected argument " + k);
    k = k.substr(2);
    if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0)
      values_[k] = argv[++i];
    else
      values_[k] = "1";
  }
}

std::string Args::get(const std::string& key, const std::string& fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

double Args::num(const std::string& key, double fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : std::stod(it->second);
}

std::vector<long long> parse_list(const std::string& text) {
  std::vector<long long> v;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ','))
    if (!item.empty()) v.push_back(std::stoll(item));
  return v;
}

std::vector<std::string> parse_list_names(const std::string& text) {
  std::vector<std::string> v;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ','))
    if (!item.empty()) v.push_back(item);
  return v;
}

int probe_main(const char* name, int (*run)(int, char**), int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << name << " probe: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace probes
