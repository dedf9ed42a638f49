"""Does the per-kernel delay beside host copies add up over a training step? (docs/cost-model.md,
"Kernels beside host copies"; calibration runs 82-83.)

Runs 82-83 did not answer it: with a backlog of 256 MiB copies queued ahead of the step (both
directions, or device-to-host alone), the step took 3.1-3.4x as long and the copies ended before
it (`covered` 0): the step waited for the whole queue, so something in it synchronizes with the
copy streams, which the kernel-level probe (copy_interference.py: kernels only) never met. A
valid check issues the copies in pace with the step, as Megatron's offload manager issues a
group at a time; not done yet. The model does not use these runs.

copy_interference.py measured single kernels alone and beside pinned host copies; the cost
model charged each kernel of a step its class's line (a fixed time per call and a share of its
time; since runs 88-91, copy_pace.py, the share alone). This probe runs step_check.py's
single-GPU step (a 4-layer Llama-3-8B-shaped transformers model, BF16, sdpa attention, micro
batch 1) forward + backward, alone and while pinned 256 MiB
copies run in both directions over the whole step, and profiles one step alone: how many kernels
of each class (GEMM, attention, other) it launches and their time. The prediction from the
per-kernel lines is made offline from these counts (docs/cost-model.md); the probe only measures.

Per sequence length: the median of --steps steps each way, alternating, after --warm-s seconds
of steps; steps timed with CUDA events on the compute stream, the copies' coverage checked with
events (`covered`). Writes one CSV with a provenance header. Never changes clocks or settings.
"""

import argparse
import time

import torch

from copy_interference import CHUNK, Background
from probe_common import CsvWriter, fmt, median
from step_check import build_model, fwd_bwd


def kernel_class(name):
    n = name.lower()
    if any(k in n for k in ("flash", "fmha", "sdpa", "attention", "cudnn")):
        return "attention"
    if any(k in n for k in ("gemm", "xmma", "nvjet", "cutlass", "sm90", "matmul")):
        return "gemm"
    return "other"


def profile_step(model, ids):
    """{class: (kernels, seconds)} of one forward + backward."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fwd_bwd(model, ids, 1)
        torch.cuda.synchronize()
    out = {"gemm": [0, 0.0], "attention": [0, 0.0], "other": [0, 0.0]}
    for e in prof.events():
        if e.device_type.name != "CUDA" or "Memcpy" in e.name or "Memset" in e.name:
            continue
        c = out[kernel_class(e.name)]
        c[0] += 1
        us = getattr(e, "device_time_total", None)
        c[1] += (us if us is not None else e.cuda_time_total) * 1e-6
    return out


def timed_step(model, ids, background, chunks, directions=("d2h", "h2d")):
    torch.cuda.synchronize()
    copies = background.enqueue(directions, chunks) if chunks else {}
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    ev[0].record()
    fwd_bwd(model, ids, 1)
    ev[1].record()
    torch.cuda.synchronize()
    covered = all(ev[0].elapsed_time(end) >= ev[0].elapsed_time(ev[1]) for _, end in copies.values())
    model.zero_grad(set_to_none=False)
    return ev[0].elapsed_time(ev[1]) * 1e-3, covered


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seqs", default="4096,8192")
    ap.add_argument("--warm-s", type=float, default=8.0)
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--directions", default="d2h,h2d",
                    help="copy directions beside the step (run 82: both; run 83: d2h)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    seqs = [int(s) for s in args.seqs.split(",")]
    model = build_model(args.layers, max(seqs), dev)
    background = Background(dev)
    out = CsvWriter(args.out, "copy_step", [args.device],
                    {"model": f"llama3_8b shape, {args.layers} layers, transformers eager modules, sdpa",
                     "method": "fwd+bwd alone and beside both-direction pinned 256 MiB copies, "
                               "alternating, medians; one profiled step alone for kernel counts"})
    out.header(["seq", "directions", "steps", "fwd_bwd_alone_s", "fwd_bwd_beside_s", "slowdown",
                "gemm_kernels", "gemm_s", "attention_kernels", "attention_s", "other_kernels",
                "other_s", "covered", "check"])
    for seq in seqs:
        ids = torch.randint(0, 128000, (1, seq), device=dev)
        end = time.perf_counter() + args.warm_s
        while time.perf_counter() < end:
            timed_step(model, ids, background, 0)
        probe_t, _ = timed_step(model, ids, background, 0)
        chunks = int(probe_t * 2.0 * 55e9 / CHUNK) + 3
        alone, beside, cover = [], [], True
        for _ in range(args.steps):
            a, _ = timed_step(model, ids, background, 0)
            b, c = timed_step(model, ids, background, chunks, tuple(args.directions.split(",")))
            alone.append(a)
            beside.append(b)
            cover = cover and c
        prof = profile_step(model, ids)
        model.zero_grad(set_to_none=False)
        ok = int(all(p.grad is None or torch.isfinite(p.grad).all().item() for p in model.parameters()))
        a, b = median(alone), median(beside)
        out.row([seq, args.directions.replace(",", "+"), args.steps, fmt(a), fmt(b), fmt(b / a, 5),
                 prof["gemm"][0], fmt(prof["gemm"][1]), prof["attention"][0], fmt(prof["attention"][1]),
                 prof["other"][0], fmt(prof["other"][1]), int(cover), ok])
    out.close()


if __name__ == "__main__":
    main()
