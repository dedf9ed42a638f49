"""Offload-step probe: the host-side operations of DeepSpeed ZeRO-3's CPU optimizer offload step,
alone and with several ranks sharing one host.

DeepSpeed's stage-3 offload path (deepspeed/runtime/zero/stage3.py, read for docs/cost-model.md)
does per step and per rank, over the rank's parameter partition of n elements:
  backward: the BF16 gradient partition is cast to FP32 on the GPU and copied blocking into a
            pinned FP32 host buffer (partition_grads), after a BF16 round trip through a pinned
            buffer (2 B down, 2 B up);
  step():   unscale_and_clip_grads multiplies the FP32 host gradient in place (torch, 8 B/param);
            DeepSpeedCPUAdam updates the FP32 master weight and both moments (28 B/param);
            _reassign_or_swap_out_partitioned_parameters copies the pageable FP32 master into
            the GPU's BF16 partition, a blocking copy_ whose dtype cast PyTorch does on the host
            (read 4 B, write 2 B) before a pageable host-to-device copy of 2 B.
Each is timed here with the same PyTorch calls (torch.optim.AdamW's fused CPU kernel stands in
for DeepSpeed's AVX CPU Adam: the same 28 B/param of FP32 state), in one process, and with P
processes running the same phase at once (barrier-aligned), with a given number of threads each
or PyTorch's default (what the deepspeed launcher leaves without --bind_cores_to_rank).

Rows: kind (single|concurrent), op, procs, threads (0 = PyTorch default), numel per process,
seconds (median per process, worst process for concurrent), GBps (bytes the op moves per
process x procs / seconds), check. Needs PyTorch with CUDA.
"""

import argparse
import os
import time

import torch
import torch.multiprocessing as mp

from probe_common import CsvWriter, fmt, median

# Bytes each op moves per parameter (host memory for host ops, PCIe for copies).
BYTES = {"clip_mul": 8.0, "adam": 28.0, "cast_fp32_bf16": 6.0, "h2d_pageable_bf16": 2.0,
         "copy_fp32_to_gpu_bf16": 2.0, "d2h_fp32_pinned": 4.0}


def adam(params):
    return torch.optim.AdamW([params], lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                             fused=True)


def timed(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return median(times)


def host_state(numel):
    g = torch.Generator().manual_seed(7)
    p = torch.randn(numel, generator=g)
    p.grad = torch.randn(numel, generator=g)
    return p


def checks(dev):
    """Spot checks on small tensors: the cast-copy is PyTorch's round to nearest BF16, the
    clip multiply and the fused AdamW step agree with float64 references."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(1 << 16, generator=g)
    y = torch.empty(1 << 16, dtype=torch.bfloat16, device=dev)
    y.copy_(x)
    ok_cast = bool(torch.equal(y.cpu(), x.to(torch.bfloat16)))
    z = x.clone().mul_(0.37)
    ok_mul = bool(((z.double() - x.double() * 0.37).abs() <= 1e-6 * x.double().abs() + 1e-12).all())
    p = x.clone()
    p.grad = torch.randn(1 << 16, generator=g)
    ref = p.double() - 1e-4 * torch.sign(p.grad.double())  # first step of Adam: m/sqrt(v) = sign
    adam(p).step()
    ok_adam = float((p.double() - ref).abs().max()) < 1e-6
    return int(ok_cast and ok_mul and ok_adam)


def single_rows(out, numel, threads, reps, dev, ok):
    p = host_state(numel)
    opt = adam(p)
    gpu_bf16 = torch.empty(numel, dtype=torch.bfloat16, device=dev)
    host_bf16 = p.detach().to(torch.bfloat16)  # pageable
    pinned32 = torch.empty(numel).pin_memory()
    gpu_grad = torch.randn(numel, dtype=torch.bfloat16, device=dev)
    ops = {
        "clip_mul": lambda: p.grad.mul_(0.999),
        "adam": opt.step,
        "cast_fp32_bf16": lambda: p.detach().to(torch.bfloat16),
        "h2d_pageable_bf16": lambda: gpu_bf16.copy_(host_bf16),
        "copy_fp32_to_gpu_bf16": lambda: gpu_bf16.copy_(p.detach()),
        "d2h_fp32_pinned": lambda: pinned32.copy_(gpu_grad.to(torch.float32)),
    }
    for t in threads:
        if t:
            torch.set_num_threads(t)
        for name, fn in ops.items():
            s = timed(fn, reps)
            torch.cuda.synchronize(dev)
            out.row(["single", name, 1, t, numel, fmt(s), fmt(numel * BYTES[name] / s / 1e9, 5), ok])


def worker(rank, numel, threads, reps, barrier, queue):
    if threads:
        torch.set_num_threads(threads)
    p = host_state(numel)
    opt = adam(p)
    result = {"threads_used": torch.get_num_threads()}
    ops = {"clip_mul": lambda: p.grad.mul_(0.999), "adam": opt.step,
           "cast_fp32_bf16": lambda: p.detach().to(torch.bfloat16)}
    for name, fn in ops.items():
        fn()
        times = []
        for _ in range(reps):
            barrier.wait()
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        result[name] = median(times)
    queue.put((rank, result))


def concurrent_rows(out, procs, numel, threads, reps, ok):
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(procs), ctx.Queue()
    workers = [ctx.Process(target=worker, args=(r, numel, threads, reps, barrier, queue)) for r in range(procs)]
    for w in workers:
        w.start()
    results = [queue.get(timeout=600) for _ in workers]
    for w in workers:
        w.join()
    used = sorted({r["threads_used"] for _, r in results})
    for name in ("clip_mul", "adam", "cast_fp32_bf16"):
        worst = max(r[name] for _, r in results)
        out.row(["concurrent", name, procs, threads, numel, fmt(worst),
                 fmt(procs * numel * BYTES[name] / worst / 1e9, 5), ok])
    out.f.write(f"# procs={procs} threads={threads}: torch.get_num_threads() in the workers = {used}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="offload_step.csv")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--numel", type=int, default=1 << 28, help="parameters of the one-process rows")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--procs", default="8,4", help="process counts of the concurrent rows")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    dev = torch.device("cuda", args.device)
    ok = checks(dev)
    extra = {"cpu_logical_cores": cores, "torch_default_threads": torch.get_num_threads(),
             "omp_num_threads_env": os.environ.get("OMP_NUM_THREADS", "unset"),
             "method": "host ops: wall time of the PyTorch call (median); concurrent: P spawned "
                       "processes, barrier before each repetition, the slowest process's median; "
                       "GBps = bytes the op moves (clip 8, adam 28, cast 6, copies 2 or 4 per "
                       "parameter) x processes / seconds"}
    out = CsvWriter(args.out, "offload_step", [args.device], extra)
    out.header(["kind", "op", "procs", "threads", "numel", "seconds", "GBps", "check"])
    single_rows(out, args.numel, [0, 2], args.reps, dev, ok)
    for procs in (int(x) for x in args.procs.split(",")):
        per = args.numel // procs
        for threads in (0, max(1, cores // procs)):
            concurrent_rows(out, procs, per, threads, args.reps, ok)
    out.close()


if __name__ == "__main__":
    main()
