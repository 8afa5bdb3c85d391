# SPDX-License-Identifier: BSD-2-Clause
"""seqstore.Loader: batches against a naive collation of the same examples,
epochs, sharding, token budgets, exact resume, views, torch, misuse."""
import pickle
import time

import numpy as np
import pytest

import seqstore


def naive_padded(store, indices, name, pad, dtype):
    rows = [np.asarray(store[name][int(i)], dtype) for i in indices]
    t = max((len(r) for r in rows), default=0)
    out = np.full((len(rows), t), pad, dtype)
    for k, r in enumerate(rows):
        out[k, :len(r)] = r
    return out, np.array([len(r) for r in rows], np.int64)


def check_batch(store, b, pad=-1):
    want, lengths = naive_padded(store, b["index"], "tokens", pad, np.int64)
    np.testing.assert_array_equal(b["tokens"], want)
    np.testing.assert_array_equal(b["tokens_lengths"], lengths)
    np.testing.assert_array_equal(b["tokens_mask"], (np.arange(want.shape[1]) < lengths[:, None]))
    np.testing.assert_array_equal(b["label"], [int(store["label"][int(i)]) for i in b["index"]])


FIELDS = {"tokens": {"dtype": "i64", "pad": -1, "mask": "u8"}, "label": {}}


