# SPDX-License-Identifier: BSD-2-Clause
"""Loader(pin_memory=, device=): the hand-off to torch. This machine has no
CUDA device: the CPU paths and the refusals are tested here; the CUDA path
(pinned staging, side-stream copy) runs only where torch.cuda is available."""
import warnings

import numpy as np
import pytest

import seqstore

torch = pytest.importorskip("torch")

FIELDS = {"tokens": {"dtype": "i64", "pad": 0, "mask": "u8"}, "label": None}


def batches(store, **kw):
    return list(seqstore.Loader(store, batch_size=8, shuffle=True, seed=3, fields=FIELDS, **kw))


def same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert set(x) == set(y)
        for k in x:
            assert torch.equal(x[k].cpu(), y[k].cpu()), k


def test_device_cpu_gives_the_torch_batches(store):
    want = batches(store, torch=True)
    got = batches(store, device="cpu")
    same(got, want)
    assert all(t.device.type == "cpu" for b in got for t in b.values())
    same(batches(store, device=torch.device("cpu")), want)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the fallback without CUDA")
def test_pin_memory_without_cuda_warns_and_does_not_pin(store):
    want = batches(store, torch=True)
    with pytest.warns(UserWarning, match=r"pin_memory=True\): no CUDA device"):
        got = batches(store, pin_memory=True)
    same(got, want)  # torch's DataLoader also warns and hands out unpinned tensors
    with pytest.raises(RuntimeError, match="torch.cuda.is_available"):
        seqstore.Loader(store, batch_size=8, fields=FIELDS, device="cuda")


def test_device_misuse(store):
    with pytest.raises(ValueError, match="'cpu' or 'cuda'"):
        seqstore.Loader(store, batch_size=8, fields=FIELDS, device="meta")
    with pytest.raises(RuntimeError):
        seqstore.Loader(store, batch_size=8, fields=FIELDS, device="no-such-device")
    buf = np.zeros(1 << 12, np.int64)
    with pytest.raises(ValueError, match="out= and pin_memory"):
        seqstore.Loader(store, batch_size=8, fields=FIELDS, out={"tokens": buf}, device="cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_batches_are_the_cpu_batches(store):
    want = batches(store, torch=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = batches(store, device="cuda", pin_memory=True)
    assert all(t.is_cuda for b in got for t in b.values())
    same(got, want)
    pinned = batches(store, pin_memory=True)
    assert all(t.is_pinned() for b in pinned for t in b.values())
    same(pinned, want)
