/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_loader.c - the loader's steady state: heap allocations per batch
 * (malloc/calloc/realloc counted by interposing them in this program) and
 * the latency of ss_loader_next() when prefetching keeps up with a simulated
 * training step (a sleep: the CPU thread waits for the accelerator), with and without per-example
 * transforms.
 *
 * usage: bench_loader [--rounds R] [--markdown] [examples] [batch] [threads] [prefetch] [step_us]
 *        defaults      5            20000      64      2         4          2000
 *
 * Then the raw loader's examples/s with 1 and with 2 worker threads while
 * the caller only calls next() (an idle caller): the 2-workers-vs-1 figure.
 *
 * R rounds (default 5) each run the six configurations in turn (so load
 * from other processes hits them alike); the figures are the median and
 * range over the rounds, with the load average at the start and end.
 * --markdown prints README's Loader table. SS_BENCH_QUICK=1: 2000 examples,
 * 2 rounds. The store goes to $TMPDIR (default /tmp) and is deleted. */
#include "seqstore.h"

#include "bench_common.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ----------------------------------------------------- counting allocator */

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

static atomic_ulong g_allocs;

void *malloc(size_t n) {
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t m) {
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n) {
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    return __libc_realloc(p, n);
}

void free(void *p) {
    __libc_free(p);
}

