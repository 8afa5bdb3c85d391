#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""remote_test.py CLI BUILD_TMP - datasets in object storage, against real
servers the test starts on 127.0.0.1: moto's S3 server with its signature
checks (boto3 makes the bucket and cross-checks what seqstore wrote),
http.server for plain HTTP, and a seeded fault proxy in front of them. Every
read is compared with the same dataset read from local files, bit for bit:
`seqstore cat` output, and every example's values through the Python package.

Needs the test virtual environment (.venv: moto, boto3, seqstore); without it
the test is skipped (exit 77) unless SEQSTORE_REQUIRE_VENV=1, as .ci/run's
stage after python/make-venv.sh sets."""
import glob
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VENV = os.path.join(ROOT, ".venv")
sys.path.insert(0, HERE)

CLI = os.path.abspath(sys.argv[1])
TMP = os.path.abspath(sys.argv[2])
FORTUNES = sorted(p for p in glob.glob("/usr/share/games/fortunes/*")
                  if os.path.isfile(p) and not p.endswith(".dat"))


def run(args, env=None, check=True, timeout=120):
    e = dict(os.environ)
    for k in list(e):  # CA bundles too: the HTTPS test names its own
        if k.startswith(("AWS_", "SEQSTORE_")) or k in ("CURL_CA_BUNDLE", "SSL_CERT_FILE"):
            del e[k]
    e.update(env or {})
    p = subprocess.run([CLI] + args, env=e, capture_output=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError("seqstore %s: exit %d\n%s" % (" ".join(args), p.returncode,
                                                          p.stderr.decode()))
    return p


def make_dataset(d, shards=3, repeat=1):
    os.makedirs(d, exist_ok=True)
    for k in range(shards):
        run(["convert", "lines"] + FORTUNES * repeat +
            ["--shard", "%d/%d" % (k, shards), "-o", "%s/part-%d.ss" % (d, k), "--quiet"])
    run(["dataset", "build", d])


def same_values(url, local, **kw):
    """Every example of the dataset under `url` equals the local one's."""
    import numpy as np
    import seqstore
    with seqstore.open(local) as a, seqstore.open(url, **kw) as b:
        assert len(a) == len(b), (len(a), len(b))
        for i in range(len(a)):
            x, y = a[i], b[i]
            for f in x:
                assert x[f].dtype == y[f].dtype and np.array_equal(x[f], y[f]), (i, f)
    return True


def same_values_s3(c, url):
    """same_values() of an s3:// dataset with the test's credentials and a new cache."""
    os.environ.update(c.moto.env())
    try:
        return same_values(url, c.local, cache_dir=env_for(c)["SEQSTORE_CACHE_DIR"])
    finally:
        for v in c.moto.env():
            os.environ.pop(v, None)


def cat(url, env):
    return run(["cat", url], env=env).stdout


class Ctx:
    pass


def setup(c):
    from servers import FaultProxy, Moto, Static
    c.moto = Moto(VENV, TMP)
    c.s3 = c.moto.s3
    c.s3.create_bucket(Bucket="seqstore-test")
    c.local = os.path.join(TMP, "local.ds")
    make_dataset(c.local)
    c.local_cat = run(["cat", c.local]).stdout
    c.static = Static(TMP)
    c.faults = {}
    c.proxy = FaultProxy(c.moto.port, plan=lambda m, p, n: c.faults.get((m, p, n)))
    c.n = 0


def env_for(c, via_proxy=False, **extra):
    c.n += 1
    e = c.moto.env(c.proxy.url if via_proxy else None)
    e["SEQSTORE_CACHE_DIR"] = os.path.join(TMP, "cache-%d" % c.n)
    e["SEQSTORE_BACKOFF_MS"] = "20"
    e.update({k: str(v) for k, v in extra.items()})
    return e


def cache_files(e, pattern="ds-*/shards/*"):
    return sorted(glob.glob(os.path.join(e["SEQSTORE_CACHE_DIR"], pattern)))


def keys(c, prefix):
    r = c.s3.list_objects_v2(Bucket="seqstore-test", Prefix=prefix)
    return {o["Key"]: o for o in r.get("Contents", [])}


# ------------------------------------------------------------------ tests

def test_push_then_read(c):
    e = env_for(c)
    out = run(["dataset", "push", c.local, "s3://seqstore-test/a/corpus.ds"], env=e).stdout
    assert b"pushed 3 shards" in out, out
    k = keys(c, "a/corpus.ds/")
    names = sorted(n[len("a/corpus.ds/"):] for n in k)
    assert names == ["dataset.manifest", "dataset.sections.ss", "part-0.ss", "part-1.ss",
                     "part-2.ss"], names
    for n in names:  # boto3 reads back the same bytes
        body = c.s3.get_object(Bucket="seqstore-test", Key="a/corpus.ds/" + n)["Body"].read()
        assert body == open(os.path.join(c.local, n), "rb").read(), n
    assert cat("s3://seqstore-test/a/corpus.ds", e) == c.local_cat
    # a second read uses the cache: no shard GET
    assert cat("s3://seqstore-test/a/corpus.ds/", e) == c.local_cat
    assert len(cache_files(e, "ds-*/shards/*.ss")) == 3
    assert not cache_files(e, "ds-*/shards/.*")
    info = run(["info", "s3://seqstore-test/a/corpus.ds"], env=e).stdout
    assert b"s3://seqstore-test/a/corpus.ds" in info and b"3 shards" in info


def test_python_values(c):
    e = env_for(c)
    os.environ.update(c.moto.env())
    try:
        same_values("s3://seqstore-test/a/corpus.ds", c.local,
                    cache_dir=e["SEQSTORE_CACHE_DIR"], cache_bytes=1 << 30)
    finally:
        for k in c.moto.env():
            os.environ.pop(k, None)
    assert len(cache_files(e, "ds-*/shards/*.ss")) == 3


