"""Copy/compute interference probe: what activation offloading's host copies do to the kernels
beside them, and what those kernels do to the copies.

Megatron-core's fine-grained activation offloading copies saved tensors to pinned host memory on
a device-to-host stream during the forward and back on a host-to-device stream before the
backward, while the compute stream runs the layers (docs/trace-format.md, "Activation
offloading"). The simulator plays those copies as sleeps on their own streams, at the measured
pinned-copy rate, and charges the kernels beside them nothing. This probe measures both sides:

  kernels: BF16 GEMMs (SHAPES: compute-bound squares and narrow shapes), causal attention
  forwards (PyTorch SDPA, 8 heads of 128, 2k and 8k tokens) and memory-bound device copies of
  1 MiB, 64 MiB and 1 GiB (read + write);
  backgrounds: none, device-to-host only, host-to-device only, both at once: 256 MiB chunks
  between pinned host buffers and device buffers, queued on their own streams so that they run
  over the whole timed window (checked with events: `covered`).

Each kernel is timed call by call with CUDA events on the compute stream, queued behind BF16
heater matmuls (probe_common.Heater: the sustained power state of back-to-back GEMMs), median
over the calls; alone and beside alternate --repeats times and the medians of the repeats are
kept.
The copies' rates are their bytes over the span of their events. Correctness: each GEMM's output
on a 64 x 64 block against a float32 reference (relative error < 2e-2), the device copy
bit-exact, one chunk's device-to-host-to-device round trip bit-exact.

Writes one CSV with a provenance header (probe_common.CsvWriter). Needs PyTorch with CUDA.
Never changes clocks or settings.
"""

import argparse
import math

import torch

from probe_common import CsvWriter, Heater, fmt, median

CHUNK = 256 << 20  # bytes per background copy
COPY_GBPS_GUESS = 55.0  # pinned PCIe Gen5 x16 rate (calibration run 3), to size the queue
# GEMM shapes (m, n, k): compute-bound squares, and narrow ones (one dimension of 1024-2048, as a
# layer's per-rank GEMMs at high TP or short sequences) whose run 79 times moved most.
SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (8192, 1024, 8192), (8192, 2048, 8192),
          (2048, 8192, 8192), (8192, 8192, 1024)]


def kernels(dev):
    """(name, bytes or flops, callable, check) of each timed kernel."""
    out = []
    for m, n, k in SHAPES:
        name = f"gemm_bf16_{m}x{n}x{k}"
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)

        def run(a=a, b=b, c=c):
            torch.matmul(a, b, out=c)

        def check(a=a, b=b, c=c):
            ref = a[:64].float() @ b[:, :64].float()
            return float((c[:64, :64].float() - ref).norm() / ref.norm()) < 2e-2

        out.append((name, 2.0 * m * n * k, run, check))
    # Causal attention forward (PyTorch SDPA: cuDNN or flash on Hopper), 8 heads of 128, 8k and 2k.
    for seq in (8192, 2048):
        q, k_, v = (torch.randn(1, 8, seq, 128, device=dev, dtype=torch.bfloat16) for _ in range(3))
        box = {}

        def attn(q=q, k_=k_, v=v, box=box):
            box["o"] = torch.nn.functional.scaled_dot_product_attention(q, k_, v, is_causal=True)

        def attn_check(q=q, k_=k_, v=v, box=box):
            ref = torch.nn.functional.scaled_dot_product_attention(
                q[:, :1, :256].float(), k_[:, :1, :256].float(), v[:, :1, :256].float(), is_causal=True)
            o = box["o"][:, :1, :256].float()
            return float((o - ref).norm() / ref.norm()) < 2e-2

        out.append((f"attention_causal_8x128_seq{seq}", 2.0 * 8 * seq * seq * 128 * 2 / 2, attn, attn_check))
    # Device copies from 1 MiB (a few microseconds, launch-bound) to 1 GiB: whether what the
    # copies beside them add is a share of the kernel's time or a time per kernel.
    for label, size in (("copy_1MiB", 1 << 20), ("copy_64MiB", 64 << 20), ("copy_1GiB", 1 << 30)):
        src = torch.randn(size // 2, device=dev, dtype=torch.bfloat16)
        dst = torch.empty_like(src)

        def copy(src=src, dst=dst):
            dst.copy_(src)

        def copy_check(src=src, dst=dst):
            return bool(torch.equal(src, dst))

        out.append((label, 2.0 * size, copy, copy_check))
    return out


class Background:
    """Pinned host buffers, device buffers and one stream per direction."""

    def __init__(self, dev):
        n = CHUNK // 2
        self.host_src = torch.empty(n, dtype=torch.bfloat16).pin_memory()
        self.host_src.copy_(torch.randn(n, dtype=torch.float32).to(torch.bfloat16))
        self.host_dst = torch.empty(n, dtype=torch.bfloat16).pin_memory()
        self.dev_src = torch.randn(n, device=dev, dtype=torch.bfloat16)
        self.dev_dst = torch.empty(n, device=dev, dtype=torch.bfloat16)
        self.d2h, self.h2d = torch.cuda.Stream(dev), torch.cuda.Stream(dev)

    def round_trip_ok(self):
        with torch.cuda.stream(self.d2h):
            self.host_dst.copy_(self.dev_src, non_blocking=True)
        torch.cuda.synchronize()
        with torch.cuda.stream(self.h2d):
            self.dev_dst.copy_(self.host_dst, non_blocking=True)
        torch.cuda.synchronize()
        return bool(torch.equal(self.dev_dst, self.dev_src))

    def enqueue(self, which, chunks):
        """Queues `chunks` copies per direction of `which`; returns {direction: (start, end)}."""
        events = {}
        for name in which:
            stream = self.d2h if name == "d2h" else self.h2d
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with torch.cuda.stream(stream):
                start.record()
                for _ in range(chunks):
                    if name == "d2h":
                        self.host_dst.copy_(self.dev_src, non_blocking=True)
                    else:
                        self.dev_dst.copy_(self.host_src, non_blocking=True)
                end.record()
            events[name] = (start, end)
        return events


def timed_window(run, calls, heater, background, which, chunks):
    """Per-call seconds of `run` (median) with `which` copies in the background; the copies'
    GB/s per direction and whether they outlasted the timed calls."""
    torch.cuda.synchronize()
    copies = background.enqueue(which, chunks) if which else {}
    heater(0.03)
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(calls + 1)]
    ev[0].record()
    for i in range(calls):
        run()
        ev[i + 1].record()
    torch.cuda.synchronize()
    per_call = median([ev[i].elapsed_time(ev[i + 1]) * 1e-3 for i in range(calls)])
    rates, covered = {}, True
    for name, (start, end) in copies.items():
        rates[name] = chunks * CHUNK / (start.elapsed_time(end) * 1e-3) / 1e9
        covered = covered and ev[0].elapsed_time(end) >= ev[0].elapsed_time(ev[calls])
    return per_call, rates, covered


