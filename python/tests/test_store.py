# SPDX-License-Identifier: BSD-2-Clause
"""seqstore.open() and Store: values, access forms, read-only views,
lifetime after close, pickling, errors."""
import gc
import os
import pickle
import warnings

import numpy as np
import pytest

import seqstore


def test_fortunes_known_values(fortunes):
    # The figures the C and ctypes examples print for the same file.
    with seqstore.open(fortunes) as s:
        assert len(s) == 431
        tokens = s["tokens"]
        assert tokens[0].dtype == np.uint8
        assert bytes(tokens[0]).startswith(b"A day for firm decisions")
        assert int(tokens.lengths().sum()) == 23223
        assert sum(len(tokens[i]) for i in range(len(s))) == 23223


def test_fortunes_bytes_match_source_text(fortunes):
    # Independent check: split the source file at '%' lines ourselves.
    docs, cur = [], []
    with open("/usr/share/games/fortunes/fortunes", "rb") as f:
        for line in f:
            if line.rstrip(b"\n") == b"%":
                docs.append(b"".join(cur))
                cur = []
            else:
                cur.append(line)
    if cur:
        docs.append(b"".join(cur))
    with seqstore.open(fortunes) as s:
        t = s["tokens"]
        # The converter may strip the final newline; compare the text itself.
        for i in (0, 1, 100, 430):
            assert bytes(t[i]).strip() == docs[i].strip()


def test_round_trip(store, examples):
    assert len(store) == len(examples)
    assert store.fields == ("tokens", "label", "feat")
    for i, ex in enumerate(examples):
        got = store[i]
        assert set(got) == {"tokens", "label", "feat"}
        np.testing.assert_array_equal(got["tokens"], ex["tokens"])
        assert got["tokens"].dtype == np.uint16
        assert got["label"].shape == () and int(got["label"]) == int(ex["label"])
        np.testing.assert_array_equal(got["feat"], ex["feat"])
        assert got["feat"].shape == (len(ex["tokens"]), 3)


def test_schema(store):
    assert store.schema == [
        {"name": "tokens", "dtype": "u16", "shape": (), "sequence": True},
        {"name": "label", "dtype": "i64", "shape": (), "sequence": False},
        {"name": "feat", "dtype": "f32", "shape": (3,), "sequence": True},
    ]


def test_field_access_forms(store, examples):
    t = store["tokens"]
    assert store.field("tokens").name == "tokens" and len(t) == len(examples)
    np.testing.assert_array_equal(t[-1], examples[-1]["tokens"])
    np.testing.assert_array_equal(t[np.int32(3)], examples[3]["tokens"])
    for got, want in zip(t[5:20:3], examples[5:20:3]):
        np.testing.assert_array_equal(got, want["tokens"])
    assert t[10:2] == []
    picks = [4, 0, -1, 4]
    for key in (picks, np.array(picks), np.array(picks, np.int8), tuple(picks)):
        got = t[key]
        assert len(got) == 4
        for a, i in zip(got, picks):
            np.testing.assert_array_equal(a, examples[i]["tokens"])
    assert t[[]] == [] and t[np.array([], np.int64)] == []
    np.testing.assert_array_equal(t[np.array([49], np.uint8)][0], examples[49]["tokens"])


def test_lengths(store, examples):
    want = np.array([len(e["tokens"]) for e in examples], np.uint64)
    narrowest = np.min_scalar_type(int(want.max()))  # the stored section's type
    for got in (store.lengths("tokens"), store["feat"].lengths()):
        assert got.dtype == narrowest
        np.testing.assert_array_equal(got, want)
        assert not got.flags.writeable
        with pytest.raises(ValueError):
            got[0] = 1
        # zero-copy: a view over the store's map, not an array of its own
        assert not got.flags.owndata and got.base is not None
    np.testing.assert_array_equal(store.lengths("tokens"), store.attrs["ss.lengths.tokens"])
    np.testing.assert_array_equal(store.lengths("label"), np.ones(len(examples), np.uint64))
    # computed once per field, then the same array (the snapshot never changes)
    assert store.lengths("tokens") is store["tokens"].lengths()
    assert store.lengths("tokens") is not store.lengths("feat")


