"""Grouped expert GEMMs as Transformer Engine's GroupedLinear runs them, against one GEMM.

A MoE layer's local experts each multiply their own rows by their own weight. Megatron-core's
TEGroupedMLP (moe_grouped_gemm) calls TE's GroupedLinear, whose general_grouped_gemm runs one
cuBLAS GEMM per expert, spread round-robin over TE's compute streams (4 by default). The
simulator's trace wrote the experts as one GEMM op of all their rows until 2026-12-04 and now as
`groups` GEMMs (docs/cost-model.md, "Grouped expert GEMMs"); this probe measures both per expert
count E and rows per expert r, for the catalog models' expert shapes, in the three layouts of a
linear (--layouts), with operands as a framework stores them:
  fwd   Y_e = X_e W_e^T          one: all E*r rows against one weight
  dgrad dX_e = dY_e W_e           one: all rows
  wgrad dW_e = dY_e^T X_e         one: one weight gradient contracted over all E*r rows
(FP8: TN GEMMs of the same dimensions, TE's transposed FP8 copies; fast accumulation forward,
split accumulation backward, as TE runs them.) Variants: one GEMM as above; E GEMMs on one
stream (seq); the E GEMMs round-robin over --streams streams, joined (streams: GroupedLinear's
way). BF16 with torch.matmul, FP8 (e4m3, per-tensor scales) with torch._scaled_mm, both cuBLASLt
inside PyTorch. Every batch is queued behind BF16 heater matmuls (sustained power state, host
launch hidden); median of batches. Columns m, n, k are the trace's op: (E*r, out, in) forward,
(E*r, in, out) data gradient, (in, out, E*r) weight gradient.
"""

import argparse

import torch

from probe_common import CsvWriter, add_heat_argument, fmt, median, open_device, timed

# (model, hidden, expert_ffn, gated): the catalog's MoE models (workloads/models/*.yaml)
MODELS = [("mixtral_8x7b", 4096, 14336, True), ("mixtral_8x22b", 6144, 16384, True),
          ("llama4_maverick", 5120, 8192, True), ("deepseek_v3", 7168, 2048, True)]


def rand(shape, dtype, dev):
    """Uniform random in [-1, 1) as BF16, or as e4m3 for "fp8"."""
    t = torch.rand(*shape, device=dev, dtype=torch.bfloat16) * 2 - 1
    return t.to(torch.float8_e4m3fn) if dtype == "fp8" else t


def operand_shapes(layout, dtype, rows, d_in, d_out):
    """(A shape, B shape, how C is formed) of one GEMM of `rows` token rows, for a linear of
    d_in -> d_out features. `how`: "abt" C = A B^T, "ab" C = A B, "atb" C = A^T B."""
    if layout == "fwd":
        return (rows, d_in), (d_out, d_in), "abt"
    if layout == "dgrad":
        if dtype == "fp8":
            return (rows, d_out), (d_in, d_out), "abt"
        return (rows, d_out), (d_out, d_in), "ab"
    if dtype == "fp8":  # wgrad: dW[out, in] from dY^T and X^T copies, contraction over rows
        return (d_out, rows), (d_in, rows), "abt"
    return (rows, d_out), (rows, d_in), "atb"


class Group:
    """E experts of r rows in one layout: per-expert operands (each expert its own weight) and
    the operands of the single GEMM the trace used to write."""

    def __init__(self, dtype, layout, experts, rows, d_in, d_out, dev):
        self.dtype, self.layout, self.e = dtype, layout, experts
        self.fast = layout == "fwd"
        a, b, self.how = operand_shapes(layout, dtype, rows, d_in, d_out)
        self.a = [rand(a, dtype, dev) for _ in range(experts)]
        self.b = [rand(b, dtype, dev) for _ in range(experts)]
        a1, b1, _ = operand_shapes(layout, dtype, rows * experts, d_in, d_out)
        if layout != "wgrad":
            b1 = b  # one weight against all rows
        self.a1, self.b1 = rand(a1, dtype, dev), rand(b1, dtype, dev)
        if dtype == "fp8":
            self.sa = torch.tensor(0.25, device=dev)
            self.sb = torch.tensor(0.5, device=dev)

    def mm(self, a, b):
        if self.dtype == "fp8":
            return torch._scaled_mm(a, b.t(), scale_a=self.sa, scale_b=self.sb,
                                    out_dtype=torch.bfloat16, use_fast_accum=self.fast)
        if self.how == "abt":
            return torch.matmul(a, b.t())
        if self.how == "ab":
            return torch.matmul(a, b)
        return torch.matmul(a.t(), b)

    def reference(self, a, b):
        a, b = a.double(), b.double()
        scale = 0.125 if self.dtype == "fp8" else 1.0
        if self.how == "abt":
            return a[:64] @ b.t() * scale, 64
        if self.how == "ab":
            return a[:64] @ b * scale, 64
        return a.t()[:64] @ b * scale, 64

    def one(self):
        self.mm(self.a1, self.b1)

    def seq(self):
        for i in range(self.e):
            self.mm(self.a[i], self.b[i])

    def streams(self, streams):
        main = torch.cuda.current_stream()
        start = torch.cuda.Event()
        start.record(main)
        for s in streams:
            s.wait_event(start)
        for i in range(self.e):
            with torch.cuda.stream(streams[i % len(streams)]):
                self.mm(self.a[i], self.b[i])
        for s in streams:
            done = torch.cuda.Event()
            done.record(s)
            main.wait_event(done)

    def check(self):
        """Relative error of expert E-1's first 64 output rows against float64."""
        y = self.mm(self.a[-1], self.b[-1])
        ref, n = self.reference(self.a[-1], self.b[-1])
        return ((y[:n].double() - ref).norm() / ref.norm()).item()


