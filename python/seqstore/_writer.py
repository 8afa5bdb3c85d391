# SPDX-License-Identifier: BSD-2-Clause
"""seqstore.create() and the Writer: from NumPy arrays (or anything
np.asarray accepts: lists, torch CPU tensors) to a store."""
from __future__ import annotations

import numbers
import os
from types import TracebackType
from typing import Any, Iterable, Mapping, NamedTuple, Tuple, Union

import numpy as np
import numpy.typing as npt

from . import _seqstore

_TEXT, _BYTES = _seqstore.ATTR_TEXT, _seqstore.ATTR_BYTES
# NumPy dtype -> seqstore dtype name; bf16 is written from uint16 bits.
_NP_NAME = {np.dtype(t): n for t, n in [
    (np.uint8, "u8"), (np.int8, "i8"), (np.uint16, "u16"), (np.int16, "i16"),
    (np.uint32, "u32"), (np.int32, "i32"), (np.uint64, "u64"), (np.int64, "i64"),
    (np.float16, "f16"), (np.float32, "f32"), (np.float64, "f64")]}
_NAME_NP = {n: t for t, n in _NP_NAME.items()}
_NAME_NP["bf16"] = np.dtype(np.uint16)


def _dtype_name(dtype, where):
    """Accept "u16", np.uint16, np.dtype("uint16") or "uint16"."""
    if isinstance(dtype, str) and dtype in _NAME_NP:
        return dtype
    try:
        d = np.dtype(dtype)
    except TypeError:
        exc = ValueError if isinstance(dtype, str) else TypeError
        raise exc("%s: %r is not a dtype (one of %s)"
                  % (where, dtype, ", ".join(sorted(_NAME_NP)))) from None
    if d not in _NP_NAME:
        raise ValueError("%s: dtype %s cannot be stored (use one of %s)"
                         % (where, d, ", ".join(sorted(_NAME_NP))))
    return _NP_NAME[d]


class Field(NamedTuple):
    """One field of a schema, for seqstore.create():

        seqstore.create("x.ss", [seqstore.Field("tokens", "u16"),
                                 seqstore.Field("label", "i64", sequence=False),
                                 seqstore.Field("feat", np.float32, shape=(80,))])

    Parameters
    ----------
    name : str
        The field's name.
    dtype : str or NumPy dtype
        "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "f32",
        "f64", "bf16", or the NumPy dtype of one of them.
    shape : tuple of int, or int
        The trailing shape of one row (time step); () for scalars.
    sequence : bool
        True: each example holds [length, *shape] (a sequence of rows);
        False: exactly one value of `shape`.

    A tuple (name, dtype[, shape[, sequence]]) or a dict with these keys
    (the form Store.schema returns) is accepted wherever a Field is."""

    name: str
    dtype: Any
    shape: Union[Tuple[int, ...], int] = ()
    sequence: bool = True


def _field(spec):
    """One schema entry -> (name, dtype code, sequence, dims).

    Accepted: a Field, {"name", "dtype", "shape"=(), "sequence"=True} (the
    form Store.schema returns) or a tuple (name, dtype[, shape[, sequence]])."""
    if isinstance(spec, dict):
        unknown = set(spec) - {"name", "dtype", "shape", "sequence"}
        if unknown:
            raise ValueError("schema field %r: unknown keys %s" % (spec.get("name"), sorted(unknown)))
        if "name" not in spec or "dtype" not in spec:
            raise ValueError("schema field %r needs 'name' and 'dtype'" % (spec,))
        name, dtype = spec["name"], spec["dtype"]
        shape, sequence = spec.get("shape", ()), spec.get("sequence", True)
    elif isinstance(spec, (tuple, list)) and 2 <= len(spec) <= 4:
        name, dtype = spec[0], spec[1]
        shape = spec[2] if len(spec) > 2 else ()
        sequence = spec[3] if len(spec) > 3 else True
    else:
        raise TypeError("a schema field is a seqstore.Field, a dict or a (name, dtype[, "
                        "shape[, sequence]]) tuple, not %r" % (spec,))
    if not isinstance(name, str):
        raise TypeError("a field name is a str, not %r" % (name,))
    where = "field '%s'" % name
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    if not all(isinstance(d, numbers.Integral) for d in shape):
        raise TypeError("%s: shape %r must hold integers" % (where, shape))
    if not isinstance(sequence, bool):
        raise TypeError("%s: sequence must be True or False, not %r" % (where, sequence))
    code = _seqstore._dtype_code(_dtype_name(dtype, where))
    return (name, code, int(sequence), tuple(int(d) for d in shape))


SchemaEntry = Union["Field", Tuple[Any, ...], Mapping[str, Any]]


def create(path: str | os.PathLike[str], schema: Iterable[SchemaEntry],
           force: bool = False) -> Writer:
    """Create a store at `path`; returns a Writer (a context manager).

    schema: a list of fields, each a seqstore.Field(name, dtype, shape=(),
    sequence=True), a tuple (name, dtype[, shape[, sequence]]) or a dict
    {"name", "dtype", "shape"=(), "sequence"=True} (the form Store.schema returns).
    A sequence field holds per example an array [length, *shape]; a fixed
    field (sequence=False) one array of `shape`. force=True replaces a file."""
    if isinstance(schema, dict):
        raise TypeError("schema is a list of fields (order matters), not a dict")
    fields = [_field(s) for s in schema]
    names = [f[0] for f in fields]
    if len(set(names)) != len(names):
        raise ValueError("schema: duplicate field names in %s" % names)
    return Writer(_seqstore._create(path, fields, bool(force)), fields)


