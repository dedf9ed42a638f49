#!/usr/bin/env python3
"""Compares two GPUs' (or two runs') TP-overlap or held-SM ratios, point by point.

The tables are calib/probes/gemm_tp_overlap.cu's CSVs (gemm_tp_overlap_*.csv, gemm_busy_sms.csv):
every row carries `ratio`, the variant's time over its reference measured in the same pass (the
plain GEMM, or for `busy`/`busymargin` the hand-over with no SM held). The model applies the
measured GPU's (H200) ratios to derived GPUs unchanged (docs/cost-model.md, "GEMMs under TP
overlap"); this script says how far another GPU's ratios are from them: per (dtype, layout,
variant) the median, 10th and 90th percentile of ratio(B) / ratio(A) over the shapes both
tables hold, and the median over all. Two passes on the same GPU (runs 12 and 42, runs 18 and
43, all H200) give the noise floor to read it against. (compare_runs.py compares whole run
directories by fixed file names, per layout, without the held-SM table; this takes any files and
splits by variant.)

Usage: tp_ratio_compare.py A.csv[,A2.csv...] B.csv[,B2.csv...] [--json OUT]
Exits 2 when the tables share no point.
"""
import argparse
import json
import statistics
import sys
from collections import defaultdict

from compare_runs import rows  # the data rows of a probe CSV, comment lines skipped

KEY = ("dtype", "layout", "m", "n", "k", "variant", "chunks", "sm_margin", "sm_busy")


def load(paths):
    """{key: ratio} of every row of the comma-separated CSV paths (comment lines skipped)."""
    out = {}
    for path in paths.split(","):
        for r in rows(path):
            # run 12's tables predate the sm_busy column (no SM held)
            out[tuple(r.get(c) or "0" for c in KEY)] = float(r["ratio"])
    return out


def quantile(sorted_vals, q):
    return sorted_vals[min(len(sorted_vals) - 1, int(q * len(sorted_vals)))]


def compare(a, b):
    """Per-series statistics of b / a over their common points, plus the pooled median."""
    series = defaultdict(list)
    for key, rb in b.items():
        ra = a.get(key)
        if ra is None or key[5] == "full" or (key[5] == "busy" and key[8] == "0"):
            continue  # the references themselves are 1 by construction
        name = f"{key[0]}/{key[1]} {key[5]} chunks={key[6]} margin={key[7]} busy={key[8]}"
        series[name].append(rb / ra)
    rows = []
    pooled = []
    for name in sorted(series):
        v = sorted(series[name])
        pooled += v
        rows.append({"series": name, "points": len(v), "median": statistics.median(v),
                     "p10": quantile(v, 0.1), "p90": quantile(v, 0.9)})
    return rows, (statistics.median(pooled) if pooled else None), len(pooled)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", help="reference tables (comma-separated), e.g. the H200's")
    ap.add_argument("b", help="compared tables (comma-separated), e.g. an H100's")
    ap.add_argument("--json", help="also write the statistics to this file")
    args = ap.parse_args()
    rows, pooled, n = compare(load(args.a), load(args.b))
    if n == 0:
        print("no common points", file=sys.stderr)
        return 2
    print(f"{'series':58s} {'points':>6s} {'median':>7s} {'p10':>6s} {'p90':>6s}  (ratio B / ratio A)")
    for r in rows:
        print(f"{r['series']:58s} {r['points']:6d} {r['median']:7.3f} {r['p10']:6.3f} {r['p90']:6.3f}")
    print(f"all {n} points: median {pooled:.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"series": rows, "points": n, "median": pooled}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
