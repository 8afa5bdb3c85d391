#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""npy_indexed_baseline.py - the baseline (c) of bench_read: how Python users
read token corpora today with Megatron-LM's and fairseq's MMapIndexedDataset.

The tokens are one raw PREFIX.bin; PREFIX.idx holds int32 sizes then int64
byte pointers (Megatron's layout without its header). Both are memory-mapped
with numpy, and one example is read exactly as MMapIndexedDataset.get() does:
np.frombuffer(bin_buffer, dtype, count=size, offset=ptr). The loop touches
the first and last token, like bench_read's C loops, over the same query
indices (PREFIX.q, u64), and prints ns per example and a checksum.

Usage: npy_indexed_baseline.py PREFIX N QUERIES   (run by bench_read)
Needs numpy (Debian: python3-numpy; run with /usr/bin/python3).
"""
import sys
import time

import numpy as np


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

    def __len__(self):
        return len(self._sizes)

    def __getitem__(self, idx):
        ptr, size = self._pointers[idx], self._sizes[idx]
        return np.frombuffer(self._bin_buffer, dtype=self._dtype, count=size, offset=ptr)


def run(ds, queries):
    total = 0
    for i in queries:
        a = ds[i]
        total += int(a[0]) + int(a[-1])
    return total


def main():
    prefix, n, nq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ds = IndexedDataset(prefix, n)
    queries = np.fromfile(prefix + ".q", dtype=np.uint64, count=nq).astype(np.int64).tolist()
    warm = queries[: min(len(queries), 50000)]
    run(ds, warm)
    best = None
    for _ in range(2):
        t0 = time.perf_counter()
        checksum = run(ds, queries)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    print("numpy %s, %d queries" % (np.__version__, len(queries)))
    print("ns_per_op %.1f checksum %d" % (best * 1e9 / len(queries), checksum))


if __name__ == "__main__":
    main()
