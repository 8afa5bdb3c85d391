# SPDX-License-Identifier: BSD-2-Clause
"""Integrity from Python: seqstore.open(verify=True) checks each data chunk's
checksum before a view into it is handed out (SS_OPEN_VERIFY), and
Store.verify() recomputes every checksum (as `seqstore verify` does).

The damage is one flipped byte inside a data chunk's payload, found by
content: example 1's tokens are a run of values no other example has, so
their bytes occur once in the file (a chunk's payload is stored as written,
spec/FORMAT.md §6.1)."""
import os
import pickle
import subprocess

import numpy as np
import pytest

import seqstore

MARK = (np.arange(32, dtype=np.uint16) * 0x0101 + 0x4d2).astype(np.uint16)
N = 40


def _examples():
    out = []
    for i in range(N):
        toks = MARK if i == 1 else np.full(i % 7, i, dtype=np.uint16)
        out.append({"tokens": toks, "label": np.int64(i)})
    return out


def _make(path):
    with seqstore.create(path, [("tokens", "u16"), ("label", "i64", (), False)]) as w:
        for ex in _examples():
            w.append(ex)
    return path


def _flip(path, k):
    """Flip byte `k` of example 1's tokens (k in [0, 64)) in the file."""
    data = bytearray(open(path, "rb").read())
    at = data.find(MARK.tobytes())
    assert at > 0 and data.find(MARK.tobytes(), at + 1) < 0, "the mark is not unique"
    data[at + k] ^= 0xFF
    open(path, "wb").write(bytes(data))


@pytest.fixture
def damaged(tmp_path):
    path = _make(str(tmp_path / "d.ss"))
    _flip(path, 5)
    return path


def test_without_verify_the_flip_is_read(damaged):
    # What verify=True exists for: a plain open trusts the mapped data.
    with seqstore.open(damaged) as s:
        got = np.asarray(s["tokens"][1])
        assert got.tobytes() != MARK.tobytes()
        assert (got != MARK).sum() == 1


@pytest.mark.parametrize("k", [0, 5, 17, 31, 63])
def test_verify_on_read_raises(tmp_path, k):
    path = _make(str(tmp_path / "d.ss"))
    _flip(path, k)
    with seqstore.open(path, verify=True) as s:
        with pytest.raises(seqstore.CorruptError, match="tokens") as e:
            s["tokens"][1]
        assert e.value.code == -5
        with pytest.raises(seqstore.CorruptError):
            s[1]  # every field of the example
        with pytest.raises(seqstore.CorruptError):
            s["tokens"][0:3]
        with pytest.raises(seqstore.CorruptError):
            for ex in s:
                pass
        with pytest.raises(seqstore.CorruptError):
            list(s["tokens"])
        # label is another field, in other chunks: still readable
        assert int(s["label"][1]) == 1


def test_verify_on_read_loader_raises(damaged):
    with seqstore.open(damaged, verify=True) as s:
        loader = seqstore.Loader(s, batch_size=4, fields={"tokens": {"dtype": "i64"}})
        with pytest.raises(seqstore.CorruptError, match="tokens"):
            for _ in loader:
                pass
        loader.close()


def test_loader_without_verify_reads_the_flip(damaged):
    with seqstore.open(damaged) as s:
        loader = seqstore.Loader(s, batch_size=N, fields={"tokens": {"dtype": "i64"}})
        batch = next(iter(loader))
        row = batch["tokens"][list(batch["index"]).index(1)][:len(MARK)]
        assert (row != MARK.astype(np.int64)).sum() == 1
        loader.close()


def test_sound_store_verifies(tmp_path):
    path = _make(str(tmp_path / "ok.ss"))
    with seqstore.open(path, verify=True) as s:
        assert s.verify() is None
        assert s.verified
        got = list(s)  # iteration yields every example in order
        assert len(got) == N
        for ex, want in zip(got, _examples()):
            np.testing.assert_array_equal(ex["tokens"], want["tokens"])
            assert ex["label"] == want["label"]
        assert [int(v) for v in s["label"]] == list(range(N))
    with seqstore.open(path) as s:
        assert not s.verified
        assert s.verify() is None


