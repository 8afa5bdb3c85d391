# SPDX-License-Identifier: BSD-2-Clause
"""bench_scratch.py - where the Python benchmarks write their inputs.

With --dir DIR the inputs are cached in DIR and reused by later runs (and by
the other benchmarks given the same DIR). Without it each run writes them to
a private temporary directory (under $TMPDIR) that is removed when the run
ends, so runs at the same time never read each other's half-written files.
"""
import contextlib
import shutil
import tempfile


@contextlib.contextmanager
def scratch_dir(path, prefix):
    """Yield `path` when given, else a fresh private directory removed after."""
    if path is not None:
        yield path
        return
    d = tempfile.mkdtemp(prefix=prefix)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
