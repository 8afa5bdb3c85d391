# SPDX-License-Identifier: BSD-2-Clause
"""seqstore: sequential ML data in one file, read zero-copy from NumPy.

    import seqstore
    with seqstore.open("corpus.ss") as store:
        tokens = store["tokens"]        # a FieldAccessor
        a = tokens[0]                   # read-only NumPy view over the map
        ex = store[0]                   # {"tokens": array, ...}

Arrays returned by a Store are read-only views of the file's memory map; each
keeps the map alive, so they stay valid after store.close() (the store itself
then raises seqstore.ClosedError, and so do the Loader, Collator, WindowReader
and flat() views reading it; their state_dict() still answers). bf16 fields come back as their raw uint16
bits (NumPy has no bfloat16): torch users can `.view(torch.bfloat16)`.
torch 1.13 cannot hold uint16/uint32/uint64 tensors: widen with
seqstore.widen(a) (a copy, to int64) before torch.from_numpy.

Integrity: reads trust the mapped data unless the store is opened with
seqstore.open(path, verify=True), which checks each data chunk's checksum
before the first view into it (a damaged chunk raises CorruptError naming the
field and the chunk, for store[i], iteration, Loader and the torch datasets,
which take verify=True too); store.verify() checks the whole file as
`seqstore verify` does.

Views are over a private copy-on-write map of the file (store.copy_on_write):
reading shares the page cache, and a write that bypasses the read-only flag
(torch.from_numpy(view).add_(1) only warns in torch 1.13; ctypes) cannot
crash and never reaches the file. Such a write changes the written bytes as
every view of this Store shows them, before and after; it never changes the
file, other processes, other Store objects, or what Loader, Collator,
WindowReader and flat() read (they read the file's shared map). Copy first
(np.array(view), seqstore.widen) to get an array of your own to write to.
"""
from __future__ import annotations

import os as _os
from typing import Any as _Any, Optional as _Optional, Tuple as _Tuple

import numpy as _np
import numpy.typing as _npt

from . import _seqstore
from ._seqstore import (  # noqa: F401  (re-exported)
    BufferTooSmallError,
    BusyError,
    CallbackError,
    ClosedError,
    CorruptError,
    DiskFullError,
    Error,
    ExistsError,
    FieldAccessor,
    IncompleteError,
    InputError,
    InvalidArgumentError,
    IterationOverError,
    NotFoundError,
    NotStoreError,
    OutOfMemoryError,
    RangeError,
    SchemaError,
    StateError,
    Store,
    StoreIOError,
    StoreNotFoundError,
    TooBigError,
    VersionError,
    __version__,
    open,
)
from ._loader import Blend, Collator, Loader  # noqa: F401
from ._window import WindowBatch, WindowReader  # noqa: F401
from ._writer import Field, Writer, create  # noqa: F401
from . import transforms  # noqa: F401  (seqstore.transforms.RandomCrop, ...)
from . import lm  # noqa: F401  (seqstore.lm.LMSamples: LM pretraining rows)

__all__ = [
    "open", "create", "widen", "Store", "Field", "FieldAccessor", "Flat", "Writer", "Loader",
    "Blend", "Collator", "WindowReader", "WindowBatch", "transforms", "lm",
    # exceptions: Error, one class per code of the C error table, and two more
    "Error", "InvalidArgumentError", "NotFoundError", "NotStoreError", "VersionError",
    "CorruptError", "IncompleteError", "StoreIOError", "OutOfMemoryError", "ExistsError",
    "SchemaError", "TooBigError", "RangeError", "StateError", "InputError", "CallbackError",
    "BusyError", "DiskFullError", "IterationOverError", "BufferTooSmallError",
    "StoreNotFoundError", "ClosedError",
]


class Flat:
    """store.flat(name): every example of a field concatenated in order (the
    flat stream, e.g. a token stream cut into fixed-length LM blocks).

    len(flat) rows; flat[p:q] -> a new array [q - p, *shape] (reads across
    example and chunk boundaries); flat[i] -> one row; flat.locate(pos) ->
    (example, offset within it)."""

    def __init__(self, store: Store, name: str) -> None:
        self._store, self.name = store, name
        self._n = store._flat_size(name)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, key: _Any) -> _npt.NDArray[_Any]:
        if isinstance(key, slice):
            p, q, step = key.indices(self._n)
            if step != 1:
                raise ValueError("flat slices have step 1")
            return self._store._flat_read(self.name, p, max(p, q))
        if isinstance(key, bool) or not isinstance(key, (int, _np.integer)):
            raise TypeError("flat[...] takes an int or a slice, not %s" % type(key).__name__)
        i = int(key) + (self._n if key < 0 else 0)
        if not 0 <= i < self._n:
            raise IndexError("flat position %d out of range (%d rows)" % (key, self._n))
        return self._store._flat_read(self.name, i, i + 1)[0]

    def locate(self, pos: int) -> _Tuple[int, int]:
        """Position `pos` of the stream -> (example, offset within that example);
        a negative position counts from the end, as in flat[-1]."""
        if isinstance(pos, bool) or not isinstance(pos, (int, _np.integer)):
            raise TypeError("locate takes an int position, not %s" % type(pos).__name__)
        p = int(pos) + (self._n if pos < 0 else 0)
        if p < 0:
            raise IndexError("flat position %d out of range (%d rows)" % (pos, self._n))
        return self._store._flat_locate(self.name, p)  # RangeError past the end


def _reopen(path: str, flags: int, remote: _Optional[dict[str, _Any]] = None) -> Store:
    """Unpickle a Store: open `path` again with the same flags and
    object-storage options (a pickle of an older version has none)."""
    c = _seqstore
    return open(path, incomplete=bool(flags & c.OPEN_INCOMPLETE),
                random=bool(flags & c.OPEN_RANDOM), nolock=bool(flags & c.OPEN_NOLOCK),
                verify=bool(flags & c.OPEN_VERIFY), **(remote or {}))


def widen(a: _npt.ArrayLike) -> _npt.NDArray[_Any]:
    """A copy of integer array `a` as int64 (float arrays are returned unchanged).

    torch 1.13 has no uint16/uint32/uint64 tensors; torch.from_numpy(widen(a))
    works for every integer field (uint64 values above 2**63-1 raise
    OverflowError rather than wrap)."""
    a = _np.asarray(a)
    if a.dtype.kind not in "iu" or a.dtype == _np.int64:
        return a.copy() if a.dtype.kind in "iu" else a
    if a.dtype == _np.uint64 and a.size and a.max() > _np.uint64(2**63 - 1):
        raise OverflowError("uint64 value %d does not fit int64" % a.max())
    return a.astype(_np.int64)
