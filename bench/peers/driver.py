#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""driver.py DATA OUT.md [--smoke] [--rounds R]: every workload, each system
in a fresh process, systems alternated within each round (the order rotates
from round to round so the machine's load drift hits all of them), medians
and ranges over the rounds; writes the Markdown report OUT.md.

DATA/raw holds make_data.py's inputs; DATA/conv/... every system's copy,
made here by each one's own writer (workload 1, timed)."""
import argparse
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import HERE, SEQSTORE, loadavg, log  # noqa: E402

PY = sys.executable
REPEAT = CONVERT_REPEAT = CONVERT_ROUNDS = 1
RESULTS = []  # (section, row label, system, config, [results])


def run(argv, env=None):
    """Run one measured process; its RESULT lines as dicts."""
    e = dict(os.environ, PYTHONWARNINGS="ignore", **(env or {}))
    p = subprocess.run(argv, capture_output=True, text=True, env=e)
    lines = [json.loads(l[7:]) for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    if p.returncode or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-6:]
        log("FAILED: %s\n  %s" % (" ".join(argv[1:5]), "\n  ".join(tail)))
        lines.append({"error": tail[-1] if tail else "exit %d" % p.returncode})
    return lines


def alternate(keys, r, pair=None):
    """Round r's order: each peer followed by seqstore's configurations (peer,
    seqstore, peer, seqstore ...), so that every peer's figure has seqstore's
    measured next to it in time and a drift of the machine's load moves both;
    the peers' order (and seqstore's configurations') rotated from round to
    round. Without peers, seqstore's configurations rotated. pair: the keys
    that alternate with the others (default: every seqstore configuration)."""
    pair = [k for k in keys if k.startswith("seqstore")] if pair is None else pair
    ours = [k for k in keys if k in pair]
    peers = [k for k in keys if k not in pair]
    rot = lambda xs: xs[r % len(xs):] + xs[:r % len(xs)] if xs else xs  # noqa: E731
    ours, peers = rot(ours), rot(peers)
    if not peers:
        return ours
    return [k for p in peers for k in [p] + ours]


def rounds(jobs, n, repeat, pair=None, env=None):
    """jobs: {key: argv}; n rounds, each a process per peer alternated with a
    process per seqstore configuration (alternate()), each process repeating
    the measurement `repeat` times. Returns {key: [results]}."""
    keys, out = list(jobs), {k: [] for k in jobs}
    for r in range(n):
        for k in alternate(keys, r, pair):
            res = run(jobs[k] + ["--repeat", str(repeat)], env)
            out[k] += res
            log("  round %d %-22s %s" % (r, k, [{x: (round(v, 4) if isinstance(v, float) else v)
                                               for x, v in q.items() if x in
                                               ("seconds", "per_us", "error", "exact",
                                                "workers", "pos")} for q in res]))
    return out


def split(res, key, values):
    """{system: results} -> {value: {system: results with res[key] == value}}."""
    return {v: {k: [q for q in rs if q.get(key, v) == v or "error" in q] for k, rs in res.items()}
            for v in values}


HEAD_DOCS = 200_000  # documents of the many-shard copies (see head())


def head(data, corpus):
    """The first HEAD_DOCS documents of a corpus's JSONL, for its copies in
    256 shards (the open workload reads one example of them): each peer
    writes every copy with its own writer, untimed, and 1 M documents more
    per peer took the Python writers many minutes of this shared machine.
    The corpus itself when it is no larger."""
    src = os.path.join(data, "raw", corpus + ".jsonl")
    dst = os.path.join(data, "raw", corpus + "-head.jsonl")
    if not os.path.exists(dst):
        with open(src, "rb") as f, open(dst + ".tmp", "wb") as g:
            for k, line in enumerate(f):
                if k == HEAD_DOCS:
                    break
                g.write(line)
        import numpy as np  # convert.py sizes the shards from the offsets
        off = np.load(os.path.join(data, "raw", corpus + ".offsets.npy"))
        np.save(os.path.join(data, "raw", corpus + "-head.offsets.npy"), off[:HEAD_DOCS + 1])
        os.replace(dst + ".tmp", dst)
    return dst


def conv(data, corpus, system, shards=0):
    out = os.path.join(data, "conv", corpus + ("-%d" % shards if shards else ""), system)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    src = head(data, corpus) if shards > 16 else os.path.join(data, "raw", corpus + ".jsonl")
    argv = [PY, os.path.join(HERE, "convert.py"), system, src, out]
    return out, argv + (["--shards", str(shards)] if shards else [])


def w(data, workload, system, path, *extra):
    return [PY, os.path.join(HERE, "workloads.py"), workload, system, path, "--data", data,
            *extra]


PARTIAL = {}  # out, data, smoke, R, t0: the report so far is rewritten after each workload


def record(section, label, per_system, metric, configs, lower_better=True):
    RESULTS.append(dict(section=section, label=label, res=per_system, metric=metric,
                        configs=configs, lower=lower_better))
    if PARTIAL:  # a run cut short still leaves what it measured (and its JSON)
        report(PARTIAL["out"], PARTIAL["data"], PARTIAL["smoke"], PARTIAL["R"],
               PARTIAL["t0"], partial=True)


# ------------------------------------------------------------------ phases
def phase_convert(data, R, shards):
    log("(1) conversion")
    systems = ["mds", "litdata", "wds", "hf", "megatron", "seqstore", "seqstore-py"]
    jobs, paths = {}, {}
    for s in systems:
        paths[s], jobs[s] = conv(data, "fortunes", s)
    # the CLI alternates with the peers; seqstore-py (the peers' Python loop
    # into seqstore's writer, for reference) is measured once a round
    res = rounds(jobs, R, CONVERT_REPEAT, pair=["seqstore"])
    record("convert", "fortunes corpus, JSONL -> each system's format, one thread", res,
           "seconds", {s: (res[s][-1].get("config") or "") for s in systems})
    # the other copies the workloads read, converted once
    for corpus, nsh, ss in (("fortunes", shards, ["mds", "litdata", "wds", "hf", "seqstore"]),
                               ("web", 16, ["mds", "litdata", "wds", "seqstore"]),
                               ("web", 0, ["hf", "megatron", "seqstore"])):
        for s in ss:
            _, argv = conv(data, corpus, s, nsh)
            r = run(argv)[-1]
            log("  %s/%s shards=%d: %.1f s" % (corpus, s, nsh, r.get("seconds", -1)))
    eeg_audio(data)
    return paths


def eeg_audio(data):
    raw, c = os.path.join(data, "raw"), os.path.join(data, "conv")
    edfs = sorted(glob.glob(os.path.join(raw, "eeg", "*.edf")))
    t = time.perf_counter()
    subprocess.run([SEQSTORE, "convert", "edf", *edfs, "--events-as", "windows",
                    "--window-start", "0", "--window-stop", "4", "--physical", "f32",
                    "--threads", "1", "--quiet", "--force", "-o", os.path.join(c, "eeg.ss")],
                   check=True)
    dt = time.perf_counter() - t
    log("  eeg.ss: %.2f s" % dt)
    record("convert-eeg", "EEG: seqstore's one-time conversion of the EDF recordings to "
           "trial windows (not in the EEG figures below; braindecode windows every run)",
           {"seqstore": [{"seconds": dt, "load": loadavg()}]}, "seconds",
           {"seqstore": "convert edf --events-as windows --window-start 0 --window-stop 4 "
                        "--physical f32 --threads 1 (wall time of the CLI)"})
    wavs = sorted(glob.glob(os.path.join(raw, "wav", "*.wav")))
    subprocess.run([SEQSTORE, "convert", "audio", *wavs, "--threads", "1", "--quiet", "--force",
                    "-o", os.path.join(c, "audio.ss")], check=True)
    subprocess.run([SEQSTORE, "index", os.path.join(c, "audio.ss"), "--by", "signal",
                    "--resolution", "24000", "--name", "len"], check=True, stdout=subprocess.DEVNULL)
    os.makedirs(os.path.join(c, "lhotse"), exist_ok=True)
    subprocess.run([PY, "-c", LHOTSE_CUTS, os.path.join(raw, "wav"),
                    os.path.join(c, "lhotse", "cuts.jsonl.gz")], check=True)


LHOTSE_CUTS = """
import sys, glob
from lhotse import CutSet, Recording, RecordingSet
recs = RecordingSet.from_recordings(Recording.from_file(p) for p in sorted(glob.glob(sys.argv[1] + '/*.wav')))
CutSet.from_manifests(recordings=recs).to_file(sys.argv[2])
"""


def phase_reads(data, R, smoke, shards):
    c = os.path.join(data, "conv")
    f256, fo = os.path.join(c, "fortunes-%d" % shards), os.path.join(c, "fortunes")
    web16, web = os.path.join(c, "web-16"), os.path.join(c, "web")
    K = REPEAT
    log("(2) open + first example, %d shards" % shards)
    jobs = {s: w(data, "open", s, os.path.join(f256, s)) for s in
            ["seqstore", "mds", "litdata", "wds", "hf"]}
    record("open", "open a %d-shard dataset + read its first example (the fortunes "
           "corpus's first %d documents)" % (shards, HEAD_DOCS),
           rounds(jobs, R, K), "seconds", CONFIG_OPEN)
    log("(3) random access")
    n = "2000" if smoke else "10000"  # LitData's 2.5 ms a read: 25 s a process
    jobs = {s: w(data, "random", s, os.path.join(fo, s), "--n", n) for s in
            ["seqstore", "mds", "litdata", "hf", "megatron"]}
    record("random", "random example reads from Python (fortunes corpus, %s reads)" % n,
           rounds(jobs, R, K), "per_us", CONFIG_RANDOM)
    log("(4) padded epoch")
    wk = ["--corpus", "web", "--workers", "0,2"]
    jobs = {"seqstore": w(data, "epoch", "seqstore", os.path.join(web, "seqstore"), *wk),
            "seqstore-dl": w(data, "epoch", "seqstore-dl", os.path.join(web, "seqstore"), *wk),
            "hf": w(data, "epoch", "hf", os.path.join(web, "hf"), *wk)}
    for s in ("mds", "litdata", "wds"):
        jobs[s] = w(data, "epoch", s, os.path.join(web16, s), *wk)
    for k, res in split(rounds(jobs, R, K), "workers", (0, 2)).items():
        record("epoch%d" % k, "shuffled epoch, padded int64 batches of 64 (web corpus), "
               "%d DataLoader workers" % k, res, "seconds", config_epoch(k))
    log("(5) token budget")
    wk = ["--workers", "0,2"]
    jobs = {"seqstore": w(data, "budget", "seqstore", os.path.join(c, "audio.ss"), *wk),
            "lhotse": w(data, "budget", "lhotse", os.path.join(c, "lhotse"), *wk)}
    for k, res in split(rounds(jobs, R, K), "workers", (0, 2)).items():
        record("budget%d" % k, "token-budget batches of audio (60 s each), %d workers" % k,
               res, "seconds", config_budget(k))
    log("(6) LM samples")
    jobs = {"seqstore": w(data, "lm", "seqstore", os.path.join(web, "seqstore"),
                          "--workers", "0"),
            "megatron": w(data, "lm", "megatron", os.path.join(web, "megatron"),
                          "--workers", "0,2")}
    res = rounds(jobs, R, K)
    for k in (0, 2):
        record("lm%d" % k, "LM samples of 2048 tokens, one epoch, batches of 8 "
               "(Megatron with %d workers)" % k,
               {"seqstore": res["seqstore"],
                "megatron": [q for q in res["megatron"] if q.get("workers", k) == k]},
               "seconds", config_lm(k))
    log("(7) EEG windows")
    chk = run(w(data, "eegcheck", "seqstore", os.path.join(c, "eeg.ss")))[-1]
    log("  the store's windows against braindecode's: %s" % chk)
    if "error" in chk:
        RESULTS.append(dict(section="eegcheck", label="EEG windows equal braindecode's",
                            res={"seqstore": [chk]}, metric="seconds", configs={},
                            lower=True))
    wk = ["--workers", "0,2"]
    jobs = {"seqstore": w(data, "eeg", "seqstore", os.path.join(c, "eeg.ss"), *wk),
            "braindecode-lazy": w(data, "eeg", "braindecode-lazy",
                                  os.path.join(data, "raw", "eeg"), *wk),
            "braindecode-preload": w(data, "eeg", "braindecode-preload",
                                     os.path.join(data, "raw", "eeg"), *wk)}
    for k, res in split(rounds(jobs, R, K), "workers", (0, 2)).items():
        record("eeg%d" % k, "EEG trial windows from events: set-up + one shuffled epoch "
               "of [64, 22, 1000] f32 batches, %d workers" % k, res, "seconds",
               config_eeg(k))
    log("(8) resume")
    pos = (3, 20) if smoke else (10, 120)
    wk = ["--corpus", "web", "--pos", ",".join(map(str, pos))]
    jobs = {"seqstore": w(data, "resume", "seqstore", os.path.join(web, "seqstore"), *wk),
            "hf": w(data, "resume", "hf", os.path.join(web, "hf"), *wk),
            "mds": w(data, "resume", "mds", os.path.join(web16, "mds"), *wk),
            "litdata": w(data, "resume", "litdata", os.path.join(web16, "litdata"), *wk)}
    for p, res in split(rounds(jobs, R, K), "pos", pos).items():
        record("resume%d" % p, "save + restore a mid-epoch state after %d batches "
               "(pickled state_dict(), then load_state_dict() in a new loader; exact: the next "
               "4 batches equal an uninterrupted loader's)" % p, res, "seconds", CONFIG_RESUME)


def phase_remote(data, R):
    """(9) The web corpus's 16-shard copies in a local S3 server (moto, on
    127.0.0.1), each streamed for one epoch into an empty cache."""
    import socket
    import boto3
    log("(9) remote streaming")
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = so.getsockname()[1]
    url = "http://127.0.0.1:%d" % port
    env = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
           "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": url, "S3_ENDPOINT_URL": url}
    logf = open(os.path.join(data, "moto.log"), "w")
    srv = subprocess.Popen([os.path.join(os.path.dirname(PY), "moto_server"), "-H",
                            "127.0.0.1", "-p", str(port)], stdout=logf,
                           stderr=subprocess.STDOUT)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                          aws_access_key_id="bench", aws_secret_access_key="bench")
        s3.create_bucket(Bucket="bench")
        web16 = os.path.join(data, "conv", "web-16")
        for system in ("mds", "litdata"):
            root = os.path.join(web16, system)
            for dirpath, _, files in os.walk(root):
                for f in files:
                    p = os.path.join(dirpath, f)
                    s3.upload_file(p, "bench", "%s/%s" % (system, os.path.relpath(p, root)))
        subprocess.run([SEQSTORE, "dataset", "push", os.path.join(web16, "seqstore"),
                        "s3://bench/seqstore/web.ds"], check=True, env=dict(os.environ, **env),
                       stdout=subprocess.DEVNULL)
        urls = {"seqstore": "s3://bench/seqstore/web.ds", "mds": "s3://bench/mds",
                "litdata": "s3://bench/litdata"}
        jobs = {k: w(data, "remote", k, u, "--corpus", "web") for k, u in urls.items()}
        res = rounds(jobs, R, REPEAT, env=env)
    finally:
        srv.terminate()
        srv.wait(10)
        logf.close()
    record("remote", "remote streaming: one shuffled epoch of padded int64 batches of 64 "
           "(web corpus, 16 shards) from a local S3 server (moto on 127.0.0.1) into an "
           "empty cache, 0 workers", res, "seconds", CONFIG_REMOTE)


