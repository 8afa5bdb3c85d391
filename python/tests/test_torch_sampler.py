# SPDX-License-Identifier: BSD-2-Clause
"""seqstore.torch.BatchSampler: the C batchers (fixed size, token budget,
buckets) as a torch batch sampler. Its batches must be exactly those of
seqstore.Loader for the same options and seed, through torch's DataLoader
with 0 and 2 workers, on every rank of a world of 2."""
import os
import pickle
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import seqstore  # noqa: E402
import seqstore.torch as sst  # noqa: E402

FIELDS = {"tokens": {"dtype": "i64", "pad": 0}}


@pytest.fixture
def bucketed(store_path):
    cli = os.environ.get("SEQSTORE_CLI")
    if not cli:
        pytest.skip("SEQSTORE_CLI not set")
    subprocess.run([cli, "index", store_path, "--by", "tokens", "--resolution", "4",
                    "--name", "len"], check=True, capture_output=True)
    return store_path


CONFIGS = [dict(batch_size=6, shuffle=True, seed=4),
           dict(batch_size=6, drop_last=True),
           dict(max_tokens=96, shuffle=True, seed=5),
           dict(max_tokens=96, bucket="len", shuffle=True, seed=6)]


def loader_batches(path, epoch, **opts):
    """The C loader's batches of `epoch`: (index lists, padded tokens)."""
    with seqstore.open(path) as s:
        ld = seqstore.Loader(s, fields=FIELDS, **opts)
        ld.set_epoch(epoch)
        out = [(b["index"].tolist(), b["tokens"]) for b in ld]
        ld.close()
    return out


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("cfg", range(len(CONFIGS)))
def test_dataloader_batches_equal_the_c_loader(bucketed, examples, cfg, workers):
    path, opts = bucketed, CONFIGS[cfg]
    for rank in range(2):
        sampler = sst.BatchSampler(path, rank=rank, world_size=2, fields=["tokens"], **opts)
        dl = torch.utils.data.DataLoader(
            sst.IndexDataset(path), batch_sampler=sampler, num_workers=workers,
            collate_fn=sst.Collate(path, fields=FIELDS))
        for epoch in range(2):  # each pass goes on to the next epoch
            want = loader_batches(path, epoch, rank=rank, world_size=2, **opts)
            assert len(sampler) == len(want)
            got = list(dl)
            assert len(got) == len(want) and len(got) > 0
            for b, (idx, tokens) in zip(got, want):
                np.testing.assert_array_equal(b["tokens"].numpy(), tokens)
            assert [len(b["tokens"]) for b in got] == [len(i) for i, _ in want]
        # the index lists themselves, without the DataLoader
        sampler.set_epoch(1)
        assert list(sampler) == [i for i, _ in loader_batches(path, 1, rank=rank, world_size=2,
                                                               **opts)]


def test_ranks_partition_a_fold(store_path, examples):
    train, _ = seqstore.open(store_path).kfold(3, 0, shuffle=True, seed=1)
    got, batches = [], []
    for rank in range(2):
        s = sst.BatchSampler(store_path, max_tokens=80, shuffle=True, seed=2, rank=rank,
                             world_size=2, fields=["tokens"], examples=train)
        batches.append([list(b) for b in s])
        got += [i for b in batches[-1] for i in b]
    assert sorted(set(got)) == sorted(train.tolist())
    # An odd number of global batches pads the last round with global batch 0
    # (rank 0's first): the only examples seen twice.
    extra = len(got) - len(train)
    if extra:
        assert len(batches[1]) == len(batches[0]) and batches[1][-1] == batches[0][0]
        assert extra == len(batches[0][0])


def test_pickles_by_path_and_len_during_a_pass(store_path):
    s = sst.BatchSampler(store_path, batch_size=4, shuffle=True, seed=3, rank=0, world_size=1)
    it = iter(s)
    first = next(it)
    n = len(s)  # counted aside: the pass goes on undisturbed
    rest = list(it)
    assert len(rest) + 1 == n
    t = pickle.loads(pickle.dumps(s))
    assert len(pickle.dumps(s)) < 2000
    t.set_epoch(0)
    assert list(t) == [first] + rest


def test_bad_arguments(store_path):
    with pytest.raises(ValueError):
        sst.BatchSampler(store_path, batch_size=4, rank=0)
    with pytest.raises(ValueError):
        sst.BatchSampler(store_path)  # neither batch_size nor max_tokens
    with pytest.raises(KeyError):
        sst.BatchSampler(store_path, batch_size=4, fields=["nope"])
    with pytest.raises(seqstore.NotFoundError):
        sst.BatchSampler(store_path, max_tokens=64, bucket="nope", fields=["tokens"])
    with pytest.raises(ValueError):
        sst.BatchSampler(store_path, batch_size=4).set_epoch(-1)


def test_spawn_workers(bucketed, examples):
    # spawn pickles the dataset and collate_fn into fresh interpreters; the
    # sampler stays in the parent. Batches equal the C loader's.
    opts = CONFIGS[3]
    sampler = sst.BatchSampler(bucketed, rank=1, world_size=2, fields=["tokens"], **opts)
    dl = torch.utils.data.DataLoader(
        sst.IndexDataset(bucketed), batch_sampler=sampler, num_workers=2,
        multiprocessing_context="spawn", collate_fn=sst.Collate(bucketed, fields=FIELDS))
    want = loader_batches(bucketed, 0, rank=1, world_size=2, **opts)
    got = list(dl)
    assert len(got) == len(want) > 0
    for b, (idx, tokens) in zip(got, want):
        np.testing.assert_array_equal(b["tokens"].numpy(), tokens)


def test_batches_written_once_into_a_reused_caller_tensor(bucketed):
    # the write-once path for pinned memory: the C batcher plans, the C
    # collator writes each batch straight into the caller's (here unpinned:
    # no CUDA) tensor, which is reused for every batch
    opts = CONFIGS[3]
    want = loader_batches(bucketed, 0, rank=0, world_size=1, **opts)
    sampler = sst.BatchSampler(bucketed, rank=0, world_size=1, fields=["tokens"], **opts)
    buf = torch.empty(96 * 4, dtype=torch.int64)  # max_tokens=96 padded tokens, with room
    with seqstore.open(bucketed) as s:
        c = seqstore.Collator(s, FIELDS)
        n = 0
        for idx, (widx, tokens) in zip(sampler, want):
            b = c.collate(idx, out={"tokens": buf})
            assert b["tokens"].data_ptr() == buf.data_ptr() and idx == widx
            np.testing.assert_array_equal(b["tokens"].numpy(), tokens)
            n += 1
        assert n == len(want) > 0