def test_lengths_old_store():
    """A store written before the stored section: computed once, uint64."""
    old = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "v1_store.ss")
    with seqstore.open(old, nolock=True) as s:
        name = next(f["name"] for f in s.schema if f["sequence"])
        got = s.lengths(name)
        assert got.dtype == np.uint64 and got.flags.owndata and not got.flags.writeable
        np.testing.assert_array_equal(got, [len(s[name][i]) for i in range(len(s))])


def test_lengths_cache_dropped_at_close(store_path, examples):
    s = seqstore.open(store_path)
    a = s.lengths("tokens")
    s.close()
    np.testing.assert_array_equal(a, [len(e["tokens"]) for e in examples])  # still valid
    with pytest.raises(seqstore.ClosedError):
        s.lengths("tokens")


def test_bad_arguments(store):
    t = store["tokens"]
    n = len(store)
    for bad in (n, -n - 1, 2**70):
        with pytest.raises(IndexError):
            t[bad]
        with pytest.raises(IndexError):
            store[bad]
    with pytest.raises(IndexError):
        t[[0, n]]
    for bad in (1.0, "0", b"0", None, np.array([1.5]), [[0, 1]]):
        with pytest.raises(TypeError):
            t[bad]
    with pytest.raises(TypeError):
        store[1.0]
    with pytest.raises(KeyError, match="no field 'nope'"):
        store["nope"]
    with pytest.raises(KeyError):
        store.lengths("nope")
    with pytest.raises(TypeError):
        store.lengths(0)
    with pytest.raises(TypeError):
        seqstore.open(42)
    with pytest.raises(TypeError):
        seqstore.open("x.ss", bogus=True)


def test_views_are_read_only(store):
    a = store["tokens"][1]
    assert not a.flags.writeable and not a.flags.owndata
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 1
    with pytest.raises(ValueError):
        a += 1
    with pytest.raises(ValueError):
        a.flags.writeable = True  # the base exports no writable buffer
    f = store[2]["feat"]
    with pytest.raises(ValueError):
        f[...] = 0
    with pytest.raises(ValueError):
        store.attrs["scale"][0] = 9


def test_views_keep_the_map_after_close(store_path, examples):
    s = seqstore.open(store_path)
    kept = [s["tokens"][i] for i in range(len(s))]
    feat = s[7]["feat"]
    s.close()
    assert s.closed
    del s
    gc.collect()
    for a, ex in zip(kept, examples):
        np.testing.assert_array_equal(a, ex["tokens"])
    np.testing.assert_array_equal(feat, examples[7]["feat"])


def test_use_after_close_raises(store_path):
    s = seqstore.open(store_path)
    t = s["tokens"]
    s.close()
    s.close()  # twice is fine
    for op in (lambda: len(s), lambda: s[0], lambda: s["tokens"], lambda: s.field("tokens"),
               lambda: s.lengths("tokens"), lambda: s.attrs, lambda: s.schema, lambda: s.fields,
               lambda: t[0], lambda: t[0:2], lambda: t[[0]], lambda: len(t), lambda: t.lengths()):
        with pytest.raises(seqstore.ClosedError, match="closed"):
            op()
    with pytest.raises(seqstore.ClosedError):
        with s:
            pass
    assert issubclass(seqstore.ClosedError, ValueError)
    assert "closed" in repr(s)


def test_readers_of_a_closed_store_raise(store_path):
    # a loader, collator, window reader or flat view of a closed store reads no more
    s = seqstore.open(store_path)
    loader = seqstore.Loader(s, batch_size=4, fields=["label"], threads=2)
    it = iter(loader)
    next(it)
    coll = seqstore.Collator(s, ["tokens"])
    win = seqstore.WindowReader(s, "feat", window=3, lanes=2)
    flat = s.flat("tokens")
    s.close()
    for op in (lambda: next(it), lambda: coll.collate([1]), lambda: next(win),
               lambda: flat[0:3]):
        with pytest.raises(seqstore.ClosedError, match="closed"):
            op()
    state = loader.state_dict()  # bookkeeping still answers: resume on a reopened store
    with seqstore.open(store_path) as s2:
        again = seqstore.Loader(s2, batch_size=4, fields=["label"])
        again.load_state_dict(state)
        assert again.position == 1
    loader.close()


