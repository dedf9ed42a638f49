#!/usr/bin/env python3
"""Replaces the rows of one `set` of a table by those of a newer measurement of that set.

Usage: replace_set.py [--mean-shared[=A:B]] TABLE SET NEW [KEEP_DIR]. TABLE keeps its provenance
comments and every row whose `set` column is not SET; the rows of SET are dropped (written to
KEEP_DIR/TABLE's name when KEEP_DIR is given, with TABLE's provenance) and NEW's rows appended,
NEW's comments prefixed "set SET: ". With --mean-shared, a point of SET that both tables hold
(every column before flops/time_s equal) takes the geometric mean of the two times, tflops
recomputed: for two tables that each average the same number of runs, the mean of all of them.
With =A:B the mean weighs TABLE's time by A and NEW's by B (the runs each averages), so that a
one-run table and a two-pass one give the geometric mean of the three runs (=1:2).
Fails (exit 1) when the headers differ or NEW holds a row of another set.
"""
import math
import os
import sys

from merge_csv import TimeColumns, read  # read: (comments, header, rows) of a probe CSV


def mean_shared(header, old_rows, new_rows, w_old=1.0, w_new=1.0):
    """new_rows with each point old_rows also hold at the geometric mean of both times."""
    c = TimeColumns(header)
    old = {c.key(r.split(",")): r.split(",") for r in old_rows}
    out, shared = [], 0
    for r in new_rows:
        f = r.split(",")
        o = old.get(c.key(f))
        if o is not None:
            shared += 1
            time = math.exp((w_new * math.log(float(f[c.t])) + w_old * math.log(float(o[c.t])))
                            / (w_old + w_new))
            c.set_time(f, time)
        out.append(",".join(f))
    return out, shared


def main(table, set_name, new, keep_dir=None, mean=None):
    c_old, h_old, r_old = read(table)
    c_new, h_new, r_new = read(new)
    if h_old != h_new:
        sys.exit(f"replace_set: headers differ: {h_old} / {h_new}")
    col = h_old.split(",").index("set")
    in_set = lambda r: r.split(",")[col] == set_name
    if not all(in_set(r) for r in r_new):
        sys.exit(f"replace_set: {new} holds rows of other sets than {set_name}")
    if keep_dir:
        os.makedirs(keep_dir, exist_ok=True)
        with open(os.path.join(keep_dir, os.path.basename(table)), "w") as f:
            f.write("\n".join(c_old + [h_old] + [r for r in r_old if in_set(r)]) + "\n")
    lines = c_old + [f"# set {set_name}: {c[1:].strip()}" for c in c_new]
    note = f"# replace_set: the rows of set {set_name} are {os.path.basename(new)}'s"
    if mean:
        r_new, shared = mean_shared(h_old, [r for r in r_old if in_set(r)], r_new, *mean)
        note += (f"; at the {shared} points both held, time_s is the geometric mean of the "
                 f"previous table's and {os.path.basename(new)}'s, weighted {mean[0]:g}:{mean[1]:g}")
    lines.append(note)
    rows = [r for r in r_old if not in_set(r)] + r_new
    with open(table, "w") as f:
        f.write("\n".join(lines + [h_old] + rows) + "\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    mean = None
    if args and args[0].startswith("--mean-shared"):
        w = args.pop(0).partition("=")[2] or "1:1"
        mean = tuple(float(x) for x in w.split(":"))
    if len(args) not in (3, 4):
        sys.exit(__doc__)
    main(*args, mean=mean)
