/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_shuffle_locality.c - epoch read time of sequential, block-shuffled and
 * fully shuffled orders on a store larger than the memory the reader may use,
 * plus order-quality figures (locality-aware shuffling).
 *
 *   bench_shuffle_locality create PATH MB      write a ~MB MiB store (u16 tokens,
 *                                              1024..7167 per example, ~8 KiB)
 *   bench_shuffle_locality run PATH [SECONDS] [--rounds R] [--markdown]
 *                                              read one epoch per order (at most
 *                                              SECONDS each, default 10) in each
 *                                              of R rounds (default 5)
 *
 * In each round the orders take turns; epoch times and examples/s are the
 * median (and range) over the rounds, with the load average at the start and
 * end. --markdown prints README's table.
 *
 * Before each order the store's pages are dropped from the page cache (sync,
 * then posix_fadvise(POSIX_FADV_DONTNEED) on the file), so every run starts
 * cold. Run `run` inside a memory-limited cgroup (bench/run_locality.sh): page
 * cache counts against the cgroup's limit, so a store several times larger
 * than the limit cannot stay cached and every re-read goes to the disk. An
 * order that does not finish within SECONDS is reported as examples/s and an
 * extrapolated epoch time (marked "~").
 *
 * Quality figures, computed from the orders alone (no I/O):
 *  - r(epochs): Pearson correlation between an example's position in epoch 0
 *    and in epoch 1 (1 = the same order every epoch, 0 = unrelated);
 *  - r(index): correlation between position and store index (1 =
 *    sequential, 0 = no trace of the storage order);
 *  - batch span: mean over batches of 64 consecutive positions of
 *    (max index - min index) / N (about 64/N for sequential, ~0.97 for a full
 *    shuffle): how widely one batch samples the store;
 *  - neighbours: fraction of batch-mates (pairs in a batch of 64) whose
 *    store indices are within 1% of N of each other (a full shuffle gives
 *    about 0.02). */
#include "seqstore.h"

#include "bench_common.h"

#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int die(const char *what) {
    fprintf(stderr, "bench_shuffle_locality: %s: %s\n", what, ss_error_message());
    return 1;
}

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int create(const char *path, uint64_t mb) {
    ss_field f = {"tokens", SS_U16, 1, 0, {0}};
    ss_schema sc = {1, &f};
    ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
    wo.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
    ss_writer *w;
    if (ss_writer_create(&w, path, &sc, &wo)) return die("create");
    uint16_t *buf = malloc(7168 * sizeof *buf);
    if (!buf) return die("memory");
    uint64_t rng = 1, bytes = 0, n = 0, target = mb << 20;
    while (bytes < target) {
        uint64_t len = 1024 + splitmix(&rng) % 6144;
        for (uint64_t i = 0; i < len; i += 4) {
            uint64_t r = splitmix(&rng);
            memcpy(buf + i, &r, 8);
        }
        ss_value v = {buf, len};
        if (ss_writer_append(w, &v)) return die("append");
        bytes += 2 * len;
        n++;
    }
    if (ss_writer_finish(w)) return die("finish");
    ss_writer_free(w);
    free(buf);
    printf("wrote %s: %" PRIu64 " examples, %.1f MiB of tokens\n", path, n,
           (double)bytes / (1 << 20));
    return 0;
}

/* Drop the store file's pages from the page cache. */
static int drop_cache(const char *path) {
    sync();
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    return rc;
}

/* The memory cgroup this process runs in: its limit and current usage (v2:
 * memory.max / memory.current; v1: memory.limit_in_bytes /
 * memory.usage_in_bytes), or 0 when unknown. */
static uint64_t cgroup_value(const char *v2name, const char *v1name) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return 0;
    char line[512], path[700];
    uint64_t val = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *p1 = strchr(line, ':'), *p2 = p1 ? strchr(p1 + 1, ':') : NULL;
        if (!p2) continue;
        int v1 = strncmp(p1 + 1, "memory:", 7) == 0, v2 = strncmp(line, "0::", 3) == 0;
        if (!v1 && !v2) continue;
        snprintf(path, sizeof path, v1 ? "/sys/fs/cgroup/memory%s/%s" : "/sys/fs/cgroup%s/%s",
                 p2 + 1, v1 ? v1name : v2name);
        FILE *g = fopen(path, "r");
        if (!g) continue;
        unsigned long long x;
        if (fscanf(g, "%llu", &x) == 1 && (!val || v1)) val = x;
        fclose(g);
    }
    fclose(f);
    return val >= (1ull << 60) ? 0 : val;
}

typedef struct config {
    const char *name;
    ss_sampler_kind kind;
    uint64_t block_bytes, window;
} config;

