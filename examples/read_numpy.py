#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Read a seqstore store from Python, zero-copy, with the seqstore module.

    PYTHONPATH=build/python /usr/bin/python3 examples/read_numpy.py fortunes.ss [FIELD]

Each example comes back as a read-only NumPy array that views the memory map:
no copy; it keeps the map alive even after the store is closed.
"""
import sys

import numpy as np

import seqstore


def main():
    path = sys.argv[1]
    name = sys.argv[2] if len(sys.argv) > 2 else "tokens"
    with seqstore.open(path) as store:
        field = store[name]
        total = int(field.lengths().sum())
        first = field[0]
        shown = (bytes(first.ravel()).decode("utf-8", "replace") if first.dtype == np.uint8
                 else first.ravel()[:10])
        print("%d examples, %d rows of '%s'; example 0: %s" % (len(store), total, name, shown))


if __name__ == "__main__":
    main()
