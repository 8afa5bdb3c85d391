# SPDX-License-Identifier: BSD-2-Clause
"""What a PyTorch training loop relies on: equal batch counts on every rank
(a real 2-rank DDP loop over gloo), set_epoch() reaching persistent workers,
a fresh pass at each iter(), the store index in every example and batch."""
import os
import re
import socket
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import seqstore  # noqa: E402
import seqstore.torch as sst  # noqa: E402

N, BS = 641, 32  # 2 * 32 * 10 + 1: one example left over for 2 ranks


@pytest.fixture
def uneven(tmp_path):
    """N examples: label i, a short token run; 641 = 2*32*10 + 1."""
    path = str(tmp_path / "uneven.ss")
    with seqstore.create(path, [("label", "i64", (), False), ("tokens", "i32")]) as w:
        for i in range(N):
            w.append({"label": np.int64(i), "tokens": np.arange(i % 7 + 1, dtype=np.int32)})
    return path


def counts_loader(path, **kw):
    with seqstore.open(path) as s:
        return [len(list(seqstore.Loader(s, batch_size=BS, rank=r, world_size=2, **kw)))
                for r in range(2)]


def counts_sampler(path, **kw):
    return [len(list(sst.BatchSampler(path, batch_size=BS, rank=r, world_size=2, **kw)))
            for r in range(2)]


def counts_iterable(path, workers=0, **kw):
    out = []
    for r in range(2):
        ds = sst.IterableDataset(path, fields=["label"], rank=r, world_size=2, **kw)
        dl = torch.utils.data.DataLoader(ds, batch_size=BS, num_workers=workers)
        out.append(len(list(dl)))
    return out


def test_ranks_get_equal_batch_counts_by_default(uneven):
    # torch's DistributedSampler + DataLoader(batch_size=32) gives [11, 11]
    assert counts_loader(uneven) == [11, 11]
    assert counts_sampler(uneven) == [11, 11]
    assert counts_iterable(uneven) == [11, 11]
    assert counts_iterable(uneven, workers=2) == [11, 11]


def test_remainder_policies(uneven):
    assert counts_loader(uneven, remainder="include") == [11, 10]
    assert counts_loader(uneven, remainder="skip") == [10, 10]
    assert counts_loader(uneven, drop_last=True) == [10, 10]
    assert counts_sampler(uneven, remainder="include") == [11, 10]
    assert counts_sampler(uneven, remainder="skip") == [10, 10]
    assert counts_iterable(uneven, remainder="include") == [11, 10]
    assert counts_iterable(uneven, remainder="skip") == [10, 10]
    with pytest.raises(ValueError, match="divisible"):
        counts_loader(uneven, remainder="divisible")
    with pytest.raises(ValueError, match="divisible"):
        counts_iterable(uneven, remainder="divisible")
    with pytest.raises(ValueError, match="remainder"):
        counts_loader(uneven, remainder="round")
    with pytest.raises(ValueError, match="skip"):
        counts_loader(uneven, remainder="pad", drop_last=True)
    # pad: every batch full, the padding repeats the epoch's order from its start
    with seqstore.open(uneven) as s:
        seen = []
        for r in range(2):
            bs = [b["index"].tolist() for b in seqstore.Loader(s, batch_size=BS, rank=r,
                                                               world_size=2)]
            assert all(len(b) == BS for b in bs)
            seen += [i for b in bs for i in b]
        assert sorted(set(seen)) == list(range(N)) and len(seen) == 2 * 11 * BS
        # one rank: the default keeps the smaller last batch, as a DataLoader does
        one = [len(b["index"]) for b in seqstore.Loader(s, batch_size=BS)]
        assert one == [BS] * 20 + [1]
        # a token budget deals whole batches round-robin: equal, wrapped around
        tb = [len(list(seqstore.Loader(s, max_tokens=40, fields=["tokens"], rank=r,
                                       world_size=3))) for r in range(3)]
        assert len(set(tb)) == 1
    # IterableDataset pads to a multiple of world_size, as DistributedSampler
    for r in range(2):
        ds = sst.IterableDataset(uneven, fields=["label"], rank=r, world_size=2)
        assert len(ds) == 321 == len(list(ds))


