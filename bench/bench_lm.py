#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""LM samples: serving speed and packing, against Megatron-Core and Grain.

  bench_lm.py serve SEQSTORE TMPDIR [ROUNDS]
      batches of 8 x 4096 tokens (int64 tokens, labels, position ids and
      int32 cu_seqlens) from seqstore.lm.LMSamples.read() into buffers made
      once, against numpy copies of the same bytes from a large source
      (memcpy), and against Megatron-Core's GPTDataset under torch's
      DataLoader (2 workers, batch_size 8). Random documents (10^5, about
      2 * 10^7 tokens) written as a Megatron dataset and converted with
      `seqstore convert megatron`. Rounds alternate; medians of batches/s,
      and the CPU seconds per batch (this process and its children).
  bench_lm.py index LM_DUMP TMPDIR [ROUNDS]
      the index build over TMPDIR/bench.{bin,idx,ss} (written by
      tests/lm/megatron_samples.py bench ... DOCS TOKENS): Megatron-Core's
      GPTDataset constructor (one epoch, L 2048, its cache emptied first)
      against lm_dump's ss_lm_create, alternating; medians of wall and CPU
      seconds.
  bench_lm.py pack SEQSTORE TMPDIR [GRAIN_PYTHON]
      padding fraction and documents cut for packed rows (first-fit
      decreasing, several windows) vs plain concatenation (the Megatron
      layout) on fortunes and on random lengths; with GRAIN_PYTHON (a Python
      with grain installed) also Grain's FirstFitPackIterDataset on the same
      documents in the same order.

