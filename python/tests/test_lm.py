# SPDX-License-Identifier: BSD-2-Clause
"""seqstore.lm and seqstore.torch.LMDataset: packed rows hold every token of
every document once per epoch (checked here from the documents themselves),
caller buffers get the same rows as fresh arrays, the varlen cu_seqlens of a
batch, and the torch dataset's global batches the same for any number of
ranks and workers, resumed exactly from its state in fresh worker processes."""
import gc
import pickle

import numpy as np
import pytest
import torch

import seqstore
import seqstore.lm
import seqstore.torch

EOD = 65535


@pytest.fixture
def docs(tmp_path):
    rng = np.random.default_rng(3)
    lens = rng.integers(0, 90, 200)
    lens[::17] = 300  # some longer than L
    docs, nxt = [], 1
    for n in lens:
        docs.append(np.arange(nxt, nxt + n, dtype=np.uint16))
        nxt += n
    assert nxt < EOD
    path = str(tmp_path / "docs.ss")
    with seqstore.create(path, [("tokens", "u16")]) as w:
        for d in docs:
            w.append({"tokens": d})
    return path, docs


def _packed(path, **kw):
    return seqstore.lm.LMSamples(path, 64, layout="packed", append_eod=True, eod=EOD, seed=5,
                                 **kw)


def test_packed_covers_each_document_once(docs):
    path, dd = docs
    s = _packed(path, pack_window=16)
    rows = s.read(np.arange(len(s)))
    seen = [[] for _ in dd]
    padding = 0
    for r in range(len(s)):
        tok, cu, ns = rows["tokens"][r], rows["cu_seqlens"][r], rows["nsegments"][r]
        assert cu[0] == 0 and cu[ns] == 64 and (np.diff(cu[:ns + 1]) > 0).all()
        for g in range(ns):
            seg = tok[cu[g]:cu[g + 1]]
            assert (rows["segment_ids"][r][cu[g]:cu[g + 1]] == g).all()
            assert (rows["position_ids"][r][cu[g]:cu[g + 1]] == np.arange(len(seg))).all()
            real = seg[seg != EOD]
            if len(real) == 0:
                if g == ns - 1 and (rows["loss_mask"][r][cu[g]:] == 0).all() and len(seg) > 1:
                    padding += len(seg)
                continue  # an eod alone (or padding): checked by the C property tests
            d = next(k for k, x in enumerate(dd) if len(x) and x[0] <= real[0] <= x[-1])
            seen[d].append(real)
    assert padding <= s.info["padding_tokens"]
    for k, d in enumerate(dd):
        got = np.concatenate(seen[k]) if seen[k] else np.zeros(0, np.uint16)
        assert np.array_equal(np.sort(got), d)  # every token once
    assert s.info["split_documents"] == sum(len(d) + 1 > 64 for d in dd)


def test_read_into_buffers(docs):
    path, _ = docs
    s = _packed(path)
    idx = np.array([3, 0, 7, 7, len(s) - 1])
    want = s.read(idx)
    out = {k: torch.empty(v.shape, dtype=torch.from_numpy(v).dtype).numpy()
           for k, v in want.items()}
    assert s.read(idx, out=out) is out
    for k in want:
        assert np.array_equal(out[k], want[k]), k
    t = pickle.loads(pickle.dumps(s))
    assert np.array_equal(t.read(idx)["labels"], want["labels"])
    with pytest.raises(seqstore.RangeError, match="sample %d" % len(s)):
        s.read([len(s)])
    with pytest.raises(ValueError, match="writeable C-contiguous int64"):
        s.read([0], out={"tokens": np.zeros((2, 64), np.int64)})


def test_flat_cu_seqlens():
    # L = 8: row 0 holds segments [0, 3) and [3, 8), row 1 one segment
    cu = np.array([[0, 3] + [8] * 7, [0] + [8] * 8], np.int32)
    flat, longest = seqstore.lm.flat_cu_seqlens(cu, [2, 1])
    assert flat.tolist() == [0, 3, 8, 16] and longest == 8


