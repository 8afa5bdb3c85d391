#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""bench_remote.py CLI WORKDIR [SHARDS] - a dataset in object storage on
loopback (moto's S3 server from .venv, started here):

  open      seqstore.open() of the remote dataset of SHARDS (256) shards, the
            cache warm (the manifest and sections GETs only) and cold (also
            shard 0, for the attributes); requests counted by moto's log
  epoch 1   every example read in order with an empty cache (each shard
            downloaded on first touch, one at a time), against boto3's
            download_file of the same shards one at a time (parallelism 1,
            the reader's) from the same server
  epoch 1, loader
            every example in batches of BATCH (64) through seqstore.Loader
            (one thread), which prefetches the shards of the batches ahead
            with PARALLEL (8) transfers at once, against boto3's
            download_file of the same shards PARALLEL at a time (a thread
            pool): the target is >= 0.8 of boto3's rate
  epoch 2+  the same pass with the cache warm, against the local dataset

Medians of alternating rounds. Run with .venv/bin/python."""
import glob
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "remote"))
from servers import free_port, wait_port  # noqa: E402

import boto3  # noqa: E402
import seqstore  # noqa: E402

CLI, WORK = sys.argv[1], sys.argv[2]
SHARDS = int(sys.argv[3]) if len(sys.argv) > 3 else 256
ROUNDS = int(os.environ.get("ROUNDS", "5"))
BATCH = 64
PARALLEL = 8
FORTUNES = sorted(p for p in glob.glob("/usr/share/games/fortunes/*")
                  if os.path.isfile(p) and not p.endswith(".dat"))


def epoch(s):
    n = 0
    for i in range(len(s)):
        n += len(s[i]["tokens"])
    return n


def loader_epoch(s):
    n = 0
    for b in seqstore.Loader(s, batch_size=BATCH, fields=["tokens"], threads=1, prefetch=2):
        n += len(b["index"])
    return n


def boto_parallel(s3, dl):
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(PARALLEL) as ex:
        list(ex.map(lambda k: s3.download_file("bench", "d.ds/part-%03d.ss" % k,
                                               "%s/%d" % (dl, k)), range(SHARDS)))


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    log = open(os.path.join(WORK, "moto.log"), "w")
    moto = subprocess.Popen([os.path.join(sys.prefix, "bin", "moto_server"), "-H", "127.0.0.1",
                             "-p", str(port)], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        wait_port(port, moto)
        url = "http://127.0.0.1:%d" % port
        os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                          AWS_REGION="us-east-1", AWS_ENDPOINT_URL=url)
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket="bench")
        local = os.path.join(WORK, "local.ds")
        os.makedirs(local)
        for k in range(SHARDS):
            subprocess.run([CLI, "convert", "lines"] + FORTUNES + ["--shard", "%d/%d" % (k, SHARDS),
                            "-o", "%s/part-%03d.ss" % (local, k), "--quiet"], check=True)
        subprocess.run([CLI, "dataset", "build", local], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([CLI, "dataset", "push", local, "s3://bench/d.ds"], check=True,
                       stdout=subprocess.DEVNULL)
        remote = "s3://bench/d.ds"
        shard_bytes = sum(os.path.getsize(p) for p in glob.glob(local + "/part-*.ss"))
        t_open_warm, t_open_cold, t_e1, t_boto, t_warm, t_local = [], [], [], [], [], []
        t_floor, t_ld1, t_botop = [], [], []
        for r in range(ROUNDS):
            cache = os.path.join(WORK, "cache-%d" % r)
            t = time.perf_counter()
            s = seqstore.open(remote, cache_dir=cache)
            t_open_cold.append(time.perf_counter() - t)
            s.close()
            log.flush()
            before = open(log.name).read().count("GET /bench/d.ds/")
            t = time.perf_counter()
            s = seqstore.open(remote, cache_dir=cache)
            t_open_warm.append(time.perf_counter() - t)
            s.close()
            log.flush()
            time.sleep(0.2)
            gets_warm_open = open(log.name).read().count("GET /bench/d.ds/") - before
            t = time.perf_counter()  # the server's own time for the same two GETs
            for name in ("dataset.manifest", "dataset.sections.ss"):
                s3.get_object(Bucket="bench", Key="d.ds/" + name)["Body"].read()
            t_floor.append(time.perf_counter() - t)
            shutil.rmtree(cache)
            with seqstore.open(remote, cache_dir=cache) as s:
                t = time.perf_counter()
                epoch(s)
                t_e1.append(time.perf_counter() - t)
            dl = os.path.join(WORK, "boto-%d" % r)
            os.makedirs(dl)
            t = time.perf_counter()
            for k in range(SHARDS):
                s3.download_file("bench", "d.ds/part-%03d.ss" % k, "%s/%d" % (dl, k))
            t_boto.append(time.perf_counter() - t)
            shutil.rmtree(dl)
            cache_p = cache + "-loader"
            with seqstore.open(remote, cache_dir=cache_p, parallel=PARALLEL) as s:
                t = time.perf_counter()
                loader_epoch(s)
                t_ld1.append(time.perf_counter() - t)
            shutil.rmtree(cache_p)
            os.makedirs(dl)
            t = time.perf_counter()
            boto_parallel(s3, dl)
            t_botop.append(time.perf_counter() - t)
            shutil.rmtree(dl)
            with seqstore.open(remote, cache_dir=cache) as s, seqstore.open(local) as l:
                for fn, out in ((lambda: epoch(s), t_warm), (lambda: epoch(l), t_local)):
                    t = time.perf_counter()
                    fn()
                    out.append(time.perf_counter() - t)
            shutil.rmtree(cache)
        m = statistics.median
        print("shards %d, shard bytes %d, rounds %d, load %s" % (
            SHARDS, shard_bytes, ROUNDS, open("/proc/loadavg").read().split()[:3]))
        print("open, cache warm: %.1f ms (%d GETs: manifest + sections store)" % (
            1e3 * m(t_open_warm), gets_warm_open))
        print("the same two GETs by boto3: %.1f ms" % (1e3 * m(t_floor)))
        print("open, cache cold: %.1f ms (also shard 0, for the attributes)" % (
            1e3 * m(t_open_cold)))
        print("epoch 1 (cold cache): %.2f s = %.1f MB/s; boto3 download_file of the shards: "
              "%.2f s = %.1f MB/s; ratio %.2f" % (
                  m(t_e1), shard_bytes / m(t_e1) / 1e6, m(t_boto), shard_bytes / m(t_boto) / 1e6,
                  m(t_boto) / m(t_e1)))
        print("epoch 1, loader (batches of %d, %d transfers at once): %.2f s = %.1f MB/s; "
              "boto3 download_file, %d at once: %.2f s = %.1f MB/s; ratio %.2f (target >= 0.8)"
              % (BATCH, PARALLEL, m(t_ld1), shard_bytes / m(t_ld1) / 1e6, PARALLEL, m(t_botop),
                 shard_bytes / m(t_botop) / 1e6, m(t_botop) / m(t_ld1)))
        print("  per round: loader %s s, boto3 %s s" % (
            " ".join("%.2f" % x for x in t_ld1), " ".join("%.2f" % x for x in t_botop)))
        print("epoch 2 (warm cache): %.3f s; local: %.3f s; ratio %.3f" % (
            m(t_warm), m(t_local), m(t_warm) / m(t_local)))
    finally:
        moto.terminate()
        moto.wait(10)


if __name__ == "__main__":
    main()
