# SPDX-License-Identifier: BSD-2-Clause
"""PyTorch datasets over a store (import torch happens here, not in seqstore).

Both datasets hold only a path: they pickle by path (spawn workers) and open
the store lazily in each process (fork workers reopen it: LMDB forbids using
a parent's environment). Examples come back as dicts of torch tensors that
own their memory (copies of the read-only map): unsigned integer fields
(u16/u32/u64, which torch 1.13 lacks) are widened to int64 and bf16 fields
arrive as torch.bfloat16; "index" is the example's store index (a 0-d
int64 tensor; [B] in a batch).

For a training loop: every rank gets the same number of batches by
default (remainder=, see IterableDataset and BatchSampler), set_epoch()
reaches persistent workers, and Dataset, IterableDataset and BatchSampler
have state_dict()/load_state_dict() for torchdata's StatefulDataLoader.

    ds = seqstore.torch.Dataset("corpus.ss", fields=["tokens"])
    dl = torch.utils.data.DataLoader(ds, batch_size=8, num_workers=2,
                                     collate_fn=seqstore.torch.pad_collate)
"""
import multiprocessing.context
import os

import numpy as np
import torch
import torch.utils.data

import seqstore
import seqstore.lm

_WIDEN = {np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64)}
# forks of this process so far, counted in each child: a store opened before
# the last fork is the parent's (LMDB: the child must open its own); cheaper
# per example than comparing os.getpid()
_FORKS = [0]
os.register_at_fork(after_in_child=lambda: _FORKS.__setitem__(0, _FORKS[0] + 1))
# IterableDataset knows its order: every _PREFETCH_EVERY examples it asks for
# the shards of the next _PREFETCH_AHEAD (a dataset under a URL downloads them
# in the background, `parallel` at once; nothing for local stores)
_PREFETCH_EVERY = 64
_PREFETCH_AHEAD = 256


def to_tensor(a, bf16=False):
    """A tensor owning a copy of array `a` (a read-only view of the map)."""
    if bf16:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    if a.dtype in _WIDEN:
        return torch.from_numpy(seqstore.widen(a))
    return torch.from_numpy(a.copy())


