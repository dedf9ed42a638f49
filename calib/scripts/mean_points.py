#!/usr/bin/env python3
"""Folds later measurements of some points of a table into it: each point that the NEW files
measured takes the weighted geometric mean of the table's time and the NEW files' times.

Usage: mean_points.py TABLE --weights A:B NEW [NEW ...]. A point is identified by every column
before flops (or time_s). A point of TABLE that every NEW file holds gets
time = exp((A log t_table + B mean_i log t_new_i) / (A + B)), tflops recomputed; its other
columns stay TABLE's. Rows of a NEW file that TABLE lacks are ignored (one NEW file may hold
several tables' layouts); a point that some NEW files hold and others do not is an error. With
A = the runs TABLE's time averages and B = the number of NEW files, the result is the mean of all
runs. Rewrites TABLE in place with a provenance comment (files, weights, points). Fails (exit 1)
when the headers' point columns differ or no point matches.
"""
import argparse
import math
import sys

from merge_csv import TimeColumns, read  # read: (comments, header, rows) of a probe CSV
from replace_set import mean_shared


def new_times(paths, point_names):
    """{point: [time_s per NEW file]} over the points every NEW file holds."""
    per_file = []
    for p in paths:
        _, header, rows = read(p)
        c = TimeColumns(header)
        if c.cols[:c.stop] != point_names:
            sys.exit(f"mean_points: {p}: point columns {c.cols[:c.stop]} != {point_names}")
        per_file.append({c.key(r.split(",")): float(r.split(",")[c.t]) for r in rows})
    keys = set(per_file[0])
    for f, d in zip(paths[1:], per_file[1:]):
        if set(d) != keys:
            sys.exit(f"mean_points: {f} holds other points than {paths[0]}")
    return {k: [d[k] for d in per_file] for k in keys}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("table")
    ap.add_argument("--weights", required=True, help="A:B, runs behind TABLE : NEW files")
    ap.add_argument("new", nargs="+")
    a = ap.parse_args()
    w_old, w_new = (float(x) for x in a.weights.split(":"))
    comments, header, rows = read(a.table)
    c = TimeColumns(header)
    news = new_times(a.new, c.cols[:c.stop])
    # The NEW files' mean as rows of TABLE's points, then TABLE's rows against it.
    new_rows = []
    for r in rows:
        times = news.get(c.key(r.split(",")))
        if times is not None:
            f = r.split(",")
            f[c.t] = repr(math.exp(sum(math.log(x) for x in times) / len(times)))  # unrounded
            new_rows.append(",".join(f))
    out, matched = mean_shared(header, new_rows, rows, w_old=w_new, w_new=w_old)
    if matched == 0:
        sys.exit(f"mean_points: no point of {a.table} is in {a.new}")
    names = ", ".join(p.rsplit("/", 1)[-1] for p in a.new)
    comments.append(f"# mean_points: at {matched} points time_s is the geometric mean of this "
                    f"table's time and those of {names}, weighted {a.weights} (table : new files)")
    with open(a.table, "w") as f:
        f.write("\n".join(comments + [header] + out) + "\n")
    print(f"mean_points: {a.table}: {matched} points", file=sys.stderr)


if __name__ == "__main__":
    main()
