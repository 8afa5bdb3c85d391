/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_read.c - read speed of a store against baselines run in the same
 * process on the same data:
 *   random access: ss_get (touching each example's first and last token)
 *     vs (a) one LMDB key per example read with mdb_get,
 *        (b) the same loop over an in-memory array of pointers (the floor),
 *        (c) Megatron/fairseq-style .bin + index read per example with numpy
 *            memmap + np.frombuffer (bench/npy_indexed_baseline.py);
 *   open time of stores of N and BIG examples (warm and after evicting the
 *     file from the page cache);
 *   sequential scan of all data (ss_get + memcpy per example) vs one memcpy
 *     of the same bytes from memory.
 *   verified (SS_OPEN_VERIFY) vs unverified reads: sequential and random
 *     epochs, first and second (-V 0 skips it).
 * Usage: bench_read [-n N] [-N BIG] [-l MAXLEN] [-q QUERIES] [-d DIR] [-P python|none] [-V 0|1]
 * Defaults: N = 1000000, BIG = 10000000 (0 skips), lengths uniform in
 * 1..512 u16 tokens, 2000000 queries, DIR = $TMPDIR or /tmp. Every file it
 * writes is deleted at the end. */
#include "seqstore.h"

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

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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
                         uint64_t want_sum) {
    char script[4200], cmd[9000];
    snprintf(script, sizeof script, "%s", __FILE__);
    char *slash = strrchr(script, '/');
    if (slash)
        snprintf(slash + 1, sizeof script - (size_t)(slash + 1 - script), "%s",
                 "npy_indexed_baseline.py");
    else
        snprintf(script, sizeof script, "npy_indexed_baseline.py");
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' %llu %llu", python, script, prefix,
             (unsigned long long)n, (unsigned long long)nq);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[512];
    double ns = -1;
    unsigned long long sum = 0;
    int got = 0;
    while (fgets(line, sizeof line, p)) {
        fputs("    python: ", stdout);
        fputs(line, stdout);
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
    printf("  load average %s: %s", when, buf);
}

