"""Shared helpers of the Python calibration probes (attention.py, interference.py,
composition.py): provenance header, GPU telemetry through nvidia-smi, CUDA-event timing behind a
GPU spin, medians. Needs PyTorch."""

import datetime
import math
import socket
import statistics
import subprocess
import sys
import time

import torch

TELEMETRY_FIELDS = "clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active"


def telemetry(index):
    """One nvidia-smi reading of GPU `index` ('1980 MHz; 3201 MHz; ...') or 'unavailable'."""
    for fields in (TELEMETRY_FIELDS, TELEMETRY_FIELDS.rsplit(",", 1)[0]):
        try:
            out = subprocess.run(
                ["nvidia-smi", "-i", str(index), f"--query-gpu={fields}",
                 "--format=csv,noheader"], capture_output=True, text=True, timeout=10, check=True)
            return fields.replace(",", ";") + " = " + out.stdout.strip().replace(",", ";")
        except (OSError, subprocess.SubprocessError):
            continue
    return "unavailable"


def clocks_sampler(device, path, fields="clocks.sm,power.draw", interval_ms=50):
    """nvidia-smi writing `fields` of GPU `device` every `interval_ms` to `path` (CSV without
    header or units) until the returned process is terminated."""
    return subprocess.Popen(
        ["nvidia-smi", "-i", str(device), f"--query-gpu={fields}", "--format=csv,noheader,nounits",
         "-lms", str(interval_ms)],
        stdout=open(path, "w"), stderr=subprocess.DEVNULL)


def driver_version():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10, check=True)
        return out.stdout.split("\n")[0].strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class CsvWriter:
    """CSV with '# key: value' provenance lines before the header and after the rows."""

    def __init__(self, path, probe, devices, extra):
        self.f = open(path, "w", encoding="utf-8")
        self.devices = devices
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        lines = [f"probe: {probe}", f"date_utc: {now}", f"host: {socket.gethostname()}",
                 f"driver: {driver_version()}", f"torch: {torch.__version__}",
                 f"cuda_runtime: {torch.version.cuda}",
                 f"cudnn: {torch.backends.cudnn.version()}",
                 f"nccl: {'.'.join(map(str, torch.cuda.nccl.version()))}"]
        for d in devices:
            p = torch.cuda.get_device_properties(d)
            lines.append(f"gpu{d}: {p.name} sms={p.multi_processor_count} cc={p.major}.{p.minor} "
                         f"hbm_bytes={p.total_memory}")
            lines.append(f"gpu{d}_before: {telemetry(d)}")
        lines += [f"{k}: {v}" for k, v in extra.items()]
        lines.append("command: " + " ".join(sys.argv))
        for line in lines:
            self.f.write("# " + line + "\n")
        self.f.flush()

    def header(self, columns):
        self.row(columns)

    def row(self, cells):
        self.f.write(",".join(str(c) for c in cells) + "\n")
        self.f.flush()

    def close(self):
        for d in self.devices:
            self.f.write(f"# gpu{d}_after: {telemetry(d)}\n")
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.f.write(f"# finished_utc: {now}\n")
        self.f.close()


def fmt(x, digits=6):
    return f"{x:.{digits}g}"


def median(v):
    return statistics.median(v)


def sleep_cycles_per_s(dev=None):
    """SM clock cycles per second as torch.cuda._sleep counts them (one timed 2M-cycle spin)."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    torch.cuda._sleep(2_000_000)
    b.record()
    torch.cuda.synchronize(dev)
    return 2e6 / (a.elapsed_time(b) * 1e-3)


class Heater:
    """BF16 8192^3 matmuls on random operands: GPU work that keeps the GPU at the sustained
    clocks and power of back-to-back GEMMs (as in training) while the host enqueues, in place
    of queued()'s one-SM spin, under which a power-limited GPU clocks up."""

    def __init__(self, dev, n=8192):
        self.a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        self.b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        self.c = torch.empty(n, n, device=dev, dtype=torch.bfloat16)
        for _ in range(3):
            torch.matmul(self.a, self.b, out=self.c)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(10):
            torch.matmul(self.a, self.b, out=self.c)
        e1.record()
        torch.cuda.synchronize(dev)
        self.call_s = e0.elapsed_time(e1) * 1e-3 / 10

    def __call__(self, seconds):
        """Enqueues matmuls for at least `seconds` of GPU time."""
        for _ in range(max(1, math.ceil(seconds / self.call_s))):
            torch.matmul(self.a, self.b, out=self.c)

    def warm(self, seconds):
        """Runs matmuls back to back for `seconds` (to reach the sustained power state)."""
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            self(0.05)
            torch.cuda.synchronize()


