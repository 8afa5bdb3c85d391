/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_read.c - read speed of a store against baselines run in the same
 * process on the same data:
 *   random access: ss_get (touching each example's first and last token;
 *     inline, and called out of line as with SS_NO_INLINE_GET)
 *     vs (a) one LMDB key per example read with mdb_get,
 *        (b) the same loop over an in-memory array of pointers (the floor),
 *        (c) Megatron/fairseq-style .bin + index read per example with numpy
 *            memmap + np.frombuffer (bench/npy_indexed_baseline.py);
 *   open time of stores of N and BIG examples (warm and after evicting the
 *     file from the page cache);
 *   sequential scan of all data (ss_get + memcpy per example, and
 *     ss_read_examples 4096 examples at a time) vs one memcpy
 *     of the same bytes from memory.
 *   verified (SS_OPEN_VERIFY) vs unverified reads: sequential and random
 *     epochs, first and second (-V 0 skips it).
 * Every figure is the median (and range) of ROUNDS rounds (default 5) in
 * which seqstore and its baselines take turns in the same run; the numpy
 * baseline runs in its own process once per round. The load average is
 * recorded at the start and the end.
 * Usage: bench_read [-n N] [-N BIG] [-l MAXLEN] [-q QUERIES] [-p PYQUERIES]
 *                   [-d DIR] [-P python|none] [-V 0|1] [-r ROUNDS] [--markdown]
 * Defaults: N = 1000000, BIG = 10000000 (0 skips), lengths uniform in
 * 1..512 u16 tokens, 2000000 queries (100000 of them for numpy), DIR =
 * $TMPDIR or /tmp. --markdown prints README's table on stdout (the rest goes
 * to stderr); SS_BENCH_QUICK=1 makes every size tiny. Every file it writes
 * is deleted at the end. */
#include "seqstore.h"

#include "bench_common.h"

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { MAX_ROUNDS = 64 };

static double now(void) {
    return bench_now();
}

/* Progress and the plain report: stdout, or stderr with --markdown (whose
 * table alone goes to stdout). */
static FILE *g_out;
#define say(...) fprintf(g_out, __VA_ARGS__)

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void die(const char *what, int rc) {
    fprintf(stderr, "bench_read: %s: %s (%s)\n", what, ss_strerror(rc), ss_error_message());
    exit(1);
}

static void die_lmdb(const char *what, int rc) {
    fprintf(stderr, "bench_read: %s: %s\n", what, mdb_strerror(rc));
    exit(1);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint64_t file_bytes(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void remove_store(const char *path) {
    char lock[4200];
    snprintf(lock, sizeof lock, "%s-lock", path);
    unlink(path);
    unlink(lock);
}

/* ------------------------------------------------------------- the data */

typedef struct corpus {
    uint64_t n, tokens;
    uint16_t *data;     /* all tokens, example after example */
    uint64_t *offset;   /* n + 1 token offsets */
    const uint16_t **p; /* the in-memory baseline: a pointer per example */
    uint32_t *len;
} corpus;

static void corpus_make(corpus *c, uint64_t n, uint64_t maxlen, uint64_t seed) {
    c->n = n;
    c->offset = malloc((n + 1) * sizeof *c->offset);
    c->len = malloc(n * sizeof *c->len);
    c->p = malloc(n * sizeof *c->p);
    if (!c->offset || !c->len || !c->p) die("corpus", SS_ENOMEM);
    uint64_t s = seed;
    c->offset[0] = 0;
    for (uint64_t i = 0; i < n; i++) {
        c->len[i] = (uint32_t)(1 + splitmix(&s) % maxlen);
        c->offset[i + 1] = c->offset[i] + c->len[i];
    }
    c->tokens = c->offset[n];
    c->data = malloc(c->tokens * sizeof *c->data);
    if (!c->data) die("corpus", SS_ENOMEM);
    for (uint64_t t = 0; t < c->tokens; t++) c->data[t] = (uint16_t)(splitmix(&s) & 0xFFFF);
    for (uint64_t i = 0; i < n; i++) c->p[i] = c->data + c->offset[i];
}

static const ss_field token_field = {"tokens", SS_U16, 1, 0, {0}};
static const ss_schema token_schema = {1, &token_field};

static double write_store(const corpus *c, const char *path) {
    remove_store(path);
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_NOSYNC;
    ss_writer *w;
    double t0 = now();
    int rc = ss_writer_create(&w, path, &token_schema, &o);
    if (rc) die("create", rc);
    for (uint64_t i = 0; i < c->n; i++) {
        ss_value v = {c->p[i], c->len[i]};
        if ((rc = ss_writer_append(w, &v))) die("append", rc);
    }
    if ((rc = ss_writer_finish(w))) die("finish", rc);
    ss_writer_free(w);
    return now() - t0;
}

/* The same examples, one LMDB key (big-endian index) per example. */
static double write_lmdb(const corpus *c, const char *path) {
    remove_store(path);
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    double t0 = now();
    int rc = mdb_env_create(&env);
    if (!rc) rc = mdb_env_set_mapsize(env, c->tokens * 4 + c->n * 64 + (1ull << 30));
    if (!rc) rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_NOSYNC, 0644);
    if (rc) die_lmdb("lmdb open", rc);
    for (uint64_t i = 0; i < c->n; i++) {
        if (i % 100000 == 0) {
            if (i && (rc = mdb_txn_commit(txn))) die_lmdb("lmdb commit", rc);
            if ((rc = mdb_txn_begin(env, NULL, 0, &txn))) die_lmdb("lmdb begin", rc);
            if ((rc = mdb_dbi_open(txn, NULL, 0, &dbi))) die_lmdb("lmdb dbi", rc);
        }
        unsigned char kb[8];
        for (int k = 0; k < 8; k++) kb[k] = (unsigned char)(i >> (56 - 8 * k));
        MDB_val key = {8, kb}, val = {c->len[i] * sizeof(uint16_t), (void *)c->p[i]};
        if ((rc = mdb_put(txn, dbi, &key, &val, MDB_APPEND))) die_lmdb("lmdb put", rc);
    }
    if ((rc = mdb_txn_commit(txn))) die_lmdb("lmdb commit", rc);
    mdb_env_sync(env, 1);
    mdb_env_close(env);
    return now() - t0;
}

/* Megatron-style files: PREFIX.bin (the tokens) and PREFIX.idx (int32 sizes
 * then int64 byte pointers), plus PREFIX.q (the query indices, u64). */
static void write_indexed(const corpus *c, const char *prefix, const uint64_t *q, uint64_t nq) {
    char path[4200];
    snprintf(path, sizeof path, "%s.bin", prefix);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(c->data, sizeof(uint16_t), c->tokens, f) != c->tokens || fclose(f))
        die("write .bin", SS_EIO);
    snprintf(path, sizeof path, "%s.idx", prefix);
    f = fopen(path, "wb");
    if (!f) die("write .idx", SS_EIO);
    for (uint64_t i = 0; i < c->n; i++) {
        int32_t size = (int32_t)c->len[i];
        fwrite(&size, sizeof size, 1, f);
    }
    for (uint64_t i = 0; i < c->n; i++) {
        int64_t ptr = (int64_t)(c->offset[i] * sizeof(uint16_t));
        fwrite(&ptr, sizeof ptr, 1, f);
    }
    if (fclose(f)) die("write .idx", SS_EIO);
    snprintf(path, sizeof path, "%s.q", prefix);
    f = fopen(path, "wb");
    if (!f || fwrite(q, sizeof *q, nq, f) != nq || fclose(f)) die("write .q", SS_EIO);
}

