# SPDX-License-Identifier: BSD-2-Clause
"""seqstore.Loader: the C loader (sampler + batcher + collator on background
threads) as a Python iterable of batches."""
from __future__ import annotations

import numbers
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from . import _seqstore
from . import transforms as _transforms
from ._writer import _dtype_name

_C = _seqstore
# fields=: a list of names, or name -> collate options ({"dtype": "i64", "pad": 0, ...})
Fields = Union[Sequence[str], Mapping[str, Optional[Mapping[str, Any]]], None]
# out=: name (or name + "_mask") -> a NumPy array or CPU torch tensor; or a ring of them
Out = Mapping[str, Any]
Batch = Dict[str, Any]  # NumPy arrays, or torch tensors with torch=True
_LAYOUTS = {"batch": _C.LAYOUT_BATCH_MAJOR, "time": _C.LAYOUT_TIME_MAJOR,
            "packed": _C.LAYOUT_PACKED, "channels_first": _C.LAYOUT_CHANNELS_FIRST}
_MASKS = {None: _C.MASK_NONE, "u8": _C.MASK_U8, "f32": _C.MASK_F32}
_FIELD_KEYS = {"dtype", "pad", "pad_left", "pad_to_multiple", "fixed_length", "truncate_left",
               "layout", "mask", "sort_by_length"}


def _collate_field(name, spec):
    """{name: {dtype, pad, layout, mask, ...}} entry -> the C tuple."""
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        raise TypeError("fields[%r] is a dict of collate options, not %r" % (name, spec))
    unknown = set(spec) - _FIELD_KEYS
    if unknown:
        raise ValueError("fields[%r]: unknown options %s (known: %s)"
                         % (name, sorted(unknown), sorted(_FIELD_KEYS)))
    dtype = spec.get("dtype")
    code = 0 if dtype is None else _seqstore._dtype_code(_dtype_name(dtype, "field '%s'" % name))
    layout = spec.get("layout", "batch")
    if layout not in _LAYOUTS:
        raise ValueError("fields[%r]: layout is one of %s, not %r" % (name, sorted(_LAYOUTS), layout))
    mask, mask_dtype = _mask_option(name, spec.get("mask"))
    pad = spec.get("pad", 0)
    if not isinstance(pad, numbers.Real):
        raise TypeError("fields[%r]: pad is a number, not %r" % (name, pad))
    ints = {k: spec.get(k, 0) for k in ("pad_to_multiple", "fixed_length")}
    for k, v in ints.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not 0 <= v < 2**64:
            raise ValueError("fields[%r]: %s is an integer in [0, 2**64), not %r" % (name, k, v))
    # An integer pad stays an int (exact up to 2**64 - 1; a float is exact to 2**53).
    pad = int(pad) if isinstance(pad, numbers.Integral) else float(pad)
    return (name, code, _LAYOUTS[layout], pad, bool(spec.get("pad_left", False)),
            int(ints["pad_to_multiple"]), int(ints["fixed_length"]),
            bool(spec.get("truncate_left", False)), mask,
            bool(spec.get("sort_by_length", False)), mask_dtype)


def _mask_option(name, mask):
    """A field's mask option -> (C mask kind, C mask dtype code): None, "u8"
    and "f32" as before; "same" is a mask in the field's output dtype; any
    other dtype ("i64", np.float16, ...) a mask of that dtype."""
    if isinstance(mask, str) and mask == "same":
        return _C.MASK_DTYPE, 0
    if mask is None or (isinstance(mask, str) and mask in _MASKS):
        return _MASKS[mask], 0
    try:
        code = _C._dtype_code(_dtype_name(mask, "fields[%r] mask" % name))
    except (TypeError, ValueError):
        raise ValueError("fields[%r]: mask is None, 'u8', 'f32', 'same' (the output dtype) or "
                         "a dtype name, not %r" % (name, mask)) from None
    return _C.MASK_DTYPE, code