def _convert(value, name, dtype, sequence, dims):
    """`value` as a C-contiguous array of `dtype`, refusing lossy conversions."""
    where = "field '%s'" % name
    if isinstance(value, (list, tuple, numbers.Number)):
        # Python numbers have no dtype: convert, then check nothing was lost.
        raw = np.asarray(value)
        if raw.size and (raw.dtype.kind not in "biuf" or
                         (raw.dtype.kind == "f" and dtype.kind in "iu")):
            raise TypeError("%s is %s: values of type %s cannot be stored in it"
                            % (where, dtype, raw.dtype))
        arr = raw.astype(dtype) if raw.size else np.zeros(raw.shape, dtype)
        if raw.size and raw.dtype.kind in "biu" and not np.array_equal(arr, raw):
            raise ValueError("%s: values %s do not fit %s" % (where, raw, dtype))
    else:
        arr = np.asarray(value)
        if arr.dtype != dtype and not np.can_cast(arr.dtype, dtype, "safe"):
            raise TypeError("%s is %s; got %s values (convert them, e.g. a.astype(np.%s), "
                            "after checking their range)" % (where, dtype, arr.dtype, dtype))
        arr = arr.astype(dtype, copy=False)
    if not sequence and arr.shape == (1,) + dims:
        arr = arr.reshape(dims)
    if sequence and not dims and arr.ndim == 0:
        raise ValueError("%s is a sequence: give an array of time steps, not a scalar" % where)
    want = ("[length], " if sequence else "") + str(dims)
    if arr.shape[1 if sequence else 0:] != dims or arr.ndim != len(dims) + (1 if sequence else 0):
        raise ValueError("%s: shape %s does not fit %s" % (where, arr.shape, want))
    return arr if arr.flags.c_contiguous else arr.copy(order="C")  # (ascontiguousarray makes 0-d 1-d)


class Writer:
    """Appends examples to a new store (seqstore.create()).

    with seqstore.create("x.ss", [("tokens", "u16")]) as w:
        w.append({"tokens": np.array([1, 2, 3], np.uint16)})
        w.attrs["source"] = "fortunes"
    Leaving the with block normally finishes the store; on an exception the
    writer is closed unfinished (readers refuse the store as incomplete)."""

    def __init__(self, c_writer: _seqstore._Writer, fields: list[tuple[Any, ...]]) -> None:
        self._w = c_writer
        self._fields = [(n, _NAME_NP[_seqstore._dtype_name(c)], bool(s), d)
                        for n, c, s, d in fields]
        self._names = {f[0] for f in fields}
        self.attrs = _Attrs(self)

    def append(self, example: Mapping[str, Any]) -> None:
        """Append one example: a dict of field name -> array-like."""
        if not isinstance(example, dict):
            raise TypeError("append takes a dict of field name -> array, not %s"
                            % type(example).__name__)
        extra = set(example) - self._names
        if extra:
            raise ValueError("append: unknown fields %s (the schema has %s)"
                             % (sorted(map(str, extra)), [f[0] for f in self._fields]))
        missing = [f[0] for f in self._fields if f[0] not in example]
        if missing:
            raise ValueError("append: missing fields %s" % missing)
        self._w._append(tuple(_convert(example[n], n, dt, s, d) for n, dt, s, d in self._fields))

    def set_attr(self, name: str,
                 value: str | bytes | bytearray | memoryview | npt.ArrayLike) -> None:
        """Set an attribute: str -> text, bytes -> bytes, an array -> typed."""
        if not isinstance(name, str):
            raise TypeError("an attribute name is a str, not %r" % (name,))
        if isinstance(value, str):
            self._w._set_attr(name, _TEXT, value.encode("utf-8"))
        elif isinstance(value, (bytes, bytearray, memoryview)):
            self._w._set_attr(name, _BYTES, bytes(value))
        else:
            arr = np.ascontiguousarray(value)
            if arr.ndim > 1 or arr.dtype not in _NP_NAME:
                raise TypeError("attribute '%s': a str, bytes or 1-D numeric array, not %s %s"
                                % (name, arr.shape, arr.dtype))
            self._w._set_attr(name, _seqstore._dtype_code(_NP_NAME[arr.dtype]), arr.reshape(-1).view(np.uint8))

    def commit(self) -> None:
        self._w.commit()

    def finish(self) -> None:
        """Commit, mark the store complete and close the writer."""
        self._w.finish()

    def close(self) -> None:
        """Close without finishing (the store stays incomplete)."""
        self._w.close()

    @property
    def count(self) -> int:
        return self._w.count

    @property
    def closed(self) -> bool:
        return self._w.closed

    def __len__(self) -> int:
        return self._w.count

    def __enter__(self) -> Writer:
        if self._w.closed:
            raise _seqstore.ClosedError("writer is closed")
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None and not self._w.closed:
            self._w.finish()
        else:
            self._w.close()

    def __reduce__(self):
        raise TypeError("a Writer cannot be pickled (it owns an open write transaction)")


class _Attrs:
    """writer.attrs[name] = value (write-only: values go straight to the file)."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer

    def __setitem__(self, name: str, value: Any) -> None:
        self._writer.set_attr(name, value)
