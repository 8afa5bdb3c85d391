# SPDX-License-Identifier: BSD-2-Clause
"""Elastic resume: a state saved with R ranks continues with R' ranks (and
other worker counts) when the global batch R * batch_size is unchanged,
in the same global order as the uninterrupted run; a resume that cannot be
exact is refused, saying why."""
import numpy as np
import pytest

import seqstore
from conftest import _write

N = 300  # 300 = 18 * 16 + 12: the last global step of 16 is padded


@pytest.fixture
def path(tmp_path):
    p = str(tmp_path / "elastic.ss")
    _write(p, [("label", "i64", (), False), ("tokens", "u16")],
           ({"label": np.int64(i), "tokens": np.arange(i % 13 + 1, dtype=np.uint16)}
            for i in range(N)))
    return p


def global_order(rank_batches, world, start=0):
    """Global positions from each rank's batches (rank r's j-th example of
    step k is position k * B + r + world * j, see sampler.h)."""
    out = {}
    for r, batches in enumerate(rank_batches):
        for k, b in enumerate(batches, start):
            for j, i in enumerate(b):
                out[k * world * len(b) + r + world * j] = int(i)
    return [out[p] for p in sorted(out)], min(out)


def loader(store, world, rank, **kw):
    # remainder given: its default depends on world_size ("include" for one rank)
    return seqstore.Loader(store, batch_size=16 // world, shuffle=True, seed=4, rank=rank,
                           world_size=world, fields=["label"], remainder="pad", **kw)


def test_loader_resumes_with_other_ranks(path):
    with seqstore.open(path) as s:
        full = []
        for r in range(2):
            ld = loader(s, 2, r)
            ld.set_epoch(1)
            full.append([b["index"].tolist() for b in ld])
        ref, _ = global_order(full, 2)
        assert len(ref) == 19 * 16 and sorted(set(ref)) == list(range(N))
        ld = loader(s, 2, 0)
        ld.set_epoch(1)
        it = iter(ld)
        for _ in range(5):
            next(it)
        state = ld.state_dict()
        for world in (1, 2, 4, 8):
            parts = []
            for r in range(world):
                again = loader(s, world, r)
                again.load_state_dict(state)
                assert again.epoch == 1 and again.position == 5
                parts.append([b["index"].tolist() for b in again])
            got, first = global_order(parts, world, start=5)
            assert first == 5 * 16 and got == ref[5 * 16:], world
        # refused, with the reason: another global batch
        other = seqstore.Loader(s, batch_size=8, shuffle=True, seed=4, rank=0, world_size=3,
                                fields=["label"], remainder="pad")
        with pytest.raises(ValueError, match=r"world_size \* batch_size"):
            other.load_state_dict(state)
        assert other.position == 0


def test_token_budget_resume_needs_a_split_the_new_ranks_can_share(path):
    with seqstore.open(path) as s:
        kw = dict(max_tokens=40, shuffle=True, seed=2, fields=["tokens"])
        ld = seqstore.Loader(s, rank=0, world_size=2, **kw)
        it = iter(ld)
        for _ in range(3):
            next(it)
        state = ld.state_dict()  # 6 global batches out: fine for 3 ranks, not 4
        seqstore.Loader(s, rank=2, world_size=3, **kw).load_state_dict(state)
        with pytest.raises(ValueError, match="cannot split evenly"):
            seqstore.Loader(s, rank=0, world_size=4, **kw).load_state_dict(state)


torch = pytest.importorskip("torch")
import seqstore.torch as sst  # noqa: E402


def sampler(path, world, rank):
    return sst.BatchSampler(path, batch_size=16 // world, shuffle=True, seed=4, rank=rank,
                            world_size=world, remainder="pad")


def test_batch_sampler_resumes_with_other_ranks(path):
    ref, _ = global_order([list(sampler(path, 2, r)) for r in range(2)], 2)
    s = sampler(path, 2, 1)
    it = iter(s)
    for _ in range(7):
        next(it)
    state = s.state_dict()
    for world in (1, 4):
        parts = []
        for r in range(world):
            again = sampler(path, world, r)
            again.load_state_dict(state)
            parts.append(list(again))
        got, first = global_order(parts, world, start=7)
        assert first == 7 * 16 and got == ref[7 * 16:]


def test_stateful_dataloader_resumes_with_other_ranks(path):
    sdl = pytest.importorskip("torchdata.stateful_dataloader")

    def dl(world, rank):
        return sdl.StatefulDataLoader(sst.IndexDataset(path), batch_sampler=sampler(path, world, rank),
                                      collate_fn=sst.Collate(path, fields=["label"]),
                                      num_workers=2, multiprocessing_context="fork")
    ref, _ = global_order([[b["label"].tolist() for b in dl(2, r)] for r in range(2)], 2)
    d = dl(2, 0)
    it = iter(d)
    for _ in range(4):
        next(it)
    state = d.state_dict()
    del it
    parts = []
    for r in range(4):
        again = dl(4, r)
        again.load_state_dict(state)
        parts.append([b["label"].tolist() for b in again])
    got, first = global_order(parts, 4, start=4)
    assert first == 4 * 16 and got == ref[4 * 16:]


def test_iterable_dataset_resumes_with_other_ranks(path):
    def ds(world, rank):
        return sst.IterableDataset(path, fields=["label"], shuffle=True, seed=3, rank=rank,
                                   world_size=world)
    # example k of the global order goes to rank k % world
    ref = [int(e["index"]) for e in ds(1, 0)]
    d = ds(4, 1)
    it = iter(d)
    for _ in range(9):
        next(it)
    state = d.state_dict()  # 36 examples of the global order out
    for world in (2, 3, 6):
        parts = []
        for r in range(world):
            again = ds(world, r)
            again.load_state_dict(state)
            parts.append([int(e["index"]) for e in again])
        got = [parts[k % world][k // world] for k in range(N - 36)]
        assert got == ref[36:], world
    with pytest.raises(ValueError, match="not a multiple of 5"):
        ds(5, 0).load_state_dict(state)
    state["split"] = [1, 4, 2]  # a DataLoader worker's: refused
    with pytest.raises(ValueError, match="worker's position"):
        ds(2, 0).load_state_dict(state)
