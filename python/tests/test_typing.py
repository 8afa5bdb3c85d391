# SPDX-License-Identifier: BSD-2-Clause
"""The package's typing surface: a text signature on every C function and
method (inspect.signature works), a stub (_seqstore.pyi) naming everything
the C module has, py.typed, a complete __all__, and seqstore.Field accepted
in a schema like the tuple and dict forms."""
import ast
import inspect
import os
import types

import numpy as np
import pytest

import seqstore
from seqstore import _seqstore

PKG = os.path.dirname(seqstore.__file__)


def _c_callables():
    for name, obj in vars(_seqstore).items():
        if isinstance(obj, types.BuiltinFunctionType):
            yield name, obj
        elif isinstance(obj, type) and obj.__module__.startswith("seqstore"):
            for attr, m in vars(obj).items():
                if isinstance(m, (types.MethodDescriptorType, types.ClassMethodDescriptorType)):
                    yield "%s.%s" % (name, attr), m
            if obj.__new__ is not object.__new__ and not issubclass(obj, BaseException):
                yield name, obj  # a constructor: _Loader(...), ...


def test_every_c_callable_has_a_signature():
    names = []
    for name, f in _c_callables():
        sig = inspect.signature(f)  # ValueError without a text signature
        names.append(name)
        if "." in name and not isinstance(f, type):
            assert list(sig.parameters)[0] == "self", name
    assert {"open", "Store.verify", "Store.kfold", "FieldAccessor.lengths", "_Loader",
            "_Collator.collate", "_WindowReader.set_epoch"} <= set(names)
    assert list(inspect.signature(seqstore.open).parameters) == [
        "path", "incomplete", "random", "nolock", "verify", "cache_dir", "cache_bytes",
        "endpoint", "region", "profile", "parallel", "attempts"]
    assert inspect.signature(_seqstore.Store.kfold).parameters["seed"].default == 0


def test_stub_names_everything_the_module_has():
    tree = ast.parse(open(os.path.join(PKG, "_seqstore.pyi")).read())
    declared = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            declared.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            declared.add(node.target.id)
    public = {n for n in vars(_seqstore) if not n.startswith("__") or n == "__version__"}
    assert public - declared == set()
    assert declared - public == set()
    assert os.path.exists(os.path.join(PKG, "py.typed"))


def test_all_is_complete():
    for name in seqstore.__all__:
        assert hasattr(seqstore, name), name
    exported = {n for n, v in vars(seqstore).items() if not n.startswith("_") and
                (isinstance(v, type) or callable(v) or isinstance(v, types.ModuleType)) and
                getattr(v, "__module__", getattr(v, "__name__", "")).startswith("seqstore")}
    assert exported - {"torch"} <= set(seqstore.__all__)
    for cls in (seqstore.WindowBatch, seqstore.Field, seqstore.FieldAccessor, seqstore.Flat,
                seqstore.DiskFullError, seqstore.StoreNotFoundError):
        assert cls.__name__ in seqstore.__all__
    assert "transforms" in seqstore.__all__
    ns = {}
    exec("from seqstore import *", ns)
    assert set(seqstore.__all__) <= set(ns)


def test_field_in_a_schema(tmp_path):
    path = str(tmp_path / "f.ss")
    schema = [seqstore.Field("tokens", "u16"),
              seqstore.Field("label", np.int64, sequence=False),
              ("feat", "f32", (3,)),
              {"name": "vec", "dtype": "f64", "shape": 2, "sequence": False}]
    with seqstore.create(path, schema) as w:
        w.append({"tokens": np.array([1, 2, 3], np.uint16), "label": 7,
                  "feat": np.zeros((2, 3), np.float32), "vec": np.array([0.5, 1.5])})
    with seqstore.open(path) as s:
        assert s.schema == [
            {"name": "tokens", "dtype": "u16", "shape": (), "sequence": True},
            {"name": "label", "dtype": "i64", "shape": (), "sequence": False},
            {"name": "feat", "dtype": "f32", "shape": (3,), "sequence": True},
            {"name": "vec", "dtype": "f64", "shape": (2,), "sequence": False}]
        assert list(s["tokens"][0]) == [1, 2, 3] and int(s["label"][0]) == 7
        assert list(s["vec"][0]) == [0.5, 1.5]
        again = str(tmp_path / "g.ss")
        with seqstore.create(again, [seqstore.Field(**f) for f in s.schema]) as w:
            w.append(s[0])
    with seqstore.open(again) as s2:
        assert [f["name"] for f in s2.schema] == ["tokens", "label", "feat", "vec"]
    assert isinstance(seqstore.open(path)["tokens"], seqstore.FieldAccessor)
    with pytest.raises(TypeError, match="seqstore.Field"):
        seqstore.create(str(tmp_path / "h.ss"), [42])


HERE = os.path.dirname(os.path.abspath(__file__))
# A child finds the package this test imported, wherever it runs from.
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    [os.path.dirname(PKG)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))


def test_typed_usage_runs(tmp_path):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, os.path.join(HERE, "typed_usage.py")], cwd=str(tmp_path),
                       capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_strict_on_a_typed_script(tmp_path):
    """mypy --strict accepts typed_usage.py, and the stub is what it reads:
    a wrong annotation on seqstore.open()'s result is reported."""
    pytest.importorskip("mypy")
    import subprocess
    import sys
    # A warm cache makes this 1 s instead of 40: keep it in the virtual
    # environment when there is one.
    in_venv = sys.prefix != sys.base_prefix and os.access(sys.prefix, os.W_OK)
    cache = os.path.join(sys.prefix if in_venv else str(tmp_path), ".mypy_cache")
    bad = tmp_path / "bad.py"
    bad.write_text("import seqstore\nx: int = seqstore.open('a.ss')\n")

    def mypy(path):
        return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", cache,
                               str(path)], cwd=str(tmp_path), capture_output=True, text=True,
                              env=ENV)

    r = mypy(os.path.join(HERE, "typed_usage.py"))
    assert r.returncode == 0, r.stdout + r.stderr
    r = mypy(bad)
    assert r.returncode == 1 and 'has type "Store"' in r.stdout, r.stdout + r.stderr
