#!/usr/bin/env python3
"""Combines two or more runs of the same probe and grid into one table: each point's time is the
geometric mean of the runs' times (tflops or gbps recomputed from it), min_s and max_s the
extremes over the runs, every other column the first run's. N independent runs of a point at the same state divide its variance by N; no run
is preferred. The output keeps the first run's provenance, then each further run's prefixed
"run K:", and a line saying how the times were combined.

Usage: mean_runs.py OUT FIRST SECOND [MORE...]. Fails (exit 1) if the headers differ or a point of
one run is missing from another. A point is identified by every column before flops/time_s.
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


def main(out, paths):
    runs = [read(p) for p in paths]
    c1, r1, h1 = runs[0]
    stop = h1.index("flops") if "flops" in h1 else h1.index("time_s")
    key = lambda r: tuple(r[c] for c in h1[:stop])
    if len({key(r) for r in r1}) != len(r1):
        sys.exit(f"mean_runs: {paths[0]} holds a point twice")
    others = []
    for path, (_, rows, header) in zip(paths[1:], runs[1:]):
        if header != h1:
            sys.exit(f"mean_runs: headers differ: {paths[0]} {h1} / {path} {header}")
        by_key = {key(r): r for r in rows}
        if len(by_key) != len(rows) or {key(r) for r in r1} != set(by_key):
            sys.exit(f"mean_runs: {paths[0]} and {path} do not hold the same points")
        others.append(by_key)
    lines = list(c1)
    for k, (comments, _, _) in enumerate(runs[1:], start=2):
        lines += [f"# run {k}: {c[1:].strip()}" for c in comments]
    base = [p.split("/")[-1] for p in paths]
    names = ", ".join(base if len(set(base)) == len(base) else paths)
    lines.append(f"# mean_runs: time_s is the geometric mean of the {len(paths)} runs' times per "
                 f"point ({names}); tflops = flops / time_s, gbps = bytes / time_s, min_s / max_s over all "
                 "runs")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=h1, lineterminator="\n")
    w.writeheader()
    for r in r1:
        times = [float(r["time_s"])] + [float(o[key(r)]["time_s"]) for o in others]
        t = math.exp(sum(math.log(x) for x in times) / len(times))
        row = dict(r, time_s=f"{t:.6g}")
        rows = [r] + [o[key(r)] for o in others]
        if "min_s" in h1 and "max_s" in h1:  # the spread of all the runs' samples
            row["min_s"] = min(rows, key=lambda x: float(x["min_s"]))["min_s"]
            row["max_s"] = max(rows, key=lambda x: float(x["max_s"]))["max_s"]
        if "tflops" in h1 and "flops" in h1:
            row["tflops"] = f"{float(r['flops']) / t * 1e-12:.5g}"
        if "gbps" in h1 and "bytes" in h1:
            row["gbps"] = f"{float(r['bytes']) / t * 1e-9:.5g}"
        w.writerow(row)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n" + buf.getvalue())


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