static int make_order(uint64_t *out, const ss_store *s, const ss_selection *all, const config *c,
                      uint64_t epoch) {
    ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
    o.kind = c->kind;
    o.seed = 2024;
    o.block_bytes = c->block_bytes;
    o.window_blocks = c->window;
    if (c->kind == SS_SAMPLE_BLOCK_SHUFFLE) o.store = s; /* refused with other kinds */
    ss_sampler *sp;
    if (ss_sampler_create(&sp, all, &o)) return die("sampler");
    if (ss_sampler_set_epoch(sp, epoch)) return die("epoch");
    uint64_t n = ss_selection_count(all), k = 0;
    size_t got;
    do {
        if (ss_sampler_next(out + k, (size_t)(n - k), &got, sp)) return die("next");
        k += got;
    } while (got && k < n);
    ss_sampler_free(sp);
    return 0;
}

static double corr(const double *x, const double *y, uint64_t n) {
    double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
    for (uint64_t i = 0; i < n; i++) mx += x[i], my += y[i];
    mx /= (double)n;
    my /= (double)n;
    for (uint64_t i = 0; i < n; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 1.0;
}

static void quality(const uint64_t *o0, const uint64_t *o1, uint64_t n, double *r_epochs,
                    double *r_index, double *span, double *neigh) {
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    for (uint64_t p = 0; p < n; p++) a[o0[p]] = (double)p, b[o1[p]] = (double)p;
    *r_epochs = corr(a, b, n);
    for (uint64_t i = 0; i < n; i++) b[i] = (double)i;
    *r_index = corr(a, b, n);
    const uint64_t B = 64, near = n / 100;
    double spans = 0, pairs = 0, close = 0;
    uint64_t nb = 0;
    for (uint64_t p = 0; p + B <= n; p += B, nb++) {
        uint64_t lo = UINT64_MAX, hi = 0;
        for (uint64_t i = p; i < p + B; i++) {
            lo = o0[i] < lo ? o0[i] : lo;
            hi = o0[i] > hi ? o0[i] : hi;
            for (uint64_t j = p; j < i; j++) {
                uint64_t d = o0[i] > o0[j] ? o0[i] - o0[j] : o0[j] - o0[i];
                close += d <= near;
                pairs++;
            }
        }
        spans += (double)(hi - lo) / (double)n;
    }
    *span = nb ? spans / (double)nb : 0;
    *neigh = pairs > 0 ? close / pairs : 0;
    free(a);
    free(b);
}

enum { NCONF = 6, MAX_ROUNDS = 64 };

typedef struct quality_row {
    double r_ep, r_ix, span, neigh;
} quality_row;

/* One cold epoch in `order`, at most max_seconds: examples read and seconds;
 * *used is the cgroup's memory at the end. */
static int epoch(const char *path, const ss_selection *all, const config *c, uint64_t *order,
                 double max_seconds, uint64_t *done, double *secs, double *used) {
    if (drop_cache(path)) fprintf(stderr, "warning: could not drop the page cache\n");
    double t0 = now();
    ss_store *s;
    if (ss_open(&s, path, 0)) return die("open");
    if (make_order(order, s, all, c, 0)) return 1;
    uint64_t n = ss_count(s), k = 0, sum = 0;
    for (; k < n; k++) {
        ss_view v;
        if (ss_get(&v, s, 0, order[k])) return die("get");
        const unsigned char *p = v.data;
        uint64_t nbytes = v.length * v.row_bytes;
        for (uint64_t i = 0; i + 8 <= nbytes; i += 64) { /* touch every cache line */
            uint64_t x;
            memcpy(&x, p + i, 8);
            sum += x;
        }
        if ((k & 255) == 255 && now() - t0 > max_seconds) {
            k++;
            break;
        }
    }
    *secs = now() - t0;
    *done = k;
    *used = (double)cgroup_value("memory.current", "memory.usage_in_bytes") / (1 << 20);
    ss_close(s);
    __asm__ __volatile__("" : : "r"(sum));
    return 0;
}

static int run(const char *path, double max_seconds, int rounds, int markdown) {
    static const config configs[NCONF] = {
        {"sequential", SS_SAMPLE_SEQUENTIAL, 0, 0},
        {"block 256 KiB, window 4", SS_SAMPLE_BLOCK_SHUFFLE, 256u << 10, 4},
        {"block 2 MiB, window 4", SS_SAMPLE_BLOCK_SHUFFLE, 2u << 20, 4},
        {"block 16 MiB, window 4", SS_SAMPLE_BLOCK_SHUFFLE, 16u << 20, 4},
        {"block 2 MiB, window 16", SS_SAMPLE_BLOCK_SHUFFLE, 2u << 20, 16},
        {"full shuffle", SS_SAMPLE_SHUFFLE, 0, 0},
    };
    double load0 = bench_loadavg();
    ss_store *s;
    if (ss_open(&s, path, 0)) return die("open");
    uint64_t n = ss_count(s), total_bytes = 0;
    ss_selection *all;
    if (ss_selection_all(&all, n)) return die("selection");
    uint64_t *o0 = malloc(n * sizeof *o0), *o1 = malloc(n * sizeof *o1);
    if (!o0 || !o1) return die("memory");
    for (uint64_t i = 0; i < n; i++) total_bytes += 2 * ss_length(s, 0, i);
    /* Quality figures come from the orders alone (the length index only). */
    quality_row q[NCONF];
    for (int c = 0; c < NCONF; c++) {
        if (make_order(o0, s, all, &configs[c], 0) || make_order(o1, s, all, &configs[c], 1))
            return 1;
        quality(o0, o1, n, &q[c].r_ep, &q[c].r_ix, &q[c].span, &q[c].neigh);
    }
    ss_close(s);
    FILE *f = fopen(path, "rb");
    long fsize = 0;
    if (f && fseek(f, 0, SEEK_END) == 0) fsize = ftell(f);
    if (f) fclose(f);
    uint64_t limit = cgroup_value("memory.max", "memory.limit_in_bytes");
    static double secs[NCONF][MAX_ROUNDS], eps[NCONF][MAX_ROUNDS], frac[NCONF][MAX_ROUNDS],
        used[NCONF][MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) /* the orders take turns, each read cold */
        for (int c = 0; c < NCONF; c++) {
            uint64_t k;
            if (epoch(path, all, &configs[c], o0, max_seconds, &k, &secs[c][r], &used[c][r]))
                return 1;
            eps[c][r] = (double)k / secs[c][r];
            frac[c][r] = (double)k / (double)n;
        }
    double load1 = bench_loadavg();
    char d[16];
    if (markdown)
        printf("%s, load average %.2f at the start, %.2f at the end; a %.0f MiB store (%" PRIu64
               " examples), memory cgroup limit %s%.0f MiB, each order read cold, at most %.0f s "
               "per epoch; medians (and ranges) of %d rounds in which the orders take turns:\n\n"
               "| order | epoch time | examples/s | r(epochs) | r(index) | batch span | "
               "neighbours |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
               bench_date(d, sizeof d), load0, load1, (double)fsize / (1 << 20), n,
               limit ? "" : "none found, ", (double)limit / (1 << 20), max_seconds, rounds);
    else
        printf("store %s: %" PRIu64 " examples, %.0f MiB of data, file %.0f MiB; memory cgroup "
               "limit: %s%.0f MiB; each order read cold (fadvise DONTNEED), at most %.0f s; "
               "median (range) of %d rounds\n\n| order | epoch time (s) | examples/s | cgroup mem "
               "(MiB) | r(epochs) | r(index) | batch span | neighbours |\n"
               "|---|---:|---:|---:|---:|---:|---:|---:|\n",
               path, n, (double)total_bytes / (1 << 20), (double)fsize / (1 << 20),
               limit ? "" : "none found, ", (double)limit / (1 << 20), max_seconds, rounds);
    for (int c = 0; c < NCONF; c++) {
        char ep[128], e1[96], e2[96];
        bench_mr fr = bench_stats(frac[c], rounds), rate = bench_stats(eps[c], rounds);
        bench_fmt(e2, sizeof e2, "%.0f", rate);
        if (fr.lo >= 1)
            bench_fmt(ep, sizeof ep, "%.1f s", bench_stats(secs[c], rounds));
        else /* extrapolated from the median rate */
            snprintf(ep, sizeof ep, "~%.0f s (extrapolated: %.0f%% in %.0f s)",
                     (double)n / rate.med, 100 * fr.med, bench_stats(secs[c], rounds).med);
        snprintf(e1, sizeof e1, "%.0f", bench_stats(used[c], rounds).med);
        if (markdown)
            printf("| %s | %s | %s | %.3f | %.3f | %.4f | %.3f |\n", configs[c].name, ep, e2,
                   q[c].r_ep, q[c].r_ix, q[c].span, q[c].neigh);
        else
            printf("| %s | %s | %s | %s | %.3f | %.3f | %.4f | %.3f |\n", configs[c].name, ep, e2,
                   e1, q[c].r_ep, q[c].r_ix, q[c].span, q[c].neigh);
    }
    if (!markdown) printf("load average: %.2f at the start, %.2f at the end\n", load0, load1);
    free(o0);
    free(o1);
    ss_selection_free(all);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "create") == 0)
        return create(argv[2], strtoull(argv[3], NULL, 10));
    if (argc >= 3 && strcmp(argv[1], "run") == 0) {
        double secs = 10;
        int rounds = 0, markdown = 0, bad = 0;
        for (int i = 3; i < argc; i++) {
            if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
                rounds = atoi(argv[++i]);
            else if (!strcmp(argv[i], "--markdown"))
                markdown = 1;
            else if (argv[i][0] != '-' && atof(argv[i]) > 0)
                secs = atof(argv[i]);
            else
                bad = 1;
        }
        rounds = bench_rounds(rounds, 5);
        if (!bad && rounds <= MAX_ROUNDS) return run(argv[2], secs, rounds, markdown);
    }
    fprintf(stderr, "usage: bench_shuffle_locality create PATH MB\n"
                    "       bench_shuffle_locality run PATH [SECONDS] [--rounds R] [--markdown]\n");
    return 2;
}
