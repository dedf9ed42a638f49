#!/usr/bin/env python3
"""Per-point leave-one-out of the dense GEMM tables, and the shapes to measure again.

Each interior node of a GEMM grid (dtype, layout; m x n x k) is predicted from its two
neighbours along every axis where it has one on each side, by the log-log line between them,
and the predictions are averaged in log time: the rule of `LogGrid::loo_predict`
(calib/log_grid.cpp) for nodes that are interior on at least one axis (nodes at the edge of
every axis are skipped here). It is Python, not `clustersim calib check`, because it picks the
shapes on the GPU machine, which cannot build the simulator (no SimGrid there). A node whose
prediction misses by more than --over is "flagged".

A flagged node is either a real step of cuBLASLt's kernel choice or wave count, which a second
measurement reproduces, or noise in the node (or in a neighbour), which it does not. To tell
them apart, `--shapes` prints every flagged node of every table with its axis neighbours (the
nodes its prediction used), as m:n:k for probe_gemm --shapes, the union over the tables.

Usage: gemm_loo_points.py [--over 0.07] [--shapes] TABLE [TABLE ...]
(default: the report; TABLE e.g. calib/data/h200/gemm_bf16.csv).
"""
import argparse
import csv
import math
from collections import defaultdict


def load(path):
    """{(dtype, layout): {(m, n, k): time_s}} of a probe_gemm table."""
    with open(path) as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        grids = defaultdict(dict)
        for r in rows:
            grids[(r["dtype"], r["layout"])][(int(r["m"]), int(r["n"]), int(r["k"]))] = \
                float(r["time_s"])
    return grids


def loo(points):
    """{node: (relative error, [(axis, relative error of that axis' line)])}."""
    axes = [sorted({p[d] for p in points}) for d in range(3)]
    out = {}
    for p, t in points.items():
        per_axis = []
        for d in range(3):
            i = axes[d].index(p[d])
            if 0 < i < len(axes[d]) - 1:
                lo, hi = list(p), list(p)
                lo[d], hi[d] = axes[d][i - 1], axes[d][i + 1]
                x, xa, xb = (math.log(v) for v in (p[d], lo[d], hi[d]))
                ta, tb = math.log(points[tuple(lo)]), math.log(points[tuple(hi)])
                per_axis.append((d, ta + (tb - ta) * (x - xa) / (xb - xa)))
        if per_axis:
            log_pred = sum(v for _, v in per_axis) / len(per_axis)
            out[p] = (math.exp(log_pred) / t - 1,
                      [(d, math.exp(v) / t - 1) for d, v in per_axis])
    return out


def neighbourhood(points, node):
    """The node and its neighbours along each axis."""
    axes = [sorted({p[d] for p in points}) for d in range(3)]
    out = {node}
    for d in range(3):
        i = axes[d].index(node[d])
        for j in (i - 1, i + 1):
            if 0 <= j < len(axes[d]):
                q = list(node)
                q[d] = axes[d][j]
                out.add(tuple(q))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--over", type=float, default=0.07)
    ap.add_argument("--shapes", action="store_true")
    ap.add_argument("tables", nargs="+")
    a = ap.parse_args()
    shapes = set()
    for path in a.tables:
        for key, points in sorted(load(path).items()):
            flagged = sorted(((abs(e), p, e, per) for p, (e, per) in loo(points).items()
                              if abs(e) > a.over), reverse=True)
            for _, p, _, _ in flagged:
                shapes |= neighbourhood(points, p)
            if a.shapes:
                continue
            print(f"{key[0]}/{key[1]}: {len(points)} nodes, {len(flagged)} over {a.over:.0%}")
            for _, p, e, per in flagged:
                axes = " ".join(f"{'mnk'[d]} {x:+.1%}" for d, x in per)
                print(f"  m={p[0]} n={p[1]} k={p[2]}: {e:+.1%} ({axes}), "
                      f"{points[p] * 1e6:.1f} us")
    if a.shapes:
        print(",".join(f"{m}:{n}:{k}" for m, n, k in sorted(shapes)))


if __name__ == "__main__":
    main()
