#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""bench_python_window_threads.py - seqstore.WindowReader's time per window
with threads=1, threads=2, threads=1 with the next batch collated ahead
(prefetch=True) and the default (threads=None, prefetch=None), on an idle or
a loaded machine, with or without work of the caller between batches.

The data and batches are bench_python_window.py's (96 recordings of 12,000
samples x 21 i16 channels; batches of B lanes of W=1000 samples to f32 with
gain and offset). --load N starts N busy-loop processes (a `stress -c N`)
for the measurement, so that the reader's threads compete for the cores.
--work K has the caller do a model-like step per batch: K products of the
batch [B*W, C] with a [C, 64] f32 matrix (NumPy on one BLAS thread), the
work prefetch overlaps with. Rounds alternate the settings; the figure is
the median over rounds of the wall time per window (µs). The load average is
printed before and after.

Usage: .venv/bin/python bench/bench_python_window_threads.py [--load 2]
           [--lanes 64] [--batches 60] [--rounds 7] [--work 0]
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the caller's step on one core
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import multiprocessing
import statistics
import time

import numpy as np

import bench_python_window as bw
from bench_scratch import scratch_dir

import seqstore


def busy():
    while True:
        pass


def per_window(store, gain, offset, lanes, setting, n, work):
    threads, prefetch = setting
    kw = {} if prefetch is None else {"prefetch": prefetch}  # None: the reader's default
    r = seqstore.WindowReader(store, "eeg", window=bw.W, lanes=lanes, out_dtype="f32",
                              gain=gain, offset=offset, threads=threads, **kw)
    weights = np.full((bw.C, 64), 0.01, np.float32)
    wins, t0 = 0, time.perf_counter()
    while wins < n * lanes:
        try:
            b = next(r)
        except StopIteration:
            continue
        x = b.data.reshape(-1, bw.C)
        for _ in range(work):  # the caller's step
            x @ weights
        wins += int(b.mask.sum())
        r.register(b)
    dt = time.perf_counter() - t0
    r.close()
    return dt / wins * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=None)
    ap.add_argument("--load", type=int, default=0, help="busy-loop processes during the runs")
    ap.add_argument("--lanes", type=int, default=64)
    ap.add_argument("--batches", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--work", type=int, default=0,
                    help="products of the batch with a [C, 64] matrix per batch (a model step)")
    args = ap.parse_args()
    with scratch_dir(args.dir, "ss-bench-win.") as d:
        ss, _ = bw.build(d)
        store = seqstore.open(ss)
        gain, offset = np.full(bw.C, 0.5), np.full(bw.C, -3.0)
        settings = {"threads=1": (1, False), "threads=2": (2, False),
                    "prefetch": (1, True), "default": (None, None)}
        for t in settings.values():
            per_window(store, gain, offset, args.lanes, t, 5, args.work)  # warm
        print("load before: %s; %d busy-loop processes; lanes %d, %d batches x %d rounds; "
              "caller's work %d products per batch"
              % (bw.loadavg(), args.load, args.lanes, args.batches, args.rounds, args.work))
        hogs = [multiprocessing.Process(target=busy, daemon=True) for _ in range(args.load)]
        for p in hogs:
            p.start()
        try:
            res = {k: [] for k in settings}
            for _ in range(args.rounds):
                for k, t in settings.items():
                    res[k].append(per_window(store, gain, offset, args.lanes, t, args.batches,
                                             args.work))
        finally:
            for p in hogs:
                p.terminate()
        for k, v in res.items():
            print("%-10s %8.2f µs per window (median of %d; min %.2f, max %.2f)"
                  % (k, statistics.median(v), len(v), min(v), max(v)))
        print("load after: %s" % bw.loadavg())


if __name__ == "__main__":
    main()
