"""Interference probe: compute time while an NCCL collective runs concurrently on another
stream, and the collective's time while compute runs, on 2 GPUs (one process per GPU,
torch.distributed with the NCCL backend). Compute: a BF16 8192^3 GEMM (torch.matmul, cuBLAS) and
causal attention forward + backward (SDPA, cuDNN backend, 32 heads / 4 kv heads, seq 8192, d 128:
Llama3-70B at tp=2); other GEMM shapes as 'gemm:M:N:K' (run 20: beside 4 and 16 NCCL CTAs, a
real communication kernel holding that many SMs, against run 18's spinning holders). Collective: all_reduce of BF16 buffers of several sizes. NCCL channel count
through the communicator config (min_ctas = max_ctas = C, NCCL's NCCL_MIN_CTAS/NCCL_MAX_CTAS,
the successors of NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS), 'default' leaves NCCL's choice.

Method per (workload, size, channels): time each side alone; then enqueue one side long enough
to cover the other (1.5x its expected span) and time the covered side's calls with CUDA events.
slowdown = time together / time alone. Every rank does the same; rank 0 writes all rows.
"""

import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from probe_common import CsvWriter, add_heat_argument, fmt, heater_from, median

HEATER = None  # probe_common.Heater of this rank with --heat-s > 0
HEAT_S = 0.1   # matmuls queued before every timed span with --heat-s (sustained power state)


def heat(stream):
    """With --heat-s: queues HEAT_S of heater matmuls on `stream`, so that the timed span after
    them starts at the sustained power state of back-to-back GEMMs and after the host has
    enqueued it. Returns an event recorded after them (None without --heat-s)."""
    if HEATER is None:
        return None
    with torch.cuda.stream(stream):
        HEATER(HEAT_S)
        ev = torch.cuda.Event()
        ev.record(stream)
    return ev