CONFIG_REMOTE = {
    "seqstore": "seqstore.open('s3://...web.ds', cache_dir=EMPTY) (dataset push of 16 shards) "
                "+ Loader(batch_size=64, shuffle, tokens i64, threads=1)",
    "mds": "StreamingDataset(remote='s3://...', local=EMPTY, shuffle=True) + "
           "StreamingDataLoader(num_workers=0, collate_fn=pad_sequence to int64)",
    "litdata": "litdata.StreamingDataset('s3://...', cache_dir=EMPTY, shuffle=True, "
               "storage_options={'endpoint_url': ...}; its obstore client told allow_http, "
               "for the local server) + StreamingDataLoader(num_workers=0, "
               "collate_fn=pad_sequence to int64)"}


CONFIG_OPEN = {
    "seqstore": "seqstore.open(DIR) of a dataset (manifest + N shard stores), s['tokens'][0]",
    "mds": "StreamingDataset(local=DIR, batch_size=64)[0] (N MDS shards)",
    "litdata": "litdata.StreamingDataset(DIR)[0] (N chunks)",
    "wds": "next(iter(WebDataset(N tars).decode()))",
    "hf": "load_from_disk(DIR).with_format('numpy')[0] (save_to_disk num_shards=N)"}
CONFIG_RANDOM = {
    "seqstore": "s['tokens'][i] (zero-copy NumPy view)",
    "mds": "StreamingDataset(local=DIR)[i]['tokens'] (64 MB shards)",
    "litdata": "litdata.StreamingDataset(DIR)[i]['tokens'] (64 MB chunks)",
    "hf": "load_from_disk(DIR).with_format('numpy')[i]['tokens']",
    "megatron": "IndexedDataset(PREFIX)[i] (mmap, Megatron-Core)"}
