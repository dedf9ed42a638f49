"""Attention probe: causal fused attention forward and backward through PyTorch's
scaled_dot_product_attention with the cuDNN backend (SDPBackend.CUDNN_ATTENTION, i.e. cuDNN's
SDPA graph) and, as a second column, the FlashAttention-2 backend (SDPBackend.FLASH_ATTENTION).
cuDNN's SDPA is driven through PyTorch rather than from C++: the cuDNN frontend needed to build
the graph from C++ is not on the GPU machine. BF16, batch 1 (Megatron's micro-batch), heads and
kv_heads of the catalog models per tensor-parallel rank, head_dim 128 (and 192/128 for MLA).

FLOP convention (columns `flops`, `tflops`): forward 2*b*h*s_q*s_kv*(d + d_v) * 0.5 for the
causal mask; backward 2.5x forward (five matmuls against two).
"""

import argparse
import math
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from probe_common import CsvWriter, add_heat_argument, fmt, open_device, time_fwd_bwd

HEATER = None  # probe_common.Heater with --heat-s > 0

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def grids(name):
    """(set, head_dim, head_dim_v, [(heads, kv_heads)], [seq]) tuples of a named grid."""
    # 512 .. 128k in steps of 2 with the 1.5x points between (768, 1536, 3072, ...): the seq axis
    # is where cuDNN's efficiency moves most between nodes, so it gets the finer steps; 512 and
    # 768 make 1k an interior node (the leave-one-out check extrapolated there).
    seqs = sorted([512 << i for i in range(9)] + [768 << i for i in range(8)])
    if name == "smoke":
        return [("gqa", 128, 128, [(8, 1), (64, 8)], [1024, 4096]),
                ("mla", 192, 128, [(16, 16)], [2048])]
    if name == "mha_dense":
        # Run 58: the MHA set (GPT-3's 96 heads per TP rank, and the 84 of the catalog's
        # GPT-4-class MoE) on 1.5x steps of heads and seq, 1k-32k: the full grid's 2x steps over
        # 12-96 heads and 2k-8k left a held-out node a 4x gap and MHA jobs past 8k out of grid.
        return [("mha", 128, 128, [(h, h) for h in (6, 8, 12, 16, 24, 32, 48, 64, 96, 128)],
                 [s for s in seqs if 1024 <= s <= 32768])]
    if name == "long":
        # Run 64: beyond the table's 128k, where the model scales the 128k node by seq^2 (S3's
        # Llama 3.1 8B at 192k and 256k on one GPU): Llama 3 8B's 32/8 heads at tp 1 and 8/1
        # (tp 4), with 128k again as the seam against the table.
        return [("gqa", 128, 128, [(32, 8), (8, 1)], [131072, 196608, 262144])]
    if name == "long_full":
        # Run 65: the table's gqa set (heads 4-128, kv_heads heads/8) at 192k and 256k, so that
        # its seq axis reaches 256k: run 64 found the forward 4-12% slower there than the 128k
        # node scaled by seq^2.
        return [("gqa", 128, 128, [(h, max(1, h // 8)) for h in (4, 8, 16, 32, 64, 128)],
                 [196608, 262144])]
    if name == "long_mla":
        # Run 69: the MLA set (DeepSeek-V3's head_dim 192/128) beyond its 32k, to 128k (the
        # model's long-context extension), where the model had scaled the 32k node by seq^2.
        return [("mla", 192, 128, [(h, h) for h in (16, 32, 64, 128)], [49152, 65536, 98304, 131072])]
    if name == "long_mha":
        # Run 69: the MHA set of run 58 (6-128 heads) beyond its 32k, to 128k.
        return [("mha", 128, 128, [(h, h) for h in (6, 8, 12, 16, 24, 32, 48, 64, 96, 128)],
                 [49152, 65536, 98304, 131072])]
    if name == "long_flash":
        # Run 72: FlashAttention-2's gqa (heads 4-128) and mha (6-128) sets beyond their 32k, to
        # 128k, as cuDNN's (runs 64-65, 69), where the model had scaled the 32k node by seq^2.
        long = [49152, 65536, 98304, 131072]
        return [("gqa", 128, 128, [(h, max(1, h // 8)) for h in (4, 8, 16, 32, 64, 128)], long),
                ("mha", 128, 128, [(h, h) for h in (6, 8, 12, 16, 24, 32, 48, 64, 96, 128)], long)]
    if name == "h100":
        # Run 85: nodes of the H200 table at the catalog's per-rank heads (Llama 3 8B-405B at
        # tp 1-8: 8-64 gqa heads; GPT-3 at tp 4-2: 24-48 mha heads; DeepSeek-V3's MLA), 1k-32k,
        # to set an H100's times beside the H200's at the same points.
        return [("gqa", 128, 128, [(8, 1), (16, 2), (32, 4), (64, 8)],
                 [1024, 2048, 4096, 8192, 16384, 32768]),
                ("mha", 128, 128, [(24, 24), (48, 48)], [2048, 4096, 8192]),
                ("mla", 192, 128, [(16, 16), (32, 32)], [4096, 8192])]
    full = [("gqa", 128, 128, [(h, max(1, h // 8)) for h in (4, 8, 16, 32, 64, 128)], seqs),
            ("mha", 128, 128, [(h, h) for h in (12, 24, 48, 96)], [s for s in seqs if 2048 <= s <= 8192]),
            ("mla", 192, 128, [(h, h) for h in (16, 32, 64, 128)], [s for s in seqs if s <= 32768])]
    if name == "gqa_mla":
        # Run 63: the full grid's gqa and mla sets again (the mha set has its own dense grid).
        return [g for g in full if g[0] != "mha"]
    return full


def flops_fwd(b, h, s, d, dv):
    return 2.0 * b * h * s * s * (d + dv) * 0.5


def reference(q, k, v):
    """Causal attention in float64 (k, v already expanded to q's heads)."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = torch.matmul(q.double(), k.double().transpose(-1, -2)) * scale
    n = s.shape[-1]
    mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
    return torch.matmul(torch.softmax(s.masked_fill(mask, float("-inf")), -1), v.double())


def sdpa(q, k, v, gqa):
    if gqa == "native":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def rel_err(got, want):
    return ((got.double() - want).norm() / want.norm()).item()


def grad_check(backend, d, dv, h, kv, gqa, dev):
    """Forward and backward of a small problem against float64 autograd: max relative error."""
    g = torch.Generator(device=dev).manual_seed(7)
    q = torch.randn(1, h, 256, d, device=dev, generator=g).bfloat16().requires_grad_()
    k = torch.randn(1, kv, 256, d, device=dev, generator=g).bfloat16().requires_grad_()
    v = torch.randn(1, kv, 256, dv, device=dev, generator=g).bfloat16().requires_grad_()
    do = torch.randn(1, h, 256, dv, device=dev, generator=g).bfloat16()
    with sdpa_kernel([BACKENDS[backend]]):
        o = sdpa(q, k, v, gqa)
        o.backward(do)
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    r = h // kv
    o64 = reference(q64, k64.repeat_interleave(r, 1), v64.repeat_interleave(r, 1))
    o64.backward(do.double())
    return max(rel_err(o, o64), rel_err(q.grad, q64.grad), rel_err(k.grad, k64.grad),
               rel_err(v.grad, v64.grad))


def make_inputs(h, kv, s, d, dv, gqa, dev):
    q = torch.randn(1, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    rk = 1 if gqa == "native" else h // kv
    k = torch.randn(1, kv * rk, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(1, kv * rk, s, dv, device=dev, dtype=torch.bfloat16, requires_grad=True)
    do = torch.randn(1, h, s, dv, device=dev, dtype=torch.bfloat16)
    return q, k, v, do


def measure(backend, h, kv, s, d, dv, gqa, dev, budget, cps):
    """Median forward and backward seconds per call, batches, calls per batch, and the forward
    error on a causal prefix. Calls run in batches of `calls` behind a GPU spin (see queued)."""
    q, k, v, do = make_inputs(h, kv, s, d, dv, gqa, dev)
    with sdpa_kernel([BACKENDS[backend]]):
        f, b, reps, calls = time_fwd_bwd(lambda: sdpa(q, k, v, gqa), (q, k, v), do, budget, cps,
                                         HEATER)
        # Causal prefix check: the first 256 queries see only the first 256 keys.
        n = min(256, s)
        o = sdpa(q, k, v, gqa).detach()
    r = q.shape[1] // k.shape[1]
    kk, vv = k[:, :1, :n], v[:, :1, :n]
    want = reference(q[:, :r, :n].detach(), kk.detach().expand(-1, r, -1, -1),
                     vv.detach().expand(-1, r, -1, -1))
    err = rel_err(o[:, :r, :n], want)
    del q, k, v, do, o
    return f, b, reps, calls, err


def run_point(backend, h, kv, s, d, dv, mode, dev, budget, checked, cps):
    """Measures one shape; None (with a message) when the backend refuses it."""
    try:
        if mode not in checked:
            checked[mode] = grad_check(backend, d, dv, h, kv, mode, dev)
        f, b, reps, calls, err = measure(backend, h, kv, s, d, dv, mode, dev, budget, cps)
    except RuntimeError as e:
        print(f"{backend} h={h} kv={kv} s={s} d={d}/{dv} {mode}: {str(e).splitlines()[0]}",
              file=sys.stderr, flush=True)
        torch.cuda.empty_cache()
        return None
    return f, b, reps, calls, max(err, checked[mode]), mode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="attention.csv")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--grid", default="full")
    ap.add_argument("--backends", default="cudnn,flash")
    ap.add_argument("--flash-max-seq", type=int, default=32768)
    ap.add_argument("--point-budget", type=float, default=1.5)
    add_heat_argument(ap)
    args = ap.parse_args()
    global HEATER
    dev, cps, HEATER = open_device(args)
    csv = CsvWriter(args.out, "attention (PyTorch SDPA)", [args.device], {
        "backends": "cudnn = SDPBackend.CUDNN_ATTENTION (cuDNN SDPA graph); "
                    "flash = SDPBackend.FLASH_ATTENTION (FlashAttention-2 in PyTorch)",
        "timing": "CUDA events around batches of `calls` forward (then backward, "
                  "torch.autograd.grad) calls queued behind " +
                  (f"BF16 8192^3 heater matmuls, after {args.heat_s} s of them (sustained power "
                   "state)" if args.heat_s > 0 else "a GPU spin (torch.cuda._sleep)") +
                  " so that host dispatch is hidden as in training; time_s = median over `reps` "
                  "batches of batch time / calls, after 2 warm-ups",
        "flops": "fwd 2*b*h*s*s*(d+dv)*0.5 (causal); bwd 2.5 x fwd",
        "data": "standard normal BF16; spot check: first 256 causal queries vs float64"})
    csv.header(["backend", "set", "direction", "batch", "heads", "kv_heads", "head_dim", "head_dim_v",
                "seq", "flops", "time_s", "tflops", "reps", "calls", "gqa_mode", "max_rel_err"])
    for backend in args.backends.split(","):
        gqa_mode = "native"  # becomes "expanded" if the backend refuses enable_gqa
        for set_name, d, dv, heads, seqs in grids(args.grid):
            checked = {}
            for h, kv in heads:
                for s in seqs:
                    if backend == "flash" and s > args.flash_max_seq:
                        continue
                    row = run_point(backend, h, kv, s, d, dv, gqa_mode if kv != h else "mha",
                                    dev, args.point_budget, checked, cps)
                    if row is None and kv != h and gqa_mode == "native":
                        gqa_mode = "expanded"
                        row = run_point(backend, h, kv, s, d, dv, gqa_mode, dev,
                                        args.point_budget, checked, cps)
                    if row is None:
                        break
                    f, b, reps, calls, err, mode = row
                    fl = flops_fwd(1, h, s, d, dv)
                    for direction, t, fl_d in (("fwd", f, fl), ("bwd", b, 2.5 * fl)):
                        csv.row([backend, set_name, direction, 1, h, kv, d, dv, s, fmt(fl_d),
                                 fmt(t), fmt(fl_d / t * 1e-12, 5), reps, calls, mode,
                                 fmt(err, 3)])
                    torch.cuda.empty_cache()
            print(f"attention {backend} {set_name} done", file=sys.stderr, flush=True)
    csv.close()


if __name__ == "__main__":
    main()