/* Verified (SS_OPEN_VERIFY) against unverified reads: a sequential and a
 * random epoch, each first and second, medians of V_ROUNDS rounds in which
 * the two take turns going first. Target: within 5% after the first epoch. */
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
    printf("\nverification on first touch (SS_OPEN_VERIFY) vs unverified, ss_get + memcpy per "
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
        printf("  %-36s %9.2f ms unverified %9.2f ms verified  %+6.1f%%\n", name[m], u * 1e3,
               v * 1e3, (v / u - 1) * 100);
        if ((m == V_SEQ2 || m == V_RND2) && v / u > ratio2) ratio2 = v / u;
    }
    printf("  target: second epochs within 5%% of unverified: %s\n", verdict(ratio2 <= 1.05));
    print_loadavg("after");
    free(perm);
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
    uint64_t n = 1000000, big = 10000000, maxlen = 512, nq = 2000000;
    const char *dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    const char *python = default_python();
    int verify_rounds = 1;
    for (int a = 1; a + 1 < argc; a += 2) {
        if (!strcmp(argv[a], "-n"))
            n = strtoull(argv[a + 1], NULL, 10);
        else if (!strcmp(argv[a], "-N"))
            big = strtoull(argv[a + 1], NULL, 10);
        else if (!strcmp(argv[a], "-l"))
            maxlen = strtoull(argv[a + 1], NULL, 10);
        else if (!strcmp(argv[a], "-q"))
            nq = strtoull(argv[a + 1], NULL, 10);
        else if (!strcmp(argv[a], "-d"))
            dir = argv[a + 1];
        else if (!strcmp(argv[a], "-P"))
            python = argv[a + 1];
        else if (!strcmp(argv[a], "-V"))
            verify_rounds = strcmp(argv[a + 1], "0") != 0;
        else {
            fprintf(stderr, "usage: bench_read [-n N] [-N BIG] [-l MAXLEN] [-q QUERIES] [-d DIR] "
                            "[-P python|none] [-V 0|1]\n");
            return 2;
        }
    }
    if (n == 0 || maxlen == 0 || nq == 0) return 2;
    char store[4096], lmdb[4096], prefix[4096], bigstore[4096];
    snprintf(store, sizeof store, "%s/bench_read_%d.ss", dir, (int)getpid());
    snprintf(lmdb, sizeof lmdb, "%s/bench_read_%d.lmdb", dir, (int)getpid());
    snprintf(prefix, sizeof prefix, "%s/bench_read_%d_indexed", dir, (int)getpid());
    snprintf(bigstore, sizeof bigstore, "%s/bench_read_%d_big.ss", dir, (int)getpid());

    printf("bench_read: %llu examples, lengths 1..%llu u16 tokens, %llu random queries, in %s\n",
           (unsigned long long)n, (unsigned long long)maxlen, (unsigned long long)nq, dir);
    corpus c;
    corpus_make(&c, n, maxlen, 12345);
    double gb = (double)c.tokens * 2 / 1e9;
    printf("data: %.3f GB of tokens\n", gb);
    double tw = write_store(&c, store);
    printf("write seqstore:        %6.2f s  %7.1f MB/s  (file %.3f GB)\n", tw, gb * 1e3 / tw,
           (double)file_bytes(store) / 1e9);
    double tl = write_lmdb(&c, lmdb);
    printf("write LMDB key/example: %5.2f s  %7.1f MB/s  (file %.3f GB)\n", tl, gb * 1e3 / tl,
           (double)file_bytes(lmdb) / 1e9);

    uint64_t *q = malloc(nq * sizeof *q), rs = 777;
    if (!q) die("queries", SS_ENOMEM);
    for (uint64_t j = 0; j < nq; j++) q[j] = splitmix(&rs) % n;
    int use_python = strcmp(python, "none") != 0;
    if (use_python) write_indexed(&c, prefix, q, nq);

    /* open time of this store */
    double open_warm = open_ms(store, 0, 21), open_cold = open_ms(store, 1, 7);

    ss_store *s;
    int rc = ss_open(&s, store, 0);
    if (rc) die("open", rc);

    /* sequential scan: every example copied out, against one memcpy */
    size_t ring = 8u << 20;
    unsigned char *dst = malloc(ring + (size_t)maxlen * 2);
    if (!dst) die("scan buffer", SS_ENOMEM);
    uint64_t total = c.tokens * 2;
    double best_scan = 1e30, best_copy = 1e30, best_each = 1e30;
    for (int r = 0; r < 4; r++) { /* run 0 warms the map and the buffer */
        double t0 = now();
        size_t at = 0;
        for (uint64_t i = 0; i < n; i++) {
            ss_view v;
            if ((rc = ss_get(&v, s, 0, i))) die("ss_get", rc);
            size_t b = (size_t)(v.length * v.row_bytes);
            if (at + b > ring) at = 0;
            memcpy(dst + at, v.data, b);
            at += b;
        }
        double dt = now() - t0;
        if (r && dt < best_scan) best_scan = dt;
        t0 = now();
        const unsigned char *src = (const unsigned char *)c.data;
        for (uint64_t off = 0; off < total; off += ring) {
            size_t b = total - off < ring ? (size_t)(total - off) : ring;
            memcpy(dst, src + off, b);
        }
        dt = now() - t0;
        if (r && dt < best_copy) best_copy = dt;
        t0 = now(); /* the same per-example copies from the in-memory array */
        at = 0;
        for (uint64_t i = 0; i < n; i++) {
            size_t b = (size_t)c.len[i] * 2;
            if (at + b > ring) at = 0;
            memcpy(dst + at, c.p[i], b);
            at += b;
        }
        dt = now() - t0;
        if (r && dt < best_each) best_each = dt;
    }
    /* the baseline is the faster of the two ways to copy from memory */
    double best_mem = best_copy < best_each ? best_copy : best_each;
    volatile unsigned char sink = dst[ring / 2];
    (void)sink;

    /* random access */
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    if ((rc = mdb_env_create(&env)) ||
        (rc = mdb_env_set_mapsize(env, file_bytes(lmdb) + (1 << 20))) ||
        (rc = mdb_env_open(env, lmdb, MDB_NOSUBDIR | MDB_RDONLY, 0644)) ||
        (rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) ||
        (rc = mdb_dbi_open(txn, NULL, 0, &dbi)))
        die_lmdb("lmdb open for reading", rc);
    /* A second floor: the same pointer loop over a copy of the data in 4 KiB
     * pages (no transparent huge pages), as a file mapping has. */
    corpus small = c;
    size_t data_bytes = (size_t)c.tokens * 2;
    void *m4k = mmap(NULL, data_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m4k == MAP_FAILED) die("mmap", SS_ENOMEM);
    madvise(m4k, data_bytes, MADV_NOHUGEPAGE);
    memcpy(m4k, c.data, data_bytes);
    small.p = malloc(n * sizeof *small.p);
    if (!small.p) die("pointers", SS_ENOMEM);
    for (uint64_t i = 0; i < n; i++) small.p[i] = (const uint16_t *)m4k + c.offset[i];
    double ns_floor4k = 1e30;
    uint64_t sum_floor4k = 0;
    /* The loops take turns, 5 rounds after a warm-up round, and each
     * keeps its best: load from other processes hits them alike. */
    double ns_floor = 1e30, ns_get = 1e30, ns_mdb = 1e30;
    uint64_t sum_floor = 0, sum_get = 0, sum_mdb = 0;
    for (int r = 0; r < 6; r++) {
        double t0 = now();
        sum_floor = loop_floor(&c, q, nq);
        double t1 = now();
        sum_get = loop_ss_get(s, q, nq);
        double t2 = now();
        sum_mdb = loop_mdb_get(txn, dbi, q, nq);
        double t3 = now();
        sum_floor4k = loop_floor(&small, q, nq);
        double t4 = now();
        if (r == 0) continue;
        double k = 1e9 / (double)nq;
        if ((t1 - t0) * k < ns_floor) ns_floor = (t1 - t0) * k;
        if ((t2 - t1) * k < ns_get) ns_get = (t2 - t1) * k;
        if ((t3 - t2) * k < ns_mdb) ns_mdb = (t3 - t2) * k;
        if ((t4 - t3) * k < ns_floor4k) ns_floor4k = (t4 - t3) * k;
    }
    munmap(m4k, data_bytes);
    free(small.p);
    if (sum_get != sum_floor || sum_mdb != sum_floor || sum_floor4k != sum_floor) {
        fprintf(stderr, "bench_read: the three loops read different data\n");
        return 1;
    }
    mdb_txn_abort(txn);
    mdb_env_close(env);
    ss_close(s);
    double ns_py = -1;
    if (use_python) {
        uint64_t pq = nq < 500000 ? nq : 500000; /* Python is slow: fewer queries */
        uint64_t sum_py = 0;
        for (uint64_t j = 0; j < pq; j++) sum_py += c.p[q[j]][0] + c.p[q[j]][c.len[q[j]] - 1];
        ns_py = run_python(python, prefix, n, pq, sum_py);
    }

    printf("\nrandom access, touching the first and last token (ns/op, best of 5 interleaved "
           "rounds):\n");
    printf("  in-memory pointer array (floor) %8.1f\n", ns_floor);
    printf("  ss_get                          %8.1f   %.2fx the floor     (target <= 2x: %s)\n",
           ns_get, ns_get / ns_floor, verdict(ns_get <= 2 * ns_floor));
    printf("  floor with 4 KiB pages (no THP) %8.1f   ss_get %.2fx this floor\n", ns_floor4k,
           ns_get / ns_floor4k);
    printf("  mdb_get, one key per example    %8.1f   ss_get %.1fx faster (target >= 10x: %s)\n",
           ns_mdb, ns_mdb / ns_get, verdict(ns_mdb >= 10 * ns_get));
    if (ns_py > 0)
        printf("  numpy memmap + np.frombuffer    %8.1f   ss_get %.1fx faster (target >= 50x: "
               "%s)\n",
               ns_py, ns_py / ns_get, verdict(ns_py >= 50 * ns_get));
    else if (use_python)
        printf("  numpy memmap + np.frombuffer    (failed to run %s)\n", python);
    printf("\nsequential scan of %.3f GB (best of 3, warm):\n", gb);
    printf("  memcpy from memory, 8 MB blocks %8.2f GB/s\n", gb / best_copy);
    printf("  memcpy from memory, per example %8.2f GB/s\n", gb / best_each);
    printf("  ss_get + memcpy per example     %8.2f GB/s   %.2fx the faster memcpy (target >= "
           "0.8x: %s)\n",
           gb / best_scan, best_mem / best_scan, verdict(best_mem / best_scan >= 0.8));

    if (verify_rounds) bench_verify(store, n, dst, ring);

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

    printf("\nopen time (ss_open + ss_close, median):\n");
    printf("  %9llu examples: %7.3f ms warm, %7.3f ms after evicting the file (%.2f GB)\n",
           (unsigned long long)n, open_warm, open_cold, (double)file_bytes(store) / 1e9);
    remove_store(store);
    if (big) {
        double tb = write_big_store(bigstore, big, maxlen);
        double big_warm = open_ms(bigstore, 0, 21), big_cold = open_ms(bigstore, 1, 7);
        printf("  %9llu examples: %7.3f ms warm, %7.3f ms after evicting the file (%.2f GB, "
               "written in %.1f s)\n",
               (unsigned long long)big, big_warm, big_cold, (double)file_bytes(bigstore) / 1e9, tb);
        printf("  target: both under 50 ms: %s; %.1fx the examples -> %.2fx the warm open time\n",
               verdict(open_warm < 50 && big_warm < 50 && open_cold < 50 && big_cold < 50),
               (double)big / (double)n, big_warm / open_warm);
        remove_store(bigstore);
    }
    return 0;
}
