#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""bench_python_loader.py - end-to-end padded int64 batches from Python.

  (a) seqstore.Loader: shuffled batches of 64, u16 ids widened to int64 and
      padded by the C collator on a background thread (torch tensors out);
      the batch is copied once out of the loader's slot (copy=True, tensors
      the caller owns) or not at all (copy=False: tensors over the slot,
      valid until the next batch; 0 copies after the collator's write).
  (b) torch DataLoader over a map-style Dataset reading the same corpus from a
      Megatron-style memmap (np.frombuffer per example, torch.from_numpy of an
      int64 copy) with a pad_sequence collate_fn, at 0 and 2 workers.

Same corpus as bench_python_get.py (cached in DIR with --dir: N examples of u16 tokens,
lengths 1..MAXLEN). Each run reads BATCHES batches; rounds alternate the
methods; medians of batches per second. The load average is printed.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/bench_python_loader.py
           [--dir DIR] [--batches 2000] [--rounds 5]
"""
import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np

from bench_scratch import scratch_dir
import torch

import seqstore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_python_get import IndexedDataset, build, loadavg  # noqa: E402


class MemmapDataset(torch.utils.data.Dataset):
    def __init__(self, prefix, n):
        self.prefix, self.n, self.ds = prefix, n, None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.ds is None:  # opened in each worker
            self.ds = IndexedDataset(self.prefix, self.n)
        return torch.from_numpy(self.ds[i].astype(np.int64))

    def __getstate__(self):
        return {"prefix": self.prefix, "n": self.n, "ds": None}


def pad_collate(rows):
    return torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=0)


def run_seqstore(store, batches, epoch, copy=True):
    loader = seqstore.Loader(store, batch_size=64, shuffle=True, seed=epoch, drop_last=True,
                             fields={"tokens": {"dtype": "i64", "pad": 0}}, torch=True,
                             copy=copy)
    t0 = time.perf_counter()
    for k, b in enumerate(loader):
        x = b["tokens"]
        if k + 1 == batches:
            break
    dt = time.perf_counter() - t0
    loader.close()
    return batches / dt, x


def run_torch(ds, workers, batches, epoch):
    dl = torch.utils.data.DataLoader(ds, batch_size=64, shuffle=True, drop_last=True,
                                     num_workers=workers, collate_fn=pad_collate,
                                     generator=torch.Generator().manual_seed(epoch),
                                     persistent_workers=False)
    it = iter(dl)
    x = next(it)  # worker start-up is not counted
    t0 = time.perf_counter()
    for _ in range(batches):
        x = next(it)
    dt = time.perf_counter() - t0
    del it
    return batches / dt, x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=None, help="cache the inputs here (default: a private temporary directory, removed at exit)")
    ap.add_argument("-n", type=int, default=1000000)
    ap.add_argument("--maxlen", type=int, default=128)
    ap.add_argument("--batches", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with scratch_dir(args.dir, "ss-bench-py.") as args.dir:
        return bench(args)


def bench(args):
    torch.set_num_threads(1)
    ss, prefix, _ = build(args.dir, args.n, args.maxlen)
    store = seqstore.open(ss)
    ds = MemmapDataset(prefix, args.n)
    warnings.filterwarnings("ignore", "The given NumPy array is not writable")
    methods = [("seqstore.Loader", lambda r: run_seqstore(store, args.batches, r)),
               ("seqstore.Loader copy=False",
                lambda r: run_seqstore(store, args.batches, r, copy=False)),
               ("DataLoader 0 workers", lambda r: run_torch(ds, 0, args.batches, r)),
               ("DataLoader 2 workers", lambda r: run_torch(ds, 2, args.batches, r))]
    for _, fn in methods:
        fn(99)  # warm the page cache
    print("load average before: %s" % loadavg())
    runs = {name: [] for name, _ in methods}
    for r in range(args.rounds):
        for name, fn in methods:
            bps, x = fn(r)
            assert x.dtype == torch.int64 and x.shape[0] == 64
            runs[name].append(bps)
    print("load average after:  %s" % loadavg())
    med = {k: statistics.median(v) for k, v in runs.items()}
    best_torch = max(v for k, v in med.items() if k.startswith("DataLoader"))
    print("%d batches of 64 (int64, padded) per run from %d shuffled examples, median of %d"
          % (args.batches, args.n, args.rounds))
    for name, v in runs.items():
        print("  %-27s %8.0f batches/s  (x%.2f of the best DataLoader)  runs: %s"
              % (name, med[name], med[name] / best_torch, " ".join("%.0f" % x for x in v)))
    store.close()


if __name__ == "__main__":
    main()
