#!/usr/bin/env python3
"""Merges probe CSVs of the same columns measured in parallel on several GPUs into one table.

Usage: merge_csv.py OUT PART [PART ...]. OUT holds the first part's provenance comments, then
each further part's comments prefixed with "part N:", the common header and every part's rows
in order. Fails (exit 1) when the parts' headers differ.
"""
import sys


def read(path):
    comments, header, rows = [], None, []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                comments.append(line.rstrip("\n"))
            elif header is None:
                header = line.rstrip("\n")
            elif line.strip():
                rows.append(line.rstrip("\n"))
    return comments, header, rows


class TimeColumns:
    """Where a probe CSV keeps a point's key and its time: the point is every column before flops
    (or time_s); tflops, where present, is flops / time_s."""

    def __init__(self, header):
        self.cols = header.split(",")
        self.t = self.cols.index("time_s")
        self.fl = self.cols.index("flops") if "flops" in self.cols else None
        self.tf = self.cols.index("tflops") if "tflops" in self.cols else None
        self.stop = self.t if self.fl is None else self.fl

    def key(self, fields):
        return tuple(fields[:self.stop])

    def set_time(self, fields, time):
        """fields with time_s = time and tflops recomputed."""
        fields[self.t] = f"{time:.6g}"
        if self.tf is not None and self.fl is not None:
            fields[self.tf] = f"{float(fields[self.fl]) / time * 1e-12:.5g}"
        return fields


def main(out, parts):
    merged = [read(p) for p in parts]
    headers = {h for _, h, _ in merged}
    if len(headers) != 1:
        sys.exit(f"merge_csv: headers differ: {sorted(headers)}")
    lines = list(merged[0][0])
    for i, (comments, _, _) in enumerate(merged[1:], start=2):
        lines += [f"# part {i}: {c[1:].strip()}" for c in comments]
    lines.append(merged[0][1])
    for _, _, rows in merged:
        lines += rows
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
