# SPDX-License-Identifier: BSD-2-Clause
"""What the peer benchmark's scripts share: timing, load, RSS, padding."""
import json
import os
import resource
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SEQSTORE = os.environ.get("SEQSTORE", os.path.join(ROOT, "build", "seqstore"))
BATCH = 64


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def rss_mb():
    """Peak RSS of this process and of its largest waited-for child (MB)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return round(own, 1), round(kids, 1)


class Clock:
    """Wall and CPU seconds (this process and its waited-for children)."""

    def __enter__(self):
        self.w, self.c = time.perf_counter(), self._cpu()
        return self

    @staticmethod
    def _cpu():
        s, k = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return s.ru_utime + s.ru_stime + k.ru_utime + k.ru_stime

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.w
        self.cpu = self._cpu() - self.c


def emit(**kw):
    """One result line on stdout for the driver (JSON), with RSS and load."""
    kw.setdefault("rss_mb", rss_mb()[0])
    kw.setdefault("child_rss_mb", rss_mb()[1])
    kw["load"] = loadavg()
    print("RESULT " + json.dumps(kw), flush=True)


def docs(path):
    """The documents of a corpus's JSONL as uint16 arrays (the peers' writers'
    input: each parses the same file the same way)."""
    loads = json.loads
    with open(path, "rb") as f:
        for line in f:
            yield np.array(loads(line)["tokens"], dtype=np.uint16)


def pad64(seqs, pad=0):
    """[B, T_max] int64 from a list of 1-D integer arrays or tensors: the
    collate_fn every peer's DataLoader gets (torch's pad_sequence)."""
    import torch
    from torch.nn.utils.rnn import pad_sequence
    ts = [s if isinstance(s, torch.Tensor) else torch.from_numpy(np.asarray(s)) for s in seqs]
    return pad_sequence([t.to(torch.int64) for t in ts], batch_first=True, padding_value=pad)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def torchvision_shim():
    """Let `import streaming` work with torch 2.13's CPU build. streaming
    imports torchvision (for its image datasets only); PyPI's torchvision is
    a CUDA build whose compiled ops cannot load without CUDA torch
    (make-venv.sh removes them), and torchvision then fails on import at its
    two unguarded fake-kernel registrations (nms, qnms) of ops never loaded.
    Declaring those two schemas lets the import finish; nothing here calls
    them."""
    import torch
    if hasattr(torch.ops, "torchvision") and hasattr(torch.ops.torchvision, "nms"):
        return
    lib = torch.library.Library("torchvision", "DEF")
    lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    torchvision_shim.lib = lib  # the definitions live as long as the Library
