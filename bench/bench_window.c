/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_window.c - the window reader's throughput and bookkeeping cost.
 *
 *   bench_window [DIR] [--rounds R] [--markdown]
 *
 * --markdown prints README's table; SS_BENCH_QUICK=1 a small store, 2 rounds.
 *
 * 1. Batches of B=64 x W=1000 x C=21, i16 -> f32 with per-channel gain and
 *    offset (EDF digital -> physical), from a warm store: output bytes per
 *    second at the default, 1, 2, ... threads, against memcpy of the same
 *    number of bytes. R rounds (default 7); in each, every configuration's 40 batches
 *    follow 40 memcpys timed right before them, and the ratio is taken
 *    against that adjacent baseline; medians and ranges of the R rounds
 *    (40 batches once made the baseline swing 1.5-11.3 GB/s between runs).
 * 2. Bookkeeping per window (lanes, states, cursors; no hidden state, 1
 *    sample per window so that collation is negligible): ns per window,
 *    median and range of R rounds alternating its two modes. */
#include <seqstore.h>

#include "bench_common.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { C = 21, W = 1000, B = 64, NSEQ = 96, LEN = 12000 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int make_store(const char *path, uint64_t nseq, uint64_t len, uint64_t ch) {
    ss_field f[1] = {{"eeg", SS_I16, 1, 1, {ch, 0, 0, 0}}};
    ss_schema schema = {1, f};
    ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
    wo.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
    ss_writer *w;
    int rc = ss_writer_create(&w, path, &schema, &wo);
    if (rc) return rc;
    int16_t *x = malloc(len * ch * sizeof *x);
    for (uint64_t i = 0; i < nseq && !rc; i++) {
        for (uint64_t k = 0; k < len * ch; k++) x[k] = (int16_t)((k * 31 + i * 7) % 4000 - 2000);
        ss_value v = {x, len};
        rc = ss_writer_append(w, &v);
    }
    free(x);
    if (!rc) rc = ss_writer_finish(w);
    ss_writer_free(w);
    return rc;
}

static int die(int rc) {
    fprintf(stderr, "bench_window: %s: %s\n", ss_strerror(rc), ss_error_message());
    return 1;
}

/* Seconds for `nb` batches (epoch markers skipped); windows counted. */
static int run(ss_window_reader *r, int nb, double *secs, uint64_t *windows) {
    double t0 = now();
    uint64_t n = 0;
    for (int k = 0; k < nb;) {
        const ss_window_batch *b;
        int rc = ss_window_reader_next(&b, r);
        if (rc == SS_ITEROVER) continue; /* the end of an epoch */
        if (rc) return rc;
        n += b->active;
        rc = ss_window_reader_register(r, b, NULL);
        if (rc) return rc;
        k++;
    }
    *secs = now() - t0;
    *windows = n;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median, min and max of n values (sorted in place). */
static void stats(double *v, int n, double *med, double *lo, double *hi) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    *lo = v[0];
    *hi = v[n - 1];
}

