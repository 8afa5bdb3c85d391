# SPDX-License-Identifier: BSD-2-Clause
"""A dataset of shards (spec/FORMAT.md §13) opened from Python like a store:
global indices over the shards, the same examples as the stores written."""
import os
import subprocess

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
