"""How fast GEMMs run under the power limit when they alternate with memory-bound work, against
the GEMM-only sustained state the cost tables are measured in (docs/calibration.md, section 3;
run 23 found the GEMMs of a real step at ~1.71 GHz against the tables' ~1.5 GHz).

Pattern: a GEMM phase of about G ms (BF16 4096 x 8192 x 8192 GEMMs back to back) then a
memory-bound phase of about M ms (BF16 element-wise adds of 1 GiB tensors), repeated for
--seconds after --warm-s of the same pattern. Every GEMM phase is timed with CUDA events; the
median GEMM rate over the phases of the second half, and the SM clock and board power sampled by
nvidia-smi every 50 ms over the whole pattern, are written per (G, M). G = M = 0 rows are the
references: GEMMs only (the tables' state) and adds only.

Not a table the cost model reads. Usage: python3 power_phases.py --device 0 --out power_phases.csv
"""

import argparse
import statistics
import time

import torch

from probe_common import CsvWriter, clocks_sampler, fmt

M_, N_, K_ = 4096, 8192, 8192
FLOP = 2.0 * M_ * N_ * K_


def mean_samples(path):
    clk, pw = [], []
    for line in open(path):
        parts = [p.strip() for p in line.split(",")]
        try:
            clk.append(float(parts[0]))
            pw.append(float(parts[1]))
        except (ValueError, IndexError):
            continue
    half = len(clk) // 2
    return (statistics.mean(clk[half:]) if clk[half:] else 0.0,
            statistics.mean(pw[half:]) if pw[half:] else 0.0)


def make_work(kind, dev):
    """(callable, FLOP per call) of the compute-bound kernel of a phase."""
    if kind == "bf16":
        a = torch.randn(M_, K_, device=dev, dtype=torch.bfloat16)
        b = torch.randn(K_, N_, device=dev, dtype=torch.bfloat16)
        c = torch.empty(M_, N_, device=dev, dtype=torch.bfloat16)
        return (lambda: torch.matmul(a, b, out=c)), FLOP
    if kind == "fp8":
        a = torch.randn(M_, K_, device=dev).to(torch.float8_e4m3fn)
        b = torch.randn(N_, K_, device=dev).to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device=dev)
        return (lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                         out_dtype=torch.bfloat16)), FLOP
    if kind == "attention":  # causal, Llama-3 70B heads per TP 4 shard: 16 q / 2 kv heads
        from torch.nn.attention import SDPBackend, sdpa_kernel
        s, h, kv, d = 8192, 16, 2, 128
        q = torch.randn(1, h, s, d, device=dev, dtype=torch.bfloat16)
        k = torch.randn(1, kv, s, d, device=dev, dtype=torch.bfloat16)
        v = torch.randn(1, kv, s, d, device=dev, dtype=torch.bfloat16)

        def run():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                 enable_gqa=True)
        return run, 4.0 * s * s * h * d / 2
    raise ValueError(kind)


def phase_counts(gemm_ms, add_ms, g, m):
    """Calls per phase of a pattern (G ms of GEMMs, M ms of adds at their burst durations).
    G < 0 or M < 0: no phase of that kind; G = 0: GEMMs only, M = 0: adds only (8 calls)."""
    n_gemm = 0 if g < 0 else max(1, round(g / gemm_ms)) if g > 0 else 8
    n_add = 0 if m < 0 else max(1, round(m / add_ms)) if m > 0 else 8
    if g == 0.0:
        n_add = 0
    if m == 0.0:
        n_gemm = 0
    return n_gemm, n_add


def gemm_phase(n_gemm, work, marks, keep):
    """Queues `n_gemm` calls of `work` between two CUDA events; keeps the pair in `marks`."""
    if not n_gemm:
        return
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(n_gemm):
        work()
    e1.record()
    if keep:
        marks.append((e0, e1))


def finish_pattern(sampler, tmp, marks, n_gemm, flop):
    """Stops the clock sampler; (median GEMM TFLOP/s of the kept phases, phases, clock, power)."""
    torch.cuda.synchronize()
    sampler.terminate()
    sampler.wait()
    clock, power = mean_samples(tmp)
    rates = [n_gemm * flop / (e0.elapsed_time(e1) * 1e-3) / 1e12 for e0, e1 in marks]
    return (statistics.median(rates) if rates else 0.0), len(rates), clock, power


