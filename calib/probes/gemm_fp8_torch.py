"""Fallback FP8 GEMM probe through torch._scaled_mm (cuBLASLt inside PyTorch): e4m3 inputs with
per-tensor scales, BF16 output, the TN layout (A = X[m,k] row-major, B = W[n,k] row-major
used transposed), the same (m, n, k) grid and CSV columns as probe_gemm's fp8:tn rows.
run_all.sh runs it only when probe_gemm produced no FP8 rows."""

import argparse
import sys

import torch

from probe_common import CsvWriter, fmt, median


def time_point(m, n, k, budget, dev):
    ws = m * k + n * k + 2 * m * n
    slots = max(1, min(16, (512 << 20) // ws + 1))
    a = [((torch.rand(m, k, device=dev) * 2 - 1).to(torch.float8_e4m3fn)) for _ in range(slots)]
    b = [((torch.rand(n, k, device=dev) * 2 - 1).to(torch.float8_e4m3fn)) for _ in range(slots)]
    sa = torch.tensor(0.25, device=dev)
    sb = torch.tensor(0.5, device=dev)

    def call(i):
        return torch._scaled_mm(a[i % slots], b[i % slots].t(), scale_a=sa, scale_b=sb,
                                out_dtype=torch.bfloat16)
    out = call(0)
    ref = (a[0][:64].double() @ b[0].double().t()) * 0.125
    err = ((out[:64].double() - ref).norm() / ref.norm()).item()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    ev[0].record()
    call(1)
    ev[1].record()
    torch.cuda.synchronize()
    est = ev[0].elapsed_time(ev[1]) * 1e-3
    calls = max(1, int(5e-4 / max(est, 1e-7)))
    samples = max(5, min(21, int(budget / max(est * calls, 1e-9))))
    t = []
    for s in range(samples):
        ev[0].record()
        for i in range(calls):
            call(s * calls + i)
        ev[1].record()
        torch.cuda.synchronize()
        t.append(ev[0].elapsed_time(ev[1]) * 1e-3 / calls)
    return median(t), min(t), max(t), samples, calls, slots, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="gemm_fp8_torch.csv")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--m", default="1024,2048,4096,8192,16384,32768,65536")
    ap.add_argument("--nk", default="512,1024,2048,4096,8192,16384,32768")
    ap.add_argument("--point-budget", type=float, default=0.3)
    args = ap.parse_args()
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    csv = CsvWriter(args.out, "gemm fp8 (torch._scaled_mm fallback)", [args.device], {
        "timing": "CUDA events; median of samples of back-to-back calls; operands rotate",
        "data": "uniform random in [-1,1) cast to e4m3; scales A=0.25 B=0.5; BF16 output"})
    csv.header(["dtype", "layout", "m", "n", "k", "flops", "time_s", "tflops", "min_s", "max_s",
                "samples", "calls", "slots", "max_rel_err", "sm_mhz", "power_w", "temp_c",
                "variant"])
    ms = [int(x) for x in args.m.split(",")]
    nks = [int(x) for x in args.nk.split(",")]
    for m in ms:
        for n in nks:
            for k in nks:
                med, lo, hi, samples, calls, slots, err = time_point(m, n, k, args.point_budget, dev)
                fl = 2.0 * m * n * k
                csv.row(["fp8", "tn", m, n, k, fmt(fl), fmt(med), fmt(fl / med * 1e-12, 5), fmt(lo),
                         fmt(hi), samples, calls, slots, fmt(err, 3), 0, 0, 0, "torch_scaled_mm"])
                torch.cuda.empty_cache()
        print(f"fp8 torch m={m} done", file=sys.stderr, flush=True)
    csv.close()


if __name__ == "__main__":
    main()
