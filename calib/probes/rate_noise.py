"""How much the time of identical GPU work varies from one repetition to the next under
sustained load, and over which time scales: the noise that makes ranks of a synchronous job
arrive at a blocking collective at different times (Hoefler, Schneider and Lumsdaine, SC10,
"Characterizing the influence of system noise on large-scale applications by simulation").

A power-limited GPU changes its SM clock continually to hold its board power at the limit, so
the same kernel takes a different time from one call to the next. Each workload below runs its
item (a GEMM, or a pass of GEMMs, attention and element-wise kernels shaped like a transformer
layer) back to back for --seconds, with a CUDA event between consecutive items, after --warm-s
of BF16 heater GEMMs (the sustained power state of training). The host only enqueues, so the
items run without gaps and each event-to-event time is one item's GPU time.

Written per workload: the items' mean time, their coefficient of variation, the lag-1
autocorrelation, and for windows of 1, 2, 4, ... consecutive items the Allan deviation of the
window's mean time relative to the mean (the relative spread of the time to do a window's work,
robust to slow drift) and the plain standard deviation of non-overlapping window means. With
--series DIR the raw item times go to DIR/rate_noise_<workload>.npy (float32 seconds).

Not a table the cost model reads unless docs/cost-model.md says so.
Usage: python3 rate_noise.py --device 0 --seconds 20 --warm-s 8 --out rate_noise.csv
"""

import argparse
import math
import os

import numpy as np
import torch

from probe_common import CsvWriter, Heater, clocks_sampler, fmt


def gemm_bf16(dev):
    a = torch.randn(8192, 2048, device=dev, dtype=torch.bfloat16)
    b = torch.randn(2048, 8192, device=dev, dtype=torch.bfloat16)
    c = torch.empty(8192, 8192, device=dev, dtype=torch.bfloat16)
    return lambda: torch.matmul(a, b, out=c)


def gemm_fp8(dev):
    a = torch.randn(8192, 4096, device=dev).to(torch.float8_e4m3fn)
    b = torch.randn(8192, 4096, device=dev).to(torch.float8_e4m3fn).t()
    one = torch.tensor(1.0, device=dev)
    return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                    use_fast_accum=True)


def layer_pass(dev):
    """One forward pass of a Llama3-70B layer as one TP4 rank of a CP2 job computes it (4,096
    tokens; hidden 8,192; 16 query and 2 KV heads of 128; FFN 28,672 / 4), plus the backward's
    GEMMs: GEMM, attention and element-wise kernels in a training layer's proportions."""
    t, h, f = 4096, 8192, 28672 // 4
    x = torch.randn(t, h, device=dev, dtype=torch.bfloat16)
    w_qkv = torch.randn(h, (16 + 4) * 128, device=dev, dtype=torch.bfloat16) * 0.01
    w_o = torch.randn(16 * 128, h, device=dev, dtype=torch.bfloat16) * 0.01
    w_1 = torch.randn(h, 2 * f, device=dev, dtype=torch.bfloat16) * 0.01
    w_2 = torch.randn(f, h, device=dev, dtype=torch.bfloat16) * 0.01
    norm = torch.nn.RMSNorm(h, device=dev, dtype=torch.bfloat16)

    def run():
        y = norm(x)
        qkv = y @ w_qkv
        q = qkv[:, :16 * 128].view(1, t, 16, 128).transpose(1, 2)
        k = qkv[:, 16 * 128:18 * 128].view(1, t, 2, 128).transpose(1, 2)
        v = qkv[:, 18 * 128:].view(1, t, 2, 128).transpose(1, 2)
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                             enable_gqa=True)
        z = x + o.transpose(1, 2).reshape(t, 16 * 128) @ w_o
        g = norm(z) @ w_1
        a = torch.nn.functional.silu(g[:, :f]) * g[:, f:]
        out = z + a @ w_2
        # the backward's GEMMs of the two big linears (dgrad and wgrad), on the same operands
        _ = out @ w_2.t()
        _ = a.t() @ out
        _ = g @ w_1.t()
        return out
    return run


WORKLOADS = {"gemm_bf16": gemm_bf16, "gemm_fp8": gemm_fp8, "layer_pass": layer_pass}


