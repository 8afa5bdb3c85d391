# SPDX-License-Identifier: BSD-2-Clause
"""The exception classes come from the C library's error table: every code
of SS_ERROR_TABLE (seqstore._seqstore._error_table(), made from the table by
its X-macro) raises its own class, which is also the builtin exception a
Python user catches. EXPECTED is this test's own copy: a code added to the C
table fails here until it is given a class."""
import errno
import os
import subprocess

import numpy as np
import pytest

import seqstore
from conftest import SCHEMA, _write, make_examples

EXPECTED = {  # C name -> (class, builtin it also is, or None)
    "SS_EINVAL": ("InvalidArgumentError", ValueError),
    "SS_ENOTFOUND": ("NotFoundError", LookupError),
    "SS_ENOTSTORE": ("NotStoreError", None),
    "SS_EVERSION": ("VersionError", None),
    "SS_ECORRUPT": ("CorruptError", None),
    "SS_EINCOMPLETE": ("IncompleteError", None),
    "SS_EIO": ("StoreIOError", OSError),
    "SS_ENOMEM": ("OutOfMemoryError", MemoryError),
    "SS_EEXIST": ("ExistsError", FileExistsError),
    "SS_ESCHEMA": ("SchemaError", ValueError),
    "SS_ETOOBIG": ("TooBigError", ValueError),
    "SS_ERANGE": ("RangeError", IndexError),
    "SS_ESTATE": ("StateError", None),
    "SS_EINPUT": ("InputError", ValueError),
    "SS_ECALLBACK": ("CallbackError", None),
    "SS_EBUSY": ("BusyError", None),
    "SS_EFULL": ("DiskFullError", OSError),
    "SS_ITEROVER": ("IterationOverError", None),
    "SS_EBUFS": ("BufferTooSmallError", ValueError),
}


def test_every_c_code_has_its_class():
    table = seqstore._seqstore._error_table()
    assert [row[0] for row in table] == list(range(0, -len(table), -1))
    assert table[0][:2] == (0, "SS_OK") and table[0][3] is None
    assert {row[1] for row in table[1:]} == set(EXPECTED)
    seen = set()
    for code, c_name, message, cls in table[1:]:
        name, builtin = EXPECTED[c_name]
        assert cls is getattr(seqstore, name), c_name
        assert cls.__name__ == name and cls.__module__ == "seqstore"
        assert issubclass(cls, seqstore.Error), c_name
        assert builtin is None or issubclass(cls, builtin), c_name
        assert c_name in cls.__doc__ and message in cls.__doc__
        assert name in seqstore.__all__
        seen.add(cls)
    assert len(seen) == len(EXPECTED)  # one class per code
    assert issubclass(seqstore.DiskFullError, seqstore.StoreIOError)


def test_missing_file_is_file_not_found(tmp_path):
    path = str(tmp_path / "missing.ss")
    for cls in (FileNotFoundError, OSError, seqstore.NotFoundError, LookupError,
                seqstore.StoreNotFoundError, seqstore.Error):
        with pytest.raises(cls):
            seqstore.open(path)
    with pytest.raises(FileNotFoundError) as e:
        seqstore.open(path)
    assert e.value.errno == errno.ENOENT and e.value.code == -2
    assert "missing.ss" in str(e.value) and not str(e.value).startswith("[Errno")
    assert "StoreNotFoundError" in seqstore.__all__


def test_missing_field_data_is_not_an_os_error(store):
    # SS_ENOTFOUND about something inside a store stays a plain NotFoundError
    with pytest.raises(seqstore.NotFoundError) as e:
        store.split("no-such-split")
    assert not isinstance(e.value, OSError)


def test_missing_shard_is_file_not_found(tmp_path):
    cli = os.environ.get("SEQSTORE_CLI")
    if not cli:
        pytest.skip("SEQSTORE_CLI not set")
    examples = make_examples(n=10, seed=3)
    _write(str(tmp_path / "a.ss"), SCHEMA, examples[:5])
    _write(str(tmp_path / "b.ss"), SCHEMA, examples[5:])
    subprocess.run([cli, "dataset", "build", str(tmp_path), "a.ss", "b.ss"], check=True,
                   capture_output=True)
    os.remove(str(tmp_path / "b.ss"))
    with seqstore.open(str(tmp_path)) as s:
        np.testing.assert_array_equal(s["tokens"][0], examples[0]["tokens"])
        with pytest.raises(FileNotFoundError, match="b.ss"):
            s["tokens"][7]