CONFIG_RESUME = {
    "seqstore": "Loader.state_dict() / load_state_dict() (pickled)",
    "hf": "torchdata StatefulDataLoader(HF dataset, shuffle=True).state_dict() / load_state_dict()",
    "mds": "StreamingDataLoader.state_dict() / load_state_dict() (16 shards)",
    "litdata": "litdata StreamingDataLoader.state_dict() / load_state_dict() (16 chunks)"}


def config_epoch(k):
    dl = "num_workers=%d, collate_fn=pad_sequence to int64" % k
    return {"seqstore": "seqstore.Loader(batch_size=64, shuffle, tokens i64, threads=%d, "
                        "torch=True): C threads, no DataLoader" % max(k, 1),
            "seqstore-dl": "seqstore.torch BatchSampler + IndexDataset + Collate in "
                           "DataLoader(%s)" % ("num_workers=%d" % k),
            "hf": "load_from_disk().with_format('torch') + DataLoader(shuffle=True, %s)" % dl,
            "mds": "StreamingDataset(local, shuffle=True, 16 shards) + StreamingDataLoader(%s)"
                   % dl,
            "litdata": "StreamingDataset(shuffle=True, 16 chunks) + StreamingDataLoader(%s)"
                       % dl,
            "wds": "WebDataset(16 tars, shardshuffle).shuffle(1000).decode().batched(64) + "
                   "WebLoader(batch_size=None, num_workers=%d)" % k}


