# SPDX-License-Identifier: BSD-2-Clause
"""seqstore.torch: datasets with torch's DataLoader (0 and 2 workers, fork and
spawn), sharding, pickling by path."""
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import seqstore  # noqa: E402
import seqstore.torch as sst  # noqa: E402


def test_dataset_values(store_path, examples):
    ds = sst.Dataset(store_path)
    assert len(ds) == len(examples)
    ex = ds[5]
    assert ex["tokens"].dtype == torch.int64  # u16 widened
    assert ex["tokens"].tolist() == examples[5]["tokens"].tolist()
    assert ex["label"].dim() == 0 and int(ex["label"]) == int(examples[5]["label"])
    assert torch.equal(ex["feat"], torch.from_numpy(examples[5]["feat"]))
    ex["feat"].add_(1)  # owns its memory
    assert torch.equal(ds[5]["feat"], torch.from_numpy(examples[5]["feat"]))
    assert ds[-1]["label"] == int(examples[-1]["label"])
    with pytest.raises(IndexError):
        ds[len(examples)]
    with pytest.raises(TypeError):
        ds[1.0]
    with pytest.raises(KeyError):
        sst.Dataset(store_path, fields=["nope"])
    with pytest.raises(TypeError):
        sst.Dataset(store_path, fields="tokens")
    with pytest.raises(seqstore.NotFoundError):
        sst.Dataset(store_path + ".missing")


def test_pickles_by_path(store_path):
    ds = sst.Dataset(store_path, fields=["tokens"])
    ds[0]  # opened in this process
    data = pickle.dumps(ds)
    assert len(data) < 1000
    again = pickle.loads(data)
    assert again[3]["tokens"].tolist() == ds[3]["tokens"].tolist()


def test_bf16_field(tmp_path):
    p = str(tmp_path / "bf.ss")
    with seqstore.create(p, [("x", "bf16")]) as w:
        w.append({"x": np.array([0x3F80, 0xC000], np.uint16)})
    assert sst.Dataset(p)[0]["x"].tolist() == [1.0, -2.0]


def _epoch_indices(ds, workers, ctx):
    dl = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=workers,
                                     multiprocessing_context=ctx if workers else None,
                                     collate_fn=sst.pad_collate)
    got = []
    for b in dl:
        got.extend(b["label"].tolist())
    return got


@pytest.mark.parametrize("workers,ctx", [(0, None), (2, "fork"), (2, "spawn")])
def test_dataloader_map_style(store_path, examples, workers, ctx):
    ds = sst.Dataset(store_path, fields=["tokens", "label"])
    ds[0]  # the parent has it open before forking
    dl = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True, num_workers=workers,
                                     multiprocessing_context=ctx if workers else None,
                                     collate_fn=sst.pad_collate,
                                     generator=torch.Generator().manual_seed(0))
    labels = []
    for b in dl:
        for k, lab in enumerate(b["label"].tolist()):
            i = (lab + 100) // 7
            n = int(b["tokens_lengths"][k])
            assert b["tokens"][k, :n].tolist() == examples[i]["tokens"].tolist()
            assert not b["tokens"][k, n:].any()
        labels.extend(b["label"].tolist())
    assert sorted(labels) == sorted(int(e["label"]) for e in examples)
    ds[1]  # still usable in the parent


@pytest.mark.parametrize("workers,ctx", [(0, None), (2, "fork"), (2, "spawn")])
def test_dataloader_iterable_shards_workers(store_path, examples, workers, ctx):
    ds = sst.IterableDataset(store_path, fields=["label"], shuffle=True, seed=4)
    got = _epoch_indices(ds, workers, ctx)
    assert sorted(got) == sorted(int(e["label"]) for e in examples)  # each exactly once
    ds.set_epoch(1)
    assert sorted(_epoch_indices(ds, workers, ctx)) == sorted(got)


def test_iterable_ranks_partition(store_path, examples):
    parts = [list(sst.IterableDataset(store_path, shuffle=True, seed=2, rank=r, world_size=3,
                                      remainder="include").order()) for r in range(3)]
    flat = sum(parts, [])
    assert sorted(flat) == list(range(len(examples)))
    # the default pads 50 examples to 51, as DistributedSampler: 17 each
    padded = [list(sst.IterableDataset(store_path, shuffle=True, seed=2, rank=r,
                                       world_size=3).order()) for r in range(3)]
    assert [len(p) for p in padded] == [17, 17, 17]
    assert sorted(set(sum(padded, []))) == list(range(len(examples)))
    with pytest.raises(ValueError):
        sst.IterableDataset(store_path, rank=3, world_size=3)
    with pytest.raises(ValueError):
        sst.IterableDataset(store_path, rank=0)
    # bad seed or epoch: refused when given, not at the first iteration in a worker
    for bad in (-1, 2**64, 1.5, True):
        with pytest.raises((TypeError, ValueError), match="seed"):
            sst.IterableDataset(store_path, shuffle=True, seed=bad)
        with pytest.raises((TypeError, ValueError), match="epoch"):
            sst.IterableDataset(store_path).set_epoch(bad)


@pytest.mark.parametrize("workers,ctx", [(0, None), (2, "fork"), (2, "spawn")])
def test_c_collate_fn(store_path, examples, workers, ctx):
    ds = sst.IndexDataset(store_path)
    fn = sst.Collate(store_path, fields={"tokens": {"dtype": "i64", "pad": 0}, "label": None})
    dl = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True, num_workers=workers,
                                     multiprocessing_context=ctx if workers else None,
                                     collate_fn=fn)
    seen = []
    for b in dl:
        assert b["tokens"].dtype == torch.int64  # widened in C
        for k, lab in enumerate(b["label"].tolist()):
            i = (lab + 100) // 7
            n = int(b["tokens_lengths"][k])
            assert b["tokens"][k, :n].tolist() == examples[i]["tokens"].tolist()
            seen.append(i)
    assert sorted(seen) == list(range(len(examples)))


def test_c_collate_fn_refuses_unsigned_outputs(store_path):
    with pytest.raises(ValueError, match="u16"):
        sst.Collate(store_path, fields=["tokens"])
    with pytest.raises(KeyError):
        sst.Collate(store_path, fields=["nope"])
    with pytest.raises(IndexError):
        sst.IndexDataset(store_path)[10**6]


def test_dataset_widens_unsigned_and_refuses_overflow(tmp_path):
    p = str(tmp_path / "u.ss")
    with seqstore.create(p, [("a", "u32"), ("b", "u64"), ("c", "u8")]) as w:
        w.append({"a": np.array([0, 2**32 - 1], np.uint32), "b": np.array([2**63 - 1], np.uint64),
                  "c": np.array([255, 1], np.uint8)})
        w.append({"a": np.array([], np.uint32), "b": np.array([1, 2**63], np.uint64),
                  "c": np.array([], np.uint8)})
    ds = sst.Dataset(p)
    ex = ds[0]
    assert ex["a"].dtype == ex["b"].dtype == torch.int64 and ex["c"].dtype == torch.uint8
    assert ex["a"].tolist() == [0, 2**32 - 1] and ex["b"].tolist() == [2**63 - 1]
    assert ex["c"].tolist() == [255, 1] and int(ex["index"]) == 0
    with pytest.raises(OverflowError, match="9223372036854775808"):
        ds[1]
    assert sst.Dataset(p, fields=["a", "c"])[-1]["a"].tolist() == []
    assert int(sst.Dataset(p, fields=["c"])[np.int64(-1)]["index"]) == 1
