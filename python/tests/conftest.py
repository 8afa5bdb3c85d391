# SPDX-License-Identifier: BSD-2-Clause
"""Shared fixtures: small stores written by the module itself and, for values
known independently of it, the fortunes store made by the seqstore CLI."""
import multiprocessing
import os
import subprocess

import numpy as np
import pytest

import seqstore

# Under AddressSanitizer (python_pytest_asan preloads it) a fork while another
# thread of the parent is inside ASan's allocator (a DataLoader's Python
# threads) leaves the child blocked on that lock forever: gcc 12's runtime
# does not hold its allocator across fork. DataLoaders that name no start
# method get a fork server (a fresh single-threaded process) there; the tests
# that ask for "fork" still fork.
if "libasan" in os.environ.get("LD_PRELOAD", ""):
    multiprocessing.set_start_method("forkserver", force=True)

FORTUNES = "/usr/share/games/fortunes/fortunes"


def _write(path, schema, examples, attrs=None):
    with seqstore.create(path, schema) as w:
        for ex in examples:
            w.append(ex)
        for k, v in (attrs or {}).items():
            w.attrs[k] = v


def make_examples(n=50, seed=1):
    """Random examples of three fields: the independent copy the tests compare with."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        length = int(rng.integers(0, 40))
        out.append({
            "tokens": rng.integers(0, 2**16, length).astype(np.uint16),
            "label": np.int64(i * 7 - 100),
            "feat": rng.standard_normal((length, 3)).astype(np.float32),
        })
    return out


SCHEMA = [("tokens", "u16"), ("label", "i64", (), False), ("feat", "f32", (3,))]


@pytest.fixture
def examples():
    return make_examples()


@pytest.fixture
def store_path(tmp_path, examples):
    path = str(tmp_path / "small.ss")
    _write(path, SCHEMA, examples, {"source": "tests ✓", "scale": np.array([0.5, 2.0]),
                                    "blob": b"\x00\x01\xff", "ids": np.array([7, 8], np.uint32)})
    return path


@pytest.fixture
def store(store_path):
    with seqstore.open(store_path) as s:
        yield s


@pytest.fixture(scope="session")
def fortunes(tmp_path_factory):
    """fortunes converted by the CLI (SEQSTORE_CLI, set by ctest)."""
    cli = os.environ.get("SEQSTORE_CLI")
    if not cli or not os.path.exists(FORTUNES):
        pytest.skip("SEQSTORE_CLI or %s missing" % FORTUNES)
    path = str(tmp_path_factory.mktemp("fortunes") / "fortunes.ss")
    subprocess.run([cli, "convert", "text", "--quiet", "--force", "--doc-sep", "%", FORTUNES,
                    "-o", path], check=True)
    return path
