// NCCL probe: all_reduce, all_gather, reduce_scatter, all_to_all, bidirectional send/recv and
// one-way send between the GPUs of one process (ncclCommInitAll), FP32 data, message sizes by
// powers of two. Algorithm and protocol are chosen by the caller through NCCL_ALGO / NCCL_PROTO
// (run_all.sh starts one process per setting); the probe records them. Sizes follow nccl-tests:
// all_reduce and send/recv: the buffer; all_gather: the gathered output; reduce_scatter: the
// input; all_to_all: each rank's send buffer. algbw = size / time; busbw = algbw * factor with
// nccl-tests' factors (all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n).
#include <nccl.h>

#include <cmath>
#include <cstdlib>
#include <iostream>

#include "probe_common.cuh"

namespace probes {
namespace {

#define PROBE_NCCL(call)                                                                  \
  do {                                                                                    \
    ncclResult_t r_ = (call);                                                             \
    if (r_ != ncclSuccess)                                                                \
      throw std::runtime_error(std::string(#call) + ": " + ncclGetErrorString(r_));       \
  } while (0)

struct World {
  int n = 0;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<float*> send, recv;
  std::size_t max_bytes = 0;
};

std::uint64_t seed_of(int rank) { return 100 + rank; }

void enqueue(const World& w, const std::string& coll, std::size_t bytes) {
  const std::size_t count = bytes / sizeof(float), chunk = count / w.n;
  PROBE_NCCL(ncclGroupStart());
  for (int r = 0; r < w.n; ++r) {
    float* s = w.send[r];
    float* d = w.recv[r];
    ncclComm_t c = w.comms[r];
    cudaStream_t st = w.streams[r];
    if (coll == "all_reduce") {
      PROBE_NCCL(ncclAllReduce(s, d, count, ncclFloat, ncclSum, c, st));
    } else if (coll == "all_gather") {
      PROBE_NCCL(ncclAllGather(s, d, chunk, ncclFloat, c, st));
    } else if (coll == "reduce_scatter") {
      PROBE_NCCL(ncclReduceScatter(s, d, chunk, ncclFloat, ncclSum, c, st));
    } else if (coll == "all_to_all") {
      for (int q = 0; q < w.n; ++q) {
        PROBE_NCCL(ncclSend(s + q * chunk, chunk, ncclFloat, q, c, st));
        PROBE_NCCL(ncclRecv(d + q * chunk, chunk, ncclFloat, q, c, st));
      }
    } else if (coll == "sendrecv") {
      PROBE_NCCL(ncclSend(s, count, ncclFloat, (r + 1) % w.n, c, st));
      PROBE_NCCL(ncclRecv(d, count, ncclFloat, (r + w.n - 1) % w.n, c, st));
    } else if (coll == "send") {  // one direction only: rank 0 -> rank 1
      if (r == 0) PROBE_NCCL(ncclSend(s, count, ncclFloat, 1, c, st));
      if (r == 1) PROBE_NCCL(ncclRecv(d, count, ncclFloat, 0, c, st));
    } else {
      throw std::runtime_error("unknown collective " + coll);
    }
  }
  PROBE_NCCL(ncclGroupEnd());
}

double bus_factor(const std::string& coll, int n) {
  if (coll == "all_reduce") return 2.0 * (n - 1) / n;
  if (coll == "sendrecv" || coll == "send") return 1.0;
  return static_cast<double>(n - 1) / n;
}

// Expected value of element i of rank r's output.
double expected(const std::string& coll, int n, int r, std::size_t i, std::size_t count) {
  const std::size_t chunk = count / n;
  auto in = [](int q, std::size_t j) { return static_cast<double>(rand_val(seed_of(q), j)); };
  if (coll == "all_reduce" || coll == "reduce_scatter") {
    const std::size_t j = coll == "all_reduce" ? i : r * chunk + i;
    double s = 0.0;
    for (int q = 0; q < n; ++q) s += in(q, j);
    return s;
  }
  if (coll == "all_gather") return in(static_cast<int>(i / chunk), i % chunk);
  if (coll == "all_to_all") return in(static_cast<int>(i / chunk), r * chunk + i % chunk);
  return in((r + n - 1) % n, i);  // sendrecv, send
}

// Poisons outputs, runs once, compares 64 sampled outputs per receiving rank.
double check(const World& w, const std::string& coll, std::size_t bytes) {
  const std::size_t count = bytes / sizeof(float);
  const std::size_t out_count = coll == "reduce_scatter" ? count / w.n : count;
  for (int r = 0; r < w.n; ++r) {
    PROBE_CUDA(cudaSetDevice(r));
    PROBE_CUDA(cudaMemsetAsync(w.recv[r], 0xFF, out_count * sizeof(float), w.streams[r]));
  }
  enqueue(w, coll, bytes);
  double err = 0.0;
  for (int r = 0; r < w.n; ++r) {
    PROBE_CUDA(cudaSetDevice(r));
    PROBE_CUDA(cudaStreamSynchronize(w.streams[r]));
    if (coll == "send" && r != 1) continue;
    for (int s = 0; s < 64; ++s) {
      const std::size_t i = mix64(4242 + s) % out_count;
      float got = 0.0f;
      PROBE_CUDA(cudaMemcpy(&got, w.recv[r] + i, sizeof got, cudaMemcpyDeviceToHost));
      const double want = expected(coll, w.n, r, i, count);
      err = std::max(err, std::isfinite(got) ? std::fabs(got - want) / std::max(std::fabs(want), 1e-3) : 1e30);
    }
  }
  return err;
}

// Median seconds per call over samples of back-to-back calls; slowest rank per sample. Each
// sample queues one call (which brings the ranks into step) and then `calls` timed calls behind
// a GPU spin on every rank; the spin doubles until the host has enqueued everything before it
// ends.
Timing time_coll(const World& w, const std::string& coll, std::size_t bytes, double budget) {
  std::vector<cudaEvent_t> a(w.n), b(w.n), spun(w.n);
  for (int r = 0; r < w.n; ++r) {
    PROBE_CUDA(cudaSetDevice(r));
    PROBE_CUDA(cudaEventCreate(&a[r]));
    PROBE_CUDA(cudaEventCreate(&b[r]));
    PROBE_CUDA(cudaEventCreate(&spun[r]));
  }
  PROBE_CUDA(cudaSetDevice(0));
  long long spin = spin_cycles(5e-4);
  auto sample = [&](int calls) {
    for (;;) {
      for (int r = 0; r < w.n; ++r) {
        PROBE_CUDA(cudaSetDevice(r));
        launch_spin(w.streams[r], spin);
        PROBE_CUDA(cudaEventRecord(spun[r], w.streams[r]));
      }
      enqueue(w, coll, bytes);
      for (int r = 0; r < w.n; ++r) {
        PROBE_CUDA(cudaSetDevice(r));
        PROBE_CUDA(cudaEventRecord(a[r], w.streams[r]));
      }
      for (int i = 0; i < calls; ++i) enqueue(w, coll, bytes);
      bool ahead = true;
      for (int r = 0; r < w.n; ++r) {
        PROBE_CUDA(cudaSetDevice(r));
        PROBE_CUDA(cudaEventRecord(b[r], w.streams[r]));
        const cudaError_t q = cudaEventQuery(spun[r]);
        if (q == cudaSuccess) ahead = false;  // the spin ended before the host was done
        else if (q != cudaErrorNotReady) PROBE_CUDA(q);
      }
      (void)cudaGetLastError();
      double worst = 0.0;
      for (int r = 0; r < w.n; ++r) {
        PROBE_CUDA(cudaSetDevice(r));
        PROBE_CUDA(cudaEventSynchronize(b[r]));
        float ms = 0.0f;
        PROBE_CUDA(cudaEventElapsedTime(&ms, a[r], b[r]));
        worst = std::max(worst, ms * 1e-3 / calls);
      }
      if (ahead || spin > (1LL << 40)) return worst;
      spin *= 2;
    }
  };
  sample(2);
  const double est = sample(3);
  const int calls = std::clamp(static_cast<int>(std::ceil(1e-3 / std::max(est, 1e-7))), 1, 1000);
  const int samples = std::clamp(static_cast<int>(budget / std::max(est * calls, 1e-9)), 5, 15);
  std::vector<double> t;
  for (int s = 0; s < samples; ++s) t.push_back(sample(calls));
  for (int r = 0; r < w.n; ++r) {
    cudaEventDestroy(a[r]);
    cudaEventDestroy(b[r]);
    cudaEventDestroy(spun[r]);
  }
  Timing res;
  res.median_s = median(t);
  res.min_s = *std::min_element(t.begin(), t.end());
  res.max_s = *std::max_element(t.begin(), t.end());
  res.samples = samples;
  res.calls_per_sample = calls;
  return res;
}

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

int run(int argc, char** argv) {
  const Args args(argc, argv);
  World w;
  PROBE_CUDA(cudaGetDeviceCount(&w.n));
  w.n = std::min(w.n, static_cast<int>(args.num("ngpus", 2)));
  if (w.n < 2) throw std::runtime_error("the NCCL probe needs at least 2 GPUs");
  const auto sizes = parse_list(args.get("bytes", ""));
  std::vector<std::size_t> bytes;
  if (sizes.empty())
    for (std::size_t b = 1024; b <= (4ull << 30); b *= 2) bytes.push_back(b);
  else
    for (long long s : sizes) bytes.push_back(static_cast<std::size_t>(s));
  w.max_bytes = *std::max_element(bytes.begin(), bytes.end());
  std::vector<int> devs(w.n);
  w.comms.resize(w.n);
  w.streams.resize(w.n);
  w.send.resize(w.n);
  w.recv.resize(w.n);
  for (int r = 0; r < w.n; ++r) {
    devs[r] = r;
    PROBE_CUDA(cudaSetDevice(r));
    PROBE_CUDA(cudaStreamCreateWithFlags(&w.streams[r], cudaStreamNonBlocking));
    PROBE_CUDA(cudaMalloc(&w.send[r], w.max_bytes));
    PROBE_CUDA(cudaMalloc(&w.recv[r], w.max_bytes));
    fill_f32(w.send[r], w.max_bytes / sizeof(float), seed_of(r));
  }
  PROBE_NCCL(ncclCommInitAll(w.comms.data(), w.n, devs.data()));
  int ver = 0;
  ncclGetVersion(&ver);
  const std::string algo = env_or("NCCL_ALGO", "default"), proto = env_or("NCCL_PROTO", "default");
  CsvWriter csv(args.get("out", "nccl.csv"), "nccl", devs, argc, argv,
                {{"nccl", std::to_string(ver)},
                 {"env", "NCCL_ALGO=" + algo + " NCCL_PROTO=" + proto + " NCCL_NVLS_ENABLE=" +
                             env_or("NCCL_NVLS_ENABLE", "unset") + " NCCL_MAX_NCHANNELS=" +
                             env_or("NCCL_MAX_NCHANNELS", "unset")},
                 {"timing", "CUDA events on every rank's stream around calls queued behind a GPU spin (after "
                            "one untimed call that brings the ranks into step), so host launch "
                            "time is excluded; per sample the slowest rank; median of samples"},
                 {"data", "FP32 uniform random in [-1,1), different per rank; outputs poisoned before the check"}});
  csv.header({"collective", "algo", "proto", "nranks", "bytes", "time_s", "algbw_GBps", "busbw_GBps",
              "min_s", "max_s", "samples", "calls", "max_rel_err"});
  const double budget = args.num("size-budget", 0.25);
  for (const std::string& coll : parse_list_names(args.get("collectives", "all_reduce,all_gather,reduce_scatter,all_to_all,sendrecv,send"))) {
    for (std::size_t b : bytes) {
      if (b < 4u * w.n * 32) continue;
      std::string err_text;
      try {
        const double err = check(w, coll, b);
        const Timing t = time_coll(w, coll, b, budget);
        const double alg = b / t.median_s * 1e-9;
        csv.row({coll, algo, proto, std::to_string(w.n), std::to_string(b), fmt(t.median_s), fmt(alg, 5),
                 fmt(alg * bus_factor(coll, w.n), 5), fmt(t.min_s), fmt(t.max_s), std::to_string(t.samples),
                 std::to_string(t.calls_per_sample), fmt(err, 3)});
        if (err > 1e-4) std::cerr << "CHECK FAILED " << coll << " " << b << " err " << err << "\n";
      } catch (const std::exception& e) {
        std::cerr << coll << " " << algo << "/" << proto << " " << b << ": " << e.what() << "\n";
        break;  // NCCL refused this algorithm/protocol for this collective
      }
    }
    std::cerr << "nccl " << coll << " " << algo << "/" << proto << " done\n";
  }
  for (int r = 0; r < w.n; ++r) ncclCommDestroy(w.comms[r]);
  return 0;
}

}  // namespace
}  // namespace probes

int main(int argc, char** argv) { return probes::probe_main("nccl", probes::run, argc, argv); }
