# SPDX-License-Identifier: BSD-2-Clause
"""seqstore.WindowReader: windows against the stored signal, hidden-state
carry checked against a naive per-sequence record, resume, misuse."""
import numpy as np
import pytest

import seqstore

LENGTHS = [10, 13, 3, 16, 21, 7]


@pytest.fixture
def signal_path(tmp_path):
    p = str(tmp_path / "sig.ss")
    rng = np.random.default_rng(9)
    with seqstore.create(p, [("sig", "f32", (2,)), ("y", "i64", (), False)]) as w:
        for i, n in enumerate(LENGTHS):
            w.append({"sig": rng.standard_normal((n, 2)).astype(np.float32), "y": i % 2})
    return p


def run_epoch(store, r, H, states_of=None, batches=None):
    """Drive one epoch like a training loop; check every batch naively."""
    last = {} if states_of is None else states_of  # example -> last registered state
    starts = {}
    n = 0
    for b in r:
        n += 1
        if batches is not None:
            batches.append(b)
        final = np.zeros((b.size, H), np.float32)
        for k in range(b.size):
            if not b.mask[k]:
                continue
            ex, s = int(b.example[k]), int(b.start[k])
            sig = store["sig"][ex]
            np.testing.assert_array_equal(b.data[k], sig[s:s + len(b.data[k])])
            assert int(b.label[k]) == ex % 2
            if b.reset[k]:
                np.testing.assert_array_equal(b.state[k], np.zeros(H))
            else:  # the state registered for this sequence's previous window
                np.testing.assert_array_equal(b.state[k], last[ex])
            starts.setdefault(ex, []).append(s)
            final[k] = np.arange(H) + 1000 * ex + s  # distinct per window
            last[ex] = final[k]
        r.register(b, final)
    return starts, n


def test_windows_and_state_carry(signal_path):
    W, O, H = 4, 1, 3
    with seqstore.open(signal_path) as s:
        r = seqstore.WindowReader(s, "sig", window=W, overlap=O, lanes=2, state_size=H,
                                  label="y", shuffle=True, seed=5)
        for epoch in range(2):
            starts, _ = run_epoch(s, r, H)
            want = {i: list(range(0, n - W + 1, W - O)) for i, n in enumerate(LENGTHS) if n >= W}
            assert {k: sorted(v) for k, v in starts.items()} == want
        info = r.info()
        assert info["too_short"] == 1 and info["sequences"] == len(LENGTHS)
        assert info["epoch"] == 2  # the end of epoch 1 moved the reader on


def test_forget_state_hands_out_fresh_states(signal_path):
    with seqstore.open(signal_path) as s:
        r = seqstore.WindowReader(s, "sig", window=4, lanes=3, state_size=2, forget_state=True)
        for b in r:
            assert b.reset[b.mask].all() and not b.state.any()
            r.register(b, np.ones((b.size, 2), np.float32))


def test_resume_from_state_dict(signal_path):
    H = 2
    kw = dict(window=3, lanes=2, state_size=H, label="y", shuffle=True, seed=1)
    with seqstore.open(signal_path) as s:
        full = []
        r = seqstore.WindowReader(s, "sig", **kw)
        run_epoch(s, r, H, batches=full)
        r2 = seqstore.WindowReader(s, "sig", **kw)
        states, got = {}, []
        for b in r2:
            got.append(b)
            final = np.stack([np.arange(H) + 1000 * int(b.example[k]) + int(b.start[k])
                              if b.mask[k] else np.zeros(H) for k in range(b.size)]).astype(np.float32)
            r2.register(b, final)
            for k in range(b.size):
                if b.mask[k]:
                    states[int(b.example[k])] = final[k]
            if len(got) == 4:
                break
        saved = r2.state_dict()
        r2.close()
        r3 = seqstore.WindowReader(s, "sig", **kw)
        r3.load_state_dict(saved)
        run_epoch(s, r3, H, states_of=states, batches=got)
        assert len(got) == len(full)
        for a, b in zip(got, full):
            for key in ("data", "example", "start", "reset", "state", "mask"):
                np.testing.assert_array_equal(getattr(a, key), getattr(b, key))


def test_torch_states(signal_path):
    torch = pytest.importorskip("torch")
    with seqstore.open(signal_path) as s:
        r = seqstore.WindowReader(s, "sig", window=4, lanes=2, state_size=3, torch=True)
        b = next(r)
        assert isinstance(b.data, torch.Tensor) and b.data.shape == (2, 4, 2)
        h = torch.ones(2, 3, requires_grad=True) * 2  # a graph output: detached by register
        r.register(b, h)
        b2 = next(r)
        cont = ~b2.reset & b2.mask
        assert cont.any() and torch.equal(b2.state[cont], torch.full((int(cont.sum()), 3), 2.0))