@pytest.mark.parametrize("shuffle,threads", [(False, 1), (True, 1), (True, 2), (True, 0)])
def test_batches_match_naive_collation(store, shuffle, threads):
    n = len(store)
    loader = seqstore.Loader(store, batch_size=8, shuffle=shuffle, seed=3, drop_last=True,
                             fields=FIELDS, threads=threads)
    assert len(loader) == n // 8
    seen = []
    for b in loader:
        assert b["tokens"].dtype == np.int64 and b["tokens"].shape[0] == 8
        assert b["tokens"].flags.writeable  # a copy: the caller owns it
        check_batch(store, b)
        seen.extend(int(i) for i in b["index"])
    assert len(seen) == len(set(seen)) == (n // 8) * 8
    assert (seen == sorted(seen)) != shuffle


def test_threads_zero_is_one_thread(store):
    # the C API's one meaning of threads = 0 (seqstore.h): one thread, the same batches
    def batches(threads):
        l = seqstore.Loader(store, batch_size=8, shuffle=True, seed=3, fields=FIELDS,
                            threads=threads)
        return [b["tokens"] for b in l]
    for a, b in zip(batches(0), batches(1)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="threads"):
        seqstore.Loader(store, batch_size=8, threads=-1)


def test_epochs_and_determinism(store):
    def order(seed, epochs=2):
        l = seqstore.Loader(store, batch_size=5, shuffle=True, seed=seed, fields=["label"])
        return [[int(i) for b in l for i in b["index"]] for _ in range(epochs)]
    a = order(7)
    assert a == order(7)
    assert a[0] != a[1] and sorted(a[0]) == sorted(a[1]) == list(range(len(store)))
    assert a != order(8)


def test_sharding_covers_epoch_once(store):
    parts = []
    for rank in range(3):
        l = seqstore.Loader(store, batch_size=4, shuffle=True, seed=1, rank=rank, world_size=3,
                            drop_last=True, fields=["label"])
        parts.append([int(i) for b in l for i in b["index"]])
    flat = sum(parts, [])
    assert len(flat) == len(set(flat)) == (len(store) // 12) * 12


def test_token_budget(store):
    l = seqstore.Loader(store, max_tokens=64, shuffle=True, seed=2, fields=FIELDS)
    seen = []
    for b in l:
        assert b["tokens"].size <= 64 or len(b["index"]) == 1
        check_batch(store, b)
        seen.extend(int(i) for i in b["index"])
    assert sorted(seen) == list(range(len(store)))


def test_packed_layout(store):
    l = seqstore.Loader(store, batch_size=6, fields={"feat": {"layout": "packed"}})
    for b in l:
        off = b["feat_offsets"]
        for k, i in enumerate(b["index"]):
            np.testing.assert_array_equal(b["feat"][off[k]:off[k + 1]], store["feat"][int(i)])


@pytest.mark.parametrize("threads", [1, 2])
def test_state_dict_resumes_exactly(store, threads):
    kw = dict(batch_size=4, shuffle=True, seed=11, fields=FIELDS, threads=threads)
    full = seqstore.Loader(store, **kw)
    want = [b["index"].tolist() for _ in range(2) for b in full]
    l = seqstore.Loader(store, **kw)
    got = []
    for b in l:
        got.append(b["index"].tolist())
        if len(got) == 5:
            break
    state = pickle.loads(pickle.dumps(l.state_dict()))
    l.close()
    resumed = seqstore.Loader(store, **kw)
    resumed.load_state_dict(state)
    got += [b["index"].tolist() for b in resumed]
    got += [b["index"].tolist() for b in resumed]  # and the next epoch
    assert got == want


def test_views_instead_of_copies(store_path):
    s = seqstore.open(store_path)
    l = seqstore.Loader(s, batch_size=4, fields=FIELDS, copy=False)
    b = next(iter(l))
    assert not b["tokens"].flags.writeable
    with pytest.raises(ValueError):
        b["tokens"][0, 0] = 5
    first = b["tokens"].copy()
    s.close()  # the loader keeps the map
    del l  # the view keeps the loader
    np.testing.assert_array_equal(b["tokens"], first)


def test_torch_tensors(store):
    torch = pytest.importorskip("torch")
    l = seqstore.Loader(store, batch_size=4, fields=FIELDS, torch=True)
    b = next(iter(l))
    assert isinstance(b["tokens"], torch.Tensor) and b["tokens"].dtype == torch.int64
    b["tokens"].add_(1)  # a copy: writable
    assert b["index"].dtype == torch.int64
    with pytest.raises(ValueError, match="torch has no u16"):
        seqstore.Loader(store, batch_size=4, fields=["tokens"], torch=True)
    emb = torch.nn.Embedding(2**16 + 1, 4)
    assert emb(b["tokens"].clamp(min=0)).shape == (*b["tokens"].shape, 4)


def test_misuse(store, store_path):
    with pytest.raises(ValueError, match="exactly one"):
        seqstore.Loader(store)
    with pytest.raises(ValueError, match="exactly one"):
        seqstore.Loader(store, batch_size=2, max_tokens=10)
    with pytest.raises(ValueError):
        seqstore.Loader(store, batch_size=0)
    with pytest.raises(TypeError):
        seqstore.Loader(store, batch_size=2.5)
    # ints beyond the C types are refused, not wrapped (threads 2**32 was 0 = one thread)
    for kw in (dict(threads=2**32), dict(prefetch=2**32), dict(seed=2**64),
               dict(rank=2**32, world_size=2**32 + 1), dict(batch_size=2**64),
               dict(fields={"tokens": {"fixed_length": 2**64 + 3}})):
        with pytest.raises(ValueError, match=list(kw)[0] if "fields" not in kw else "fixed_length"):
            seqstore.Loader(store, **{"batch_size": 2, **kw})
    with pytest.raises(ValueError, match="rank"):
        seqstore.Loader(store, batch_size=2, rank=2, world_size=2)
    with pytest.raises(KeyError, match="nope"):
        seqstore.Loader(store, batch_size=2, fields=["nope"])
    with pytest.raises(ValueError, match="layout"):
        seqstore.Loader(store, batch_size=2, fields={"tokens": {"layout": "diagonal"}})
    with pytest.raises(ValueError, match="unknown options"):
        seqstore.Loader(store, batch_size=2, fields={"tokens": {"padd": 1}})
    with pytest.raises(ValueError):
        seqstore.Loader(store, batch_size=2, fields={"tokens": {"dtype": "q8"}})
    with pytest.raises(seqstore.NotFoundError):
        seqstore.Loader(store, batch_size=2, bucket="no-such-bucket")
    with pytest.raises(TypeError):
        seqstore.Loader("path.ss", batch_size=2)
    s = seqstore.open(store_path)
    s.close()
    with pytest.raises(seqstore.ClosedError):
        seqstore.Loader(s, batch_size=2)
    l = seqstore.Loader(store, batch_size=2, fields=["label"])
    with pytest.raises(TypeError):
        pickle.dumps(l)
    with pytest.raises(ValueError):
        l.load_state_dict({"seqstore_loader": b"garbage"})
    other = seqstore.Loader(store, batch_size=3, fields=["label"])
    with pytest.raises(seqstore.InvalidArgumentError):
        l.load_state_dict(other.state_dict())  # other options
    with pytest.raises(ValueError):
        l.load_state_dict({})
    l.close()
    with pytest.raises(seqstore.ClosedError):
        next(iter(l))
    with pytest.raises(seqstore.ClosedError):
        l.state_dict()


def test_works_without_torch(store_path):
    # torch is imported lazily: block it and use the module.
    import subprocess
    import sys
    code = ("import sys; sys.modules['torch'] = None\n"
            "import seqstore\n"
            "s = seqstore.open(%r)\n"
            "b = next(iter(seqstore.Loader(s, batch_size=2, fields=['label'])))\n"
            "print(len(s), b['label'].tolist())\n"
            "try:\n"
            "    seqstore.Loader(s, batch_size=2, torch=True)\n"
            "except ImportError:\n"
            "    print('no torch')\n" % store_path)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["50 [-100, -93]", "no torch"]


def test_collator_matches_naive(store):
    c = seqstore.Collator(store, fields=FIELDS)
    assert c.fields == ("tokens", "label")
    idx = [7, 0, 33, 7, 49]
    b = c.collate(idx)
    b["index"] = np.array(idx)
    check_batch(store, b)
    b2 = c(np.array(idx, np.int32))  # __call__, any integer array
    np.testing.assert_array_equal(b2["tokens"], b["tokens"])


def test_collator_into_caller_buffers(store):
    c = seqstore.Collator(store, fields={"tokens": {"dtype": "i64", "pad": -1}})
    idx = [3, 9, 12]
    want = c.collate(idx)["tokens"]
    buf = np.full(4096, 7, np.int64)
    got = c.collate(idx, out={"tokens": buf})["tokens"]
    assert got.base is buf and got.ctypes.data == buf.ctypes.data  # written in place
    np.testing.assert_array_equal(got, want)
    assert (buf[want.size:] == 7).all()
    with pytest.raises(seqstore.BufferTooSmallError, match="tokens"):
        c.collate(idx, out={"tokens": np.zeros(2, np.int64)})  # too small
    wrong = np.full(4096, 7, np.int32)
    with pytest.raises(TypeError, match="wrong dtype"):
        c.collate(idx, out={"tokens": wrong})  # wrong dtype
    assert (wrong == 7).all()  # refused before the C collator wrote into it
    with pytest.raises(TypeError):
        c.collate(idx, out={"tokens": np.zeros((64, 64), np.int64)[:, ::2]})  # not contiguous
    ro = np.zeros(4096, np.int64)
    ro.flags.writeable = False
    with pytest.raises(TypeError):
        c.collate(idx, out={"tokens": ro})
    with pytest.raises(TypeError):
        c.collate(idx, out=[buf])


def test_collator_into_caller_torch_tensors(store):
    # a caller's (e.g. pinned) tensor is written once, in place, by the C collator
    torch = pytest.importorskip("torch")
    c = seqstore.Collator(store, fields={"tokens": {"dtype": "i64", "pad": -1}, "label": {}})
    idx = [3, 9, 12]
    want = c.collate(idx)
    buf = torch.full((4096,), 7, dtype=torch.int64)
    got = c.collate(idx, out={"tokens": buf})
    t = got["tokens"]
    assert isinstance(t, torch.Tensor) and t.data_ptr() == buf.data_ptr()  # written in place
    np.testing.assert_array_equal(t.numpy(), want["tokens"])
    assert (buf[want["tokens"].size:] == 7).all()
    assert isinstance(got["label"], np.ndarray)  # fields not given in out: arrays as before
    np.testing.assert_array_equal(got["tokens_lengths"], want["tokens_lengths"])
    with pytest.raises(TypeError, match="dtype"):
        c.collate(idx, out={"tokens": torch.zeros(4096, dtype=torch.int32)})
    with pytest.raises(TypeError, match="contiguous"):
        c.collate(idx, out={"tokens": torch.zeros(64, 64, dtype=torch.int64)[:, ::2]})
    with pytest.raises(TypeError, match="requires_grad"):
        c.collate(idx, out={"tokens": torch.zeros(4096, requires_grad=True)})
    with pytest.raises(seqstore.BufferTooSmallError, match="tokens"):
        c.collate(idx, out={"tokens": torch.zeros(2, dtype=torch.int64)})  # too small


def test_collator_misuse(store):
    c = seqstore.Collator(store, fields=["label"])
    for bad in ([], [1.5], "12", [[1, 2]]):
        with pytest.raises((TypeError, ValueError)):
            c.collate(bad)
    with pytest.raises(IndexError):
        c.collate([0, len(store)])
    with pytest.raises(IndexError):
        c.collate([-1])
    with pytest.raises(KeyError):
        seqstore.Collator(store, fields=["nope"])
    c.close()
    with pytest.raises(seqstore.ClosedError):
        c.collate([0])


def test_integer_pads_are_exact(store):
    """Python ints pad exactly up to 2**64 - 1 (a float pad would round 2**63 - 1
    to 2**63); a pad the output dtype cannot hold is refused, not wrapped."""
    big = 2**63 - 1
    b = seqstore.Collator(store, fields={"tokens": {"dtype": "i64", "pad": big}}).collate([0, 1, 2])
    lengths = [len(store["tokens"][i]) for i in range(3)]
    assert min(lengths) < max(lengths)  # something is padded
    for row, n in zip(b["tokens"], lengths):
        assert (row[n:] == big).all()
    top = 2**64 - 1
    b = seqstore.Collator(store, fields={"tokens": {"dtype": "u64", "pad": top}}).collate([0, 1, 2])
    for row, n in zip(b["tokens"], lengths):
        assert (row[n:] == np.uint64(top)).all()
    b = seqstore.Collator(store, fields={"tokens": {"dtype": "i64", "pad": np.int16(-3)}}).collate([0, 1])
    assert b["tokens"].min() == -3 or min(lengths[:2]) == max(lengths[:2])
    with pytest.raises(seqstore.InvalidArgumentError, match="pad -1 has no exact u16"):
        seqstore.Collator(store, fields={"tokens": {"dtype": "u16", "pad": -1}})
    with pytest.raises(seqstore.InvalidArgumentError, match="pad 1.5 has no exact i32"):
        seqstore.Collator(store, fields={"tokens": {"dtype": "i32", "pad": 1.5}})
    with pytest.raises(ValueError, match="outside"):
        seqstore.Collator(store, fields={"tokens": {"dtype": "u64", "pad": 2**64}})


# Loader(out=): each batch collated by C straight into the caller's memory
# (ss_loader_next_into). torch here is CPU-only (no CUDA, so no pin_memory):
# plain CPU tensors stand in for pinned ones, which are CPU tensors too.

def _plain_and_into(store, out, **kw):
    plain = [{k: v.copy() for k, v in b.items()} for b in seqstore.Loader(store, **kw)]
    into = seqstore.Loader(store, out=out, **kw)
    return plain, into


@pytest.mark.parametrize("kw", [
    dict(batch_size=8, shuffle=True, seed=3),
    dict(batch_size=8, shuffle=True, seed=3, rank=1, world_size=2),
    dict(max_tokens=64, shuffle=True, seed=2),
])
def test_out_numpy_batches_equal_plain_loader(store, kw):
    buf = np.full(50 * 40, 99, np.int64)
    mask = np.zeros(50 * 40, np.uint8)
    plain, into = _plain_and_into(store, {"tokens": buf, "tokens_mask": mask}, fields=FIELDS,
                                  **kw)
    got = 0
    for want, b in zip(plain, into):
        assert b["tokens"].ctypes.data == buf.ctypes.data  # written in place
        assert b["tokens_mask"].ctypes.data == mask.ctypes.data
        assert np.shares_memory(b["tokens"], buf)
        for k in want:
            np.testing.assert_array_equal(b[k], want[k])
        check_batch(store, b)
        got += 1
    assert got == len(plain) == len(into) > 1


def test_out_torch_tensor_reused_in_place(store):
    torch = pytest.importorskip("torch")
    kw = dict(batch_size=6, shuffle=True, seed=5, fields=FIELDS)
    t = torch.zeros(6 * 40, dtype=torch.int64)
    ptr = t.data_ptr()
    plain, into = _plain_and_into(store, {"tokens": t}, **kw)
    n = 0
    for want, b in zip(plain, into):
        assert isinstance(b["tokens"], torch.Tensor)
        assert b["tokens"].data_ptr() == ptr == t.data_ptr()  # the caller's memory, reused
        assert tuple(b["tokens"].shape) == want["tokens"].shape
        np.testing.assert_array_equal(b["tokens"].numpy(), want["tokens"])
        # what C wrote is in the caller's tensor itself
        flat = want["tokens"].ravel()
        np.testing.assert_array_equal(t[:flat.size].numpy(), flat)
        np.testing.assert_array_equal(b["label"], want["label"])  # not in out: a copy
        n += 1
    assert n == len(plain)
    # torch=True: every array a tensor, the out one still a view of t
    l = seqstore.Loader(store, out={"tokens": t}, torch=True, **kw)
    b = next(iter(l))
    assert b["tokens"].data_ptr() == ptr and isinstance(b["label"], torch.Tensor)


def test_out_state_dict_resumes_across_kinds(store):
    kw = dict(batch_size=4, shuffle=True, seed=11, fields=FIELDS)
    want = [b["index"].tolist() for b in seqstore.Loader(store, **kw)]
    buf = np.empty(4 * 40, np.int64)
    l = seqstore.Loader(store, out={"tokens": buf}, **kw)
    it = iter(l)
    got = [next(it)["index"].tolist() for _ in range(5)]
    state = l.state_dict()
    plain = seqstore.Loader(store, **kw)  # a plain loader resumes an out= loader's state
    plain.load_state_dict(state)
    assert got + [b["index"].tolist() for b in plain] == want
    plain2 = seqstore.Loader(store, **kw)
    it2 = iter(plain2)
    for _ in range(3):
        next(it2)
    again = seqstore.Loader(store, out={"tokens": buf}, **kw)  # and the other way round
    again.load_state_dict(plain2.state_dict())
    assert [b["index"].tolist() for b in again] == want[3:]


def test_out_with_transforms_threads_ahead(store):
    from seqstore import transforms as T
    kw = dict(batch_size=5, shuffle=True, seed=9, fields=FIELDS,
              transforms=[T.TokenDrop("tokens", 0.3)])
    buf = np.empty(5 * 40, np.int64)
    for threads in (1, 2):
        plain, into = _plain_and_into(store, {"tokens": buf}, threads=threads, **kw)
        for want, b in zip(plain, into):
            assert b["tokens"].ctypes.data == buf.ctypes.data
            np.testing.assert_array_equal(b["tokens"], want["tokens"])
            np.testing.assert_array_equal(b["tokens_lengths"], want["tokens_lengths"])


def test_out_misuse(store):
    kw = dict(batch_size=8, fields=FIELDS)
    with pytest.raises(TypeError, match="is int32; the batch's 'tokens' is int64"):
        seqstore.Loader(store, out={"tokens": np.empty(400, np.int32)}, **kw)
    with pytest.raises(TypeError, match="C-contiguous"):
        seqstore.Loader(store, out={"tokens": np.empty((400, 2), np.int64)[:, 0]}, **kw)
    ro = np.empty(400, np.int64)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        seqstore.Loader(store, out={"tokens": ro}, **kw)
    with pytest.raises(ValueError, match="not among"):
        seqstore.Loader(store, out={"tokens_lengths": np.empty(8, np.int64)}, **kw)
    with pytest.raises(ValueError, match="not among"):
        seqstore.Loader(store, out={"label_mask": np.empty(8, np.uint8)}, **kw)
    with pytest.raises(TypeError, match="NumPy array or a CPU torch tensor"):
        seqstore.Loader(store, out={"tokens": [0] * 400}, **kw)
    with pytest.raises(TypeError, match="out is a dict"):
        seqstore.Loader(store, out=[np.empty(400, np.int64)], **kw)
    with pytest.raises(ValueError, match="threads"):  # nothing to prepare ahead
        seqstore.Loader(store, out={"tokens": np.empty(400, np.int64)}, threads=2, **kw)
    # too small for a batch: refused naming the field and bytes; the batch comes again
    small = np.empty(8, np.int64)
    l = seqstore.Loader(store, out={"tokens": small}, **kw)
    with pytest.raises(ValueError, match="'tokens'.*needs"):
        next(iter(l))
    assert l.position == 0
    plain = next(iter(seqstore.Loader(store, **kw)))
    l2 = seqstore.Loader(store, out={"tokens": np.empty(8 * 40, np.int64)}, **kw)
    np.testing.assert_array_equal(next(iter(l2))["tokens"], plain["tokens"])


def test_out_torch_misuse(store):
    torch = pytest.importorskip("torch")
    kw = dict(batch_size=8, fields=FIELDS)
    with pytest.raises(TypeError, match="int32"):
        seqstore.Loader(store, out={"tokens": torch.zeros(400, dtype=torch.int32)}, **kw)
    with pytest.raises(TypeError, match="contiguous"):
        seqstore.Loader(store, out={"tokens": torch.zeros(400, 2, dtype=torch.int64).t()}, **kw)
    with pytest.raises(TypeError, match="requires_grad"):
        seqstore.Loader(store, out={"tokens": torch.zeros(400, requires_grad=True)}, **kw)


# Loader(out=[set0, set1, ...]): a ring of the caller's buffer sets that C
# threads collate ahead into (ss_loader_options.ring, ss_loader_release).

def _ring(n, size, dtype=np.int64):
    return [{"tokens": np.full(size, 77, dtype)} for _ in range(n)]


@pytest.mark.parametrize("kw", [
    dict(batch_size=8, shuffle=True, seed=3),
    dict(batch_size=8, shuffle=True, seed=3, rank=1, world_size=2),
    dict(max_tokens=64, shuffle=True, seed=2),
    dict(batch_size=5, shuffle=True, seed=9, threads=2),
])
@pytest.mark.parametrize("transforms", [False, True])
def test_out_ring_batches_equal_plain_loader(store, kw, transforms):
    from seqstore import transforms as T
    if transforms:
        kw = dict(kw, transforms=[T.TokenDrop("tokens", 0.3)])
    ring = _ring(3, 50 * 40)
    plain, into = _plain_and_into(store, ring, fields=FIELDS, **kw)
    sets = []
    for want, b in zip(plain, into):
        k = [i for i, o in enumerate(ring) if b["tokens"].ctypes.data == o["tokens"].ctypes.data]
        assert len(k) == 1 and np.shares_memory(b["tokens"], ring[k[0]]["tokens"])
        sets.append(k[0])
        time.sleep(0.001)  # the threads run ahead meanwhile, into the other sets only
        for f in want:
            np.testing.assert_array_equal(b[f], want[f])
        if not transforms:
            check_batch(store, b)
    assert sets == [g % 3 for g in range(len(plain))]
    assert len(sets) == len(plain) == len(into) > 1
    # the next epoch through the same ring; its state_dict() resumes a plain loader
    plain2 = seqstore.Loader(store, fields=FIELDS, **kw)
    plain2.set_epoch(1)
    want = [b["index"].tolist() for b in plain2]
    it = iter(into)
    assert into.epoch == 1
    assert [next(it)["index"].tolist() for _ in range(2)] == want[:2]
    plain2.load_state_dict(into.state_dict())
    assert [b["index"].tolist() for b in plain2] == want[2:]


def test_out_ring_torch_state_resume(store):
    torch = pytest.importorskip("torch")
    kw = dict(batch_size=4, shuffle=True, seed=11, fields=FIELDS)
    want = [b["index"].tolist() for b in seqstore.Loader(store, **kw)]
    ring = [{"tokens": torch.zeros(4 * 40, dtype=torch.int64)} for _ in range(2)]
    l = seqstore.Loader(store, out=ring, **kw)
    it = iter(l)
    got = []
    for g in range(5):
        b = next(it)
        assert isinstance(b["tokens"], torch.Tensor)
        assert b["tokens"].data_ptr() == ring[g % 2]["tokens"].data_ptr()
        got.append(b["index"].tolist())
    state = l.state_dict()
    again = seqstore.Loader(store, out=ring, **kw)  # a ring loader resumes exactly
    again.load_state_dict(state)
    assert got + [b["index"].tolist() for b in again] == want


def test_out_ring_misuse(store):
    kw = dict(batch_size=8, fields=FIELDS)
    with pytest.raises(TypeError, match="is int32; the batch's 'tokens' is int64"):
        seqstore.Loader(store, out=[{"tokens": np.empty(400, np.int64)},
                                    {"tokens": np.empty(400, np.int32)}], **kw)
    with pytest.raises(ValueError, match="1 to 64"):
        seqstore.Loader(store, out=[], **kw)
    with pytest.raises(ValueError, match="prefetch"):  # the ring is the depth
        seqstore.Loader(store, out=_ring(2, 400), prefetch=3, **kw)
    # a set too small: the error names the field, stays until set_epoch
    ring = [{"tokens": np.empty(400, np.int64)}, {"tokens": np.empty(8, np.int64)}]
    l = seqstore.Loader(store, out=ring, **kw)
    it = iter(l)
    next(it)
    for _ in range(2):
        with pytest.raises(ValueError, match="tokens"):
            next(it)
    l.set_epoch(0)
    b = next(it)
    assert b["tokens"].ctypes.data == ring[0]["tokens"].ctypes.data
    # close while a set is out: the arrays are the caller's and stay readable
    keep = b["tokens"].copy()
    l.close()
    np.testing.assert_array_equal(b["tokens"], keep)
    with pytest.raises(seqstore.ClosedError):
        next(it)
