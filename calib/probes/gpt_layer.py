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

--precision fp8 runs the four linears as Transformer Engine's delayed-scaling FP8 recipe runs
them on Hopper (TE's `hybrid` format, Megatron's --fp8-format hybrid): E4M3 activations and
weights, E5M2 gradients, per-tensor scales from the previous call's amax, BF16 outputs, through
torch._scaled_mm (cuBLASLt):
forward with fast accumulation and the bias in the epilogue, the data and weight gradients with
split accumulation, all in the TN layout Hopper's FP8 tensor cores need, so the input and the
output gradient are cast and transposed (the weights' FP8 copies and their transposes are made
once, as TE caches them across a step's microbatches). The casts are eager PyTorch kernels, not
TE's fused cast-transpose (and the norm does not write FP8): the FP8 layer's GEMMs are what this
compares, its other kernels are reported. Attention stays BF16 (cuDNN SDPA).

--sustained-s S adds a second timing: forward+backward back to back for S seconds (the layer's
own power state, as in training), then 20 calls timed by CUDA events without a host
synchronisation between them, and the profiler's split of five calls right after, with the SM
clock and board power read meanwhile.
Not a table the cost model reads: a check of its per-layer costs at GPT-3's shapes
(docs/validation.md).

Usage: python3 gpt_layer.py --device 0 --heat-s 20 --seqs 2048,4096 --precision fp8
       --sustained-s 8 --out gpt_layer_fp8.csv
"""

import argparse
import re
import statistics
import time

import torch
import torch.nn.functional as F

from probe_common import (CsvWriter, add_heat_argument, fmt, median, open_device, telemetry,
                          time_fwd_bwd)

GEMM = re.compile(r"gemm|nvjet|cutlass|xmma|sm90_|cublas", re.I)
ATTN = re.compile(r"flash|fmha|cudnn|attention|attn|sdpa", re.I)


E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
FP8_MAX = {E4M3: 448.0, E5M2: 57344.0}


def quantize(t, amax, dtype):
    """`t` in FP8 at the scale of the previous call's amax (TE's delayed scaling, history 1), its
    dequantization factor, and this call's amax kept in `amax` for the next call (TE fuses the
    amax into the cast kernel; here it is a separate reduction). Values beyond the format's range
    saturate, as TE's casts do (a first call's scale comes from no history)."""
    scale = FP8_MAX[dtype] / torch.clamp(amax, min=1e-12)
    q = (t * scale).clamp(-FP8_MAX[dtype], FP8_MAX[dtype]).to(dtype)
    amax.copy_(t.abs().amax().float())
    return q, scale.reciprocal()


class Fp8Weight:
    """A linear's FP8 state: the E4M3 weight [out, in] and its transpose [in, out] with their
    dequantization factor (made once, as TE caches them across a step's microbatches), and the
    amaxes of its input and output gradient."""

    def __init__(self, w):
        amax = w.detach().abs().amax().float()
        self.w8, self.descale = quantize(w.detach(), amax.clone(), E4M3)
        self.w8t = self.w8.t().contiguous()
        self.x_amax = torch.ones((), device=w.device, dtype=torch.float32)
        self.g_amax = torch.ones((), device=w.device, dtype=torch.float32)


def fp8_gemm(a, b_colmajor, a_descale, b_descale, fast, bias=None):
    return torch._scaled_mm(a, b_colmajor, scale_a=a_descale, scale_b=b_descale, bias=bias,
                            out_dtype=torch.bfloat16, use_fast_accum=fast)


class _Fp8Linear(torch.autograd.Function):
    """y = x W^T + b with TE's FP8 GEMMs (see the module doc); `st` is the linear's Fp8Weight."""

    @staticmethod
    def forward(ctx, x, w, b, st):
        shape = x.shape
        x8, x_descale = quantize(x.reshape(-1, shape[-1]), st.x_amax, E4M3)
        y = fp8_gemm(x8, st.w8.t(), x_descale, st.descale, True, bias=b)
        ctx.save_for_backward(x8.t().contiguous(), x_descale)   # TE's FP8 transpose for wgrad
        ctx.st, ctx.shape = st, shape
        return y.view(*shape[:-1], y.shape[-1])

    @staticmethod
    def backward(ctx, g):
        x8t, x_descale = ctx.saved_tensors
        st = ctx.st
        g2 = g.reshape(-1, g.shape[-1])
        g8, g_descale = quantize(g2, st.g_amax, E5M2)                # TE: one cast-transpose kernel
        g8t = g8.t().contiguous()
        dx = fp8_gemm(g8, st.w8t.t(), g_descale, st.descale, False)
        dw = fp8_gemm(g8t, x8t.t(), g_descale, x_descale, False)
        return dx.view(ctx.shape), dw, g2.sum(0), None


class GptShard(torch.nn.Module):
    def __init__(self, hidden, heads, ffn, tp, dev, fp8=False):
        super().__init__()
        self.fp8 = fp8
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
        self.make_fp8_weights()

    def make_fp8_weights(self):
        names = ("qkv", "proj", "fc1", "fc2") if self.fp8 else ()
        self.fp8_weights = {n: Fp8Weight(getattr(self, n + "_w")) for n in names}

    def linear(self, name, x):
        w, b = getattr(self, name + "_w"), getattr(self, name + "_b")
        if not self.fp8:
            return F.linear(x, w, b)
        return _Fp8Linear.apply(x, w, b, self.fp8_weights[name])

    def forward(self, x):
        s, h = x.shape[1], x.shape[2]
        y = F.layer_norm(x, (h,), self.ln1_w, self.ln1_b)
        q, k, v = self.linear("qkv", y).view(1, s, 3, self.a, self.d).unbind(2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=True)
        x = x + self.linear("proj", o.transpose(1, 2).reshape(1, s, self.a * self.d))
        y = F.layer_norm(x, (h,), self.ln2_w, self.ln2_b)
        y = F.gelu(self.linear("fc1", y), approximate="tanh")
        return x + self.linear("fc2", y)


def kernel_split(fn, inputs, grad_out, calls=1):
    """GPU kernel seconds per forward+backward by kind, profiled over `calls` calls back to back."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            torch.autograd.grad(fn(), inputs, grad_out)
        torch.cuda.synchronize()
    split = {"gemm": 0.0, "attention": 0.0, "other": 0.0}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            kind = "attention" if ATTN.search(e.name) else "gemm" if GEMM.search(e.name) else "other"
            split[kind] += e.time_range.elapsed_us() * 1e-6 / calls
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


def sustained(fn, inputs, grad_out, seconds, device, calls=20):
    """Forward+backward back to back for `seconds`, then the median of `calls` calls timed by
    CUDA events with no host synchronisation between them, the profiler's kernel split of five
    more (per call), and the SM clock (MHz) and board power (W) read during the timed calls."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        torch.autograd.grad(fn(), inputs, grad_out)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(calls)]
    for start, stop in events:
        start.record()
        torch.autograd.grad(fn(), inputs, grad_out)
        stop.record()
    reading = telemetry(device)  # the queue holds ~20 calls: read while they run
    torch.cuda.synchronize()
    split = kernel_split(fn, inputs, grad_out, calls=5)
    values = reading.split(" = ")[-1].split("; ")
    mhz = float(values[0].split()[0]) if len(values) > 2 else float("nan")
    watts = float(values[2].split()[0]) if len(values) > 2 else float("nan")
    return median([a.elapsed_time(b) * 1e-3 for a, b in events]), split, mhz, watts


def rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


def check_fp8(args, dev):
    """The three FP8 GEMM layouts against BF16 matmuls of the same dequantized operands (must
    agree within 2%: a wrong transpose or scale is far off), then the FP8 layer against the BF16
    layer on the same weights after two calls set the scales (within 25%, a guard against
    overflow and NaN: E4M3 keeps 3 mantissa bits, and the random weights' peaked softmax
    amplifies the logits' rounding; 13.0% on the first H200 run). Returns both errors."""
    t, n, k = 2048, 3072, 12288
    x, w = torch.randn(t, k, device=dev, dtype=torch.bfloat16), torch.randn(n, k, device=dev) * 0.02
    g = torch.randn(t, n, device=dev, dtype=torch.bfloat16)
    st = Fp8Weight(w.to(torch.bfloat16))
    x8, xd = quantize(x, x.abs().amax().float(), E4M3)
    g8, gd = quantize(g, g.abs().amax().float(), E5M2)
    xq, wq, gq = x8.to(torch.bfloat16) * xd, st.w8.to(torch.bfloat16) * st.descale, g8.to(torch.bfloat16) * gd
    worst = max(rel(fp8_gemm(x8, st.w8.t(), xd, st.descale, True), xq @ wq.t()),
                rel(fp8_gemm(g8, st.w8t.t(), gd, st.descale, False), gq @ wq),
                rel(fp8_gemm(g8.t().contiguous(), x8.t().contiguous().t(), gd, xd, False), gq.t() @ xq))
    x = torch.randn(1, 2048, args.hidden, device=dev, dtype=torch.bfloat16)
    ref = GptShard(args.hidden, args.heads, args.ffn, args.tp, dev)
    f8 = GptShard(args.hidden, args.heads, args.ffn, args.tp, dev, fp8=True)
    f8.load_state_dict(ref.state_dict())
    f8.make_fp8_weights()
    with torch.no_grad():
        for _ in range(2):
            out = f8(x)
        layer = rel(out - x, ref(x) - x)
    print(f"fp8 check: GEMM layouts {worst:.4f}, layer branch output {layer:.4f}", flush=True)
    if not (worst < 0.02 and layer < 0.25):
        raise SystemExit(f"FP8 check failed: GEMM layouts {worst}, layer {layer}")
    return worst, layer


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
    ap.add_argument("--precision", choices=("bf16", "fp8"), default="bf16")
    ap.add_argument("--sustained-s", type=float, default=0.0)
    add_heat_argument(ap)
    args = ap.parse_args()
    dev, cps, heater = open_device(args)
    fp8 = args.precision == "fp8"
    meta = {
        "layer": f"hidden {args.hidden}, heads {args.heads} x 128, ffn {args.ffn}, tp {args.tp} "
                 f"shard; LayerNorm, biases, tanh GeLU, causal SDPA; {args.precision} linears"
                 + (" (torch._scaled_mm, TE hybrid recipe: E4M3 forward, E5M2 gradients, "
                    "per-tensor scales, fast accumulation forward only)" if fp8 else "")
                 + ", micro batch 1; no collectives",
        "timing": "fwd/bwd: median of batches queued behind heater matmuls; host_fwd_bwd: median "
                  "of 20 host-timed calls, synchronised each; sustained_*: after "
                  f"{args.sustained_s} s back to back, median of 20 calls timed by CUDA events"}
    if fp8:
        gemms, layer = check_fp8(args, dev)
        meta["fp8_check"] = (f"relative error vs BF16: GEMM layouts {gemms:.4f} (dequantized "
                             f"operands), layer branch output {layer:.4f} (same weights)")
    shard = GptShard(args.hidden, args.heads, args.ffn, args.tp, dev, fp8=fp8)
    csv = CsvWriter(args.out, "gpt_layer (one TP rank's GPT layer, plain PyTorch)", [args.device], meta)
    cols = ["seq", "tp", "fwd_s", "bwd_s", "fwd_bwd_s", "host_fwd_bwd_s", "kernels_gemm_s",
            "kernels_attention_s", "kernels_other_s"]
    if args.sustained_s > 0:
        cols += ["precision", "sustained_fwd_bwd_s", "sustained_gemm_s", "sustained_attention_s",
                 "sustained_other_s", "sustained_sm_mhz", "sustained_power_w"]
    csv.header(cols)
    for seq in (int(s) for s in args.seqs.split(",")):
        x = torch.randn(1, seq, args.hidden, device=dev, dtype=torch.bfloat16, requires_grad=True)
        go = torch.randn_like(x)
        inputs = [x] + list(shard.parameters())
        fw, bw, _, _ = time_fwd_bwd(lambda: shard(x), inputs, go, args.budget_s, cps, heater)
        host = host_loop(lambda: shard(x), inputs, go)
        sp = kernel_split(lambda: shard(x), inputs, go)
        row = [seq, args.tp, fmt(fw), fmt(bw), fmt(fw + bw), fmt(host), fmt(sp["gemm"]),
               fmt(sp["attention"]), fmt(sp["other"])]
        if args.sustained_s > 0:
            t, ss, mhz, watts = sustained(lambda: shard(x), inputs, go, args.sustained_s, args.device)
            row += [args.precision, fmt(t), fmt(ss["gemm"]), fmt(ss["attention"]), fmt(ss["other"]),
                    fmt(mhz, 5), fmt(watts, 5)]
        csv.row(row)
        print(*row, flush=True)
        torch.cuda.empty_cache()
    csv.close()


if __name__ == "__main__":
    main()