/* ------------------------------------------------------- random access */

static uint64_t loop_floor(const corpus *c, const uint64_t *q, uint64_t nq) {
    uint64_t sum = 0;
    for (uint64_t j = 0; j < nq; j++) {
        uint64_t i = q[j];
        const uint16_t *p = c->p[i];
        sum += p[0] + p[c->len[i] - 1];
    }
    return sum;
}

static uint64_t loop_ss_get(const ss_store *s, const uint64_t *q, uint64_t nq) {
    uint64_t sum = 0;
    for (uint64_t j = 0; j < nq; j++) {
        ss_view v;
        int rc = ss_get(&v, s, 0, q[j]);
        if (rc) die("ss_get", rc);
        const uint16_t *p = v.data;
        sum += p[0] + p[v.length - 1];
    }
    return sum;
}

/* The same through the exported function, as a program built with
 * SS_NO_INLINE_GET calls it: what seqstore.h's inline fast path saves. */
static uint64_t loop_ss_get_call(const ss_store *s, const uint64_t *q, uint64_t nq) {
    uint64_t sum = 0;
    for (uint64_t j = 0; j < nq; j++) {
        ss_view v;
        int rc = (ss_get)(&v, s, 0, q[j]);
        if (rc) die("ss_get", rc);
        const uint16_t *p = v.data;
        sum += p[0] + p[v.length - 1];
    }
    return sum;
}

static uint64_t loop_mdb_get(MDB_txn *txn, MDB_dbi dbi, const uint64_t *q, uint64_t nq) {
    uint64_t sum = 0;
    for (uint64_t j = 0; j < nq; j++) {
        unsigned char kb[8];
        uint64_t i = q[j];
        for (int k = 0; k < 8; k++) kb[k] = (unsigned char)(i >> (56 - 8 * k));
        MDB_val key = {8, kb}, val;
        int rc = mdb_get(txn, dbi, &key, &val);
        if (rc) die_lmdb("mdb_get", rc);
        const uint16_t *p = val.mv_data;
        sum += p[0] + p[val.mv_size / 2 - 1];
    }
    return sum;
}

/* ---------------------------------------------------------- open time */

