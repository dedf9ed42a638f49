#!/usr/bin/env python3
"""The per-kernel prediction of a step's extra time beside paced host copies (runs 84, 88, 89
and 91; calib/probes/copy_pace.py), against the measured extra time.

For each kernel of the profiled paced step, the share f of its interval that overlaps copies of
each direction set (d2h only, h2d only, both), and its time alone (the same kernel, by position,
in the profiled step alone). The table's line charges such a kernel f x (fixed + share x alone)
per direction set (docs/cost-model.md, "Kernels beside host copies": CopyDelayTable's lines,
fitted from calib/data/h200/copy_interference.csv; the table below is docs/cost-model.md's, to
be kept equal to what `CopyDelayTable` fits). The cost model charged f x share x alone after runs
88-91 and, since run 84, the shares measured inside the paced steps (calib/scripts/
copy_pace_share.py, calib/data/h200/copy_pace_share.csv), which this script does not use. The sum over the step's kernels (one stream) is the predicted extra time,
with the whole line (predicted_extra_s) and with the share alone (share_only_s); the probe's CSV
gives the measured one (median paced - median alone).

Usage: copy_pace_predict.py STEPS_CSV KERNELS_CSV
"""

import csv
import sys

# (fixed seconds, share of the kernel's time) per class and direction set: docs/cost-model.md.
LINES = {
    "gemm": {"d2h": (22.6e-6, 0.0), "h2d": (32.5e-6, 0.0015), "both": (31.7e-6, 0.0032)},
    "attention": {"d2h": (0.1e-6, 0.115), "h2d": (9.7e-6, 0.140), "both": (11.6e-6, 0.136)},
    "other": {"d2h": (0.9e-6, 0.011), "h2d": (5.6e-6, 0.014), "both": (6.1e-6, 0.023)},
}


def rows(path):
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def overlap(a0, a1, intervals):
    """Microseconds of [a0, a1) covered by the union of `intervals`."""
    covered, last = 0.0, a0
    for s, e in sorted(intervals):
        s, e = max(s, last), min(e, a1)
        if e > s:
            covered += e - s
            last = e
    return covered


def predict(kernels, seq, share_only=False):
    alone = [r for r in kernels if r["seq"] == seq and r["run"] == "alone" and r["kind"] == "kernel"]
    paced = [r for r in kernels if r["seq"] == seq and r["run"] == "paced" and r["kind"] == "kernel"]
    copies = {d: [] for d in ("d2h", "h2d")}
    for r in kernels:
        if r["seq"] == seq and r["run"] == "paced" and r["kind"] == "memcpy":
            start, dur = float(r["start_us"]), float(r["dur_us"])
            if dur <= 1000:
                continue  # the step's own small copies
            copies["d2h" if "DtoH" in r["name"] else "h2d"].append((start, start + dur))
    if len(alone) != len(paced):
        raise SystemExit(f"seq {seq}: {len(alone)} kernels alone, {len(paced)} paced: not matched")
    extra, beside = 0.0, 0
    for a, p in zip(alone, paced):
        s, e = float(p["start_us"]), float(p["start_us"]) + float(p["dur_us"])
        if e <= s:
            continue
        d2h, h2d = overlap(s, e, copies["d2h"]), overlap(s, e, copies["h2d"])
        both = overlap(s, e, [(max(x0, y0), min(x1, y1)) for x0, x1 in copies["d2h"]
                              for y0, y1 in copies["h2d"] if min(x1, y1) > max(x0, y0)])
        t = float(a["dur_us"]) * 1e-6
        shares = {"both": both, "d2h": d2h - both, "h2d": h2d - both}
        for which, us in shares.items():
            if us <= 0:
                continue
            fixed, share = LINES[p["class"]][which]
            extra += us / (e - s) * ((0.0 if share_only else fixed) + share * t)
        beside += int(d2h + h2d > 0)
    return extra, beside, len(paced)


def main():
    steps, kernels = rows(sys.argv[1]), rows(sys.argv[2])
    print("seq,measured_extra_s,predicted_extra_s,ratio,share_only_s,kernels_beside_copies,kernels")
    for r in steps:
        extra, beside, n = predict(kernels, r["seq"])
        shares, _, _ = predict(kernels, r["seq"], share_only=True)
        measured = float(r["extra_s"])
        ratio = extra / measured if measured > 0 else float("nan")
        print(f"{r['seq']},{measured:.6f},{extra:.6f},{ratio:.3f},{shares:.6f},{beside},{n}")


if __name__ == "__main__":
    main()
