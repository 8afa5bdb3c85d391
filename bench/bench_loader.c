/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_loader.c - the loader's steady state: heap allocations per batch
 * (malloc/calloc/realloc counted by interposing them in this program) and
 * the latency of ss_loader_next() when prefetching keeps up with a simulated
 * training step (a sleep: the CPU thread waits for the accelerator), with and without per-example
 * transforms.
 *
 * usage: bench_loader [examples] [batch] [threads] [prefetch] [step_us]
 *        defaults      20000      64      2         4          2000 */
#include "seqstore.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static void run(const ss_store *s, const char *what, uint64_t batch, uint32_t threads,
                uint32_t prefetch, double step_us, const ss_pipeline *p) {
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
    uint64_t per_epoch = ss_loader_batches(l), warm = per_epoch + 8, measure = 2 * per_epoch;
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
    printf("%-22s batches %6llu (2 epochs, crossing epoch boundaries)  allocs/batch %.3f  "
           "next() median %7.1f us  p99 %7.1f us  max %8.1f us  %9.0f examples/s\n",
           what, (unsigned long long)measure, (double)allocs / (double)measure, lat[measure / 2],
           lat[measure * 99 / 100], lat[measure - 1], rows / ((t1 - t0) / 1e6));
    __libc_free(lat);
    ss_loader_free(l);
}

int main(int argc, char **argv) {
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000;
    uint64_t batch = argc > 2 ? strtoull(argv[2], NULL, 10) : 64;
    uint32_t threads = argc > 3 ? (uint32_t)atoi(argv[3]) : 2;
    uint32_t prefetch = argc > 4 ? (uint32_t)atoi(argv[4]) : 4;
    double step = argc > 5 ? atof(argv[5]) : 2000;
    const char *path = "/tmp/bench_loader.ss";
    make_store(path, n);
    ss_store *s;
    DIE(ss_open(&s, path, 0));
    printf("store: %llu examples of 64..512 u16 tokens; batch %llu, %u worker thread(s), "
           "prefetch %u\n",
           (unsigned long long)n, (unsigned long long)batch, threads, prefetch);
    run(s, "no step (raw)", batch, threads, prefetch, 0, NULL);
    run(s, "step (keeps up)", batch, threads, prefetch, step, NULL);
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
    run(s, "crop+mask, no step", batch, threads, prefetch, 0, p);
    run(s, "crop+mask, step", batch, threads, prefetch, step, p);
    ss_pipeline_free(p);
    ss_close(s);
    return 0;
}