def test_open_fetches_manifest_only(c):
    """Open is the manifest and sections store (and shard 0 for the
    attributes); no listing of the bucket, no other shard."""
    e = env_for(c, via_proxy=True)
    c.proxy.seen.clear()
    run(["info", "--help"], env=e)
    import seqstore
    os.environ.update(e)
    try:
        with seqstore.open("s3://seqstore-test/a/corpus.ds") as s:
            n = len(s)
    finally:
        for k in e:
            os.environ.pop(k, None)
    assert n > 0
    gets = [p for m, p in c.proxy.seen if m == "GET"]
    assert gets.count("/seqstore-test/a/corpus.ds/dataset.manifest") == 1, gets
    assert all(not p.rstrip("/").endswith("seqstore-test") for p in gets), gets  # no listing
    assert "/seqstore-test/a/corpus.ds/part-2.ss" not in gets, gets


def test_http_static(c):
    e = env_for(c)
    url = c.static.url + "/local.ds"
    assert cat(url, e) == c.local_cat
    p = run(["cat", c.static.url + "/nothing.ds"], env=e, check=False)
    err = p.stderr.decode()
    assert p.returncode == 1 and "HTTP 404" in err and "/nothing.ds/dataset.manifest" in err, err
    p = run(["cat", c.static.url + "/local.ds?X-Amz-Signature=SECRET"], env=e, check=False)
    err = p.stderr.decode()
    assert p.returncode == 1 and "SECRET" not in err and "presigned" in err, err


