#!/usr/bin/env python3
"""Replaces the rows of a GEMM table that were measured before the GPU reached the sustained
state (their own power_w below a threshold) with the same rows measured warm.

A grid process starts on a GPU that idled (the build, the gap between steps); its first ~2-3 s
of rows run at 1.56-1.98 GHz and 90-600 W instead of the ~1.47 GHz, ~690 W of GEMMs back to back
that the tables stand for (calib/data/h200/README.md, runs 44-45). The replacement rows come from
probe_gemm or probe_gemm_tp_overlap --heat-s (runs 45-46). A row is identified by every column
before time_s (shape, layout, variant, chunks, held SMs ...). Where any row of a shape (dtype,
layout, m, n, k) is cold, every row of that shape is replaced, so that ratio tables keep the
variants of one pass together. Rows without a warm measurement are kept and counted.

Usage: warm_replace.py TABLE WARM_CSV [WARM_CSV ...] [--below-w 640]. Rewrites TABLE in place,
adding a provenance comment: how many rows were replaced, from which files.
"""
import argparse
import csv
import io


def split(path):
    comments, body = [], []
    with open(path) as f:
        for line in f:
            (comments if line.startswith("#") else body).append(line)
    return comments, body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("table")
    ap.add_argument("warm", nargs="+")
    ap.add_argument("--below-w", type=float, default=640.0)
    a = ap.parse_args()
    comments, body = split(a.table)
    rows = list(csv.DictReader(io.StringIO("".join(body))))
    header = body[0].strip().split(",")
    ident = header[:header.index("time_s")]
    warm = {}
    for path in a.warm:
        for r in csv.DictReader(io.StringIO("".join(split(path)[1]))):
            if all(c in r for c in header):
                warm[tuple(r[c] for c in ident)] = r
    shape = lambda r: (r["dtype"], r["layout"], r["m"], r["n"], r["k"])
    cold = {shape(r) for r in rows if float(r["power_w"]) < a.below_w}
    out, replaced, missing = [], 0, 0
    for r in rows:
        key = tuple(r[c] for c in ident)
        if shape(r) in cold:
            if key in warm:
                r = {h: warm[key][h] for h in header}
                replaced += 1
            elif float(r["power_w"]) < a.below_w:
                missing += 1
        out.append(r)
    names = ", ".join(p.split("/")[-1] for p in a.warm)
    comments.append(f"# warm_replace: {replaced} rows of the shapes with rows measured below {a.below_w:g} W "
                    f"(GPU not yet at the sustained state) replaced by the same rows measured after "
                    f"20 s of heater GEMMs ({names}); {missing} cold rows left without a warm "
                    f"measurement\n")
    with open(a.table, "w", newline="") as f:
        f.writelines(comments)
        w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
        w.writeheader()
        w.writerows(out)
    print(f"{a.table}: replaced {replaced}, left {missing}")


if __name__ == "__main__":
    main()
