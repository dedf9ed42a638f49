#!/usr/bin/env python3
"""Appends the rows of a new measurement to a table whose axes it extends.

Usage: append_run.py TABLE NEW PREFIX. TABLE keeps its provenance comments and rows; NEW's
comments follow TABLE's, each prefixed "PREFIX, NEW's file name: ", and NEW's rows go after
TABLE's. Fails (exit 1) when the headers differ or NEW holds a point TABLE already has (every
column before flops/time_s equal): a re-measurement is merged by mean_points.py or
replace_set.py instead.
"""
import os
import sys

from merge_csv import TimeColumns, read  # read: (comments, header, rows) of a probe CSV


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    table, new, prefix = sys.argv[1:]
    t_comments, t_header, t_rows = read(table)
    n_comments, n_header, n_rows = read(new)
    if t_header != n_header:
        print(f"{new}: header differs from {table}'s", file=sys.stderr)
        sys.exit(1)
    cols = TimeColumns(t_header)
    have = {cols.key(r.split(",")) for r in t_rows}
    clash = [r for r in n_rows if cols.key(r.split(",")) in have]
    if clash:
        print(f"{new}: {len(clash)} points already in {table}, first: {clash[0]}", file=sys.stderr)
        sys.exit(1)
    tag = f"# {prefix}, {os.path.basename(new)}: "
    with open(table, "w") as f:
        for line in t_comments + [tag + c[2:] if c.startswith("# ") else tag + c[1:]
                                  for c in n_comments]:
            f.write(line + "\n")
        f.write(t_header + "\n")
        for r in t_rows + n_rows:
            f.write(r + "\n")
    print(f"{table}: {len(n_rows)} rows appended from {new}")


if __name__ == "__main__":
    main()
