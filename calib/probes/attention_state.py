"""Run 49: cuDNN attention as the attention table measures it (batches queued behind BF16 heater
matmuls, attention.py's measure()) against the same call run back to back for --seconds, in the
power state attention reaches on its own (docs/cost-model.md, "Power state": the clock boost of
runs 24-25 is a ratio to that state, so the model needs the table's rate in the same state).

Per shape (batch 1, causal, head_dim 128, BF16, inputs with requires_grad as in training):
  table:     attention.measure() after --warm-s of heater matmuls (the table's procedure)
  sustained: forward calls (then torch.autograd.grad backward calls of one forward) back to back
             for --seconds; CUDA events around windows of calls; the median rate of the windows
             of the second half; nvidia-smi SM clock and power every 50 ms, mean of the second
             half
  nograd:    (first default shape only) the forward without requires_grad back to back, as
             power_phases.py runs it (run 25)
--shapes h:kv:s,... replaces the default shapes (run 50: the sequence axis); --backend flash
measures PyTorch's FlashAttention-2 instead of cuDNN (run 52), both modes with that backend.

Not a table the cost model reads directly: calib/scripts/table_state.py derives
calib/data/h200/table_state.csv from it. Usage: python3 attention_state.py --device 0 --out F
"""

import argparse
import statistics
import time

import torch
from torch.nn.attention import sdpa_kernel

import attention
from power_phases import clocks_sampler, mean_samples
from probe_common import CsvWriter, Heater, fmt, sleep_cycles_per_s

SHAPES = [(16, 2, 8192), (24, 24, 2048), (16, 1, 8192), (32, 8, 8192), (32, 8, 32768)]


def sustained(call, flop, seconds, device, tmp):
    """(median TFLOP/s of the second half's windows, SM MHz, W) of `call` back to back."""
    call()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    call()
    torch.cuda.synchronize()
    per_window = max(1, int(0.1 / max(time.perf_counter() - t0, 1e-6)))
    sampler = clocks_sampler(device, tmp)
    marks, start, w = [], time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(per_window):
            call()
        e1.record()
        marks.append((time.perf_counter() - start, e0, e1))
        w += 1
        if w % 4 == 0:
            torch.cuda.synchronize()  # keep the host at most a few windows ahead
    torch.cuda.synchronize()
    sampler.terminate()
    sampler.wait()
    clock, power = mean_samples(tmp)
    rates = [per_window * flop / (e0.elapsed_time(e1) * 1e-3) / 1e12
             for t, e0, e1 in marks if t >= seconds / 2]
    return statistics.median(rates), clock, power


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--out", default="attention_state.csv")
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--warm-s", type=float, default=3.0)
    ap.add_argument("--shapes", default="",
                    help="heads:kv_heads:seq,... (default: run 49's five shapes)")
    ap.add_argument("--backend", default="cudnn", choices=sorted(attention.BACKENDS))
    args = ap.parse_args()
    shapes = ([tuple(int(x) for x in t.split(":")) for t in args.shapes.split(",")]
              if args.shapes else SHAPES)
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    torch.manual_seed(1234)
    cps = sleep_cycles_per_s(dev)
    heater = Heater(dev)
    attention.HEATER = heater
    tmp = args.out + ".samples"
    csv = CsvWriter(args.out, "attention_state (table procedure vs back to back)", [args.device], {
        "table": "attention.py measure(): batches queued behind BF16 8192^3 heater matmuls, "
                 f"after {args.warm_s} s of them",
        "sustained": f"{args.seconds} s back to back, median of the second half's windows; "
                     "nvidia-smi every 50 ms, mean of the second half",
        "backend": f"{args.backend} = SDPBackend.{attention.BACKENDS[args.backend].name}",
        "flops": "fwd 2*b*h*s*s*(d+dv)*0.5 (causal); bwd 2.5 x fwd"})
    csv.header(["heads", "kv_heads", "seq", "direction", "mode", "tflops", "sm_mhz", "power_w",
                "max_rel_err"])
    for i, (h, kv, s) in enumerate(shapes):
        gqa = "native" if kv != h else "mha"
        fl = attention.flops_fwd(1, h, s, 128, 128)
        heater.warm(args.warm_s)
        f, b, _, _, err = attention.measure(args.backend, h, kv, s, 128, 128, gqa, dev, 0.5, cps)
        csv.row([h, kv, s, "fwd", "table", fmt(fl / f * 1e-12), "", "", fmt(err, 3)])
        csv.row([h, kv, s, "bwd", "table", fmt(2.5 * fl / b * 1e-12), "", "", fmt(err, 3)])
        q, k, v, do = attention.make_inputs(h, kv, s, 128, 128, gqa, dev)
        with sdpa_kernel([attention.BACKENDS[args.backend]]):
            rate, clk, pw = sustained(lambda: attention.sdpa(q, k, v, gqa), fl, args.seconds,
                                      args.device, tmp)
            csv.row([h, kv, s, "fwd", "sustained", fmt(rate), fmt(clk), fmt(pw), fmt(err, 3)])
            o = attention.sdpa(q, k, v, gqa)
            rate, clk, pw = sustained(
                lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True), 2.5 * fl,
                args.seconds, args.device, tmp)
            csv.row([h, kv, s, "bwd", "sustained", fmt(rate), fmt(clk), fmt(pw), fmt(err, 3)])
            if i == 0 and not args.shapes:
                qn, kn, vn = (t.detach() for t in (q, k, v))
                with torch.no_grad():
                    rate, clk, pw = sustained(lambda: attention.sdpa(qn, kn, vn, gqa), fl,
                                              args.seconds, args.device, tmp)
                csv.row([h, kv, s, "fwd", "sustained_nograd", fmt(rate), fmt(clk), fmt(pw),
                         fmt(err, 3)])
        del q, k, v, do, o
        torch.cuda.empty_cache()
        print(f"attention_state h={h} kv={kv} s={s} done", flush=True)
    csv.close()


if __name__ == "__main__":
    main()
