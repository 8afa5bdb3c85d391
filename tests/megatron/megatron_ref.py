#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""An independent writer and reader of Megatron-LM indexed datasets
(PREFIX.bin + PREFIX.idx, "MMIDIDX" version 1), following the published
layout of megatron/core/datasets/indexed_dataset.py: the builder appends each
sequence's elements to .bin, its length to the sizes, and at each document's
end the number of sequences so far to doc_idx (which starts at [0]); the index
writer stores magic, version, dtype code, counts, int32 sizes, int64 byte
pointers (running sums of size * itemsize) and int64 doc_idx. The reader maps
the files with numpy and slices them the way MMapIndexedDataset does.

  megatron_ref.py write PREFIX DTYPE SEED   random documents of random sequences
                                             (empty ones too) written as the builder does
  megatron_ref.py dump PREFIX               the dataset as read back: "dtype NAME",
                                             "doc_idx ...", then one line per sequence: its
                                             elements' little-endian bytes in hex
"""
import struct
import sys

import numpy as np

CODES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64,
         6: np.float64, 7: np.float32, 8: np.uint16}
HEADER = b"MMIDIDX\x00\x00"


def write(prefix, dtype_name, seed):
    dtype = np.dtype(dtype_name)
    code = [c for c, t in CODES.items() if np.dtype(t) == dtype][0]
    rng = np.random.default_rng(seed)
    sizes, doc_idx = [], [0]
    with open(prefix + ".bin", "wb") as bin_file:
        for _ in range(int(rng.integers(3, 40))):          # documents
            for _ in range(int(rng.integers(0, 5))):       # sentences (0: an empty document)
                n = int(rng.integers(0, 30))
                if dtype.kind == "f":
                    seq = rng.normal(size=n).astype(dtype)
                else:
                    info = np.iinfo(dtype)
                    seq = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dtype)
                bin_file.write(seq.tobytes(order="C"))   # builder.add_item
                sizes.append(n)
            doc_idx.append(len(sizes))                     # builder.end_document
    pointers, ptr = [], 0
    for n in sizes:
        pointers.append(ptr)
        ptr += n * dtype.itemsize
    with open(prefix + ".idx", "wb") as idx:
        idx.write(HEADER)
        idx.write(struct.pack("<Q", 1))
        idx.write(struct.pack("<B", code))
        idx.write(struct.pack("<Q", len(sizes)))
        idx.write(struct.pack("<Q", len(doc_idx)))
        idx.write(np.array(sizes, dtype=np.int32).tobytes(order="C"))
        idx.write(np.array(pointers, dtype=np.int64).tobytes(order="C"))
        idx.write(np.array(doc_idx, dtype=np.int64).tobytes(order="C"))


def dump(prefix):
    with open(prefix + ".idx", "rb") as f:
        assert f.read(9) == HEADER, "bad header"
        assert struct.unpack("<Q", f.read(8))[0] == 1, "bad version"
        dtype = np.dtype(CODES[struct.unpack("<B", f.read(1))[0]])
        nseq = struct.unpack("<Q", f.read(8))[0]
        ndoc = struct.unpack("<Q", f.read(8))[0]
        offset = f.tell()
    buf = memoryview(np.memmap(prefix + ".idx", mode="r", order="C"))
    sizes = np.frombuffer(buf, dtype=np.int32, count=nseq, offset=offset)
    pointers = np.frombuffer(buf, dtype=np.int64, count=nseq, offset=offset + sizes.nbytes)
    doc_idx = np.frombuffer(buf, dtype=np.int64, count=ndoc,
                            offset=offset + sizes.nbytes + pointers.nbytes)
    data = np.memmap(prefix + ".bin", mode="r", order="C")
    out = ["dtype " + dtype.name, "doc_idx " + " ".join(str(int(d)) for d in doc_idx)]
    for i in range(nseq):
        seq = np.frombuffer(data, dtype=dtype, count=int(sizes[i]), offset=int(pointers[i]))
        out.append(seq.astype(dtype.newbyteorder("<")).tobytes().hex())
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        dump(sys.argv[2])