def _global_batches(path, world, workers, start=0, steps=None):
    per_rank = []
    for rank in range(world):
        ds = seqstore.torch.LMDataset(path, 64, 8, layout="packed", append_eod=True, eod=EOD,
                                      num_epochs=3, rank=rank, world_size=world, start=start,
                                      steps=steps)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
        per_rank.append([b["tokens"] for b in dl])
    return [torch.cat(rows) for rows in zip(*per_rank)]


def test_elastic_and_resume(docs):
    path, _ = docs
    ref = _global_batches(path, 1, 0)
    assert len(ref) > 10
    for world, workers in ((2, 0), (4, 2)):
        got = _global_batches(path, world, workers)
        assert len(got) == len(ref) and all(torch.equal(a, b) for a, b in zip(got, ref))
    # save after 5 steps, resume in fresh worker processes
    ds = seqstore.torch.LMDataset(path, 64, 8, layout="packed", append_eod=True, eod=EOD,
                                  num_epochs=3)
    it = iter(ds)
    for _ in range(5):
        next(it)
    state = ds.state_dict()
    assert state == {"step": 5}
    fresh = seqstore.torch.LMDataset(path, 64, 8, layout="packed", append_eod=True, eod=EOD,
                                     num_epochs=3)
    fresh.load_state_dict(state)
    dl = torch.utils.data.DataLoader(fresh, batch_size=None, num_workers=2)
    rest = [b["tokens"] for b in dl]
    assert len(rest) == len(ref) - 5 and all(torch.equal(a, b) for a, b in zip(rest, ref[5:]))
    # in this process too, and every pass starts at the loaded step
    for _ in range(2):
        again = [b["tokens"] for b in fresh]
        assert len(again) == len(rest) and all(torch.equal(a, b) for a, b in zip(again, rest))
    assert fresh.state_dict() == {"step": len(ref)}


def test_dataset_batch_fields(docs):
    path, _ = docs
    ds = seqstore.torch.LMDataset(path, 64, 4, layout="packed", append_eod=True, eod=EOD)
    b = ds.batch(0)
    assert b["tokens"].shape == (4, 64) and b["tokens"].dtype == torch.int64
    assert b["loss_mask"].dtype == torch.float32 and b["segment_ids"].dtype == torch.int32
    cu = b["cu_seqlens"]
    assert cu[0] == 0 and cu[-1] == 4 * 64 and bool((cu[1:] > cu[:-1]).all())
    assert int(b["max_seqlen"]) == int((cu[1:] - cu[:-1]).max())
    with pytest.raises(ValueError, match="multiple of world_size"):
        seqstore.torch.LMDataset(path, 64, 6, layout="packed", append_eod=True, eod=EOD,
                                 rank=0, world_size=4).batch(0)
    with pytest.raises(ValueError, match="layout"):
        seqstore.lm.LMSamples(path, 64, layout="nope")


def test_save_index_is_used(docs):
    """save_index() stores the Megatron index; LMSamples with the same options
    then reads it (info["stored"]) and gives the rows of a fresh build."""
    path, _ = docs
    kw = dict(seed=7, num_epochs=2, eod=EOD, append_eod=True)
    fresh = seqstore.lm.LMSamples(path, 48, **kw)
    assert fresh.info["stored"] is False
    want, n = fresh.read(range(len(fresh))), len(fresh)
    with pytest.raises(seqstore.BusyError):  # open here: LMDB allows one environment per file
        seqstore.lm.save_index(path, 48, **kw)
    del fresh
    gc.collect()
    seqstore.lm.save_index(path, 48, **kw)
    used = seqstore.lm.LMSamples(path, 48, **kw)
    assert used.info["stored"] is True and len(used) == n
    got = used.read(range(len(used)))
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])
    other = seqstore.lm.LMSamples(path, 48, **dict(kw, seed=8))  # other options: built afresh
    assert other.info["stored"] is False
    with pytest.raises(seqstore.StoreNotFoundError):
        seqstore.lm.save_index(path + ".missing", 48, **kw)
    with pytest.raises(seqstore.Error):
        seqstore.lm.save_index(path, 48, field="nope", **kw)