def test_torch_u32_label(tmp_path):
    """A u32 label (what `seqstore convert edf --labels` writes) comes to
    torch as int64 (torch has no uint32); it raised TypeError before."""
    torch = pytest.importorskip("torch")
    p = str(tmp_path / "u32.ss")
    with seqstore.create(p, [("sig", "f32", (2,)), ("y", "u32", (), False)]) as w:
        for i in range(4):
            w.append({"sig": np.full((9, 2), i, np.float32), "y": 3_000_000_000 + i})
    with seqstore.open(p) as s:
        r = seqstore.WindowReader(s, "sig", window=3, lanes=4, label="y", torch=True)
        b = next(r)
        assert b.label.dtype == torch.int64
        assert sorted(b.label.tolist()) == [3_000_000_000 + i for i in range(4)]
        assert b.label.tolist() == [3_000_000_000 + int(x) for x in b.data[:, 0, 0].tolist()]


def test_misuse(signal_path):
    with seqstore.open(signal_path) as s:
        r = seqstore.WindowReader(s, "sig", window=4, lanes=2, state_size=3)
        b = next(r)
        with pytest.raises(seqstore.StateError, match="register"):
            next(r)  # the states of b first
        with pytest.raises(TypeError):
            r.register(b, np.zeros((2, 4), np.float32))  # wrong H
        with pytest.raises(TypeError):
            r.register("batch", np.zeros((2, 3)))
        with pytest.raises(seqstore.InvalidArgumentError):
            r.register(b, None)  # state is carried: states are required
        r.register(b, np.zeros((2, 3)))  # float64 converted to the state dtype
        with pytest.raises(ValueError, match="not the reader's latest"):
            r.register(b, np.zeros((2, 3)))  # twice
        b2 = next(r)
        with pytest.raises(ValueError, match="not the reader's latest"):
            r.register(b, np.zeros((2, 3)))  # a stale batch never reaches C
        r.register(b2, np.zeros((2, 3)))
        with pytest.raises(seqstore.InvalidArgumentError):
            seqstore.WindowReader(s, "sig", window=0)
        with pytest.raises(seqstore.InvalidArgumentError):
            r.load_state_dict({"seqstore_window_reader": b"junk"})
        with pytest.raises(seqstore.InvalidArgumentError):
            seqstore.WindowReader(s, "sig", window=4, overlap=4)
        with pytest.raises(seqstore.SchemaError):
            seqstore.WindowReader(s, "y", window=4)  # not a sequence field
        with pytest.raises(KeyError):
            seqstore.WindowReader(s, "nope", window=4)
        with pytest.raises(ValueError):
            seqstore.WindowReader(s, "sig", window=4, mode="backwards")
        with pytest.raises(TypeError):
            seqstore.WindowReader(s, "sig", window=-1)
        r.close()
        with pytest.raises(seqstore.ClosedError):
            next(r)


@pytest.fixture
def digital_path(tmp_path):
    """i16 recordings with per-channel gain and offset stored as attributes, as
    `seqstore convert edf` writes them (signal.gain, signal.offset)."""
    p = str(tmp_path / "edf.ss")
    rng = np.random.default_rng(4)
    with seqstore.create(p, [("eeg", "i16", (3,))]) as w:
        for n in (9, 14, 5):
            w.append({"eeg": rng.integers(-3000, 3000, (n, 3)).astype(np.int16)})
        w.attrs["signal.gain"] = np.array([0.5, 0.25, 2.0])
        w.attrs["signal.offset"] = np.array([1.0, -2.0, 0.0], np.float32)
        w.attrs["signal.labels"] = "a\nb\nc\n"
    return p


def physical_windows(store, gain, offset):
    """Every window's f32 physical values, naively: {(example, start): [W, C]}."""
    out = {}
    for ex in range(len(store)):
        x = store["eeg"][ex].astype(np.float64) * gain + offset
        for s in range(0, len(x) - 3, 4):
            out[(ex, s)] = x[s:s + 4].astype(np.float32)
    return out


@pytest.mark.parametrize("source", ["arrays", "attributes"])
def test_gain_and_offset(digital_path, source):
    gain, offset = np.array([0.5, 0.25, 2.0]), np.array([1.0, -2.0, 0.0])
    with seqstore.open(digital_path) as s:
        want = physical_windows(s, gain, offset)
        kw = (dict(gain=gain, offset=offset) if source == "arrays"
              else dict(gain="signal.gain", offset="signal.offset"))
        r = seqstore.WindowReader(s, "eeg", window=4, lanes=2, out_dtype="f32", **kw)
        got = {}
        for b in r:
            assert b.data.dtype == np.float32
            for k in np.flatnonzero(b.mask):
                got[(int(b.example[k]), int(b.start[k]))] = b.data[k]
            r.register(b)
        assert sorted(got) == sorted(want)
        for key, x in want.items():
            np.testing.assert_allclose(got[key], x, rtol=1e-6)


