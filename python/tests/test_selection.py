# SPDX-License-Identifier: BSD-2-Clause
"""Loader(examples=...): train on a fold or a stored split. The batches of an
epoch must cover exactly the selected examples, each once."""
import subprocess
import os

import numpy as np
import pytest

import seqstore


def epoch_indices(loader):
    return np.concatenate([b["index"] for b in loader])


@pytest.mark.parametrize("threads", [1, 2])
def test_batches_cover_exactly_the_fold(store, examples, threads):
    n = len(examples)
    for fold in range(5):
        train, valid = store.kfold(5, fold, shuffle=True, seed=3)
        assert len(np.intersect1d(train, valid)) == 0 and len(train) + len(valid) == n
        for part in (train, valid):
            ld = seqstore.Loader(store, batch_size=7, shuffle=True, seed=fold, threads=threads,
                                 examples=part, fields=["tokens", "label"])
            for _ in range(2):  # two epochs, each exactly the fold
                got = epoch_indices(ld)
                assert len(got) == len(part)
                np.testing.assert_array_equal(np.sort(got), part)
            # the values are those of the selected examples
            for b in ld:
                for r, i in enumerate(b["index"]):
                    assert b["label"][r] == examples[i]["label"]
                    k = b["tokens_lengths"][r]
                    np.testing.assert_array_equal(b["tokens"][r, :k], examples[i]["tokens"])
            ld.close()


def test_fold_sharded_by_rank_and_token_budget(store, examples):
    train, _ = store.kfold(4, 1)
    seen = []
    for rank in range(2):
        # "include": a partition (the default for 2 ranks, "pad", repeats a few)
        ld = seqstore.Loader(store, batch_size=5, shuffle=True, seed=9, rank=rank, world_size=2,
                             examples=train, fields=["tokens"], remainder="include")
        seen.append(epoch_indices(ld))
        ld.close()
    assert len(np.intersect1d(seen[0], seen[1])) == 0
    np.testing.assert_array_equal(np.sort(np.concatenate(seen)), train)
    ld = seqstore.Loader(store, max_tokens=64, shuffle=True, seed=2, examples=train,
                         fields=["tokens"])
    got = epoch_indices(ld)
    ld.close()
    np.testing.assert_array_equal(np.sort(got), train)


def test_examples_any_order_list_and_stored_split(store_path, examples):
    cli = os.environ.get("SEQSTORE_CLI")
    if not cli:
        pytest.skip("SEQSTORE_CLI not set")
    subprocess.run([cli, "split", "add", store_path, "head", "0:10,40:45"], check=True)
    with seqstore.open(store_path) as s:
        head = s.split("head")
        ld = seqstore.Loader(s, batch_size=4, examples=head, fields=["label"])
        np.testing.assert_array_equal(epoch_indices(ld), head)  # sequential: store order
        ld.close()
        ld = seqstore.Loader(s, batch_size=4, examples=[44, 3, 2, 40], fields=["label"])
        np.testing.assert_array_equal(epoch_indices(ld), [2, 3, 40, 44])
        ld.close()


def test_bad_examples(store, examples):
    n = len(examples)
    with pytest.raises(ValueError, match="twice"):
        seqstore.Loader(store, batch_size=2, examples=[1, 2, 2])
    with pytest.raises(IndexError):
        seqstore.Loader(store, batch_size=2, examples=[0, n])
    with pytest.raises(IndexError):
        seqstore.Loader(store, batch_size=2, examples=[-1, 3])
    with pytest.raises(TypeError):
        seqstore.Loader(store, batch_size=2, examples=[0.5, 1.0])
    with pytest.raises(TypeError):
        seqstore.Loader(store, batch_size=2, examples=[[1, 2]])


def test_empty_selection_is_an_empty_epoch(store):
    ld = seqstore.Loader(store, batch_size=2, examples=np.array([], np.int64))
    assert len(ld) == 0 and list(ld) == []
    ld.close()
