#!/usr/bin/env python3
"""Prints the headline numbers of a calibration run: summarize.py RESULTS_DIR.
Reads the probes' CSVs (lines starting with '#' are provenance). Standard library only."""

import csv
import glob
import os
import statistics
import sys


def read(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def num(row, key):
    try:
        return float(row[key])
    except (KeyError, ValueError):
        return float("nan")


def gemm(d):
    burst = read(os.path.join(d, "gemm_burst.csv"))
    groups = {}
    for r in burst:
        groups.setdefault((r["dtype"], r["m"], r["fast_accum"]), []).append(r)
    print("GEMM burst (30 calls after idle): dtype cube fast_accum -> median TFLOP/s, SM MHz, W")
    for (dt, m, fa), rs in groups.items():
        print(f"  {dt:5} {m:>6} fa={fa}: {statistics.median(num(r, 'tflops') for r in rs):7.1f}"
              f"  {statistics.median(num(r, 'sm_mhz') for r in rs):6.0f} MHz"
              f"  {max(num(r, 'power_w') for r in rs):5.0f} W")
    sus = read(os.path.join(d, "gemm_sustained.csv"))
    for dt in ("bf16", "fp8"):
        rs = [r for r in sus if r["dtype"] == dt]
        if rs:
            tail = rs[len(rs) // 2:]
            print(f"GEMM sustained {dt} 8192^3 over {num(rs[-1], 't_s'):.0f} s: first window "
                  f"{num(rs[0], 'tflops'):.1f}, second half median "
                  f"{statistics.median(num(r, 'tflops') for r in tail):.1f} TFLOP/s at "
                  f"{statistics.median(num(r, 'sm_mhz') for r in tail):.0f} MHz, "
                  f"{statistics.median(num(r, 'power_w') for r in tail):.0f} W")
    grid = (read(os.path.join(d, "gemm.csv")) + read(os.path.join(d, "gemm_wgrad.csv")) +
            read(os.path.join(d, "gemm_fp8_fastacc.csv")) +
            read(os.path.join(d, "gemm_fp8_torch.csv")))
    cat = read(os.path.join(d, "gemm_catalog.csv"))
    for dt in ("bf16", "fp8"):
        rs = [num(r, "tflops") for r in cat if r["dtype"] == dt]
        if rs:
            print(f"GEMM catalog {dt}: {len(rs)} shapes, TFLOP/s min {min(rs):.0f} median "
                  f"{statistics.median(rs):.0f} max {max(rs):.0f}")
    combos = sorted({(r["dtype"], r["layout"]) for r in grid})
    for dt, lay in combos:
        rs = [r for r in grid if r["dtype"] == dt and r["layout"] == lay]
        best = max(rs, key=lambda r: num(r, "tflops"))
        sq = [r for r in rs if r["m"] == r["n"] == r["k"] == "8192"]
        print(f"GEMM grid {dt}/{lay}: {len(rs)} points, best {num(best, 'tflops'):.1f} at "
              f"{best['m']}x{best['n']}x{best['k']}"
              + (f", 8192^3 {num(sq[0], 'tflops'):.1f}" if sq else "")
              + f", max spot-check error {max(num(r, 'max_rel_err') for r in rs):.2g}")


def attention(d):
    rows = read(os.path.join(d, "attention.csv"))
    for be in sorted({r["backend"] for r in rows}):
        for st in sorted({r["set"] for r in rows if r["backend"] == be}):
            rs = [r for r in rows if r["backend"] == be and r["set"] == st]
            best = {dr: max((num(r, "tflops") for r in rs if r["direction"] == dr), default=0)
                    for dr in ("fwd", "bwd")}
            at8k = [r for r in rs if r["seq"] == "8192" and r["heads"] in ("64", "16")]
            s8 = ", ".join(f"{r['direction']} h{r['heads']} {num(r, 'tflops'):.0f}" for r in at8k)
            print(f"attention {be}/{st}: {len(rs)} rows, best fwd {best['fwd']:.0f} bwd "
                  f"{best['bwd']:.0f} TFLOP/s; seq 8k: {s8}; max err "
                  f"{max(num(r, 'max_rel_err') for r in rs):.2g}")


def membound(d):
    rows = read(os.path.join(d, "membound.csv"))
    for k in dict.fromkeys(r["kernel"] for r in rows):
        rs = [r for r in rows if r["kernel"] == k]
        print(f"membound {k:14}: " + " ".join(
            f"{num(r, 'bytes') / 2**20:.0f}MiB:{num(r, 'gbps'):.0f}" for r in rs)
            + f"  GB/s; max err {max(num(r, 'max_rel_err') for r in rs):.2g}")


def nccl(d):
    for path in sorted(glob.glob(os.path.join(d, "nccl_*.csv"))):
        rows = read(path)
        for c in dict.fromkeys(r["collective"] for r in rows):
            rs = [r for r in rows if r["collective"] == c]
            pick = [r for r in rs if r["bytes"] in ("1048576", "67108864", "1073741824", "4294967296")]
            print(f"{os.path.basename(path)[:-4]:16} {c:15} busbw GB/s " + " ".join(
                f"{int(r['bytes']) >> 20}MiB:{num(r, 'busbw_GBps'):.0f}" for r in pick)
                + f"  small {num(rs[0], 'time_s') * 1e6:.1f} us; max err "
                f"{max(num(r, 'max_rel_err') for r in rs):.2g}")


def interference(d):
    rows = [r for r in read(os.path.join(d, "interference.csv")) if r["rank"] == "0"]
    for r in rows:
        print(f"interference {r['compute']:9} ch={r['channels']:7} {int(r['bytes']) >> 20:5} MiB:"
              f" compute x{num(r, 'compute_slowdown'):.3f}, comm x{num(r, 'comm_slowdown'):.3f}")


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    for part in (gemm, attention, membound, nccl, interference):
        try:
            part(d)
        except (KeyError, ValueError, ZeroDivisionError, statistics.StatisticsError) as e:
            print(f"{part.__name__}: cannot summarize ({e!r})")


if __name__ == "__main__":
    main()
