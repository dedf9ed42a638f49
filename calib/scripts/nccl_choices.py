#!/usr/bin/env python3
"""Derives nccl_default_algo_choice.csv from the log of the default NCCL run (NCCL_DEBUG=INFO,
NCCL_DEBUG_SUBSYS including TUNING): every distinct (collective, logged size) of rank 0 with the
algorithm, protocol and channel range NCCL chose for it.
Usage: nccl_choices.py NCCL_DEFAULT_LOG DATE NCCL_VERSION > nccl_default_algo_choice.csv"""
import re
import sys

# NCCL 2.2x TUNING line, e.g. "host:1:2 [0] NCCL INFO AllReduce: 1024 Bytes -> Algo RING proto LL
# channel{Lo..Hi}={0..0}"
LINE = re.compile(r"\[(\d+)\] NCCL INFO (\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) "
                  r"channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}")


# The collectives the cost model takes NCCL's choice for (calib/tables.cpp, load_nccl_choices).
COLLECTIVES = ("AllGather", "AllReduce", "ReduceScatter")


def main(path, date, version):
    seen = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.search(line)
            if m is None or m.group(1) != "0" or m.group(2) not in COLLECTIVES:
                continue
            key = (m.group(2), int(m.group(3)))
            seen.setdefault(key, (m.group(4), m.group(5), m.group(6), m.group(7)))
    if not seen:
        sys.exit(f"no TUNING lines of rank 0 in {path}")
    print(f"# derived: every distinct (collective, size) -> algorithm/protocol/channel range NCCL "
          f"{version} logged for rank 0 in the default run of nccl_default.csv (NCCL_DEBUG=INFO "
          f"NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING, {date}); bytes_logged is NCCL's per-call size: "
          f"the buffer for AllReduce, the per-rank part for AllGather and ReduceScatter "
          f"(calib/scripts/nccl_choices.py)")
    print("collective,bytes_logged,algo,proto,channel_lo,channel_hi")
    for (coll, size), (algo, proto, lo, hi) in sorted(seen.items()):
        print(f"{coll},{size},{algo},{proto},{lo},{hi}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