def test_gain_attribute_misuse(digital_path):
    with seqstore.open(digital_path) as s:
        def reader(**kw):
            return seqstore.WindowReader(s, "eeg", window=4, out_dtype="f32", **kw)
        with pytest.raises(seqstore.NotFoundError, match="nope"):
            reader(gain="nope")
        with pytest.raises(seqstore.Error, match="signal.labels"):
            reader(offset="signal.labels")  # text, not numbers
        with pytest.raises(TypeError):
            reader(gain=b"signal.gain")


def test_gain_offset_count_and_integer_ranges(digital_path):
    # gain/offset hold one number per channel: fewer would be read past their end
    with seqstore.open(digital_path) as s:
        def reader(**kw):
            return seqstore.WindowReader(s, "eeg", **{"window": 4, "out_dtype": "f32", **kw})
        with pytest.raises(ValueError, match="gain.*1.*3 channels"):
            reader(gain=[1.0])
        with pytest.raises(ValueError, match="offset.*4.*3 channels"):
            reader(offset=[1.0, 2.0, 3.0, 4.0])
        for kw in (dict(lanes=2**32), dict(window=2**64), dict(seed=2**64),
                   dict(threads=2**31), dict(state_size=2**64)):
            with pytest.raises(ValueError, match=list(kw)[0]):
                reader(**kw)
        r = reader()
        with pytest.raises(ValueError, match="epoch"):
            r.set_epoch(-1)


# ---------------------------------------------------------------- C options

def epoch_batches(r, H=0):
    out = []
    for b in r:
        out.append(b)
        r.register(b, np.zeros((b.size, H), np.float32) if H else None)
    return out


def windows(batches):
    return sorted((int(b.example[k]), int(b.start[k])) for b in batches
                  for k in range(b.size) if b.mask[k])


def test_shrink_redraw_drop_last(signal_path):
    kw = dict(window=3, lanes=4)
    with seqstore.open(signal_path) as s:
        plain = epoch_batches(seqstore.WindowReader(s, "sig", **kw))
        every = windows(plain)
        assert every == sorted((i, t) for i, n in enumerate(LENGTHS) for t in range(0, n - 2, 3))
        masked = sum(int((~b.mask).sum()) for b in plain) / sum(b.size for b in plain)
        assert masked > 0.25  # 6 sequences in 4 lanes: lanes run empty
        # shrink: the same windows, empty lanes dropped (smaller batches, no masked rows)
        shrunk = epoch_batches(seqstore.WindowReader(s, "sig", shrink=True, **kw))
        assert windows(shrunk) == every
        assert all(b.mask.all() for b in shrunk) and min(b.size for b in shrunk) < 4
        # redraw: a lane takes the next sequence at every batch, so fewer masked rows
        red = epoch_batches(seqstore.WindowReader(s, "sig", redraw=True, **kw))
        assert windows(red) == every
        assert sum(int((~b.mask).sum()) for b in red) < sum(int((~b.mask).sum()) for b in plain)
        # drop_last: the epoch ends at the first batch with fewer than 4 windows
        dl = epoch_batches(seqstore.WindowReader(s, "sig", drop_last=True, **kw))
        assert all(int(b.mask.sum()) == 4 for b in dl)
        full = 0
        for b in plain:
            if int(b.mask.sum()) < 4:
                break
            full += 1
        assert len(dl) == full and windows(dl) == windows(plain[:full])


def test_balanced_lanes(signal_path):
    with seqstore.open(signal_path) as s:
        with pytest.raises(seqstore.InvalidArgumentError, match="label"):
            seqstore.WindowReader(s, "sig", window=3, lanes=2, balanced=True)
        r = seqstore.WindowReader(s, "sig", window=3, lanes=2, label="y", balanced=True, seed=1)
        batches = epoch_batches(r)
        classes = {int(b.example[k]) % 2 for b in batches for k in range(b.size) if b.mask[k]}
        assert classes == {0, 1} and r.info()["classes"] == 2
        for b in batches:  # each batch holds both classes, one per lane pair
            ys = [int(b.example[k]) % 2 for k in range(b.size) if b.mask[k]]
            assert sorted(ys) == [0, 1] if len(ys) == 2 else True


