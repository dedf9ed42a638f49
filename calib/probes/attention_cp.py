"""Context-parallel attention probe: the non-causal blocks of Transformer Engine's context
parallelism, forward and backward, through PyTorch's SDPA with the cuDNN backend (as
attention.py; cuDNN's SDPA graph cannot be built from C++ on the GPU machine).

With load-balanced causal chunks (each rank holds chunks i and 2cp-1-i of the sequence), every
step of TE's context-parallel attention after the first is unmasked: the rank's queries against
half of a K/V block, or half of its queries against a whole block (TE's
AttnFuncWithCPAndKVP2P, and the all-gather variant per step). The main attention table
(attention.py) is causal with seq_kv = seq_q; the cost model used to scale it by the attended
(query, key) pairs for these blocks. This probe measures them: BF16, batch 1, head_dim 128,
heads h with kv_heads h/8 (the main table's GQA set), seq_q 1k-16k (the local tokens, seq/cp),
seq_kv = seq_q/2, seq_q and 2 seq_q, unmasked.

--backend flash measures the same blocks with PyTorch's FlashAttention-2 (run 52).

FLOP convention: forward 2*b*h*s_q*s_kv*(d + d_v); backward 2.5x forward.
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


def grid(name):
    """[(heads, kv_heads)], [seq_q], [seq_kv / seq_q] of a named grid."""
    if name == "smoke":
        return [(8, 1), (32, 4)], [1024, 4096], [0.5, 1.0]
    if name == "dense":
        # Run 59: heads and seq_q on 1.5x steps (the full grid's 2x steps left a held-out node a
        # 4x gap: leave-one-out maxima of 27-43% at 4 heads).
        return ([(h, max(1, h // 8)) for h in (4, 6, 8, 12, 16, 24, 32, 48, 64)],
                [1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384], [0.5, 1.0, 2.0])
    return ([(h, max(1, h // 8)) for h in (4, 8, 16, 32, 64)], [1024, 2048, 4096, 8192, 16384],
            [0.5, 1.0, 2.0])


def sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=False, enable_gqa=True)


def check(q, k, v, o):
    """Relative error of the first 256 queries of head 0 against float64."""
    n = min(256, q.shape[2])
    s = torch.matmul(q[:, :1, :n].double(), k[:, :1].double().transpose(-1, -2))
    want = torch.matmul(torch.softmax(s / math.sqrt(q.shape[-1]), -1), v[:, :1].double())
    got = o[:, :1, :n].double()
    return ((got - want).norm() / want.norm()).item()


def measure(backend, h, kv, sq, skv, dev, budget, cps):
    """Median forward and backward seconds per call, batches, calls, and the forward error."""
    d = 128
    q = torch.randn(1, h, sq, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, kv, skv, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(1, kv, skv, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    do = torch.randn(1, h, sq, d, device=dev, dtype=torch.bfloat16)
    with sdpa_kernel([BACKENDS[backend]]):
        f, b, reps, calls = time_fwd_bwd(lambda: sdpa(q, k, v), (q, k, v), do, budget, cps, HEATER)
        err = check(q.detach(), k.detach(), v.detach(), sdpa(q, k, v).detach())
    del q, k, v, do
    return f, b, reps, calls, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="attention_cp.csv")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--grid", default="full")
    ap.add_argument("--point-budget", type=float, default=0.4)
    ap.add_argument("--backend", default="cudnn", choices=sorted(BACKENDS))
    add_heat_argument(ap)
    args = ap.parse_args()
    global HEATER
    dev, cps, HEATER = open_device(args)
    csv = CsvWriter(args.out, "attention_cp (PyTorch SDPA, unmasked context-parallel blocks)",
                    [args.device], {
        "backend": {"cudnn": "cudnn = SDPBackend.CUDNN_ATTENTION (cuDNN SDPA graph), enable_gqa",
                    "flash": "flash = SDPBackend.FLASH_ATTENTION (FlashAttention-2 in PyTorch), "
                             "enable_gqa"}[args.backend],
        "timing": "CUDA events around batches of `calls` forward (then backward, "
                  "torch.autograd.grad) calls queued behind " +
                  (f"BF16 8192^3 heater matmuls, after {args.heat_s} s of them (sustained power "
                   "state)" if args.heat_s > 0 else "a GPU spin (torch.cuda._sleep)") +
                  "; time_s = median over `reps` batches of batch time / calls, after 2 warm-ups",
        "flops": "fwd 2*b*h*s_q*s_kv*(d+dv) (no mask); bwd 2.5 x fwd",
        "data": "standard normal BF16; spot check: first 256 queries of head 0 vs float64"})
    csv.header(["backend", "set", "direction", "batch", "heads", "kv_heads", "head_dim", "head_dim_v",
                "seq_q", "seq_kv", "causal", "flops", "time_s", "tflops", "reps", "calls",
                "max_rel_err"])
    heads, seqs, ratios = grid(args.grid)
    for h, kv in heads:
        for sq in seqs:
            for r in ratios:
                skv = int(sq * r)
                try:
                    f, b, reps, calls, err = measure(args.backend, h, kv, sq, skv, dev,
                                                        args.point_budget, cps)
                except RuntimeError as e:
                    print(f"h={h} kv={kv} sq={sq} skv={skv}: {str(e).splitlines()[0]}",
                          file=sys.stderr, flush=True)
                    torch.cuda.empty_cache()
                    continue
                fl = 2.0 * h * sq * skv * 256
                for direction, t, fl_d in (("fwd", f, fl), ("bwd", b, 2.5 * fl)):
                    csv.row([args.backend, "gqa", direction, 1, h, kv, 128, 128, sq, skv, 0, fmt(fl_d),
                             fmt(t), fmt(fl_d / t * 1e-12, 5), reps, calls, fmt(err, 3)])
                torch.cuda.empty_cache()
        print(f"attention_cp heads {h} done", file=sys.stderr, flush=True)
    csv.close()


if __name__ == "__main__":
    main()
