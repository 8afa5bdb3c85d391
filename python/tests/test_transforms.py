# SPDX-License-Identifier: BSD-2-Clause
"""Loader(transforms=[...]): the C built-in transforms from Python, compared
with a naive NumPy reimplementation that has its own copy of the library's
counter-based generator (sdk/rng.c: SplitMix64-finalizer streams keyed by
hash(seed, epoch, example), stream SS_TRANSFORM_STREAM + position). Every
transform but Standardize is reproduced bit for bit."""
import math

import numpy as np
import pytest

import seqstore
from seqstore.transforms import (GaussianNoise, LabelMap, RandomCrop, Standardize, TokenDrop,
                                 TokenMask)

M64 = 2**64 - 1
GOLDEN = 0x9E3779B97F4A7C15
XFRM = 0x7866726D00000000  # SS_TRANSFORM_STREAM


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def rng_hash(seed, a, b):
    h = mix64((seed + GOLDEN) & M64)
    h = mix64(h ^ ((a + 0x6A09E667F3BCC909) & M64))
    return mix64(h ^ ((b + 0xBB67AE8584CAA73B) & M64))


class Rng:
    def __init__(self, seed, stream):
        self.k0 = rng_hash(seed, stream, 0x3C6EF372FE94F82B)
        self.k1 = rng_hash(seed, stream, 0xA54FF53A5F1D36F1)
        self.ctr = 0

    def next(self):
        c, self.ctr = self.ctr, self.ctr + 1
        return mix64((mix64(((c * GOLDEN) & M64) ^ self.k0) + self.k1) & M64)

    def below(self, n):
        if n <= 1:
            return 0
        m = self.next() * n
        if (m & M64) < n:
            threshold = (2**64 - n) % n
            while (m & M64) < threshold:
                m = self.next() * n
        return m >> 64

    def uniform(self):
        return (self.next() >> 11) * 2.0**-53

    def normal(self):
        u1 = 1.0 - self.uniform()
        u2 = self.uniform()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586476925 * u2)


def saturate(v, dtype):
    info = np.iinfo(dtype)
    return min(max(v, info.min), info.max)


# Naive versions: (array, parameters, rng) -> array, following transform.h.
def crop(x, n, rng):
    if len(x) <= n:
        return x
    s = rng.below(len(x) - n + 1)
    return x[s:s + n]


def noise(x, sigma, rng):
    y = x.copy().reshape(-1)
    for i in range(y.size):
        y[i] = y[i] + y.dtype.type(sigma * rng.normal())
    return y.reshape(x.shape)


def mask(x, mask_value, prob, random_prob, keep_prob, vocab, rng):
    y = x.copy()
    for i in range(y.size):
        if rng.uniform() >= prob:
            continue
        v = rng.uniform()
        if v < 1.0 - random_prob - keep_prob:
            y[i] = saturate(mask_value, y.dtype)
        elif v < 1.0 - keep_prob:
            y[i] = saturate(rng.below(vocab), y.dtype)
    return y


def drop(x, prob, rng):
    keep = [t for t in range(len(x)) if not rng.uniform() < prob]
    return x[keep]


N = 60


@pytest.fixture
def aug_store(tmp_path):
    path = str(tmp_path / "aug.ss")
    rng = np.random.default_rng(11)
    rows = []
    with seqstore.create(path, [("tokens", "u16"), ("feat", "f32", (3,)),
                                ("label", "i64", (), False)]) as w:
        for i in range(N):
            n = int(rng.integers(0, 30))
            ex = {"tokens": rng.integers(0, 1000, n).astype(np.uint16),
                  "feat": rng.standard_normal((n, 3)).astype(np.float32) * 4 + 1,
                  "label": np.int64(i % 5)}
            rows.append(ex)
            w.append(ex)
        w.attrs["ss.norm.feat.mean"] = np.array([1.0, 0.5, -2.0])
        w.attrs["ss.norm.feat.std"] = np.array([4.0, 2.0, 0.25])
    return path, rows


TABLE = [3, 1, 4, 1, 5]
PIPE = [TokenDrop("tokens", 0.2), RandomCrop("tokens", 12),
        TokenMask("tokens", mask_value=70000, prob=0.3, random_prob=0.2, keep_prob=0.1,
                  vocab=50000),
        GaussianNoise("feat", 0.5), RandomCrop("feat", 10), LabelMap("label", TABLE)]


def expected(row, seed, epoch, index):
    r = [Rng(rng_hash(seed, epoch, index), XFRM + p) for p in range(len(PIPE))]
    t = drop(row["tokens"], 0.2, r[0])
    t = crop(t, 12, r[1])
    t = mask(t, 70000, 0.3, 0.2, 0.1, 50000, r[2])
    f = noise(row["feat"], 0.5, r[3])
    f = crop(f, 10, r[4])
    return t, f, TABLE[int(row["label"])]


def check_batch(b, rows, seed, epoch):
    for r, idx in enumerate(b["index"]):
        t, f, lab = expected(rows[idx], seed, epoch, int(idx))
        assert b["tokens_lengths"][r] == len(t)
        np.testing.assert_array_equal(b["tokens"][r, :len(t)], t.astype(np.int64))
        assert np.all(b["tokens"][r, len(t):] == -1)
        assert b["feat_lengths"][r] == len(f)
        np.testing.assert_array_equal(b["feat"][r, :len(f)], f)  # bit for bit
        assert b["label"][r] == lab


FIELDS = {"tokens": {"dtype": "i64", "pad": -1}, "feat": {}, "label": {}}


