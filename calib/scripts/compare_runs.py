#!/usr/bin/env python3
"""Reproducibility of the calibration tables: compares the tables of a new run (e.g. run_all.sh)
with those of a reference directory (calib/data/h200) at the points both measured.

Usage: compare_runs.py NEW_DIR REF_DIR [--min-us 50]
Prints, per table file and series, the number of common points and the median and max of
new/ref - 1 for times (all points, and points of at least --min-us in the reference), and for
the TP-overlap and interference tables the same on their ratios (slowdowns)."""

import argparse
import csv
import os
import statistics
import sys

# file -> (key columns, value column)
TABLES = {
    "gemm.csv": (("dtype", "layout", "m", "n", "k"), "time_s"),
    "gemm_wgrad.csv": (("dtype", "layout", "m", "n", "k"), "time_s"),
    "gemm_fp8_fastacc.csv": (("dtype", "layout", "m", "n", "k"), "time_s"),
    "gemm_catalog.csv": (("dtype", "layout", "m", "n", "k"), "time_s"),
    "attention.csv": (("backend", "set", "direction", "seq", "heads", "batch"), "time_s"),
    "attention_cp.csv": (("backend", "set", "direction", "seq_q", "seq_kv", "heads", "batch"), "time_s"),
    "membound.csv": (("kernel", "bytes"), "time_s"),
    "nccl_default.csv": (("collective", "algo", "proto", "bytes"), "time_s"),
    "nccl_ring_simple.csv": (("collective", "algo", "proto", "bytes"), "time_s"),
    "nccl_ring_ll.csv": (("collective", "algo", "proto", "bytes"), "time_s"),
    "nccl_ring_ll128.csv": (("collective", "algo", "proto", "bytes"), "time_s"),
    "nccl_tree_simple.csv": (("collective", "algo", "proto", "bytes"), "time_s"),
    "nccl_tree_ll.csv": (("collective", "algo", "proto", "bytes"), "time_s"),
    "nccl_tree_ll128.csv": (("collective", "algo", "proto", "bytes"), "time_s"),
    "gemm_tp_overlap_fwd_wgrad.csv": (("dtype", "layout", "m", "n", "k", "variant", "chunks", "sm_margin"), "ratio"),
    "gemm_tp_overlap_dgrad_fp8.csv": (("dtype", "layout", "m", "n", "k", "variant", "chunks", "sm_margin"), "ratio"),
    "interference.csv": (("rank", "compute", "channels", "bytes"), "compute_slowdown"),
}
# The reference directory keeps the GEMM grids per dtype, not per run.
REF_ALIASES = {"gemm.csv": ["gemm_bf16.csv", "gemm_fp8.csv"], "gemm_wgrad.csv": ["gemm_bf16.csv"],
               "gemm_catalog.csv": ["gemm_catalog_bf16.csv", "gemm_catalog_fp8.csv"]}


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def index(paths, keys, value):
    out = {}
    for p in paths:
        if not os.path.exists(p):
            continue
        for r in rows(p):
            try:
                out[tuple(r[k] for k in keys)] = (float(r[value]), float(r.get("time_s") or 0.0))
            except (KeyError, ValueError):
                continue
    return out


def summary(diffs):
    if not diffs:
        return "-"
    a = [abs(d) for d in diffs]
    return f"{len(diffs):5d} pts  median {100 * statistics.median(diffs):+6.2f}%  |median| {100 * statistics.median(a):5.2f}%  max |d| {100 * max(a):6.2f}%"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("new")
    ap.add_argument("ref")
    ap.add_argument("--min-us", type=float, default=50.0)
    args = ap.parse_args()
    for name, (keys, value) in TABLES.items():
        new = index([os.path.join(args.new, name)], keys, value)
        ref = index([os.path.join(args.ref, n) for n in REF_ALIASES.get(name, [name])], keys, value)
        series = {}
        for k, (v, t) in new.items():
            if k not in ref or ref[k][0] <= 0:
                continue
            d = v / ref[k][0] - 1.0
            s = "/".join(k[:3]) if name.startswith("attention") else (
                "/".join(k[:2]) if name.startswith("gemm") else k[0])
            series.setdefault(s, ([], []))[0].append(d)
            if ref[k][1] * 1e6 >= args.min_us or value != "time_s":
                series[s][1].append(d)
        if not series:
            print(f"{name}: no common points")
            continue
        for s, (all_d, long_d) in sorted(series.items()):
            print(f"{name:32s} {s:28s} all: {summary(all_d)} | >= {args.min_us:g} us: {summary(long_d)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
