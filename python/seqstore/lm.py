# SPDX-License-Identifier: BSD-2-Clause
"""Language-model pretraining samples over a token field (seqstore/lm.h).

Two layouts of rows of L tokens, each a pure function of (store, options,
seed, sample number):

- ``layout="megatron"``: Megatron-Core GPTDataset's samples, bit for bit
  (documents concatenated and cut into L + 1 tokens, its document, sample
  and shuffle indices);
- ``layout="packed"``: whole documents packed into rows by first-fit
  decreasing over windows of ``pack_window`` documents of each epoch's
  shuffled order, documents longer than L split in L-sized pieces, the rest
  of a row padding.

Each row gives tokens, labels (the next tokens), loss mask, position ids,
segment ids and cu_seqlens (the row's segment starts, then L), which is what
a varlen attention kernel or a block-diagonal mask takes: attention kept
inside a segment never crosses a document boundary.

    samples = seqstore.lm.LMSamples("fortunes.ss", seq_length=128,
                                    layout="packed", append_eod=True, eod=0)
    batch = samples.read(range(8))     # dict of NumPy arrays, rows 0..7
    samples.info["padding_tokens"], samples.info["split_documents"]

``read(indices, out=...)`` writes into arrays the caller made once (for
instance ``pinned_tensor.numpy()``), with the GIL released, so a thread per
batch fills them in parallel without an allocation per batch.
seqstore.torch.LMDataset shards the rows over ranks and DataLoader workers
for a fixed global batch.
"""
import os

import numpy as np

from . import _seqstore

__all__ = ["LMSamples", "save_index", "flat_cu_seqlens", "LAYOUTS"]

LAYOUTS = {"megatron": 0, "packed": 1}
_FLAGS = {"append_eod": 1, "reset_position_ids": 2, "reset_attention_mask": 4, "eod_mask_loss": 8}
_OUTPUTS = (("tokens", np.int64, 0), ("labels", np.int64, 0), ("loss_mask", np.float32, 0),
            ("position_ids", np.int64, 0), ("segment_ids", np.int32, 0),
            ("cu_seqlens", np.int32, 1), ("nsegments", np.int32, None))


class LMSamples:
    """The LM sample index of field `field` of the store or dataset at `path`.

    Parameters
    ----------
    path : str or os.PathLike
        A store or dataset; pickled by path, reopened in each process.
    seq_length : int
        L, the tokens per row.
    field : str
        The token field (a sequence of scalar integers).
    seed : int
        The seed of the document and row shuffles (0 .. 2**32 - 1).
    num_samples, num_epochs : int
        Rows asked for, or epochs (one of them; both 0 = one epoch).
    layout : {"megatron", "packed"}
    pack_window : int
        Documents packed together ("packed"; 0 = the library's default).
    eod : int or None
        The end-of-document id; None = the store's attribute FIELD.eos.
    append_eod, reset_position_ids, reset_attention_mask, eod_mask_loss : bool
        Megatron's options (seqstore/lm.h); "packed" implies the resets.
    """

    def __init__(self, path, seq_length, field="tokens", *, seed=0, num_samples=0, num_epochs=0,
                 layout="megatron", pack_window=0, eod=None, append_eod=False,
                 reset_position_ids=False, reset_attention_mask=False, eod_mask_loss=False):
        if layout not in LAYOUTS:
            raise ValueError("layout is one of %s, not %r" % (sorted(LAYOUTS), layout))
        flags = 0
        for name, on in (("append_eod", append_eod), ("reset_position_ids", reset_position_ids),
                         ("reset_attention_mask", reset_attention_mask),
                         ("eod_mask_loss", eod_mask_loss)):
            flags |= _FLAGS[name] if on else 0
        self.path = os.fspath(path)
        self.field = field
        self.seq_length = int(seq_length)
        self._args = (field, self.seq_length, int(seed), int(num_samples), int(num_epochs), flags,
                      None if eod is None else int(eod), LAYOUTS[layout], int(pack_window))
        self.layout = layout
        self._lm = self._store = self._pid = None
        self.info = self._index().info()  # fail early, in the caller's process

    def _index(self):
        if self._lm is None or self._pid != os.getpid():
            # an index inherited over fork is left alone (LMDB: reopen in the child)
            from . import open as _open
            self._store = _open(self.path)
            self._lm = _seqstore._LM(self._store, *self._args)
            self._pid = os.getpid()
        return self._lm

    def __len__(self):
        return self.info["num_samples"]

    def buffers(self, n):
        """New arrays for `n` rows, as read() fills them."""
        L = self.seq_length
        return {name: np.empty((n,) if extra is None else (n, L + extra), dtype)
                for name, dtype, extra in _OUTPUTS}

    def read(self, indices, out=None):
        """Rows `indices` (ints < len(self)) -> dict of arrays ([n, L]; cu_seqlens
        [n, L + 1]: row k's segment starts then L in its first nsegments[k] + 1
        entries; nsegments [n]). With `out` (a dict as buffers() makes, of
        C-contiguous arrays with exactly n rows; a missing name is not
        written) the rows go there and `out` is returned."""
        idx = np.ascontiguousarray(np.asarray(indices, dtype=np.int64).reshape(-1))
        if idx.size and idx.min() < 0:
            raise IndexError("LM sample %d is negative" % idx.min())
        res = self.buffers(len(idx)) if out is None else out
        self._index().read(idx.astype(np.uint64), *(res.get(name) for name, _, _ in _OUTPUTS))
        return res

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_lm"] = state["_store"] = state["_pid"] = None
        return state


def save_index(path, seq_length, field="tokens", *, seed=0, num_samples=0, num_epochs=0,
               eod=None, append_eod=False):
    """Build the "megatron" index of these options and store it in the store
    (a dataset: its sections store), as `seqstore index --samples` does;
    LMSamples/LMDataset with the same options then use it instead of
    building it (LMSamples(...).info["stored"] is True).

    Parameters
    ----------
    path : str or os.PathLike
        A finished store or dataset, open nowhere in this process
        (BusyError otherwise: LMDB allows one environment per file per
        process) and not open for writing.
    seq_length, field, seed, num_samples, num_epochs, eod, append_eod
        As for LMSamples (layout "megatron"); the reset and mask options do
        not change the index.
    """
    _seqstore._lm_save(os.fspath(path), field, int(seq_length), int(seed), int(num_samples),
                       int(num_epochs), _FLAGS["append_eod"] if append_eod else 0,
                       None if eod is None else int(eod))


def flat_cu_seqlens(cu_seqlens, nsegments):
    """The batch's cu_seqlens as FlashAttention's varlen functions take them:
    one int32 array of the segment starts of all rows laid end to end (row k
    at k * L), then n * L; and the longest segment (max_seqlen)."""
    cu = np.asarray(cu_seqlens)
    n, L = cu.shape[0], cu.shape[1] - 1
    ns = np.asarray(nsegments).astype(np.int64)
    keep = np.arange(L + 1)[None, :] < ns[:, None]
    starts = (cu + (np.arange(n, dtype=np.int64) * L)[:, None])[keep]
    flat = np.append(starts, n * L).astype(np.int32)
    return flat, int(np.diff(flat).max()) if len(flat) > 1 else 0