def _uint64(name, v):
    """A seed or epoch: an int in [0, 2**64) (NumPy's generator takes those),
    checked where it is given rather than at the first pass in a worker."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError("%s is an int, not %r" % (name, v))
    if not 0 <= v < 2**64:
        raise ValueError("%s must be in [0, 2**64), not %d" % (name, v))
    return int(v)


class _Lazy:
    """The path, the chosen fields and a store opened on first use per process."""

    def __init__(self, path, fields, verify=False):
        self.path = os.fspath(path)
        self.verify = bool(verify)
        with seqstore.open(self.path, verify=self.verify) as s:  # fail early, in the caller's process
            schema = {f["name"]: f for f in s.schema}
            number = {f["name"]: k for k, f in enumerate(s.schema)}
            self._len = len(s)
        if fields is None:
            fields = list(schema)
        if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
            raise TypeError("fields is a list of field names")
        for f in fields:
            if f not in schema:
                raise KeyError("store '%s' has no field '%s' (fields: %s)"
                               % (self.path, f, list(schema)))
        self.fields = list(fields)
        self._bf16 = {f: schema[f]["dtype"] == "bf16" for f in self.fields}
        # what Store._example() reads: field number * 4 + (1: widen to int64, 2: bf16 as int16)
        self._codes = tuple(number[f] * 4 + (2 if self._bf16[f] else
                                             1 if schema[f]["dtype"] in ("u16", "u32", "u64")
                                             else 0) for f in self.fields)
        self._names = tuple(self.fields) + ("index",)
        self._bf16_names = tuple(f for f in self.fields if self._bf16[f])
        self._store, self._pid, self._forks = None, None, None

    def store(self):
        if self._store is None or self._pid != os.getpid():
            # A store inherited over fork is left alone (never closed here).
            self._store = seqstore.open(self.path, verify=self.verify)
            self._pid = os.getpid()
            self._forks = _FORKS[0]
        return self._store

    def example(self, i):
        """{field: tensor owning a copy, "index": 0-d int64 tensor}: one C call
        copies (and widens) every field; torch.from_numpy wraps the copies."""
        s = self._store if self._forks == _FORKS[0] and self._store else self.store()
        ex = dict(zip(self._names, map(torch.from_numpy, s._example(i, self._codes))))
        for f in self._bf16_names:
            ex[f] = ex[f].view(torch.bfloat16)
        return ex

    def prefetch(self, indices):
        """Start fetching the shards of `indices` (a dataset under a URL; a hint)."""
        s = self._store if self._forks == _FORKS[0] and self._store else self.store()
        s.prefetch(indices)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_store"] = state["_pid"] = state["_forks"] = None
        return state


class Dataset(torch.utils.data.Dataset):
    """Map-style dataset: ds[i] -> {field: tensor, "index": 0-d int64 tensor
    (the store index)}; len(ds) examples.
    verify=True opens the store (in every worker) with seqstore.open(verify=True):
    a damaged data chunk raises seqstore.CorruptError instead of being read.
    state_dict() is empty: a map-style dataset has no position (the sampler
    has; torchdata's StatefulDataLoader saves it)."""

    def __init__(self, path, fields=None, transform=None, verify=False):
        self._src = _Lazy(path, fields, verify)
        self.transform = transform

    @property
    def path(self):
        return self._src.path

    def __len__(self):
        return self._src._len

    def __getitem__(self, i):
        if type(i) is not int and (isinstance(i, bool) or not isinstance(i, (int, np.integer))):
            raise TypeError("Dataset index is an int, not %s" % type(i).__name__)
        ex = self._src.example(i)
        return self.transform(ex) if self.transform else ex

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        if not isinstance(state, dict):
            raise ValueError("not a seqstore Dataset state_dict")


class IterableDataset(torch.utils.data.IterableDataset):
    """Streams examples ({field: tensor, "index": 0-d int64 tensor}), each
    once per epoch over all ranks and workers (up to the remainder's padding).

    The epoch's order (`examples`, a fold or split of store indices, or
    all; shuffled by (seed, epoch) when shuffle=True) is made a multiple of
    world_size by `remainder` (as torch's DistributedSampler: "pad" repeats
    the order's first examples, "skip" drops the last ones, "divisible"
    raises ValueError, "include" leaves some ranks one example short; None
    = "pad"), so that every rank gets the same number of examples and, with
    the same DataLoader options, of batches: DDP never waits at the last
    step. It is dealt to ranks (rank, world_size; by default
    torch.distributed's when it is initialised) and then to DataLoader
    workers (get_worker_info()): example k goes to rank k % world_size, then
    to worker (k // world_size) % num_workers. len() is this rank's count.

    set_epoch() before each epoch, in the main process: the epoch is kept in
    shared memory, so it reaches persistent workers too. state_dict() /
    load_state_dict() (torchdata's StatefulDataLoader calls them in each
    worker) save and restore (epoch, examples yielded): a pass after
    load_state_dict() yields the rest of that epoch. verify=True: as for
    Dataset."""

    def __init__(self, path, fields=None, shuffle=False, seed=0, rank=None, world_size=None,
                 transform=None, verify=False, examples=None, remainder=None):
        self._src = _Lazy(path, fields, verify)
        self.shuffle, self.seed = bool(shuffle), _uint64("seed", seed)
        if (rank is None) != (world_size is None):
            raise ValueError("give both rank and world_size, or neither")
        if world_size is not None and not 0 <= rank < world_size:
            raise ValueError("rank %r must be in [0, world_size %r)" % (rank, world_size))
        if remainder is None:
            remainder = "pad"
        if remainder not in ("pad", "skip", "divisible", "include"):
            raise ValueError("remainder is 'pad', 'skip', 'divisible', 'include' or None, not %r"
                             % (remainder,))
        self.rank, self.world_size, self.remainder = rank, world_size, remainder
        self.transform = transform
        self._examples = None if examples is None else _fold(examples, self._src._len)
        self._epoch = torch.zeros(1, dtype=torch.int64).share_memory_()  # reaches the workers
        self._resume = None   # (epoch, position) from load_state_dict()
        self._at = (None, 0)  # (epoch, examples yielded) of the pass under way
        if world_size is not None:
            self._count(world_size)  # "divisible": refused now, not in a worker

    @property
    def path(self):
        return self._src.path

    @property
    def epoch(self):
        return int(self._epoch[0])

    def set_epoch(self, epoch):
        # stored as int64: an epoch is far below 2**63
        self._epoch[0] = _uint64("epoch", epoch) & (2**63 - 1)

    def _world(self):
        if self.world_size is not None:
            return self.rank, self.world_size
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1

    def _shard(self):
        rank, world = self._world()
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        return rank + world * worker, world * workers

    def _count(self, world):
        """Examples of the epoch's global order after the remainder policy."""
        n = self._src._len if self._examples is None else len(self._examples)
        r = n % world
        if r == 0 or self.remainder == "include":
            return n
        if self.remainder == "divisible":
            raise ValueError("%d examples of '%s' are not divisible by world_size %d "
                             "(remainder='divisible')" % (n, self.path, world))
        return n - r if self.remainder == "skip" else n + world - r

    def __len__(self):
        rank, world = self._world()
        n = self._count(world)
        return (n - rank + world - 1) // world if n > rank else 0

    def order(self, epoch=None):
        """The indices this rank and worker read in epoch `epoch` (default: the current one)."""
        epoch = self.epoch if epoch is None else epoch
        idx = np.arange(self._src._len) if self._examples is None else self._examples
        if self.shuffle:
            idx = idx[np.random.default_rng([self.seed, epoch]).permutation(len(idx))]
        n = self._count(self._world()[1])
        if n != len(idx):
            idx = np.resize(idx, n)  # "pad": the order's start again (cyclically); "skip": cut
        start, step = self._shard()
        return idx[start::step]

    def __iter__(self):
        epoch, skip = self._resume or (self.epoch, 0)
        self._resume = None
        order = self.order(epoch)
        self._at = (epoch, skip)
        src, transform = self._src, self.transform
        every = _PREFETCH_EVERY if "://" in src.path else 0  # a URL's shards come ahead
        for k in range(skip, len(order)):
            if every and (k - skip) % every == 0:
                src.prefetch(order[k + 1:k + 1 + _PREFETCH_AHEAD])
            ex = src.example(int(order[k]))
            self._at = (epoch, k + 1)
            yield transform(ex) if transform else ex

    def state_dict(self):
        """(epoch, examples yielded) of this process's pass and the split it
        was made under ([rank, world_size, num_workers]): a few bytes."""
        epoch, pos = self._at
        rank, world = self._world()
        info = torch.utils.data.get_worker_info()
        return {"epoch": self.epoch if epoch is None else epoch, "position": pos,
                "split": [rank, world, info.num_workers if info else 1]}

    def load_state_dict(self, state):
        """The next pass yields the rest of the saved pass. A state saved with
        world_size R (without DataLoader workers) also resumes with world_size
        R' (elastic): the ranks together consumed position * R examples of
        the global order, and each rank continues at position * R / R',
        which must be a whole number. With workers, the examples are dealt
        over world_size * num_workers shards, and one worker's position does
        not fix the global one under another split: refused (ValueError)."""
        if not isinstance(state, dict) or set(state) - {"split"} != {"epoch", "position"}:
            raise ValueError("not a seqstore IterableDataset state_dict")
        epoch, pos = _uint64("epoch", state["epoch"]), _uint64("position", state["position"])
        if "split" in state:
            pos = self._elastic(pos, state["split"])
        self.set_epoch(epoch)
        self._resume = self._at = (epoch, pos)

    def _elastic(self, pos, split):
        """The position of this rank for a state saved under `split`."""
        if not (isinstance(split, (list, tuple)) and len(split) == 3 and
                all(type(v) is int and v >= 0 for v in split)):
            raise ValueError("not a seqstore IterableDataset state_dict (split %r)" % (split,))
        _, world, workers = split
        rank, now = self._world()
        info = torch.utils.data.get_worker_info()
        now_workers = info.num_workers if info else 1
        if (world, workers) == (now, now_workers):
            return pos
        if workers != 1 or now_workers != 1:
            raise ValueError("cannot resume a state of world_size %d x %d workers with world_size "
                             "%d x %d workers exactly: the examples are dealt one by one over "
                             "every rank's workers, so a worker's position does not say how far "
                             "the global order went (use BatchSampler, or no DataLoader workers)"
                             % (world, workers, now, now_workers))
        if (pos * world) % now:
            raise ValueError("cannot resume %d ranks at position %d exactly with world_size %d: "
                             "%d examples of the global order were consumed, not a multiple of %d"
                             % (world, pos, now, pos * world, now))
        return pos * world // now

    def __getstate__(self):
        state = dict(self.__dict__)
        if multiprocessing.context.get_spawning_popen() is None:
            state["_epoch"] = self.epoch  # pickled by value (no worker to share it with)
        return state

    def __setstate__(self, state):
        if isinstance(state["_epoch"], int):
            state["_epoch"] = torch.tensor([state["_epoch"]], dtype=torch.int64).share_memory_()
        self.__dict__.update(state)


def _fold(examples, n):
    """examples= as a sorted int64 array of distinct store indices < n."""
    a = np.unique(np.asarray(examples, dtype=np.int64).ravel())
    if len(a) != np.asarray(examples).size:
        raise ValueError("examples: each store index at most once")
    if len(a) and (a[0] < 0 or a[-1] >= n):
        raise ValueError("examples: store indices are in [0, %d)" % n)
    return a


def pad_collate(examples, pad=0):
    """Stack a list of example dicts: each field padded to the longest along
    its first axis (0-d fields stacked), plus `<field>_lengths`."""
    out = {}
    for name in examples[0]:
        rows = [ex[name] for ex in examples]
        if rows[0].dim() == 0:
            out[name] = torch.stack(rows)
            continue
        out[name] = torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=pad)
        out[name + "_lengths"] = torch.tensor([len(r) for r in rows], dtype=torch.int64)
    return out