def _field_specs(store, fields):
    """fields (None, a list of names or a dict name -> options) -> C tuples."""
    if fields is None:
        return []
    if isinstance(fields, dict):
        spec = [_collate_field(n, s) for n, s in fields.items()]
    elif isinstance(fields, (list, tuple)):
        spec = [_collate_field(n, None) for n in fields]
    else:
        raise TypeError("fields is a dict name -> options or a list of names")
    for s in spec:
        if not isinstance(s[0], str):
            raise TypeError("a field is named by a str, not %r" % (s[0],))
        store.field(s[0])  # KeyError naming the store's fields
    return spec


def _check_transform_fields(store, spec, tspecs):
    """A transform works on one of the loader's output fields: say so at open,
    by name (the C library would find out at the first batch, by index)."""
    out = [s[0] for s in spec] if spec else list(store.fields)
    for t in tspecs or []:
        store.field(t[1])  # KeyError naming the store's fields
        if t[1] not in out:
            raise ValueError("transform %s: field '%s' is not an output field of the loader "
                             "(fields: %s)" % (t[0], t[1], out))


def _is_tensor(v):
    t = type(v)
    return t.__module__.startswith("torch") and t.__name__ in ("Tensor", "Parameter")


def _tensor_buffer(name, t):
    """A caller's torch tensor (e.g. pinned) as the writable array the C
    collator writes into: the same memory, no copy."""
    if t.requires_grad:
        raise TypeError("out['%s'] requires_grad: the collator writes outside autograd" % name)
    if t.device.type != "cpu":
        raise TypeError("out['%s'] is on %s: the collator writes CPU (e.g. pinned) memory"
                        % (name, t.device))
    if not t.is_contiguous():
        raise TypeError("out['%s'] must be a contiguous tensor" % name)
    return t.numpy()


def _count(name, v, minimum=0, maximum=2**64 - 1):
    """An int option in [minimum, maximum] (maximum: the C option's type, so
    that nothing is taken modulo 2**32 or 2**64)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError("%s is an int, not %r" % (name, v))
    if v < minimum:
        raise ValueError("%s must be >= %d, not %d" % (name, minimum, v))
    if v > maximum:
        raise ValueError("%s must be <= %d, not %d" % (name, maximum, v))
    return int(v)


_U32 = 2**32 - 1


def _check_torch_dtypes(store, spec, declared=None):
    """torch 1.13 has no uint16/32/64 tensors: refuse such outputs up front."""
    stored = {f["name"]: f["dtype"] for f in store.schema}
    stored.update(declared or {})
    outputs = [(s[0], _seqstore._dtype_name(s[1]) if s[1] else stored[s[0]]) for s in spec] \
        or list(stored.items())
    for name, dt in outputs:
        if dt in ("u16", "u32", "u64", "bf16"):
            raise ValueError("torch has no %s tensors: collate field '%s' to a wider type, "
                             "e.g. fields={'%s': {'dtype': 'i64'}}" % (dt, name, name))


def _output_dtypes(store, spec, declared=None):
    """(name, dtype name) of each output field, in the loader's order."""
    stored = {f["name"]: f["dtype"] for f in store.schema}
    stored.update(declared or {})
    return [(s[0], _seqstore._dtype_name(s[1]) if s[1] else stored[s[0]]) for s in spec] \
        or list(stored.items())


def _out_array(key, v, dtype):
    """out[key]: a caller's NumPy array or CPU torch tensor the C collator
    writes into, checked here so that a misuse raises before any batch."""
    a = _tensor_buffer(key, v) if _is_tensor(v) else v
    if not isinstance(a, np.ndarray):
        raise TypeError("out['%s'] is a NumPy array or a CPU torch tensor, not %s"
                        % (key, type(v).__name__))
    if not a.flags.c_contiguous:
        raise TypeError("out['%s'] must be C-contiguous" % key)
    if not a.flags.writeable:
        raise ValueError("out['%s'] is read-only: the collator writes into it" % key)
    if dtype is not None and a.dtype != np.dtype(dtype):
        raise TypeError("out['%s'] is %s; the batch's '%s' is %s"
                        % (key, a.dtype, key, np.dtype(dtype)))
    return a


