/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_dataset.c - datasets of shards (spec/FORMAT.md §13) against one store
 * of the same examples:
 *   open time of a dataset of S shards (ss_open + ss_close; reads the
 *     manifest and the first shard only), and the first touch of every shard;
 *   random ss_get (touching each example's first and last token) over 1, 16,
 *     64, 256 and 1024 shards against the single store, after one warm-up
 *     pass (so shard opens and page faults are outside the timing);
 *   shards of equal sizes, or with -u 1 of unequal ones: shard k's size
 *     drawn uniformly from 0.39..1.65 of the mean, the spread `convert
 *     --shard` gave on a 302 MB text (13,502..57,820 examples per shard).
 * Usage: bench_dataset [-n N] [-l MAXLEN] [-q QUERIES] [-d DIR] [-u 0|1] [-s SHARDS]
 *                      [-r ROUNDS]
 * Defaults: N = 1000000 examples of uniform 1..MAXLEN u16 tokens (MAXLEN
 * 128), 4000000 queries, DIR = $TMPDIR or /tmp. Files are deleted at the end. */
#include "manifest.h"
#include "seqstore.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void die(const char *what) {
    fprintf(stderr, "bench_dataset: %s: %s\n", what, ss_error_message());
    exit(1);
}

/* Examples [a, b) of the deterministic corpus into `path`. */
static void write_store(const char *path, uint64_t a, uint64_t b, uint64_t maxlen) {
    ss_field f = {"tok", SS_U16, 1, 0, {0}};
    ss_schema sc = {1, &f};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
    ss_writer *w;
    if (ss_writer_create(&w, path, &sc, &o)) die(path);
    uint16_t *buf = malloc(maxlen * 2);
    for (uint64_t i = a; i < b; i++) {
        uint64_t s = i * 7919 + 1, len = 1 + splitmix(&s) % maxlen;
        for (uint64_t t = 0; t < len; t++) buf[t] = (uint16_t)(i + t);
        ss_value v = {buf, len};
        if (ss_writer_append(w, &v)) die(path);
    }
    if (ss_writer_finish(w)) die(path);
    ss_writer_free(w);
    free(buf);
}

/* Shard boundaries: bound[k] is shard k's first example, bound[nshards] = n;
 * equal shards, or unequal ones (see above). */
static uint64_t *bounds(uint64_t n, uint32_t nshards, int unequal) {
    uint64_t *b = malloc((nshards + 1) * sizeof *b), seed = 99;
    double *w = malloc(nshards * sizeof *w), sum = 0;
    for (uint32_t k = 0; k < nshards; k++)
        sum += w[k] = unequal ? 0.39 + 1.26 * (double)(splitmix(&seed) >> 11) / 9007199254740992.0
                              : 1.0;
    double acc = 0;
    for (uint32_t k = 0; k < nshards; k++, acc += w[k - 1]) b[k] = (uint64_t)(acc / sum * (double)n);
    b[0] = 0;
    b[nshards] = n;
    free(w);
    return b;
}

static const uint64_t *g_bound; /* the boundaries of the dataset being measured */

/* A dataset of `nshards` shards of examples [0, n) in dir, at g_bound. */
static void write_dataset(const char *dir, uint64_t n, uint32_t nshards, uint64_t maxlen) {
    (void)n;
    mkdir(dir, 0755);
    ss_manifest m;
    for (uint32_t k = 0; k < nshards; k++) {
        char name[64], path[4400];
        snprintf(name, sizeof name, "part-%05u.ss", k);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        write_store(path, g_bound[k], g_bound[k + 1], maxlen);
        ss_store *s;
        uint64_t digest, rows;
        if (ss_open(&s, path, SS_OPEN_NOLOCK)) die(path);
        if (k == 0) ss__manifest_init(&m, s);
        rows = ss_flat_size(s, 0);
        if (ss__store_header_digest(&digest, s) ||
            ss__manifest_add(&m, name, ss_count(s), digest, &rows))
            die(path);
        ss_close(s);
    }
    if (ss__manifest_write(&m, dir)) die(dir);
    ss__manifest_free(&m);
}