@pytest.mark.parametrize("threads", [1, 2])
def test_pipeline_equals_naive_numpy(aug_store, threads):
    path, rows = aug_store
    with seqstore.open(path) as s:
        loader = seqstore.Loader(s, batch_size=8, shuffle=True, seed=7, threads=threads,
                                 fields=FIELDS, transforms=PIPE)
        seen_masked = 0
        for epoch in range(2):
            for b in loader:
                assert loader.epoch == epoch  # a new for loop starts the next epoch
                check_batch(b, rows, 7, epoch)
                seen_masked += int(np.sum(b["tokens"] == 65535))  # 70000 saturated to u16
        assert seen_masked > 0
        loader.close()


def test_deterministic_per_seed_epoch_example_and_resume(aug_store):
    path, rows = aug_store
    with seqstore.open(path) as s:
        def run(seed, threads=1, epochs=1):
            ld = seqstore.Loader(s, batch_size=8, shuffle=True, seed=seed, threads=threads,
                                 fields=FIELDS, transforms=PIPE)
            out = []
            for _ in range(epochs):
                out.append([b for b in ld])
            ld.close()
            return out
        a, b = run(7, 1, 2), run(7, 2, 2)
        for ea, eb in zip(a, b):
            for x, y in zip(ea, eb):
                for k in x:
                    np.testing.assert_array_equal(x[k], y[k])
        # another epoch augments the same example differently; so does another seed
        first = {int(i): row for bt in a[0] for i, row in zip(bt["index"], bt["feat"])}
        second = {int(i): row for bt in a[1] for i, row in zip(bt["index"], bt["feat"])}
        assert any(not np.array_equal(first[i], second[i]) for i in first if len(rows[i]["feat"]))
        # resume mid-epoch from a state_dict: the same augmented batches follow
        ld = seqstore.Loader(s, batch_size=8, shuffle=True, seed=7, fields=FIELDS,
                             transforms=PIPE)
        it = iter(ld)
        next(it), next(it)
        state = ld.state_dict()
        ld.close()
        ld2 = seqstore.Loader(s, batch_size=8, shuffle=True, seed=7, fields=FIELDS,
                              transforms=PIPE, threads=2)
        ld2.load_state_dict(state)
        rest = list(ld2)
        assert len(rest) == len(a[0]) - 2
        for x, y in zip(rest, a[0][2:]):
            for k in x:
                np.testing.assert_array_equal(x[k], y[k])
        ld2.close()


def test_standardize_explicit_and_from_attributes(aug_store):
    path, rows = aug_store
    mean, std = np.array([1.0, 0.5, -2.0]), np.array([4.0, 2.0, 0.25])
    with seqstore.open(path) as s:
        for t in (Standardize("feat", mean, std), Standardize("feat"),
                  Standardize("feat", prefix="ss.norm.feat")):
            ld = seqstore.Loader(s, batch_size=16, fields=["feat"], transforms=[t])
            for b in ld:
                assert b["feat"].dtype == np.float32
                for r, idx in enumerate(b["index"]):
                    x = rows[idx]["feat"].astype(np.float64)
                    np.testing.assert_allclose(b["feat"][r, :len(x)], (x - mean) / std,
                                               rtol=1e-5, atol=1e-5)
            ld.close()
        # a u16 field standardized becomes f32: torch accepts it
        pytest.importorskip("torch")
        ld = seqstore.Loader(s, batch_size=4, fields=["tokens"], torch=True,
                             transforms=[Standardize("tokens", [500.0], [300.0])])
        b = next(iter(ld))
        assert str(b["tokens"].dtype) == "torch.float32"
        ld.close()


def test_bad_transforms(aug_store):
    path, _ = aug_store
    with seqstore.open(path) as s:
        def loader(ts, **kw):
            return seqstore.Loader(s, batch_size=4, transforms=ts, **kw)
        with pytest.raises(TypeError):
            loader(RandomCrop("tokens", 3))  # not a list
        with pytest.raises(TypeError):
            loader([("random_crop", "tokens", 3)])
        with pytest.raises(TypeError):
            RandomCrop(3, 3)
        with pytest.raises(ValueError):
            RandomCrop("tokens", 0)
        with pytest.raises(ValueError, match="outside"):
            loader([TokenDrop("tokens", 1.5)])
        with pytest.raises(ValueError, match="sigma"):
            loader([GaussianNoise("feat", -1)])
        with pytest.raises(ValueError, match="vocab"):
            loader([TokenMask("tokens", mask_value=0)])  # random_prob 0.1 needs a vocab
        with pytest.raises(ValueError):
            Standardize("feat", [1.0, 2.0], [1.0])
        with pytest.raises(seqstore.NotFoundError):
            loader([Standardize("feat", prefix="nope")])
        with pytest.raises(ValueError):
            loader([Standardize("feat", [0.0], [0.0])])  # std 0
        # errors met while transforming: raised by next(), naming the example
        with pytest.raises(seqstore.Error, match="label_map"):
            next(iter(loader([LabelMap("label", [0, 1])])))
        with pytest.raises(seqstore.Error, match="f32 or f64"):
            next(iter(loader([GaussianNoise("tokens", 1.0)])))
        # a field the loader does not output, or the store lacks: refused at open, by name
        with pytest.raises(ValueError, match="'feat' is not an output field"):
            loader([RandomCrop("feat", 2)], fields=["tokens"])
        with pytest.raises(KeyError, match="nope"):
            loader([RandomCrop("nope", 2)])
        # a failed open leaks nothing and leaves the store usable
        ld = loader([RandomCrop("tokens", 2)])
        assert all(b["tokens_lengths"].max() <= 2 for b in ld)
        ld.close()
