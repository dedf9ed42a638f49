"""Does an NCCL collective running beside a rank's work take the power-state boost away?

power_phases.py measured (runs 24-25) that GEMMs alternating with memory-bound phases run faster
than in the GEMM-only sustained state of the cost tables: the memory-bound phases draw less
power, the power limit lets the clock rise. In a data-parallel step the gradient all-reduces run
on their own stream beside the backward, and NCCL's kernels draw power too. This probe runs the
same patterns on two GPUs (torchrun, one process per GPU) with and without a stream of NCCL
all-reduces kept busy beside them: a GEMM phase of about G ms (BF16 4096 x 8192 x 8192) then a
memory-bound phase of about M ms (BF16 adds of 1 GiB tensors), and per phase enough all-reduces
of --nccl-mib on a side stream to about span it (half its length at the all-reduce's burst
rate, which interference slows 2-2.6x). Every GEMM phase is timed with CUDA events (median
over the timed phases); the SM clock and board power are sampled by nvidia-smi every 50 ms.
The boost of a pattern is its GEMM rate over the GEMM-only rate in the same NCCL condition, so
the slowdown of the GEMMs by the all-reduce's SMs (interference.csv) cancels.

Not a table the cost model reads unless docs/cost-model.md says so. Usage:
    torchrun --nproc_per_node 2 power_nccl.py --out power_nccl.csv
"""

import argparse
import os
import time

import torch
import torch.distributed as dist

from power_phases import clocks_sampler, finish_pattern, gemm_phase, make_work
from power_phases import phase_counts as gemm_add_counts
from probe_common import CsvWriter, fmt


def phase_counts(gemm_ms, add_ms, ar_ms, g, m):
    """power_phases.py's calls per phase, and the all-reduces beside each phase."""
    n_gemm, n_add = gemm_add_counts(gemm_ms, add_ms, g, m)
    span = n_gemm * gemm_ms + n_add * add_ms
    # Half the phase's span at the burst rate: the all-reduces slow 2-2.6x beside GEMMs and adds
    # (interference.csv), so they about fill the phase without holding the compute stream back.
    return n_gemm, n_add, max(1, round(0.5 * span / ar_ms))


def run(work, flop, x, y, z, buf, counts, nccl, phases, warm, dev_index, tmp):
    """`phases` phases (the first `warm` untimed); returns (median GEMM TFLOP/s, clock, power)."""
    n_gemm, n_add, n_ar = counts
    side = torch.cuda.Stream()
    marks = []
    sampler = clocks_sampler(dev_index, tmp)
    for p in range(phases):
        if nccl:  # no stream waits: the all-reduces run beside the phase, bounded by the syncs
            with torch.cuda.stream(side):
                for _ in range(n_ar):
                    dist.all_reduce(buf)
        gemm_phase(n_gemm, work, marks, p >= warm)
        for _ in range(n_add):
            torch.add(x, y, out=z)
        if p % 8 == 7:
            torch.cuda.synchronize()
    rate, _, clock, power = finish_pattern(sampler, tmp, marks, n_gemm, flop)
    return rate, clock, power


def timed_ms(fn, n=20):
    torch.cuda.synchronize()
    t = time.time()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.time() - t) / n * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="power_nccl.csv")
    ap.add_argument("--seconds", type=float, default=6.0, help="per pattern, warm-up included")
    ap.add_argument("--nccl-mib", type=int, default=64)
    ap.add_argument("--patterns", default="0:-1,5:5,20:20,5:1,1:5")
    args = ap.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    dev = torch.device("cuda", local)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    rank = dist.get_rank()
    work, flop = make_work("bf16", dev)
    n = 1 << 29
    x, y = torch.randn(n, device=dev, dtype=torch.bfloat16), torch.randn(n, device=dev, dtype=torch.bfloat16)
    z = torch.empty_like(x)
    buf = torch.randn(args.nccl_mib << 19, device=dev, dtype=torch.bfloat16)
    work()
    gemm_ms = timed_ms(work)
    add_ms = timed_ms(lambda: torch.add(x, y, out=z))
    dist.all_reduce(buf)
    ar_ms = timed_ms(lambda: dist.all_reduce(buf))
    # Every rank must run the same phases (the all-reduces pair up): the slowest rank's timings.
    t = torch.tensor([gemm_ms, add_ms, ar_ms], device=dev, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    gemm_ms, add_ms, ar_ms = t.tolist()
    csv = None
    if rank == 0:
        csv = CsvWriter(args.out, "power_nccl (GEMM / memory-bound phases, NCCL all-reduce beside)",
                        [0, 1], {"ranks": dist.get_world_size(),
                                 "burst_ms": f"GEMM 4096x8192x8192 {fmt(gemm_ms)}, add 1 GiB {fmt(add_ms)}, "
                                             f"all_reduce {args.nccl_mib} MiB {fmt(ar_ms)}",
                                 "timing": f"{args.seconds} s per pattern, the first third untimed; "
                                           "median GEMM-phase rate; nvidia-smi every 50 ms, mean "
                                           "of the second half; max over ranks of nothing: rank 0"})
        csv.header(["nccl", "gemm_phase_ms", "other_phase_ms", "gemms_per_phase", "adds_per_phase",
                    "allreduces_per_phase", "gemm_tflops", "sm_clock_mhz", "power_w"])
    tmp = f"{args.out}.rank{rank}.samples"
    for nccl in (False, True):
        for pat in args.patterns.split(","):
            g, m = (float(v) for v in pat.split(":"))
            counts = phase_counts(gemm_ms, add_ms, ar_ms, g, m)
            span = counts[0] * gemm_ms + counts[1] * add_ms
            phases = max(6, int(args.seconds * 1e3 / max(span, 1e-3)))
            rate, clock, power = run(work, flop, x, y, z, buf, counts, nccl, phases, phases // 3,
                                     local, tmp)
            if csv:
                csv.row([int(nccl), fmt(counts[0] * gemm_ms), fmt(counts[1] * add_ms), counts[0],
                         counts[1], counts[2] if nccl else 0, fmt(rate), fmt(clock), fmt(power)])
                print(int(nccl), g, m, counts, fmt(rate), fmt(clock), fmt(power), flush=True)
    if csv:
        csv.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
