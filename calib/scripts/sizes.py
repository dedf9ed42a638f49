#!/usr/bin/env python3
"""Prints the size axis of the calibration probes: powers of two from LO to HI with the 1.5x
points between them (LO, 1.5 LO, 2 LO, 3 LO, 4 LO, ...), comma-separated.
Usage: sizes.py LO HI (bytes; LO a power of two)."""
import sys


def sizes(lo, hi):
    out = []
    b = lo
    while b <= hi:
        out.append(b)
        if b * 3 // 2 <= hi:
            out.append(b * 3 // 2)
        b *= 2
    return out


if __name__ == "__main__":
    print(",".join(str(s) for s in sizes(int(sys.argv[1]), int(sys.argv[2]))))