def measure(out, dev, calls, repeats):
    heater = Heater(dev)
    heater.warm(10.0)
    background = Background(dev)
    trip_ok = background.round_trip_ok()
    backgrounds = {"none": (), "d2h": ("d2h",), "h2d": ("h2d",), "both": ("d2h", "h2d")}
    for name, work, run, check in kernels(dev):
        for _ in range(3):
            run()
        torch.cuda.synchronize()
        ok = int(check() and trip_ok)
        alone_probe, _, _ = timed_window(run, calls, heater, background, (), 0)
        window = calls * alone_probe * 4 + 0.06  # kernels may slow down beside the copies
        chunks = math.ceil(window * COPY_GBPS_GUESS * 1e9 / CHUNK) + 2
        for bg, which in backgrounds.items():
            if bg == "none":
                continue
            alone, beside, rates_d2h, rates_h2d, cover = [], [], [], [], True
            for _ in range(repeats):
                a, _, _ = timed_window(run, calls, heater, background, (), 0)
                b, rates, covered = timed_window(run, calls, heater, background, which, chunks)
                alone.append(a)
                beside.append(b)
                rates_d2h.append(rates.get("d2h", 0.0))
                rates_h2d.append(rates.get("h2d", 0.0))
                cover = cover and covered
            a, b = median(alone), median(beside)
            out.row([name, bg, calls, fmt(a), fmt(b), fmt(b / a, 5), fmt(work / a / 1e12, 5),
                     fmt(median(rates_d2h), 5), fmt(median(rates_h2d), 5), int(cover), ok])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--calls", type=int, default=80)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    torch.manual_seed(1234)
    out = CsvWriter(args.out, "copy_interference", [args.device],
                    {"chunk_bytes": CHUNK,
                     "method": "kernel per call with CUDA events behind BF16 heater matmuls, median "
                               "of calls, median of --repeats alternating alone/beside windows; "
                               "background: pinned 256 MiB chunks on their own streams"})
    out.header(["kernel", "background", "calls", "seconds_alone", "seconds_beside", "slowdown",
                "work_per_s_alone_T", "d2h_GBps", "h2d_GBps", "covered", "check"])
    measure(out, dev, args.calls, args.repeats)
    out.close()


if __name__ == "__main__":
    main()
