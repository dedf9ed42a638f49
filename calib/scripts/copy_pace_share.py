#!/usr/bin/env python3
"""Per kernel class, how much slower kernels run beside host copies issued in pace with a step
(calib/probes/copy_pace.py: run 84 on an H200, runs 88, 89, 91 and 97 on H100s), measured inside the
profiled paced step against the same step's kernels that ran apart from the copies.

For each run, chunk size, sequence length and kernel class (gemm, attention, other): each kernel
of the profiled paced step is matched by position with the profiled step alone (time alone a_i)
and has the fraction f_i of its interval covered by the offloaded copies (memcpys over 1 ms,
either direction). The kernels with f_i = 0 give the step's own rate r = sum(paced) / sum(alone)
(the paced step may run at another clock than the step alone); the others give the slowdown
    s = (sum(paced_i) / r - sum(a_i)) / sum(a_i f_i)
so that a kernel beside copies for all of its time takes a_i r (1 + s). A point needs kernels of
the class both beside and apart from copies. Writes one row per point to stdout (CSV with a
provenance header); calib::CopyDelayTable reads it (calib/data/h200/copy_pace_share.csv,
docs/cost-model.md "Kernels beside host copies").

Usage: copy_pace_share.py RUN_DIR... > copy_pace_share.csv
"""

import csv
import datetime
import glob
import os
import re
import sys

from copy_pace_predict import overlap as covered

COPY_MIN_US = 1000.0  # the offloaded chunks; the step's own small copies run in both steps


def read(path):
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    header = [l for l in lines if l.startswith("#")]
    return header, list(csv.DictReader(l for l in lines if not l.startswith("#")))


def gpu_of(header):
    for line in header:
        m = re.match(r"# gpu0: (.*?) sms=", line)
        if m:
            return m.group(1).strip()
    return "unknown"


def points(path):
    header, rows = read(path)
    chunk = re.search(r"copy_pace_kernels_(\d+)\.csv$", path).group(1)
    run = os.path.basename(os.path.dirname(path))
    for seq in sorted({r["seq"] for r in rows}, key=int):
        mine = [r for r in rows if r["seq"] == seq]
        alone = [r for r in mine if r["run"] == "alone" and r["kind"] == "kernel"]
        paced = [r for r in mine if r["run"] == "paced" and r["kind"] == "kernel"]
        if len(alone) != len(paced):
            sys.exit(f"{path}: seq {seq}: {len(alone)} kernels alone, {len(paced)} paced")
        spans = [(float(r["start_us"]), float(r["start_us"]) + float(r["dur_us"]))
                 for r in mine if r["run"] == "paced" and r["kind"] == "memcpy"
                 and float(r["dur_us"]) > COPY_MIN_US]
        sums = {}  # class -> [paced apart, alone apart, paced beside, alone beside, a*f, n beside]
        for a, p in zip(alone, paced):
            s0 = float(p["start_us"])
            s1 = s0 + float(p["dur_us"])
            if s1 <= s0:
                continue
            f = covered(s0, s1, spans) / (s1 - s0)
            t = sums.setdefault(p["class"], [0.0] * 6)
            if f > 0.0:
                t[2] += float(p["dur_us"])
                t[3] += float(a["dur_us"])
                t[4] += float(a["dur_us"]) * f
                t[5] += 1
            else:
                t[0] += float(p["dur_us"])
                t[1] += float(a["dur_us"])
        for cls in sorted(sums):
            pa, aa, pb, ab, af, n = sums[cls]
            if n == 0 or aa <= 0.0:
                continue
            r = pa / aa
            yield [run, gpu_of(header), chunk, seq, cls, int(n), f"{af * 1e-6:.6g}",
                   f"{r:.6f}", f"{(pb / r - ab) / af:.6f}"]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    files = sorted(f for d in sys.argv[1:] for f in glob.glob(os.path.join(d, "copy_pace_kernels_*.csv")))
    if not files:
        sys.exit("no copy_pace_kernels_*.csv under " + " ".join(sys.argv[1:]))
    out = csv.writer(sys.stdout, lineterminator="\n")
    print("# derived_by: calib/scripts/copy_pace_share.py " + " ".join(sys.argv[1:]))
    print(f"# date_utc: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%M:%SZ}")
    print("# method: per (run, chunk, seq, class): slowdown s of the kernels beside the offloaded "
          "copies (memcpys > 1 ms) inside the profiled paced step, against the same step's kernels "
          "of the class apart from them (rate_apart = paced / alone); overlap_s = sum of time alone "
          "x covered fraction")
    out.writerow(["run", "gpu", "chunk_mib", "seq", "class", "kernels_beside", "overlap_s",
                  "rate_apart", "slowdown"])
    for f in files:
        for row in points(f):
            out.writerow(row)


if __name__ == "__main__":
    main()
