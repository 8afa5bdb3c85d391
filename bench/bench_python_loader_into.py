#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""bench_python_loader_into.py - seqstore.Loader(out=) against the plain Loader.

bench_python_loader.py's corpus and batches (shuffled batches of 64, u16 ids
widened to int64 and padded by the C collator, torch tensors out), three ways:
  - copy=True: collated ahead by a C thread into the loader's slot, then
    copied into a new tensor the caller owns;
  - copy=False: collated ahead into the slot, handed out as a view of it;
  - out={"tokens": t}: collated at each batch by the calling thread, straight
    into one reused tensor t of 64 * MAXLEN int64 (the memory a pinned GPU
    copy would read; torch here is CPU-only, so t is a plain CPU tensor);
  - out=[{"tokens": t0}, {"tokens": t1}, {"tokens": t2}]: a ring of three
    such tensors that a C thread collates ahead into (ss_loader_options.ring).
--batch-size sets the rows per batch (64; 1024 makes the collation about as
long as a 300 us step). Each batch is followed by a simulated training step of --step-us
microseconds (time.sleep: the CPU side of a GPU step mostly waits), the
time the loader can use to prepare ahead; --step-us 0 measures the loader
alone. Rounds alternate the methods; medians of batches per second; load
average.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/bench_python_loader_into.py
           [--dir DIR] [--batches 2000] [--rounds 5]
"""
import argparse
import os
import statistics
import sys
import time
import warnings

import torch

import seqstore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_python_get import build, loadavg  # noqa: E402
from bench_scratch import scratch_dir  # noqa: E402


def run(store, batches, epoch, copy=True, out=None, step=0.0, bs=64):
    loader = seqstore.Loader(store, batch_size=bs, shuffle=True, seed=epoch, drop_last=True,
                             fields={"tokens": {"dtype": "i64", "pad": 0}}, torch=True,
                             copy=copy, out=out)
    t0 = time.perf_counter()
    for k, b in enumerate(loader):
        x = b["tokens"]
        if step:
            time.sleep(step)
        if k + 1 == batches:
            break
    dt = time.perf_counter() - t0
    loader.close()
    return batches / dt, x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=None, help="cache the inputs here (default: a private temporary directory, removed at exit)")
    ap.add_argument("-n", type=int, default=1000000)
    ap.add_argument("--maxlen", type=int, default=128)
    ap.add_argument("--batches", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--step-us", type=float, default=0.0)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    with scratch_dir(args.dir, "ss-bench-py.") as args.dir:
        return bench(args)


def bench(args):
    torch.set_num_threads(1)
    ss, _, _ = build(args.dir, args.n, args.maxlen)
    store = seqstore.open(ss)
    warnings.filterwarnings("ignore", "The given NumPy array is not writable")
    bs = args.batch_size
    t = torch.empty(bs * args.maxlen, dtype=torch.int64)
    ring = [{"tokens": torch.empty(bs * args.maxlen, dtype=torch.int64)} for _ in range(3)]
    st = args.step_us * 1e-6
    methods = [("Loader copy=True", lambda r: run(store, args.batches, r, step=st, bs=bs)),
               ("Loader copy=False", lambda r: run(store, args.batches, r, copy=False, step=st,
                                                   bs=bs)),
               ("Loader out=reused tensor", lambda r: run(store, args.batches, r,
                                                          out={"tokens": t}, step=st, bs=bs)),
               ("Loader out=ring of 3 tensors", lambda r: run(store, args.batches, r,
                                                              out=ring, step=st, bs=bs))]
    for _, fn in methods:
        fn(99)  # warm the page cache
    print("load average before: %s" % loadavg())
    runs = {name: [] for name, _ in methods}
    for r in range(args.rounds):
        for name, fn in methods:
            bps, x = fn(r)
            assert x.dtype == torch.int64 and x.shape[0] == bs
            if name.endswith("reused tensor"):
                assert x.data_ptr() == t.data_ptr()
            if name.endswith("3 tensors"):
                assert x.data_ptr() in [o["tokens"].data_ptr() for o in ring]
            runs[name].append(bps)
    print("load average after:  %s" % loadavg())
    base = statistics.median(runs["Loader copy=True"])
    print("%d batches of %d (int64, padded) per run from %d shuffled examples, median of %d,"
          " step %.0f us" % (args.batches, bs, args.n, args.rounds, args.step_us))
    for name, v in runs.items():
        m = statistics.median(v)
        print("  %-26s %8.0f batches/s  (x%.2f of copy=True)  runs: %s"
              % (name, m, m / base, " ".join("%.0f" % x for x in v)))
    store.close()


if __name__ == "__main__":
    main()