Needs numpy, torch and megatron-core (the .venv of python/make-venv.sh)."""
import json
import os
import resource
import statistics
import struct
import subprocess
import sys
import time

import numpy as np

import seqstore
import seqstore.lm

L, B, EOD = 4096, 8, 3


def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def write_megatron(prefix, ndocs, ntokens, seed=5):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 2 * ntokens // ndocs, size=ndocs, dtype=np.int32)
    tokens = rng.integers(4, 50000, size=int(sizes.sum()), dtype=np.int32)
    tokens[np.cumsum(sizes) - 1] = EOD
    tokens.tofile(prefix + ".bin")
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00" + struct.pack("<Q", 1) + struct.pack("<B", 4))
        f.write(struct.pack("<Q", ndocs) + struct.pack("<Q", ndocs + 1))
        f.write(sizes.tobytes())
        f.write((np.concatenate([[0], np.cumsum(sizes)[:-1]]) * 4).astype(np.int64).tobytes())
        f.write(np.arange(ndocs + 1, dtype=np.int64).tobytes())
    return sizes


def gpt_dataset(prefix, cache, num_samples):
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    from megatron.core.datasets.indexed_dataset import IndexedDataset
    from megatron.core.datasets.utils import Split

    class Tok:
        eod, vocab_size = EOD, None
        unique_identifiers = {"class": "Tok", "eod": EOD}

    cfg = GPTDatasetConfig(random_seed=1234, sequence_length=L, tokenizer=Tok(),
                           reset_position_ids=True, reset_attention_mask=True,
                           eod_mask_loss=True, create_attention_mask=False, path_to_cache=cache)
    low = IndexedDataset(prefix)
    docs = np.arange(low.sequence_lengths.shape[0], dtype=np.int32)
    return GPTDataset(low, prefix, docs, num_samples, Split.train, cfg)


def serve(exe, tmp, rounds=5):
    import torch
    prefix, store = os.path.join(tmp, "serve"), os.path.join(tmp, "serve.ss")
    if not os.path.exists(store):
        write_megatron(prefix, 100000, 20000000)
        subprocess.run([exe, "convert", "megatron", prefix, "-o", store, "--force", "--quiet"],
                       check=True)
    lm = seqstore.lm.LMSamples(store, L, seed=1234, eod=EOD, reset_position_ids=True,
                               reset_attention_mask=True, eod_mask_loss=True)
    S = len(lm)
    out = lm.buffers(B)
    for k in ("loss_mask", "segment_ids"):
        del out[k]  # the outputs asked for: tokens, labels, position ids, cu_seqlens
    nbytes = sum(a.nbytes for k, a in out.items() if k != "nsegments")
    src = np.random.default_rng(0).integers(0, 2**62, size=(256 << 20) // 8)  # 256 MiB
    dst = {k: np.empty_like(a) for k, a in out.items()}
    n_batches = 200
    order = np.random.default_rng(1).permutation(S)

    def run_seqstore(r):
        c0, t0 = cpu(), time.perf_counter()
        for b in range(n_batches):
            at = (r * n_batches + b) * B % (S - B)
            lm.read(order[at:at + B], out=out)
        return time.perf_counter() - t0, cpu() - c0

    def run_memcpy(r):
        flat = src.view(np.uint8)
        c0, t0 = cpu(), time.perf_counter()
        pos = r * n_batches * nbytes
        for b in range(n_batches):
            for k, a in dst.items():
                if k == "nsegments":
                    continue
                pos %= flat.nbytes - a.nbytes
                np.copyto(a.reshape(-1).view(np.uint8), flat[pos:pos + a.nbytes])
                pos += a.nbytes
        return time.perf_counter() - t0, cpu() - c0

    def run_megatron(ds, batches):
        dl = torch.utils.data.DataLoader(ds, batch_size=B, num_workers=2, shuffle=False)
        c0, t0 = cpu(), time.perf_counter()
        it = iter(dl)
        for _ in range(batches):
            next(it)
        del it, dl  # the workers exit: their CPU time is counted
        return time.perf_counter() - t0, cpu() - c0

    cache = os.path.join(tmp, "serve-cache")
    ds = gpt_dataset(prefix, cache, S)
    res = {"seqstore": [], "memcpy": [], "megatron": []}
    meg_batches = 40
    for r in range(rounds):
        for name, fn in (("seqstore", lambda: run_seqstore(r)), ("memcpy", lambda: run_memcpy(r))):
            wall, c = fn()
            res[name].append((n_batches / wall, c / n_batches))
        wall, c = run_megatron(ds, meg_batches)
        res["megatron"].append((meg_batches / wall, c / meg_batches))
        print("round %d: %s" % (r, {k: "%.1f/s" % v[-1][0] for k, v in res.items()}),
              file=sys.stderr)
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
           for k, v in res.items()}
    print("load before/after: see caller; %d samples of L %d, batch %d (%d bytes of tokens, "
          "labels, position ids and cu_seqlens)" % (S, L, B, nbytes))
    for k, (bps, c) in med.items():
        print("%-9s %9.1f batches/s  %7.3f ms CPU/batch" % (k, bps, 1000 * c))
    print("seqstore / memcpy %.2fx; seqstore / GPTDataset+DataLoader(2 workers) %.1fx"
          % (med["seqstore"][0] / med["memcpy"][0], med["seqstore"][0] / med["megatron"][0]))


def grain_padding(grain_python, lens, L):
    """Grain's FirstFitPackIterDataset over documents of these lengths, in
    this order (num_packing_bins = rows kept open)."""
    code = r'''
import json, sys
import numpy as np
import grain.python as gp
lens, L, bins = json.loads(sys.stdin.read())
ds = gp.MapDataset.source([{"tokens": np.ones(n, np.int32)} for n in lens]).to_iter_dataset()
ds = gp.experimental.FirstFitPackIterDataset(ds, length_struct={"tokens": L},
                                             num_packing_bins=bins, shuffle_bins=False)
rows = pad = 0
for ex in ds:
    rows += 1
    pad += int((ex["tokens_segment_ids"] == 0).sum())  # segment id 0 is padding
print(json.dumps([rows, pad]))
'''
    out = {}
    for bins in (8, 64, 512):
        r = subprocess.run([grain_python, "-c", code], input=json.dumps([lens, L, bins]),
                           capture_output=True, text=True, check=True)
        rows, pad = json.loads(r.stdout.strip().splitlines()[-1])
        out[bins] = (rows, pad / (rows * L))
    return out


def pack(exe, tmp, grain_python=None):
    fw = os.path.join(tmp, "fortunes-words.ss")
    subprocess.run([exe, "convert", "text", "--quiet", "--force", "--doc-sep", "%", "--tokens",
                    "words", "--eos", "--max-vocab", "3000", "/usr/share/games/fortunes/fortunes",
                    "-o", fw], check=True)
    rng = np.random.default_rng(11)
    lens = np.minimum(rng.lognormal(5.0, 1.0, 20000).astype(np.int64) + 1, 8000)
    rnd = os.path.join(tmp, "pack-lognormal.ss")
    with seqstore.create(rnd, [("tokens", "u16")]) as w:
        for n in lens:
            w.append({"tokens": np.full(n - 1, 7, np.uint16)})  # the eod is appended
    print("| documents | L | layout | window | rows | padding | documents cut |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, path, L, extra in (("fortunes (words)", fw, 64, {}),
                                 ("20000 log-normal (mean ~250)", rnd, 1024,
                                  {"append_eod": True, "eod": 1})):
        meg = seqstore.lm.LMSamples(path, L, seed=1, **extra)
        mi = meg.info
        print("| %s | %d | concatenation (Megatron) | - | %d | 0 | %d |"
              % (name, L, mi["num_samples"], mi["split_documents"]))
        for W in (64, 1024, 1 << 20):
            p = seqstore.lm.LMSamples(path, L, seed=1, layout="packed", pack_window=W, **extra)
            i = p.info
            print("| %s | %d | packed (FFD) | %s | %d | %.2f%% | %d |"
                  % (name, L, W if W < (1 << 20) else "all", i["num_samples"],
                     100.0 * i["padding_tokens"] / (i["num_samples"] * L), i["split_documents"]))
        if grain_python:
            with seqstore.open(path) as s:
                docl = [int(x) + (1 if extra else 0) for x in s.lengths("tokens")]
            # documents no longer than L in store order, for both (Grain does not split)
            g = grain_padding(grain_python, [min(n, L) for n in docl if n <= L], L)
            for bins, (rows, frac) in g.items():
                print("| %s (documents <= L) | %d | Grain FirstFitPackIterDataset | %d bins | %d "
                      "| %.2f%% | - |" % (name, L, bins, rows, 100.0 * frac))
            q = [n for n in docl if n <= L]
            ffd = ffd_padding(q, L, len(q))
            print("| %s (documents <= L) | %d | FFD (its rule in Python) | all | %d | %.2f%% | 0 |"
                  % (name, L, ffd[0], 100.0 * ffd[1]))


def ffd_padding(lens, L, W):
    """First-fit decreasing over windows of W documents of `lens` (in this
    order), as seqstore/lm.h packs remainders: (rows, padding fraction)."""
    rows, pad = 0, 0
    for w0 in range(0, len(lens), W):
        room = []
        for n in sorted(lens[w0:w0 + W], reverse=True):
            for k, r in enumerate(room):
                if r >= n:
                    room[k] -= n
                    break
            else:
                room.append(L - n)
        rows += len(room)
        pad += sum(room)
    return rows, pad / (rows * L)


def index(lm_dump, tmp, rounds=3):
    import shutil

    import megatron.core.datasets.gpt_dataset  # noqa: F401  (imported before the clock starts)
    prefix, store = os.path.join(tmp, "bench"), os.path.join(tmp, "bench.ss")
    meg, ours = [], []
    for r in range(rounds):
        cache = os.path.join(tmp, "index-cache")
        shutil.rmtree(cache, ignore_errors=True)
        c0, t0 = cpu(), time.perf_counter()
        global L
        L, keep = 2048, L
        gpt_dataset(prefix, cache, None)
        L = keep
        meg.append((time.perf_counter() - t0, cpu() - c0))
        c0 = cpu()
        out = subprocess.run([lm_dump, store, "tokens", "2048", "1234", "0", "0", str(EOD), "-"],
                             check=True, capture_output=True, text=True).stdout.split()
        ours.append((int(out[7]) / 1e9, cpu() - c0))
        print("round %d: Megatron %.3f s, seqstore %.3f s" % (r, meg[-1][0], ours[-1][0]),
              file=sys.stderr)
    med = lambda v, k: statistics.median(x[k] for x in v)
    print("%s documents, %s tokens, L 2048, 1 epoch, %d samples" % (out[3], out[2], int(out[0])))
    print("Megatron-Core GPTDataset: %.3f s wall, %.3f s CPU (process)" % (med(meg, 0), med(meg, 1)))
    print("seqstore ss_lm_create:    %.3f s wall, %.3f s CPU (lm_dump process, open and "
          "lengths included)" % (med(ours, 0), med(ours, 1)))
    print("speed-up (wall) %.1fx" % (med(meg, 0) / med(ours, 0)))


def main():
    mode, exe, tmp = sys.argv[1:4]
    os.makedirs(tmp, exist_ok=True)
    if mode == "index":
        index(exe, tmp, *map(int, sys.argv[4:5]))
    elif mode == "serve":
        serve(exe, tmp, *map(int, sys.argv[4:5]))
    else:
        pack(exe, tmp, *sys.argv[4:5])


if __name__ == "__main__":
    main()
