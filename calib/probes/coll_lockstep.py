"""What a blocking collective costs between compute kernels, as tensor parallelism runs it, against
the same collective timed back to back (the NCCL tables): two ranks loop (BF16 GEMM; collective
that the next GEMM waits for), and CUDA events on the compute stream time the GEMM and the
stretch from the GEMM's end to the collective's completion. The excess of that stretch over the
back-to-back time is what a step pays per collective beyond the tables: the ranks' skew (the
later GEMM sets the start), NCCL's launch and handshake when it is not pipelined behind another
call, and the power state's effect on the GEMM, which the GEMM column shows.

Run under torchrun with 2 processes (NCCL_NVLS_ENABLE=0). Medians over --iters iterations after
a warm-up; random data. Not a table the cost model reads (docs/validation.md).
Usage: torchrun --nproc_per_node 2 coll_lockstep.py --out coll_lockstep.csv
"""

import argparse
import os
import statistics

import torch
import torch.distributed as dist

from probe_common import CsvWriter, fmt

GEMMS = {"small": (4096, 4096, 4096), "large": (4096, 14336, 4096)}


def collective(kind, x, out):
    if kind == "all_reduce":
        dist.all_reduce(x)
    elif kind == "all_gather":
        dist.all_gather_into_tensor(out, x)
    else:
        dist.reduce_scatter_tensor(out, x)


def buffers(kind, nbytes, dev, world):
    n = nbytes // 2
    if kind == "all_gather":  # nbytes is the gathered output, as the NCCL tables count it
        return torch.randn(n // world, device=dev, dtype=torch.bfloat16), torch.empty(
            n, device=dev, dtype=torch.bfloat16)
    if kind == "reduce_scatter":
        return torch.randn(n, device=dev, dtype=torch.bfloat16), torch.empty(
            n // world, device=dev, dtype=torch.bfloat16)
    return torch.randn(n, device=dev, dtype=torch.bfloat16), None


def back_to_back(kind, x, out, iters):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(5):
        collective(kind, x, out)
    torch.cuda.synchronize()
    dist.barrier()
    start.record()
    for _ in range(iters):
        collective(kind, x, out)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e-3 / iters


def lockstep(kind, x, out, a, b, iters):
    """Median GEMM time and median GEMM-end-to-collective-done time, seconds."""
    ev = [[torch.cuda.Event(enable_timing=True) for _ in range(3)] for _ in range(iters)]
    for _ in range(5):
        torch.matmul(a, b)
        collective(kind, x, out)
    torch.cuda.synchronize()
    dist.barrier()
    for e in ev:
        e[0].record()
        torch.matmul(a, b)
        e[1].record()
        collective(kind, x, out)
        e[2].record()
    torch.cuda.synchronize()
    gemm = statistics.median(e[0].elapsed_time(e[1]) * 1e-3 for e in ev)
    coll = statistics.median(e[1].elapsed_time(e[2]) * 1e-3 for e in ev)
    return gemm, coll


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--sizes", default="4194304,16777216,33554432,67108864")
    args = ap.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    torch.manual_seed(1234 + rank)
    csv = None
    if rank == 0:
        csv = CsvWriter(args.out, "coll_lockstep (GEMM then a blocking NCCL collective, 2 ranks)",
                        list(range(world)), {
                            "timing": f"CUDA events on the compute stream, median of {args.iters} "
                                      "iterations after 5; max over ranks; back_to_back: the "
                                      "collective alone, queued iterations / count"})
        csv.header(["collective", "bytes", "gemm", "gemm_s", "back_to_back_s", "in_step_s",
                    "excess_s"])
    for kind in ("all_reduce", "all_gather", "reduce_scatter"):
        for nbytes in (int(s) for s in args.sizes.split(",")):
            x, out = buffers(kind, nbytes, dev, world)
            alone = back_to_back(kind, x, out, args.iters)
            for name, (m, k, n) in GEMMS.items():
                a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
                b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
                gemm, coll = lockstep(kind, x, out, a, b, args.iters)
                t = torch.tensor([gemm, coll, alone], dtype=torch.float64, device=dev)
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
                g, c, al = t.tolist()
                if csv:
                    csv.row([kind, nbytes, name, fmt(g), fmt(al), fmt(c), fmt(c - al)])
                    print(kind, nbytes, name, fmt(g), fmt(al), fmt(c), fmt(c - al), flush=True)
    if csv:
        csv.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
