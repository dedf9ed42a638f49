#!/usr/bin/env python3
"""Sets H100 runs' measurements (calib/scripts/run_h100.sh: runs 85, 87) beside the H200 tables at the same
points, by the same probe and procedure, and prints per kind the H100's time over the H200's:
median, 10th and 90th percentile, min, max over the points both hold.

Pairs (H100 file in RUN_DIR: H200 file under calib/data/h200):
  grid_bf16.csv fwd      : run49/ + run51/grid_bf16.csv (same 16 shapes, behind 10 s of heater)
  grid_bf16.csv dgrad, wgrad : gemm_bf16.csv at the shapes that are its nodes (run 9's procedure)
  grid_fp8.csv           : run49/ + run51/grid_fp8.csv
  grid_fp8_fastacc.csv   : run49/ + run51/grid_fp8_fastacc.csv
  gemm_catalog.csv       : gemm_catalog_bf16.csv / gemm_catalog_fp8.csv (run 9, 77 shapes each)
  sustained_*.csv        : state_*: the sustained state over the tables' procedure on each GPU
                           (table_state.py's windows), the H200's ratio over the H100's (a time
                           ratio of the two GPUs' state factors); sustained_*: the sustained
                           rates themselves, run49/sustained_*.csv's over the H100's
  membound.csv           : membound.csv (run 62), per kernel; "floor" the smallest call,
                           "bandwidth" calls of 256 MiB and more
  attention.csv          : attention.csv at the same backend, set, direction, heads, seq
  gpt_layer_tp4_*.csv    : run57/ (the same probe and settings), fwd+bwd behind heater and back
                           to back
p10 and p90 are the points' own percentiles (inclusive method).
Usage: h100_compare.py RUN_DIR... [--points FILE]  (prints CSV on stdout, a row per run and kind;
--points writes every pair: seconds, or for state_ and sustained_ rows the reciprocal of the
ratio or rate, H100 first)
"""
import argparse
import csv
import functools
import os
import statistics

H200 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "h200")


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def h200(name):
    return rows(os.path.join(H200, name))


def gemm_key(r):
    return (r["dtype"], r["layout"], int(r["m"]), int(r["n"]), int(r["k"]))


def gemm_pairs(run_rows, ref_rows, layouts):
    ref = {gemm_key(r): float(r["time_s"]) for r in ref_rows if r["layout"] in layouts}
    out = []
    for r in run_rows:
        k = gemm_key(r)
        if r["layout"] in layouts and k in ref:
            out.append((f"{k[1]} {k[2]}x{k[3]}x{k[4]}", float(r["time_s"]), ref[k]))
    return out


def sustained_rates(sus_rows):
    """{(m, n, k): median TFLOP/s of the second half of the shape's windows}."""
    by_shape = {}
    for r in sus_rows:
        by_shape.setdefault((r["m"], r["n"], r["k"]), []).append(r)
    out = {}
    for shape, rs in by_shape.items():
        t0, t1 = float(rs[0]["t_s"]), float(rs[-1]["t_s"])
        out[shape] = statistics.median(
            [float(r["tflops"]) for r in rs if float(r["t_s"]) - t0 >= (t1 - t0) / 2])
    return out


def sustained_ratio(grid_rows, sus_rows):
    """{(m, n, k): sustained rate / table-procedure rate} (table_state.py's windows)."""
    grid = {(r["m"], r["n"], r["k"]): float(r["tflops"]) for r in grid_rows if r["layout"] == "fwd"
            or r["dtype"] == "fp8"}
    return {shape: rate / grid[shape] for shape, rate in sustained_rates(sus_rows).items()
            if shape in grid}


def membound_pairs(run_rows, ref_rows):
    ref = {(r["kernel"], int(r["bytes"])): float(r["time_s"]) for r in ref_rows}
    floor, bw = {}, {}
    for r in run_rows:
        k = (r["kernel"], int(r["bytes"]))
        if k not in ref:
            continue
        pair = (f"{k[0]} {k[1]}", float(r["time_s"]), ref[k])
        if k[1] >= 256 << 20:
            bw.setdefault(k[0], []).append(pair)
        if k[0] not in floor or k[1] < int(floor[k[0]][0].split()[1]):
            floor[k[0]] = pair
    return floor, bw


def attention_pairs(run_rows, ref_rows):
    def key(r):
        return (r["backend"], r["set"], r["direction"], int(r["heads"]), int(r["seq"]))
    ref = {key(r): float(r["time_s"]) for r in ref_rows}
    out = {}
    for r in run_rows:
        k = key(r)
        if k in ref:
            out.setdefault(f"attention_{k[0]}_{k[1]}_{k[2]}", []).append(
                (f"h{k[3]} s{k[4]}", float(r["time_s"]), ref[k]))
    return out