static void evict(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

/* Median ss_open + ss_close time in ms, warm or after evicting the file. */
static double open_ms(const char *path, int cold, int reps) {
    double t[64];
    if (reps > 64) reps = 64;
    for (int r = 0; r < reps; r++) {
        if (cold) evict(path);
        ss_store *s;
        double t0 = now();
        int rc = ss_open(&s, path, 0);
        if (rc) die("open", rc);
        t[r] = (now() - t0) * 1e3;
        ss_close(s);
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}

static double write_big_store(const char *path, uint64_t n, uint64_t maxlen) {
    remove_store(path);
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_NOSYNC;
    ss_writer *w;
    int rc = ss_writer_create(&w, path, &token_schema, &o);
    if (rc) die("create", rc);
    uint16_t *buf = malloc(maxlen * sizeof *buf);
    uint64_t s = 99;
    double t0 = now();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = 1 + splitmix(&s) % maxlen;
        for (uint64_t k = 0; k < len; k++) buf[k] = (uint16_t)(i + k);
        ss_value v = {buf, len};
        if ((rc = ss_writer_append(w, &v))) die("append", rc);
    }
    if ((rc = ss_writer_finish(w))) die("finish", rc);
    ss_writer_free(w);
    free(buf);
    return now() - t0;
}

/* ---------------------------------------------------------------- python */

static const char *default_python(void) {
    const char *env = getenv("SS_PYTHON");
    if (env && *env) return env;
    /* Debian's interpreter, which has python3-numpy, before any other on PATH */
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

/* Run the numpy baseline; returns ns/op or -1. Its checksum must equal ours. */
static double run_python(const char *python, const char *prefix, uint64_t n, uint64_t nq,
                         uint64_t want_sum, int quiet_python) {
    char script[4200], cmd[9000];
    snprintf(script, sizeof script, "%s/npy_indexed_baseline.py", SS_BENCH_DIR);
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' %llu %llu", python, script, prefix,
             (unsigned long long)n, (unsigned long long)nq);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[512];
    double ns = -1;
    unsigned long long sum = 0;
    int got = 0;
    while (fgets(line, sizeof line, p)) {
        if (!quiet_python) {
            fputs("    python: ", g_out);
            fputs(line, g_out);
        }
        if (sscanf(line, "ns_per_op %lf checksum %llu", &ns, &sum) == 2) got = 1;
    }
    int status = pclose(p);
    if (status != 0 || !got) return -1;
    if (sum != want_sum) {
        fprintf(stderr, "bench_read: the numpy baseline read other data (checksum %llu != %llu)\n",
                sum, (unsigned long long)want_sum);
        exit(1);
    }
    return ns;
}

static const char *verdict(int ok) {
    return ok ? "met" : "NOT met";
}

/* --------------------------------------------- verification on first touch */

/* One epoch: ss_get + memcpy of every example, in `order` (NULL: 0..n-1).
 * Returns seconds; adds the first token of each example to *sum. */
static double epoch_copy(const ss_store *s, const uint64_t *order, uint64_t n, unsigned char *dst,
                         size_t ring, uint64_t *sum) {
    double t0 = now();
    size_t at = 0;
    for (uint64_t j = 0; j < n; j++) {
        ss_view v;
        int rc = ss_get(&v, s, 0, order ? order[j] : j);
        if (rc) die("ss_get", rc);
        size_t b = (size_t)(v.length * v.row_bytes);
        if (at + b > ring) at = 0;
        memcpy(dst + at, v.data, b);
        *sum += dst[at];
        at += b;
    }
    return now() - t0;
}

enum { V_OPEN, V_SEQ1, V_SEQ2, V_RND1, V_RND2, V_N };
#define V_ROUNDS 7

/* A fresh handle (a fresh map: page faults again) per access pattern: open,
 * then two epochs, the first of which hashes every chunk when verifying. */
static void verify_round(const char *path, unsigned flags, const uint64_t *perm, uint64_t n,
                         unsigned char *dst, size_t ring, double *t, uint64_t *sum) {
    for (int pattern = 0; pattern < 2; pattern++) {
        ss_store *s;
        double t0 = now();
        int rc = ss_open(&s, path, flags);
        if (rc) die("open", rc);
        if (pattern == 0) t[V_OPEN] = now() - t0;
        const uint64_t *order = pattern ? perm : NULL;
        t[pattern ? V_RND1 : V_SEQ1] = epoch_copy(s, order, n, dst, ring, sum);
        t[pattern ? V_RND2 : V_SEQ2] = epoch_copy(s, order, n, dst, ring, sum);
        ss_close(s);
    }
}

static double median(double *x, int k) {
    qsort(x, (size_t)k, sizeof *x, cmp_double);
    return x[k / 2];
}

static void print_loadavg(const char *when) {
    char buf[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f)) strcpy(buf, "?\n");
        fclose(f);
    }
    say("  load average %s: %s", when, buf);
}

/* Verified (SS_OPEN_VERIFY) against unverified reads: a sequential and a
 * random epoch, each first and second, medians of V_ROUNDS rounds in which
 * the two take turns going first. Target: within 5% after the first epoch. */
/* bench_verify()'s medians, unverified [0] and verified [1], for README's
 * table (--markdown); verify_ran is 0 with -V 0. */
static double verify_ms[2][V_N];
static int verify_ran;

