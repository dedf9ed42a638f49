// One-way GPU-to-GPU latency over NVLink (the source of nvlink_latency in platforms/catalog).
// Two kernels play ping-pong through flags in each other's memory (peer-to-peer stores over
// NVLink/NVSwitch, polled in local memory); one-way latency = round trip / 2.
// Build and run on a machine with two NVLink-connected GPUs:
//   nvcc -O2 -arch=sm_90 -o nvlink_latency nvlink_latency.cu && ./nvlink_latency
// Prints the round trips of several runs (min, median, max) and the GPUs' link.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                       \
  do {                                                                                 \
    cudaError_t err_ = (x);                                                            \
    if (err_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Writes i into the peer's flag, waits for the peer to answer i in the local flag.
__global__ void ping(volatile int* local, volatile int* remote, int iters, unsigned long long* ns) {
  const unsigned long long t0 = now_ns();
  for (int i = 1; i <= iters; ++i) {
    *remote = i;
    while (*local != i) {
    }
  }
  *ns = now_ns() - t0;
}

__global__ void pong(volatile int* local, volatile int* remote, int iters) {
  for (int i = 1; i <= iters; ++i) {
    while (*local != i) {
    }
    *remote = i;
  }
}

int main() {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  if (count < 2) {
    std::fprintf(stderr, "needs two GPUs, found %d\n", count);
    return 1;
  }
  int access = 0;
  CHECK(cudaDeviceCanAccessPeer(&access, 0, 1));
  if (!access) {
    std::fprintf(stderr, "GPU 0 cannot access GPU 1 peer-to-peer\n");
    return 1;
  }
  int* flag[2];
  unsigned long long* ns;
  for (int d = 0; d < 2; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaDeviceEnablePeerAccess(1 - d, 0));
    CHECK(cudaMalloc(&flag[d], sizeof(int)));
  }
  CHECK(cudaSetDevice(0));
  CHECK(cudaMalloc(&ns, sizeof(unsigned long long)));
  const int iters = 100000;
  std::vector<double> one_way_ns;
  for (int run = 0; run < 7; ++run) {
    for (int d = 0; d < 2; ++d) {
      CHECK(cudaSetDevice(d));
      CHECK(cudaMemset(flag[d], 0, sizeof(int)));
      CHECK(cudaDeviceSynchronize());
    }
    CHECK(cudaSetDevice(1));
    pong<<<1, 1>>>(flag[1], flag[0], iters);
    CHECK(cudaSetDevice(0));
    ping<<<1, 1>>>(flag[0], flag[1], iters, ns);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaSetDevice(1));
    CHECK(cudaDeviceSynchronize());
    unsigned long long host_ns = 0;
    CHECK(cudaSetDevice(0));
    CHECK(cudaMemcpy(&host_ns, ns, sizeof host_ns, cudaMemcpyDeviceToHost));
    one_way_ns.push_back(static_cast<double>(host_ns) / iters / 2.0);
  }
  std::sort(one_way_ns.begin(), one_way_ns.end());
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("gpu %s, %d iterations x %zu runs\n", prop.name, iters, one_way_ns.size());
  std::printf("one-way latency ns: min %.1f median %.1f max %.1f\n", one_way_ns.front(),
              one_way_ns[one_way_ns.size() / 2], one_way_ns.back());
  return 0;
}
