#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""bench_python_get.py - per-example access from Python: `field[i]` of the
seqstore module against the two ways Python users read token corpora today.

  (a) seqstore:  store["tokens"][i]  -> read-only NumPy view of the map
  (b) memmap:    Megatron-LM / fairseq MMapIndexedDataset.get(): the tokens in
                 one raw .bin, sizes and byte pointers in an index, both
                 np.memmap'ed; np.frombuffer(bin_buffer, dtype, count, offset)
  (c) h5py:      Fuel's HDF5 layout for ragged data: one variable-length
                 dataset, dset[i]

The same N examples (u16 tokens, lengths uniform in [1, MAXLEN]) are written
to the three formats once (cached in DIR with --dir, see bench_scratch.py); then each method reads the same
shuffled query indices. Rounds alternate the methods (a, b, c, a, b, c, ...)
so drift in machine load hits all of them; the figure is the median over
rounds of ns per example. The load average is printed before and after.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/bench_python_get.py
           [--dir DIR] [-n 1000000] [--queries 200000] [--rounds 5]
"""
import argparse
import os
import statistics
import time

import numpy as np

from bench_scratch import scratch_dir

import seqstore


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def lengths_of(n, maxlen, seed=1):
    return np.random.default_rng(seed).integers(1, maxlen + 1, n)


def tokens_of(lengths, seed=2):
    return np.random.default_rng(seed).integers(0, 2**16, int(lengths.sum()), dtype=np.uint16)


def build(d, n, maxlen):
    """Write the corpus in the three formats (skipped when present)."""
    os.makedirs(d, exist_ok=True)
    ss, prefix, h5 = os.path.join(d, "c.ss"), os.path.join(d, "c"), os.path.join(d, "c.h5")
    lengths = lengths_of(n, maxlen)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    toks = None
    if not os.path.exists(ss):
        toks = tokens_of(lengths)
        t0 = time.perf_counter()
        with seqstore.create(ss + ".tmp", [("tokens", "u16")], force=True) as w:
            for i in range(n):
                w.append({"tokens": toks[offsets[i]:offsets[i + 1]]})
        os.rename(ss + ".tmp", ss)
        print("wrote %s: %d examples in %.1f s through Writer.append" % (ss, n, time.perf_counter() - t0))
    if not os.path.exists(prefix + ".idx"):
        toks = tokens_of(lengths) if toks is None else toks
        toks.tofile(prefix + ".bin")
        with open(prefix + ".idx", "wb") as f:
            f.write(lengths.astype(np.int32).tobytes())
            f.write((offsets[:-1] * 2).astype(np.int64).tobytes())
    try:
        import h5py
    except ImportError:  # e.g. in .venv: the h5py row is left out
        return ss, prefix, None
    if not os.path.exists(h5):
        toks = tokens_of(lengths) if toks is None else toks
        with h5py.File(h5 + ".tmp", "w") as f:
            ds = f.create_dataset("tokens", (n,), dtype=h5py.vlen_dtype(np.uint16))
            step = 100000
            for s in range(0, n, step):
                e = min(n, s + step)
                rows = np.empty(e - s, object)
                rows[:] = [toks[offsets[i]:offsets[i + 1]] for i in range(s, e)]
                ds[s:e] = rows
        os.rename(h5 + ".tmp", h5)
    return ss, prefix, h5


class IndexedDataset:
    """The reading half of Megatron-LM / fairseq MMapIndexedDataset."""

    def __init__(self, prefix, n, dtype=np.uint16):
        self._dtype = dtype
        self._index_mmap = np.memmap(prefix + ".idx", mode="r", order="C")
        index_buffer = memoryview(self._index_mmap)
        self._sizes = np.frombuffer(index_buffer, dtype=np.int32, count=n, offset=0)
        self._pointers = np.frombuffer(index_buffer, dtype=np.int64, count=n,
                                       offset=self._sizes.nbytes)
        self._bin_mmap = np.memmap(prefix + ".bin", mode="r", order="C")
        self._bin_buffer = memoryview(self._bin_mmap)

    def __getitem__(self, idx):
        ptr, size = self._pointers[idx], self._sizes[idx]
        return np.frombuffer(self._bin_buffer, dtype=self._dtype, count=size, offset=ptr)


def timed(get, queries):
    """ns per example of `a = get(i)` over queries (the loop is the same for all)."""
    t0 = time.perf_counter_ns()
    for i in queries:
        a = get(i)
    dt = time.perf_counter_ns() - t0
    del a
    return dt / len(queries)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=None, help="cache the inputs here (default: a private temporary directory, removed at exit)")
    ap.add_argument("-n", type=int, default=1000000)
    ap.add_argument("--maxlen", type=int, default=128)
    ap.add_argument("--queries", type=int, default=200000)
    ap.add_argument("--h5-queries", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with scratch_dir(args.dir, "ss-bench-py.") as args.dir:
        return bench(args)


def bench(args):
    ss, prefix, h5 = build(args.dir, args.n, args.maxlen)

    store = seqstore.open(ss)
    field = store["tokens"]
    mm = IndexedDataset(prefix, args.n)
    hf = None
    if h5 is not None:
        import h5py
        hf = h5py.File(h5, "r")
        hds = hf["tokens"]
    rng = np.random.default_rng(3)
    # Python ints, as a training loop's sampler hands them out.
    queries = rng.integers(0, args.n, args.queries).tolist()
    hq = queries[:args.h5_queries]
    # The same values through each path (a few spot checks).
    for i in queries[:100]:
        assert np.array_equal(field[i], mm[i]) and (hf is None or np.array_equal(field[i], hds[i]))
    methods = [("seqstore field[i]", field.__getitem__, queries),
               ("memmap + np.frombuffer", mm.__getitem__, queries)]
    if hf is not None:
        methods.append(("h5py vlen dset[i]", hds.__getitem__, hq))
    for _, get, q in methods:  # warm the page cache and the code paths
        timed(get, q[:20000])
    print("load average before: %s" % loadavg())
    runs = {name: [] for name, _, _ in methods}
    for _ in range(args.rounds):
        for name, get, q in methods:
            runs[name].append(timed(get, q))
    print("load average after:  %s" % loadavg())
    med = {name: statistics.median(v) for name, v in runs.items()}
    base = med["seqstore field[i]"]
    print("%d examples (u16, lengths 1..%d), %d random queries (h5py %d), median of %d rounds"
          % (args.n, args.maxlen, args.queries, args.h5_queries, args.rounds))
    for name, v in runs.items():
        print("  %-24s %8.0f ns/example  (x%.2f of seqstore)  runs: %s"
              % (name, med[name], med[name] / base, " ".join("%.0f" % x for x in v)))
    if hf is not None:
        hf.close()
    store.close()


if __name__ == "__main__":
    main()