class IndexDataset(torch.utils.data.Dataset):
    """Yields store indices only: pair it with Collate, which reads and pads
    the batch in C (one pass, no per-example Python work)."""

    def __init__(self, path):
        self.path = os.fspath(path)
        with seqstore.open(self.path) as s:
            self._len = len(s)

    def __len__(self):
        return self._len

    def __getitem__(self, i):
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError("IndexDataset index is an int, not %s" % type(i).__name__)
        if not -self._len <= i < self._len:
            raise IndexError("example %d out of range: %d examples" % (i, self._len))
        return int(i) % self._len


class Collate:
    """collate_fn calling the C collator: a list of store indices -> a dict of
    tensors, padded (and widened: fields={"tokens": {"dtype": "i64"}}) by C,
    and "index", the indices given ([B] int64), as in Loader's batches.
    Pickles by path and opens the store and collator lazily in each worker;
    verify=True opens it with seqstore.open(verify=True)."""

    def __init__(self, path, fields=None, verify=False):
        self.path = os.fspath(path)
        self.fields = fields
        self.verify = bool(verify)
        with seqstore.open(self.path, verify=self.verify) as s:  # validate now, in the caller's process
            for dt in _output_dtypes(s, fields):
                if dt in ("u16", "u32", "u64", "bf16"):
                    raise ValueError("torch has no %s tensors: give the field a wider "
                                     "output dtype, e.g. {'dtype': 'i64'}" % dt)
            seqstore.Collator(s, fields).close()
        self._c, self._pid = None, None

    def __call__(self, indices):
        if self._c is None or self._pid != os.getpid():
            self._store = seqstore.open(self.path, verify=self.verify)
            self._c, self._pid = seqstore.Collator(self._store, self.fields), os.getpid()
            self._c_len = len(self._store)
        idx = np.asarray(indices, dtype=np.int64)
        out = {k: torch.from_numpy(v) for k, v in self._c.collate(idx).items()}
        out["index"] = torch.from_numpy(idx % self._c_len if len(idx) and idx.min() < 0 else idx)
        return out

    def __getstate__(self):
        return {"path": self.path, "fields": self.fields, "verify": self.verify, "_c": None,
                "_pid": None}