def test_context_manager_closes(store_path):
    with seqstore.open(store_path) as s:
        assert len(s) > 0
    assert s.closed


def test_attrs(store):
    attrs = store.attrs
    assert set(attrs) == {"source", "scale", "blob", "ids", "ss.lengths.tokens", "ss.lengths.feat"}
    assert attrs["source"] == "tests ✓"
    assert attrs["blob"] == b"\x00\x01\xff"
    np.testing.assert_array_equal(attrs["scale"], [0.5, 2.0])
    assert attrs["scale"].dtype == np.float64
    assert attrs["ids"].dtype == np.uint32 and list(attrs["ids"]) == [7, 8]
    with pytest.raises(TypeError):
        attrs["new"] = 1


def test_pickle_reopens_by_path(store_path, examples):
    with seqstore.open(store_path, random=True) as s:
        data = pickle.dumps(s)
    assert store_path.encode() in data and len(data) < 300  # a path, not the data
    s2 = pickle.loads(data)
    try:
        assert len(s2) == len(examples)
        np.testing.assert_array_equal(s2["tokens"][3], examples[3]["tokens"])
    finally:
        s2.close()


def test_unsigned_dtypes_and_torch(tmp_path):
    torch = pytest.importorskip("torch")
    path = str(tmp_path / "u.ss")
    vals = {"words": np.array([1, 65535], np.uint16), "chars": np.array([2, 2**32 - 1], np.uint32),
            "ids": np.array([3, 2**63 - 1], np.uint64)}
    with seqstore.create(path, [("words", "u16"), ("chars", "u32"), ("ids", "u64")]) as w:
        w.append(vals)
    with seqstore.open(path) as s:
        ex = s[0]
        for name, v in vals.items():
            assert ex[name].dtype == v.dtype
            # torch 1.13 has no uint16/32/64 tensors: from_numpy refuses them
            # (torch 2.3 and later have them, with few operations) ...
            if hasattr(torch, "uint16"):
                assert torch.from_numpy(ex[name]).tolist() == [int(x) for x in v]
            else:
                with pytest.raises(TypeError):
                    torch.from_numpy(ex[name])
            # ... and widen() gives int64 copies it takes (writable, safe).
            t = torch.from_numpy(seqstore.widen(ex[name]))
            assert t.dtype == torch.int64 and t.tolist() == [int(x) for x in v]
            t.add_(1)
            assert list(ex[name]) == list(v)  # the map was not touched


def test_widen_refuses_overflow():
    with pytest.raises(OverflowError):
        seqstore.widen(np.array([2**63], np.uint64))
    a = np.array([1, 2], np.int64)
    w = seqstore.widen(a)
    assert w.dtype == np.int64 and w is not a


def test_torch_from_numpy_on_a_view_warns(store):
    # Known torch 1.13 behaviour, documented: from_numpy accepts a read-only
    # array of a dtype it supports with only a warning. (A write through that
    # tensor lands in the Store's private copy-on-write map: test_cow.py.)
    torch = pytest.importorskip("torch")
    lab = store[0]["label"]
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        t = torch.from_numpy(lab)
    assert int(t) == int(lab)


def test_bf16_is_uint16_bits(tmp_path):
    path = str(tmp_path / "bf.ss")
    bits = np.array([0x3F80, 0x4000, 0xBF80], np.uint16)  # 1.0, 2.0, -1.0
    with seqstore.create(path, [("x", "bf16")]) as w:
        w.append({"x": bits})
    with seqstore.open(path) as s:
        a = s["x"][0]
        assert a.dtype == np.uint16 and list(a) == list(bits)
        assert s.schema[0]["dtype"] == "bf16"
        as_f32 = (a.astype(np.uint32) << 16).view(np.float32)
        assert list(as_f32) == [1.0, 2.0, -1.0]