def item_times(run, seconds):
    """Seconds of each of the back-to-back items run for about `seconds` of GPU time."""
    for _ in range(3):  # first calls: cuBLASLt/cuDNN plans, allocator
        run()
    torch.cuda.synchronize()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    ev[0].record()
    for _ in range(5):
        run()
    ev[1].record()
    torch.cuda.synchronize()
    est = ev[0].elapsed_time(ev[1]) * 1e-3 / 5
    n = max(16, int(seconds / est))
    events = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    events[0].record()
    for i in range(n):
        run()
        events[i + 1].record()
    torch.cuda.synchronize()
    return np.array([events[i].elapsed_time(events[i + 1]) * 1e-3 for i in range(n)])


def window_means(x, w):
    """Means of the non-overlapping windows of w consecutive items, or None if fewer than 3."""
    m = len(x) // w
    return x[:m * w].reshape(m, w).mean(axis=1) if m >= 3 else None


def allan_dev(x, w):
    """Allan deviation of the means of windows of w items, relative to the mean item time."""
    means = window_means(x, w)
    if means is None:
        return float("nan")
    return math.sqrt(0.5 * np.mean(np.diff(means) ** 2)) / x.mean()


def window_sd(x, w):
    """Standard deviation of the means of windows of w items, relative to the mean item time."""
    means = window_means(x, w)
    return float("nan") if means is None else means.std(ddof=1) / x.mean()


def read_clocks(path):
    """(SM MHz, board W) rows of the sampler's file; unreadable lines are skipped."""
    rows = []
    for line in open(path, encoding="utf-8"):
        parts = [p.strip() for p in line.split(",")]
        try:
            rows.append((float(parts[1]), float(parts[2])))
        except (ValueError, IndexError):
            continue
    return np.array(rows if rows else [(float("nan"), float("nan"))])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="rate_noise.csv")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--warm-s", type=float, default=8.0)
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help="comma-separated; a workload may repeat (a second pass)")
    ap.add_argument("--series", default="", help="directory for the raw item times (.npy)")
    args = ap.parse_args()
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    torch.manual_seed(1234)
    csv = CsvWriter(args.out, "rate_noise", [args.device], {
        "timing": "one CUDA event between consecutive back-to-back items; host only enqueues",
        "warm": f"{args.warm_s} s of BF16 8192^3 heater GEMMs before the first workload",
        "allan_dev": "sqrt(mean((m[i+1]-m[i])^2)/2) / mean item, m = means of windows of w items",
        "window_sd": "standard deviation of non-overlapping window means / mean item"})
    csv.header(["workload", "items", "item_s", "item_cv", "lag1_autocorr", "window_items",
                "window_s", "windows", "allan_dev", "window_sd", "sm_mhz_mean", "sm_mhz_sd",
                "power_w_mean"])
    Heater(dev).warm(args.warm_s)
    done = []
    for name in args.workloads.split(","):
        run = WORKLOADS[name](dev)
        tag = f"{name}_{done.count(name) + 1}"
        done.append(name)
        clk_path = os.path.join(os.path.dirname(os.path.abspath(args.out)), f"clocks_{tag}.csv")
        sampler = clocks_sampler(args.device, clk_path,
                                 "timestamp,clocks.sm,power.draw,temperature.gpu")
        x = item_times(run, args.seconds)
        sampler.terminate()
        sampler.wait()
        clk = read_clocks(clk_path)
        if args.series:
            os.makedirs(args.series, exist_ok=True)
            np.save(os.path.join(args.series, f"rate_noise_{tag}.npy"), x.astype(np.float32))
        d = x - x.mean()
        lag1 = float(np.dot(d[1:], d[:-1]) / np.dot(d, d))
        w = 1
        while len(x) // w >= 8:
            csv.row([tag, len(x), fmt(x.mean()), fmt(x.std(ddof=1) / x.mean(), 4), fmt(lag1, 4),
                     w, fmt(w * x.mean()), len(x) // w, fmt(allan_dev(x, w), 4),
                     fmt(window_sd(x, w), 4), fmt(clk[:, 0].mean(), 5), fmt(clk[:, 0].std(), 4),
                     fmt(clk[:, 1].mean(), 5)])
            w *= 2
        print(f"{tag}: {len(x)} items of {x.mean()*1e3:.3f} ms, cv {x.std()/x.mean():.4f}",
              flush=True)
    csv.close()


if __name__ == "__main__":
    main()
