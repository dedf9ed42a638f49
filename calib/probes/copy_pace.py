"""Do the per-kernel delays beside host copies add up over a step, with copies issued in pace?
(docs/cost-model.md, "Kernels beside host copies"; calibration run 84.)

Runs 82-83 (copy_step.py) queued a backlog of copies before a whole step and found the step
waiting for all of it. Megatron's offload manager issues copies in pace instead: a module's saved
tensors go to the host right after its forward, and come back ahead of its backward. This probe
does the same with copies that nothing waits for: step_check.py's single-GPU step (a 4-layer
Llama-3-8B-shaped transformers model, BF16, sdpa attention, micro batch 1), where each decoder
layer's forward hook queues one device-to-host copy of --chunk-mib MiB on a d2h stream (after
the layer's kernels, by an event) and each layer's backward pre-hook one host-to-device copy of
the same size on an h2d stream. The buffers are allocated once, so the hooks allocate nothing.

Per sequence length: the median of --steps steps alone and in pace, alternating, after --warm-s
seconds; steps timed with CUDA events on the compute stream. Then one step of each kind under the
profiler, whose kernel and copy intervals (GPU clock) are written to a second CSV: the per-kernel
prediction is made offline from them and the copy_interference.csv lines
(calib/scripts/copy_pace_predict.py). Also written: the step's own memcpy calls (host syncs
that a copy engine busy with offload copies would delay). Never changes clocks or settings.
"""

import argparse
import time

import torch

from copy_step import kernel_class
from probe_common import CsvWriter, fmt, median
from step_check import build_model, fwd_bwd


class PacedCopies:
    """One pinned host buffer and one device buffer per direction, and the layer hooks."""

    def __init__(self, model, dev, chunk_bytes):
        n = chunk_bytes // 2
        self.dev_src = torch.randn(n, device=dev, dtype=torch.bfloat16)
        self.host_dst = torch.empty(n, dtype=torch.bfloat16).pin_memory()
        self.host_src = torch.empty(n, dtype=torch.bfloat16).pin_memory()
        self.host_src.copy_(torch.randn(n, dtype=torch.float32).to(torch.bfloat16))
        self.dev_dst = torch.empty(n, device=dev, dtype=torch.bfloat16)
        self.d2h, self.h2d = torch.cuda.Stream(dev), torch.cuda.Stream(dev)
        self.on = False
        self.copies = []  # (direction, start event, end event) of the current step
        for layer in model.model.layers:
            layer.register_forward_hook(self._after_forward)
            layer.register_full_backward_pre_hook(self._before_backward)

    def _copy(self, direction):
        if not self.on:
            return
        stream = self.d2h if direction == "d2h" else self.h2d
        stream.wait_stream(torch.cuda.current_stream())
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(stream):
            start.record()
            if direction == "d2h":
                self.host_dst.copy_(self.dev_src, non_blocking=True)
            else:
                self.dev_dst.copy_(self.host_src, non_blocking=True)
            end.record()
        self.copies.append((direction, start, end))

    def _after_forward(self, module, args, output):
        self._copy("d2h")

    def _before_backward(self, module, grad_output):
        self._copy("h2d")

    def round_trip_ok(self):
        self.host_dst.copy_(self.dev_src)
        self.dev_dst.copy_(self.host_dst)
        torch.cuda.synchronize()
        return bool(torch.equal(self.dev_dst, self.dev_src))


def timed_step(model, ids, paced, on):
    """(seconds of forward + backward, seconds the copies ran, copies all inside the step)."""
    torch.cuda.synchronize()
    paced.on, paced.copies = on, []
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    ev[0].record()
    fwd_bwd(model, ids, 1)
    ev[1].record()
    torch.cuda.synchronize()
    paced.on = False
    step = ev[0].elapsed_time(ev[1]) * 1e-3
    busy = sum(s.elapsed_time(e) for _, s, e in paced.copies) * 1e-3
    inside = all(ev[0].elapsed_time(e) * 1e-3 <= step for _, _, e in paced.copies)
    model.zero_grad(set_to_none=False)
    return step, busy, inside


