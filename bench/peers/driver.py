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
REPEAT = 1
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


def rounds(jobs, n, repeat):
    """jobs: {key: argv}; n rounds of one process per system (the order
    rotated each round), each process repeating the measurement `repeat`
    times. Returns {key: [results]}."""
    keys, out = list(jobs), {k: [] for k in jobs}
    for r in range(n):
        order = keys[r % len(keys):] + keys[:r % len(keys)]
        for k in order:
            res = run(jobs[k] + ["--repeat", str(repeat)])
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


def conv(data, corpus, system, shards=0):
    out = os.path.join(data, "conv", corpus + ("-%d" % shards if shards else ""), system)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    argv = [PY, os.path.join(HERE, "convert.py"), system,
            os.path.join(data, "raw", corpus + ".jsonl"), out]
    return out, argv + (["--shards", str(shards)] if shards else [])


def w(data, workload, system, path, *extra):
    return [PY, os.path.join(HERE, "workloads.py"), workload, system, path, "--data", data,
            *extra]


def record(section, label, per_system, metric, configs, lower_better=True):
    RESULTS.append(dict(section=section, label=label, res=per_system, metric=metric,
                        configs=configs, lower=lower_better))


# ------------------------------------------------------------------ phases
def phase_convert(data, R, shards):
    log("(1) conversion")
    systems = ["mds", "litdata", "wds", "hf", "megatron", "seqstore", "seqstore-py"]
    jobs, paths = {}, {}
    for s in systems:
        paths[s], jobs[s] = conv(data, "fortunes", s)
    res = rounds(jobs, R, REPEAT)
    record("convert", "fortunes corpus, JSONL -> each system's format, one thread", res,
           "seconds", {s: (res[s][-1].get("config") or "") for s in systems})
    # the other copies the workloads read, converted once
    for corpus, nsh, ss in (("fortunes", shards, ["mds", "litdata", "wds", "hf", "seqstore"]),
                               ("web", 16, ["mds", "litdata", "wds"]),
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
    log("  eeg.ss: %.2f s" % (time.perf_counter() - t))
    wavs = sorted(glob.glob(os.path.join(raw, "wav", "*.wav")))
    subprocess.run([SEQSTORE, "convert", "audio", *wavs, "--threads", "1", "--quiet", "--force",
                    "-o", os.path.join(c, "audio.ss")], check=True)
    subprocess.run([SEQSTORE, "index", os.path.join(c, "audio.ss"), "--by", "signal",
                    "--resolution", "8", "--name", "len"], check=True, stdout=subprocess.DEVNULL)
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
    record("open", "open a %d-shard dataset + read its first example" % shards,
           rounds(jobs, R, K), "seconds", CONFIG_OPEN)
    log("(3) random access")
    n = "2000" if smoke else "20000"
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


CONFIG_OPEN = {
    "seqstore": "seqstore.open(DIR) of a dataset (manifest + 256 shard stores), s['tokens'][0]",
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
    return {"seqstore": "Loader(max_tokens=960000, bucket='len' (8-sample resolution), "
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


def report(out, data, smoke, R, t0):
    sizes = json.load(open(os.path.join(data, "raw", "sizes.json")))
    vers = subprocess.run([PY, "-c", VERSIONS], capture_output=True, text=True).stdout
    L = ["# Against other data loaders", "",
         "Generated by `bench/peers/run.sh%s` (%s); do not edit by hand." % (
             " --smoke" if smoke else "", time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())),
         "", "Each figure is the median of %d rounds x %d repetitions (each system in its own "
         "process per round, the systems one after another, the order rotated every round; "
         "the process repeats its measurement), with the range in brackets; the ratio "
         "is the peer's median over seqstore's (above 1: seqstore is faster), in wall time "
         "and in CPU time (the process's and its workers', user + system: steadier than "
         "wall time on a loaded machine). RSS is the peak resident memory of the loader "
         "process (its largest worker or child in brackets). "
         "load: the 1-minute load average while the round ran (the machine has %s CPUs, "
         "shared with other work)." % (R, REPEAT, os.cpu_count()), "",
         "Data (`bench/peers/make_data.py`): %s." % json.dumps(sizes), ""]
    if smoke:
        L += ["**Smoke run** (tiny data, one round): these figures only show that every "
              "workload runs; they are not measurements.", ""]
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
            if errs and not m:
                cell, ccell = "fails: %s" % errs[0][:120].replace("|", "/"), ""
            else:
                cell, ccell = fmt(m, r["metric"]) + extra, fmt(cpu, r["metric"])
            L.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                k, r["configs"].get(k, ""), cell, ccell, ratio,
                "%.0f (%.0f)" % (rss[0], crs[0]) if rss and crs else "",
                "%.1f–%.1f" % (min(loads), max(loads)) if loads else ""))
        L.append("")
    L += ["## Not measured", "",
          "- Remote streaming (S3): left for when seqstore reads object storage.",
          "- webdataset has no random access (a tar is read in order); Megatron's "
          "IndexedDataset has no shards and no padded-batch loader of its own; lhotse's "
          "sampler is the only token-budget sampler among the peers.", "",
          "## Versions and machine", "", "```", vers.strip(),
          "python %s, %s, %d CPUs" % (platform.python_version(), platform.platform(),
                                      os.cpu_count()),
          "load average at start %.2f, at end %.2f; run took %.0f s" % (
              t0[1], loadavg(), time.time() - t0[0]), "```", ""]
    with open(out, "w") as f:
        f.write("\n".join(L))
    with open(out.replace(".md", ".json") if out.endswith(".md") else out + ".json", "w") as f:
        json.dump(RESULTS, f, indent=1)


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
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    t0 = (time.time(), loadavg())
    global REPEAT
    R = 1 if a.smoke else a.rounds
    REPEAT = 1 if a.smoke else a.repeat
    shards = 16 if a.smoke else 256  # a smoke run's 256 CLI processes would take half a minute
    if "reads" != a.only:
        phase_convert(a.data, R, shards)
    if "convert" != a.only:
        phase_reads(a.data, R, a.smoke, shards)
    report(a.out, a.data, a.smoke, R, t0)
    log("driver: wrote %s" % a.out)


if __name__ == "__main__":
    main()