DDP_SCRIPT = r"""
import datetime, sys
import torch, torch.distributed as dist
import seqstore, seqstore.torch as sst
path, rank, port = sys.argv[1], int(sys.argv[2]), sys.argv[3]
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + port, rank=rank, world_size=2,
                        timeout=datetime.timedelta(seconds=15))
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
for kind in ("loader", "sampler", "iterable"):  # each with its defaults: no remainder given
    if kind == "loader":
        batches = seqstore.Loader(seqstore.open(path), batch_size=32, fields=["label"],
                                  torch=True, rank=rank, world_size=2)
    elif kind == "sampler":
        batches = torch.utils.data.DataLoader(
            sst.IndexDataset(path), batch_sampler=sst.BatchSampler(path, batch_size=32),
            collate_fn=sst.Collate(path, fields=["label"]))
    else:
        batches = torch.utils.data.DataLoader(sst.IterableDataset(path, fields=["label"]),
                                              batch_size=32)
    steps = 0
    for b in batches:
        x = b["label"].float().unsqueeze(1)
        model(x).sum().backward()  # gradients all-reduced: every rank must take this step
        steps += 1
    print(kind, steps, flush=True)
dist.destroy_process_group()
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


@pytest.mark.skipif(not torch.distributed.is_available(), reason="no torch.distributed")
def test_ddp_gloo_two_ranks_do_not_hang(uneven, tmp_path):
    # a real DDP loop on 2 ranks (gloo over 127.0.0.1) through Loader,
    # BatchSampler and IterableDataset: with [11, 10] batches rank 0's 11th
    # backward() waits for rank 1 until the 15 s timeout
    script = tmp_path / "ddp.py"
    script.write_text(DDP_SCRIPT)
    port = free_port()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, str(script), uneven, str(r), port],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for r in range(2)]
    outs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        outs.append((p.returncode, out, err[-2000:]))
    for rc, out, err in outs:
        assert out.split() == ["loader", "11", "sampler", "11", "iterable", "11"], (out, err)
        assert rc == 0, err


def _epoch_labels(dl):
    return [i for b in dl for i in b["label"].tolist()]


@pytest.mark.parametrize("ctx", ["fork", "spawn"])
def test_set_epoch_reaches_persistent_workers(uneven, ctx):
    ds = sst.IterableDataset(uneven, fields=["label"], shuffle=True, seed=7)
    dl = torch.utils.data.DataLoader(ds, batch_size=BS, num_workers=2, persistent_workers=True,
                                     multiprocessing_context=ctx)
    e0 = _epoch_labels(dl)
    ds.set_epoch(1)
    e1 = _epoch_labels(dl)
    assert sorted(e0) == sorted(e1) == list(range(N))
    assert e0 != e1
    fresh = sst.IterableDataset(uneven, fields=["label"], shuffle=True, seed=7)
    fresh.set_epoch(1)
    assert e1 == _epoch_labels(torch.utils.data.DataLoader(fresh, batch_size=BS, num_workers=2,
                                                           multiprocessing_context=ctx))
    ds.set_epoch(0)
    assert _epoch_labels(dl) == e0


def test_loader_each_iter_is_a_pass(uneven):
    with seqstore.open(uneven) as s:
        ld = seqstore.Loader(s, batch_size=BS, fields=["label"], shuffle=True, seed=3)
        want = [b["index"].tolist() for b in seqstore.Loader(s, batch_size=BS, fields=["label"],
                                                             shuffle=True, seed=3)]
        peek = next(iter(ld))  # a peek loses nothing
        assert peek["index"].tolist() == want[0]
        assert [b["index"].tolist() for b in ld] == want
        assert ld.epoch == 0
        for k, b in enumerate(ld):  # the next loop: epoch 1
            if k == 2:
                break
        assert ld.epoch == 1
        e1 = [b["index"].tolist() for b in ld]  # after a break: epoch 1 from its start
        assert len(e1) == len(want) and e1 != want and ld.epoch == 1
        it = iter(ld)
        next(it)
        iter(ld)
        with pytest.raises(RuntimeError, match="iterated again"):
            next(it)
        ld.set_epoch(0)  # set_epoch: the next iter() starts there
        assert [b["index"].tolist() for b in ld] == want


def test_index_in_examples_and_batches(uneven, store_path, examples):
    ds = sst.Dataset(store_path, fields=["label"])
    assert int(ds[7]["index"]) == 7 and int(ds[-1]["index"]) == len(examples) - 1
    fn = sst.Collate(store_path, fields=["label"])
    b = fn([4, 17, 3])
    assert b["index"].tolist() == [4, 17, 3] and b["index"].dtype == torch.int64
    assert b["label"].tolist() == [int(examples[i]["label"]) for i in (4, 17, 3)]
    it = sst.IterableDataset(store_path, fields=["label"], shuffle=True, seed=1)
    for ex in it:
        assert int(ex["label"]) == int(examples[int(ex["index"])]["label"])
    dl = torch.utils.data.DataLoader(ds, batch_size=8, collate_fn=sst.pad_collate)
    assert next(iter(dl))["index"].tolist() == list(range(8))


def test_iterable_len_and_fold(uneven):
    fold = np.arange(0, N, 3)  # 214 examples
    ds = sst.IterableDataset(uneven, fields=["label"], shuffle=True, seed=2, examples=fold)
    assert len(ds) == len(fold)
    got = [int(e["label"]) for e in ds]
    assert sorted(got) == fold.tolist() and got != fold.tolist()
    dl = torch.utils.data.DataLoader(ds, batch_size=BS)
    assert len(dl) == 7 == len(list(dl))
    parts = []
    for r in range(3):
        d = sst.IterableDataset(uneven, fields=["label"], examples=fold, rank=r, world_size=3,
                                remainder="skip")
        parts.append([int(e["label"]) for e in d])
        assert len(d) == len(parts[-1]) == 71
    assert len(set(sum(parts, []))) == 213
    with pytest.raises(ValueError, match="examples"):
        sst.IterableDataset(uneven, examples=[N])


STATEFUL_SCRIPT = r"""
import pickle, sys
import torch
import seqstore.torch as sst
from torchdata.stateful_dataloader import StatefulDataLoader

