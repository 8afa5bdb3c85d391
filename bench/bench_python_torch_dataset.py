#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""bench_python_torch_dataset.py - per-example cost of seqstore.torch.Dataset[i]
against a map-style torch Dataset over NumPy memmaps doing the same work.

Both return {"tokens": int64 tensor (u16 ids widened), "label": 0-d int64
tensor, "index": 0-d int64 tensor}, tensors owning their memory. The memmap
Dataset is the Megatron-LM / fairseq layout: the tokens of every example in
one raw .bin, offsets in an index, a labels array, all np.memmap'ed; its
__getitem__ is np.frombuffer(bin, u16, count, offset).astype(int64) ->
torch.from_numpy, torch.tensor(label), torch.tensor(i). Rounds alternate
the two on the same shuffled indices; the figure is the median over rounds
of us per example, and the ratio memmap / seqstore (> 1: seqstore faster).

Then the time to the first batch (median over rounds, ms) of seqstore.Loader,
of seqstore.torch.BatchSampler alone and of a DataLoader over it (IndexDataset
+ Collate, 0 workers): opening, planning the epoch, the first collation.

Usage: .venv/bin/python bench/bench_python_torch_dataset.py [-n 200000]
           [--queries 100000] [--rounds 7] [--dir DIR]
"""
import argparse
import os
import statistics
import time

import numpy as np
import torch

import seqstore
import seqstore.torch as sst
from bench_scratch import scratch_dir


class MemmapDataset(torch.utils.data.Dataset):
    def __init__(self, prefix):
        self.offsets = np.load(prefix + ".off.npy", mmap_mode="r")
        self.labels = np.load(prefix + ".lab.npy", mmap_mode="r")
        self.bin = np.memmap(prefix + ".bin", dtype=np.uint8, mode="r")

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        toks = np.frombuffer(self.bin, np.uint16, b - a, 2 * a).astype(np.int64)
        return {"tokens": torch.from_numpy(toks), "label": torch.tensor(int(self.labels[i])),
                "index": torch.tensor(i)}


def build(d, n, maxlen):
    ss, prefix = os.path.join(d, "t.ss"), os.path.join(d, "t")
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, maxlen + 1, n)
    off = np.concatenate([[0], np.cumsum(lengths)])
    toks = rng.integers(0, 2**16, int(off[-1]), dtype=np.uint16)
    labels = rng.integers(0, 1000, n).astype(np.int64)
    if not os.path.exists(ss):
        with seqstore.create(ss + ".tmp", [("tokens", "u16"), ("label", "i64", (), False)],
                             force=True) as w:
            for i in range(n):
                w.append({"tokens": toks[off[i]:off[i + 1]], "label": labels[i]})
        os.rename(ss + ".tmp", ss)
    if not os.path.exists(prefix + ".bin"):
        toks.tofile(prefix + ".bin")
        np.save(prefix + ".off.npy", off)
        np.save(prefix + ".lab.npy", labels)
    return ss, prefix


def per_example_us(ds, queries):
    t0 = time.perf_counter()
    for i in queries:
        ds[i]
    return (time.perf_counter() - t0) / len(queries) * 1e6


def first_batch_ms(path, rounds):
    f = {"tokens": {"dtype": "i64"}}

    def loader():
        with seqstore.open(path) as s:
            ld = seqstore.Loader(s, batch_size=64, shuffle=True, seed=1, fields=f, torch=True)
            next(iter(ld))
            ld.close()

    def sampler():
        next(iter(sst.BatchSampler(path, batch_size=64, shuffle=True, seed=1)))

    def dataloader():
        dl = torch.utils.data.DataLoader(
            sst.IndexDataset(path), collate_fn=sst.Collate(path, fields=f),
            batch_sampler=sst.BatchSampler(path, batch_size=64, shuffle=True, seed=1))
        next(iter(dl))

    runs = {"seqstore.Loader": loader, "BatchSampler alone": sampler,
            "DataLoader(BatchSampler, Collate), 0 workers": dataloader}
    res = {k: [] for k in runs}
    for _ in range(rounds):
        for k, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            res[k].append((time.perf_counter() - t0) * 1e3)
    for k, v in res.items():
        print("first batch, %-45s %.1f ms" % (k, statistics.median(v)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=200000)
    ap.add_argument("--maxlen", type=int, default=64)
    ap.add_argument("--queries", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--dir")
    a = ap.parse_args()
    torch.set_num_threads(1)
    with scratch_dir(a.dir, "bench_torch_ds.") as d:
        ss, prefix = build(d, a.n, a.maxlen)
        ours, mm = sst.Dataset(ss, fields=["tokens", "label"]), MemmapDataset(prefix)
        q = [int(i) for i in np.random.default_rng(3).integers(0, a.n, a.queries)]
        for i in q[:50]:  # the same values, and warm
            x, y = ours[i], mm[i]
            assert x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)
        res = {"seqstore": [], "memmap": []}
        for _ in range(a.rounds):
            res["seqstore"].append(per_example_us(ours, q))
            res["memmap"].append(per_example_us(mm, q))
        s, m = statistics.median(res["seqstore"]), statistics.median(res["memmap"])
        print("load %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
        print("seqstore.torch.Dataset[i]: %.2f us  memmap Dataset[i]: %.2f us  ratio %.2fx"
              % (s, m, m / s))
        first_batch_ms(ss, a.rounds)


if __name__ == "__main__":
    main()
