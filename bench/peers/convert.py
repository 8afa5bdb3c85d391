#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""convert.py SYSTEM CORPUS.jsonl OUT [--shards N]: one system's own writer
from the corpus's JSONL ({"tokens": [ids]} per line), timed; prints a RESULT
line. Every Python writer reads the file with json.loads (common.docs);
seqstore's CLI parses it in C. One thread or process each (the machine has
two cores, shared), unless a writer cannot be told.

SYSTEM: mds | litdata | wds | hf | megatron | seqstore (CLI `convert jsonl`)
        | seqstore-py (seqstore.create + append, the same Python loop)
--shards N: exactly N shards (the 256-shard datasets); without it, each
peer's recommended shard size (64 MB: MDS's and LitData's defaults; HF one
file under 500 MB; webdataset 64 MB tars)."""
import argparse
import glob
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SEQSTORE, Clock, docs, emit  # noqa: E402

MB64 = 64 << 20


def shard_bytes(src, shards):
    """Bytes per shard for N shards: the corpus's u16 bytes / N (+ headers)."""
    tok = np.load(src.replace(".jsonl", ".offsets.npy"))[-1] * 2
    n = len(np.load(src.replace(".jsonl", ".offsets.npy"))) - 1
    return max(4096, int((tok + 16 * n) / shards) + 1), n


def mds(src, out, shards):
    from common import torchvision_shim
    torchvision_shim()
    from streaming import MDSWriter
    size = shard_bytes(src, shards)[0] if shards else MB64
    with MDSWriter(out=out, columns={"tokens": "ndarray:uint16"}, size_limit=size) as w:
        for t in docs(src):
            w.write({"tokens": t})
    return "MDSWriter(columns={'tokens': 'ndarray:uint16'}, size_limit=%d)" % size


def _litdata_fn(rng):
    src, a, b = rng
    import json
    with open(src, "rb") as f:
        f.seek(a)
        while f.tell() < b:
            line = f.readline()
            if not line:
                break
            yield {"tokens": np.array(json.loads(line)["tokens"], dtype=np.uint16)}


def litdata(src, out, shards):
    import litdata as ld
    size = os.path.getsize(src)
    # inputs: byte ranges cut at line ends, 64 of them (LitData shares inputs
    # among workers; one worker here)
    cuts = [0]
    with open(src, "rb") as f:
        for k in range(1, 64):
            f.seek(size * k // 64)
            f.readline()
            cuts.append(min(f.tell(), size))
    cuts.append(size)
    inputs = [(src, a, b) for a, b in zip(cuts, cuts[1:]) if b > a]
    cb = shard_bytes(src, shards)[0] if shards else MB64
    ld.optimize(fn=_litdata_fn, inputs=inputs, output_dir=out, chunk_bytes=cb, num_workers=1,
                mode="overwrite")
    return "litdata.optimize(num_workers=1, chunk_bytes=%d)" % cb


def wds(src, out, shards):
    import webdataset as wd
    os.makedirs(out, exist_ok=True)
    if shards:
        n = shard_bytes(src, shards)[1]
        kw = dict(maxcount=-(-n // shards), maxsize=1 << 40)
    else:
        kw = dict(maxcount=10**9, maxsize=MB64)
    with wd.ShardWriter(os.path.join(out, "shard-%06d.tar"), verbose=0, **kw) as w:
        for i, t in enumerate(docs(src)):
            w.write({"__key__": "%09d" % i, "tokens.npy": t})
    return "webdataset.ShardWriter(%s), tokens.npy" % ", ".join("%s=%s" % kv for kv in kw.items())


def hf(src, out, shards):
    import datasets
    datasets.disable_progress_bars()
    feats = datasets.Features({"tokens": datasets.Sequence(datasets.Value("uint16"))})
    cache = out + ".cache"
    ds = datasets.Dataset.from_generator(lambda: ({"tokens": t} for t in docs(src)),
                                         features=feats, cache_dir=cache)
    kw = dict(num_shards=shards) if shards else {}
    ds.save_to_disk(out, **kw)
    del ds
    shutil.rmtree(cache, ignore_errors=True)
    return "Dataset.from_generator(features=uint16 sequence) + save_to_disk(%s)" % (
        "num_shards=%d" % shards if shards else "default: 500MB shards")


def megatron(src, out, shards):
    if shards:
        raise SystemExit("megatron: one .bin/.idx pair per dataset, no shards")
    import torch
    from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder
    os.makedirs(out, exist_ok=True)
    b = IndexedDatasetBuilder(os.path.join(out, "corpus.bin"), dtype=np.uint16)
    for t in docs(src):
        b.add_item(torch.from_numpy(t))
        b.end_document()
    b.finalize(os.path.join(out, "corpus.idx"))
    return "IndexedDatasetBuilder(dtype=uint16), add_item + end_document"


def seqstore_cli(src, out, shards):
    base = [SEQSTORE, "convert", "jsonl", src, "--key", "tokens", "--tokens", "ids",
            "--vocab-size", "65536", "--threads", "1", "--quiet", "--force"]
    if not shards:
        subprocess.run(base + ["-o", out], check=True)
        return "seqstore convert jsonl --tokens ids --vocab-size 65536 --threads 1"
    os.makedirs(out, exist_ok=True)
    for k in range(shards):
        subprocess.run(base + ["--shard", "%d/%d" % (k, shards), "-o",
                               os.path.join(out, "part-%03d.ss" % k)], check=True)
    subprocess.run([SEQSTORE, "dataset", "build", out], check=True, stdout=subprocess.DEVNULL)
    return "seqstore convert jsonl ... --shard K/%d (one process each) + dataset build" % shards


def seqstore_py(src, out, shards):
    import seqstore
    if shards:
        raise SystemExit("seqstore-py: one store")
    with seqstore.create(out, [("tokens", "u16")], force=True) as w:
        for t in docs(src):
            w.append({"tokens": t})
    return "seqstore.create(tokens u16) + append per document"


IMPORTS = {"mds": ["streaming"], "litdata": ["litdata"], "wds": ["webdataset"],
           "hf": ["datasets"], "megatron": ["torch", "megatron.core.datasets.indexed_dataset"],
           "seqstore-py": ["seqstore"]}
WRITERS = {"mds": mds, "litdata": litdata, "wds": wds, "hf": hf, "megatron": megatron,
           "seqstore": seqstore_cli, "seqstore-py": seqstore_py}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("system", choices=sorted(WRITERS))
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--shards", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    # the libraries are imported before the clock starts (their imports take
    # seconds on a loaded machine and are no part of writing)
    if a.system == "mds":
        from common import torchvision_shim
        torchvision_shim()
    for m in IMPORTS.get(a.system, ()):
        __import__(m)
    for rep in range(a.repeat):
        for p in [a.out, a.out + "-lock"] + glob.glob(a.out + ".cache"):
            if os.path.isdir(p):
                shutil.rmtree(p)
            elif os.path.exists(p):
                os.remove(p)
        with Clock() as c:
            config = WRITERS[a.system](a.src, a.out, a.shards)
        emit(system=a.system, rep=rep, seconds=c.wall, cpu=c.cpu, config=config)


if __name__ == "__main__":
    main()