def _dist_shard(rank, world_size):
    """(rank, world_size): as given, else torch.distributed's, else (0, 1)."""
    if (rank is None) != (world_size is None):
        raise ValueError("give both rank and world_size, or neither")
    if world_size is None:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1
    return rank, world_size


class BatchSampler(torch.utils.data.Sampler):
    """Batches of store indices from the C batchers, for
    DataLoader(batch_sampler=...): fixed batch_size, a max_tokens budget of
    padded tokens, and bucket batching over a stored bucket index (bucket=),
    sharded by rank/world_size (torch.distributed's by default).

        path = "corpus.ss"
        sampler = seqstore.torch.BatchSampler(path, max_tokens=4096, bucket="len",
                                              shuffle=True, seed=1, fields=["tokens"])
        dl = torch.utils.data.DataLoader(
            seqstore.torch.IndexDataset(path), batch_sampler=sampler, num_workers=2,
            collate_fn=seqstore.torch.Collate(path, fields={"tokens": {"dtype": "i64"}}))
        for epoch in range(10):
            sampler.set_epoch(epoch)      # or let each pass go on to the next epoch
            for batch in dl: ...

    The batches are exactly seqstore.Loader's for the same options (the same
    C code plans them): `fields` names the output fields whose lengths the
    budget and the buckets count (None: every field), `examples` restricts
    the epoch to a fold or split. Each pass over the sampler yields epoch
    `self.epoch` and then advances it; set_epoch() chooses it (torch's
    DistributedSampler convention). It pickles by path and opens the store
    lazily in the process that iterates it (DataLoader iterates it in the
    main process and sends index lists to the workers). Cost: the sampler
    runs the C loader and hands out only the indices; with a fixed
    batch_size it collates a single field (the smallest: a scalar one if
    the store has one), with max_tokens or bucket the named fields packed
    (their lengths decide the batches); verify=True opens the store with
    seqstore.open(verify=True) and collates every named field, so that the
    pass also checks each data chunk's checksum.
    remainder: as for seqstore.Loader (None: "pad" for several ranks, so
    that every rank gets the same number of batches).
    state_dict()/load_state_dict(): the C loader's position (bytes): a
    StatefulDataLoader restored from it yields exactly the remaining
    batches; it also resumes with another world_size (rank) when
    world_size * batch_size is unchanged, as seqstore.Loader's does."""

    def __init__(self, path, batch_size=None, max_tokens=None, bucket=None, shuffle=False,
                 seed=0, rank=None, world_size=None, drop_last=False, fields=None,
                 examples=None, verify=False, remainder=None):
        self.path = os.fspath(path)
        self.verify = bool(verify)
        rank, world_size = _dist_shard(rank, world_size)
        self.epoch = 0
        s = seqstore.open(self.path, verify=self.verify)  # validate now, here
        try:
            kinds = {f["name"]: f["sequence"] for f in s.schema}
            names = list(kinds) if fields is None else fields
            if isinstance(names, str) or not all(isinstance(n, str) for n in names):
                raise TypeError("fields is a list of field names")
            for n in names:
                s.field(n)  # KeyError naming the store's fields
            if max_tokens is None and bucket is None and not verify:
                # a fixed batch size needs no lengths: one field, the cheapest
                # to collate (a scalar one if any), is all the C loader reads
                # (with verify, every field, so that the pass checks them)
                size = {f["name"]: int(np.prod(f["shape"])) for f in s.schema}
                names = sorted(names, key=lambda n: (kinds[n], size[n]))[:1]
            # packed: the cheapest collation (data concatenated, no padding)
            spec = {n: {"layout": "packed"} if kinds[n] else {} for n in names}
            self._opts = dict(batch_size=batch_size, max_tokens=max_tokens, bucket=bucket,
                              shuffle=shuffle, seed=seed, rank=rank, world_size=world_size,
                              drop_last=drop_last, fields=spec, examples=examples,
                              threads=1, prefetch=1, copy=False, remainder=remainder)
            ld = self._loader(s)
        except BaseException:
            s.close()
            raise
        # kept for the first pass in this process (its epoch 0 is planned already)
        self._store, self._ld, self._pid, self._counter = s, ld, os.getpid(), None
        self._resume = None  # a loader state from load_state_dict()
        self._active = False  # a pass is under way

    def _loader(self, store):
        return seqstore.Loader(store, **self._opts)

    def _open(self):
        if self._ld is None or self._pid != os.getpid():
            # one inherited over fork is left alone (LMDB: reopen in the child)
            self._store = seqstore.open(self.path, verify=self.verify)
            self._ld, self._pid = self._loader(self._store), os.getpid()
            self._counter = None
        return self._ld

    def set_epoch(self, epoch):
        if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 0:
            raise ValueError("epoch is an int >= 0, not %r" % (epoch,))
        self.epoch = int(epoch)

    def __len__(self):
        """Batches of the epoch the next pass yields (with a token budget or
        buckets, the count may differ between epochs). Counted by a second
        loader, so that len() during a pass does not disturb it."""
        self._open()
        if self._counter is None:
            self._counter = self._loader(self._store)
        self._counter.set_epoch(self.epoch)
        return len(self._counter)

    def __iter__(self):
        ld = self._open()
        if self._resume is not None:
            ld.load_state_dict(self._resume)
            self._resume = None
        elif ld.epoch != self.epoch or ld.position:  # else planned already
            ld.set_epoch(self.epoch)
        self.epoch = ld.epoch + 1
        self._active = True
        for b in ld:
            yield b["index"].tolist()
        self._active = False

    def state_dict(self):
        """The epoch and the batches handed out of the pass under way, as the C
        loader's saved position (about a hundred bytes, a few microseconds);
        without a pass, the epoch the next one yields."""
        if self._active:
            return {"epoch": self.epoch, "seqstore_loader": self._ld.state_dict()["seqstore_loader"]}
        return {"epoch": self.epoch}

    def load_state_dict(self, state):
        """The next pass yields the rest of the saved one (same store and options)."""
        if not isinstance(state, dict) or "epoch" not in state:
            raise ValueError("not a seqstore BatchSampler state_dict")
        self.set_epoch(state["epoch"])
        self._resume = None
        if "seqstore_loader" in state:
            self._open().load_state_dict({"seqstore_loader": state["seqstore_loader"]})  # checked now
            self._resume = {"seqstore_loader": state["seqstore_loader"]}

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_store"] = state["_ld"] = state["_pid"] = state["_counter"] = None
        return state


