# SPDX-License-Identifier: BSD-2-Clause
"""Writes that bypass a view's read-only flag (torch.from_numpy(view).add_(1),
ctypes) must not crash the interpreter and must never reach the store file.

Views are read-only arrays over a private copy-on-write mapping of the store
file: reading shares the page cache (zero-copy); a forced write copies the
touched page for this process only. What such a write changes, precisely:
the written bytes as seen through views of this Store object (every view of
those bytes taken from it, before or after). What it never changes: the file,
other processes, other Store objects (each maps its own copy), the C library's
own reads (Loader, Collator, WindowReader, flat reads: they read LMDB's map),
and bytes that were not written, even on the same page."""
import ctypes
import hashlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import seqstore

N, WIDTH = 400, 256  # 400 x 1 KiB of f32: examples spread over ~100 pages


def _sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture
def big(tmp_path):
    path = str(tmp_path / "cow.ss")
    rng = np.random.default_rng(3)
    rows = [rng.standard_normal(WIDTH).astype(np.float32) for _ in range(N)]
    with seqstore.create(path, [("x", "f32"), ("label", "i64", (), False)]) as w:
        for i, r in enumerate(rows):
            w.append({"x": r, "label": i})
        w.attrs["scale"] = np.array([0.5, 2.0])
    return path, rows


def _run(code):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_torch_add_through_a_view_does_not_crash(big):
    pytest.importorskip("torch")
    path, rows = big
    before = _sha(path)
    r = _run(f"""
        import warnings, numpy as np, torch, seqstore
        warnings.simplefilter("ignore")
        s = seqstore.open({path!r})
        v = s["x"][7]
        t = torch.from_numpy(v)
        t.add_(1)
        lab = torch.from_numpy(s["label"][7]); lab.add_(1)
        print(float(v[0]), int(s["label"][7]))
        """)
    assert r.returncode == 0, r.stderr  # SIGSEGV (-11) before the fix
    first, label = r.stdout.split()
    assert float(first) == pytest.approx(float(rows[7][0]) + 1)  # the write took, in memory
    assert int(label) == 8
    assert _sha(path) == before  # ... and never reached the file
    with seqstore.open(path) as s:
        np.testing.assert_array_equal(s["x"][7], rows[7])


def test_ctypes_write_through_views_and_attrs(big):
    path, rows = big
    before = _sha(path)
    r = _run(f"""
        import ctypes, numpy as np, seqstore
        s = seqstore.open({path!r})
        v = s["x"][3]
        ctypes.memset(v.ctypes.data, 0, v.nbytes)
        a = s.attrs["scale"]
        ctypes.memset(a.ctypes.data, 0, a.nbytes)
        print(int(np.count_nonzero(v)), int(np.count_nonzero(a)))
        """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "0"]
    assert _sha(path) == before


def test_what_a_forced_write_changes(big):
    path, rows = big
    before = _sha(path)
    page = os.sysconf("SC_PAGESIZE")
    s = seqstore.open(path)
    other = seqstore.open(path)  # a second Store object of the same file
    assert s.copy_on_write and other.copy_on_write
    # An example that shares its last page with the next one's first page.
    i = next(i for i in range(N - 2)
             if (s["x"][i].ctypes.data + WIDTH * 4 - 1) // page == s["x"][i + 1].ctypes.data // page)
    v, neighbour, far = s["x"][i], s["x"][i + 1], s["x"][N - 1]
    assert far.ctypes.data // page != v.ctypes.data // page
    ctypes.memset(v.ctypes.data, 0, v.nbytes)
    # This Store's views of the written bytes see the write, earlier and later ones.
    assert not v.any() and not s["x"][i].any() and not s[i]["x"].any()
    # Bytes not written are untouched, on the same page or another.
    np.testing.assert_array_equal(neighbour, rows[i + 1])
    np.testing.assert_array_equal(s["x"][i + 1], rows[i + 1])
    np.testing.assert_array_equal(far, rows[N - 1])
    # Another Store object, the C library's own reads and the file: unchanged.
    np.testing.assert_array_equal(other["x"][i], rows[i])
    batch = next(iter(seqstore.Loader(s, batch_size=N, fields=["x"])))
    np.testing.assert_array_equal(batch["x"][i], rows[i])
    np.testing.assert_array_equal(s.flat("x")[i * WIDTH:(i + 1) * WIDTH], rows[i])
    assert _sha(path) == before
    # Views stay read-only arrays, zero-copy: two reads of one example share memory.
    a, b = s["x"][12], s["x"][12]
    assert not a.flags.writeable and a.ctypes.data == b.ctypes.data
    s.close()
    other.close()


def test_views_survive_close_and_stay_writable_in_memory(big):
    path, rows = big
    s = seqstore.open(path)
    v = s["x"][5]
    s.close()
    import gc
    gc.collect()
    ctypes.memset(v.ctypes.data, 0, 4)  # the map lives while the view does
    assert v[0] == 0 and v[1] == rows[5][1]
    del v
    gc.collect()