def config_budget(k):
    return {"seqstore": "Loader(max_tokens=960000, bucket='len' (buckets of 1.5 s: ~8 over 1-12 s, as lhotse's 8), "
                        "shuffle, signal f32, threads=%d)" % max(k, 1),
            "lhotse": "DynamicBucketingSampler(max_duration=60, num_buckets=8, shuffle) + "
                      "collate_audio in DataLoader(batch_size=None, num_workers=%d)" % k}


def config_lm(k):
    return {"seqstore": "seqstore/lm.h through ctypes (no Python LM module yet): "
                        "ss_lm_create + ss_lm_get of 8 samples into torch tensors, one thread",
            "megatron": "GPTDataset(create_attention_mask=False, index cached in a fresh dir) "
                        "+ DataLoader(batch_size=8, num_workers=%d)" % k}


def config_eeg(k):
    return {"seqstore": "convert edf --events-as windows --physical f32 (once); "
                        "Loader(batch_size=64, shuffle, channels_first, threads=%d)" % max(k, 1),
            "braindecode-lazy": "read_raw_edf(preload=False) + create_windows_from_events("
                                "preload=False) + DataLoader(shuffle, num_workers=%d)" % k,
            "braindecode-preload": "read_raw_edf(preload=True) + create_windows_from_events("
                                   "preload=True) + DataLoader(shuffle, num_workers=%d)" % k}


# ------------------------------------------------------------------ report
def med(res, key):
    v = [r[key] for r in res if key in r]
    return (statistics.median(v), min(v), max(v)) if v else None


