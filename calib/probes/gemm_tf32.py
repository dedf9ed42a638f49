#!/usr/bin/env python3
"""TF32 against BF16 GEMM time at the same shapes (run 102): FP32 operands on the tensor cores
(torch.backends.cuda.matmul.allow_tf32 = True: cuBLAS with CUBLAS_COMPUTE_32F_FAST_TF32, the
compute type Transformer Engine's general_gemm defaults to for FP32 inputs), as Megatron-core's
router runs its backward GEMMs with moe_router_dtype fp32 (RouterGatingLinearFunction: the data
gradient dY[m,E] W[E,h] and the weight gradient dY^T[E,m] X[m,h] in FP32), and at a few square
shapes. Each shape is timed in TF32 and in BF16 back to back in one process, behind BF16 heater
matmuls (sustained state); the cost model reads the median ratio tf32/bf16 per layout
(docs/cost-model.md, "TF32 and FP32 GEMMs"). Random normal operands; spot check of the TF32
result against float64 on a slice. Never changes GPU clocks or settings."""

import argparse
import statistics

import torch

import probe_common as pc


def timed(fn, calls, reps, heater):
    """Median over `reps` batches of `calls` back-to-back calls, each batch queued behind 2 ms of
    heater matmuls; seconds per call."""
    times = []
    for _ in range(reps + 2):
        heater(0.002)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e-3 / calls)
    return statistics.median(times[2:])


def operands(layout, m, n, k, dtype, dev):
    """A and B of C[m,n] = A[m,k] B[k,n] stored as a linear layer's GEMM stores them."""
    if layout == "fwd":   # Y = X W^T: X[m,k], W[n,k]
        x, w = torch.randn(m, k, device=dev, dtype=dtype), torch.randn(n, k, device=dev, dtype=dtype)
        return x, w.t()
    if layout == "dgrad":  # dX = dY W: dY[m,k], W[k,n]
        return torch.randn(m, k, device=dev, dtype=dtype), torch.randn(k, n, device=dev, dtype=dtype)
    dy, x = torch.randn(k, m, device=dev, dtype=dtype), torch.randn(k, n, device=dev, dtype=dtype)
    return dy.t(), x      # dW = dY^T X: dY[k,m], X[k,n]


def spot_check(a, b):
    ref = a[:64].double() @ b.double()
    got = (a[:64] @ b).double()
    return float(((got - ref).abs().max() / ref.abs().max()).item())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--heat-s", type=float, default=10.0)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    heater = pc.Heater(dev)
    heater.warm(args.heat_s)
    shapes = []
    for tokens in (2048, 4096, 8192, 16384, 32768):
        for experts in (64, 128, 256):
            for hidden in (2048, 4096, 7168):
                shapes.append(("dgrad", tokens, hidden, experts))   # dX[t,h] = dY[t,E] W[E,h]
                shapes.append(("wgrad", experts, hidden, tokens))   # dW[E,h] = dY^T[E,t] X[t,h]
                shapes.append(("fwd", tokens, experts, hidden))     # Y[t,E] = X[t,h] W^T
    for s in (2048, 4096, 8192):
        shapes += [("fwd", s, s, s), ("dgrad", s, s, s), ("wgrad", s, s, s)]
    w = pc.CsvWriter(args.out, "gemm_tf32 (PyTorch matmul, TF32 vs BF16)", [args.device],
                     {"tf32": "torch.backends.cuda.matmul.allow_tf32 = True (FP32 tensors)",
                      "timing": "CUDA events around batches of back-to-back calls queued behind "
                                "2 ms of BF16 8192^3 heater matmuls, after --heat-s of them; "
                                "median of --reps batches after 2 warm-ups"})
    w.header(["layout", "m", "n", "k", "time_tf32_s", "time_bf16_s", "ratio", "tflops_tf32",
              "tflops_bf16", "max_rel_err_tf32"])
    for layout, m, n, k in shapes:
        res = {}
        err = 0.0
        for name, dtype in (("tf32", torch.float32), ("bf16", torch.bfloat16)):
            torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
            a, b = operands(layout, m, n, k, dtype, dev)
            c = torch.empty(m, n, device=dev, dtype=dtype)
            flops = 2.0 * m * n * k
            calls = max(3, min(200, int(2e-3 * 400e12 / flops)))
            res[name] = timed(lambda: torch.matmul(a, b, out=c), calls, args.reps, heater)
            if name == "tf32":
                err = spot_check(a, b)
            del a, b, c
        flops = 2.0 * m * n * k
        w.row([layout, m, n, k, pc.fmt(res["tf32"]), pc.fmt(res["bf16"]),
               pc.fmt(res["tf32"] / res["bf16"], 4), pc.fmt(flops / res["tf32"] / 1e12, 4),
               pc.fmt(flops / res["bf16"] / 1e12, 4), pc.fmt(err, 3)])
    torch.backends.cuda.matmul.allow_tf32 = False
    w.close()


if __name__ == "__main__":
    main()