def make_compute(kind, dev):
    """'gemm' (8192^3), 'gemm:M:N:K' (C[M,N] = A[M,K] B[K,N], BF16), 'membound' (element-wise
    add of 256 MiB BF16 tensors: HBM-bound, as the norms and activations of a layer) or
    'attention'."""
    if kind == "membound":
        n = 1 << 27
        x = torch.rand(n, device=dev, dtype=torch.bfloat16)
        y = torch.rand(n, device=dev, dtype=torch.bfloat16)
        z = torch.empty_like(x)
        return lambda: torch.add(x, y, out=z)
    if kind.startswith("gemm"):
        m, n, k = (int(x) for x in kind.split(":")[1:]) if ":" in kind else (8192, 8192, 8192)
        a = torch.rand(m, k, device=dev, dtype=torch.bfloat16) - 0.5
        b = torch.rand(k, n, device=dev, dtype=torch.bfloat16) - 0.5
        c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        return lambda: torch.matmul(a, b, out=c)
    q = torch.randn(1, 32, 8192, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, 4, 8192, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(1, 4, 8192, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
    do = torch.randn(1, 32, 8192, 128, device=dev, dtype=torch.bfloat16)

    def attn():
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        o.backward(do)
        q.grad = k.grad = v.grad = None
    return attn


def span(stream, fn, count):
    """Enqueues `count` calls of fn on `stream` between two events; returns the events."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        a.record(stream)
        for _ in range(count):
            fn()
        b.record(stream)
    return a, b


def per_call(events, count):
    return events[0].elapsed_time(events[1]) * 1e-3 / count


def alone(stream, fn, count, reps=5):
    t = []
    for _ in range(reps):
        dist.barrier()
        torch.cuda.synchronize()
        heat(stream)
        ev = span(stream, fn, count)
        torch.cuda.synchronize()
        t.append(per_call(ev, count))
    return median(t)


def together(cover_stream, cover_fn, cover_count, stream, fn, count, reps=3):
    """Per-call time of fn while cover_fn runs on another stream for the whole span. The cover
    calls are enqueued interleaved with the measured ones so that neither side waits on the
    host's launches of the other."""
    t = []
    for _ in range(reps):
        dist.barrier()
        torch.cuda.synchronize()
        lead = max(1, cover_count // (count + 1))
        warm = heat(stream)
        if warm is not None:
            cover_stream.wait_event(warm)
        with torch.cuda.stream(cover_stream):
            for _ in range(lead):
                cover_fn()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(stream)
        done = lead
        for i in range(count):
            with torch.cuda.stream(stream):
                fn()
            target = lead + (i + 1) * (cover_count - lead) // count
            with torch.cuda.stream(cover_stream):
                while done < target:
                    cover_fn()
                    done += 1
        b.record(stream)
        torch.cuda.synchronize()
        t.append(per_call((a, b), count))
    return median(t)


def check_allreduce(group, dev, rank):
    """all_reduce of rank+1 everywhere must give 3 on both ranks."""
    x = torch.full((1 << 20,), float(rank + 1), device=dev, dtype=torch.bfloat16)
    dist.all_reduce(x, group=group)
    return float((x.float() - 3.0).abs().max().item())


def agree(values, dev):
    """The maximum of each integer over the ranks, so that every rank issues the same calls."""
    t = torch.tensor(values, device=dev, dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return [int(x) for x in t.tolist()]


def channel_groups(spec):
    groups = {"default": dist.group.WORLD}
    for c in spec.split(","):
        if c == "default":
            continue
        opts = dist.ProcessGroupNCCL.Options()
        try:
            opts.config.min_ctas = int(c)
            opts.config.max_ctas = int(c)
        except AttributeError:
            print("interference: this PyTorch has no NCCL config in pg_options; channel counts "
                  "other than default are skipped", file=sys.stderr, flush=True)
            return groups
        groups[c] = dist.new_group([0, 1], backend="nccl", pg_options=opts)
    return groups


def measure(fn, t_c, group, size, args, dev, comp_stream, comm_stream):
    """Alone and together times of both sides, in alternating repetitions so that clock and
    power drift affects both alike; medians."""
    buf = torch.rand(size // 2, device=dev, dtype=torch.bfloat16) - 0.5
    comm = lambda: dist.all_reduce(buf, group=group)  # noqa: E731
    comm()
    t_m1 = alone(comm_stream, comm, 2, reps=2)
    n_c = args.compute_calls
    (n_m,) = agree([max(4, min(400, int(0.05 / max(t_m1, 1e-6))))], dev)
    t_m = alone(comm_stream, comm, n_m, reps=1)
    c_cover, m_cover = agree([int(1.5 * n_m * t_m / t_c) + 2, int(1.5 * n_c * t_c / t_m) + 2], dev)
    c_alone, c_busy, m_alone, m_busy = [], [], [], []
    for _ in range(args.reps):
        c_alone.append(alone(comp_stream, fn, n_c, reps=1))
        c_busy.append(together(comm_stream, comm, m_cover, comp_stream, fn, n_c, reps=1))
        m_alone.append(alone(comm_stream, comm, n_m, reps=1))
        m_busy.append(together(comp_stream, fn, c_cover, comm_stream, comm, n_m, reps=1))
    tc, tcb, tm, tmb = (median(v) for v in (c_alone, c_busy, m_alone, m_busy))
    return [fmt(tc), fmt(tcb), fmt(tcb / tc, 4), fmt(tm), fmt(tmb), fmt(tmb / tm, 4),
            fmt(size / tm * 1e-9, 5)]


def worker(rank, args, rows):
    global HEATER
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)
    HEATER = heater_from(args, dev)
    dist.init_process_group("nccl", rank=rank, world_size=2, init_method=args.init,
                            device_id=dev)
    comp_stream, comm_stream = torch.cuda.Stream(dev), torch.cuda.Stream(dev)
    groups = channel_groups(args.channels)
    for kind in args.workloads.split(","):
        fn = make_compute(kind, dev)
        for _ in range(3):
            fn()
        t_c = alone(comp_stream, fn, args.compute_calls)
        for ch, group in groups.items():
            err = check_allreduce(group, dev, rank)
            for size in (int(s) for s in args.sizes.split(",")):
                cells = measure(fn, t_c, group, size, args, dev, comp_stream, comm_stream)
                rows.append([rank, kind, ch, size] + cells + [fmt(err, 3)])
                print(" ".join(map(str, rows[-1])), file=sys.stderr, flush=True)
    dist.barrier()
    dist.destroy_process_group()


def entry(rank, args, queue):
    rows = []
    worker(rank, args, rows)
    queue.put(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="interference.csv")
    ap.add_argument("--sizes", default="16777216,134217728,1073741824")
    ap.add_argument("--channels", default="default,4,16")
    ap.add_argument("--workloads", default="gemm,attention",
                    help="comma-separated: gemm, gemm:M:N:K, membound, attention")
    ap.add_argument("--compute-calls", type=int, default=30)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--init", default="tcp://127.0.0.1:29533")
    ap.add_argument("--timeout", type=float, default=300.0)
    add_heat_argument(ap)
    args = ap.parse_args()
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=entry, args=(r, args, queue)) for r in range(2)]
    for p in procs:
        p.start()
    rows, waited = [], 0.0
    while len(rows) < len(procs):
        try:
            rows.append(queue.get(timeout=5.0))
        except Exception:  # queue.Empty: see whether a rank died
            waited += 5.0
            if waited > args.timeout or any(p.exitcode not in (None, 0) for p in procs):
                for p in procs:
                    p.terminate()
                sys.exit("interference: a rank failed or timed out")
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs):
        sys.exit("interference: a rank failed")
    csv = CsvWriter(args.out, "interference (torch.distributed NCCL + cuBLAS GEMM / cuDNN SDPA)",
                    [0, 1], {
                        "method": "side alone vs side while the other covers its whole span; "
                                  "CUDA events; medians" + (
                                      f"; every span queued behind {HEAT_S} s of BF16 8192^3 "
                                      f"heater matmuls on its stream, after {args.heat_s} s of "
                                      "them (sustained power state)" if args.heat_s > 0 else ""),
                        "collective": "all_reduce, BF16, bytes per rank; channels via NCCL config "
                                      "min_ctas=max_ctas",
                        "compute": "gemm = bf16 8192^3 torch.matmul; attention = SDPA cuDNN "
                                   "fwd+bwd b1 h32 kv4 s8192 d128 causal"})
    csv.header(["rank", "compute", "channels", "bytes", "compute_alone_s", "compute_with_comm_s",
                "compute_slowdown", "comm_alone_s", "comm_with_compute_s", "comm_slowdown",
                "comm_algbw_alone_GBps", "check_err"])
    for part in rows:
        for r in part:
            csv.row(r)
    csv.close()


if __name__ == "__main__":
    main()
