#!/usr/bin/env python3
"""Derives calib/data/h200/power_boost.csv, the clock boost of compute-bound kernels under the
power limit (docs/cost-model.md, "Power state"), from runs 24 and 25 (calib/probes/power_phases.py).

Per kind and pattern: boost = the kind's rate in the pattern / its rate alone (the GEMM-only or
attention-only sustained state the cost tables are measured in); share = the kind's share of the
pattern's time with its calls at the rate alone and the element-wise adds at their measured time
(adds are HBM-bound, hardly clock-dependent): the share the simulator computes from its tables.
Rows used: compute phases alternating with adds, phases <= 50 ms (the power controller averages
over longer than that; the 200 ms row settles within a phase). Rows within 0.05 of share are
averaged. Usage: python3 calib/scripts/power_boost.py > calib/data/h200/power_boost.csv
"""
import csv
import os
import statistics

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "h200")
GEMM_FLOP = 2.0 * 4096 * 8192 * 8192           # power_phases.py: 4096 x 8192 x 8192
ATTN_FLOP = 4.0 * 8192 * 8192 * 16 * 128 / 2   # causal seq 8192, 16 heads, head 128
SOURCES = [("gemm_bf16", "run24/power_phases.csv", GEMM_FLOP),
           ("gemm_fp8", "run25/power_phases_fp8_adds.csv", GEMM_FLOP),
           ("attention", "run25/power_phases_attention_adds.csv", ATTN_FLOP)]


def rows(path):
    with open(os.path.join(ROOT, path)) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def kind_points(path, flop):
    data = rows(path)
    alone = next(r for r in data if float(r["other_phase_ms"]) == 0 and float(r["gemm_tflops"]) > 0)
    rate = float(alone["gemm_tflops"]) * 1e12
    t_call_ms = flop / rate * 1e3
    points = []
    for r in data:
        n, m = int(r["gemms_per_phase"]), float(r["other_phase_ms"])
        if n == 0 or m == 0 or float(r["gemm_phase_ms"]) > 50:
            continue
        points.append((n * t_call_ms / (n * t_call_ms + m), float(r["gemm_tflops"]) * 1e12 / rate))
    points.sort()
    merged = []
    for share, boost in points:
        if merged and share - merged[-1][0][0] < 0.05:
            merged[-1][0].append(share)
            merged[-1][1].append(boost)
        else:
            merged.append(([share], [boost]))
    return [(statistics.mean(s), statistics.mean(b), len(b)) for s, b in merged]


def main():
    print("# derived: calib/scripts/power_boost.py from run24/power_phases.csv, "
          "run25/power_phases_fp8_adds.csv, run25/power_phases_attention_adds.csv (one H200, "
          "2026-11-30)")
    print("# share: the kind's share of a pattern's time at its rate alone (the tables' "
          "sustained state); boost: its rate in the pattern / its rate alone")
    print("kind,share,boost,rows")
    for kind, path, flop in SOURCES:
        for share, boost, n in kind_points(path, flop):
            print(f"{kind},{share:.4f},{boost:.4f},{n}")
        print(f"{kind},1.0000,1.0000,0")


if __name__ == "__main__":
    main()
