"""Grouped expert GEMMs as Transformer Engine's GroupedLinear runs them, against one GEMM.

A MoE layer's local experts each multiply their own rows by their own weight. Megatron-core's
TEGroupedMLP (moe_grouped_gemm) calls TE's GroupedLinear, whose general_grouped_gemm runs one
cuBLAS GEMM per expert, spread round-robin over TE's compute streams (4 by default,
NVTE_NUM_CUBLAS_STREAMS-style multi-stream cuBLAS). The simulator's trace writes the experts as
one GEMM op of all their rows; this probe measures what that costs per expert count E and rows
per expert r, in the forward layout (Y_e = X_e W_e^T), for the catalog models' expert shapes:
  one:     a single GEMM of E*r rows with one weight (the one-op assumption);
  seq:     E GEMMs of r rows, each its own weight, one after another on one stream;
  streams: the same E GEMMs round-robin over --streams streams (GroupedLinear's way), joined.
BF16 with torch.matmul and FP8 (e4m3, per-tensor scales, fast accumulation, as TE's forward)
with torch._scaled_mm, both cuBLASLt inside PyTorch. Every batch is queued behind BF16 heater
matmuls (sustained power state, host launch hidden); median of batches.
"""

import argparse

import torch

from probe_common import CsvWriter, add_heat_argument, fmt, median, open_device, timed

# (model, hidden, expert_ffn, gated): the catalog's MoE models (workloads/models/*.yaml)
MODELS = [("mixtral_8x7b", 4096, 14336, True), ("mixtral_8x22b", 6144, 16384, True),
          ("llama4_maverick", 5120, 8192, True), ("deepseek_v3", 7168, 2048, True)]


class Group:
    """Operands of E experts of r rows: inputs, weights and outputs as TE keeps them (one input
    and one output tensor split by rows, a weight per expert)."""

    def __init__(self, dtype, experts, rows, n, k, dev):
        self.dtype, self.e, self.r = dtype, experts, rows
        x = torch.rand(experts * rows, k, device=dev) * 2 - 1
        w = [torch.rand(n, k, device=dev) * 2 - 1 for _ in range(experts)]
        if dtype == "fp8":
            self.x = x.to(torch.float8_e4m3fn)
            self.w = [t.to(torch.float8_e4m3fn) for t in w]
            self.sa = torch.tensor(0.25, device=dev)
            self.sb = torch.tensor(0.5, device=dev)
        else:
            self.x = x.to(torch.bfloat16)
            self.w = [t.to(torch.bfloat16) for t in w]
        del x, w
        self.out = torch.empty(experts * rows, n, device=dev, dtype=torch.bfloat16)
        self.xs = list(self.x.split(rows))
        self.outs = list(self.out.split(rows))

    def mm(self, x, w, out):
        if self.dtype == "fp8":  # a new output tensor (no copy kernel); TE writes in place
            return torch._scaled_mm(x, w.t(), scale_a=self.sa, scale_b=self.sb,
                                    out_dtype=torch.bfloat16, use_fast_accum=True)
        return torch.matmul(x, w.t(), out=out)

    def one(self):
        self.mm(self.x, self.w[0], self.out)

    def seq(self):
        for i in range(self.e):
            self.mm(self.xs[i], self.w[i], self.outs[i])

    def streams(self, streams):
        main = torch.cuda.current_stream()
        start = torch.cuda.Event()
        start.record(main)
        for s in streams:
            s.wait_event(start)
        for i in range(self.e):
            with torch.cuda.stream(streams[i % len(streams)]):
                self.mm(self.xs[i], self.w[i], self.outs[i])
        for s in streams:
            done = torch.cuda.Event()
            done.record(s)
            main.wait_event(done)

    def check(self):
        """Relative error of expert E-1's first 64 rows against float64."""
        y = self.mm(self.xs[-1], self.w[-1], self.outs[-1])
        x, w = self.xs[-1][:64].double(), self.w[-1].double()
        ref = x @ w.t() * (0.125 if self.dtype == "fp8" else 1.0)
        return ((y[:64].double() - ref).norm() / ref.norm()).item()


def time_variant(enqueue, cps, heater, batches):
    """Median GPU seconds of one enqueue() over `batches` batches queued behind the heater."""
    t0, spin, _ = timed(enqueue, 2e-3, cps, heater=heater)  # also a warm-up
    calls = max(1, min(16, int(2e-3 / max(t0, 1e-7))))
    ts = []
    for _ in range(batches):
        t, spin, _ = timed(lambda: [enqueue() for _ in range(calls)], spin, cps, heater=heater)
        ts.append(t / calls)
    return median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="grouped_gemm.csv")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--dtypes", default="bf16,fp8")
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
                        "layout": "forward, Y_e = X_e W_e^T (TN); fc1 n = 2 x expert_ffn (gated), "
                                  "k = hidden; fc2 n = hidden, k = expert_ffn",
                        "data": "uniform random in [-1,1); FP8 e4m3 with scales 0.25 and 0.5, "
                                "fast accumulation, BF16 output"})
    csv.header(["dtype", "model", "gemm", "experts", "rows", "n", "k", "flops", "one_s", "seq_s",
                "streams_s", "streams", "max_rel_err"])
    for dtype in args.dtypes.split(","):
        for model, h, ffn, gated in MODELS:
            for gemm, n, k in (("fc1", ffn * (2 if gated else 1), h), ("fc2", h, ffn)):
                for e in (int(v) for v in args.experts.split(",")):
                    for r in (int(v) for v in args.rows.split(",")):
                        if e * r > args.max_rows:
                            continue
                        g = Group(dtype, e, r, n, k, dev)
                        err = g.check()
                        one = time_variant(g.one, cps, heater, args.batches)
                        seq = time_variant(g.seq, cps, heater, args.batches)
                        par = time_variant(lambda: g.streams(streams), cps, heater, args.batches)
                        csv.row([dtype, model, gemm, e, r, n, k, fmt(2.0 * e * r * n * k),
                                 fmt(one), fmt(seq), fmt(par), args.streams, fmt(err, 3)])
                        del g
                        torch.cuda.empty_cache()
    csv.close()


if __name__ == "__main__":
    main()