_NP = {"i8": "int8", "u8": "uint8", "i16": "int16", "u16": "uint16", "i32": "int32",
       "u32": "uint32", "i64": "int64", "u64": "uint64", "f16": "float16", "f32": "float32",
       "f64": "float64"}
_NP["bf16"] = "uint16"  # its raw bits, as NumPy has no bfloat16


def _mask_np(spec, out_dtype):
    """The NumPy dtype of the mask a C field tuple asks for (None: no mask)."""
    kind, code = spec[8], spec[10]
    if kind == _C.MASK_NONE:
        return None
    if kind == _C.MASK_U8:
        return "uint8"
    if kind == _C.MASK_F32:
        return "float32"
    return _NP[_C._dtype_name(code) if code else out_dtype]


def _out_pairs(store, spec, declared, out):
    """Loader(out=): {field or field_mask: array or tensor} -> one (data,
    mask) pair of NumPy arrays (or None) per output field, for the C loader."""
    if not isinstance(out, dict):
        raise TypeError("out is a dict of field name (or name + '_mask') -> array or tensor")
    fields = _output_dtypes(store, spec, declared)
    out_dt = dict(fields)
    masks = {s[0]: _mask_np(s, out_dt[s[0]]) for s in spec}
    known = {n for n, _ in fields} | {n + "_mask" for n, m in masks.items() if m}
    unknown = set(out) - known
    if unknown:
        raise ValueError("out: %s not among the batch's arrays that can be written in place "
                         "(%s)" % (sorted(unknown), sorted(known)))
    pairs = []
    for name, dt in fields:
        d = out.get(name)
        m = out.get(name + "_mask")
        pairs.append((None if d is None else _out_array(name, d, _NP.get(dt)),
                      None if m is None else _out_array(name + "_mask", m, masks[name])))
    return tuple(pairs)


def _example_ranges(store, examples):
    """Loader(examples=): an index array (e.g. from store.kfold / store.split)
    -> int64 (start, end) pairs as bytes, for a C selection (None: all)."""
    if examples is None:
        return None
    a = np.asarray(examples)
    if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer)):
        raise TypeError("examples is a 1-D array of store indices, not %r" % (examples,))
    a = np.sort(a.astype(np.int64, copy=False))
    if a.size and (a[0] < 0 or a[-1] >= len(store)):
        bad = a[0] if a[0] < 0 else a[-1]
        raise IndexError("examples: index %d outside the store's %d examples" % (bad, len(store)))
    if a.size > 1 and not np.all(a[1:] != a[:-1]):
        dup = a[1:][a[1:] == a[:-1]][0]
        raise ValueError("examples: index %d is given twice (a selection is a set: each "
                         "example at most once per epoch)" % dup)
    cut = np.flatnonzero(np.diff(a) != 1) + 1  # runs of consecutive indices
    starts = a[np.concatenate([[0], cut])] if a.size else a
    ends = a[np.concatenate([cut - 1, [a.size - 1]])] + 1 if a.size else a
    return np.stack([starts, ends], axis=1).astype(np.uint64).tobytes()


