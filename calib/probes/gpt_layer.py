"""What one GPT-3 175B layer shard costs on one GPU: the compute of one tensor-parallel rank of a
Megatron GPT layer (Shoeybi et al. 2019; GPT-3 175B: hidden 12288, 96 heads of 128, FFN 49152,
LayerNorm, learned biases, GeLU; Brown et al. 2020) with --tp 4 by default, the DGX Cloud
recipe's TP, BF16, micro batch 1: LayerNorm, QKV linear + bias (3 x heads/tp x 128 outputs),
causal multi-head SDPA (cuDNN), output projection + bias, residual add, LayerNorm, FC1 + bias,
GeLU (tanh, Megatron's bias_gelu), FC2 + bias, residual add. The TP collectives are left out:
this measures the kernels a rank runs between them, the part the simulator costs from its
tables.

Per sequence length: forward and forward+backward time (the input's and every weight's
gradient) queued behind heater matmuls (sustained power state, as the tables), the same
forward+backward timed back to back on the host with a synchronisation per call (launch gaps
included), and the GPU kernel time of one forward+backward by kind (profiler).
Not a table the cost model reads: a check of its per-layer costs at GPT-3's shapes
(docs/validation.md).

Usage: python3 gpt_layer.py --device 0 --heat-s 20 --seqs 2048,4096 --out gpt_layer.csv
"""

import argparse
import re
import statistics
import time

import torch
import torch.nn.functional as F

from probe_common import CsvWriter, add_heat_argument, fmt, open_device, time_fwd_bwd

GEMM = re.compile(r"gemm|nvjet|cutlass|xmma|sm90_|cublas", re.I)
ATTN = re.compile(r"flash|fmha|cudnn|attention|attn|sdpa", re.I)


class GptShard(torch.nn.Module):
    def __init__(self, hidden, heads, ffn, tp, dev):
        super().__init__()
        if heads % tp or ffn % tp:
            raise ValueError("tp must divide heads and ffn")
        self.a, self.d = heads // tp, hidden // heads

        def w(o, i):
            return torch.nn.Parameter(torch.randn(o, i, device=dev, dtype=torch.bfloat16) * 0.02)

        def vec(n, value=0.0):
            return torch.nn.Parameter(torch.full((n,), value, device=dev, dtype=torch.bfloat16))

        self.ln1_w, self.ln1_b, self.ln2_w, self.ln2_b = vec(hidden, 1.0), vec(hidden), vec(hidden, 1.0), vec(hidden)
        self.qkv_w, self.qkv_b = w(3 * self.a * self.d, hidden), vec(3 * self.a * self.d)
        self.proj_w, self.proj_b = w(hidden, self.a * self.d), vec(hidden)
        self.fc1_w, self.fc1_b = w(ffn // tp, hidden), vec(ffn // tp)
        self.fc2_w, self.fc2_b = w(hidden, ffn // tp), vec(hidden)

    def forward(self, x):
        s, h = x.shape[1], x.shape[2]
        y = F.layer_norm(x, (h,), self.ln1_w, self.ln1_b)
        q, k, v = F.linear(y, self.qkv_w, self.qkv_b).view(1, s, 3, self.a, self.d).unbind(2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=True)
        x = x + F.linear(o.transpose(1, 2).reshape(1, s, self.a * self.d), self.proj_w, self.proj_b)
        y = F.layer_norm(x, (h,), self.ln2_w, self.ln2_b)
        y = F.gelu(F.linear(y, self.fc1_w, self.fc1_b), approximate="tanh")
        return x + F.linear(y, self.fc2_w, self.fc2_b)


def kernel_split(fn, inputs, grad_out):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.autograd.grad(fn(), inputs, grad_out)
        torch.cuda.synchronize()
    split = {"gemm": 0.0, "attention": 0.0, "other": 0.0}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            kind = "attention" if ATTN.search(e.name) else "gemm" if GEMM.search(e.name) else "other"
            split[kind] += e.time_range.elapsed_us() * 1e-6
    return split


def host_loop(fn, inputs, grad_out, calls=20):
    """Median host seconds of forward+backward with a synchronisation after each call."""
    times = []
    for _ in range(calls + 3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        torch.autograd.grad(fn(), inputs, grad_out)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times[3:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="gpt_layer.csv")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--tp", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=12288)
    ap.add_argument("--heads", type=int, default=96)
    ap.add_argument("--ffn", type=int, default=49152)
    ap.add_argument("--seqs", default="2048,4096,8192")
    ap.add_argument("--budget-s", type=float, default=2.0)
    add_heat_argument(ap)
    args = ap.parse_args()
    dev, cps, heater = open_device(args)
    shard = GptShard(args.hidden, args.heads, args.ffn, args.tp, dev)
    csv = CsvWriter(args.out, "gpt_layer (one TP rank's GPT layer, plain PyTorch)", [args.device], {
        "layer": f"hidden {args.hidden}, heads {args.heads} x 128, ffn {args.ffn}, tp {args.tp} "
                 "shard; LayerNorm, biases, tanh GeLU, causal SDPA; bf16, micro batch 1; no "
                 "collectives",
        "timing": "fwd/bwd: median of batches queued behind heater matmuls; host_fwd_bwd: median "
                  "of 20 host-timed calls, synchronised each"})
    csv.header(["seq", "tp", "fwd_s", "bwd_s", "fwd_bwd_s", "host_fwd_bwd_s", "kernels_gemm_s",
                "kernels_attention_s", "kernels_other_s"])
    for seq in (int(s) for s in args.seqs.split(",")):
        x = torch.randn(1, seq, args.hidden, device=dev, dtype=torch.bfloat16, requires_grad=True)
        go = torch.randn_like(x)
        inputs = [x] + list(shard.parameters())
        fw, bw, _, _ = time_fwd_bwd(lambda: shard(x), inputs, go, args.budget_s, cps, heater)
        host = host_loop(lambda: shard(x), inputs, go)
        sp = kernel_split(lambda: shard(x), inputs, go)
        row = [seq, args.tp, fmt(fw), fmt(bw), fmt(fw + bw), fmt(host), fmt(sp["gemm"]),
               fmt(sp["attention"]), fmt(sp["other"])]
        csv.row(row)
        print(*row, flush=True)
        torch.cuda.empty_cache()
    csv.close()


if __name__ == "__main__":
    main()
