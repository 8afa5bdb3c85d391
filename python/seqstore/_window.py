# SPDX-License-Identifier: BSD-2-Clause
"""seqstore.WindowReader: windows over long signals for truncated BPTT, with
the hidden state of every sequence carried by the C reader."""
from __future__ import annotations

import numbers
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from . import _seqstore
from ._writer import _NAME_NP, _dtype_name

_C = _seqstore
_MODES = {"sequential": _C.WINDOW_SEQUENTIAL, "random_start": _C.WINDOW_SEQUENTIAL_RANDOM_START,
          "random": _C.WINDOW_RANDOM}
_FORGET, _PAD_TAIL = _C.WINDOW_FORGET_STATE, _C.WINDOW_PAD_TAIL
_TIME_MAJOR, _LABEL_PER_STEP = _C.WINDOW_TIME_MAJOR, _C.WINDOW_LABEL_PER_STEP
_SHRINK, _BALANCED = _C.WINDOW_SHRINK, _C.WINDOW_BALANCED
_DROP_LAST, _REDRAW = _C.WINDOW_DROP_LAST, _C.WINDOW_REDRAW


class WindowBatch:
    """One batch of windows; every array is a copy the caller owns.

    data [B, W, C] ([W, B, C] time-major), mask [B] (row holds a window),
    step_mask [B, W], reset [B] (first window of its sequence: `state` is the
    initial state), example [B] (sequence id), start, length, index [B],
    state [B, H] (the hidden state each row starts from), label."""

    def __init__(self, d: Dict[str, Any], torch: Any) -> None:
        self.id = d.pop("id")
        self.epoch = d.pop("epoch")
        self._fields = list(d)
        for k, v in d.items():
            if torch is not None and v.dtype in (np.uint32, np.uint64):
                v = v.astype(np.int64)  # torch has no uint32/64: class ids (e.g. a converted
                # EDF's u32 label) come as int64; a copy anyway (the batch's arrays are copies)
            setattr(self, k, torch.from_numpy(v) if torch is not None else v)

    # NumPy arrays (torch tensors with torch=True); state and label when the
    # reader carries them
    data: Any
    mask: Any
    step_mask: Any
    reset: Any
    example: Any
    start: Any
    length: Any
    index: Any
    state: Any
    label: Any

    @property
    def size(self) -> int:
        return len(self.mask)

    def keys(self) -> List[str]:
        return list(self._fields)