static void bench_verify(const char *path, uint64_t n, unsigned char *dst, size_t ring) {
    uint64_t *perm = malloc(n * sizeof *perm), seed = 4242;
    if (!perm) die("permutation", SS_ENOMEM);
    for (uint64_t i = 0; i < n; i++) perm[i] = i;
    for (uint64_t i = n - 1; i > 0; i--) {
        uint64_t j = splitmix(&seed) % (i + 1), x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    double t[2][V_N][V_ROUNDS];
    uint64_t sum[2] = {0, 0};
    say("\nverification on first touch (SS_OPEN_VERIFY) vs unverified, ss_get + memcpy per "
        "example,\nmedian of %d rounds taking turns:\n",
        V_ROUNDS);
    print_loadavg("before");
    for (int r = 0; r < V_ROUNDS; r++)
        for (int k = 0; k < 2; k++) {
            int verify = (r + k) % 2;
            double one[V_N];
            verify_round(path, verify ? SS_OPEN_VERIFY : 0, perm, n, dst, ring, one, &sum[verify]);
            for (int m = 0; m < V_N; m++) t[verify][m][r] = one[m];
        }
    if (sum[0] != sum[1]) {
        fprintf(stderr, "bench_read: verified and unverified reads differ\n");
        exit(1);
    }
    static const char *name[V_N] = {"open (index checked when verifying)", "sequential epoch 1",
                                    "sequential epoch 2", "random epoch 1", "random epoch 2"};
    double ratio2 = 0;
    for (int m = 0; m < V_N; m++) {
        double u = median(t[0][m], V_ROUNDS), v = median(t[1][m], V_ROUNDS);
        verify_ms[0][m] = u * 1e3;
        verify_ms[1][m] = v * 1e3;
        verify_ran = 1;
        say("  %-36s %9.2f ms unverified %9.2f ms verified  %+6.1f%%\n", name[m], u * 1e3, v * 1e3,
            (v / u - 1) * 100);
        if ((m == V_SEQ2 || m == V_RND2) && v / u > ratio2) ratio2 = v / u;
    }
    say("  target: second epochs within 5%% of unverified: %s\n", verdict(ratio2 <= 1.05));
    print_loadavg("after");
    free(perm);
}

/* ------------------------------------------------------------------ main */

typedef struct args {
    uint64_t n, big, maxlen, nq, pq;
    const char *dir, *python;
    int verify, rounds, markdown;
} args;

static void usage(void) {
    fprintf(stderr, "usage: bench_read [-n N] [-N BIG] [-l MAXLEN] [-q QUERIES] [-p PYQUERIES] "
                    "[-d DIR] [-P python|none] [-V 0|1] [-r ROUNDS] [--markdown]\n");
    exit(2);
}

static void parse(args *a, int argc, char **argv) {
    int quick = bench_quick();
    *a = (args){quick ? 20000 : 1000000,
                quick ? 0 : 10000000,
                512,
                quick ? 20000 : 2000000,
                quick ? 5000 : 100000,
                NULL,
                default_python(),
                !quick,
                0,
                0};
    a->dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--markdown")) {
            a->markdown = 1;
            continue;
        }
        if (!v) usage();
        i++;
        if (!strcmp(o, "-n"))
            a->n = strtoull(v, NULL, 10);
        else if (!strcmp(o, "-N"))
            a->big = strtoull(v, NULL, 10);
        else if (!strcmp(o, "-l"))
            a->maxlen = strtoull(v, NULL, 10);
        else if (!strcmp(o, "-q"))
            a->nq = strtoull(v, NULL, 10);
        else if (!strcmp(o, "-p"))
            a->pq = strtoull(v, NULL, 10);
        else if (!strcmp(o, "-d"))
            a->dir = v;
        else if (!strcmp(o, "-P"))
            a->python = v;
        else if (!strcmp(o, "-V"))
            a->verify = strcmp(v, "0") != 0;
        else if (!strcmp(o, "-r"))
            a->rounds = atoi(v);
        else
            usage();
    }
    a->rounds = bench_rounds(a->rounds, 5);
    if (a->n == 0 || a->maxlen == 0 || a->nq == 0 || a->pq == 0 || a->rounds > MAX_ROUNDS) usage();
    if (a->pq > a->nq) a->pq = a->nq;
}

enum { SCAN_BLOCK = 4096 }; /* examples per ss_read_examples call */

/* Sequential scan with ss_read_examples: SCAN_BLOCK examples' rows and
 * lengths per call, into the ring buffer. Returns seconds. */
static double scan_examples(const ss_store *s, uint64_t n, unsigned char *dst, size_t ring) {
    static uint64_t len[SCAN_BLOCK];
    double t0 = now();
    size_t at = 0;
    for (uint64_t i = 0; i < n;) {
        uint64_t k = n - i < SCAN_BLOCK ? n - i : SCAN_BLOCK, got;
        int rc = ss_read_examples(&got, dst + at, len, s, 0, i, k, ring - at);
        if (rc) die("ss_read_examples", rc);
        if (got == 0) { /* the ring's end: start again at its beginning */
            at = 0;
            continue;
        }
        for (uint64_t j = 0; j < got; j++) at += (size_t)len[j] * 2;
        i += got;
    }
    return now() - t0;
}

/* Sequential scan, one round: ss_get + memcpy of every example into a ring
 * buffer, then the two ways of copying the same bytes from memory (8 MB
 * blocks, and per example from the pointer array), then scan_examples(). Seconds
 * in t[0..3]. */
