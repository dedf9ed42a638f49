"""Shared helpers of the Python calibration probes (attention.py, interference.py): provenance
header, GPU telemetry through nvidia-smi, CUDA-event timing with medians. Needs PyTorch."""

import datetime
import socket
import statistics
import subprocess
import sys

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