def test_max_pending_and_initial_state(signal_path):
    H = 3
    init = np.array([1.5, -2.0, 7.0], np.float32)
    with seqstore.open(signal_path) as s:
        strict = seqstore.WindowReader(s, "sig", window=3, lanes=2, state_size=H)
        next(strict)
        with pytest.raises(seqstore.Error, match="register"):
            next(strict)
        r = seqstore.WindowReader(s, "sig", window=3, lanes=2, state_size=H, max_pending=2,
                                  initial_state=init)
        a, b = next(r), next(r)  # two out before either is registered
        assert set(a.example[a.mask].tolist()).isdisjoint(b.example[b.mask].tolist())
        for x in (a, b):
            for k in np.flatnonzero(x.mask & x.reset):
                np.testing.assert_array_equal(x.state[k], init)
        with pytest.raises(ValueError, match="initial_state"):
            seqstore.WindowReader(s, "sig", window=3, lanes=2, state_size=H, initial_state=[1.0])
        with pytest.raises(seqstore.InvalidArgumentError):
            seqstore.WindowReader(s, "sig", window=3, lanes=2, drop_last=True, max_pending=2)


def test_window_transforms(signal_path):
    from seqstore import transforms as T
    with seqstore.open(signal_path) as s:
        def data(**kw):
            return [b.data.copy() for b in epoch_batches(
                seqstore.WindowReader(s, "sig", window=4, lanes=2, seed=3, **kw))]
        plain = data()
        noisy = data(transforms=[T.GaussianNoise("sig", 0.5)])
        again = data(transforms=[T.GaussianNoise("sig", 0.5)], threads=2)
        assert len(plain) == len(noisy)
        for p, n, a in zip(plain, noisy, again):
            np.testing.assert_array_equal(n, a)  # per (seed, epoch, sequence, start)
        diff = np.concatenate([(n - p).ravel() for p, n in zip(plain, noisy)])
        nz = diff[diff != 0]
        assert nz.size > 0.9 * sum((p != 0).sum() for p in plain) * 0.5 and 0.3 < nz.std() < 0.7
        with pytest.raises(TypeError, match="transforms"):
            seqstore.WindowReader(s, "sig", window=4, transforms=[object()])


def _drive(r, H, steps):
    """`steps` next() calls (end markers included) registering made-up
    states; returns every batch's arrays and the end markers."""
    out = []
    it = iter(r)
    for _ in range(steps):
        try:
            b = next(it)
        except StopIteration:
            out.append("END")
            continue
        out.append({k: np.array(getattr(b, k)) for k in b.keys()})
        final = (np.arange(b.size * H, dtype=np.float32).reshape(b.size, H)
                 + 7 * np.asarray(b.start, np.float32)[:, None] + np.asarray(b.example)[:, None])
        r.register(b, final)
    return out


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, str) or isinstance(y, str):
            assert x == y
            continue
        assert x.keys() == y.keys()
        for k in x:
            np.testing.assert_array_equal(x[k], y[k], err_msg=k)


@pytest.mark.parametrize("kw", [dict(mode="random_start", shuffle=True, seed=3),
                                dict(redraw=True, shuffle=True, seed=4),
                                dict(mode="random", seed=5, lanes=2)])
def test_prefetch_same_batches_and_states(signal_path, kw):
    """The next batch collated ahead in the reader's thread: the same
    batches, carried states and saved positions as collated in next(), and a
    position saved by either resumes in either."""
    H = 3
    kw = dict(dict(window=4, overlap=1, lanes=3, state_size=H, label="y"), **kw)
    with seqstore.open(signal_path) as s:
        ref = _drive(seqstore.WindowReader(s, "sig", prefetch=False, **kw), H, 40)
        assert sum(x == "END" for x in ref) >= 2
        with seqstore.WindowReader(s, "sig", **kw) as r:
            assert not r.prefetch  # the default
        with seqstore.WindowReader(s, "sig", prefetch=True, **kw) as r:
            _same(_drive(r, H, 40), ref)
        for k in (0, 3, 11):
            for a, b in ((True, False), (False, True), (True, True)):
                r = seqstore.WindowReader(s, "sig", prefetch=a, **kw)
                _drive(r, H, k)
                saved = r.state_dict()
                r2 = seqstore.WindowReader(s, "sig", prefetch=b, **kw)
                r2.load_state_dict(saved)
                _same(_drive(r2, H, 40 - k), ref[k:])
                _same(_drive(r, H, 40 - k), ref[k:])


def test_prefetch_options(signal_path):
    with seqstore.open(signal_path) as s:
        with pytest.raises(ValueError, match="max_pending"):
            seqstore.WindowReader(s, "sig", window=4, lanes=2, max_pending=2, prefetch=True)
        with pytest.raises(TypeError, match="prefetch"):
            seqstore.WindowReader(s, "sig", window=4, lanes=2, prefetch=1)
        # strict mode stays strict with a batch collated ahead
        r = seqstore.WindowReader(s, "sig", window=4, lanes=2, state_size=2, prefetch=True)
        b = next(iter(r))
        with pytest.raises(seqstore.StateError):
            next(iter(r))
        r.register(b, np.zeros((b.size, 2), np.float32))
        assert next(iter(r)).id == b.id + 1
