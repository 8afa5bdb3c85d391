#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Bit-exact check of seqstore's LM samples (seqstore/lm.h) against
Megatron-Core's GPTDataset.

  megatron_samples.py check SEQSTORE LM_DUMP TMPDIR [TEXT...]
      convert TEXT (default: Debian's fortunes) with `seqstore convert text
      --doc-sep % --tokens words` with and without --eos, export the --eos
      store with `seqstore export megatron`, build megatron-core's GPTDataset
      (CPU, no mock) over PREFIX.bin/.idx for several configurations and
      compare every sample (tokens, labels, loss mask, position ids, the
      attention mask as segments and cu_seqlens) with what lm_dump writes
      from the store; the store without --eos is read with SS_LM_APPEND_EOD.
  megatron_samples.py bench SEQSTORE LM_DUMP TMPDIR [DOCS TOKENS]
      time both index builds over random documents (default 10^5 documents,
      about 10^7 tokens: lengths uniform in 1..2*TOKENS/DOCS-1) written as a
      Megatron dataset and converted with `seqstore convert megatron`.

Needs numpy, torch and megatron-core (tests run it from a virtual
environment given as SS_LM_MEGATRON_PYTHON to CMake). Exit 0 when every
sample matches."""
import os
import shutil
import struct
import subprocess
import sys
import time

import numpy as np

from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
from megatron.core.datasets.indexed_dataset import IndexedDataset
from megatron.core.datasets.utils import Split

APPEND_EOD, RESET_POS, RESET_ATT, EOD_MASK = 1, 2, 4, 8
FORTUNES = ["/usr/share/games/fortunes/fortunes"]


class Tokenizer:
    """The part of a Megatron tokenizer GPTDataset uses: eod (no pad: Megatron
    then pads with -1, which no token equals)."""

    def __init__(self, eod):
        self.eod = eod
        self.vocab_size = None
        self.unique_identifiers = {"class": "Tokenizer", "eod": eod}


def run(*args):
    subprocess.run([str(a) for a in args], check=True, stdout=subprocess.DEVNULL)


def megatron(prefix, cache, seed, L, num_samples, flags, eod):
    cfg = GPTDatasetConfig(random_seed=seed, sequence_length=L, tokenizer=Tokenizer(eod),
                           reset_position_ids=bool(flags & RESET_POS),
                           reset_attention_mask=bool(flags & RESET_ATT),
                           eod_mask_loss=bool(flags & EOD_MASK), create_attention_mask=True,
                           path_to_cache=cache)
    low = IndexedDataset(prefix)
    docs = np.arange(low.sequence_lengths.shape[0], dtype=np.int32)
    return GPTDataset(low, prefix, docs, num_samples, Split.train, cfg)


def seqstore(lm_dump, store, seed, L, num_samples, flags, eod, out):
    run(lm_dump, store, "tokens", L, seed, num_samples or 0, flags, eod, out)
    raw = open(out, "rb").read()
    head = struct.unpack("<8q", raw[:64])
    S, L = head[0], head[6]
    parts, off = {}, 64
    for name, dt, count in [("tokens", "<i8", S * L), ("labels", "<i8", S * L),
                            ("loss_mask", "<f4", S * L), ("position_ids", "<i8", S * L),
                            ("segment_ids", "<i4", S * L), ("cu_seqlens", "<i4", S * (L + 1)),
                            ("nsegments", "<i4", S)]:
        a = np.frombuffer(raw, dtype=dt, count=count, offset=off)
        off += a.nbytes
        parts[name] = a.reshape(S, -1) if name != "nsegments" else a
    assert off == len(raw), "lm_dump output size"
    return head, parts


def compare(ds, head, ours, what):
    S, E, sep = head[0], head[1], head[4]
    assert len(ds) == S, f"{what}: {len(ds)} samples in Megatron, {S} in seqstore"
    bad = 0
    for i in range(S):
        m = ds[i]  # a list of Megatron's samples, each a dict of tensors
        L = m["tokens"].shape[0]
        seg = ours["segment_ids"][i]
        allowed = (np.arange(L)[None, :] <= np.arange(L)[:, None]) & (seg[None, :] == seg[:, None])
        ns = ours["nsegments"][i]
        cu = ours["cu_seqlens"][i]
        starts = np.flatnonzero(np.diff(seg, prepend=-1))
        ok = (np.array_equal(m["tokens"].numpy(), ours["tokens"][i])
              and np.array_equal(m["labels"].numpy(), ours["labels"][i])
              and np.array_equal(m["loss_mask"].numpy(), ours["loss_mask"][i])
              and np.array_equal(m["position_ids"].numpy(), ours["position_ids"][i])
              and np.array_equal(m["attention_mask"][0].numpy(), ~allowed)
              and np.array_equal(cu[:ns], starts) and np.all(cu[ns:] == L)
              and np.array_equal(seg[starts], np.arange(ns)))
        if not ok:
            bad += 1
            if bad <= 3:
                print(f"{what}: sample {i} differs\n  megatron {m['tokens'].numpy()[:24]}\n"
                      f"  seqstore {ours['tokens'][i][:24]}", file=sys.stderr)
    print(f"{what}: {S} samples, {E} epochs, separate_final_epoch={sep}: "
          f"{'all equal' if not bad else f'{bad} differ'}")
    return bad


def check(exe, lm_dump, tmp, texts):
    texts = texts or FORTUNES
    eos_store, plain_store, prefix = (os.path.join(tmp, n) for n in ("eos.ss", "plain.ss", "meg"))
    base = [exe, "convert", "text", "--doc-sep", "%", *texts, "--tokens", "words", "--quiet",
            "--force"]
    run(*base, "--eos", "-o", eos_store)
    run(*base, "-o", plain_store)
    run(exe, "export", "megatron", eos_store, prefix, "--force")
    low = IndexedDataset(prefix)  # kept alive: its arrays view its map
    T = int(low.sequence_lengths.sum())
    del low
    eod = 3  # <eos> of the words vocabulary; 'tokens.eos' of the --eos store
    bad = 0
    configs = []
    for L in (16, 128):
        per = (T - 1) // L
        for seed in (1234, 7):
            # one epoch; 3 epochs with a full last one (shuffled with the rest);
            # 4 epochs whose last is short (separate_final_epoch)
            for num in (None, 3 * per - 2, 3 * per + 3):
                configs.append((seed, L, num))
        # num_epochs 2 in seqstore is num_samples (2 T - 1) / L in Megatron
        configs.append((99, L, "e2"))
    flag_sets = [0, RESET_POS | RESET_ATT | EOD_MASK, RESET_POS, RESET_ATT | EOD_MASK]
    seps = set()
    for k, (seed, L, num) in enumerate(configs):
        flags = flag_sets[k % len(flag_sets)]
        cache = os.path.join(tmp, "cache")  # Megatron's .npy indices: keyed by the
        shutil.rmtree(cache, ignore_errors=True)  # path, not the data, so built afresh
        meg_num = (2 * T - 1) // L if num == "e2" else num
        dataset = megatron(prefix, cache, seed, L, meg_num, flags, eod)
        ds = [dataset[i] for i in range(len(dataset))]  # read once, compared twice
        for store, extra, eod_arg in ((eos_store, 0, "store"), (plain_store, APPEND_EOD, eod)):
            what = (f"seed {seed} L {L} num_samples {num} flags {flags | extra:#x} "
                    f"{os.path.basename(store)}")
            head, ours = seqstore(lm_dump, store, seed, L, num, flags | extra, eod_arg,
                                  os.path.join(tmp, "samples.bin"))
            seps.add(head[4])
            bad += compare(ds, head, ours, what)
    assert seps == {0, 1}, "both sides of the separate_final_epoch rule are exercised"
    return bad


def bench(exe, lm_dump, tmp, ndocs=100000, ntokens=10000000):
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 2 * ntokens // ndocs, size=ndocs, dtype=np.int32)  # mean ~ntokens/ndocs
    ntokens = int(sizes.sum())
    tokens = rng.integers(4, 50000, size=ntokens, dtype=np.int32)
    tokens[np.cumsum(sizes) - 1] = 3  # documents end with eod
    prefix = os.path.join(tmp, "bench")
    tokens.tofile(prefix + ".bin")
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00" + struct.pack("<Q", 1) + struct.pack("<B", 4))
        f.write(struct.pack("<Q", ndocs) + struct.pack("<Q", ndocs + 1))
        f.write(sizes.tobytes())
        f.write((np.concatenate([[0], np.cumsum(sizes)[:-1]]) * 4).astype(np.int64).tobytes())
        f.write(np.arange(ndocs + 1, dtype=np.int64).tobytes())
    store = os.path.join(tmp, "bench.ss")
    run(exe, "convert", "megatron", prefix, "-o", store, "--force", "--quiet")
    for L, num in ((2048, None), (2048, 3 * (ntokens // 2048)), (128, None)):
        cache = os.path.join(tmp, f"bench-cache-{L}-{num}")
        shutil.rmtree(cache, ignore_errors=True)
        t0 = time.perf_counter()
        megatron(prefix, cache, 1234, L, num, 0, 3)
        t_meg = time.perf_counter() - t0
        out = subprocess.run([lm_dump, store, "tokens", str(L), "1234", str(num or 0), "0", "3",
                              "-"], check=True, capture_output=True, text=True).stdout.split()
        print(f"{ndocs} documents, {ntokens} tokens, L {L}, num_samples {num}: "
              f"{out[0]} samples, {out[1]} epochs; Megatron-Core GPTDataset index build "
              f"{t_meg:.3f} s, seqstore ss_lm_create {int(out[7]) / 1e9:.3f} s")


def main():
    mode, exe, lm_dump, tmp = sys.argv[1:5]
    os.makedirs(tmp, exist_ok=True)
    if mode == "bench":
        bench(exe, lm_dump, tmp, *map(int, sys.argv[5:7]))
        return 0
    bad = check(exe, lm_dump, tmp, sys.argv[5:])
    print("ok" if not bad else f"FAILED: {bad} samples differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