static void scan_round(const ss_store *s, const corpus *c, unsigned char *dst, size_t ring,
                       double t[4]) {
    double t0 = now();
    size_t at = 0;
    for (uint64_t i = 0; i < c->n; i++) {
        ss_view v;
        int rc = ss_get(&v, s, 0, i);
        if (rc) die("ss_get", rc);
        size_t b = (size_t)(v.length * v.row_bytes);
        if (at + b > ring) at = 0;
        memcpy(dst + at, v.data, b);
        at += b;
    }
    t[0] = now() - t0;
    t0 = now();
    const unsigned char *src = (const unsigned char *)c->data;
    uint64_t total = c->tokens * 2;
    for (uint64_t off = 0; off < total; off += ring) {
        size_t b = total - off < ring ? (size_t)(total - off) : ring;
        memcpy(dst, src + off, b);
    }
    t[1] = now() - t0;
    t0 = now();
    at = 0;
    for (uint64_t i = 0; i < c->n; i++) {
        size_t b = (size_t)c->len[i] * 2;
        if (at + b > ring) at = 0;
        memcpy(dst + at, c->p[i], b);
        at += b;
    }
    t[2] = now() - t0;
    t[3] = scan_examples(s, c->n, dst, ring);
    __asm__ __volatile__("" : : "r"(dst) : "memory");
}

enum { R_FLOOR, R_FLOOR4K, R_GET, R_GET_CALL, R_MDB, R_PY, R_N };

/* Per round: ns/op of each random-access loop (R_PY -1 without Python). */
typedef struct figures {
    double ns[R_N][MAX_ROUNDS];
    double scan_gbs[MAX_ROUNDS], copy_gbs[MAX_ROUNDS], each_gbs[MAX_ROUNDS], scan_ratio[MAX_ROUNDS];
    double flat_gbs[MAX_ROUNDS], flat_ratio[MAX_ROUNDS];
    double open_warm, open_cold, big_warm, big_cold, gb, file_gb, big_gb;
    double load0, load1;
} figures;

/* The pointer-array floor over a copy of the data in 4 KiB pages (no
 * transparent huge pages), as a file mapping has. */
static void *floor4k_make(corpus *small, const corpus *c, size_t *bytes) {
    *small = *c;
    *bytes = (size_t)c->tokens * 2;
    void *m4k = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m4k == MAP_FAILED) die("mmap", SS_ENOMEM);
    madvise(m4k, *bytes, MADV_NOHUGEPAGE);
    memcpy(m4k, c->data, *bytes);
    small->p = malloc(c->n * sizeof *small->p);
    if (!small->p) die("pointers", SS_ENOMEM);
    for (uint64_t i = 0; i < c->n; i++) small->p[i] = (const uint16_t *)m4k + c->offset[i];
    return m4k;
}

/* Random access: a warm-up round, then a.rounds rounds in which the loops
 * take turns (floor, ss_get, mdb_get, 4 KiB floor, out-of-line ss_get, then numpy in its own
 * process), so that load from other processes hits them alike. */
static void random_rounds(const args *a, const corpus *c, const ss_store *s, const char *lmdb,
                          const char *prefix, const uint64_t *q, figures *fg) {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    int rc;
    if ((rc = mdb_env_create(&env)) ||
        (rc = mdb_env_set_mapsize(env, file_bytes(lmdb) + (1 << 20))) ||
        (rc = mdb_env_open(env, lmdb, MDB_NOSUBDIR | MDB_RDONLY, 0644)) ||
        (rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) ||
        (rc = mdb_dbi_open(txn, NULL, 0, &dbi)))
        die_lmdb("lmdb open for reading", rc);
    corpus small;
    size_t bytes4k;
    void *m4k = floor4k_make(&small, c, &bytes4k);
    int use_python = strcmp(a->python, "none") != 0;
    uint64_t sum_py = 0;
    for (uint64_t j = 0; j < a->pq; j++) sum_py += c->p[q[j]][0] + c->p[q[j]][c->len[q[j]] - 1];
    double k = 1e9 / (double)a->nq;
    for (int r = -1; r < a->rounds; r++) {
        double t0 = now();
        uint64_t sum_floor = loop_floor(c, q, a->nq);
        double t1 = now();
        uint64_t sum_get = loop_ss_get(s, q, a->nq);
        double t2 = now();
        uint64_t sum_mdb = loop_mdb_get(txn, dbi, q, a->nq);
        double t3 = now();
        uint64_t sum_floor4k = loop_floor(&small, q, a->nq);
        double t4 = now();
        uint64_t sum_call = loop_ss_get_call(s, q, a->nq);
        double t5 = now();
        if (sum_get != sum_floor || sum_mdb != sum_floor || sum_floor4k != sum_floor ||
            sum_call != sum_floor) {
            fprintf(stderr, "bench_read: the loops read different data\n");
            exit(1);
        }
        if (r < 0) continue;
        fg->ns[R_FLOOR][r] = (t1 - t0) * k;
        fg->ns[R_GET][r] = (t2 - t1) * k;
        fg->ns[R_MDB][r] = (t3 - t2) * k;
        fg->ns[R_FLOOR4K][r] = (t4 - t3) * k;
        fg->ns[R_GET_CALL][r] = (t5 - t4) * k;
        fg->ns[R_PY][r] =
            use_python ? run_python(a->python, prefix, c->n, a->pq, sum_py, r > 0) : -1;
    }
    for (int r = 0; use_python && r < a->rounds; r++)
        if (fg->ns[R_PY][r] <= 0) { /* a round without numpy: no figure at all */
            fprintf(stderr, "bench_read: the numpy baseline failed (%s)\n", a->python);
            fg->ns[R_PY][0] = -1;
            break;
        }
    munmap(m4k, bytes4k);
    free(small.p);
    mdb_txn_abort(txn);
    mdb_env_close(env);
}