def fmt(x, metric):
    if x is None:
        return "n/a"
    m, lo, hi = x
    if metric == "per_us":
        return "%.2f µs (%.2f–%.2f)" % (m, lo, hi)
    if m < 0.01:
        return "%.3f ms (%.3f–%.3f)" % (m * 1e3, lo * 1e3, hi * 1e3)
    return "%.3f s (%.3f–%.3f)" % (m, lo, hi)


def versions():
    if "v" not in versions.__dict__:
        versions.v = subprocess.run([PY, "-c", VERSIONS], capture_output=True,
                                    text=True).stdout
    return versions.v


def report(out, data, smoke, R, t0, meta=None, partial=False):
    sizes = json.load(open(os.path.join(data, "raw", "sizes.json")))
    vers = versions()
    meta = meta or {"generated": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "load_start": t0[1], "load_end": loadavg(), "took_s": time.time() - t0[0],
                    "rounds": R, "repeat": REPEAT, "convert_repeat": CONVERT_REPEAT,
                    "convert_rounds": CONVERT_ROUNDS, "smoke": smoke, "partial": partial,
                    "sizes": sizes,
                    "versions": vers}
    meta.setdefault("sizes", sizes)
    meta.setdefault("versions", vers)
    L = ["# Against other data loaders", "",
         "Generated by `bench/peers/run.sh%s` (%s); do not edit by hand." % (
             " --smoke" if smoke else "", meta["generated"]),
         "", "Each figure is the median of %d rounds x %d repetitions (conversion: %s rounds x %s), "
         "with the range in brackets. A round runs each system in a process of its own, "
         "alternated: every peer's process is followed by seqstore's (peer, seqstore, peer, "
         "seqstore ...; the conversion alternates seqstore's CLI), so seqstore is measured "
         "next to each peer in time and a drift of the load moves both; the peers' order "
         "rotates from round to round, and each process repeats its measurement. The ratio "
         "is the peer's median over seqstore's (above 1: seqstore is faster), in wall time "
         "and in CPU time (the process's and its workers', user + system: steadier than "
         "wall time on a loaded machine). RSS is the peak resident memory of the loader "
         "process (its largest worker or child in brackets). "
         "load: the 1-minute load average while the round ran (the machine has %s CPUs, "
         "shared with other work)." % (meta["rounds"], meta["repeat"],
                                       meta.get("convert_rounds", meta["rounds"]),
                                       meta.get("convert_repeat", meta["repeat"]),
                                       os.cpu_count()), "",
         "Data (`bench/peers/make_data.py`): %s." % json.dumps(sizes), ""]
    if smoke:
        L += ["**Smoke run** (tiny data, one round): these figures only show that every "
              "workload runs; they are not measurements.", ""]
    if meta.get("partial"):
        L += ["**Partial**: the run was still going (or was cut) after the workloads below.",
              ""]
    L += targets()
    for r in RESULTS:
        cm = "per_us_cpu" if r["metric"] == "per_us" else "cpu"
        L += ["## %s" % r["label"], "",
              "| system | configuration | wall | CPU | seqstore's advantage, wall / CPU "
              "| RSS MB | load |", "| --- | --- | --- | --- | --- | --- | --- |"]
        ss = [k for k in r["res"] if k.startswith("seqstore")]
        base = med(r["res"].get("seqstore", []), r["metric"])
        cbase = med(r["res"].get("seqstore", []), cm)
        for k, res in r["res"].items():
            errs = [x["error"] for x in res if "error" in x]
            m, cpu = med(res, r["metric"]), med(res, cm)
            ratio = ""
            if m and base and base[0] > 0 and k not in ss:
                ratio = "%.1f× / %s" % (m[0] / base[0], "%.1f×" % (cpu[0] / cbase[0])
                                        if cpu and cbase and cbase[0] > 0 else "n/a")
            rss, crs = med(res, "rss_mb"), med(res, "child_rss_mb")
            loads = [x["load"] for x in res if "load" in x]
            ex = [x.get("exact") for x in res if "exact" in x]
            extra = ("; exact: %s" % ("yes" if all(ex) else "NO")) if ex else ""
            if r["section"].startswith("eeg") and med(res, "setup_s"):
                extra += "; set-up %s, epoch %s" % (fmt(med(res, "setup_s"), "seconds"),
                                                    fmt(med(res, "epoch_s"), "seconds"))
            if r["section"].startswith("resume") and med(res, "first_s"):
                extra += "; then its first batch %s" % fmt(med(res, "first_s"), "seconds")
            if errs and not m:
                cell, ccell = "fails: %s" % errs[0][:120].replace("|", "/"), ""
            else:
                cell, ccell = fmt(m, r["metric"]) + extra, fmt(cpu, r["metric"])
            L.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                k, r["configs"].get(k, ""), cell, ccell, ratio,
                "%.0f (%.0f)" % (rss[0], crs[0]) if rss and crs else "",
                "%.1f–%.1f" % (min(loads), max(loads)) if loads else ""))
        L.append("")
    L += ["## Notes", "",
          "- Every peer gets the same input (the corpus's JSONL, parsed with `json.loads`; "
          "seqstore's CLI parses it in C) and writes with its own writer on one thread; the "
          "libraries are imported before any clock starts. LitData's `optimize` starts a "
          "worker process even with `num_workers=1`: its start-up is in its time.",
          "- Checks: every read workload asserts its result (the first example's tokens, the "
          "tokens read, the batch count); `workloads.py eegcheck` (each run) asserts that "
          "every window of seqstore's EEG store equals braindecode's, in µV, with the same "
          "classes (braindecode numbers them sorted, seqstore as they first appear).",
          "- seqstore's LM samples (`seqstore.lm.LMSamples`, `seqstore/lm.h`) are "
          "Megatron's samples bit for bit (ctest `test_lm` with megatron-core).",
          "- Environment: mosaicml-streaming 0.13 pins numpy < 2.2 and transformers < 5, "
          "hence datasets 4.x; torchvision and torchaudio have no CPU build for torch 2.13 "
          "on PyPI: their compiled parts are removed (bench/peers/requirements.txt).", "",
          "## What bounds seqstore's figures (profiled apart from this run)", "",
          "- Resume: the run before this one showed 21 ms for seqstore after 120 batches "
          "(two repetitions, 7 and 35 ms, at load 10). It was seqstore's: "
          "`load_state_dict()` planned the epoch again (the shuffle, then the gather of "
          "every index, twice: sampler, then loader), O(examples) whatever the position, "
          "and a restore that long is often preempted on a loaded machine. Restoring the "
          "web corpus's state after 120 batches into a fresh Loader, 30 times (/usr/bin/"
          "python3): before, median 0.21 ms, max 4.5 ms (load 7), max 11.8 ms with four "
          "busy loops beside it; now median 0.003–0.007 ms, max 0.02–0.57 ms. By size "
          "(median of 7, 10 batches in): 0.26 / 1.7 / 28.7 ms at 10^4 / 10^5 / 10^6 "
          "examples before; this run's code kept the plan of the epoch in memory "
          "instead (0.04–0.05 ms at each size). Planning a fixed-size epoch has since "
          "become O(1) (the shuffle a keyed bijection; merged after this run): a restore "
          "in any epoch, 0.03–0.05 ms at each size, and ctest test_loader "
          "test_restore_keeps_plan asserts under 1 ms at 400,000 examples. Neither figure "
          "counts the first batch after the restore, given beside it.",
          "- EEG windows (10× braindecode lazy asked): each batch of 64 windows of "
          "[1000, 22] f32 is 5.6 MB, and the epoch (294 windows, 26 MB) is five of them. "
          "seqstore's epoch took 18–20 ms of CPU (min of 15, one process, load 4–5) in "
          "copy mode (the default: the batch's arrays belong to the caller), 13 ms with "
          "copy=False (views into the loader's ring): the copy is a quarter. The rest is "
          "the collation into the ring (channels-first: a transpose, blocked since this "
          "run; 29–30 ms of CPU for the epoch before) and the first touch of fresh memory "
          "(page faults and zeroing: about a fifth of `perf record`'s samples). "
          "braindecode's lazy windows cost 0.29 ms each here (MNE reads each window from "
          "the EDF file), 59 ms of set-up (headers, events, the windows' metadata): at "
          "this size the ratio is about 5× with 0 workers and 10× with 2; 10× with 0 "
          "workers would need seqstore's epoch under 15 ms, that is no copy (handing the "
          "ring's buffer to the caller instead of copying it) and fewer fresh pages.",
          "- Open of 256 shards (10× asked): seqstore.open() of the dataset and its first "
          "example take 0.30–0.35 ms in a fresh process (0.17 ms opened again in the same "
          "process; /usr/bin/python3, load 6): the manifest (256 entries, each with its "
          "digests, parsed and checked), the shard lookup table, the sections store and "
          "shard 0 (two LMDB environments: 74 system calls, 27 of them stat, 18 pread, 7 "
          "open, 5 mmap). WebDataset's figure is a lazy iterator that opens the first tar "
          "only and reads its first member: 2.2 ms at load 6 (6.9 ms at load 25 in the run "
          "before, 17.9× then). 10× at this load would need seqstore's open under "
          "0.22 ms in a fresh process.",
          "",
          "## Not measured", "",
          "- Remote streaming (9) ran against MosaicML streaming and LitData only: "
          "webdataset streams tars over HTTP or pipes (no S3 client of its own), HF "
          "datasets' remote mode is the Hub's, and lhotse, braindecode and Megatron read "
          "local files.",
          "- webdataset has no random access (a tar is read in order); Megatron's "
          "IndexedDataset has no shards (no open-256-shards row) and no padded-batch loader "
          "of its own; lhotse's sampler is the only token-budget sampler among the peers; "
          "resume: webdataset's pipelines have no state_dict.", "",
          "## Versions and machine", "", "```", vers.strip(),
          "python %s, %s, %d CPUs" % (platform.python_version(), platform.platform(),
                                      os.cpu_count()),
          "load average at start %.2f, at end %.2f; run took %.0f s" % (
              meta["load_start"], meta["load_end"], meta["took_s"]), "```", ""]
    with open(out, "w") as f:
        f.write("\n".join(L))
    with open(out.replace(".md", ".json") if out.endswith(".md") else out + ".json", "w") as f:
        json.dump({"meta": meta, "results": RESULTS}, f, indent=1)
    return meta