/* ns per random ss_get over `queries` indices. */
static void warm_up(const ss_store *s, uint64_t n, uint64_t *sink) {
    ss_view v;
    for (uint64_t i = 0; i < n; i++) { /* every shard opened, every page mapped */
        if (ss_get(&v, s, 0, i)) die("get");
        *sink += ((const uint16_t *)v.data)[0];
    }
}

static double random_gets(const ss_store *s, uint64_t n, uint64_t queries, uint64_t seed,
                          uint64_t *sink) {
    ss_view v;
    double t0 = now();
    for (uint64_t q = 0; q < queries; q++) {
        uint64_t i = splitmix(&seed) % n;
        if (ss_get(&v, s, 0, i)) die("get");
        const uint16_t *d = v.data;
        *sink += d[0] + d[v.length - 1];
    }
    return (now() - t0) * 1e9 / (double)queries;
}

/* The shard stores opened directly, to measure what S files cost without
 * the dataset's dispatch (shard = the one whose range holds i, as written). */
typedef struct direct {
    uint32_t nshards;
    ss_store **sh;
    uint64_t *first;
} direct;

static void direct_open(direct *d, const char *ds, uint64_t n, uint32_t nshards) {
    d->nshards = nshards;
    d->sh = calloc(nshards, sizeof *d->sh);
    d->first = calloc(nshards + 1, sizeof *d->first);
    for (uint32_t k = 0; k < nshards; k++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/part-%05u.ss", ds, k);
        if (ss_open(&d->sh[k], path, SS_OPEN_NOLOCK)) die(path);
        d->first[k] = g_bound[k];
    }
    d->first[nshards] = n;
}

static void direct_close(direct *d) {
    for (uint32_t k = 0; k < d->nshards; k++) ss_close(d->sh[k]);
    free(d->sh);
    free(d->first);
}

/* The same loop under two names, so that valgrind --tool=callgrind
 * --toggle-collect=gets_single --toggle-collect=gets_dataset counts the
 * instructions of each store's gets apart (-s S -r 1: one round of one
 * dataset). */
__attribute__((noinline, noipa)) static double gets_single(const ss_store *s, uint64_t n, uint64_t q,
                                                    uint64_t seed, uint64_t *sink) {
    return random_gets(s, n, q, seed, sink);
}

__attribute__((noinline, noipa)) static double gets_dataset(const ss_store *s, uint64_t n, uint64_t q,
                                                     uint64_t seed, uint64_t *sink) {
    return random_gets(s, n, q, seed, sink);
}

