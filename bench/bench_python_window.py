#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""bench_python_window.py - EEG windows for truncated BPTT from Python:
seqstore.WindowReader against NumPy slicing + stacking + scaling of the same
windows.

The data is bench_window.c's: NSEQ recordings of LEN samples x C=21 channels
of i16 (EDF digital values), read as batches of B=64 windows of W=1000
samples, converted to f32 physical values with per-channel gain and offset.

  (a) seqstore: WindowReader(store, "eeg", window=W, lanes=B, out_dtype="f32",
      gain=, offset=); each batch is a new [B, W, C] f32 array (the reader's
      C threads cut, convert and collate; the Python side copies the batch
      out of the reader's slot once).
  (b) NumPy: the recordings in one raw i16 file, np.memmap'ed (how such
      data is read without a store), and per batch
      np.stack([mm[o + s : o + s + W] for each window]).astype(f32) * gain
      + offset, for the very windows (a) produced (sequence, start), so
      both do the same work; rows of a batch without a window are zeros.

Both are warmed first (page cache, code paths); the outputs of the first
batches are compared. Rounds alternate (a, b, a, b, ...) so drift in machine
load hits both; the figure is the median over rounds of the batches per
second (and output MB/s). The load average is printed before and after.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/bench_python_window.py
           [--dir DIR] [--batches 200] [--rounds 7] [--threads 1]
"""
import argparse
import os
import statistics
import time

import numpy as np

from bench_scratch import scratch_dir

import seqstore

C, W, B, NSEQ, LEN = 21, 1000, 64, 96, 12000


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def recording(i):
    """bench_window.c's signal: ((k * 31 + i * 7) % 4000) - 2000 over [LEN, C]."""
    k = np.arange(LEN * C, dtype=np.int64)
    return ((k * 31 + i * 7) % 4000 - 2000).astype(np.int16).reshape(LEN, C)


def build(d):
    os.makedirs(d, exist_ok=True)
    ss, raw = os.path.join(d, "eeg.ss"), os.path.join(d, "eeg.i16")
    if not os.path.exists(ss) or not os.path.exists(raw):
        with seqstore.create(ss + ".tmp", [("eeg", "i16", (C,))], force=True) as w, \
                open(raw + ".tmp", "wb") as f:
            for i in range(NSEQ):
                x = recording(i)
                w.append({"eeg": x})
                f.write(x.tobytes())
        os.rename(ss + ".tmp", ss)
        os.rename(raw + ".tmp", raw)
    return ss, raw


def reader(store, gain, offset, threads):
    return seqstore.WindowReader(store, "eeg", window=W, lanes=B, out_dtype="f32", gain=gain,
                                 offset=offset, threads=threads)


def next_batch(r):
    """The next batch with at least one window (epoch ends roll over)."""
    while True:
        try:
            b = next(r)
        except StopIteration:
            continue
        if b.mask.any():
            return b


def schedule(store, gain, offset, threads, n):
    """(sequence, start) of every row of the first n batches; -1 = no window."""
    r = reader(store, gain, offset, threads)
    out = []
    for _ in range(n):
        b = next_batch(r)
        out.append(list(zip(np.where(b.mask, b.example, -1).tolist(), b.start.tolist())))
        r.register(b)
    r.close()
    return out


def numpy_batch(mm, rows, gain32, offset32):
    wins = [mm[e * LEN + s:e * LEN + s + W] if e >= 0 else np.zeros((W, C), np.int16)
            for e, s in rows]
    x = np.stack(wins).astype(np.float32) * gain32 + offset32
    empty = [j for j, (e, _) in enumerate(rows) if e < 0]
    if empty:
        x[empty] = 0  # the reader's rows without a window are zeros, not the offset
    return x


def run_seqstore(r, n):
    t0 = time.perf_counter()
    for _ in range(n):
        b = next_batch(r)
        r.register(b)
    return n / (time.perf_counter() - t0)


def run_numpy(mm, sched, gain32, offset32):
    t0 = time.perf_counter()
    for rows in sched:
        x = numpy_batch(mm, rows, gain32, offset32)
    del x
    return len(sched) / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=None, help="cache the inputs here (default: a private temporary directory, removed at exit)")
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    with scratch_dir(args.dir, "ss-bench-py.") as args.dir:
        return bench(args)


def bench(args):
    ss, raw = build(args.dir)
    gain = np.linspace(0.05, 0.15, C)
    offset = np.linspace(-3.0, 3.0, C)
    gain32, offset32 = gain.astype(np.float32), offset.astype(np.float32)
    store = seqstore.open(ss)
    mm = np.memmap(raw, dtype=np.int16, mode="r").reshape(NSEQ * LEN, C)
    sched = schedule(store, gain, offset, args.threads, args.batches)
    # Same windows, same values, every batch (f32 rounding of x * gain + offset may differ
    # by an ulp between C's double arithmetic and NumPy's f32).
    r = reader(store, gain, offset, args.threads)
    for rows in sched:
        b = next_batch(r)
        r.register(b)
        np.testing.assert_allclose(b.data, numpy_batch(mm, rows, gain32, offset32),
                                   rtol=1e-5, atol=1e-4)
    r.close()
    r = reader(store, gain, offset, args.threads)
    run_seqstore(r, 20)  # warm
    run_numpy(mm, sched[:20], gain32, offset32)
    print("load average before: %s" % loadavg())
    runs = {"seqstore WindowReader": [], "NumPy slice+stack+scale": []}
    for _ in range(args.rounds):
        runs["seqstore WindowReader"].append(run_seqstore(r, args.batches))
        runs["NumPy slice+stack+scale"].append(run_numpy(mm, sched, gain32, offset32))
    print("load average after:  %s" % loadavg())
    r.close()
    store.close()
    mb = B * W * C * 4 / 1e6
    med = {k: statistics.median(v) for k, v in runs.items()}
    base = med["NumPy slice+stack+scale"]
    print("%d batches of %d x %d x %d i16 -> f32 (%.1f MB each), threads=%d, median of %d rounds"
          % (args.batches, B, W, C, mb, args.threads, args.rounds))
    for k, v in runs.items():
        print("  %-24s %7.0f batches/s  %6.0f MB/s  (x%.2f of NumPy)  runs: %s"
              % (k, med[k], med[k] * mb, med[k] / base, " ".join("%.0f" % x for x in v)))


if __name__ == "__main__":
    main()