static double loadavg(void) {
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

/* Bytes per second of `reps` memcpys of `bytes` (the baseline, timed right
 * before each reader measurement so that both see the same machine). */
static double memcpy_rate(float *dst, float *src, size_t bytes, int reps) {
    double t0 = now();
    for (int k = 0; k < reps; k++) {
        src[k] = (float)k;
        memcpy(dst, src, bytes);
    }
    return (double)bytes * reps / (now() - t0);
}

enum { MAX_ROUNDS = 64, REPS = 40, MAXCFG = 8 };

int main(int argc, char **argv) {
    const char *dir = "/tmp";
    int ROUNDS = 0, markdown = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            ROUNDS = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--markdown"))
            markdown = 1;
        else if (argv[i][0] != '-')
            dir = argv[i];
        else {
            fprintf(stderr, "usage: bench_window [DIR] [--rounds R] [--markdown]\n");
            return 2;
        }
    }
    ROUNDS = bench_rounds(ROUNDS, 7);
    if (ROUNDS > MAX_ROUNDS) return 2;
    int quick = bench_quick();
    FILE *out = markdown ? stderr : stdout; /* the plain report; --markdown's table on stdout */
    char path[4096], path2[4096];
    snprintf(path, sizeof path, "%s/bench_window.ss", dir);
    snprintf(path2, sizeof path2, "%s/bench_window_small.ss", dir);
    int rc = make_store(path, quick ? 8 : NSEQ, LEN, C);
    if (rc) return die(rc);
    ss_store *s;
    if ((rc = ss_open(&s, path, 0))) return die(rc);

    double gain[C], offset[C];
    for (int c = 0; c < C; c++) gain[c] = 0.1 + 0.01 * c, offset[c] = -c;
    size_t bytes = (size_t)B * W * C * sizeof(float);
    float *src = malloc(bytes), *dst = malloc(bytes);
    memset(src, 1, bytes);
    memset(dst, 0, bytes);
    double load0 = loadavg();
    fprintf(out,
            "batch B=%d W=%d C=%d i16 -> f32 with gain/offset: %.1f MB per batch; %d rounds of "
            "%d batches, each after %d memcpys of the same bytes\n",
            B, W, C, (double)bytes / 1e6, ROUNDS, REPS, REPS);
    /* configurations: threads 0 (the default), 1, 2, 4 ... up to the cores */
    int maxt = omp_get_max_threads(), th[MAXCFG], ncfg = 0;
    for (int t = 0; t <= maxt && ncfg < MAXCFG; t = t ? 2 * t : 1) th[ncfg++] = t;
    ss_window_reader *rd[MAXCFG];
    for (int k = 0; k < ncfg; k++) {
        ss_window_options o = SS_WINDOW_OPTIONS_INIT;
        o.window = W;
        o.lanes = B;
        o.mode = SS_WINDOW_SEQUENTIAL_RANDOM_START;
        o.shuffle = 1;
        o.out_dtype = SS_F32;
        o.gain = gain;
        o.offset = offset;
        o.n_gain = o.n_offset = C;
        o.threads = th[k];
        o.state_size = 256;
        o.state_dtype = SS_F32;
        o.flags = SS_WINDOW_FORGET_STATE;
        double secs;
        uint64_t nw;
        if ((rc = ss_window_reader_open(&rd[k], s, &o))) return die(rc);
        if ((rc = run(rd[k], 20, &secs, &nw))) return die(rc); /* warm the page cache */
    }
    static double mc[MAX_ROUNDS * MAXCFG], gbs[MAXCFG][MAX_ROUNDS], ratio[MAXCFG][MAX_ROUNDS];
    static double mbs[MAXCFG], mlo[MAXCFG], mhi[MAXCFG], rm[MAXCFG], rl[MAXCFG], rh[MAXCFG];
    for (int round = 0; round < ROUNDS; round++)
        for (int k = 0; k < ncfg; k++) { /* alternate: baseline, reader, baseline, ... */
            double base = memcpy_rate(dst, src, bytes, REPS), secs;
            uint64_t nw;
            if ((rc = run(rd[k], REPS, &secs, &nw))) return die(rc);
            mc[round * ncfg + k] = base / 1e9;
            gbs[k][round] = (double)bytes * REPS / secs / 1e9;
            ratio[k][round] = gbs[k][round] * 1e9 / base;
        }
    double med, lo, hi, rmed, rlo, rhi;
    stats(mc, ROUNDS * ncfg, &med, &lo, &hi);
    double mcmed = med, mclo = lo, mchi = hi;
    fprintf(out, "memcpy of the same bytes (1 thread): median %.2f GB/s (range %.2f-%.2f)\n", med,
            lo, hi);
    for (int k = 0; k < ncfg; k++) {
        char what[32];
        snprintf(what, sizeof what, th[k] ? "%d thread%s" : "default (threads = 0)", th[k],
                 th[k] > 1 ? "s" : "");
        stats(gbs[k], ROUNDS, &med, &lo, &hi);
        stats(ratio[k], ROUNDS, &rmed, &rlo, &rhi);
        mbs[k] = med, mlo[k] = lo, mhi[k] = hi, rm[k] = rmed, rl[k] = rlo, rh[k] = rhi;
        fprintf(out,
                "window reader, %s: median %.2f GB/s (%.2f-%.2f) = %.2fx memcpy (%.2f-%.2f), "
                "%.2f ms per batch\n",
                what, med, lo, hi, rmed, rlo, rhi, 1e3 * (double)bytes / (med * 1e9));
        ss_window_reader_free(rd[k]);
    }
    fprintf(out, "load average: %.2f at the start, %.2f at the end\n", load0, loadavg());
    ss_close(s);
    free(src);
    free(dst);

    /* bookkeeping: 1-sample windows, one channel, no hidden state */
    if ((rc = make_store(path2, 4096, 64, 1))) return die(rc);
    if ((rc = ss_open(&s, path2, 0))) return die(rc);
    static double ns[2][MAX_ROUNDS];
    for (int round = 0; round < ROUNDS; round++)
        for (int carry = 0; carry < 2; carry++) { /* the two modes take turns */
            ss_window_options o = SS_WINDOW_OPTIONS_INIT;
            o.window = 1;
            o.lanes = B;
            o.mode = SS_WINDOW_SEQUENTIAL_RANDOM_START;
            o.shuffle = 1;
            o.threads = 1;
            o.flags = carry ? 0 : SS_WINDOW_FORGET_STATE;
            ss_window_reader *r;
            if ((rc = ss_window_reader_open(&r, s, &o))) return die(rc);
            double secs;
            uint64_t nw;
            if ((rc = run(r, quick ? 200 : 2000, &secs, &nw))) return die(rc);
            if ((rc = run(r, quick ? 2000 : 20000, &secs, &nw))) return die(rc);
            ns[carry][round] = 1e9 * secs / (double)nw;
            ss_window_reader_free(r);
        }
    char b1[96];
    for (int carry = 0; carry < 2; carry++)
        fprintf(out, "bookkeeping per window (B=%d, W=1, %s): %s ns\n", B,
                carry ? "next + register" : "next, auto-release",
                bench_fmt(b1, sizeof b1, "%.0f", bench_stats(ns[carry], ROUNDS)));
    if (markdown) {
        char b2[96];
        bench_md_header(load0, loadavg(), ROUNDS, "alternating 40 memcpys and 40 batches");
        printf("| measure | figure | target |\n| --- | --- | --- |\n");
        printf("| `memcpy` of the same bytes, 1 thread | %s GB/s | |\n",
               bench_fmt(b1, sizeof b1, "%.1f", (bench_mr){mcmed, mclo, mchi}));
        for (int k = 0; k < ncfg; k++) {
            char what[32];
            snprintf(what, sizeof what, th[k] ? "%d thread%s" : "default (threads = 0)", th[k],
                     th[k] > 1 ? "s" : "");
            printf("| window reader, %s | %s GB/s = **%s× memcpy** (%.2f ms per batch) | %s |\n",
                   what, bench_fmt(b1, sizeof b1, "%.1f", (bench_mr){mbs[k], mlo[k], mhi[k]}),
                   bench_fmt(b2, sizeof b2, "%.2f", (bench_mr){rm[k], rl[k], rh[k]}),
                   1e3 * (double)bytes / (mbs[k] * 1e9), th[k] == 1 ? "≥ 0.7×" : "");
        }
        for (int carry = 0; carry < 2; carry++)
            printf("| bookkeeping per window (lanes, cursors, states; no hidden-state copy; %s) | "
                   "**%s ns** | < 1 µs |\n",
                   carry ? "`next` + `register`" : "`next`, auto-release",
                   bench_fmt(b1, sizeof b1, "%.0f", bench_stats(ns[carry], ROUNDS)));
    }
    ss_close(s);
    char lock[4200];
    for (int k = 0; k < 2; k++) { /* the stores and their LMDB lock files */
        snprintf(lock, sizeof lock, "%s-lock", k ? path2 : path);
        remove(k ? path2 : path);
        remove(lock);
    }
    return 0;
}
