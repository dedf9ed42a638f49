"""What dropout costs the kernels of a GPT-3 175B layer shard (TP4, seq 2048, micro batch 1), the
one catalog model whose recipe keeps Megatron's default dropout (hidden and attention 0.1):
causal attention forward + backward through PyTorch SDPA (cuDNN and flash backends) with
dropout_p 0 and 0.1, and the residual add after a linear with and without the dropout of its
output (bias-dropout-add, as Megatron fuses it; here PyTorch's dropout then add). Times are
medians of batches queued behind heater matmuls (sustained power state, --heat-s). Read in
docs/validation.md (GPT-3); not a table the cost model reads.

Usage: python3 dropout_cost.py --device 0 --heat-s 20 --out dropout_cost.csv
"""

import argparse

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from probe_common import CsvWriter, add_heat_argument, fmt, heater_from, median, sleep_cycles_per_s, timed

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def attention_step(backend, heads, seq, d, p, dev):
    q = torch.randn(1, heads, seq, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, heads, seq, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(1, heads, seq, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    do = torch.randn(1, heads, seq, d, device=dev, dtype=torch.bfloat16)

    def step():
        with sdpa_kernel([BACKENDS[backend]]):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)
        o.backward(do)
        q.grad = k.grad = v.grad = None

    step()
    return step


def residual_step(rows, cols, p, dev):
    x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16)
    r = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16)

    def step():
        return r + (F.dropout(x, p=p, training=True) if p > 0 else x)

    step()
    return step


def measure(step, cps, heater, calls=20, reps=7):
    def batch():
        for _ in range(calls):
            step()
    return median([timed(batch, 2e-3, cps, heater=heater)[0] / calls for _ in range(reps)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="dropout_cost.csv")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--seqs", default="2048,4096")
    add_heat_argument(ap)
    args = ap.parse_args()
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    heater = heater_from(args, dev)
    cps = sleep_cycles_per_s(dev)
    csv = CsvWriter(args.out, "dropout_cost (PyTorch SDPA / dropout)", [args.device], {
        "shard": "GPT-3 175B at TP4: 24 heads of 128, hidden 12288, micro batch 1",
        "timing": "median of batches of back-to-back calls queued behind heater matmuls"})
    csv.header(["kernel", "backend", "seq", "heads", "rows", "cols", "dropout_p", "time_s",
                "ratio_to_p0"])
    for backend in BACKENDS:
        for seq in (int(s) for s in args.seqs.split(",")):
            base = None
            for p in (0.0, 0.1):
                try:
                    t = measure(attention_step(backend, 24, seq, 128, p, dev), cps, heater)
                except RuntimeError as e:  # a backend without dropout support
                    print(f"{backend} seq {seq} p {p}: {e}".splitlines()[0], flush=True)
                    continue
                base = t if p == 0.0 else base
                csv.row(["attention_fwd_bwd", backend, seq, 24, "", "", p, fmt(t),
                         fmt(t / base, 4) if base else ""])
    for seq in (int(s) for s in args.seqs.split(",")):
        rows = seq // 4  # the sequence-parallel shard of TP4
        base = None
        for p in (0.0, 0.1):
            t = measure(residual_step(rows, 12288, p, dev), cps, heater)
            base = t if p == 0.0 else base
            csv.row(["residual_add", "pytorch", seq, "", rows, 12288, p, fmt(t), fmt(t / base, 4)])
    csv.close()


if __name__ == "__main__":
    main()