static void ratios(double *out, const double *num, const double *den, int n) {
    for (int r = 0; r < n; r++) out[r] = num[r] / den[r];
}

/* The targets for ss_read_examples: 0.85x memcpy for examples of up
 * to 512 tokens; short ones (up to 32) pay the index walk per ~33 bytes
 * copied, so 0.5x. */
static double scan_target(const args *a) {
    return a->maxlen <= 32 ? 0.5 : 0.85;
}

static void print_plain(const args *a, const figures *fg) {
    int R = a->rounds;
    char b1[96], b2[96];
    double x[MAX_ROUNDS];
    say("\nrandom access, touching the first and last token: ns/op, median (range) of %d "
        "alternating rounds\n",
        R);
    say("  in-memory pointer array (floor) %s\n",
        bench_fmt(b1, sizeof b1, "%.1f", bench_stats(fg->ns[R_FLOOR], R)));
    say("  floor with 4 KiB pages (no THP) %s\n",
        bench_fmt(b1, sizeof b1, "%.1f", bench_stats(fg->ns[R_FLOOR4K], R)));
    ratios(x, fg->ns[R_GET], fg->ns[R_FLOOR], R);
    bench_mr g = bench_stats(x, R);
    say("  ss_get                          %s = %sx the floor (target <= 1.5x: %s)\n",
        bench_fmt(b1, sizeof b1, "%.1f", bench_stats(fg->ns[R_GET], R)),
        bench_fmt(b2, sizeof b2, "%.2f", g), verdict(g.med <= 1.5));
    ratios(x, fg->ns[R_GET], fg->ns[R_FLOOR4K], R);
    say("                                  = %sx the 4 KiB-page floor\n",
        bench_fmt(b2, sizeof b2, "%.2f", bench_stats(x, R)));
    ratios(x, fg->ns[R_GET_CALL], fg->ns[R_FLOOR], R);
    say("  ss_get called out of line       %s = %sx the floor (SS_NO_INLINE_GET)\n",
        bench_fmt(b1, sizeof b1, "%.1f", bench_stats(fg->ns[R_GET_CALL], R)),
        bench_fmt(b2, sizeof b2, "%.2f", bench_stats(x, R)));
    ratios(x, fg->ns[R_MDB], fg->ns[R_GET], R);
    g = bench_stats(x, R);
    say("  mdb_get, one key per example    %s: ss_get %sx faster (target >= 10x: %s)\n",
        bench_fmt(b1, sizeof b1, "%.1f", bench_stats(fg->ns[R_MDB], R)),
        bench_fmt(b2, sizeof b2, "%.1f", g), verdict(g.med >= 10));
    if (fg->ns[R_PY][0] > 0) {
        ratios(x, fg->ns[R_PY], fg->ns[R_GET], R);
        g = bench_stats(x, R);
        say("  numpy memmap + np.frombuffer    %s: ss_get %sx faster (target >= 50x: %s)\n",
            bench_fmt(b1, sizeof b1, "%.1f", bench_stats(fg->ns[R_PY], R)),
            bench_fmt(b2, sizeof b2, "%.1f", g), verdict(g.med >= 50));
    }
    say("\nsequential scan of %.3f GB (warm), GB/s, median (range) of %d rounds:\n", fg->gb, R);
    say("  memcpy from memory, 8 MB blocks %s\n",
        bench_fmt(b1, sizeof b1, "%.2f", bench_stats(fg->copy_gbs, R)));
    say("  memcpy from memory, per example %s\n",
        bench_fmt(b1, sizeof b1, "%.2f", bench_stats(fg->each_gbs, R)));
    g = bench_stats(fg->scan_ratio, R);
    say("  ss_get + memcpy per example     %s = %sx the faster memcpy (target >= 0.8x: %s)\n",
        bench_fmt(b1, sizeof b1, "%.2f", bench_stats(fg->scan_gbs, R)),
        bench_fmt(b2, sizeof b2, "%.2f", g), verdict(g.med >= 0.8));
    g = bench_stats(fg->flat_ratio, R);
    say("  ss_read_examples, %d per call     %s = %sx the faster memcpy (target >= %.2gx: %s)\n",
        SCAN_BLOCK, bench_fmt(b1, sizeof b1, "%.2f", bench_stats(fg->flat_gbs, R)),
        bench_fmt(b2, sizeof b2, "%.2f", g), scan_target(a), verdict(g.med >= scan_target(a)));
    say("load average: %.2f at the start, %.2f at the end\n", fg->load0, fg->load1);
}