def test_verify_method_reports_damage(damaged):
    with seqstore.open(damaged) as s:  # verify() needs no verify=True
        with pytest.raises(seqstore.CorruptError, match="field 'tokens' data chunk 0 .examples 0 to 39.: data chunk checksum mismatch") as e:
            s.verify()
        assert e.value.code == -5
        assert len(e.value.problems) == 1
        assert "checksum" in e.value.problems[0]
        s.close()
        with pytest.raises(seqstore.ClosedError):
            s.verify()


def test_verify_flag_survives_pickle(damaged):
    with seqstore.open(damaged, verify=True) as s:
        s2 = pickle.loads(pickle.dumps(s))
    with s2:
        assert s2.verified
        with pytest.raises(seqstore.CorruptError):
            s2["tokens"][1]


def test_verify_argument_is_checked(tmp_path):
    path = _make(str(tmp_path / "ok.ss"))
    with pytest.raises(TypeError):
        seqstore.open(path, True)  # keyword-only, like the other flags


def test_dataset_verify(tmp_path):
    cli = os.environ.get("SEQSTORE_CLI")
    if not cli:
        pytest.skip("SEQSTORE_CLI not set")
    _make(str(tmp_path / "a.ss"))
    _make(str(tmp_path / "b.ss"))
    subprocess.run([cli, "dataset", "build", str(tmp_path), "a.ss", "b.ss"], check=True,
                   capture_output=True)
    with seqstore.open(str(tmp_path), verify=True) as s:
        assert s.verify() is None
    _flip(str(tmp_path / "b.ss"), 9)
    with seqstore.open(str(tmp_path), verify=True) as s:
        np.testing.assert_array_equal(s["tokens"][1], MARK)  # shard a is sound
        with pytest.raises(seqstore.CorruptError, match="tokens"):
            s["tokens"][N + 1]
        with pytest.raises(seqstore.CorruptError):
            s.verify()
    with seqstore.open(str(tmp_path)) as s:
        with pytest.raises(seqstore.CorruptError):
            s.verify()


def test_torch_datasets_by_path_verify(damaged):
    st = pytest.importorskip("seqstore.torch")
    ds = st.Dataset(damaged, verify=True)
    with pytest.raises(seqstore.CorruptError):
        ds[1]
    ds = pickle.loads(pickle.dumps(ds))  # a spawned worker verifies too
    with pytest.raises(seqstore.CorruptError):
        ds[1]
    assert st.Dataset(damaged)[1]["tokens"].numpy().tobytes() != MARK.tobytes()
    it = st.IterableDataset(damaged, verify=True)
    with pytest.raises(seqstore.CorruptError):
        list(it)
    collate = st.Collate(damaged, fields={"tokens": {"dtype": "i64"}}, verify=True)
    with pytest.raises(seqstore.CorruptError):
        collate([0, 1])
    collate = pickle.loads(pickle.dumps(collate))
    with pytest.raises(seqstore.CorruptError):
        collate([1])
    sampler = st.BatchSampler(damaged, batch_size=4, verify=True)  # reads the data in C
    with pytest.raises(seqstore.CorruptError):
        list(sampler)
    assert len(list(st.BatchSampler(damaged, batch_size=4))) == N // 4


def test_every_byte_of_the_example_is_checked(tmp_path):
    # Each of the 64 bytes of example 1's tokens flipped in turn: every flip
    # is read back silently without verify and raises with it.
    pristine = open(_make(str(tmp_path / "p.ss")), "rb").read()
    path = str(tmp_path / "d.ss")
    for k in range(MARK.nbytes):
        open(path, "wb").write(pristine)
        _flip(path, k)
        with seqstore.open(path) as s:
            assert np.asarray(s["tokens"][1]).tobytes() != MARK.tobytes()
        with seqstore.open(path, verify=True) as s:
            with pytest.raises(seqstore.CorruptError):
                s["tokens"][1]


def test_close_during_verify(tmp_path):
    # verify() runs without the GIL; a close() from another thread meanwhile
    # must not free the store under it (under ASan a use after free aborts).
    import threading
    path = str(tmp_path / "big.ss")
    block = np.arange(1 << 20, dtype=np.uint16)  # 2 MiB an example
    with seqstore.create(path, [("x", "u16")]) as w:
        for _ in range(16):
            w.append({"x": block})
    for _ in range(3):
        s = seqstore.open(path)
        errors = []

        def run():
            try:
                s.verify()
            except seqstore.ClosedError as e:  # closed before it began
                errors.append(e)

        t = threading.Thread(target=run)
        t.start()
        s.close()
        t.join()
        assert len(errors) <= 1
