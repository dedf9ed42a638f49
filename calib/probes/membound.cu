// Memory-bound probe: achieved HBM bandwidth of copy, RMSNorm, LayerNorm, SwiGLU, GeLU, RoPE,
// fused softmax cross-entropy (forward + backward) and AdamW against the bytes each call must
// move (every input read once, every output written once). Kernels: membound_kernels.cu.
// Each size rotates over >= 512 MiB of buffers so that no call finds its data in L2.
#include <cmath>
#include <iostream>

#include "membound_kernels.cuh"
#include "probe_common.cuh"

namespace probes {
namespace {

enum class BufKind { BF16, F32, Labels };

struct Buf {
  std::size_t count = 0;  // elements
  BufKind kind = BufKind::BF16;
  float scale = 1.0f, offset = 0.0f;
  bool input = true;
  std::size_t bytes() const { return count * (kind == BufKind::BF16 ? 2 : 4); }
};

using Ptrs = std::vector<char*>;

struct Case {
  std::string kernel, shape;
  double bytes = 0.0;  // minimum bytes moved per call
  std::vector<Buf> bufs;
  std::function<void(const Ptrs&, cudaStream_t)> launch;
  std::function<double(const Ptrs&)> check;  // max relative error of sampled outputs
};

constexpr int kVocab = 32064;  // Llama 3 vocabulary 128256 split over tp = 4
constexpr int kFfn = 7168;     // Llama3-70B ffn 28672 split over tp = 4
constexpr int kRopeHeads = 8;  // 64 query heads over tp = 8
const std::uint64_t kSeed = 77;

std::uint64_t seed_of(int slot, int buf) { return kSeed + 1000u * slot + buf; }

float host_in(const Buf& b, std::uint64_t seed, std::size_t i) {
  const float v = rand_val(seed, i) * b.scale + b.offset;
  return b.kind == BufKind::BF16 ? host_bf16_round(v) : v;
}

template <typename T>
std::vector<T> fetch(const char* p, std::size_t first, std::size_t count) {
  std::vector<T> v(count);
  PROBE_CUDA(cudaMemcpy(v.data(), p + first * sizeof(T), count * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

float bf16_to_f(__nv_bfloat16 v) {
  std::uint16_t u;
  std::memcpy(&u, &v, 2);
  std::uint32_t w = static_cast<std::uint32_t>(u) << 16;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

double rel(double got, double want, double scale) {
  return std::isfinite(got) ? std::fabs(got - want) / std::max(std::fabs(want), scale) : 1e30;
}

// Elementwise check of sampled outputs: want(i) from recomputed inputs.
double check_elementwise(const char* out, std::size_t n, const std::function<double(std::size_t)>& want) {
  double err = 0.0;
  for (int s = 0; s < 64; ++s) {
    const std::size_t i = mix64(999 + s) % n;
    err = std::max(err, rel(bf16_to_f(fetch<__nv_bfloat16>(out, i, 1)[0]), want(i), 1e-2));
  }
  return err;
}

Case make_norm(double target, bool layer) {
  Case c;
  const std::size_t rows = std::max<std::size_t>(1, static_cast<std::size_t>(target / (4.0 * mem::kHidden)));
  c.kernel = layer ? "layernorm" : "rmsnorm";
  c.shape = std::to_string(rows) + "x" + std::to_string(mem::kHidden);
  c.bytes = 4.0 * rows * mem::kHidden + (layer ? 4.0 : 2.0) * mem::kHidden;
  const std::size_t h = mem::kHidden;
  c.bufs = {{rows * h}, {h, BufKind::BF16, 0.5f, 1.0f}, {h, BufKind::BF16, 0.1f}, {rows * h, BufKind::BF16, 1, 0, false}};
  c.launch = [=](const Ptrs& p, cudaStream_t s) {
    auto b = [&](int i) { return reinterpret_cast<__nv_bfloat16*>(p[i]); };
    if (layer) mem::layernorm(b(0), b(1), b(2), b(3), rows, s);
    else mem::rmsnorm(b(0), b(1), b(3), rows, s);
  };
  const std::vector<Buf> bufs = c.bufs;
  c.check = [=](const Ptrs& p) {
    double err = 0.0;
    for (std::size_t r : {std::size_t{0}, rows / 2, rows - 1}) {
      std::vector<double> x(h);
      double mean = 0.0, sq = 0.0;
      for (std::size_t j = 0; j < h; ++j) mean += (x[j] = host_in(bufs[0], seed_of(0, 0), r * h + j));
      mean = layer ? mean / h : 0.0;
      for (double v : x) sq += (v - mean) * (v - mean);
      const double inv = 1.0 / std::sqrt(sq / h + 1e-5);
      const auto y = fetch<__nv_bfloat16>(p[3], r * h, h);
      for (std::size_t j = 0; j < h; ++j) {
        const double want = (x[j] - mean) * inv * host_in(bufs[1], seed_of(0, 1), j) +
                            (layer ? host_in(bufs[2], seed_of(0, 2), j) : 0.0);
        err = std::max(err, rel(bf16_to_f(y[j]), want, 1e-1));
      }
    }
    return err;
  };
  return c;
}

Case make_elementwise(const std::string& kernel, double target) {
  Case c;
  c.kernel = kernel;
  if (kernel == "swiglu") {
    const std::size_t rows = std::max<std::size_t>(1, static_cast<std::size_t>(target / (6.0 * kFfn)));
    c.shape = std::to_string(rows) + "x" + std::to_string(2 * kFfn);
    c.bytes = 6.0 * rows * kFfn;
    c.bufs = {{rows * 2 * kFfn, BufKind::BF16, 3.0f}, {rows * kFfn, BufKind::BF16, 1, 0, false}};
    c.launch = [=](const Ptrs& p, cudaStream_t s) {
      mem::swiglu(reinterpret_cast<__nv_bfloat16*>(p[0]), reinterpret_cast<__nv_bfloat16*>(p[1]), rows, kFfn, s);
    };
    const Buf in = c.bufs[0];
    c.check = [=](const Ptrs& p) {
      return check_elementwise(p[1], rows * kFfn, [&](std::size_t i) {
        const std::size_t r = i / kFfn, col = i % kFfn;
        const double g = host_in(in, seed_of(0, 0), r * 2 * kFfn + col);
        return g / (1.0 + std::exp(-g)) * host_in(in, seed_of(0, 0), r * 2 * kFfn + kFfn + col);
      });
    };
    return c;
  }
  const std::size_t n = std::max<std::size_t>(4096, static_cast<std::size_t>(target / 4.0) / 4096 * 4096);
  c.shape = std::to_string(n);
  c.bytes = 4.0 * n;
  c.bufs = {{n, BufKind::BF16, 3.0f}, {n, BufKind::BF16, 1, 0, false}};
  const Buf in = c.bufs[0];
  if (kernel == "copy") {
    c.launch = [=](const Ptrs& p, cudaStream_t s) {
      mem::copy(reinterpret_cast<__nv_bfloat16*>(p[0]), reinterpret_cast<__nv_bfloat16*>(p[1]), n, s);
    };
    c.check = [=](const Ptrs& p) {
      return check_elementwise(p[1], n, [&](std::size_t i) { return host_in(in, seed_of(0, 0), i); });
    };
  } else if (kernel == "gelu") {
    c.launch = [=](const Ptrs& p, cudaStream_t s) {
      mem::gelu(reinterpret_cast<__nv_bfloat16*>(p[0]), reinterpret_cast<__nv_bfloat16*>(p[1]), n, s);
    };
    c.check = [=](const Ptrs& p) {
      return check_elementwise(p[1], n, [&](std::size_t i) {
        const double x = host_in(in, seed_of(0, 0), i);
        return 0.5 * x * (1.0 + std::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
      });
    };
  } else {  // rope: n elements of [tokens, heads, 128]
    const std::size_t tokens = std::max<std::size_t>(1, n / (kRopeHeads * mem::kHeadDim));
    const std::size_t ne = tokens * kRopeHeads * mem::kHeadDim;
    const std::size_t tab = static_cast<std::size_t>(mem::kRopePositions) * mem::kHeadDim / 2;
    c.shape = std::to_string(tokens) + "x" + std::to_string(kRopeHeads) + "x" + std::to_string(mem::kHeadDim);
    c.bytes = 4.0 * ne;
    c.bufs = {{ne, BufKind::BF16, 3.0f}, {tab, BufKind::F32}, {tab, BufKind::F32}, {ne, BufKind::BF16, 1, 0, false}};
    const std::vector<Buf> bufs = c.bufs;
    c.launch = [=](const Ptrs& p, cudaStream_t s) {
      mem::rope(reinterpret_cast<__nv_bfloat16*>(p[0]), reinterpret_cast<float*>(p[1]),
                reinterpret_cast<float*>(p[2]), reinterpret_cast<__nv_bfloat16*>(p[3]), tokens, kRopeHeads, s);
    };
    c.check = [=](const Ptrs& p) {
      return check_elementwise(p[3], ne, [&](std::size_t i) {
        const std::size_t th = i / mem::kHeadDim, d = i % mem::kHeadDim, half = mem::kHeadDim / 2;
        const std::size_t pos = (th / kRopeHeads) % mem::kRopePositions, j = d % half;
        const double co = host_in(bufs[1], seed_of(0, 1), pos * half + j);
        const double si = host_in(bufs[2], seed_of(0, 2), pos * half + j);
        const double a = host_in(bufs[0], seed_of(0, 0), th * mem::kHeadDim + j);
        const double b = host_in(bufs[0], seed_of(0, 0), th * mem::kHeadDim + half + j);
        return d < half ? a * co - b * si : b * co + a * si;
      });
    };
  }
  return c;
}

Case make_cross_entropy(double target) {
  Case c;
  const std::size_t rows = std::max<std::size_t>(1, static_cast<std::size_t>(target / (4.0 * kVocab)));
  c.kernel = "cross_entropy";
  c.shape = std::to_string(rows) + "x" + std::to_string(kVocab);
  c.bytes = 4.0 * rows * kVocab + 8.0 * rows;
  c.bufs = {{rows * kVocab, BufKind::BF16, 8.0f}, {rows, BufKind::Labels}, {rows, BufKind::F32, 1, 0, false},
            {rows * kVocab, BufKind::BF16, 1, 0, false}};
  const Buf in = c.bufs[0];
  c.launch = [=](const Ptrs& p, cudaStream_t s) {
    mem::cross_entropy(reinterpret_cast<__nv_bfloat16*>(p[0]), reinterpret_cast<int*>(p[1]),
                       reinterpret_cast<float*>(p[2]), reinterpret_cast<__nv_bfloat16*>(p[3]), rows, kVocab, s);
  };
  c.check = [=](const Ptrs& p) {
    double err = 0.0;
    for (std::size_t r : {std::size_t{0}, rows - 1}) {
      std::vector<double> x(kVocab);
      double mx = -1e30, sum = 0.0;
      for (int j = 0; j < kVocab; ++j) mx = std::max(mx, x[j] = host_in(in, seed_of(0, 0), r * kVocab + j));
      for (double v : x) sum += std::exp(v - mx);
      const int label = static_cast<int>(mix64(seed_of(0, 1) + r) % kVocab);
      const double loss = std::log(sum) + mx - x[label];
      err = std::max(err, rel(fetch<float>(p[2], r, 1)[0], loss, 1e-3));
      const auto g = fetch<__nv_bfloat16>(p[3], r * kVocab, kVocab);
      for (int j = 0; j < kVocab; j += 97)
        err = std::max(err, rel(bf16_to_f(g[j]), std::exp(x[j] - mx) / sum - (j == label), 1e-3));
    }
    return err;
  };
  return c;
}

Case make_adamw(double target) {
  Case c;
  const std::size_t n = std::max<std::size_t>(1024, static_cast<std::size_t>(target / 30.0) / 1024 * 1024);
  c.kernel = "adamw";
  c.shape = std::to_string(n);
  c.bytes = 30.0 * n;  // read p, g, m, v (FP32), write p, m, v (FP32) and p (BF16)
  c.bufs = {{n, BufKind::F32}, {n, BufKind::F32, 1e-2f}, {n, BufKind::F32, 1e-3f},
            {n, BufKind::F32, 1e-5f, 2e-5f}, {n, BufKind::BF16, 1, 0, false}};
  mem::AdamW h;
  h.c1 = 1.0f - std::pow(h.beta1, 10.0f);
  h.c2 = 1.0f - std::pow(h.beta2, 10.0f);
  const std::vector<Buf> bufs = c.bufs;
  c.launch = [=](const Ptrs& p, cudaStream_t s) {
    mem::adamw(reinterpret_cast<float*>(p[0]), reinterpret_cast<float*>(p[1]), reinterpret_cast<float*>(p[2]),
               reinterpret_cast<float*>(p[3]), reinterpret_cast<__nv_bfloat16*>(p[4]), n, h, s);
  };
  c.check = [=](const Ptrs& p) {
    double err = 0.0;
    for (int s = 0; s < 64; ++s) {
      const std::size_t i = mix64(555 + s) % n;
      const double p0 = host_in(bufs[0], seed_of(0, 0), i), g = host_in(bufs[1], seed_of(0, 1), i);
      const double m = h.beta1 * host_in(bufs[2], seed_of(0, 2), i) + (1 - h.beta1) * g;
      const double v = h.beta2 * host_in(bufs[3], seed_of(0, 3), i) + (1 - h.beta2) * g * g;
      const double want = p0 - h.lr * ((m / h.c1) / (std::sqrt(v / h.c2) + h.eps) + h.wd * p0);
      err = std::max(err, rel(fetch<float>(p[0], i, 1)[0], want, 1e-3));
    }
    return err;
  };
  return c;
}

Case make_case(const std::string& kernel, double target) {
  if (kernel == "rmsnorm" || kernel == "layernorm") return make_norm(target, kernel == "layernorm");
  if (kernel == "cross_entropy") return make_cross_entropy(target);
  if (kernel == "adamw") return make_adamw(target);
  if (kernel == "copy" || kernel == "gelu" || kernel == "swiglu" || kernel == "rope")
    return make_elementwise(kernel, target);
  throw std::runtime_error("unknown kernel " + kernel);
}

void fill_slot(const Case& c, const Ptrs& p, int slot) {
  for (std::size_t b = 0; b < c.bufs.size(); ++b) {
    const Buf& buf = c.bufs[b];
    if (!buf.input) continue;
    if (buf.kind == BufKind::BF16)
      fill_bf16(reinterpret_cast<__nv_bfloat16*>(p[b]), buf.count, seed_of(slot, static_cast<int>(b)), buf.scale, buf.offset);
    else if (buf.kind == BufKind::F32)
      fill_f32(reinterpret_cast<float*>(p[b]), buf.count, seed_of(slot, static_cast<int>(b)), buf.scale, buf.offset);
    else
      mem::fill_labels(reinterpret_cast<int*>(p[b]), buf.count, kVocab, seed_of(slot, static_cast<int>(b)), nullptr);
  }
}

int run(int argc, char** argv) {
  const Args args(argc, argv);
  const int device = static_cast<int>(args.num("device", 0));
  PROBE_CUDA(cudaSetDevice(device));
  const std::size_t pool_bytes = static_cast<std::size_t>(args.num("pool-gib", 10.0) * (1ull << 30));
  char* pool = nullptr;
  PROBE_CUDA(cudaMalloc(&pool, pool_bytes));
  const auto sizes = parse_list(args.get("bytes", "65536,262144,1048576,4194304,16777216,67108864,268435456,1073741824,4294967296"));
  const std::string kernels = args.get("kernels", "copy,rmsnorm,layernorm,swiglu,gelu,rope,cross_entropy,adamw");
  CsvWriter csv(args.get("out", "membound.csv"), "membound (own CUDA kernels, membound_kernels.cu)", {device}, argc, argv,
                {{"timing", "CUDA events; median of samples of back-to-back calls queued behind a GPU spin (host launch excluded); buffers rotate over >=512 MiB"},
                 {"bytes", "minimum bytes per call: each input read once, each output written once"}});
  csv.header({"kernel", "shape", "bytes", "time_s", "gbps", "min_s", "max_s", "samples", "calls", "slots", "max_rel_err", "sm_mhz", "power_w"});
  for (const auto& kernel : parse_list_names(kernels)) {
    std::string last_shape;
    for (long long target : sizes) {
      Case c = make_case(kernel, static_cast<double>(target));
      if (c.shape == last_shape) continue;  // small targets can round to the same shape
      last_shape = c.shape;
      std::size_t stride = 0;
      std::vector<std::size_t> offs;
      for (const Buf& b : c.bufs) {
        offs.push_back(stride);
        stride += (b.bytes() + 255) / 256 * 256;
      }
      if (stride > pool_bytes) throw std::runtime_error("case larger than the pool: " + c.kernel);
      const int slots = static_cast<int>(std::clamp<std::size_t>(
          std::min(((512u << 20) + stride - 1) / stride, pool_bytes / stride), 1, 64));
      std::vector<Ptrs> ptrs(slots);
      for (int s = 0; s < slots; ++s) {
        for (std::size_t o : offs) ptrs[s].push_back(pool + s * stride + o);
        fill_slot(c, ptrs[s], s);
      }
      PROBE_CUDA(cudaDeviceSynchronize());
      const Timing t = time_calls(nullptr, [&](int i) { c.launch(ptrs[i % slots], nullptr); }, 21, 5, 5e-4, 0.25);
      fill_slot(c, ptrs[0], 0);  // fresh inputs for the check (AdamW updates in place)
      c.launch(ptrs[0], nullptr);
      PROBE_CUDA(cudaDeviceSynchronize());
      const double err = c.check(ptrs[0]);
      const Telemetry tel = read_telemetry(device);
      csv.row({c.kernel, c.shape, fmt(c.bytes, 15), fmt(t.median_s), fmt(c.bytes / t.median_s * 1e-9, 5),
               fmt(t.min_s), fmt(t.max_s), std::to_string(t.samples), std::to_string(t.calls_per_sample),
               std::to_string(slots), fmt(err, 3), std::to_string(tel.sm_mhz), fmt(tel.power_w, 4)});
      if (err > 0.03) std::cerr << "SPOT CHECK FAILED " << c.kernel << " " << c.shape << " err " << err << "\n";
    }
    std::cerr << "membound " << kernel << " done\n";
  }
  cudaFree(pool);
  return 0;
}

}  // namespace
}  // namespace probes

int main(int argc, char** argv) { return probes::probe_main("membound", probes::run, argc, argv); }