/* The rows of README's "Reading" table. */
static void print_markdown(const args *a, const figures *fg) {
    int R = a->rounds;
    char b1[96], b2[96], b3[96];
    double x[MAX_ROUNDS];
    bench_md_header(fg->load0, fg->load1, R, "alternating seqstore and its baselines");
    printf("| measure | figure | target |\n| --- | --- | --- |\n");
    printf("| in-memory pointer array (the floor) | %s ns/op | |\n",
           bench_fmt(b1, sizeof b1, "%.1f", bench_stats(fg->ns[R_FLOOR], R)));
    printf("| the same floor in 4 KiB pages (no transparent huge pages) | %s ns/op | |\n",
           bench_fmt(b1, sizeof b1, "%.1f", bench_stats(fg->ns[R_FLOOR4K], R)));
    ratios(x, fg->ns[R_GET], fg->ns[R_FLOOR], R);
    bench_mr g = bench_stats(x, R);
    bench_fmt(b2, sizeof b2, "%.2f", g);
    ratios(x, fg->ns[R_GET], fg->ns[R_FLOOR4K], R);
    printf("| **`ss_get`** | **%s ns/op = %s× the floor**, %s× the 4 KiB floor | ≤ 1.5× — %s |\n",
           bench_fmt(b1, sizeof b1, "%.1f", bench_stats(fg->ns[R_GET], R)), b2,
           bench_fmt(b3, sizeof b3, "%.2f", bench_stats(x, R)), g.med <= 1.5 ? "met" : "not met");
    ratios(x, fg->ns[R_GET_CALL], fg->ns[R_FLOOR], R);
    printf("| `ss_get` called out of line (built with `SS_NO_INLINE_GET`) | %s ns/op = %s× the "
           "floor | |\n",
           bench_fmt(b1, sizeof b1, "%.1f", bench_stats(fg->ns[R_GET_CALL], R)),
           bench_fmt(b2, sizeof b2, "%.2f", bench_stats(x, R)));
    ratios(x, fg->ns[R_MDB], fg->ns[R_GET], R);
    g = bench_stats(x, R);
    printf("| `mdb_get`, one LMDB key per example, same data | %s ns/op: `ss_get` **%s× faster** "
           "| ≥ 10×%s |\n",
           bench_fmt(b1, sizeof b1, "%.0f", bench_stats(fg->ns[R_MDB], R)),
           bench_fmt(b2, sizeof b2, "%.1f", g), g.med >= 10 ? "" : " — not met");
    if (fg->ns[R_PY][0] > 0) {
        ratios(x, fg->ns[R_PY], fg->ns[R_GET], R);
        g = bench_stats(x, R);
        printf("| numpy `memmap` + `np.frombuffer` over `.bin` + offsets (Megatron/fairseq "
               "style) | %s ns/op: `ss_get` **%s× faster** | ≥ 50×%s |\n",
               bench_fmt(b1, sizeof b1, "%.0f", bench_stats(fg->ns[R_PY], R)),
               bench_fmt(b2, sizeof b2, "%.1f", g), g.med >= 50 ? "" : " — not met");
    }
    g = bench_stats(fg->scan_ratio, R);
    printf("| sequential scan, `ss_get` + `memcpy` per example | %s GB/s = **%s×** `memcpy` "
           "from memory | ≥ 0.8×%s |\n",
           bench_fmt(b1, sizeof b1, "%.2f", bench_stats(fg->scan_gbs, R)),
           bench_fmt(b2, sizeof b2, "%.2f", g), g.med >= 0.8 ? "" : " — not met");
    g = bench_stats(fg->flat_ratio, R);
    printf("| sequential scan, `ss_read_examples`, %d examples per call | %s GB/s = **%s×** "
           "`memcpy` from memory | ≥ %.2g×%s |\n",
           SCAN_BLOCK, bench_fmt(b1, sizeof b1, "%.2f", bench_stats(fg->flat_gbs, R)),
           bench_fmt(b2, sizeof b2, "%.2f", g), scan_target(a),
           g.med >= scan_target(a) ? "" : " — not met");
    printf("| open, %llu examples (%.2f GB) | **%.2f ms** warm, %.1f ms after evicting the file "
           "| < 50 ms |\n",
           (unsigned long long)a->n, fg->file_gb, fg->open_warm, fg->open_cold);
    if (a->big)
        printf("| open, %llu examples (%.2f GB) | **%.2f ms** warm, %.1f ms after evicting the "
               "file | < 50 ms |\n",
               (unsigned long long)a->big, fg->big_gb, fg->big_warm, fg->big_cold);
    static const char *epoch[V_N] = {"", "sequential epoch 1", "sequential epoch 2",
                                     "random epoch 1", "random epoch 2"};
    for (int m = V_SEQ1; verify_ran && m < V_N; m++) {
        double r = verify_ms[1][m] / verify_ms[0][m];
        int second = m == V_SEQ2 || m == V_RND2;
        printf("| `SS_OPEN_VERIFY` (chunks hashed on first touch), %s, `ss_get` + `memcpy` | "
               "%.1f ms vs %.1f ms unverified: **%+.1f%%** (median of %d) | %s |\n",
               epoch[m], verify_ms[1][m], verify_ms[0][m], (r - 1) * 100, V_ROUNDS,
               !second     ? ""
               : r <= 1.05 ? "within 5% — met"
                           : "within 5% — not met");
    }
}