def _m(section, system, key=None):
    for r in RESULTS:
        if r["section"] == section and system in r["res"]:
            v = med(r["res"][system], key or r["metric"])
            return v[0] if v else None
    return None


def _fastest(section, key=None):
    """The fastest peer of a section: (system, median)."""
    for r in RESULTS:
        if r["section"] == section:
            c = [(k, med(v, key or r["metric"])) for k, v in r["res"].items()
                 if not k.startswith("seqstore")]
            c = [(k, v[0]) for k, v in c if v]
            return min(c, key=lambda kv: kv[1]) if c else (None, None)
    return None, None


def targets():
    """The issue's targets, each as a row: fastest peer, seqstore, ratio."""
    rows = []

    def row(what, target, section, ss="seqstore", key=None, want=None, peer=None):
        if peer:
            p, pv = peer, _m(section, peer, key)
        else:
            p, pv = _fastest(section, key)
        sv = _m(section, ss, key)
        if pv is None or not sv:
            rows.append("| %s | %s | n/a | n/a | | |" % (what, target))
            return
        ratio = pv / sv
        ok = "yes" if want(ratio) else "**no**"
        rows.append("| %s | %s | %s %s | %s | %.1f× | %s |" % (
            what, target, p, _num(pv, key or _metric(section)), _num(sv, key or _metric(section)),
            ratio, ok))
    row("random access from Python", "≥ 3×", "random", want=lambda x: x >= 3)
    row("padded batches, 0 workers", "≥ 5×", "epoch0", want=lambda x: x >= 5)
    row("padded batches, 2 workers", "≥ 5×", "epoch2", want=lambda x: x >= 5)
    row("open + first example, many shards", "≤ 1/10 (≥ 10×)", "open", want=lambda x: x >= 10)
    for r in [r for r in RESULTS if r["section"].startswith("resume")]:
        sv = med(r["res"].get("seqstore", []), "seconds")
        ex = [q.get("exact") for q in r["res"].get("seqstore", []) if "exact" in q]
        p, pv = _fastest(r["section"])
        if sv and pv:
            rows.append("| resume after %s batches (save + restore) | ≤ 1 ms, exact | %s %s | "
                        "%s, exact %s | %.1f× | %s |" % (
                            r["section"][6:], p, _num(pv, "seconds"), _num(sv[0], "seconds"),
                            "yes" if ex and all(ex) else "NO", pv / sv[0],
                            "yes" if ex and all(ex) and sv[0] <= 1e-3 else "**no**"))
    row("EEG windows vs braindecode lazy", "≥ 10×", "eeg0", peer="braindecode-lazy",
        want=lambda x: x >= 10)
    row("EEG windows vs braindecode preloaded", "≥ 2×", "eeg0", peer="braindecode-preload",
        want=lambda x: x >= 2)
    row("conversion, one thread", "≥ 2×", "convert", want=lambda x: x >= 2)
    row("token-budget batches vs lhotse", "", "budget0", want=lambda x: x >= 1)
    row("LM samples vs Megatron GPTDataset", "", "lm0", want=lambda x: x >= 1)
    row("remote streaming from S3 (local server), first epoch", "", "remote",
        want=lambda x: x >= 1)
    for sec, what in (("eeg0", "EEG windows"), ("epoch0", "padded batches")):
        ss, p = med(_res(sec, "seqstore"), "rss_mb"), _fastest(sec)[0]
        peer = "braindecode-preload" if sec == "eeg0" else p
        pv = med(_res(sec, peer), "rss_mb") if peer else None
        if ss and pv:
            rows.append("| peak RSS of the loader process, %s | %s | %s %.0f MB | %.0f MB | "
                        "%.1f× | %s |" % (what, "far less than preloaded" if sec == "eeg0"
                                          else "", peer, pv[0], ss[0], pv[0] / ss[0],
                                          ("yes" if pv[0] / ss[0] >= 1.5 else "**no**")
                                          if sec == "eeg0" else ""))
    rs = [r for r in RESULTS if r["section"].startswith("resume")]
    res_note = []
    for r in rs:
        v = med(r["res"].get("seqstore", []), "seconds")
        ex = all(q.get("exact") for q in r["res"].get("seqstore", []) if "exact" in q)
        if v:
            res_note.append("%s: %.3f ms, exact %s" % (r["section"], v[0] * 1e3,
                                                      "yes" if ex else "NO"))
    return (["## Targets", "",
             "Wall-time medians; the ratio is the fastest peer's (or the named one's) time over "
             "seqstore's. The sections below give CPU times, ranges, RSS and load.", "",
             "| workload | target | fastest peer | seqstore | ratio | met |",
             "| --- | --- | --- | --- | --- | --- |"] + rows +
            ["", "seqstore resume at every measured position: " + "; ".join(res_note) + ".", ""])