def time_variant(enqueue, cps, heater, batches):
    """Median GPU seconds of one enqueue() over `batches` batches queued behind the heater."""
    t0, spin, _ = timed(enqueue, 2e-3, cps, heater=heater)  # also a warm-up
    calls = max(1, min(16, int(2e-3 / max(t0, 1e-7))))
    ts = []
    for _ in range(batches):
        t, spin, _ = timed(lambda: [enqueue() for _ in range(calls)], spin, cps, heater=heater)
        ts.append(t / calls)
    return median(ts)


def measure(csv, args, streams, cps, heater, dev, point):
    """Times one (dtype, layout, model, gemm, experts, rows, d_in, d_out) three ways; one row."""
    dtype, layout, model, gemm, e, r, d_in, d_out = point
    g = Group(dtype, layout, e, r, d_in, d_out, dev)
    err = g.check()
    one = time_variant(g.one, cps, heater, args.batches)
    seq = time_variant(g.seq, cps, heater, args.batches)
    par = time_variant(lambda: g.streams(streams), cps, heater, args.batches)
    dims = {"fwd": (e * r, d_out, d_in), "dgrad": (e * r, d_in, d_out),
            "wgrad": (d_in, d_out, e * r)}[layout]
    csv.row([dtype, layout, model, gemm, e, r, *dims, fmt(2.0 * e * r * d_in * d_out), fmt(one),
             fmt(seq), fmt(par), args.streams, fmt(err, 3)])
    del g
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="grouped_gemm.csv")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--dtypes", default="bf16,fp8")
    ap.add_argument("--layouts", default="fwd,dgrad,wgrad")
    ap.add_argument("--experts", default="2,4,8,16,32")
    ap.add_argument("--rows", default="256,512,1024,2048,4096,8192")
    ap.add_argument("--max-rows", type=int, default=65536, help="largest E x r")
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--batches", type=int, default=5)
    add_heat_argument(ap)
    args = ap.parse_args()
    dev, cps, heater = open_device(args)
    streams = [torch.cuda.Stream(dev) for _ in range(args.streams)]
    csv = CsvWriter(args.out, "grouped_gemm (PyTorch cuBLASLt, TE GroupedLinear's multi-stream "
                    "pattern)", [args.device], {
                        "timing": "CUDA events around batches queued behind BF16 8192^3 heater "
                                  f"matmuls; median of {args.batches} batches",
                        "layouts": "fwd Y = X W^T, dgrad dX = dY W, wgrad dW = dY^T X (FP8: TN "
                                   "copies); fc1 hidden -> 2 x expert_ffn (gated), fc2 expert_ffn "
                                   "-> hidden",
                        "data": "uniform random in [-1,1); FP8 e4m3 with scales 0.25 and 0.5, "
                                "fast accumulation forward, split backward, BF16 output"})
    csv.header(["dtype", "layout", "model", "gemm", "experts", "rows", "m", "n", "k", "flops",
                "one_s", "seq_s", "streams_s", "streams", "max_rel_err"])
    for dtype in args.dtypes.split(","):
        for layout in args.layouts.split(","):
            for model, h, ffn, gated in MODELS:
                for gemm, d_in, d_out in (("fc1", h, ffn * (2 if gated else 1)), ("fc2", ffn, h)):
                    for e in (int(v) for v in args.experts.split(",")):
                        for r in (int(v) for v in args.rows.split(",")):
                            if e * r > args.max_rows:
                                continue
                            measure(csv, args, streams, cps, heater, dev,
                                    (dtype, layout, model, gemm, e, r, d_in, d_out))
    csv.close()


if __name__ == "__main__":
    main()