def test_error_hierarchy(tmp_path, store_path):
    with pytest.raises(seqstore.NotFoundError, match="nope.ss") as e:
        seqstore.open(str(tmp_path / "nope.ss"))
    assert e.value.code == -2 and isinstance(e.value, LookupError)
    junk = tmp_path / "junk.ss"
    junk.write_bytes(b"this is not a store" * 1000)
    with pytest.raises(seqstore.NotStoreError) as e:
        seqstore.open(str(junk))
    assert isinstance(e.value, seqstore.Error) and "junk.ss" in str(e.value)
    # A writer that never finished: incomplete, readable with incomplete=True.
    part = str(tmp_path / "part.ss")
    w = seqstore.create(part, [("x", "u8")])
    w.append({"x": np.arange(3, dtype=np.uint8)})
    w.commit()
    w.close()
    with pytest.raises(seqstore.IncompleteError):
        seqstore.open(part)
    with seqstore.open(part, incomplete=True) as s:
        assert len(s) == 1 and list(s["x"][0]) == [0, 1, 2]
    for cls in (seqstore.CorruptError, seqstore.VersionError, seqstore.BusyError,
                seqstore.RangeError, seqstore.InvalidArgumentError):
        assert issubclass(cls, seqstore.Error)
    assert issubclass(seqstore.RangeError, IndexError)
    assert issubclass(seqstore.InvalidArgumentError, ValueError)


