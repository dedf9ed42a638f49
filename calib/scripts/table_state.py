#!/usr/bin/env python3
"""Derives calib/data/h200/table_state.csv from run 49 (calib/scripts/run_table_state.sh): per
compute-bound kind, the rate of a kernel back to back in its own sustained power state over its
rate by the tables' procedure (each sample queued behind BF16 heater GEMMs, with the host's
synchronisation between samples), same process, same GPU, same shapes; the median over the
shapes, with their spread. The power-state boost of runs 24-25 (power_boost.csv) is a ratio to
the first of the two, so the cost model multiplies the two (docs/cost-model.md, "Power state").

GEMMs (seq 0: one ratio for every shape): probe_gemm --mode sustained (the second half of 7 s,
median of ~0.5 s windows) against --mode grid (behind 10 s of heater) at six training shapes
(run 49) and ten more (run 51). Attention, per sequence length: attention_state.py at run 49's five shapes and run 50's
sixteen (2k-128k), the median over the head configurations measured at that length; the ratio
moves with the length (the table's procedure is furthest from the sustained state at 8k).
FlashAttention-2 (kinds attention_flash2_fwd/bwd, runs 52-53): attention_state.py --backend flash
back to back over the committed flash rows of attention.csv at the same (seq, heads) as the model
reads them (GQA by heads, MHA from its own set), not over attention_state.py's own table-mode
rates: for FlashAttention-2 those ran 5-17% below the table's rows at 2k-8k, while run 53's
re-measurement of the whole flash table by its own procedure reproduced them (median 1.000,
0.95-1.14), and run 53's back-to-back rates reproduced run 52's within 1%.
Usage: python3 calib/scripts/table_state.py > calib/data/h200/table_state.csv
"""
import csv
import os
import statistics

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "h200")
ATTENTION_FILES = ["run49/attention_state.csv", "run50/attention_state_seq.csv"]
FLASH_FILES = ["run52/attention_state_flash.csv", "run53/attention_state_flash.csv"]
GEMM_KINDS = [("gemm_bf16", "grid_bf16.csv", "sustained_bf16.csv"),
              ("gemm_fp8", "grid_fp8.csv", "sustained_fp8.csv"),
              ("gemm_fp8_fastacc", "grid_fp8_fastacc.csv", "sustained_fp8_fastacc.csv")]


def rows(name):
    if "/" not in name:
        name = "run49/" + name
    with open(os.path.join(DATA, name)) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def sustained_rates(name):
    """{(m, n, k): median TFLOP/s of the windows in the second half of that shape's loop}."""
    by_shape = {}
    for r in rows(name):
        by_shape.setdefault((r["m"], r["n"], r["k"]), []).append(r)
    out = {}
    for shape, rs in by_shape.items():
        t0, t1 = float(rs[0]["t_s"]), float(rs[-1]["t_s"])
        late = [float(r["tflops"]) for r in rs if float(r["t_s"]) - t0 >= (t1 - t0) / 2]
        out[shape] = statistics.median(late)
    return out


GEMM_RUNS = ["run49", "run51"]


def gemm_ratios(grid_name, sustained_name):
    out = []
    for run in GEMM_RUNS:
        grid = {(r["m"], r["n"], r["k"]): float(r["tflops"])
                for r in rows(f"{run}/{grid_name}")}
        sus = sustained_rates(f"{run}/{sustained_name}")
        out += [(f"{m}x{n}x{k}", sus[(m, n, k)] / grid[(m, n, k)]) for (m, n, k) in grid]
    return out


def attention_ratios(direction):
    """{seq: [(shape, ratio)]} over the attention files."""
    out = {}
    for name in ATTENTION_FILES:
        data = rows(name)
        table = {(r["heads"], r["kv_heads"], r["seq"]): float(r["tflops"]) for r in data
                 if r["direction"] == direction and r["mode"] == "table"}
        for r in data:
            if r["direction"] != direction or r["mode"] != "sustained":
                continue
            key = (r["heads"], r["kv_heads"], r["seq"])
            out.setdefault(int(r["seq"]), []).append(
                (f"h{key[0]}/kv{key[1]}", float(r["tflops"]) / table[key]))
    return out


def flash_table():
    """{(set, direction, heads, seq): TFLOP/s} of the committed flash rows of attention.csv."""
    return {(r["set"], r["direction"], int(r["heads"]), int(r["seq"])): float(r["tflops"])
            for r in rows("./attention.csv") if r["backend"] == "flash"}


def flash_ratios(direction):
    """{seq: [(shape, ratio)]}: back to back (runs 52-53) / the committed table's rate."""
    table = flash_table()
    out = {}
    for name in FLASH_FILES:
        for r in rows(name):
            if r["direction"] != direction or r["mode"] != "sustained":
                continue
            h, kv, seq = int(r["heads"]), int(r["kv_heads"]), int(r["seq"])
            key = ("mha" if h == kv else "gqa", direction, h, seq)
            out.setdefault(seq, []).append((f"h{h}/kv{kv}", float(r["tflops"]) / table[key]))
    return out


def print_row(kind, seq, ratios):
    values = [r for _, r in ratios]
    print(f"{kind},{seq},{statistics.median(values):.4f},{min(values):.4f},{max(values):.4f},"
          f"{' '.join(s for s, _ in ratios)}")


def main():
    print("# derived: calib/scripts/table_state.py from run49/ and run51/ grid_*.csv and "
          "sustained_*.csv, run49/attention_state.csv and run50/attention_state_seq.csv; "
          "FlashAttention-2 (attention_flash2_*): run52/ and run53/attention_state_flash.csv "
          "over attention.csv's flash rows (one H200, 2026-12-02)")
    print("# ratio: a kind's rate back to back in its own sustained power state / its rate by "
          "the tables' procedure (behind heater GEMMs), same process and shapes; median over "
          "the shapes (min, max: their spread); seq 0: every shape, else attention at that "
          "sequence length")
    print("kind,seq,ratio,min,max,shapes")
    for kind, g, s in GEMM_KINDS:
        print_row(kind, 0, gemm_ratios(g, s))
    for direction in ("fwd", "bwd"):
        for seq, ratios in sorted(attention_ratios(direction).items()):
            print_row("attention_" + direction, seq, ratios)
    for direction in ("fwd", "bwd"):
        for seq, ratios in sorted(flash_ratios(direction).items()):
            print_row("attention_flash2_" + direction, seq, ratios)

if __name__ == "__main__":
    main()
