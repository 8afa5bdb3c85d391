# SPDX-License-Identifier: BSD-2-Clause
"""seqstore.create() / Writer: round trips, conversions, misuse."""
import pickle

import numpy as np
import pytest

import seqstore

ALL = ["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "f32", "f64"]
NP = dict(zip(ALL, ["u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f2", "f4", "f8"]))


def test_every_dtype_and_shape_round_trips(tmp_path):
    rng = np.random.default_rng(5)
    schema = [(d, d, (2,) if k % 2 else (), bool(k % 3)) for k, d in enumerate(ALL)]
    examples = []
    for i in range(20):
        ex = {}
        for name, dt, shape, seq in schema:
            npdt = np.dtype(NP[dt])
            full = ((int(rng.integers(0, 9)),) if seq else ()) + shape
            if npdt.kind == "f":
                ex[name] = rng.standard_normal(full).astype(npdt)
            else:
                info = np.iinfo(npdt)
                ex[name] = rng.integers(info.min, info.max, full, dtype=npdt, endpoint=True)
        examples.append(ex)
    path = str(tmp_path / "all.ss")
    with seqstore.create(path, schema) as w:
        for ex in examples:
            w.append(ex)
        assert w.count == 20 and len(w) == 20
    assert w.closed
    with seqstore.open(path) as s:
        assert [f["dtype"] for f in s.schema] == ALL
        for i, ex in enumerate(examples):
            got = s[i]
            for name in ex:
                assert got[name].dtype == ex[name].dtype
                assert got[name].shape == ex[name].shape
                np.testing.assert_array_equal(got[name], ex[name])


def test_schema_forms_and_copy_of_a_store_schema(tmp_path, store):
    path = str(tmp_path / "copy.ss")
    with seqstore.create(path, store.schema) as w:
        for i in range(len(store)):
            w.append(store[i])
    with seqstore.open(path) as c:
        assert c.schema == store.schema
        for i in range(len(store)):
            for k, v in store[i].items():
                np.testing.assert_array_equal(c[i][k], v)
    # numpy dtypes are accepted as well as names
    with seqstore.create(str(tmp_path / "np.ss"), [{"name": "a", "dtype": np.int32}]) as w:
        w.append({"a": [1, 2]})
    with seqstore.open(str(tmp_path / "np.ss")) as s:
        assert s.schema[0]["dtype"] == "i32" and list(s["a"][0]) == [1, 2]


def test_lists_scalars_and_torch_tensors(tmp_path):
    torch = pytest.importorskip("torch")
    path = str(tmp_path / "conv.ss")
    with seqstore.create(path, [("t", "i64"), ("y", "f32", (), False), ("v", "u8", (2,), False)]) as w:
        w.append({"t": [1, 2, 3], "y": 0.5, "v": [3, 4]})
        w.append({"t": torch.arange(4), "y": torch.tensor(1.5), "v": np.array([[5, 6]], np.uint8)})
        w.append({"t": [], "y": 2, "v": (7, 8)})
    with seqstore.open(path) as s:
        assert [list(s["t"][i]) for i in range(3)] == [[1, 2, 3], [0, 1, 2, 3], []]
        assert [float(s["y"][i]) for i in range(3)] == [0.5, 1.5, 2.0]
        assert [list(s["v"][i]) for i in range(3)] == [[3, 4], [5, 6], [7, 8]]


def test_wrong_dtype_and_values(tmp_path):
    with seqstore.create(str(tmp_path / "w.ss"), [("tok", "u16"), ("x", "f32")]) as w:
        good = {"tok": np.array([1], np.uint16), "x": np.zeros(1, np.float32)}
        with pytest.raises(TypeError, match="field 'tok' is uint16; got int64"):
            w.append({**good, "tok": np.array([1, 2], np.int64)})  # unsafe cast refused
        with pytest.raises(ValueError, match="do not fit uint16"):
            w.append({**good, "tok": [1, 70000]})
        with pytest.raises(ValueError, match="do not fit uint16"):
            w.append({**good, "tok": [-1]})
        with pytest.raises(TypeError, match="float64"):
            w.append({**good, "tok": [1.5]})
        with pytest.raises(TypeError):
            w.append({**good, "tok": ["a"]})
        with pytest.raises(TypeError):
            w.append({**good, "x": np.zeros(2, np.float64)})  # f64 -> f32 loses precision
        w.append({**good, "x": np.zeros(2, np.float16)})  # a safe widening is fine
        w.append({**good, "tok": np.array([9], np.uint8)})
        assert w.count == 2


def test_wrong_shape_and_fields(tmp_path):
    with seqstore.create(str(tmp_path / "s.ss"), [("a", "f32", (3,)), ("y", "i64", (), False)]) as w:
        ok = {"a": np.zeros((2, 3), np.float32), "y": 1}
        with pytest.raises(ValueError, match="field 'a': shape \\(2, 4\\)"):
            w.append({**ok, "a": np.zeros((2, 4), np.float32)})
        with pytest.raises(ValueError):
            w.append({**ok, "a": np.zeros(3, np.float32)})
        with pytest.raises(ValueError, match="field 'y'"):
            w.append({**ok, "y": [1, 2]})
        with pytest.raises(ValueError, match="missing fields \\['y'\\]"):
            w.append({"a": ok["a"]})
        with pytest.raises(ValueError, match="unknown fields \\['b'\\]"):
            w.append({**ok, "b": 1})
        with pytest.raises(TypeError):
            w.append([ok["a"], 1])
        w.append(ok)
        assert w.count == 1


def test_bad_schemas(tmp_path):
    p = str(tmp_path / "b.ss")
    for schema, exc in [([("a", "u16"), ("a", "u8")], ValueError), ([("a", "u17")], ValueError),
                        ([("a", "complex64")], ValueError), ([("a", object)], ValueError),
                        ([("a", "u8", (1.5,))], TypeError), ([("a", "u8", (), 1)], TypeError),
                        ([("a", "u8", (0,))], ValueError), ([("x" * 60, "u8")], ValueError),
                        ([], ValueError), ({"a": "u8"}, TypeError), (["a"], TypeError),
                        ([{"name": "a"}], ValueError), ([{"name": "a", "dtype": "u8", "x": 1}], ValueError),
                        ([(1, "u8")], TypeError), ([("a", "u8", (1, 1, 1, 1, 1))], ValueError)]:
        with pytest.raises(exc):
            seqstore.create(p, schema)
    with pytest.raises(seqstore.InvalidArgumentError, match="x{60}"):
        seqstore.create(p, [("x" * 60, "u8")])


def test_exists_force_and_busy(tmp_path, store_path):
    with pytest.raises(seqstore.ExistsError) as e:
        seqstore.create(store_path, [("a", "u8")])
    assert isinstance(e.value, FileExistsError)
    p = str(tmp_path / "f.ss")
    w = seqstore.create(p, [("a", "u8")])
    with pytest.raises(seqstore.BusyError):  # one process may not read and write a file
        seqstore.open(p, incomplete=True)
    w.close()
    with seqstore.create(store_path, [("a", "u8")], force=True) as w:
        w.append({"a": [1]})
    with seqstore.open(store_path) as s:
        assert s.fields == ("a",) and len(s) == 1


def test_exception_in_with_leaves_store_incomplete(tmp_path):
    p = str(tmp_path / "x.ss")
    with pytest.raises(RuntimeError):
        with seqstore.create(p, [("a", "u8")]) as w:
            w.append({"a": [1]})
            raise RuntimeError("stop")
    assert w.closed
    with pytest.raises(seqstore.IncompleteError):
        seqstore.open(p)


def test_use_after_finish_and_pickle(tmp_path):
    p = str(tmp_path / "u.ss")
    w = seqstore.create(p, [("a", "u8")])
    with pytest.raises(TypeError):
        pickle.dumps(w)
    w.append({"a": [1]})
    w.finish()
    for op in (lambda: w.append({"a": [1]}), w.commit, w.finish, lambda: w.count,
               lambda: w.set_attr("k", "v")):
        with pytest.raises(seqstore.ClosedError):
            op()
    w.close()  # closing a closed writer is fine
    with pytest.raises(seqstore.ClosedError):
        with w:
            pass


def test_attributes(tmp_path):
    p = str(tmp_path / "a.ss")
    with seqstore.create(p, [("a", "u8")]) as w:
        w.attrs["text"] = "héllo"
        w.set_attr("raw", b"\x00\xff")
        w.attrs["f"] = np.array([1.5, -2.0], np.float32)
        w.attrs["i"] = [1, 2, 3]
        w.attrs["text"] = "replaced"
        for bad in (np.zeros((2, 2)), {"x": 1}, np.array(["s"])):
            with pytest.raises(TypeError):
                w.attrs["bad"] = bad
        with pytest.raises(TypeError):
            w.attrs[3] = "x"
        with pytest.raises(ValueError):
            w.attrs[""] = "empty name"
        w.append({"a": [1]})
    with seqstore.open(p) as s:
        a = s.attrs
        assert a["text"] == "replaced" and a["raw"] == b"\x00\xff"
        assert a["f"].dtype == np.float32 and list(a["f"]) == [1.5, -2.0]
        assert a["i"].dtype == np.int64 and list(a["i"]) == [1, 2, 3]
        assert "bad" not in a