def add_heat_argument(ap):
    """The --heat-s option of the probes that can queue behind a Heater."""
    ap.add_argument("--heat-s", type=float, default=0.0,
                    help="run BF16 matmuls for this many seconds first and queue every timed "
                         "batch behind matmuls instead of a one-SM spin (sustained power state)")


def heater_from(args, dev):
    """A Heater on `dev` already run for args.heat_s seconds, or None without --heat-s."""
    if args.heat_s <= 0:
        return None
    heater = Heater(dev)
    heater.warm(args.heat_s)
    return heater


def open_device(args):
    """Selects GPU args.device and seeds PyTorch (1234); returns the device, the spin kernel's
    cycles per second (measured before any heating) and heater_from(args, device)."""
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    torch.manual_seed(1234)
    cps = sleep_cycles_per_s(dev)
    return dev, cps, heater_from(args, dev)


def queued(enqueue, spin_s, cps, heater=None):
    """GPU seconds of the work `enqueue()` puts on the stream, measured behind a GPU spin.

    The spin (torch.cuda._sleep, or `heater`'s matmuls) keeps the GPU busy while the host
    enqueues, so the events bracket kernel time only, not PyTorch's and cuDNN's host dispatch.
    Returns (seconds, whether the host finished enqueuing before the spin ended, enqueue's
    result)."""
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
    ev[0].record()
    if heater is not None:
        heater(spin_s)
    else:
        torch.cuda._sleep(int(spin_s * cps))
    ev[1].record()
    h0 = time.perf_counter()
    out = enqueue()
    host_s = time.perf_counter() - h0
    ev[2].record()
    torch.cuda.synchronize()
    spun = ev[0].elapsed_time(ev[1]) * 1e-3
    return ev[1].elapsed_time(ev[2]) * 1e-3, host_s < spun, out


def timed(enqueue, spin_s, cps, tries=5, heater=None):
    """queued() with the spin doubled until the host got ahead of the GPU; returns (seconds,
    the spin that worked, enqueue's result). `enqueue` must be repeatable."""
    for _ in range(tries):
        t, ahead, out = queued(enqueue, spin_s, cps, heater)
        if ahead:
            return t, spin_s, out
        spin_s *= 2
    raise RuntimeError("host dispatch never got ahead of the GPU")


def time_fwd_bwd(forward, inputs, grad_out, budget, cps, heater=None):
    """Median seconds per call of `forward()` and of its backward (torch.autograd.grad of the
    output to `inputs`, given `grad_out`), the number of batches and the calls per batch. Two
    host-timed warm-ups size the batches (at most 16 calls, 3-12 batches within `budget`
    seconds); every batch is queued behind a GPU spin or the heater (timed). Run it inside the
    caller's backend context (e.g. sdpa_kernel)."""
    fw, bw = [], []
    for _ in range(2):  # warm-up: graph build, caches; host-timed upper bound
        t0 = time.perf_counter()
        o = forward()
        torch.autograd.grad(o, inputs, grad_out)
        torch.cuda.synchronize()
        est = time.perf_counter() - t0
    calls = max(1, min(16, int(4e-3 / est)))
    batches = max(3, min(12, int(budget / max(est * calls, 1e-6))))
    spin = 1e-3
    for _ in range(batches):
        tf, spin, outs = timed(lambda: [forward() for _ in range(calls)], spin, cps, heater=heater)
        tb, spin, _ = timed(lambda: [torch.autograd.grad(o, inputs, grad_out, retain_graph=True)
                                      for o in outs], spin, cps, heater=heater)
        del outs
        fw.append(tf / calls)
        bw.append(tb / calls)
    return median(fw), median(bw), len(fw), calls