def profiled_step(model, ids, paced, on):
    """Kernel rows (name, class, start_us, dur_us) and copy rows (direction, start_us, dur_us)."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    paced.on, paced.copies = on, []
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fwd_bwd(model, ids, 1)
        torch.cuda.synchronize()
    paced.on = False
    model.zero_grad(set_to_none=False)
    kernels, copies, memcpys = [], [], []
    for e in prof.events():
        if e.device_type.name != "CUDA":
            continue
        start = e.time_range.start
        dur = e.time_range.end - e.time_range.start
        if "Memcpy" in e.name:
            (copies if dur > 1000 else memcpys).append((e.name, start, dur))
        elif "Memset" not in e.name:
            kernels.append((e.name, kernel_class(e.name), start, dur))
    kernels.sort(key=lambda k: k[2])
    return kernels, copies, memcpys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seqs", default="4096,8192")
    ap.add_argument("--chunk-mib", type=int, default=256)
    ap.add_argument("--warm-s", type=float, default=8.0)
    ap.add_argument("--steps", type=int, default=9)
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernels-out", required=True)
    args = ap.parse_args()
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    seqs = [int(s) for s in args.seqs.split(",")]
    model = build_model(args.layers, max(seqs), dev)
    paced = PacedCopies(model, dev, args.chunk_mib << 20)
    copy_ok = int(paced.round_trip_ok())
    extra = {"model": f"llama3_8b shape, {args.layers} layers, transformers eager modules, sdpa",
             "method": f"fwd+bwd alone and with one {args.chunk_mib} MiB pinned d2h copy after each "
                       "layer's forward and one h2d copy before each layer's backward (in pace, "
                       "nothing waits for them), alternating, medians; one profiled step of each"}
    out = CsvWriter(args.out, "copy_pace", [args.device], extra)
    out.header(["seq", "steps", "fwd_bwd_alone_s", "fwd_bwd_paced_s", "extra_s", "copy_busy_s",
                "copies_per_step", "copies_inside", "step_memcpys", "copy_check", "grad_check"])
    kout = CsvWriter(args.kernels_out, "copy_pace_kernels", [args.device], extra)
    kout.header(["seq", "run", "kind", "name", "class", "start_us", "dur_us"])
    for seq in seqs:
        ids = torch.randint(0, 128000, (1, seq), device=dev)
        end = time.perf_counter() + args.warm_s
        while time.perf_counter() < end:
            timed_step(model, ids, paced, False)
            timed_step(model, ids, paced, True)
        alone, paced_t, busy, inside = [], [], [], True
        for _ in range(args.steps):
            alone.append(timed_step(model, ids, paced, False)[0])
            t, b, ok = timed_step(model, ids, paced, True)
            paced_t.append(t)
            busy.append(b)
            inside = inside and ok
        memcpys = 0
        for run, on in (("alone", False), ("paced", True)):
            kernels, copies, mem = profiled_step(model, ids, paced, on)
            memcpys = max(memcpys, len(mem))
            for name, cls, start, dur in kernels:
                kout.row([seq, run, "kernel", name.replace(",", ";")[:80], cls, start, dur])
            for name, start, dur in copies + mem:
                kout.row([seq, run, "memcpy", name.replace(",", ";")[:80], "copy", start, dur])
        grads_ok = int(all(p.grad is None or torch.isfinite(p.grad).all().item()
                           for p in model.parameters()))
        a, p = median(alone), median(paced_t)
        out.row([seq, args.steps, fmt(a), fmt(p), fmt(p - a), fmt(median(busy)), 2 * args.layers,
                 int(inside), memcpys, copy_ok, grads_ok])
    kout.close()
    out.close()


if __name__ == "__main__":
    main()