def make(kind, path, workers):
    kw = dict(num_workers=workers, multiprocessing_context="fork" if workers else None)
    if kind == "iterable":
        ds = sst.IterableDataset(path, fields=["label"], shuffle=True, seed=5)
        return ds, StatefulDataLoader(ds, batch_size=32, **kw)
    if kind == "map":
        ds = sst.Dataset(path, fields=["label"])
        return ds, StatefulDataLoader(ds, batch_size=32, shuffle=True, collate_fn=sst.pad_collate,
                                      generator=torch.Generator().manual_seed(5), **kw)
    s = sst.BatchSampler(path, batch_size=32, shuffle=True, seed=5)
    return s, StatefulDataLoader(sst.IndexDataset(path), batch_sampler=s,
                                 collate_fn=sst.Collate(path, fields=["label"]), **kw)

def run(kind, path, workers, epoch, stop=None, state=None):
    obj, dl = make(kind, path, workers)
    if hasattr(obj, "set_epoch"):
        obj.set_epoch(epoch)
    if state is not None:
        dl.load_state_dict(state)
    if stop is None:
        return [b["index"].tolist() for b in dl], None
    it = iter(dl)
    got = [next(it)["index"].tolist() for _ in range(stop)]
    return got, dl.state_dict()

if __name__ == "__main__":
    jobs = pickle.load(open(sys.argv[1], "rb"))
    out = [run(kind, path, workers, 1, state=state)[0] for kind, path, workers, state in jobs]
    pickle.dump(out, open(sys.argv[2], "wb"))
"""


def test_stateful_dataloader_resumes_in_a_fresh_process(uneven, tmp_path):
    pytest.importorskip("torchdata.stateful_dataloader")
    script = tmp_path / "stateful.py"
    script.write_text(STATEFUL_SCRIPT)
    sys.path.insert(0, str(tmp_path))
    try:
        import stateful
    finally:
        sys.path.remove(str(tmp_path))
    jobs, wants = [], []
    for kind in ("iterable", "map", "sampler"):
        for workers in (0, 2):
            full, _ = stateful.run(kind, uneven, workers, 1)
            assert sorted(i for b in full for i in b) == list(range(N))
            for stop in (0, 1, 7, len(full)):
                got, state = stateful.run(kind, uneven, workers, 1, stop=stop)
                assert got == full[:stop]
                # restored from the dataset's or sampler's own state, not by
                # replaying (fast-forwarding) the batches
                mark = {"iterable": "'position': [1-9]", "map": "",
                        "sampler": "seqstore_loader"}[kind]
                assert re.search(mark, repr(state)) if stop and stop < len(full) else True
                jobs.append((kind, uneven, workers, state))
                wants.append(full[stop:])
    pickle_in, pickle_out = tmp_path / "jobs.pkl", tmp_path / "out.pkl"
    import pickle
    pickle_in.write_bytes(pickle.dumps(jobs))
    subprocess.run([sys.executable, str(script), str(pickle_in), str(pickle_out)], check=True,
                   timeout=300)
    got = pickle.loads(pickle_out.read_bytes())
    for job, g, w in zip(jobs, got, wants):
        assert g == w, job[0:3]


def test_state_is_small_and_cheap(uneven):
    import pickle
    import time
    ds = sst.IterableDataset(uneven, fields=["label"], shuffle=True, seed=5)
    it = iter(ds)
    for _ in range(40):
        next(it)
    s = sst.BatchSampler(uneven, batch_size=32, shuffle=True, seed=5)
    sit = iter(s)
    next(sit)
    for obj in (ds, s):
        state = obj.state_dict()
        assert len(pickle.dumps(state)) < 300
        t0 = time.perf_counter()
        for _ in range(1000):
            obj.state_dict()
        assert (time.perf_counter() - t0) / 1000 < 50e-6  # microseconds, not a list of indices
    again = sst.IterableDataset(uneven, fields=["label"], shuffle=True, seed=5)
    again.load_state_dict(ds.state_dict())
    assert [int(e["index"]) for e in again] == [int(e["index"]) for e in it]
    with pytest.raises(ValueError):
        again.load_state_dict({"position": 3})
    with pytest.raises(ValueError):
        s.load_state_dict([])