/* ---------------------------------------------------------------- helpers */

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The training step: the CPU thread mostly waits for the accelerator. */
static void step_wait_us(double us) {
    struct timespec ts = {0, (long)(us * 1e3)};
    nanosleep(&ts, NULL);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint64_t rnd(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#define DIE(expr)                                                                                  \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ < 0) {                                                                             \
            fprintf(stderr, "%s: %s\n", #expr, ss_error_message());                                \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void make_store(const char *path, uint64_t n) {
    ss_field f[2] = {{"tok", SS_U16, 1, 0, {0}}, {"label", SS_I32, 0, 0, {0}}};
    ss_schema schema = {2, f};
    ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
    wo.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
    ss_writer *w;
    DIE(ss_writer_create(&w, path, &schema, &wo));
    uint64_t s = 1;
    uint16_t tok[512];
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = 64 + rnd(&s) % 449;
        for (uint64_t t = 0; t < len; t++) tok[t] = (uint16_t)(rnd(&s) % 30000);
        int32_t label = (int32_t)(rnd(&s) % 10);
        ss_value v[2] = {{tok, len}, {&label, 1}};
        DIE(ss_writer_append(w, v));
    }
    DIE(ss_writer_finish(w));
    ss_writer_free(w);
}

/* One configuration's figures in one round. */
typedef struct figures {
    double allocs, median_us, p99_us, max_us, eps;
} figures;

static figures run(const ss_store *s, uint64_t batch, uint32_t threads, uint32_t prefetch,
                   double step_us, const ss_pipeline *p) {
    ss_collate_field f[2] = {SS_COLLATE_FIELD_INIT, SS_COLLATE_FIELD_INIT};
    f[0].field = 0; /* "tok" (schema above) */
    f[0].dtype = SS_I64;
    f[0].mask = SS_MASK_U8;
    f[1].field = 1; /* "label" */
    f[1].dtype = SS_I64;
    ss_loader_options o = SS_LOADER_OPTIONS_INIT;
    ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    o.sampler = &so;
    o.batch = &bo;
    bo.batch_size = batch;
    o.fields = f;
    o.nfields = 2;
    so.kind = SS_SAMPLE_SHUFFLE;
    so.seed = 1;
    o.threads = threads;
    o.prefetch = prefetch;
    o.infinite = 1;
    o.transforms = p;
    ss_loader *l;
    DIE(ss_loader_open(&l, s, &o));
    uint64_t per_epoch = ss_loader_count(l), warm = per_epoch + 8, measure = 2 * per_epoch;
    const ss_loader_batch *b;
    for (uint64_t k = 0; k < warm; k++) DIE(ss_loader_next(&b, l));
    double *lat = __libc_malloc(measure * sizeof *lat);
    unsigned long a0 = atomic_load(&g_allocs);
    double t0 = now_us(), rows = 0;
    for (uint64_t k = 0; k < measure; k++) {
        double a = now_us();
        DIE(ss_loader_next(&b, l));
        lat[k] = now_us() - a;
        rows += (double)b->rows;
        if (step_us > 0) step_wait_us(step_us);
    }
    double t1 = now_us();
    unsigned long allocs = atomic_load(&g_allocs) - a0;
    qsort(lat, measure, sizeof *lat, cmp_d);
    figures fig = {(double)allocs / (double)measure, lat[measure / 2], lat[measure * 99 / 100],
                   lat[measure - 1], rows / ((t1 - t0) / 1e6)};
    __libc_free(lat);
    ss_loader_free(l);
    return fig;
}

/* Configurations 0-3 use `threads` workers; 4 and 5 are the raw loader with
 * 1 and 2 workers and an idle caller (it only calls next()), whose examples/s
 * give the 2-workers-vs-1 figure. */
enum { NCONF = 6, NLAT = 4, MAX_ROUNDS = 64 };

static const char *const conf_plain[NCONF] = {"no step (raw)",      "step (keeps up)",
                                              "crop+mask, no step", "crop+mask, step",
                                              "raw, 1 worker",      "raw, 2 workers"};

static void column(double *out, figures f[][MAX_ROUNDS], int c, int R, size_t off) {
    for (int r = 0; r < R; r++) out[r] = *(const double *)((const char *)&f[c][r] + off);
}

static void print_plain(figures f[][MAX_ROUNDS], int R, uint64_t measure) {
    char b[5][96];
    double x[MAX_ROUNDS];
    for (int c = 0; c < NCONF; c++) {
        column(x, f, c, R, offsetof(figures, allocs));
        bench_fmt(b[0], sizeof b[0], "%.3f", bench_stats(x, R));
        column(x, f, c, R, offsetof(figures, median_us));
        bench_fmt(b[1], sizeof b[1], "%.1f", bench_stats(x, R));
        column(x, f, c, R, offsetof(figures, p99_us));
        bench_fmt(b[2], sizeof b[2], "%.1f", bench_stats(x, R));
        column(x, f, c, R, offsetof(figures, max_us));
        bench_fmt(b[3], sizeof b[3], "%.1f", bench_stats(x, R));
        column(x, f, c, R, offsetof(figures, eps));
        bench_fmt(b[4], sizeof b[4], "%.0f", bench_stats(x, R));
        printf("%-20s %llu batches (2 epochs)  allocs/batch %s  next() median %s us  p99 %s us  "
               "max %s us  %s examples/s\n",
               conf_plain[c], (unsigned long long)measure, b[0], b[1], b[2], b[3], b[4]);
    }
}

/* Examples per second with 2 workers over 1, round by round. */
static bench_mr scaling(figures f[][MAX_ROUNDS], int R) {
    double x[MAX_ROUNDS];
    for (int r = 0; r < R; r++) x[r] = f[5][r].eps / f[4][r].eps;
    return bench_stats(x, R);
}

/* The rows of README's "Loader" table. */
static void print_markdown(figures f[][MAX_ROUNDS], int R, double step_us) {
    static const char *const name[NCONF] = {
        "no training step", "%.0f ms training step (prefetch keeps up)",
        "random crop + token masking, no step", "random crop + token masking, %.0f ms step"};
    char b[3][96], what[96];
    double x[MAX_ROUNDS];
    printf("| run | allocations per batch | `next()` median | p99 |\n| --- | --- | --- | --- |\n");
    for (int c = 0; c < NLAT; c++) {
        snprintf(what, sizeof what, name[c], step_us / 1000);
        column(x, f, c, R, offsetof(figures, allocs));
        bench_fmt(b[0], sizeof b[0], "%.3f", bench_stats(x, R));
        column(x, f, c, R, offsetof(figures, median_us));
        bench_fmt(b[1], sizeof b[1], "%.1f", bench_stats(x, R));
        column(x, f, c, R, offsetof(figures, p99_us));
        bench_fmt(b[2], sizeof b[2], "%.0f", bench_stats(x, R));
        printf("| %s | %s | %s µs | %s µs |\n", what, b[0], b[1], b[2]);
    }
    double x1[MAX_ROUNDS], x2[MAX_ROUNDS];
    for (int r = 0; r < R; r++) x1[r] = f[4][r].eps, x2[r] = f[5][r].eps;
    printf(
        "\n| workers, idle caller, no step | examples/s | 2 workers vs 1 |\n| --- | --- | --- |\n");
    printf("| 1 | %s | |\n", bench_fmt(b[0], sizeof b[0], "%.0f", bench_stats(x1, R)));
    printf("| 2 | %s | **%s×** |\n", bench_fmt(b[0], sizeof b[0], "%.0f", bench_stats(x2, R)),
           bench_fmt(b[1], sizeof b[1], "%.2f", scaling(f, R)));
}

int main(int argc, char **argv) {
    int rounds = 0, markdown = 0, npos = 0;
    const char *pos[5] = {NULL, NULL, NULL, NULL, NULL};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--markdown"))
            markdown = 1;
        else if (npos < 5 && argv[i][0] != '-')
            pos[npos++] = argv[i];
        else {
            fprintf(stderr, "usage: bench_loader [--rounds R] [--markdown] [examples] [batch] "
                            "[threads] [prefetch] [step_us]\n");
            return 2;
        }
    }
    int R = bench_rounds(rounds, 5);
    uint64_t n = pos[0] ? strtoull(pos[0], NULL, 10) : 20000;
    if (bench_quick() && n > 2000) n = 2000; /* SS_BENCH_QUICK caps given sizes too */
    uint64_t batch = pos[1] ? strtoull(pos[1], NULL, 10) : 64;
    uint32_t threads = pos[2] ? (uint32_t)atoi(pos[2]) : 2;
    uint32_t prefetch = pos[3] ? (uint32_t)atoi(pos[3]) : 4;
    double step = pos[4] ? atof(pos[4]) : 2000;
    if (R > MAX_ROUNDS || n == 0 || batch == 0) return 2;
    const char *dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[4096], lock[4200];
    snprintf(path, sizeof path, "%s/bench_loader_%d.ss", dir, (int)getpid());
    snprintf(lock, sizeof lock, "%s-lock", path);
    double load0 = bench_loadavg();
    make_store(path, n);
    ss_store *s;
    DIE(ss_open(&s, path, 0));
    if (!markdown)
        printf("store: %llu examples of 64..512 u16 tokens; batch %llu, %u worker thread(s), "
               "prefetch %u, step %.0f us; median (range) of %d rounds\n",
               (unsigned long long)n, (unsigned long long)batch, threads, prefetch, step, R);
    ss_pipeline *p;
    DIE(ss_pipeline_create(&p));
    ss_transform t;
    DIE(ss_transform_random_crop(&t, 0, 256));
    DIE(ss_pipeline_add(p, &t));
    ss_token_mask_options mo = SS_TOKEN_MASK_OPTIONS_INIT;
    mo.mask_value = 1;
    mo.vocab = 30000;
    DIE(ss_transform_token_mask(&t, 0, &mo));
    DIE(ss_pipeline_add(p, &t));
    static figures f[NCONF][MAX_ROUNDS];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < NCONF; c++)
            f[c][r] = c >= NLAT
                          ? run(s, batch, (uint32_t)(c - NLAT + 1), prefetch, 0, NULL)
                          : run(s, batch, threads, prefetch, c % 2 ? step : 0, c >= 2 ? p : NULL);
    double load1 = bench_loadavg();
    uint64_t per_epoch = (n + batch - 1) / batch;
    if (markdown) {
        bench_md_header(load0, load1, R, "in which the six runs take turns");
        print_markdown(f, R, step);
    } else {
        print_plain(f, R, 2 * per_epoch);
        char b[96];
        printf("2 workers vs 1, idle caller: %sx the examples/s\n",
               bench_fmt(b, sizeof b, "%.2f", scaling(f, R)));
        printf("load average: %.2f at the start, %.2f at the end\n", load0, load1);
    }
    ss_pipeline_free(p);
    ss_close(s);
    unlink(path);
    unlink(lock);
    return 0;
}
