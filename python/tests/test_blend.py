# SPDX-License-Identifier: BSD-2-Clause
"""seqstore.Blend: batches blended from several stores against a naive
Python blend (Megatron's greedy rule, Hugging Face's stopping rules),
proportions over 100,000 samples, exact resume, ranks x workers, schemas."""
import numpy as np
import pytest

import seqstore

SIZES = [40, 60, 25]
WEIGHTS = [0.5, 0.3, 0.2]


def _make(path, j, size, tok="u16"):
    with seqstore.create(path, [("tokens", tok), ("label", "i32", (), False)], force=True) as w:
        for i in range(size):
            dt = np.uint16 if tok == "u16" else np.int32
            w.append({"tokens": np.full(i % 5 + 1, j * 100 + i % 100, dt), "label": j * 1000 + i})


@pytest.fixture
def stores(tmp_path):
    out = []
    for j, n in enumerate(SIZES):
        p = str(tmp_path / ("s%d.ss" % j))
        _make(p, j, n)
        out.append(seqstore.open(p))
    yield out
    for s in out:
        s.close()


def naive(n_max, stop):
    """The global stream: (source, index without shuffle), stopping as HF."""
    w = [x / sum(WEIGHTS) for x in WEIGHTS]
    c = [0] * len(w)
    out = []
    while len(out) < n_max:
        done = sum(c[j] >= SIZES[j] for j in range(len(w)))
        if (stop == "first_exhausted" and done) or (stop == "all_exhausted" and done == len(w)):
            break
        n1 = float(len(out) + 1)
        errs = [w[j] * n1 - float(c[j]) for j in range(len(w))]
        j = errs.index(max(errs))  # the lowest j among ties
        out.append((j, c[j] % SIZES[j]))
        c[j] += 1
    return out


def rows(blend, max_batches=None):
    got = []
    for k, b in enumerate(blend):
        for src, ix, lab, toks, n in zip(b["source"], b["index"], b["label"], b["tokens"],
                                         b["tokens_lengths"]):
            assert lab == src * 1000 + ix  # the row's data is its example's
            assert n == ix % 5 + 1 and (toks[:n] == src * 100 + ix % 100).all()
            got.append((int(src), int(ix)))
        if max_batches is not None and k + 1 == max_batches:
            break
    return got


def test_proportions_over_100000_samples(stores):
    b = seqstore.Blend(stores, WEIGHTS, batch_size=1000, fields=["tokens", "label"], seed=4)
    assert b.length is None
    c, n = np.zeros(3), 0
    it = iter(b)
    for _ in range(100):
        batch = next(it)
        c += np.bincount(batch["source"], minlength=3)
        n += len(batch["source"])
        assert (np.abs(c - np.array(WEIGHTS) * n) < 1).all()
    assert n == 100000
    assert [s[0] for s in b.sources()] == c.astype(int).tolist()
    assert [s[1] for s in b.sources()] == [int(c[j]) // SIZES[j] for j in range(3)]


@pytest.mark.parametrize("stop", ["first_exhausted", "all_exhausted"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_exhaustion_against_naive(stores, stop, shuffle):
    want = naive(10**6, stop)
    b = seqstore.Blend(stores, WEIGHTS, batch_size=7, seed=2, shuffle=shuffle, stop=stop)
    got = rows(b)
    assert b.length == len(got) == len(want)
    assert [s for s, _ in got] == [s for s, _ in want]
    if not shuffle:
        assert got == want
    epochs = [e for _, e in b.sources()]
    assert (min(epochs) >= 1) if stop == "all_exhausted" else (sum(e >= 1 for e in epochs) == 1)


def test_resume_mid_blend(stores):
    kw = dict(batch_size=5, seed=9, stop="all_exhausted")
    want = rows(seqstore.Blend(stores, WEIGHTS, **kw))
    a = seqstore.Blend(stores, WEIGHTS, **kw)
    first = rows(a, 3)
    state = a.state_dict()
    b = seqstore.Blend(stores, WEIGHTS, **kw)
    b.load_state_dict(state)
    assert first + rows(b) == want
    other = seqstore.Blend(stores, WEIGHTS, batch_size=4, seed=9, stop="all_exhausted")
    with pytest.raises(ValueError, match="other options"):
        other.load_state_dict(state)


def test_ranks_workers_partition_the_stream(stores):
    want = rows(seqstore.Blend(stores, WEIGHTS, batch_size=3, seed=5, stop="first_exhausted"))
    R, W = 2, 2
    seen = {}
    for r in range(R):
        for w in range(W):
            got = rows(seqstore.Blend(stores, WEIGHTS, batch_size=3, seed=5, stop="first_exhausted",
                                      rank=r, world_size=R, worker=w, num_workers=W))
            me = r + R * w
            for i, row in enumerate(got):
                seen[me + R * W * i] = row
    assert sorted(seen) == list(range(len(want)))
    assert [seen[n] for n in range(len(want))] == want


def test_schema_mismatch_and_misuse(stores, tmp_path):
    p = str(tmp_path / "bad.ss")
    _make(p, 3, 10, tok="i32")
    with seqstore.open(p) as bad:
        with pytest.raises(ValueError, match="source 2 \\(of 3\\): field 'tokens' is i32"):
            seqstore.Blend([stores[0], stores[1], bad], WEIGHTS, batch_size=4)
    with pytest.raises(ValueError, match="weights"):
        seqstore.Blend(stores, [1, 2], batch_size=4)
    with pytest.raises(ValueError, match="stop"):
        seqstore.Blend(stores, WEIGHTS, batch_size=4, stop="never")
    with pytest.raises(ValueError, match="weight 1"):
        seqstore.Blend(stores, [1, 0, 1], batch_size=4)
    b = seqstore.Blend(stores, WEIGHTS, batch_size=4)
    it = iter(b)
    b.close()
    with pytest.raises(seqstore.ClosedError):
        next(it)


def test_iter_starts_a_pass(stores):
    kw = dict(batch_size=4, fields=["tokens", "label"], seed=2, stop="all_exhausted")
    want = rows(seqstore.Blend(stores, WEIGHTS, **kw))
    b = seqstore.Blend(stores, WEIGHTS, **kw)
    peek = next(iter(b))  # a peek does not eat into the loop
    assert [(int(s), int(i)) for s, i in zip(peek["source"], peek["index"])] == want[:4]
    it = iter(b)
    assert rows(b) == want  # a for: a new pass from the start
    with pytest.raises(RuntimeError, match="iterated again"):
        next(it)
    assert rows(b, 2) == want[:8]  # left by break ...
    assert rows(b) == want  # ... the next loop starts over
    assert rows(b) == want  # and after a finished pass too
    a = seqstore.Blend(stores, WEIGHTS, **kw)
    first = rows(a, 3)
    b.load_state_dict(a.state_dict())
    assert first + rows(b) == want  # after load_state_dict: the rest of the saved stream
