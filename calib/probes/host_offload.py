"""Host-offload probe: what CPU optimizer offload (DeepSpeed offload_optimizer, Megatron
optimizer_cpu_offload) costs on this machine.

1. PCIe: host<->device copies from/to pinned host memory (the path DeepSpeed and Megatron use for
   offloaded gradients and parameters), one direction at a time and both at once, 1 MiB - 2 GiB,
   timed with CUDA events, median of repetitions. Correctness: a round trip of random BF16 data
   is compared bit for bit.
2. Host Adam: one AdamW step over FP32 parameters on the CPU (torch.optim.AdamW, fused CPU kernel
   when this PyTorch has it, else foreach), by thread count: parameters per second, and the host
   memory traffic that implies (28 B per parameter: read/write the FP32 weight, first and second
   moment, read the FP32 gradient). Correctness: the fused step is compared with a float64
   reference on a slice.
3. Host memory bandwidth: torch copy of a 1 GiB FP32 tensor by thread count (read + write bytes).

Writes one CSV with a provenance header (probe_common.CsvWriter) plus the CPU model, core count
and memory size from /proc. Needs PyTorch with CUDA.
"""

import argparse
import os
import time

import torch

from probe_common import CsvWriter, fmt, median

ADAM_BYTES_PER_PARAM = 28.0  # FP32 weight r/w 8, m r/w 8, v r/w 8, gradient read 4


def cpu_info():
    model, cores = "unknown", os.cpu_count()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo", encoding="utf-8") as f:
            mem = f.readline().split(":", 1)[1].strip()
    except OSError:
        mem = "unknown"
    return {"cpu_model": model, "cpu_logical_cores": cores, "host_memory": mem}


def time_copy(dst, src, reps):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        dst.copy_(src, non_blocking=True)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return median(times)


def time_bidir(d_dst, h_src, h_dst, d_src, reps):
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.cuda.stream(s1):
            d_dst.copy_(h_src, non_blocking=True)
        with torch.cuda.stream(s2):
            h_dst.copy_(d_src, non_blocking=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return median(times)


def pcie_rows(out, sizes, reps):
    dev = torch.device("cuda", 0)
    for size in sizes:
        n = size // 2
        host = torch.empty(n, dtype=torch.bfloat16).pin_memory()
        host.copy_(torch.randn(n, dtype=torch.float32).to(torch.bfloat16))
        back = torch.empty(n, dtype=torch.bfloat16).pin_memory()
        d = torch.empty(n, dtype=torch.bfloat16, device=dev)
        d2 = torch.randn(n, dtype=torch.bfloat16, device=dev)
        time_copy(d, host, 3)  # warm-up
        h2d = time_copy(d, host, reps)
        d2h = time_copy(back, d, reps)
        ok = int(torch.equal(back, host))
        both = time_bidir(d, host, back, d2, reps)
        out.row(["pcie", "h2d_pinned", size, 1, fmt(h2d), fmt(size / h2d / 1e9, 5), ok])
        out.row(["pcie", "d2h_pinned", size, 1, fmt(d2h), fmt(size / d2h / 1e9, 5), ok])
        out.row(["pcie", "bidir_pinned_each", size, 1, fmt(both), fmt(size / both / 1e9, 5), ok])
        del host, back, d, d2


def make_adam(params, fused):
    kwargs = {"lr": 1e-4, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1}
    if fused:
        return torch.optim.AdamW([params], fused=True, **kwargs)
    return torch.optim.AdamW([params], foreach=True, **kwargs)


def adam_check(fused):
    """One step on 4096 params against a float64 reference; returns max relative error."""
    g = torch.Generator().manual_seed(1)
    p = torch.randn(4096, generator=g)
    grad = torch.randn(4096, generator=g)
    p32 = p.clone().requires_grad_(False)
    p32.grad = grad.clone()
    make_adam(p32, fused).step()
    lr, b1, b2, eps, wd = 1e-4, 0.9, 0.95, 1e-8, 0.1
    ref = p.double() * (1 - lr * wd)
    m = (1 - b1) * grad.double() / (1 - b1)
    v = (1 - b2) * grad.double() ** 2 / (1 - b2)
    ref = ref - lr * m / (v.sqrt() + eps)
    return float(((p32.double() - ref).abs() / ref.abs().clamp_min(1e-3)).max())


def adam_rows(out, numel, threads, reps, fused):
    params = torch.randn(numel)
    params.grad = torch.randn(numel)
    opt = make_adam(params, fused)
    err = adam_check(fused)
    for t in threads:
        torch.set_num_threads(t)
        opt.step()  # warm-up (allocates the moments on the first call)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            opt.step()
            times.append(time.perf_counter() - t0)
        s = median(times)
        kind = "adamw_fused" if fused else "adamw_foreach"
        out.row(["host_adam", kind, numel, t, fmt(s), fmt(numel * ADAM_BYTES_PER_PARAM / s / 1e9, 5),
                 fmt(err, 3)])


def hostmem_rows(out, numel, threads, reps):
    a, b = torch.randn(numel), torch.empty(numel)
    for t in threads:
        torch.set_num_threads(t)
        b.copy_(a)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            b.copy_(a)
            times.append(time.perf_counter() - t0)
        s = median(times)
        out.row(["host_memory", "copy_fp32", numel * 4, t, fmt(s), fmt(2 * numel * 4 / s / 1e9, 5),
                 int(torch.equal(a, b))])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="host_offload.csv")
    ap.add_argument("--sizes", default=",".join(str(1 << i) for i in range(20, 32)))
    ap.add_argument("--adam-params", type=int, default=1 << 28)
    ap.add_argument("--threads", default="")
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    threads = [int(x) for x in args.threads.split(",")] if args.threads else sorted(
        {t for t in (1, 2, 4, 8, 12, 14, 16, cores) if t <= cores})
    extra = cpu_info()
    extra["method"] = ("pcie: CUDA events around copy_ from/to pinned memory, median; bidir: both "
                       "directions on two streams, wall time; host_adam: torch.optim.AdamW step "
                       "wall time, GB/s counts 28 B per parameter; host_memory: copy_ r+w bytes")
    out = CsvWriter(args.out, "host_offload", [0], extra)
    out.header(["kind", "variant", "size", "threads", "seconds", "GBps", "check"])
    pcie_rows(out, [int(s) for s in args.sizes.split(",")], args.reps)
    try:
        adam_rows(out, args.adam_params, threads, args.reps, True)
    except (RuntimeError, TypeError) as e:  # no fused CPU AdamW in this PyTorch
        out.f.write(f"# fused AdamW unavailable ({e}); foreach used\n")
        adam_rows(out, args.adam_params, threads, args.reps, False)
    hostmem_rows(out, 1 << 28, threads, args.reps)
    out.close()


if __name__ == "__main__":
    main()
