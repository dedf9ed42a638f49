#!/usr/bin/env python3
"""Reads the item-time series of calib/probes/rate_noise.py (run 71) and prints, per workload:
the spread of item times (quantiles of time / mean - 1), the autocorrelation by lag (the power
controller's period shows as its peak near 1 s), and the skew bound: the expected time of the
slowest of k ranks that start a window of T seconds of the same work together, over the mean,
if each rank's GPU ran its own copy of the measured series at an independent, uniformly random
phase and nothing coupled the ranks' power controllers (Monte Carlo over window starts, seeded).

That bound is what a blocking collective over k ranks would cost per synchronisation if the
ranks' rate noise were independent; docs/calibration.md (section 3, "Rate noise") says why it
is not a cost-model input. Needs numpy.

Usage: rate_noise_skew.py RUN_DIR [--skip-s 0.5] [--draws 3000]
"""
import argparse
import glob
import os

import numpy as np

KS = (2, 4, 8, 32, 128, 1024)
WINDOWS_S = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3)
LAGS_S = (0.01, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0)


def skew_bound(x, window_s, k, draws, rng):
    """E[max over k random windows of window_s] / mean window time - 1."""
    w = max(1, int(round(window_s / x.mean())))
    c = np.concatenate([[0.0], np.cumsum(x)])
    starts = rng.integers(0, len(x) - w, size=(draws, k))
    return float((c[starts + w] - c[starts]).max(axis=1).mean() / (w * x.mean()) - 1)


def autocorr(x, lag_s):
    lag = int(lag_s / x.mean())
    if lag <= 0 or lag >= len(x):
        return float("nan")
    d = x - x.mean()
    return float(np.dot(d[lag:], d[:-lag]) / np.dot(d, d))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--skip-s", type=float, default=0.5,
                    help="seconds of items dropped at the start (the switch from the previous workload)")
    ap.add_argument("--draws", type=int, default=3000)
    args = ap.parse_args()
    files = sorted(glob.glob(os.path.join(args.run_dir, "rate_noise_*.npy")))
    if not files:
        raise SystemExit(f"{args.run_dir}: no rate_noise_*.npy series")
    rng = np.random.default_rng(71)
    for path in files:
        x = np.load(path).astype(float)
        x = x[int(args.skip_s / x.mean()):]
        r = x / x.mean() - 1
        name = os.path.basename(path)[len("rate_noise_"):-len(".npy")]
        q = np.quantile(r, [0.01, 0.5, 0.99, 0.999])
        print(f"{name}: {len(x)} items of {x.mean() * 1e3:.3f} ms; time/mean-1 p1 {q[0]:+.4f} "
              f"p50 {q[1]:+.4f} p99 {q[2]:+.4f} p99.9 {q[3]:+.4f}, sd {r.std():.4f}")
        print("  autocorrelation " + " ".join(f"{s:g}s:{autocorr(x, s):+.2f}" for s in LAGS_S))
        print("  skew bound, E[slowest of k]/mean-1 for k = " + ",".join(map(str, KS)))
        for t in WINDOWS_S:
            vals = " ".join(f"{skew_bound(x, t, k, args.draws, rng):.3f}" for k in KS)
            print(f"    window {t * 1e3:6.1f} ms: {vals}")


if __name__ == "__main__":
    main()
