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
