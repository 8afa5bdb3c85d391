#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""workloads.py WORKLOAD SYSTEM DATA [options]: one measured run of one
workload by one system, in a fresh process (so its peak RSS is its own);
prints a RESULT line (common.emit). The driver (driver.py) alternates the
systems over rounds and takes medians. DATA is the directory driver.py
filled (raw inputs from make_data.py and every system's converted copy).

Workloads: open, random, epoch, budget, lm, eeg, resume (see driver.py for
what each measures and how each peer is configured)."""
import argparse
import glob
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import BATCH, Clock, pad64  # noqa: E402
import common  # noqa: E402


def _mds_clean():
    from common import torchvision_shim
    torchvision_shim()
    from streaming.base.util import clean_stale_shared_memory
    clean_stale_shared_memory()


# ---------------------------------------------------------------- datasets
def mds_dataset(path, shuffle=False, seed=1):
    _mds_clean()
    from streaming import StreamingDataset
    return StreamingDataset(local=path, shuffle=shuffle, shuffle_seed=seed, batch_size=BATCH)


def litdata_dataset(path, shuffle=False, seed=1):
    import litdata as ld
    return ld.StreamingDataset(path, shuffle=shuffle, seed=seed)


def hf_dataset(path, fmt="numpy"):
    import datasets
    return datasets.load_from_disk(path).with_format(fmt)


def wds_pipeline(path, shuffle=True, seed=1):
    import webdataset as wd
    urls = sorted(glob.glob(os.path.join(path, "*.tar")))
    ds = wd.WebDataset(urls, shardshuffle=len(urls) if shuffle else False, seed=seed,
                       empty_check=False)
    if shuffle:
        ds = ds.shuffle(1000)
    return ds.decode().to_tuple("tokens.npy")


def megatron_dataset(path):
    from megatron.core.datasets.indexed_dataset import IndexedDataset
    return IndexedDataset(os.path.join(path, "corpus"))


# ---------------------------------------------------------------- (2) open
def w_open(system, path, args):
    """Open a 256-shard dataset and read its first example."""
    with Clock() as c:
        if system == "seqstore":
            import seqstore
            s = seqstore.open(path)
            x = np.array(s["tokens"][0])
        elif system == "mds":
            x = mds_dataset(path)[0]["tokens"]
        elif system == "litdata":
            x = litdata_dataset(path)[0]["tokens"]
        elif system == "hf":
            x = hf_dataset(path)[0]["tokens"]
        elif system == "wds":
            x = next(iter(wds_pipeline(path, shuffle=False)))[0]
    first = np.load(os.path.join(args.data, "raw", args.corpus + ".tokens.npy"), mmap_mode="r")
    L = int(np.load(os.path.join(args.data, "raw", args.corpus + ".offsets.npy"))[1])
    assert np.array_equal(np.asarray(x), first[:L]), "%s: first example differs" % system
    common.emit(**_VARIANT, seconds=c.wall, cpu=c.cpu)


# ---------------------------------------------------------------- (3) random
def w_random(system, path, args):
    """Per-example random access from Python: N reads of random indices."""
    off = np.load(os.path.join(args.data, "raw", args.corpus + ".offsets.npy"))
    n = len(off) - 1
    idx = np.random.default_rng(7).integers(0, n, size=args.n).tolist()
    if system == "seqstore":
        import seqstore
        s = seqstore.open(path)
        f = s["tokens"]
        get = f.__getitem__
    elif system == "mds":
        ds = mds_dataset(path)
        get = lambda i: ds[i]["tokens"]  # noqa: E731
    elif system == "litdata":
        ds = litdata_dataset(path)
        get = lambda i: ds[i]["tokens"]  # noqa: E731
    elif system == "hf":
        ds = hf_dataset(path)
        get = lambda i: ds[i]["tokens"]  # noqa: E731
    elif system == "megatron":
        ds = megatron_dataset(path)
        get = ds.__getitem__
    for i in idx[:100]:  # warm: code paths, the first page of each shard
        get(i)
    tot = 0
    with Clock() as c:
        for i in idx:
            tot += len(get(i))
    want = int(sum(off[i + 1] - off[i] for i in idx))
    assert tot == want, "%s: %d tokens read, %d expected" % (system, tot, want)
    common.emit(**_VARIANT, seconds=c.wall, cpu=c.cpu, per_us=c.wall / len(idx) * 1e6,
         per_us_cpu=c.cpu / len(idx) * 1e6)


# ---------------------------------------------------------------- (4) epoch
def _loader(system, path, workers, seed=1):
    """The peer's recommended loader of shuffled, padded int64 batches of 64."""
    import torch
    kw = dict(num_workers=workers, persistent_workers=False)
    if system == "mds":
        ds = mds_dataset(path, shuffle=True, seed=seed)
        from streaming import StreamingDataLoader
        return StreamingDataLoader(ds, batch_size=BATCH,
                                   collate_fn=lambda b: pad64([x["tokens"] for x in b]), **kw)
    if system == "litdata":
        import litdata as ld
        ds = litdata_dataset(path, shuffle=True, seed=seed)
        return ld.StreamingDataLoader(ds, batch_size=BATCH,
                                      collate_fn=lambda b: pad64([x["tokens"] for x in b]), **kw)
    if system == "hf":
        ds = hf_dataset(path, "torch")
        g = torch.Generator().manual_seed(seed)
        return torch.utils.data.DataLoader(ds, batch_size=BATCH, shuffle=True, generator=g,
                                           collate_fn=lambda b: pad64([x["tokens"] for x in b]),
                                           **kw)
    if system == "wds":
        import webdataset as wd
        ds = wds_pipeline(path, shuffle=True, seed=seed).batched(
            BATCH, collation_fn=lambda b: pad64([x[0] for x in b]), partial=True)
        return wd.WebLoader(ds, batch_size=None, **kw)
    if system == "seqstore":  # the C loader: no DataLoader, `threads` C threads
        import seqstore
        s = seqstore.open(path)
        return seqstore.Loader(s, batch_size=BATCH, shuffle=True, seed=seed, torch=True,
                               threads=max(workers, 1), fields={"tokens": {"dtype": "i64"}})
    if system == "seqstore-dl":  # seqstore.torch's batches through torch's DataLoader
        import seqstore.torch as sst
        bs = sst.BatchSampler(path, batch_size=BATCH, shuffle=True, seed=seed,
                              fields={"tokens": {"dtype": "i64"}})
        return torch.utils.data.DataLoader(sst.IndexDataset(path), batch_sampler=bs,
                                           collate_fn=sst.Collate(path, fields={
                                               "tokens": {"dtype": "i64"}}), **kw)
    raise SystemExit("epoch: no loader for %s" % system)


def _tokens(b):
    if isinstance(b, dict):
        return b["tokens"], b.get("tokens_lengths")
    return b, None


def w_epoch(system, path, args):
    """One shuffled epoch of padded int64 batches of 64."""
    off = np.load(os.path.join(args.data, "raw", args.corpus + ".offsets.npy"))
    with Clock() as c0:
        dl = _loader(system, path, args.workers)
        it = iter(dl)
        first = next(it)
    n, cells, nonpad = 1, 0, 0
    t, _ = _tokens(first)
    cells += t.numel()
    nonpad += int((t != 0).sum()) if args.check else 0
    with Clock() as c:
        for b in it:
            t, _ = _tokens(b)
            n += 1
            cells += t.numel()
            assert t.dtype.is_floating_point is False and t.element_size() == 8
    want = -(-(len(off) - 1) // BATCH)
    assert abs(n - want) <= max(2, args.workers * 2), "%s: %d batches, %d expected" % (
        system, n, want)
    common.emit(**_VARIANT, seconds=c0.wall + c.wall, first_s=c0.wall, cpu=c0.cpu + c.cpu, batches=n,
         padded_cells=cells)


# ---------------------------------------------------------------- (5) budget
def w_budget(system, path, args):
    """Token-budget batches of audio: max_duration seconds of 16 kHz samples."""
    import torch
    budget_s = 60.0
    with Clock() as c0:
        if system == "lhotse":
            from lhotse import CutSet
            from lhotse.dataset import DynamicBucketingSampler
            from lhotse.dataset.collation import collate_audio
            cuts = CutSet.from_file(os.path.join(path, "cuts.jsonl.gz"))
            sampler = DynamicBucketingSampler(cuts, max_duration=budget_s, shuffle=True,
                                              num_buckets=8, seed=1)

            class Audio(torch.utils.data.Dataset):
                def __getitem__(self, batch_cuts):
                    return collate_audio(batch_cuts)[0]

            dl = torch.utils.data.DataLoader(Audio(), sampler=sampler, batch_size=None,
                                             num_workers=args.workers)
        else:
            import seqstore
            s = seqstore.open(path)
            dl = seqstore.Loader(s, max_tokens=int(budget_s * 16000), bucket="len", shuffle=True,
                                 seed=1, torch=True, threads=max(args.workers, 1),
                                 fields={"signal": {"dtype": "f32"}})
        it = iter(dl)
        b = next(it)
    n, samples = 1, 0
    with Clock() as c:
        for b in it:
            x = b["signal"] if isinstance(b, dict) else b
            samples += x.numel()
            n += 1
    common.emit(**_VARIANT, seconds=c0.wall + c.wall, first_s=c0.wall, cpu=c0.cpu + c.cpu, batches=n,
         padded_samples=samples)


# ---------------------------------------------------------------- (6) lm
class SeqstoreLM:
    """seqstore.lm.LMSamples (Megatron's samples bit for bit) read 8 rows at
    a time into new torch tensors, as Megatron's DataLoader hands them out:
    tokens, labels, loss_mask and position_ids."""

    def __init__(self, path, L, seed):
        import seqstore.lm
        self.L = L
        self.lm = seqstore.lm.LMSamples(path, L, "tokens", seed=seed, eod=0)

    def __len__(self):
        return len(self.lm)

    def batch(self, idx):
        import torch
        n = len(idx)
        out = {k: torch.empty((n, self.L), dtype=torch.int64) for k in
               ("tokens", "labels", "position_ids")}
        out["loss_mask"] = torch.empty((n, self.L), dtype=torch.float32)
        self.lm.read(idx, out={k: v.numpy() for k, v in out.items()})
        return out


def _megatron_gpt(path, L, seed, cache):
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    from megatron.core.datasets.indexed_dataset import IndexedDataset
    from megatron.core.datasets.utils import Split

    class Tok:
        eod, vocab_size = 0, None
        unique_identifiers = {"class": "Tok", "eod": 0}
    cfg = GPTDatasetConfig(random_seed=seed, sequence_length=L, tokenizer=Tok(),
                           reset_position_ids=False, reset_attention_mask=False,
                           eod_mask_loss=False, create_attention_mask=False,
                           path_to_cache=cache)
    low = IndexedDataset(os.path.join(path, "corpus"))
    docs = np.arange(low.sequence_lengths.shape[0], dtype=np.int32)
    return GPTDataset(low, os.path.join(path, "corpus"), docs, None, Split.train, cfg)


def w_lm(system, path, args):
    """LM samples of 2048 tokens, one epoch, batches of 8: index build and read."""
    import torch
    import shutil
    L, bs = 2048, 8
    with Clock() as c0:
        if system == "megatron":
            cache = os.path.join(args.data, "megatron-cache-%d" % os.getpid())
            ds = _megatron_gpt(path, L, 1, cache)
            dl = torch.utils.data.DataLoader(ds, batch_size=bs, num_workers=args.workers)
        else:
            ds = SeqstoreLM(path, L, 1)
            sampler = torch.utils.data.BatchSampler(range(len(ds)), bs, False)
            dl = (ds.batch(list(ix)) for ix in sampler)
        it = iter(dl)
        first = next(it)
    n = 1
    with Clock() as c:
        for b in it:
            n += 1
    if system == "megatron":
        shutil.rmtree(cache, ignore_errors=True)
    common.emit(**_VARIANT, seconds=c0.wall + c.wall, first_s=c0.wall, cpu=c0.cpu + c.cpu, batches=n,
         samples=len(ds), tokens0=first["tokens"][0, :8].tolist())


# ---------------------------------------------------------------- (7) eeg
def braindecode_windows(edf_dir, preload):
    import mne
    from braindecode.datasets import BaseConcatDataset
    try:
        from braindecode.datasets import RawDataset as BD
    except ImportError:
        from braindecode.datasets import BaseDataset as BD
    from braindecode.preprocessing import create_windows_from_events
    mne.set_log_level("ERROR")
    paths = sorted(glob.glob(os.path.join(edf_dir, "*.edf")))
    raws = [BD(mne.io.read_raw_edf(p, preload=preload), description={"subject": i})
            for i, p in enumerate(paths)]
    return create_windows_from_events(BaseConcatDataset(raws), trial_start_offset_samples=0,
                                      trial_stop_offset_samples=0, preload=preload,
                                      drop_last_window=False)


def w_eeg(system, path, args):
    """Trial windows from events, shuffled batches of 64, [B, C, T] float32."""
    import torch
    with Clock() as c0:
        if system.startswith("braindecode"):
            ds = braindecode_windows(path, system.endswith("preload"))
            dl = torch.utils.data.DataLoader(ds, batch_size=BATCH, shuffle=True,
                                             num_workers=args.workers)
        else:
            import seqstore
            s = seqstore.open(path)
            dl = seqstore.Loader(s, batch_size=BATCH, shuffle=True, seed=1, torch=True,
                                 threads=max(args.workers, 1),
                                 fields={"signal": {"dtype": "f32", "layout": "channels_first"},
                                         "label": {"dtype": "i64"}})
    with Clock() as c:
        n, shape = 0, None
        for b in dl:
            x = b[0] if isinstance(b, (list, tuple)) else b["signal"]
            shape = shape or list(x.shape)
            n += x.shape[0]
    common.emit(**_VARIANT, seconds=c0.wall + c.wall, setup_s=c0.wall, epoch_s=c.wall, cpu=c0.cpu + c.cpu,
         windows=n, shape=shape)


def w_eegcheck(system, path, args):
    """Every window of seqstore's store equals braindecode's (preloaded, in
    order), in microvolts, and the class sequence agrees up to the naming of
    the classes (braindecode numbers them sorted, seqstore as they appear)."""
    import seqstore
    bd = braindecode_windows(os.path.join(args.data, "raw", "eeg"), True)
    s = seqstore.open(path)
    assert len(bd) == len(s), "%d braindecode windows, %d in the store" % (len(bd), len(s))
    worst, pairs = 0.0, set()
    for i in range(len(s)):
        x, y, _ = bd[i]
        worst = max(worst, float(np.abs(x * 1e6 - np.asarray(s["signal"][i]).T).max()))
        pairs.add((int(y), int(s["label"][i])))
    assert worst < 1e-3, "windows differ by %g uV" % worst
    assert len(pairs) == len({a for a, _ in pairs}) == len({b for _, b in pairs}), pairs
    common.emit(**_VARIANT, seconds=0.0, windows=len(s), max_diff_uv=worst)


# ---------------------------------------------------------------- (8) resume
def _batches(it, k):
    out = []
    for _ in range(k):
        b = next(it)
        t, _ = _tokens(b)
        out.append(t.clone() if hasattr(t, "clone") else np.array(t))
    return out


def _same(a, b):
    import torch
    return len(a) == len(b) and all(torch.equal(torch.as_tensor(x), torch.as_tensor(y))
                                    for x, y in zip(a, b))


def w_resume(system, path, args):
    """Save a mid-epoch state after `pos` batches, restore it in a new loader
    and compare the next 4 batches with those of an uninterrupted loader."""
    import pickle
    pos, after = args.pos, 4
    ref_dl = _stateful(system, path)
    ref = _batches(iter(ref_dl), pos + after)
    del ref_dl  # its prefetching threads or workers would compete with the clock
    dl = _stateful(system, path)
    it = iter(dl)
    _batches(it, pos)
    t0 = time.perf_counter()
    state = pickle.dumps(dl.state_dict())
    t1 = time.perf_counter()
    del it, dl
    import gc
    gc.collect()
    dl2 = _stateful(system, path)
    t2 = time.perf_counter()
    dl2.load_state_dict(pickle.loads(state))
    it2 = iter(dl2)
    t3 = time.perf_counter()
    got = _batches(it2, after)
    t4 = time.perf_counter()
    common.emit(**_VARIANT, seconds=(t1 - t0) + (t3 - t2), cpu=(t1 - t0) + (t3 - t2), save_s=t1 - t0, restore_s=t3 - t2, first_s=t4 - t3,
         exact=_same(got, ref[pos:]), state_bytes=len(state))


def _stateful(system, path):
    import torch
    if system == "seqstore":
        return _loader("seqstore", path, 0)
    if system == "mds":
        return _loader("mds", path, 0)
    if system == "litdata":
        return _loader("litdata", path, 0)
    if system == "hf":  # torchdata's StatefulDataLoader over the map-style dataset
        from torchdata.stateful_dataloader import StatefulDataLoader
        ds = hf_dataset(path, "torch")
        g = torch.Generator().manual_seed(1)
        return StatefulDataLoader(ds, batch_size=BATCH, shuffle=True, generator=g,
                                  collate_fn=lambda b: pad64([x["tokens"] for x in b]))
    raise SystemExit("resume: no stateful loader for %s" % system)


# ---------------------------------------------------------------- (9) remote
def w_remote(system, url, args):
    """One shuffled epoch of padded int64 batches of 64 streamed from a local
    S3 server (moto) into an empty cache: from the dataset's construction to
    its last batch, the downloads included. The server's URL and credentials
    come in the AWS_* variables (and S3_ENDPOINT_URL, MDS's name for it)."""
    import shutil
    import tempfile
    import torch
    off = np.load(os.path.join(args.data, "raw", args.corpus + ".offsets.npy"))
    cache = tempfile.mkdtemp(prefix="remote-cache-", dir=args.data)
    try:
        with Clock() as c:
            if system == "seqstore":
                import seqstore
                s = seqstore.open(url, cache_dir=cache)
                dl = seqstore.Loader(s, batch_size=BATCH, shuffle=True, seed=1, torch=True,
                                     threads=1, fields={"tokens": {"dtype": "i64"}})
            elif system == "mds":
                _mds_clean()
                from streaming import StreamingDataLoader, StreamingDataset
                ds = StreamingDataset(remote=url, local=cache, shuffle=True, shuffle_seed=1,
                                      batch_size=BATCH)
                dl = StreamingDataLoader(ds, batch_size=BATCH, num_workers=0,
                                         collate_fn=lambda b: pad64([x["tokens"] for x in b]))
            elif system == "litdata":
                import litdata as ld
                from litdata.streaming import downloader
                # its obstore client takes HTTPS only; the local server is plain HTTP
                downloader._OBSTORE_CLIENT_OPTIONS["allow_http"] = "true"
                ds = ld.StreamingDataset(url, cache_dir=cache, shuffle=True, seed=1,
                                         storage_options={
                                             "endpoint_url": os.environ["AWS_ENDPOINT_URL"]})
                dl = ld.StreamingDataLoader(ds, batch_size=BATCH, num_workers=0,
                                            collate_fn=lambda b: pad64([x["tokens"] for x in b]))
            n = 0
            for b in dl:
                t, _ = _tokens(b)
                assert t.dtype == torch.int64
                n += 1
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    want = -(-(len(off) - 1) // BATCH)
    assert n == want, "%s: %d batches, %d expected" % (system, n, want)
    common.emit(**_VARIANT, seconds=c.wall, cpu=c.cpu, batches=n)


IMPORTS = {"mds": ["streaming"], "litdata": ["litdata"], "wds": ["webdataset"],
           "hf": ["datasets"], "megatron": ["megatron.core.datasets.gpt_dataset"],
           "seqstore": ["seqstore", "seqstore.torch"], "lhotse": ["lhotse", "lhotse.dataset"],
           "braindecode": ["mne", "braindecode.preprocessing", "braindecode.datasets"]}
WORKLOADS = {"open": w_open, "random": w_random, "epoch": w_epoch, "budget": w_budget,
             "lm": w_lm, "eeg": w_eeg, "eegcheck": w_eegcheck, "resume": w_resume,
             "remote": w_remote}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=sorted(WORKLOADS))
    ap.add_argument("system")
    ap.add_argument("path")
    ap.add_argument("--data", required=True)
    ap.add_argument("--corpus", default="fortunes")
    ap.add_argument("--workers", default="0", help="comma-separated: one run each")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--pos", default="50", help="comma-separated: one run each")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    # the system's libraries are imported before any clock starts
    if a.system == "mds":
        _mds_clean()
    for m in IMPORTS.get(a.system.split("-")[0], ()):
        __import__(m)
    # one process runs every repetition and variant (a fresh process costs
    # torch's import, seconds on this loaded machine); RESULT lines carry
    # the variant
    for rep in range(a.repeat):
        for workers in [int(x) for x in a.workers.split(",")]:
            for pos in [int(x) for x in a.pos.split(",")]:
                a.workers_n, a.pos_n = workers, pos
                b = argparse.Namespace(**vars(a))
                b.workers, b.pos = workers, pos
                global _VARIANT
                _VARIANT = {"workers": workers, "pos": pos, "rep": rep}
                WORKLOADS[a.workload](a.system, a.path, b)


_VARIANT = {}


if __name__ == "__main__":
    main()