def _res(section, system):
    for r in RESULTS:
        if r["section"] == section:
            return r["res"].get(system, [])
    return []


def readme_section(meta):
    """README's "Against other data loaders": the targets table of the run
    and where the rest is (docs/peers.md)."""
    sizes = meta.get("sizes", {})
    vers = meta.get("versions", "")
    loads = [q["load"] for r in RESULTS for v in r["res"].values() for q in v if "load" in q]
    L = ["## Against other data loaders", "",
         "<!-- written by bench/peers/run.sh from the run of docs/peers.md; do not edit by "
         "hand -->",
         "The loaders a team would pick instead, run as their documentation recommends on "
         "the same data, each converted by its own writer, in one run "
         "(`bench/peers/run.sh`, %s): %s. Medians of %d alternated rounds (peer, seqstore, "
         "peer, seqstore ...) x %d repetitions on a %d-CPU machine shared with other work, "
         "load %.1f–%.1f; every figure's range, CPU time, RSS, load and configuration, and "
         "the bound of each target not met, are in [docs/peers.md](docs/peers.md)." % (
             meta["generated"], ", ".join("%s %s" % (k, v) for k, v in sizes.items()),
             meta["rounds"], meta["repeat"], os.cpu_count(),
             min(loads) if loads else 0, max(loads) if loads else 0), ""]
    L += [l for l in targets()[4:] if l.startswith("|")]
    L += ["", "Versions: %s." % "; ".join(" ".join(x.split()) for x in vers.strip().splitlines()),
          ""]
    return L


