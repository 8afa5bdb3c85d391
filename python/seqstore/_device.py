# SPDX-License-Identifier: BSD-2-Clause
"""Loader(pin_memory=, device=): batches handed to torch in pinned memory,
or copied to a CUDA device on a side stream so that they are ready (for the
current stream) when handed out."""
from __future__ import annotations

import warnings
from typing import Any, Dict, List, Optional

import numpy as np


class _Slot:
    """Pinned staging buffers of one batch in flight, and the event after
    their copy to the device (they are reused once it has passed)."""

    __slots__ = ("bufs", "event")

    def __init__(self) -> None:
        self.bufs: Dict[str, Any] = {}
        self.event: Any = None


class Handoff:
    """NumPy batch -> torch tensors: plain, pinned (pin_memory=True), or on a
    CUDA device (device="cuda[:k]"): collated data is copied into a ring of
    pinned staging buffers, then to the device with non_blocking=True on a
    side stream; the current stream waits for that copy (wait_stream) and
    the tensors are recorded on it (record_stream), so the caller uses them
    as any tensor of its stream."""

    RING = 2  # staging sets: one copying while the next batch is staged

    def __init__(self, torch: Any, pin_memory: bool, device: Any) -> None:
        self.torch = torch
        dev = None if device is None else torch.device(device)
        if dev is not None and dev.type not in ("cpu", "cuda"):
            raise ValueError("device is 'cpu' or 'cuda' (a torch.device of them), not %r"
                             % (device,))
        cuda_ok = torch.cuda.is_available()
        if dev is not None and dev.type == "cuda" and not cuda_ok:
            raise RuntimeError("device=%r, but torch.cuda.is_available() is False (a CPU "
                               "build of torch, or no GPU visible)" % (device,))
        if pin_memory and not cuda_ok:
            # torch's DataLoader does the same: warn, and hand out unpinned tensors
            warnings.warn("Loader(pin_memory=True): no CUDA device is available, so batches "
                          "are not pinned", UserWarning, stacklevel=3)
        self.cuda = dev if dev is not None and dev.type == "cuda" else None
        self.pin = bool(pin_memory) and cuda_ok and self.cuda is None
        if self.cuda is not None:
            if self.cuda.index is None:
                self.cuda = torch.device("cuda", torch.cuda.current_device())
            self.stream = torch.cuda.Stream(device=self.cuda)
            self.ring: List[_Slot] = [_Slot() for _ in range(self.RING)]
            self.k = 0

    @property
    def copies(self) -> bool:
        """True when every batch is copied out here (the C loader may then
        hand out views of its buffers)."""
        return self.pin or self.cuda is not None

    def __call__(self, batch: Dict[str, np.ndarray]) -> Dict[str, Any]:
        torch = self.torch
        if self.cuda is None:
            out = {k: torch.from_numpy(v) for k, v in batch.items()}
            return {k: t.pin_memory() for k, t in out.items()} if self.pin else out
        slot = self.ring[self.k % self.RING]
        self.k += 1
        if slot.event is not None:
            slot.event.synchronize()  # the copy that read these buffers is over
        out = {}
        with torch.cuda.stream(self.stream):
            for k, a in batch.items():
                src = torch.from_numpy(np.ascontiguousarray(a))
                buf = slot.bufs.get(k)
                if buf is None or buf.dtype != src.dtype or buf.numel() < src.numel():
                    buf = torch.empty(max(src.numel(), 1), dtype=src.dtype, pin_memory=True)
                    slot.bufs[k] = buf
                host = buf[:src.numel()].view(src.shape)
                host.copy_(src)
                out[k] = host.to(self.cuda, non_blocking=True)
            slot.event = torch.cuda.Event()
            slot.event.record(self.stream)
        current = torch.cuda.current_stream(self.cuda)
        current.wait_stream(self.stream)  # ready for the caller's stream
        for t in out.values():
            t.record_stream(current)  # allocated on the side stream, used on this one
        return out
