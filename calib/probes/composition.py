"""Composition probe: do a transformer layer's GEMMs and attention, run back to back as in a
training step, take the sum of their isolated times? The simulator costs a layer as that sum
(each op from the measured tables); this probe measures both on one GPU.

For each model shard (the per-rank GEMM shapes of a catalog model at a tensor-parallel size, seq
tokens of one micro-batch) it builds `--layers` layers with their own weights and activations and
plays forward (QKV, attention, projection, FC1, FC2) then backward (for each linear dgrad and
wgrad, attention backward) of all layers in training order. Composed: the whole sequence per
layer, repeated; isolated: each op alone in batches. Both queue their calls behind a GPU spin
(as calib/probes/attention.py) so that host dispatch is hidden. Norms, activations and residual
adds are left out (PyTorch eager runs them unfused, Transformer Engine fuses them): the check is
of the tensor-core work, which is 90-97% of a layer's compute.

BF16 GEMMs through torch.matmul (cuBLASLt), causal attention through SDPA's cuDNN backend.
"""

import argparse
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from probe_common import CsvWriter, add_heat_argument, fmt, open_device, timed

# name: (tokens, hidden, q heads, kv heads, head_dim, ffn, gated, tp)
SHARDS = {
    "llama3_70b_tp4_s8k": (8192, 8192, 64, 8, 128, 28672, True, 4),
    "llama3_8b_tp1_s8k": (8192, 4096, 32, 8, 128, 14336, True, 1),
    "gpt3_175b_tp4_s2k": (2048, 12288, 96, 96, 128, 49152, False, 4),
    "llama3_405b_tp8_s8k": (8192, 16384, 128, 8, 128, 53248, True, 8),
}


HEATER = None  # probe_common.Heater with --heat-s > 0


def queued_time(fn, cps, spin_s=0.02):
    """GPU seconds of fn()'s work queued behind a GPU spin, or behind heater matmuls with
    --heat-s (probe_common.timed, 6 tries)."""
    return timed(fn, spin_s, cps, tries=6, heater=HEATER)[0]


class Layer:
    """Tensors of one layer shard: weights, forward inputs, output gradients."""

    def __init__(self, shape, dev):
        t, h, qh, kvh, d, ffn, gated, tp = shape
        qh, kvh, ffn = qh // tp, max(1, kvh // tp), ffn // tp
        self.qkv_n, self.attn_w, self.fc1_n, self.ffn = (qh + 2 * kvh) * d, qh * d, ffn * (2 if gated else 1), ffn
        r = lambda *s: torch.randn(*s, device=dev, dtype=torch.bfloat16)
        self.w = {"qkv": r(self.qkv_n, h), "proj": r(h, self.attn_w), "fc1": r(self.fc1_n, h),
                  "fc2": r(h, ffn)}
        self.x = {"qkv": r(t, h), "proj": r(t, self.attn_w), "fc1": r(t, h), "fc2": r(t, ffn)}
        self.dy = {"qkv": r(t, self.qkv_n), "proj": r(t, h), "fc1": r(t, self.fc1_n), "fc2": r(t, h)}
        self.q = r(1, qh, t, d).requires_grad_()
        self.k = r(1, kvh, t, d).requires_grad_()
        self.v = r(1, kvh, t, d).requires_grad_()
        self.do = r(1, qh, t, d)
        self.o = None

    def ops(self):
        """(name, fn) of the forward then the backward, in training order."""
        mm = torch.matmul
        fwd = [(f"{n}_fwd", (lambda n=n: mm(self.x[n], self.w[n].t()))) for n in ("qkv",)]
        fwd.append(("attn_fwd", self.attn_fwd))
        fwd += [(f"{n}_fwd", (lambda n=n: mm(self.x[n], self.w[n].t()))) for n in ("proj", "fc1", "fc2")]
        bwd = []
        for n in ("fc2", "fc1", "proj"):
            bwd.append((f"{n}_dgrad", (lambda n=n: mm(self.dy[n], self.w[n]))))
            bwd.append((f"{n}_wgrad", (lambda n=n: mm(self.dy[n].t(), self.x[n]))))
        bwd.append(("attn_bwd", self.attn_bwd))
        bwd.append(("qkv_dgrad", lambda: mm(self.dy["qkv"], self.w["qkv"])))
        bwd.append(("qkv_wgrad", lambda: mm(self.dy["qkv"].t(), self.x["qkv"])))
        return fwd, bwd

    def attn_fwd(self):
        self.o = F.scaled_dot_product_attention(self.q, self.k, self.v, is_causal=True, enable_gqa=True)

    def attn_bwd(self):
        torch.autograd.grad(self.o, (self.q, self.k, self.v), self.do, retain_graph=True)


def measure(name, shape, layers, reps, cps, dev):
    ls = [Layer(shape, dev) for _ in range(layers)]
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        for layer in ls:  # warm-up: cuDNN graphs, cuBLASLt heuristics
            f, b = layer.ops()
            for _, fn in f + b:
                fn()
        torch.cuda.synchronize()

        def step():
            for layer in ls:
                for _, fn in layer.ops()[0]:
                    fn()
            for layer in reversed(ls):
                for _, fn in layer.ops()[1]:
                    fn()

        composed = [queued_time(step, cps) / layers for _ in range(reps)]
        isolated = {}
        f, b = ls[0].ops()
        for op, fn in f + b:
            isolated[op] = statistics.median(
                [queued_time(lambda: [fn() for _ in range(4)], cps) / 4 for _ in range(reps)])
    return statistics.median(composed), min(composed), max(composed), isolated


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="composition.csv")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--shards", default=",".join(SHARDS))
    add_heat_argument(ap)
    args = ap.parse_args()
    global HEATER
    dev, cps, HEATER = open_device(args)
    csv = CsvWriter(args.out, "composition (PyTorch: torch.matmul BF16, SDPA cuDNN causal)", [args.device], {
        "method": f"{args.layers} layers with their own tensors; forward of all then backward of "
                  "all, queued behind " + (f"BF16 8192^3 heater matmuls after {args.heat_s} s of them "
                  "(sustained power state)" if args.heat_s > 0 else "a GPU spin") +
                  "; composed = median over reps of step time / "
                  "layers; isolated = median over reps of 4 back-to-back calls / 4",
        "ops": "qkv, attention, proj, fc1, fc2 forward; dgrad and wgrad of each linear, "
               "attention backward (torch.autograd.grad); no norms or elementwise ops"})
    csv.header(["shard", "op", "time_s", "reps"])
    for name in args.shards.split(","):
        med, lo, hi, iso = measure(name, SHARDS[name], args.layers, args.reps, cps, dev)
        for op, t in iso.items():
            csv.row([name, op, fmt(t), args.reps])
        total = sum(iso.values())
        csv.row([name, "sum_isolated", fmt(total), args.reps])
        csv.row([name, "composed_layer", fmt(med), args.reps])
        csv.row([name, "composed_layer_min", fmt(lo), args.reps])
        csv.row([name, "composed_layer_max", fmt(hi), args.reps])
        print(f"{name}: composed {med * 1e3:.3f} ms/layer (min {lo * 1e3:.3f}, max {hi * 1e3:.3f}), "
              f"sum isolated {total * 1e3:.3f} ms, ratio {med / total:.4f}", file=sys.stderr, flush=True)
        torch.cuda.empty_cache()
    csv.close()


if __name__ == "__main__":
    main()