class WindowReader:
    """Overlapping windows of a sequence field, B lanes, per-sequence state.

    r = seqstore.WindowReader(store, "eeg", window=256, overlap=0, lanes=8,
                              state_size=64, state_dtype="f32")
    for batch in r:                              # one epoch
        h = model(batch.data, batch.state)       # state: where each row left off
        r.register(batch, h)                     # [B, H] final states, before next
    The reader hands each sequence's registered state back with its next
    window (reset=True and the initial state on a sequence's first window).
    forget_state=True hands out a fresh state every window (the baseline).
    out_dtype="f32" with gain and offset (numbers per channel, or the name of
    a store attribute holding them, e.g. gain="signal.gain") converts digital
    values to physical ones in C: x * gain + offset.

    Lanes and epochs (ss_window_options.flags):
    shrink=True drops the empty lanes at the end of an epoch instead of
    handing out masked rows (batches get smaller); balanced=True gives the
    lanes sequences of every class of `label` in turn (class-balanced);
    redraw=True (sequential modes) lets every lane draw its next sequence
    each batch, so that a short sequence does not leave its lane masked
    while longer ones run on; drop_last=True ends the epoch at the first
    batch that would hold fewer than `lanes` windows. max_pending: batches
    that may be out before their states are registered (0 or 1: strict; more
    lets other sequences be served meanwhile; not with balanced or
    drop_last). epoch_windows: windows per epoch in "random" mode (0: as
    many as a sequential epoch). initial_state: the state_size values of the
    state dtype handed out on a sequence's first window (default zeros).
    transforms: seqstore.transforms objects run in C on every window
    (per-example ones, e.g. GaussianNoise, Standardize) or batch.

    threads: OpenMP threads collating a batch (0 = one). None (the default)
    picks 1: the collation of a window batch is a few copies per row, and on
    a loaded machine a parallel region per batch costs more than it saves
    (see docs/python.md for the measurements); give more for batches of
    many long rows on an otherwise idle machine.

    prefetch: collate the next batch in a thread of the reader while the
    caller works on this one (reading the store, converting, the
    transforms); only the hidden states registered meanwhile are gathered in
    next(). The batches and saved states are the same either way. It pays
    where a core is idle while the caller works (a step on a GPU, a model
    on fewer threads than cores); on a machine whose cores are all busy the
    second buffer costs more than the overlap saves, so it is off by default
    (docs/python.md has the measurements). A batch the thread has not
    started when it is needed is collated in next(), into the buffer just
    released. Not with max_pending > 1, where the next batch depends on
    when batches are registered."""

    def __init__(self, store: _seqstore.Store, field: str, window: int, overlap: int = 0,
                 lanes: int = 1, state_size: int = 0, state_dtype: Any = "f32",
                 mode: str = "sequential", seed: int = 0, shuffle: bool = False,
                 label: Optional[str] = None, forget_state: bool = False, pad_tail: bool = False,
                 time_major: bool = False, label_per_step: bool = False,
                 out_dtype: Any = None, gain: Union[str, npt.ArrayLike, None] = None,
                 offset: Union[str, npt.ArrayLike, None] = None,
                 examples: Optional[npt.ArrayLike] = None, threads: Optional[int] = None,
                 torch: bool = False, shrink: bool = False, balanced: bool = False,
                 redraw: bool = False, drop_last: bool = False, max_pending: int = 0,
                 epoch_windows: int = 0, initial_state: Optional[npt.ArrayLike] = None,
                 transforms: Optional[Sequence[Any]] = None,
                 prefetch: bool = False) -> None:
        if not isinstance(store, _seqstore.Store):
            raise TypeError("WindowReader needs a seqstore.Store, not %s" % type(store).__name__)
        names = store.fields
        fi = self._index(names, field, "field")
        li = -1 if label is None else self._index(names, label, "label")
        u32, u64 = 2**32 - 1, 2**64 - 1
        if threads is None:
            threads = 1
        for name, v, top in (("window", window, u64), ("overlap", overlap, u64),
                             ("lanes", lanes, u32), ("state_size", state_size, u64),
                             ("seed", seed, u64), ("threads", threads, 2**31 - 1),
                             ("max_pending", max_pending, u32),
                             ("epoch_windows", epoch_windows, u64)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
                raise TypeError("%s is an int >= 0, not %r" % (name, v))
            if v > top:  # the C option's type: never taken modulo 2**32 / 2**64
                raise ValueError("%s must be <= %d, not %d" % (name, top, v))
        if not isinstance(prefetch, bool):
            raise TypeError("prefetch is a bool, not %r" % (prefetch,))
        elif prefetch and max_pending > 1:
            raise ValueError("prefetch needs max_pending <= 1 (with more, the next batch "
                             "depends on when batches are registered)")
        if mode not in _MODES:
            raise ValueError("mode is one of %s, not %r" % (sorted(_MODES), mode))
        sd = _seqstore._dtype_code(_dtype_name(state_dtype, "state_dtype"))
        od = 0 if out_dtype is None else _seqstore._dtype_code(_dtype_name(out_dtype, "out_dtype"))
        flags = ((_FORGET if forget_state else 0) | (_PAD_TAIL if pad_tail else 0) |
                 (_TIME_MAJOR if time_major else 0) | (_LABEL_PER_STEP if label_per_step else 0) |
                 (_SHRINK if shrink else 0) | (_BALANCED if balanced else 0) |
                 (_REDRAW if redraw else 0) | (_DROP_LAST if drop_last else 0))
        vec = lambda v: None if v is None else np.ascontiguousarray(v, np.float64).reshape(-1)
        ex = None if examples is None else np.ascontiguousarray(examples, np.uint64).reshape(-1)
        self._state_np = _NAME_NP[_seqstore._dtype_name(sd)]
        init = None
        if initial_state is not None:
            init = np.ascontiguousarray(initial_state, self._state_np).reshape(-1)
            if init.size != state_size:
                raise ValueError("initial_state has %d values, state_size is %d"
                                 % (init.size, state_size))
        self.prefetch = bool(prefetch)
        from . import transforms as _transforms  # the module, not the argument
        tspecs = _transforms._specs(transforms) or None
        self._torch = None
        if torch:
            import torch as _torch  # lazily
            self._torch = _torch
        gain, gain_attr = self._scale("gain", gain)
        offset, offset_attr = self._scale("offset", offset)
        self._r = _seqstore._WindowReader(store, fi, li, int(window), int(overlap), int(lanes),
                                          int(state_size), sd, _MODES[mode], int(seed),
                                          bool(shuffle), flags, od, vec(gain), vec(offset), ex,
                                          int(threads), gain_attr, offset_attr,
                                          int(max_pending), int(epoch_windows), init, tspecs,
                                          int(prefetch))

    @staticmethod
    def _scale(what, v):
        """gain/offset: numbers per channel, or the name of a store attribute
        holding them (e.g. "signal.gain", as `seqstore convert edf` writes)
        -> (numbers or None, attribute name or None)."""
        if isinstance(v, str):
            return None, v
        if isinstance(v, (bytes, bytearray)):
            raise TypeError("%s is numbers per channel or an attribute name (str), not %r"
                            % (what, v))
        return v, None

    @staticmethod
    def _index(names, name, what):
        if not isinstance(name, str):
            raise TypeError("%s is a field name (str), not %r" % (what, name))
        if name not in names:
            raise KeyError("%s '%s' is not a field of the store (fields: %s)" % (what, name, names))
        return names.index(name)

    def __iter__(self) -> WindowReader:
        return self

    def __next__(self) -> WindowBatch:
        return WindowBatch(next(self._r), self._torch)

    def register(self, batch: WindowBatch, final_states: Any = None) -> None:
        """Hand back the final hidden states [B, H] of `batch` (a NumPy array or
        a torch tensor, detached here); None when no state is carried."""
        if not isinstance(batch, WindowBatch):
            raise TypeError("register takes a WindowBatch from this reader")
        states = None
        if final_states is not None:
            if hasattr(final_states, "detach"):  # a torch tensor
                final_states = final_states.detach().cpu().numpy()
            states = np.ascontiguousarray(final_states, self._state_np)
        self._r._register(batch.id, states)

    def set_epoch(self, epoch: int) -> None:
        if isinstance(epoch, bool) or not isinstance(epoch, numbers.Integral):
            raise TypeError("epoch is an int, not %r" % (epoch,))
        if not 0 <= epoch < 2**64:
            raise ValueError("epoch must be in [0, 2**64), not %d" % epoch)
        self._r.set_epoch(int(epoch))

    def info(self) -> Dict[str, Any]:
        return self._r.info()

    def state_dict(self) -> Dict[str, Any]:
        """Position, lanes, random streams and every sequence's hidden state."""
        return {"seqstore_window_reader": self._r._save()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if not isinstance(state, dict) or "seqstore_window_reader" not in state:
            raise ValueError("not a seqstore WindowReader state_dict")
        self._r._restore(state["seqstore_window_reader"])

    def close(self) -> None:
        self._r.close()

    def __enter__(self) -> WindowReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __reduce__(self):
        raise TypeError("a WindowReader cannot be pickled; pickle its Store and state_dict()")