def test_corrupt_store_is_reported(tmp_path, store_path):
    # Flip every byte of one 4 KiB page in turn until open or a read notices;
    # whatever happens must be a seqstore.Error, never a crash.
    data = bytearray(open(store_path, "rb").read())
    bad = tmp_path / "bad.ss"
    seen = set()
    for page in range(len(data) // 4096):
        d = bytearray(data)
        for k in range(page * 4096 + 64, page * 4096 + 4096, 97):
            d[k] ^= 0x5A
        bad.write_bytes(bytes(d))
        try:
            with seqstore.open(str(bad)) as s:
                for i in range(len(s)):
                    s[i]
                s.attrs
        except seqstore.Error as e:
            seen.add(type(e).__name__)
    assert seen, "no corruption was detected"


def test_fork_child_must_reopen(store_path, examples):
    import os
    s = seqstore.open(store_path)
    view = s["tokens"][3]
    loader = seqstore.Loader(s, batch_size=4, fields=["label"], threads=2)
    next(iter(loader))
    pid = os.fork()
    if pid == 0:  # child: report through the exit code, never raise out of here
        code = 0
        try:
            try:
                s[0]
                code = 1
            except seqstore.StateError as e:
                code = 0 if "forked" in str(e) else 2
            try:
                next(iter(loader))
                code = code or 3
            except seqstore.StateError:
                pass
            if list(view) != list(examples[3]["tokens"]):  # the inherited map is readable
                code = code or 4
            with seqstore.open(store_path) as mine:
                if list(mine["tokens"][3]) != list(examples[3]["tokens"]):
                    code = code or 5
            del s, loader  # leaked, not closed: must not disturb the parent
            gc.collect()
        except BaseException:
            code = 9
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    np.testing.assert_array_equal(s["tokens"][3], examples[3]["tokens"])
    assert len(list(loader)) == len(loader)  # the peek before the fork did not eat into it
    loader.close()
    s.close()


def test_flat_view(store, examples):
    flat = store.flat("tokens")
    want = np.concatenate([e["tokens"] for e in examples])
    assert len(flat) == len(want)
    np.testing.assert_array_equal(flat[:], want)
    np.testing.assert_array_equal(flat[17:311], want[17:311])
    assert flat[-1] == want[-1] and flat[5] == want[5]
    feat = store.flat("feat")
    np.testing.assert_array_equal(feat[3:40], np.concatenate([e["feat"] for e in examples])[3:40])
    # locate: the example holding a position, skipping empty examples
    starts = np.cumsum([0] + [len(e["tokens"]) for e in examples])
    for pos in (0, 1, 100, len(want) - 1):
        ex, off = flat.locate(pos)
        assert starts[ex] + off == pos and len(examples[ex]["tokens"]) > off
    with pytest.raises(IndexError):
        flat[len(want)]
    with pytest.raises(seqstore.RangeError):
        flat.locate(len(want))
    # negative positions count from the end, as in flat[-1]
    assert flat.locate(-1) == flat.locate(len(want) - 1)
    with pytest.raises(IndexError, match=str(-len(want) - 1)):
        flat.locate(-len(want) - 1)
    with pytest.raises(TypeError):
        flat.locate(1.0)
    with pytest.raises(TypeError):
        flat["a"]
    with pytest.raises(ValueError):
        flat[::2]
    with pytest.raises(KeyError):
        store.flat("nope")


def test_splits_folds_buckets(store_path, examples, tmp_path):
    import subprocess, os
    cli = os.environ.get("SEQSTORE_CLI")
    if not cli:
        pytest.skip("SEQSTORE_CLI not set")
    subprocess.run([cli, "split", "add", store_path, "head", "0:10,40:45"], check=True)
    subprocess.run([cli, "index", store_path, "--by", "tokens", "--resolution", "4",
                    "--name", "len"], check=True, capture_output=True)
    with seqstore.open(store_path) as s:
        assert s.split("head").tolist() == list(range(10)) + list(range(40, 45))
        with pytest.raises(seqstore.NotFoundError, match="nope"):
            s.split("nope")
        with pytest.raises(TypeError):
            s.split(3)
        n = len(s)
        valids = []
        for fold in range(4):
            train, valid = s.kfold(4, fold)
            assert sorted(train.tolist() + valid.tolist()) == list(range(n))
            valids += valid.tolist()
        assert sorted(valids) == list(range(n))  # the folds partition the store
        assert s.kfold(4, 0)[1].tolist() == list(range(n // 4))  # contiguous
        sh = s.kfold(4, 0, shuffle=True, seed=3)[1]
        assert sh.tolist() != list(range(n // 4)) and len(sh) == n // 4
        tr, va = s.kfold(3, 1, split="head")
        assert sorted(tr.tolist() + va.tolist()) == s.split("head").tolist()
        with pytest.raises(seqstore.InvalidArgumentError):
            s.kfold(1, 0)
        with pytest.raises(seqstore.InvalidArgumentError):
            s.kfold(4, 4)
        perm, starts = s.bucket("len")
        assert sorted(perm.tolist()) == list(range(n)) and starts[0] == 0 and starts[-1] == n
        lengths = np.array([len(e["tokens"]) for e in examples])
        for q in range(len(starts) - 1):  # one bucket: one floor(length / 4)
            assert len(set(lengths[perm[starts[q]:starts[q + 1]]] // 4)) == 1
        # buckets in key order; inside one, store index order (torchnet BucketSorted)
        expect = sorted(range(n), key=lambda i: (lengths[i] // 4, i))
        assert perm.tolist() == expect
        with pytest.raises(seqstore.NotFoundError):
            s.bucket("nope")


def test_integer_arguments_never_wrap(store):
    # a negative or too large int is refused by name, never taken modulo 2**32 / 2**64
    with pytest.raises(ValueError, match="k.*-1"):
        store.kfold(-1, 0)
    with pytest.raises(ValueError, match="fold.*-1"):
        store.kfold(3, -1)
    with pytest.raises(ValueError, match=str(2**32 + 2)):
        store.kfold(2**32 + 2, 0)  # would wrap to k = 2
    with pytest.raises(ValueError, match="seed"):
        store.kfold(3, 0, shuffle=True, seed=-1)
    with pytest.raises(ValueError, match="seed"):
        store.kfold(3, 0, shuffle=True, seed=2**64)
    with pytest.raises(TypeError):
        store.kfold(3.0, 0)
    with pytest.raises(TypeError):
        store.kfold(True, 0)
    a, b = store.kfold(3, 0, shuffle=True, seed=2**64 - 1)  # the largest seed is fine
    assert len(a) + len(b) == len(store)


def test_prefetch_is_a_checked_hint(fortunes):
    # A local store has nothing to fetch: the call returns None and changes
    # nothing; the example numbers are still checked, and a closed store refuses.
    with seqstore.open(fortunes) as s:
        before = bytes(s["tokens"][430])
        assert s.prefetch([0, 5, 430]) is None
        assert s.prefetch(np.arange(431)) is None
        assert s.prefetch([]) is None
        assert bytes(s["tokens"][430]) == before
        with pytest.raises(IndexError, match="431"):
            s.prefetch([0, 431])
        with pytest.raises(IndexError):
            s.prefetch([-1])
    with pytest.raises(seqstore.ClosedError):
        s.prefetch([0])
