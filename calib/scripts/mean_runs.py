#!/usr/bin/env python3
"""Combines two runs of the same probe and grid into one table: each point's time is the
geometric mean of the two runs' times (tflops recomputed from it), every other column is the
first run's. Two independent runs of a point at the same state halve its variance; neither run
is preferred. The output keeps the first run's provenance, then the second's prefixed "run 2:",
and a line saying how the times were combined.

Usage: mean_runs.py OUT FIRST SECOND. Fails (exit 1) if the headers differ or a point of one run
is missing from the other. A point is identified by every column before flops/time_s.
"""
import csv
import io
import math
import sys


def read(path):
    comments, body = [], []
    with open(path) as f:
        for line in f:
            (comments if line.startswith("#") else body).append(line.rstrip("\n"))
    return comments, list(csv.DictReader(io.StringIO("\n".join(body)))), body[0].split(",")


def main(out, first, second):
    c1, r1, h1 = read(first)
    c2, r2, h2 = read(second)
    if h1 != h2:
        sys.exit(f"mean_runs: headers differ: {h1} / {h2}")
    stop = h1.index("flops") if "flops" in h1 else h1.index("time_s")
    key = lambda r: tuple(r[c] for c in h1[:stop])
    other = {key(r): r for r in r2}
    if len(other) != len(r2) or {key(r) for r in r1} != set(other):
        sys.exit("mean_runs: the two runs do not hold the same points")
    lines = c1 + [f"# run 2: {c[1:].strip()}" for c in c2]
    lines.append(f"# mean_runs: time_s is the geometric mean of the two runs' times per point "
                 f"({first.split('/')[-1]}, {second.split('/')[-1]}); tflops = flops / time_s")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=h1, lineterminator="\n")
    w.writeheader()
    for r in r1:
        t = math.sqrt(float(r["time_s"]) * float(other[key(r)]["time_s"]))
        row = dict(r, time_s=f"{t:.6g}")
        if "tflops" in h1 and "flops" in h1:
            row["tflops"] = f"{float(r['flops']) / t * 1e-12:.5g}"
        w.writerow(row)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n" + buf.getvalue())


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