def run_pattern(a, b, c, x, y, z, n_gemm, n_add, seconds, warm_s, dev_index, tmp):
    """a: the compute call, b: its FLOP, c: idle instead of adds."""
    marks = []
    sampler = clocks_sampler(dev_index, tmp)
    start = time.time()
    phases = 0
    while time.time() - start < warm_s + seconds:
        gemm_phase(n_gemm, a, marks, time.time() - start >= warm_s)
        if c:  # idle: the GPU waits for the host
            torch.cuda.synchronize()
            time.sleep(n_add * 0.73e-3)
        else:
            for _ in range(n_add):
                torch.add(x, y, out=z)
        phases += 1
        if phases % 8 == 0:
            torch.cuda.synchronize()  # keep the host no more than a few phases ahead
    return finish_pattern(sampler, tmp, marks, n_gemm, b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--out", default="power_phases.csv")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--warm-s", type=float, default=3.0)
    ap.add_argument("--phases-ms", default="0.5,1,2,5,10,20,50,200")
    ap.add_argument("--kind", choices=["bf16", "fp8", "attention"], default="bf16")
    ap.add_argument("--other", choices=["adds", "idle"], default="adds")
    args = ap.parse_args()
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    a = torch.randn(M_, K_, device=dev, dtype=torch.bfloat16)
    b = torch.randn(K_, N_, device=dev, dtype=torch.bfloat16)
    c = torch.empty(M_, N_, device=dev, dtype=torch.bfloat16)
    work, work_flop = make_work(args.kind, dev)
    idle = args.other == "idle"
    n = 1 << 29  # 1 GiB of BF16 per tensor
    x = torch.randn(n, device=dev, dtype=torch.bfloat16)
    y = torch.randn(n, device=dev, dtype=torch.bfloat16)
    z = torch.empty_like(x)
    # Burst durations at the start (before the pattern's power state settles): the counts per
    # phase are fixed from them, so a phase's length shrinks or grows with the clock.
    torch.matmul(a, b, out=c)
    torch.add(x, y, out=z)
    torch.cuda.synchronize()
    work()
    torch.cuda.synchronize()
    t = time.time()
    for _ in range(20):
        work()
    torch.cuda.synchronize()
    gemm_ms = (time.time() - t) / 20 * 1e3
    t = time.time()
    for _ in range(20):
        torch.add(x, y, out=z)
    torch.cuda.synchronize()
    add_ms = (time.time() - t) / 20 * 1e3
    check = (c[:4, :4].float() - (a[:4].float() @ b[:, :4].float())).abs().max().item()
    csv = CsvWriter(args.out, "power_phases (GEMM phases between memory-bound phases)",
                    [args.device], {
                        "compute": f"{args.kind} (bf16/fp8: {M_}x{N_}x{K_} torch.matmul / "
                                   f"_scaled_mm; attention: cuDNN SDPA causal seq 8192, 16 q / 2 kv "
                                   f"heads, head 128), {fmt(gemm_ms)} ms per call at the start",
                        "other_phase": ("idle: the host sleeps after synchronizing" if idle else
                                        f"BF16 add of 1 GiB tensors, {fmt(add_ms)} ms at the start"),
                        "spot_check_max_abs_err": fmt(check),
                        "timing": f"{args.warm_s} s of the pattern, then {args.seconds} s timed; "
                                  "median GEMM-phase rate; nvidia-smi clock/power every 50 ms, "
                                  "mean of the second half"})
    csv.header(["gemm_phase_ms", "other_phase_ms", "gemms_per_phase", "adds_per_phase",
                "gemm_tflops", "phases_timed", "sm_clock_mhz", "power_w"])
    patterns = [(0.0, -1.0), (-1.0, 0.0)]  # GEMMs only; adds only
    patterns += [(float(p), float(p)) for p in args.phases_ms.split(",") if p]
    patterns += [(5.0, 1.0), (20.0, 2.0), (1.0, 5.0)]
    if args.phases_ms == "":
        patterns = [(0.0, -1.0), (5.0, 5.0), (5.0, 1.0), (1.0, 5.0)]
    tmp = args.out + ".samples"
    for g, m in patterns:
        n_gemm, n_add = phase_counts(gemm_ms, add_ms, g, m)
        rate, timed, clock, power = run_pattern(work, work_flop, idle, x, y, z, n_gemm, n_add,
                                                args.seconds, args.warm_s, args.device, tmp)
        csv.row([fmt(n_gemm * gemm_ms), fmt(n_add * add_ms), n_gemm, n_add, fmt(rate), timed,
                 fmt(clock), fmt(power)])
        print(g, m, n_gemm, n_add, fmt(rate), fmt(clock), fmt(power), flush=True)
    csv.close()


if __name__ == "__main__":
    main()
