# SPDX-License-Identifier: BSD-2-Clause
"""A dataset of shards (spec/FORMAT.md §13) opened from Python like a store:
global indices over the shards, the same examples as the stores written."""
import os
import subprocess
import sys

import numpy as np
import pytest

import seqstore
from conftest import SCHEMA, _write, make_examples


def test_dataset_reads_as_one_store(tmp_path):
    cli = os.environ.get("SEQSTORE_CLI")
    if not cli:
        pytest.skip("SEQSTORE_CLI not set")
    examples = make_examples(n=60, seed=4)
    cuts = [0, 25, 25, 60]  # the middle shard is empty
    names = []
    for k in range(3):
        names.append("p%d.ss" % k)
        _write(str(tmp_path / names[-1]), SCHEMA, examples[cuts[k]:cuts[k + 1]])
    subprocess.run([cli, "dataset", "build", str(tmp_path)] + names, check=True,
                   capture_output=True)
    with seqstore.open(str(tmp_path)) as s:
        assert len(s) == 60
        for i, ex in enumerate(examples):
            got = s[i]
            for name, want in ex.items():
                np.testing.assert_array_equal(np.asarray(got[name]), want)


def test_dataset_lengths_and_sections(tmp_path):
    """The dataset's stored global lengths (spec/FORMAT.md §13.1): a zero-copy
    read-only view like a store's; splits made on the dataset read back."""
    cli = os.environ.get("SEQSTORE_CLI")
    if not cli:
        pytest.skip("SEQSTORE_CLI not set")
    examples = make_examples(n=50, seed=9)
    names = []
    for k, (a, b) in enumerate([(0, 20), (20, 50)]):
        names.append("p%d.ss" % k)
        _write(str(tmp_path / names[-1]), SCHEMA, examples[a:b])
    subprocess.run([cli, "dataset", "build", str(tmp_path)] + names, check=True,
                   capture_output=True)
    subprocess.run([cli, "split", "add", str(tmp_path), "head", "0:30"], check=True,
                   capture_output=True)
    # never made: the sections writer writes a copy, renamed over the store
    assert "dataset.sections.ss-lock" not in os.listdir(tmp_path)
    want = np.array([len(e["tokens"]) for e in examples])
    with seqstore.open(str(tmp_path)) as s:
        got = s.lengths("tokens")
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.min_scalar_type(int(want.max()))
        assert not got.flags.writeable and not got.flags.owndata
        assert "ss.lengths.tokens" in s.attrs and "ss.split.head" in s.attrs
    np.testing.assert_array_equal(got, want)  # the view outlives close()


def test_dataset_more_shards_than_open_files(tmp_path):
    """Under `ulimit -n 128` a dataset of 600 shards reads whole from Python:
    the library closes shards beyond its budget of open ones and reopens them
    on demand (each example copied before the next shards are read)."""
    cli = os.environ.get("SEQSTORE_CLI")
    if not cli:
        pytest.skip("SEQSTORE_CLI not set")
    examples = make_examples(n=600, seed=5)
    names = []
    for k in range(600):
        names.append("p%03d.ss" % k)
        _write(str(tmp_path / names[-1]), SCHEMA, examples[k:k + 1])
    subprocess.run([cli, "dataset", "build", str(tmp_path)] + names, check=True,
                   capture_output=True)
    want = np.concatenate([e["tokens"] for e in examples])
    np.save(str(tmp_path / "want.npy"), want)
    code = ("import numpy as np, seqstore, sys\n"
            "d = sys.argv[1]\n"
            "with seqstore.open(d) as s:\n"
            "    got = np.concatenate([np.array(s[i]['tokens']) for i in range(len(s))])\n"
            "np.testing.assert_array_equal(got, np.load(d + '/want.npy'))\n")
    r = subprocess.run(["sh", "-c", 'ulimit -n 128 && exec "$0" -c "$1" "$2"', sys.executable,
                        code, str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


HELD_VIEW = r"""
import sys
import numpy as np
import seqstore
path, starts = sys.argv[1], [int(x) for x in sys.argv[2:]]
s = seqstore.open(path)
held = s["tokens"][starts[1] + 1]           # an example of shard 1, kept
want = np.array(held)
for _ in range(2):                          # every other shard, twice: shard 1 is closed
    for k in range(2, len(starts) - 1):
        s["tokens"][starts[k]]
assert not held.flags.writeable
assert np.array_equal(held, want), "the held example changed"
print("ok")
"""


def test_views_outlive_closed_shards(tmp_path):
    """A dataset with more shards than it keeps open closes shards as others
    are read: an example taken earlier and kept must still read its values
    (it crashed the interpreter when it was a view into the closed shard)."""
    cli = os.environ.get("SEQSTORE_CLI")
    if not cli:
        pytest.skip("SEQSTORE_CLI not set")
    examples = make_examples(n=80, seed=5)
    names = []
    for k in range(20):
        names.append("p%02d.ss" % k)
        _write(str(tmp_path / names[-1]), SCHEMA, examples[4 * k:4 * k + 4])
    subprocess.run([cli, "dataset", "build", str(tmp_path)] + names, check=True,
                   capture_output=True)
    env = dict(os.environ, SS_MAX_OPEN_SHARDS="8")  # 5 shards open besides shard 0
    r = subprocess.run([sys.executable, "-c", HELD_VIEW, str(tmp_path)] +
                       [str(4 * k) for k in range(21)], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stderr[-2000:])