def test_pickle_keeps_options(c):
    """A remote Store pickled into another process (a spawned DataLoader
    worker) reopens with the options it was opened with: its shards land in
    the cache given to open(), not in the process's default cache."""
    import pickle
    import seqstore
    mine = os.path.join(TMP, "pickle-cache")
    with seqstore.open(c.static.url + "/local.ds", cache_dir=mine) as s:
        blob = pickle.dumps(s)
    shards = lambda: len(glob.glob(os.path.join(mine, "ds-*/shards/*.ss")))
    at_open = shards()  # shard 0, for the attributes
    e = dict(os.environ, **env_for(c))  # SEQSTORE_CACHE_DIR: another cache
    code = ("import pickle, sys\n"
            "s = pickle.loads(sys.stdin.buffer.read())\n"
            "print(len(s[len(s) - 1]['tokens']))\n")
    p = subprocess.run([sys.executable, "-c", code], input=blob, env=e, capture_output=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    assert shards() == at_open + 1, "the last shard is not in open()'s cache"
    assert not cache_files(e, "ds-*/shards/*.ss"), "fetched into the default cache"


def test_download_releases_the_gil(c):
    """store[i] that downloads a shard (here stalled, then retried) lets the
    other Python threads run meanwhile: it held the GIL for the download."""
    import threading
    import seqstore
    run(["dataset", "push", c.local, "s3://seqstore-test/g/c.ds"], env=env_for(c))
    c.faults = {("GET", "/seqstore-test/g/c.ds/part-2.ss", 0): "stall"}
    e = env_for(c, via_proxy=True, SEQSTORE_STALL_TIMEOUT_MS=1000)
    os.environ.update(e)
    ticks, done = [0], threading.Event()

    def ticker():
        while not done.is_set():
            ticks[0] += 1
            time.sleep(0.01)
    try:
        with seqstore.open("s3://seqstore-test/g/c.ds") as s:
            t = threading.Thread(target=ticker)
            t.start()
            t0 = time.time()
            s[len(s) - 1]
            secs = time.time() - t0
            done.set()
            t.join()
    finally:
        for k in e:
            os.environ.pop(k, None)
        c.faults = {}
    assert secs > 0.5, secs  # the stall happened
    assert ticks[0] >= 10 * secs, (ticks[0], secs)  # 100 a second when free; 10 on a busy machine


def test_https_range_reads(c):
    """A dataset on an HTTPS server (a self-signed certificate made by openssl
    req now): refused without its CA, naming the URL and the certificate
    problem; read when AWS_CA_BUNDLE, CURL_CA_BUNDLE or SSL_CERT_FILE names the
    CA. A shard whose transfer is cut mid-way continues with a range read
    (Range from the bytes held, If-Range its ETag), not from byte 0; the
    values equal the local ones."""
    from servers import RangeStatic, self_signed
    cert, key = self_signed(TMP)
    cuts = {}
    srv = RangeStatic(TMP, cert, key, cut=lambda p, n: cuts.get((p, n)))
    try:
        url = srv.url + "/local.ds"
        p = run(["cat", url], env=env_for(c), check=False)
        err = p.stderr.decode()
        assert p.returncode == 1 and url + "/dataset.manifest" in err, err
        assert "certificate" in err and "CURL_CA_BUNDLE" in err, err
        assert "tries" not in err, err  # a refused certificate is not retried
        for var in ("AWS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"):
            assert cat(url, env_for(c, **{var: cert})) == c.local_cat, var
        p = run(["cat", url], env=env_for(c, CURL_CA_BUNDLE=os.path.join(TMP, "none.pem")),
                check=False)
        err = p.stderr.decode()
        assert p.returncode == 1 and "none.pem" in err, err
        size = os.path.getsize(os.path.join(c.local, "part-1.ss"))
        cuts[("/local.ds/part-1.ss", 0)] = size // 3
        srv.seen.clear()
        e = env_for(c, CURL_CA_BUNDLE=cert)
        assert cat(url, e) == c.local_cat
        gets = [(r, st) for p, r, st in srv.seen if p == "/local.ds/part-1.ss"]
        assert len(gets) == 2 and gets[0] == (None, 200), gets
        rng, st = gets[1]
        assert st == 206 and rng.startswith("bytes=") and 0 < int(rng[6:-1]) <= size // 3, gets
        assert not cache_files(e, "ds-*/shards/.*tmp")
        # cut again in the range answer: the third try continues from there
        cuts[("/local.ds/part-0.ss", 0)] = size // 3
        cuts[("/local.ds/part-0.ss", 1)] = size // 3
        srv.seen.clear()
        e = env_for(c, CURL_CA_BUNDLE=cert)
        assert cat(url, e) == c.local_cat
        gets = [(r, st) for p, r, st in srv.seen if p == "/local.ds/part-0.ss"]
        assert [st for r, st in gets] == [200, 206, 206], gets
        starts = [int(r[6:-1]) for r, st in gets[1:]]
        assert 0 < starts[0] <= size // 3 < starts[1] <= 2 * (size // 3), gets
        # the object's ETag changes between the tries (If-Range fails): the
        # server sends all of it again, written from byte 0
        part2 = os.path.join(c.local, "part-2.ss")

        def cut_and_touch(p, n):
            if (p, n) != ("/local.ds/part-2.ss", 0):
                return None
            os.utime(part2, ns=(time.time_ns(), time.time_ns()))
            return size // 2
        srv.cut = cut_and_touch
        srv.seen.clear()
        e = env_for(c, CURL_CA_BUNDLE=cert)
        assert cat(url, e) == c.local_cat
        gets = [(r, st) for p, r, st in srv.seen if p == "/local.ds/part-2.ss"]
        assert len(gets) == 2 and gets[0] == (None, 200), gets
        assert gets[1][0].startswith("bytes=") and gets[1][1] == 200, gets
    finally:
        srv.stop()


def test_file_url(c):
    assert run(["cat", "file://" + c.local]).stdout == c.local_cat


def test_errors_name_url_status_code(c):
    e = env_for(c)
    cases = [("s3://seqstore-test/none.ds", "HTTP 404", "NoSuchKey"),
             ("s3://no-such-bucket/x.ds", "HTTP 404", "NoSuchBucket")]
    for url, status, code in cases:
        p = run(["cat", url], env=e, check=False)
        err = p.stderr.decode()
        assert p.returncode == 1 and url in err and status in err and code in err, err
    bad = dict(e, AWS_SECRET_ACCESS_KEY="not-the-secret-XYZZY")
    p = run(["cat", "s3://seqstore-test/a/corpus.ds"], env=bad, check=False)
    err = p.stderr.decode() + p.stdout.decode()
    assert p.returncode == 1 and "HTTP 403" in err and "SignatureDoesNotMatch" in err, err
    assert "XYZZY" not in err and c.moto.secret not in err
    unknown = dict(e, AWS_ACCESS_KEY_ID="AKIANOTAKEY000000000")
    p = run(["info", "s3://seqstore-test/a/corpus.ds"], env=unknown, check=False)
    err = p.stderr.decode()
    assert p.returncode == 1 and "HTTP 403" in err and "InvalidAccessKeyId" in err, err
    p = run(["info", "gs://bucket/x.ds"], env=e, check=False)
    assert p.returncode == 1 and b"unknown scheme" in p.stderr, p.stderr


def test_missing_shard(c):
    e = env_for(c)
    run(["dataset", "push", c.local, "s3://seqstore-test/m/c.ds"], env=e)
    c.s3.delete_object(Bucket="seqstore-test", Key="m/c.ds/part-1.ss")
    p = run(["cat", "s3://seqstore-test/m/c.ds"], env=e, check=False)
    err = p.stderr.decode()
    assert p.returncode == 1 and "s3://seqstore-test/m/c.ds/part-1.ss" in err, err
    assert "HTTP 404" in err and "NoSuchKey" in err, err
    assert not cache_files(e, "ds-*/shards/.*tmp")


def test_replaced_shard_refused(c):
    e = env_for(c)
    run(["dataset", "push", c.local, "s3://seqstore-test/r/c.ds"], env=e)
    other = open(os.path.join(c.local, "part-0.ss"), "rb").read()
    c.s3.put_object(Bucket="seqstore-test", Key="r/c.ds/part-2.ss", Body=other)
    c.proxy.seen.clear()
    e2 = dict(e, AWS_ENDPOINT_URL=c.proxy.url)
    p = run(["cat", "s3://seqstore-test/r/c.ds"], env=e2, check=False)
    err = p.stderr.decode()
    assert p.returncode == 1 and "s3://seqstore-test/r/c.ds/part-2.ss" in err, err
    assert "differs from the manifest" in err, err
    assert c.proxy.count("GET", "/r/c.ds/part-2.ss") == 2  # refetched once
    digests = [os.path.basename(f) for f in cache_files(e, "ds-*/shards/*.ss")]
    assert len(digests) == 2, digests  # the two good shards only
    assert not cache_files(e, "ds-*/shards/.*tmp")


def test_faults_retried(c):
    """drop, 503 SlowDown, truncate and stall on the first tries: retried,
    the values equal the local ones."""
    run(["dataset", "push", c.local, "s3://seqstore-test/f/c.ds"], env=env_for(c))
    base = "/seqstore-test/f/c.ds/"
    c.faults = {("GET", base + "dataset.manifest", 0): "503",
                ("GET", base + "part-0.ss", 0): "drop",
                ("GET", base + "part-0.ss", 1): "truncate",
                ("GET", base + "part-1.ss", 0): "stall",
                ("GET", base + "part-2.ss", 0): "503",
                ("GET", base + "part-2.ss", 1): "truncate"}
    e = env_for(c, via_proxy=True, SEQSTORE_STALL_TIMEOUT_MS=1000)
    c.proxy.seen.clear()
    assert cat("s3://seqstore-test/f/c.ds", e) == c.local_cat
    assert c.proxy.count("GET", base + "part-0.ss") == 3
    assert c.proxy.count("GET", base + "part-2.ss") == 3
    c.faults = {}


def test_faults_exhaust_retries(c):
    base = "/seqstore-test/f/c.ds/"
    for fault, words in [("truncate", "bytes remaining"), ("503", "SlowDown"),
                         ("drop", "GET s3://seqstore-test/f/c.ds/part-1.ss"),
                         ("stall", "GET s3://seqstore-test/f/c.ds/part-1.ss")]:
        c.faults = {("GET", base + "part-1.ss", n): fault for n in range(10)}
        c.proxy.seen.clear()
        e = env_for(c, via_proxy=True, SEQSTORE_ATTEMPTS=2, SEQSTORE_STALL_TIMEOUT_MS=1000)
        p = run(["cat", "s3://seqstore-test/f/c.ds"], env=e, check=False)
        err = p.stderr.decode()
        assert p.returncode == 1 and words in err and "after 2 tries" in err, (fault, err)
        # a partial object never enters the cache
        assert [os.path.basename(f) for f in cache_files(e, "ds-*/shards/*.ss")].__len__() <= 2
        assert not cache_files(e, "ds-*/shards/.*tmp"), fault
        for f in cache_files(e, "ds-*/shards/*.ss"):
            run(["verify", f])
    c.faults = {}


def test_one_download_per_shard(c):
    """Four processes on one cache: each shard is fetched once."""
    e = env_for(c, via_proxy=True)
    base = "/seqstore-test/f/c.ds/"
    c.faults = {("GET", base + "part-%d.ss" % k, 0): "slow" for k in range(3)}
    c.proxy.seen.clear()
    ps = [subprocess.Popen([CLI, "cat", "s3://seqstore-test/f/c.ds"], env=dict(os.environ, **e),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in ps]
    for p, (o, err) in zip(ps, outs):
        assert p.returncode == 0 and o == c.local_cat, err
    for k in range(3):
        assert c.proxy.count("GET", base + "part-%d.ss" % k) == 1, c.proxy.seen
    c.faults = {}


PREFETCH_CHILD = """
import sys, numpy as np, seqstore
url, local, mode = sys.argv[1], sys.argv[2], sys.argv[3]
loader = mode == "1"
with seqstore.open(url) as s, seqstore.open(local) as l:
    n = len(l)
    if mode == "sampler":  # torch's BatchSampler: its C loader plans and prefetches
        import seqstore.torch
        bs = n // 6 + 1
        a = list(seqstore.torch.BatchSampler(url, batch_size=bs, shuffle=True, seed=3))
        b = list(seqstore.torch.BatchSampler(local, batch_size=bs, shuffle=True, seed=3))
        assert a == b and len(a) == 6, (len(a), len(b))
        ds = seqstore.torch.IndexDataset(url)
        for batch in a:
            for i in batch:
                assert np.array_equal(s[i]["tokens"], l[i]["tokens"]), i
    elif mode == "iterable":  # seqstore.torch.IterableDataset: its order is known ahead
        import seqstore.torch
        some = np.arange(0, n, 97)  # spread over every shard
        kw = dict(fields=["tokens"], shuffle=True, seed=3, examples=some)
        a = seqstore.torch.IterableDataset(url, **kw)
        b = seqstore.torch.IterableDataset(local, **kw)
        k = 0
        for x, y in zip(a, b):
            assert int(x["index"]) == int(y["index"]) and bool((x["tokens"] == y["tokens"]).all())
            k += 1
        assert k == len(some), (k, len(some))
    elif mode == "window":  # WindowReader: a batch's shards fetched at once, ahead
        kw = dict(window=4, lanes=12, mode="random", seed=3, epoch_windows=36, prefetch=True)
        a = seqstore.WindowReader(s, "tokens", **kw)
        b = seqstore.WindowReader(l, "tokens", **kw)
        k = 0
        for x, y in zip(a, b):
            for f in ("example", "start", "data", "mask"):
                assert np.array_equal(getattr(x, f), getattr(y, f)), (k, f)
            a.register(x)
            b.register(y)
            k += 1
        assert k == 3, k
    elif not loader:
        for i in range(0, n, n // 6):
            assert np.array_equal(s[i]["tokens"], l[i]["tokens"]), i
    else:
        bs = n // 6 + 1
        a = seqstore.Loader(s, batch_size=bs, fields=["tokens"], threads=1, prefetch=1)
        b = seqstore.Loader(l, batch_size=bs, fields=["tokens"], threads=1, prefetch=1)
        k = 0
        for x, y in zip(a, b):
            for f in ("index", "tokens", "tokens_lengths"):
                assert np.array_equal(np.asarray(x[f]), np.asarray(y[f])), (k, f)
            k += 1
        assert k == 6, k
print("same")
"""


def test_loader_prefetch(c):
    """The loader, torch's BatchSampler (its C loader), IterableDataset
    (its order) and the window reader (a batch's rows, planned ahead) fetch
    the shards of what comes next in parallel while the
    first is read (several shard GETs at once; a plain read has one at a
    time), bounded by `parallel` (2 here: at most 3 GETs with the reader's
    own, of 6 shards), and their batches equal the local dataset's. The reads
    run in a child process: the proxy is this one's."""
    local = os.path.join(TMP, "p6.ds")
    if not os.path.exists(local):
        make_dataset(local, shards=6)
    url = "s3://seqstore-test/p6/c.ds"
    run(["dataset", "push", "--resume", local, url], env=env_for(c))
    base = "/seqstore-test/p6/c.ds/"
    for mode in ("0", "1", "sampler", "iterable", "window"):
        c.faults = {("GET", base + "part-%d.ss" % k, 0): "slow" for k in range(6)}
        e = env_for(c, via_proxy=True, SEQSTORE_PARALLEL=2)
        c.proxy.seen.clear()
        c.proxy.max_inflight = 0
        p = subprocess.run([sys.executable, "-c", PREFETCH_CHILD, url, local, mode],
                           env=dict(os.environ, **e), capture_output=True, timeout=300)
        assert p.returncode == 0 and p.stdout.strip() == b"same", p.stderr.decode()
        if mode == "0":
            assert c.proxy.max_inflight == 1, c.proxy.max_inflight
        else:
            assert 2 <= c.proxy.max_inflight <= 3, (mode, c.proxy.max_inflight)
    c.faults = {}


def test_kill_during_download(c):
    base = "/seqstore-test/f/c.ds/"
    c.faults = {("GET", base + "part-%d.ss" % k, n): "slow" for k in range(3) for n in range(5)}
    e = env_for(c, via_proxy=True)
    p = subprocess.Popen([CLI, "cat", "s3://seqstore-test/f/c.ds"], env=dict(os.environ, **e),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2.0)  # shard 0 done (about 1.3 s), shard 1 half-way
    p.send_signal(signal.SIGKILL)
    p.wait()
    for f in cache_files(e, "ds-*/shards/*.ss"):
        run(["verify", f])  # whole, verified shards only
    c.faults = {}
    assert cat("s3://seqstore-test/f/c.ds", e) == c.local_cat  # the rerun completes
    assert not cache_files(e, "ds-*/shards/.*tmp")


def test_cache_limit_and_eviction(c):
    sizes = [os.path.getsize(os.path.join(c.local, "part-%d.ss" % k)) for k in range(3)]
    e = env_for(c, SEQSTORE_CACHE_BYTES=sizes[0] - 1)
    p = run(["cat", "s3://seqstore-test/f/c.ds"], env=e, check=False)
    err = p.stderr.decode()
    assert p.returncode == 1 and "part-0.ss' is %d bytes, over the cache limit of %d bytes" % (
        sizes[0], sizes[0] - 1) in err, err
    # room for two shards: reading one example of each shard in turn, from
    # separate processes, evicts the least recently used unmapped one
    limit = sizes[0] + sizes[1] + sizes[2] // 2
    e = env_for(c, SEQSTORE_CACHE_BYTES=limit)
    info = run(["info", "--json", c.local]).stdout
    import json
    n = json.loads(info)["examples"]
    for i in [0, n - 1, n // 2]:
        run(["cat", "s3://seqstore-test/f/c.ds", "--range", str(i)], env=e)
        total = sum(os.path.getsize(f) for f in cache_files(e, "ds-*/shards/*.ss"))
        assert total <= limit, (total, limit)
    assert len(cache_files(e, "ds-*/shards/*.ss")) == 2


def mount_small(path, size):
    """A file system of `size` bytes at `path`: tmpfs, else a loop-mounted
    ext2 image. None (with the reason) when neither can be mounted."""
    os.makedirs(path, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%d" % size, "tmpfs", path],
                       capture_output=True)
    if p.returncode == 0:
        return None
    img = path + ".img"
    with open(img, "wb") as f:
        f.truncate(size)
    q = subprocess.run(["mkfs.ext2", "-q", "-F", "-m", "0", img], capture_output=True)
    if q.returncode == 0:
        q = subprocess.run(["mount", "-o", "loop", img, path], capture_output=True)
    if q.returncode == 0:
        return None
    return "tmpfs: %s; loop: %s" % (p.stderr.decode().strip(), q.stderr.decode().strip())


def test_cache_disk_full(c):
    """A cache directory on a file system that fills up during a shard's
    download: a clear error naming the cache directory and the shard, exit 1,
    no partial shard left (no temporary file, nothing unverified); the shards
    that fit are whole and verified."""
    sizes = [os.path.getsize(os.path.join(c.local, "part-%d.ss" % k)) for k in range(3)]
    run(["dataset", "push", c.local, "s3://seqstore-test/full/c.ds"], env=env_for(c))
    for name, room in (("full-a", sizes[0] // 2), ("full-b", sizes[0] + sizes[1] // 2)):
        mnt = os.path.join(TMP, name)
        why = mount_small(mnt, room + (512 << 10))  # and the manifest, sections store
        if why:
            print("  (skipped: cannot mount a small file system: %s)" % why)
            return
        try:
            e = env_for(c)
            e["SEQSTORE_CACHE_DIR"] = os.path.join(mnt, "cache")
            p = run(["cat", "s3://seqstore-test/full/c.ds"], env=e, check=False)
            err = p.stderr.decode()
            k = 0 if name == "full-a" else 1
            assert p.returncode == 1, (p.returncode, err)
            assert "s3://seqstore-test/full/c.ds/part-%d.ss" % k in err, err
            assert e["SEQSTORE_CACHE_DIR"] in err and "No space left on device" in err, err
            left = cache_files(e, "ds-*/shards/*")
            assert not [f for f in left if f.endswith(".tmp")], left
            whole = cache_files(e, "ds-*/shards/*.ss")
            assert len(whole) == k, whole
            for f in whole:
                run(["verify", f])
        finally:
            subprocess.run(["umount", mnt])


def test_multipart_push_pull(c):
    big = os.path.join(TMP, "big.ds")
    make_dataset(big, shards=1, repeat=3)
    size = os.path.getsize(os.path.join(big, "part-0.ss"))
    assert size > 10 << 20, size
    e = env_for(c, SEQSTORE_MULTIPART_BYTES="5M", SEQSTORE_PARALLEL=3)
    run(["dataset", "push", big, "s3://seqstore-test/big.ds"], env=e)
    h = c.s3.head_object(Bucket="seqstore-test", Key="big.ds/part-0.ss")
    nparts = -(-size // (5 << 20))
    assert h["ETag"].strip('"').endswith("-%d" % nparts), h["ETag"]  # a multipart upload
    assert h["ContentLength"] == size
    pulled = os.path.join(TMP, "pulled.ds")
    out = run(["dataset", "pull", "s3://seqstore-test/big.ds", pulled], env=e).stdout
    assert b"pulled 1 shards" in out, out
    for n in ["part-0.ss", "dataset.manifest", "dataset.sections.ss"]:
        assert open(os.path.join(big, n), "rb").read() == \
            open(os.path.join(pulled, n), "rb").read(), n
    out = run(["dataset", "pull", "--resume", "s3://seqstore-test/big.ds", pulled], env=e).stdout
    assert b"pulled 0 shards" in out and b"1 already there" in out, out
    # convert -o URL uploads through the same path: in parts too
    scratch = os.path.join(TMP, "big-scratch")
    run(["convert", "lines"] + FORTUNES * 3 + ["-o", "s3://seqstore-test/bigc.ds/part-0.ss",
                                               "--scratch", scratch, "--quiet"], env=e)
    h = c.s3.head_object(Bucket="seqstore-test", Key="bigc.ds/part-0.ss")
    local = os.path.join(scratch, "part-0.ss")
    assert h["ETag"].strip('"').endswith("-%d" % -(-os.path.getsize(local) // (5 << 20))), h
    body = c.s3.get_object(Bucket="seqstore-test", Key="bigc.ds/part-0.ss")["Body"].read()
    assert body == open(local, "rb").read()


def test_kill_during_push(c):
    """A push killed at any moment leaves no manifest or a complete dataset;
    the rerun (--resume) completes."""
    e = env_for(c)
    run(["dataset", "push", c.local, "s3://seqstore-test/k/c.ds"], env=e)  # an old, complete one
    slow = {("PUT", "/seqstore-test/k/c.ds/part-%d.ss" % k, n): None for k in range(3)
            for n in range(3)}
    c.faults = slow
    # the proxy slows the uploads down by answering slowly: use "slow" on the PUT answers
    c.faults = {k: "slow" for k in slow}
    ep = env_for(c, via_proxy=True, SEQSTORE_PARALLEL=1)
    for delay in (0.05, 0.3, 0.8):
        p = subprocess.Popen([CLI, "dataset", "push", c.local, "s3://seqstore-test/k/c.ds"],
                             env=dict(os.environ, **ep), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        k = keys(c, "k/c.ds/")
        if "k/c.ds/dataset.manifest" in k:  # then it is a complete dataset
            assert cat("s3://seqstore-test/k/c.ds", env_for(c)) == c.local_cat
    c.faults = {}
    run(["dataset", "push", "--resume", c.local, "s3://seqstore-test/k/c.ds"], env=e)
    assert cat("s3://seqstore-test/k/c.ds", env_for(c)) == c.local_cat


def convert_shard(k, n, out, env, *extra):
    return run(["convert", "lines"] + FORTUNES + ["--shard", "%d/%d" % (k, n), "-o", out,
                                                  "--quiet"] + list(extra), env=env)


def test_convert_to_url(c):
    """convert --shard K/N -o s3://.../part-K.ss writes the shard in the
    scratch directory, verifies it and uploads it (boto3 reads back the same
    bytes); no manifest until `dataset build URL`, which uploads the sections
    store and the manifest last; the values equal the local conversion's.
    --resume uploads only what is missing."""
    e = env_for(c)
    scratch = os.path.join(TMP, "cv-scratch")
    url = "s3://seqstore-test/cv/c.ds"
    p = run(["convert", "lines"] + FORTUNES + ["-o", url + "/part-0.ss"], env=e, check=False)
    assert p.returncode == 2 and b"--scratch DIR" in p.stderr, p.stderr
    p = run(["convert", "lines"] + FORTUNES + ["-o", "https://h/x.ds/p.ss", "--scratch", scratch],
            env=e, check=False)
    assert p.returncode == 2 and b"only s3:// URLs can be written" in p.stderr, p.stderr
    for k in range(3):
        convert_shard(k, 3, "%s/part-%d.ss" % (url, k), e, "--scratch", scratch)
        assert "cv/c.ds/dataset.manifest" not in keys(c, "cv/c.ds/")
    k = keys(c, "cv/c.ds/")
    assert sorted(k) == ["cv/c.ds/part-%d.ss" % i for i in range(3)], sorted(k)
    for i in range(3):
        body = c.s3.get_object(Bucket="seqstore-test", Key="cv/c.ds/part-%d.ss" % i)["Body"].read()
        assert body == open(os.path.join(scratch, "part-%d.ss" % i), "rb").read(), i
    out = run(["dataset", "build", url, "--scratch", scratch], env=e).stdout
    assert b"pushed 0 shards" in out and b"3 already there" in out, out
    names = sorted(keys(c, "cv/c.ds/"))
    assert names == ["cv/c.ds/dataset.manifest", "cv/c.ds/dataset.sections.ss"] + \
        ["cv/c.ds/part-%d.ss" % i for i in range(3)], names
    assert cat(url, e) == c.local_cat
    same_values_s3(c, url)
    # --resume: nothing is converted or uploaded again; a deleted object is
    # uploaded again, and only it; a converted shard deletes the manifest first
    ep = env_for(c, via_proxy=True)
    c.proxy.seen.clear()
    out = convert_shard(1, 3, url + "/part-1.ss", dict(ep, SEQSTORE_SCRATCH_DIR=scratch),
                        "--resume").stdout
    assert not [m for m, p in c.proxy.seen if m in ("PUT", "POST", "DELETE")], c.proxy.seen
    c.s3.delete_object(Bucket="seqstore-test", Key="cv/c.ds/part-2.ss")
    c.proxy.seen.clear()
    convert_shard(2, 3, url + "/part-2.ss", ep, "--resume", "--scratch", scratch)
    writes = [(m, p) for m, p in c.proxy.seen if m in ("PUT", "POST", "DELETE")]
    assert writes == [("DELETE", "/seqstore-test/cv/c.ds/dataset.manifest"),
                      ("PUT", "/seqstore-test/cv/c.ds/part-2.ss")], writes
    assert "cv/c.ds/dataset.manifest" not in keys(c, "cv/c.ds/")
    c.proxy.seen.clear()
    run(["dataset", "build", url, "--scratch", scratch], env=ep)
    writes = [(m, p) for m, p in c.proxy.seen if m in ("PUT", "POST", "DELETE")]
    assert writes[-1] == ("PUT", "/seqstore-test/cv/c.ds/dataset.manifest"), writes
    assert not [p for m, p in writes if p.endswith("part-0.ss")], writes
    assert cat(url, env_for(c)) == c.local_cat
    # shards converted on other nodes (not in this scratch directory): named,
    # they are downloaded, checked against the digest their upload recorded
    names = ["part-%d.ss" % i for i in range(3)]
    saved = {n: open(os.path.join(scratch, n), "rb").read() for n in names}
    for n in names[1:]:
        os.unlink(os.path.join(scratch, n))
    out = run(["dataset", "build", url, "--scratch", scratch] + names, env=e).stdout
    assert b"fetched 2 shards" in out, out
    for n in names:
        assert open(os.path.join(scratch, n), "rb").read() == saved[n], n
    assert cat(url, env_for(c)) == c.local_cat
    os.unlink(os.path.join(scratch, "part-2.ss"))
    c.s3.put_object(Bucket="seqstore-test", Key="cv/c.ds/part-2.ss", Body=saved["part-1.ss"],
                    Metadata={"seqstore-digest": "0123456789abcdef"})
    p = run(["dataset", "build", url, "--scratch", scratch] + names, env=e, check=False)
    err = p.stderr.decode()
    assert p.returncode == 1 and "part-2.ss" in err and "uploaded as 0123456789abcdef" in err, err
    assert not glob.glob(os.path.join(scratch, "*.tmp")) and \
        not os.path.exists(os.path.join(scratch, "part-2.ss"))


def test_kill_during_convert_upload(c):
    """convert -o URL killed while it uploads its shard: the bucket holds no
    manifest (deleted before the upload) and no partial shard object; the
    rerun with --resume converts nothing again and uploads the shard."""
    url = "s3://seqstore-test/ku/c.ds"
    scratch = os.path.join(TMP, "ku-scratch")
    e = env_for(c)
    for k in range(3):
        convert_shard(k, 3, "%s/part-%d.ss" % (url, k), e, "--scratch", scratch)
    run(["dataset", "build", url, "--scratch", scratch], env=e)  # a complete dataset
    c.s3.delete_object(Bucket="seqstore-test", Key="ku/c.ds/part-1.ss")  # its first upload
    os.unlink(os.path.join(scratch, "part-1.ss"))
    # the upload is held by the proxy (never reaches the server) when the kill comes
    c.faults = {("PUT", "/seqstore-test/ku/c.ds/part-1.ss", n): "hold" for n in range(3)}
    ep = env_for(c, via_proxy=True)
    cmd = [CLI, "convert", "lines"] + FORTUNES + ["--shard", "1/3", "-o", url + "/part-1.ss",
                                                   "--scratch", scratch, "--quiet"]
    p = subprocess.Popen(cmd, env=dict(os.environ, **ep), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    end = time.time() + 60
    while time.time() < end and c.proxy.count("PUT", "/ku/c.ds/part-1.ss") == 0:
        time.sleep(0.02)
    time.sleep(0.2)  # the proxy is forwarding the upload
    p.send_signal(signal.SIGKILL)
    p.wait()
    c.faults = {}
    k = keys(c, "ku/c.ds/")
    assert "ku/c.ds/dataset.manifest" not in k, sorted(k)
    local = os.path.join(scratch, "part-1.ss")
    assert "ku/c.ds/part-1.ss" not in k, sorted(k)  # no partial object
    mtime = os.stat(local).st_mtime_ns  # converted before the kill
    c.proxy.seen.clear()
    run(cmd[1:] + ["--resume"], env=ep)
    puts = [pth for m, pth in c.proxy.seen if m == "PUT"]
    assert puts == ["/seqstore-test/ku/c.ds/part-1.ss"], c.proxy.seen
    assert os.stat(local).st_mtime_ns == mtime  # not converted again
    run(["dataset", "build", url, "--scratch", scratch], env=e)
    assert cat(url, env_for(c)) == c.local_cat


def mpirun(args, env, n=3):
    mpi = os.path.join(os.path.dirname(CLI), "seqstore-mpi")
    e = dict(env, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
             SEQSTORE=CLI)
    fwd = []
    for k in sorted(e):
        if k.startswith(("AWS_", "SEQSTORE", "SS_MPI_TEST")):
            fwd += ["-x", k]
    cmd = ["mpirun", "--oversubscribe", "-n", str(n)] + fwd + [mpi] + args
    return subprocess.run(cmd, env=dict(os.environ, **e), capture_output=True, timeout=300)


def test_mpi_convert_to_url(c):
    """seqstore-mpi convert ... -o s3://...: each rank's shard converted in the
    scratch directory, verified and uploaded; rank 0 writes the manifest last,
    only when every rank succeeded; a killed rank leaves no manifest, and
    --resume uploads only the missing shard."""
    if not shutil.which("mpirun") or not os.path.exists(
            os.path.join(os.path.dirname(CLI), "seqstore-mpi")):
        print("  (skipped: no mpirun or seqstore-mpi)")
        return
    url = "s3://seqstore-test/mpi/c.ds"
    scratch = os.path.join(TMP, "mpi-scratch")
    args = ["convert", "lines"] + FORTUNES + ["-o", url, "--scratch", scratch]
    # rank 1 killed mid-way: the job fails, no manifest in the bucket
    e = env_for(c, via_proxy=True)
    p = mpirun(args, dict(e, SS_MPI_TEST_KILL="1:5"))
    assert p.returncode != 0, p.stdout + p.stderr
    k = keys(c, "mpi/c.ds/")
    assert "mpi/c.ds/dataset.manifest" not in k, sorted(k)
    assert "mpi/c.ds/part-00001-of-00003.ss" not in k, sorted(k)
    c.proxy.seen.clear()
    p = mpirun(args + ["--resume"], e)
    assert p.returncode == 0, (p.stdout + p.stderr).decode()[-3000:]
    puts = [pth for m, pth in c.proxy.seen if m == "PUT"]
    base = "/seqstore-test/mpi/c.ds/"
    assert base + "part-00001-of-00003.ss" in puts, puts
    assert base + "part-00000-of-00003.ss" not in puts, puts  # already uploaded
    assert puts[-1] == base + "dataset.manifest", puts  # the manifest last
    names = sorted(keys(c, "mpi/c.ds/"))
    assert names == ["mpi/c.ds/dataset.manifest", "mpi/c.ds/dataset.sections.ss"] + \
        ["mpi/c.ds/part-%05d-of-00003.ss" % i for i in range(3)], names
    for i in range(3):
        n = "part-%05d-of-00003.ss" % i
        body = c.s3.get_object(Bucket="seqstore-test", Key="mpi/c.ds/" + n)["Body"].read()
        assert body == open(os.path.join(scratch, n), "rb").read(), n
    assert cat(url, env_for(c)) == c.local_cat
    same_values_s3(c, url)
    # as on three nodes: each rank's scratch directory its own (MPMD contexts
    # with their own SEQSTORE_SCRATCH_DIR); rank 0 fetches the other two shards
    url = "s3://seqstore-test/mpi-nodes/c.ds"
    mpi = os.path.join(os.path.dirname(CLI), "seqstore-mpi")
    e = dict(env_for(c), OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
             SEQSTORE=CLI)
    cmd = ["mpirun", "--oversubscribe"]
    for k in sorted(e):
        if k.startswith(("AWS_", "SEQSTORE")):
            cmd += ["-x", k]
    base = list(cmd)
    for r in range(3):
        cmd += (["-n", "1", "-x", "SEQSTORE_SCRATCH_DIR=%s/node-%d" % (TMP, r), mpi, "convert",
                 "lines"] + FORTUNES + ["-o", url] + ([":"] if r < 2 else []))
    p = subprocess.run(cmd, env=dict(os.environ, **e), capture_output=True, timeout=300)
    assert p.returncode == 0, (p.stdout + p.stderr).decode()[-3000:]
    assert b"fetched 2 shards" in p.stdout, p.stdout
    assert sorted(os.listdir(os.path.join(TMP, "node-1"))) == ["part-00001-of-00003.ss"]
    assert cat(url, env_for(c)) == c.local_cat
    # a word vocabulary counted by all ranks: the reduced counts reach every
    # node's scratch directory; the vocabulary and tokens are one process's
    single = os.path.join(TMP, "words-single.ss")
    run(["convert", "text"] + FORTUNES + ["--tokens", "words", "-o", single, "--quiet"])
    url = "s3://seqstore-test/mpi-words/c.ds"
    cmd = list(base)
    for r in range(3):
        cmd += (["-n", "1", "-x", "SEQSTORE_SCRATCH_DIR=%s/wnode-%d" % (TMP, r), mpi, "convert",
                 "text"] + FORTUNES + ["--tokens", "words", "-o", url] + ([":"] if r < 2 else []))
    p = subprocess.run(cmd, env=dict(os.environ, **e), capture_output=True, timeout=300)
    assert p.returncode == 0, (p.stdout + p.stderr).decode()[-3000:]
    assert cat(url, env_for(c)) == run(["cat", single]).stdout


def test_secrets_never_printed(c):
    e = env_for(c)
    e["AWS_SESSION_TOKEN"] = "TOKEN-SECRET-123"
    for args in (["info", "--json", "s3://seqstore-test/a/corpus.ds"],
                 ["cat", "s3://seqstore-test/none.ds"],
                 ["dataset", "push", c.local, "s3://no-such-bucket/x.ds"]):
        p = run(args, env=e, check=False)
        text = (p.stdout + p.stderr).decode()
        assert c.moto.secret not in text and "TOKEN-SECRET-123" not in text, text


def main():
    py = os.path.join(VENV, "bin", "python")
    if os.path.exists(py) and os.path.realpath(sys.prefix) != os.path.realpath(VENV):
        os.execv(py, [py] + sys.argv)  # boto3, moto and seqstore are the venv's
    if not os.path.exists(os.path.join(VENV, "bin", "moto_server")):
        msg = "remote_test: skipped: no .venv with moto (run python/make-venv.sh)"
        print(msg)
        return 1 if os.environ.get("SEQSTORE_REQUIRE_VENV") == "1" else 77
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    c = Ctx()
    setup(c)
    tests = [v for k, v in list(globals().items()) if k.startswith("test_")]
    only = os.environ.get("REMOTE_TEST_ONLY")
    passed = failed = 0
    try:
        for t in tests:
            if only and only not in t.__name__:
                continue
            t0 = time.time()
            try:
                t(c)
                passed += 1
                print("ok   %s (%.1f s)" % (t.__name__, time.time() - t0))
            except Exception:
                failed += 1
                print("FAIL %s" % t.__name__)
                traceback.print_exc()
            sys.stdout.flush()
    finally:
        c.proxy.stop()
        c.static.stop()
        c.moto.stop()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