def _output_dtypes(store, fields):
    stored = {f["name"]: f["dtype"] for f in store.schema}
    if fields is None:
        return list(stored.values())
    if isinstance(fields, dict):
        return [(o or {}).get("dtype") and seqstore._writer._dtype_name(o["dtype"], n)
                or stored.get(n) for n, o in fields.items()]
    return [stored.get(n) for n in fields]


class LMDataset(torch.utils.data.IterableDataset):
    """LM pretraining batches (seqstore.lm.LMSamples) for a fixed global batch.

    Step t of a run is the global batch of rows [t * G, (t + 1) * G) of the
    samples (G = global_batch_size); rank r of world_size R yields rows
    [t * G + r * G / R, + G / R) of it, and DataLoader worker w of W the
    steps t = start + w, start + w + W, ... (the DataLoader's round robin
    gives them back in order). So the global batches are the same for any
    number of ranks and workers (G fixed), and a run resumes exactly from
    one integer, the next step (state_dict()/load_state_dict(), or start=).
    Use with ``DataLoader(ds, batch_size=None, num_workers=...)``.

    Each batch is a dict of tensors: tokens, labels, position_ids [b, L]
    int64; loss_mask [b, L] float32; segment_ids [b, L] int32; cu_seqlens
    (1-D int32, every row's segment starts at row * L, then b * L: the
    varlen layout), max_seqlen (0-d int64) and indices [b] (the rows).

    Parameters
    ----------
    path, seq_length, field, **options
        As for seqstore.lm.LMSamples.
    global_batch_size : int
        G, a multiple of world_size.
    rank, world_size : int or None
        Default: torch.distributed's, else (0, 1).
    steps : int or None
        Steps of the run; default len(samples) // G.
    start : int
        The first step (resume).
    """

    def __init__(self, path, seq_length, global_batch_size, field="tokens", *, rank=None,
                 world_size=None, steps=None, start=0, **options):
        from seqstore.lm import LMSamples
        self.samples = LMSamples(path, seq_length, field, **options)
        self.global_batch_size = int(global_batch_size)
        if (rank is None) != (world_size is None):
            raise ValueError("give both rank and world_size, or neither")
        self.rank, self.world_size = rank, world_size
        total = len(self.samples) // self.global_batch_size
        self.steps = total if steps is None else int(steps)
        if not 0 <= self.steps <= total:
            raise ValueError("steps %d: the samples give %d global batches of %d"
                             % (self.steps, total, self.global_batch_size))
        self.start = _uint64("start", start)
        self._next = self.start

    def _local(self):
        rank, world = _dist_shard(self.rank, self.world_size)
        if self.global_batch_size % world:
            raise ValueError("global_batch_size %d is not a multiple of world_size %d"
                             % (self.global_batch_size, world))
        return rank, self.global_batch_size // world

    def __len__(self):
        return max(self.steps - self.start, 0)

    def batch(self, step):
        """This rank's batch of global step `step`."""
        rank, b = self._local()
        first = step * self.global_batch_size + rank * b
        idx = np.arange(first, first + b, dtype=np.int64)
        a = self.samples.read(idx)
        cu, longest = seqstore.lm.flat_cu_seqlens(a.pop("cu_seqlens"), a.pop("nsegments"))
        out = {k: torch.from_numpy(v) for k, v in a.items()}
        out["cu_seqlens"] = torch.from_numpy(cu)
        out["max_seqlen"] = torch.tensor(longest, dtype=torch.int64)
        out["indices"] = torch.from_numpy(idx)
        return out

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        # every pass starts at `start` (as in each DataLoader worker's copy)
        for step in range(self.start + worker, self.steps, workers):
            batch = self.batch(step)
            self._next = step + 1
            yield batch

    def state_dict(self):
        """{"step": the step after the last one this process yielded} (start
        before any): exact for iteration in this process; with DataLoader
        workers, save start + the batches the loop consumed."""
        return {"step": self._next}

    def load_state_dict(self, state):
        """Passes from now on start at step state["step"]."""
        if not isinstance(state, dict) or set(state) != {"step"}:
            raise ValueError("not a seqstore LMDataset state_dict")
        self._next = self.start = _uint64("step", state["step"])