int main(int argc, char **argv) {
    args a;
    g_out = stdout;
    parse(&a, argc, argv);
    if (a.markdown) g_out = stderr;
    static figures fg;
    fg.load0 = bench_loadavg();
    char store[4096], lmdb[4096], prefix[4096], bigstore[4096];
    snprintf(store, sizeof store, "%s/bench_read_%d.ss", a.dir, (int)getpid());
    snprintf(lmdb, sizeof lmdb, "%s/bench_read_%d.lmdb", a.dir, (int)getpid());
    snprintf(prefix, sizeof prefix, "%s/bench_read_%d_indexed", a.dir, (int)getpid());
    snprintf(bigstore, sizeof bigstore, "%s/bench_read_%d_big.ss", a.dir, (int)getpid());

    say("bench_read: %llu examples, lengths 1..%llu u16 tokens, %llu random queries (%llu for "
        "numpy), %d rounds, in %s\n",
        (unsigned long long)a.n, (unsigned long long)a.maxlen, (unsigned long long)a.nq,
        (unsigned long long)a.pq, a.rounds, a.dir);
    corpus c;
    corpus_make(&c, a.n, a.maxlen, 12345);
    fg.gb = (double)c.tokens * 2 / 1e9;
    say("data: %.3f GB of tokens\n", fg.gb);
    double tw = write_store(&c, store);
    fg.file_gb = (double)file_bytes(store) / 1e9;
    say("write seqstore:        %6.2f s  %7.1f MB/s  (file %.3f GB)\n", tw, fg.gb * 1e3 / tw,
        fg.file_gb);
    double tl = write_lmdb(&c, lmdb);
    say("write LMDB key/example: %5.2f s  %7.1f MB/s  (file %.3f GB)\n", tl, fg.gb * 1e3 / tl,
        (double)file_bytes(lmdb) / 1e9);

    uint64_t *q = malloc(a.nq * sizeof *q), rs = 777;
    if (!q) die("queries", SS_ENOMEM);
    for (uint64_t j = 0; j < a.nq; j++) q[j] = splitmix(&rs) % a.n;
    int use_python = strcmp(a.python, "none") != 0;
    if (use_python) write_indexed(&c, prefix, q, a.pq);

    fg.open_warm = open_ms(store, 0, 21);
    fg.open_cold = open_ms(store, 1, 7);
    ss_store *s;
    int rc = ss_open(&s, store, 0);
    if (rc) die("open", rc);

    size_t ring = 8u << 20;
    unsigned char *dst = malloc(ring + (size_t)a.maxlen * 2);
    if (!dst) die("scan buffer", SS_ENOMEM);
    for (int r = -1; r < a.rounds; r++) { /* round -1 warms the map and the buffer */
        double t[4];
        scan_round(s, &c, dst, ring, t);
        if (r < 0) continue;
        fg.scan_gbs[r] = fg.gb / t[0];
        fg.copy_gbs[r] = fg.gb / t[1];
        fg.each_gbs[r] = fg.gb / t[2];
        /* the baseline is the faster of the two ways to copy from memory */
        fg.scan_ratio[r] = (t[1] < t[2] ? t[1] : t[2]) / t[0];
        fg.flat_gbs[r] = fg.gb / t[3];
        fg.flat_ratio[r] = (t[1] < t[2] ? t[1] : t[2]) / t[3];
    }
    random_rounds(&a, &c, s, lmdb, prefix, q, &fg);
    ss_close(s);
    fg.load1 = bench_loadavg();
    print_plain(&a, &fg);

    if (a.verify) bench_verify(store, a.n, dst, ring);

    remove_store(lmdb);
    if (use_python) {
        char path[4200];
        const char *ext[] = {".bin", ".idx", ".q"};
        for (int e = 0; e < 3; e++) {
            snprintf(path, sizeof path, "%s%s", prefix, ext[e]);
            unlink(path);
        }
    }
    free(c.data);
    free(c.offset);
    free(c.p);
    free(c.len);
    free(q);
    free(dst);

    say("\nopen time (ss_open + ss_close, median):\n");
    say("  %9llu examples: %7.3f ms warm, %7.3f ms after evicting the file (%.2f GB)\n",
        (unsigned long long)a.n, fg.open_warm, fg.open_cold, fg.file_gb);
    remove_store(store);
    if (a.big) {
        double tb = write_big_store(bigstore, a.big, a.maxlen);
        fg.big_warm = open_ms(bigstore, 0, 21);
        fg.big_cold = open_ms(bigstore, 1, 7);
        fg.big_gb = (double)file_bytes(bigstore) / 1e9;
        say("  %9llu examples: %7.3f ms warm, %7.3f ms after evicting the file (%.2f GB, "
            "written in %.1f s)\n",
            (unsigned long long)a.big, fg.big_warm, fg.big_cold, fg.big_gb, tb);
        say("  target: both under 50 ms: %s; %.1fx the examples -> %.2fx the warm open time\n",
            verdict(fg.open_warm < 50 && fg.big_warm < 50 && fg.open_cold < 50 && fg.big_cold < 50),
            (double)a.big / (double)a.n, fg.big_warm / fg.open_warm);
        remove_store(bigstore);
    }
    fg.load1 = bench_loadavg();
    if (a.markdown) print_markdown(&a, &fg);
    return 0;
}