def summary_row(run_name, kind, pairs, points):
    ratios = sorted(a / b for _, a, b in pairs)
    if not ratios:
        print(f"{run_name},{kind},0,,,,,")
        return
    for name, a, b in pairs:
        points.append((run_name, kind, name, a, b, a / b))
    n = len(ratios)
    # inclusive: the percentiles of the points themselves, never beyond min and max
    q = statistics.quantiles(ratios, n=10, method="inclusive") if n >= 2 else [ratios[0]] * 9
    print(f"{run_name},{kind},{n},{statistics.median(ratios):.4f},{q[0]:.4f},{q[-1]:.4f},"
          f"{ratios[0]:.4f},{ratios[-1]:.4f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dirs", nargs="+")
    ap.add_argument("--points")
    a = ap.parse_args()
    points = []
    names = [os.path.basename(os.path.normpath(d)) for d in a.run_dirs]
    for d in a.run_dirs:
        if not os.path.isdir(d) or not any(f.endswith(".csv") for f in os.listdir(d)):
            raise SystemExit(f"h100_compare.py: {d}: not a directory of a run's CSV files")
    if len(set(names)) != len(names):
        raise SystemExit(f"h100_compare.py: two runs of the same name in {a.run_dirs}")
    print(f"# derived: calib/scripts/h100_compare.py from {', '.join(names)} (H100 SXM) against "
          "the H200 tables at the same points; ratio = H100 time / H200 time")
    print("run,kind,points,median,p10,p90,min,max")
    for run_dir, run_name in zip(a.run_dirs, names):
        compare(run_dir, run_name, points)
    if a.points:
        with open(a.points, "w") as f:
            w = csv.writer(f)
            # seconds; state_ and sustained_ rows: 1 / (state ratio or TFLOP/s), time-like
            w.writerow(["run", "kind", "point", "h100", "h200", "ratio"])
            for run_name, kind, name, x, y, r in points:
                w.writerow([run_name, kind, name, f"{x:.6g}", f"{y:.6g}", f"{r:.4f}"])


def compare(run_dir, run_name, points):
    """Prints one run's rows and appends its pairs to `points`."""
    run = lambda name: rows(os.path.join(run_dir, name))  # noqa: E731
    exists = lambda name: os.path.exists(os.path.join(run_dir, name))  # noqa: E731
    summary = functools.partial(summary_row, run_name)
    ts = h200("run49/grid_bf16.csv") + h200("run51/grid_bf16.csv")
    if exists("grid_bf16.csv"):
        g = run("grid_bf16.csv")
        summary("gemm_bf16_fwd", gemm_pairs(g, ts, {"fwd"}), points)
        grid = h200("gemm_bf16.csv")
        for layout in ("dgrad", "wgrad"):
            summary(f"gemm_bf16_{layout}", gemm_pairs(g, grid, {layout}), points)
    for kind, name in (("gemm_fp8_tn", "grid_fp8.csv"), ("gemm_fp8_fastacc", "grid_fp8_fastacc.csv")):
        if exists(name):
            ref = h200(f"run49/{name}") + h200(f"run51/{name}")
            summary(kind, gemm_pairs(run(name), ref, {"tn", "tn_fastacc"}), points)
    if exists("gemm_catalog.csv"):
        c = run("gemm_catalog.csv")
        summary("gemm_catalog_bf16", gemm_pairs(c, h200("gemm_catalog_bf16.csv"), {"fwd"}), points)
        summary("gemm_catalog_fp8", gemm_pairs(c, h200("gemm_catalog_fp8.csv"), {"tn"}), points)
    for dtype, grid_name in (("bf16", "grid_bf16.csv"), ("fp8", "grid_fp8.csv")):
        if exists(f"sustained_{dtype}.csv") and exists(grid_name):
            mine = sustained_ratio(run(grid_name), run(f"sustained_{dtype}.csv"))
            ref = sustained_ratio(h200(f"run49/{grid_name}"), h200(f"run49/sustained_{dtype}.csv"))
            # time ratio of the state factors: (H200 state rate ratio) / (H100's)
            # as time-like figures (reciprocals), H100 first like every other row
            summary(f"state_{dtype}", [("x".join(s), 1 / mine[s], 1 / ref[s]) for s in mine if s in ref],
                    points)
            # the sustained state itself, GPU against GPU (rates, so H200 rate / H100 rate)
            mine_r = sustained_rates(run(f"sustained_{dtype}.csv"))
            ref_r = sustained_rates(h200(f"run49/sustained_{dtype}.csv"))
            summary(f"sustained_{dtype}", [("x".join(s), 1 / mine_r[s], 1 / ref_r[s]) for s in mine_r
                                           if s in ref_r], points)
    if exists("membound.csv"):
        floor, bw = membound_pairs(run("membound.csv"), h200("membound.csv"))
        summary("membound_floor", list(floor.values()), points)
        for kernel, pairs in sorted(bw.items()):
            summary(f"membound_bw_{kernel}", pairs, points)
    if exists("attention.csv"):
        for kind, pairs in sorted(attention_pairs(run("attention.csv"), h200("attention.csv")).items()):
            summary(kind, pairs, points)
    for p in ("bf16", "fp8"):
        name = f"gpt_layer_tp4_{p}.csv"
        if exists(name):
            ref = {r["seq"]: r for r in h200(f"run57/{name}")}
            mine = run(name)
            for col in ("fwd_bwd_s", "sustained_fwd_bwd_s", "sustained_gemm_s", "sustained_other_s"):
                summary(f"gpt_layer_{p}_{col}",
                        [(f"seq {r['seq']}", float(r[col]), float(ref[r["seq"]][col]))
                         for r in mine if r["seq"] in ref], points)


if __name__ == "__main__":
    main()