class Loader:
    """Batches of a store, prepared ahead by C threads.

    loader = seqstore.Loader(store, batch_size=32, shuffle=True, seed=1,
                             fields={"tokens": {"dtype": "i64", "pad": 0, "mask": "u8"}})
    for batch in loader:                 # one epoch; the next loop is the next epoch
        batch["tokens"]                  # [B, T] int64, padded by the C collator
        batch["tokens_lengths"]          # [B] int64; also _mask, _offsets (packed)
        batch["index"]                   # [B] store indices

    Each iter() starts a pass, as a DataLoader's does: the rest of the
    current epoch if load_state_dict() or set_epoch() came last, the next
    epoch after a finished one, else the current epoch from its start (a
    peek with next(iter(loader)), or a loop left by break, does not eat into
    the next loop). An iterator of an earlier pass then raises RuntimeError.

    remainder: the last global step when world_size * batch_size does not
    divide the epoch (fixed batch_size), as ss_batch_options.remainder:
    "pad" fills it by repeating the epoch's order from its start (every
    batch full; torch's DistributedSampler also pads), "skip" drops it (=
    drop_last=True), "divisible" refuses such an epoch (ValueError),
    "include" keeps its real examples, so a rank whose share is empty has
    one batch fewer. None (the default) is "pad" when world_size > 1 and
    "include" otherwise: every rank gets the same number of batches, so a
    DDP loop never waits at the last step for a rank that has finished.
    With max_tokens or bucket the global list of batches is dealt to the
    ranks and the last round wraps around to the first batches, or is
    dropped with "skip" (max_tokens: "pad" and "include" are the same, and
    "divisible" is refused); with bucket and batch_size, each bucket's last
    batch also follows remainder as above.

    threads: C threads collating ahead (0 = one, as in the C API; default
    1), prefetch: batches prepared ahead (default 2); with out= and no
    transforms nothing is prepared ahead and both default to 0.
    Exactly one of batch_size (examples per batch) and max_tokens (a budget
    of padded tokens per batch) is given; bucket names a stored bucket index.
    fields maps output field name -> options (dtype, pad, pad_left,
    pad_to_multiple, fixed_length, truncate_left, layout "batch" ([B, T, C...])
    |"time" ([T, B, C...])|"packed" ([sum L, C...])|"channels_first"
    ([B, C..., T], as torch's Conv1d takes; the mask stays [B, T]), mask
    None|"u8"|"f32"|"same" (1/0 in the field's output dtype)|a dtype name
    ("i64", "f16", ...), sort_by_length), or is a list of names;
    None = every field. Widening u16 ids to i64 happens in the C collator.
    Batches are new arrays (copy=True), or with copy=False read-only views of
    the loader's buffers, valid until the next batch. torch=True yields
    torch tensors (imported lazily).
    pin_memory=True (torch tensors): each batch in page-locked memory, as
    torch's DataLoader(pin_memory=True) gives, ready for
    .to("cuda", non_blocking=True); without a CUDA device it warns and
    hands out ordinary tensors, as DataLoader does. device="cuda" (or
    "cuda:k", a torch.device): each batch is copied from the C loader's
    buffers into pinned staging buffers and from there to the device with
    non_blocking=True on a side CUDA stream; the current stream waits for
    the copy and the tensors are recorded on it, so they are ready when
    handed out while the copy overlaps the work queued before it (a
    RuntimeError without CUDA). device="cpu": plain tensors.
    out={"tokens": buf, "tokens_mask": mbuf, ...}: each batch is collated by
    the C collator, once, straight into the caller's memory
    (ss_loader_next_into()): buf is a writable C-contiguous NumPy array or a CPU torch tensor
    (contiguous, not requiring grad; e.g. a pinned one) of the field's output
    dtype, with at least the batch's bytes (a flat buffer of B * T_max
    elements serves every batch; a smaller one raises ValueError naming the
    field and the bytes needed, and the same batch comes again next time).
    batch["tokens"] is then a view of buf shaped as the batch ([B, T] for
    this batch; a tensor view, same data_ptr(), when buf is a tensor), ready
    for .to("cuda", non_blocking=True); it is overwritten by the next batch,
    so alternate two loaders' buffers or synchronise before the next one when
    the copy is asynchronous. Fields not in out follow copy=. The batches are
    those of the same Loader without out (same seed: same batches, same
    state_dict()). Without transforms no C thread prepares ahead (threads and
    prefetch are left unset); with them, threads run the transforms ahead.
    out=[set0, set1, ...] (a list of 1 to 64 such dicts, each with its own
    arrays or tensors: a ring, 2 to 4 sets is typical): C threads collate
    ahead into the sets, batch g into set g mod R, with or without transforms
    (threads default 1; prefetch stays 0: the depth is R). A batch's arrays
    are views of its set and stay untouched until the next batch is taken;
    then its set goes back to the threads (so R - 1 batches are prepared
    while the caller holds one). The batches and state_dict() are those of
    the plain Loader. Every set must be large enough for any batch (a too
    small one raises ValueError naming the field; the loader then raises it
    until set_epoch() or load_state_dict()).
    state_dict()/load_state_dict() resume exactly after the last batch handed
    out (same store and options). Elastic: a state of one rank of R also
    loads into a Loader with another world_size and rank, all else equal
    (remainder included: give it, its default depends on world_size) and,
    with batch_size, world_size * batch_size unchanged; every rank then
    continues the global order after the saved rank's batches, as the
    uninterrupted run would (ranks are taken to be at the same step). With
    max_tokens or bucket, R * batches must be a multiple of the new
    world_size. Otherwise ValueError says why.
    transforms: a list of seqstore.transforms objects (RandomCrop,
    GaussianNoise, TokenMask, TokenDrop, Standardize, LabelMap), applied in C
    to each example before collation; deterministic per (seed, epoch,
    example, position in the list).
    examples: the store indices to read (an index array, e.g. a fold from
    store.kfold() or store.split()); None = all. It is a set: each index at
    most once, order irrelevant (the sampler orders: shuffle, seed). Sharding
    by rank/world_size then applies within it."""

    def __init__(self, store: _seqstore.Store, batch_size: Optional[int] = None,
                 max_tokens: Optional[int] = None, bucket: Optional[str] = None,
                 shuffle: bool = False, seed: int = 0, rank: int = 0, world_size: int = 1,
                 drop_last: bool = False, fields: Fields = None, threads: Optional[int] = None,
                 prefetch: Optional[int] = None, copy: bool = True, torch: bool = False,
                 transforms: Optional[Sequence[_transforms.Transform]] = None,
                 examples: Optional[npt.ArrayLike] = None,
                 out: Union[Out, Sequence[Out], None] = None,
                 remainder: Optional[str] = None, pin_memory: bool = False,
                 device: Any = None) -> None:
        if not isinstance(store, _seqstore.Store):
            raise TypeError("Loader needs a seqstore.Store, not %s" % type(store).__name__)
        if (batch_size is None) == (max_tokens is None):
            raise ValueError("give exactly one of batch_size and max_tokens")
        bs = 0 if batch_size is None else _count("batch_size", batch_size, 1)
        mt = 0 if max_tokens is None else _count("max_tokens", max_tokens, 1)
        r = _count("rank", rank, 0, _U32)
        world = _count("world_size", world_size, 1, _U32)
        if r >= world:
            raise ValueError("rank %d must be < world_size %d" % (r, world))
        drop_last, rem = _remainder(remainder, drop_last, world, mt > 0)
        if bucket is not None and not isinstance(bucket, str):
            raise TypeError("bucket is the name (str) of a stored bucket index")
        spec = _field_specs(store, fields)
        self._torch = None
        self._handoff = None
        if pin_memory or device is not None:
            if out is not None:
                raise ValueError("out= and pin_memory/device are two ways to place batches: "
                                 "give one (out= with pinned tensors, or pin_memory/device)")
            torch = True  # the batches are torch tensors
        if torch:
            import torch as _torch  # lazily: the module works without torch
            self._torch = _torch
            _check_torch_dtypes(store, spec, _transforms._declared_dtypes(transforms))
            if pin_memory or device is not None:
                from ._device import Handoff
                self._handoff = Handoff(_torch, bool(pin_memory), device)
                if self._handoff.copies:
                    copy = False  # copied into pinned memory at once: views suffice
        tspecs = _transforms._specs(transforms)
        _check_transform_fields(store, spec, tspecs)
        declared = _transforms._declared_dtypes(transforms)
        ring = isinstance(out, (list, tuple))
        if ring:  # a ring of buffer sets: C threads collate ahead into them
            if not 1 <= len(out) <= 64:
                raise ValueError("out: a ring has 1 to 64 buffer sets, not %d" % len(out))
            pairs = [_out_pairs(store, spec, declared, o) for o in out]  # a list: the ring
        else:
            pairs = None if out is None else _out_pairs(store, spec, declared, out)
        # With one out set and no transforms the C loader prepares nothing
        # ahead: it refuses threads > 1 and prefetch > 0, so they default to 0
        # there. With a ring the depth is the ring's (prefetch 0).
        ahead = out is None or bool(tspecs) or ring
        threads = (1 if ahead else 0) if threads is None else threads
        prefetch = (2 if out is None or (tspecs and not ring) else 0) if prefetch is None \
            else prefetch
        self._tensors = {k for o in (out if ring else [out or {}]) for k, v in o.items()
                         if _is_tensor(v)}
        self._out = out  # the caller's buffers, alive as long as the loader
        self._l = _seqstore._Loader(
            store, spec, bs, mt, bucket, bool(shuffle), _count("seed", seed), r, world,
            bool(drop_last), _count("threads", threads, 0, _U32),
            _count("prefetch", prefetch, 0 if out is not None else 1, _U32),
            bool(copy), tspecs, _example_ranges(store, examples), pairs, rem)
        self._resume = True  # the first pass starts where the loader stands
        self._pass = 0

    def __iter__(self) -> Iterator[Batch]:
        l = self._l
        if not self._resume:
            if l.batches and l.position >= l.batches:
                l.set_epoch(l.epoch + 1)  # a finished epoch: go on with the next one
            elif l.position:
                l.set_epoch(l.epoch)  # a pass left early: this epoch again, from its start
        self._resume = False
        self._pass += 1
        return _Pass(self, self._pass)

    def _next(self, pass_: int) -> Batch:
        if pass_ != self._pass:
            raise RuntimeError("this Loader was iterated again (iter()) since this iterator "
                               "was made: use the newer iterator")
        batch: Batch = next(self._l)
        if self._handoff is not None:
            batch = self._handoff(batch)
        elif self._torch is not None:
            batch = {k: self._torch.from_numpy(v) for k, v in batch.items()}
        elif self._tensors:  # views of the caller's tensors come back as tensors
            import torch  # already imported: the caller gave tensors
            for k in self._tensors:
                batch[k] = torch.from_numpy(batch[k])
        return batch

    def __len__(self) -> int:
        return self._l.batches

    @property
    def epoch(self) -> int:
        return self._l.epoch

    @property
    def position(self) -> int:
        return self._l.position

    def set_epoch(self, epoch: int) -> None:
        """Start epoch `epoch` from its first batch (discards prefetched batches);
        the next iter() begins there."""
        self._l.set_epoch(_count("epoch", epoch))
        self._resume = True

    def state_dict(self) -> Dict[str, Any]:
        """The position after the batches handed out so far (PyTorch's convention)."""
        return {"seqstore_loader": self._l._state()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from state_dict(): the next batch is the one an uninterrupted
        run would have yielded next."""
        if not isinstance(state, dict) or "seqstore_loader" not in state:
            raise ValueError("not a seqstore Loader state_dict")
        self._l._load_state(state["seqstore_loader"])
        self._resume = True

    def close(self) -> None:
        self._l.close()

    def __enter__(self) -> Loader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __reduce__(self) -> Any:
        raise TypeError("a Loader cannot be pickled; pickle its Store and state_dict()")


class _Pass:
    """One pass over a Loader or Blend (what iter() returns)."""

    __slots__ = ("_loader", "_pass")

    def __init__(self, loader: Union[Loader, Blend], pass_: int) -> None:
        self._loader, self._pass = loader, pass_

    def __iter__(self) -> _Pass:
        return self

    def __next__(self) -> Batch:
        return self._loader._next(self._pass)


_REMAINDERS = {"include": _C.REMAINDER_INCLUDE, "skip": _C.REMAINDER_SKIP,
               "divisible": _C.REMAINDER_DIVISIBLE, "pad": _C.REMAINDER_PAD}


def _remainder(remainder, drop_last, world, token_budget):
    """remainder= and drop_last= -> (drop_last, C remainder code); None is
    "pad" for several ranks, else "include" (see Loader)."""
    if remainder is None:
        remainder = "skip" if drop_last else "pad" if world > 1 else "include"
    if remainder not in _REMAINDERS:
        raise ValueError("remainder is one of %s or None, not %r" % (sorted(_REMAINDERS), remainder))
    if drop_last and remainder != "skip":
        raise ValueError("drop_last=True means remainder='skip', not %r" % remainder)
    if token_budget:  # the batcher keeps its last batch; the loader deals the rounds
        if remainder == "divisible":
            raise ValueError("remainder='divisible' needs a fixed batch_size, not max_tokens")
        return remainder == "skip", _C.REMAINDER_INCLUDE
    return False, _REMAINDERS[remainder]


class Collator:
    """The C collator: store indices in, a padded (or packed) batch out.

    c = seqstore.Collator(store, fields={"tokens": {"dtype": "i64", "pad": 0}})
    batch = c.collate([4, 17, 3])      # {"tokens": [3, T] int64, "tokens_lengths": ...}
    c.collate(idx, out={"tokens": buf})  # written by C straight into buf

    fields as for Loader. With out, out[name] (a writable C-contiguous array
    of the output dtype, large enough: SS_EINVAL names the bytes needed
    otherwise) receives the field's data and the result holds a view of it
    shaped as the batch; lengths, masks and offsets are returned as new arrays.
    out[name] may also be a CPU torch tensor (contiguous, of the output dtype,
    not requiring grad), e.g. a pinned one: C writes the batch into it once
    and the result's field is a tensor view of it, ready for
    .to("cuda", non_blocking=True). With seqstore.torch.BatchSampler for
    the batches (the Loader's own plan), every batch is written once, by C,
    into the caller's pinned buffer:
        for idx in sampler:
            x = c.collate(idx, out={"tokens": pinned})["tokens"].to("cuda", non_blocking=True)
    (alternate two pinned buffers, or synchronise, so that a collation does not
    overwrite a buffer whose copy to the GPU is still in flight). The Loader
    does the same with out= (see Loader)."""

    def __init__(self, store: _seqstore.Store, fields: Fields = None) -> None:
        if not isinstance(store, _seqstore.Store):
            raise TypeError("Collator needs a seqstore.Store, not %s" % type(store).__name__)
        spec = _field_specs(store, fields)
        self._c = _seqstore._Collator(store, spec)

    @property
    def fields(self) -> Tuple[str, ...]:
        return self._c.fields

    def collate(self, indices: Union[Sequence[int], npt.ArrayLike],
                out: Optional[Out] = None) -> Batch:
        if not isinstance(out, dict) or not any(_is_tensor(v) for v in out.values()):
            return self._c.collate(indices, out)
        arrays = {k: _tensor_buffer(k, v) if _is_tensor(v) else v for k, v in out.items()}
        batch = self._c.collate(indices, arrays)
        import torch  # already imported: the caller gave tensors
        for k, v in out.items():
            if _is_tensor(v) and k in batch:  # a view of the caller's tensor, shaped as the batch
                batch[k] = torch.from_numpy(batch[k])
        return batch

    __call__ = collate

    def close(self) -> None:
        self._c.close()


_STOPS = {None: _C.BLEND_INFINITE, "infinite": _C.BLEND_INFINITE,
          "first_exhausted": _C.BLEND_FIRST_EXHAUSTED, "all_exhausted": _C.BLEND_ALL_EXHAUSTED}


class Blend:
    """Batches blended from several stores in chosen proportions, collated
    together in C (ss_blend_loader).

    blend = seqstore.Blend([web, books, code], weights=[0.6, 0.3, 0.1], batch_size=32,
                           fields={"tokens": {"dtype": "i64", "pad": 0}}, seed=1,
                           stop="all_exhausted")
    for batch in blend:                  # batch["tokens"], ["tokens_lengths"], ...
        batch["source"], batch["index"]  # [B] each row's store and example in it

    Global sample n comes from the store j maximising w_j * (n + 1) - c_j
    (Megatron's greedy rule: after n samples every c_j is within one of
    w_j * n); each store is read in a new permutation per its own epoch
    (shuffle=True, from seed) or in order. stop: None / "infinite" (never
    ends), "first_exhausted" (ends right after the sample with which some
    store completes its first epoch), "all_exhausted" (right after every
    store has completed one; the others are oversampled meanwhile), as
    Hugging Face's interleave_datasets. Global sample n goes to the consumer
    rank + world_size * worker = n mod (world_size * num_workers). fields are
    named and optioned as for Loader, resolved in the first store; every
    store must have those fields with the same dtype and shape (ValueError
    naming the store and field otherwise). Batches are new arrays.
    state_dict()/load_state_dict() resume exactly; sources() gives each
    store's (samples given, epochs completed) over all consumers so far.

    Each iter() starts a pass, as a DataLoader's does: the stream from its
    start (the same batches again: same seed), or after load_state_dict()
    the rest of the saved stream; the first pass starts where the Blend
    stands. A peek with next(iter(blend)) or a loop left by break does not
    eat into the next loop; an iterator of an earlier pass then raises
    RuntimeError."""

    def __init__(self, stores: Iterable[_seqstore.Store], weights: Iterable[float],
                 batch_size: int, fields: Fields = None, seed: int = 0, shuffle: bool = True,
                 stop: Optional[str] = None, rank: int = 0, world_size: int = 1, worker: int = 0,
                 num_workers: int = 1, drop_last: bool = False) -> None:
        stores = tuple(stores)
        if not stores or not all(isinstance(s, _seqstore.Store) for s in stores):
            raise TypeError("Blend needs a list of seqstore.Store")
        weights = tuple(float(w) for w in weights)
        if len(weights) != len(stores):
            raise ValueError("%d weights for %d stores" % (len(weights), len(stores)))
        if stop not in _STOPS:
            raise ValueError("stop is None, 'infinite', 'first_exhausted' or 'all_exhausted', "
                             "not %r" % (stop,))
        r = _count("rank", rank, 0, _U32)
        world = _count("world_size", world_size, 1, _U32)
        wk = _count("worker", worker, 0, _U32)
        nw = _count("num_workers", num_workers, 1, _U32)
        if r >= world or wk >= nw:
            raise ValueError("rank %d of %d, worker %d of %d" % (r, world, wk, nw))
        spec = _field_specs(stores[0], fields)
        self._stores = stores
        self._b = _seqstore._Blend(stores, weights, spec, _count("batch_size", batch_size, 1),
                                   _count("seed", seed), bool(shuffle), _STOPS[stop], r, world,
                                   wk, nw, bool(drop_last))
        self._start = self._b._state()  # where every pass but a resumed one begins
        self._resume = True  # the first pass starts where the Blend stands
        self._taken = 0      # batches handed out in the pass under way
        self._pass = 0

    def __iter__(self) -> Iterator[Batch]:
        if not self._resume and self._taken:
            self._b._load_state(self._start)
        self._resume = False
        self._taken = 0
        self._pass += 1
        return _Pass(self, self._pass)

    def _next(self, pass_: int) -> Batch:
        if pass_ != self._pass:
            raise RuntimeError("this Blend was iterated again (iter()) since this iterator "
                               "was made: use the newer iterator")
        batch: Batch = next(self._b)
        self._taken += 1
        return batch

    @property
    def length(self) -> Optional[int]:
        """Global samples of a finite stream (every consumer's together); None if infinite."""
        return self._b.length

    def sources(self) -> List[Tuple[int, int]]:
        """[(samples given, epochs completed)] per store, over all consumers so far."""
        return self._b._sources()

    def state_dict(self) -> Dict[str, Any]:
        return {"seqstore_blend": self._b._state()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if not isinstance(state, dict) or "seqstore_blend" not in state:
            raise ValueError("not a seqstore Blend state_dict")
        self._b._load_state(state["seqstore_blend"])
        self._resume = True

    def close(self) -> None:
        self._b.close()

    def __enter__(self) -> Blend:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
