# SPDX-License-Identifier: BSD-2-Clause
"""Every layout and mask kind of the C collator (ss_layout, ss_mask_type),
named in Python by the C enums the module exports: the channels-first layout
and typed masks, compared with a collation written here from the examples."""
import numpy as np
import pytest

import seqstore
from seqstore import _seqstore

IDX = [3, 0, 7, 12]  # example 0 is longer than 3: T is set by the longest


def _expected(examples, idx, name, pad=0.0):
    rows = [examples[i][name] for i in idx]
    lengths = np.array([len(r) for r in rows])
    T = lengths.max()
    data = np.full((len(rows), T) + rows[0].shape[1:], pad, rows[0].dtype)
    for b, r in enumerate(rows):
        data[b, :len(r)] = r
    return data, lengths, np.arange(T) < lengths[:, None]


def test_constants_are_the_c_enums():
    # the numbers of seqstore.h (ss_layout, ss_mask_type, SS_OPEN_...)
    assert (_seqstore.LAYOUT_BATCH_MAJOR, _seqstore.LAYOUT_TIME_MAJOR, _seqstore.LAYOUT_PACKED,
            _seqstore.LAYOUT_CHANNELS_FIRST) == (0, 1, 2, 3)
    assert (_seqstore.MASK_NONE, _seqstore.MASK_U8, _seqstore.MASK_F32,
            _seqstore.MASK_DTYPE) == (0, 1, 2, 3)
    assert (_seqstore.OPEN_NOLOCK, _seqstore.OPEN_INCOMPLETE, _seqstore.OPEN_RANDOM,
            _seqstore.OPEN_VERIFY) == (1, 2, 4, 8)


def test_channels_first(store, examples):
    c = seqstore.Collator(store, fields={"feat": {"layout": "channels_first", "mask": "u8"}})
    b = c.collate(IDX)
    want, lengths, mask = _expected(examples, IDX, "feat")
    assert b["feat"].shape == (len(IDX), 3, want.shape[1])  # [B, C, T]
    np.testing.assert_array_equal(b["feat"], want.transpose(0, 2, 1))
    np.testing.assert_array_equal(b["feat_lengths"], lengths)
    assert b["feat_mask"].dtype == np.uint8 and b["feat_mask"].shape == mask.shape  # [B, T]
    np.testing.assert_array_equal(b["feat_mask"], mask)


@pytest.mark.parametrize("mask, np_dtype", [
    ("u8", np.uint8), ("f32", np.float32), ("same", np.int64), ("i64", np.int64),
    ("f16", np.float16), (np.int32, np.int32), ("f64", np.float64)])
@pytest.mark.parametrize("layout", ["batch", "time", "channels_first"])
def test_typed_masks(store, examples, mask, np_dtype, layout):
    fields = {"tokens": {"dtype": "i64", "mask": mask, "layout": layout}}
    for b in (seqstore.Collator(store, fields=fields).collate(IDX),
              next(iter(seqstore.Loader(store, batch_size=len(IDX), fields=fields,
                                        examples=IDX))),
              next(iter(seqstore.Blend([store], [1.0], batch_size=len(IDX), fields=fields,
                                       shuffle=False)))):
        idx = list(b["index"]) if "index" in b else IDX  # Loader, Blend: their own order
        want, lengths, want_mask = _expected(examples, idx, "tokens")
        if layout == "time":
            want, want_mask = want.T, want_mask.T
        if layout == "channels_first":  # no trailing dims: [B, T] as batch-major
            assert b["tokens"].shape == want.shape
        m = b["tokens_mask"]
        assert m.dtype == np_dtype and m.shape == want_mask.shape
        np.testing.assert_array_equal(m, want_mask.astype(np_dtype))
        np.testing.assert_array_equal(b["tokens"], want.astype(np.int64))


def test_bf16_mask_is_bits(store, examples):
    c = seqstore.Collator(store, fields={"tokens": {"mask": "bf16"}})
    m = c.collate(IDX)["tokens_mask"]
    _, _, want = _expected(examples, IDX, "tokens")
    assert m.dtype == np.uint16
    np.testing.assert_array_equal(m, np.where(want, 0x3F80, 0))  # bfloat16 1.0 and 0.0


def test_typed_mask_into_caller_buffers(store):
    fields = {"tokens": {"dtype": "i64", "mask": "i64"}}
    buf, mbuf = np.zeros(50 * 40, np.int64), np.zeros(50 * 40, np.int64)
    plain = list(seqstore.Loader(store, batch_size=8, fields=fields))
    into = seqstore.Loader(store, batch_size=8, fields=fields,
                           out={"tokens": buf, "tokens_mask": mbuf})
    for p, b in zip(plain, into):
        assert b["tokens_mask"].ctypes.data == mbuf.ctypes.data
        np.testing.assert_array_equal(b["tokens_mask"], p["tokens_mask"])
    with pytest.raises(TypeError, match="tokens_mask"):
        seqstore.Loader(store, batch_size=8, fields=fields,
                        out={"tokens_mask": np.zeros(400, np.uint8)})


def test_mask_option_misuse(store):
    for bad in ("x", 3, "complex"):
        with pytest.raises(ValueError, match="mask"):
            seqstore.Collator(store, fields={"tokens": {"mask": bad}})
    with pytest.raises(ValueError, match="layout"):
        seqstore.Collator(store, fields={"tokens": {"layout": "channels_last"}})
