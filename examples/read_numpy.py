#!/usr/bin/env python3
"""Read a seqstore store from Python through the C ABI (ctypes), zero-copy.

    python3 examples/read_numpy.py build/libseqstore.so fortunes.ss [FIELD]

Each example comes back as a NumPy array that *views* the memory map: no copy,
valid while the store is open (the same rule as ss_view in C).
"""
import ctypes as C
import sys

import numpy as np

DTYPES = {1: np.uint8, 2: np.int8, 3: np.uint16, 4: np.int16, 5: np.uint32, 6: np.int32,
          7: np.uint64, 8: np.int64, 9: np.float16, 10: np.float32, 11: np.float64}


class View(C.Structure):  # ss_view
    _fields_ = [("data", C.c_void_p), ("length", C.c_uint64), ("row_bytes", C.c_uint64),
                ("dtype", C.c_int)]


class Store:
    def __init__(self, lib_path, path):
        self.lib = lib = C.CDLL(lib_path)
        lib.ss_open.argtypes = [C.POINTER(C.c_void_p), C.c_char_p, C.c_uint]
        lib.ss_count.argtypes = [C.c_void_p]
        lib.ss_count.restype = C.c_uint64
        lib.ss_field_index.argtypes = [C.c_void_p, C.c_char_p]
        lib.ss_get.argtypes = [C.c_void_p, C.c_uint32, C.c_uint64, C.POINTER(View)]
        lib.ss_close.argtypes = [C.c_void_p]
        lib.ss_error_message.restype = C.c_char_p
        self.handle = C.c_void_p()
        if lib.ss_open(C.byref(self.handle), path.encode(), 0) != 0:
            raise OSError(lib.ss_error_message().decode())

    def __len__(self):
        return self.lib.ss_count(self.handle)

    def field(self, name):
        f = self.lib.ss_field_index(self.handle, name.encode())
        if f < 0:
            raise KeyError(self.lib.ss_error_message().decode())
        return f

    def get(self, field, index):
        v = View()
        if self.lib.ss_get(self.handle, field, index, C.byref(v)) != 0:
            raise IndexError(self.lib.ss_error_message().decode())
        dt = np.dtype(DTYPES[v.dtype])
        n = v.length * v.row_bytes // dt.itemsize
        if n == 0:
            return np.empty(0, dt)
        buf = (C.c_char * (n * dt.itemsize)).from_address(v.data)
        return np.frombuffer(buf, dtype=dt, count=n).reshape(v.length, -1)

    def close(self):
        self.lib.ss_close(self.handle)


def main():
    lib_path, path = sys.argv[1], sys.argv[2]
    name = sys.argv[3] if len(sys.argv) > 3 else "tokens"
    s = Store(lib_path, path)
    f = s.field(name)
    total = 0
    for i in range(len(s)):
        total += s.get(f, i).shape[0]
    first = s.get(f, 0)
    print("%d examples, %d rows of '%s'; example 0: %s" % (len(s), total, name,
          bytes(first.ravel()).decode("utf-8", "replace") if first.dtype == np.uint8 else first.ravel()[:10]))
    s.close()


if __name__ == "__main__":
    main()