static double direct_gets(const direct *dr, uint64_t n, uint64_t queries, uint64_t seed,
                          uint64_t *sink) {
    ss_view v;
    uint32_t ns = dr->nshards;
    double t0 = now();
    for (uint64_t q = 0; q < queries; q++) {
        uint64_t i = splitmix(&seed) % n;
        uint32_t k = (uint32_t)(i / (n / ns ? n / ns : 1));
        if (k >= ns) k = ns - 1;
        while (dr->first[k] > i) k--;
        while (dr->first[k + 1] <= i) k++;
        if (ss_get(&v, dr->sh[k], 0, i - dr->first[k])) die("get");
        const uint16_t *d = v.data;
        *sink += d[0] + d[v.length - 1];
    }
    return (now() - t0) * 1e9 / (double)queries;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    uint64_t n = 1000000, maxlen = 128, queries = 4000000;
    int unequal = 0, rounds = 20;
    uint32_t only = 0;
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n")) n = strtoull(argv[i + 1], NULL, 10);
        if (!strcmp(argv[i], "-l")) maxlen = strtoull(argv[i + 1], NULL, 10);
        if (!strcmp(argv[i], "-q")) queries = strtoull(argv[i + 1], NULL, 10);
        if (!strcmp(argv[i], "-d")) dir = argv[i + 1];
        if (!strcmp(argv[i], "-u")) unequal = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "-s")) only = (uint32_t)strtoul(argv[i + 1], NULL, 10);
        if (!strcmp(argv[i], "-r")) rounds = atoi(argv[i + 1]) > 0 ? atoi(argv[i + 1]) : 1;
    }
    const char *quick = getenv("SS_BENCH_QUICK"); /* the smoke tests: tiny sizes */
    if (quick && *quick && strcmp(quick, "0") != 0) {
        if (n > 20000) n = 20000;
        if (queries > 100000) queries = 100000;
    }
    char base[4096], single[4200];
    snprintf(base, sizeof base, "%s/bench_dataset.%d", dir, (int)getpid());
    mkdir(base, 0755);
    snprintf(single, sizeof single, "%s/single.ss", base);
    write_store(single, 0, n, maxlen);
    uint64_t sink = 0;
    ss_store *s, *one;
    if (ss_open(&one, single, 0)) die(single);
    warm_up(one, n, &sink);
    printf("examples %llu (u16, length 1..%llu), %llu random gets per figure, interleaved in "
           "%d rounds with the single store's and the directly opened shards'\n",
           (unsigned long long)n, (unsigned long long)maxlen, (unsigned long long)queries, rounds);
    printf("shard sizes: %s\n", unequal ? "unequal (0.39..1.65 of the mean)" : "equal");
    const uint32_t shards[] = {1, 16, 64, 256, 1024};
    for (size_t c = 0; c < sizeof shards / sizeof shards[0]; c++) {
        if (only && shards[c] != only) continue;
        char ds[4300];
        snprintf(ds, sizeof ds, "%s/ds%u", base, shards[c]);
        uint64_t *bound = bounds(n, shards[c], unequal);
        g_bound = bound;
        write_dataset(ds, n, shards[c], maxlen);
        double t[21];
        for (int r = 0; r < 21; r++) {
            double t0 = now();
            if (ss_open(&s, ds, 0)) die(ds);
            t[r] = now() - t0;
            ss_close(s);
        }
        qsort(t, 21, sizeof t[0], cmp_double);
        if (ss_open(&s, ds, 0)) die(ds);
        double t0 = now();
        ss_view v;
        for (uint64_t i = 0; i < n; i += n / shards[c] ? n / shards[c] : 1)
            if (ss_get(&v, s, 0, i)) die("first touch");
        double touch = now() - t0;
        /* interleaved in rounds: the machine's other load hits all three alike */
        direct dr;
        direct_open(&dr, ds, n, shards[c]);
        warm_up(s, n, &sink);
        double tg = 0, td = 0, t_single = 0;
        for (int r = 0; r < rounds; r++) {
            uint64_t seed = 42 + (uint64_t)r, qn = queries / (uint64_t)rounds;
            t_single += gets_single(one, n, qn, seed, &sink) / rounds;
            tg += gets_dataset(s, n, qn, seed, &sink) / rounds;
            td += direct_gets(&dr, n, qn, seed, &sink) / rounds;
        }
        direct_close(&dr);
        free(bound);
        ss_close(s);
        printf("%4u shards: open %8.3f ms (median of 21), first touch of all shards %8.3f ms, "
               "%7.1f ns/get = %.2fx the single store's %.1f ns (the %u stores opened "
               "directly: %.1f ns = %.2fx)\n",
               shards[c], t[10] * 1e3, touch * 1e3, tg, tg / t_single, t_single, shards[c], td,
               td / t_single);
    }
    ss_close(one);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "bench_dataset: could not remove %s\n", base);
    fprintf(stderr, "(checksum %llu)\n", (unsigned long long)sink);
    return 0;
}