def write_readme(path, meta):
    """Replace README's section (from its heading to the next "## ") or
    insert it before "## Documentation"."""
    text = open(path, encoding="utf-8").read().split("\n")
    sec = readme_section(meta)
    head = "## Against other data loaders"
    if head in text:
        a = text.index(head)
        b = next((i for i in range(a + 1, len(text)) if text[i].startswith("## ")), len(text))
        text[a:b] = sec
    else:
        a = text.index("## Documentation")
        text[a:a] = sec
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(text))


def _metric(section):
    for r in RESULTS:
        if r["section"] == section:
            return r["metric"]
    return "seconds"


def _num(v, metric):
    if metric in ("per_us", "per_us_cpu"):
        return "%.2f µs" % v
    return "%.3f ms" % (v * 1e3) if v < 0.01 else "%.3f s" % v


VERSIONS = """
import importlib.metadata as m
for p in ['seqstore','torch','numpy','mosaicml-streaming','litdata','webdataset','datasets',
          'pyarrow','torchdata','megatron-core','braindecode','mne','lhotse']:
    try: print('%-20s %s' % (p, m.version(p)))
    except Exception as e: print('%-20s not installed' % p)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--convert-repeat", type=int, default=3)
    ap.add_argument("--convert-rounds", type=int, default=0,
                    help="rounds of the conversions (default: --rounds)")
    ap.add_argument("--only", default="")
    ap.add_argument("--report-from", help="rewrite OUT from a run's JSON only")
    ap.add_argument("--readme", help="write README's section into this file")
    a = ap.parse_args()
    if a.report_from:
        j = json.load(open(a.report_from))
        if isinstance(j, list):  # a run's JSON before it carried its facts: from its .md
            import re
            md = open(a.out).read()
            m = re.search(r"at start ([0-9.]+), at end ([0-9.]+); run took ([0-9]+) s", md)
            g = re.search(r"\(([0-9-]+ [0-9:]+ UTC)\)", md)
            j = {"results": j, "meta": {"generated": g.group(1), "load_start": float(m.group(1)),
                                        "load_end": float(m.group(2)),
                                        "took_s": float(m.group(3)), "rounds": a.rounds,
                                        "repeat": a.repeat, "smoke": a.smoke}}
        RESULTS[:] = j["results"]
        meta = report(a.out, a.data, j["meta"]["smoke"], 0, None, j["meta"])
        if a.readme:
            write_readme(a.readme, meta)
        return
    t0 = (time.time(), loadavg())
    global REPEAT, CONVERT_REPEAT, CONVERT_ROUNDS
    R = 1 if a.smoke else a.rounds
    CONVERT_ROUNDS = 1 if a.smoke else (a.convert_rounds or R)
    REPEAT = 1 if a.smoke else a.repeat
    CONVERT_REPEAT = 1 if a.smoke else a.convert_repeat
    shards = 16 if a.smoke else 256  # a smoke run's 256 CLI processes would take half a minute
    PARTIAL.update(out=a.out, data=a.data, smoke=a.smoke, R=R, t0=t0)
    if "reads" != a.only:
        phase_convert(a.data, CONVERT_ROUNDS, shards)
    if "convert" != a.only:
        phase_reads(a.data, R, a.smoke, shards)
        phase_remote(a.data, R)
    PARTIAL.clear()
    meta = report(a.out, a.data, a.smoke, R, t0)
    if a.readme:
        write_readme(a.readme, meta)
        log("driver: wrote README's section into %s" % a.readme)
    log("driver: wrote %s" % a.out)
    failed = sorted({"%s/%s" % (r["section"], k) for r in RESULTS for k, v in r["res"].items()
                     if any("error" in q for q in v)})
    if failed:  # the report says so too; a smoke run (ctest) must not pass over it
        log("driver: failed: %s" % ", ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
