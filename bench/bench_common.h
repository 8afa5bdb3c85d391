/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_common.h - what every README benchmark shares: a monotonic clock,
 * median and range of rounds, the load average and the date recorded with
 * each table, and SS_BENCH_QUICK (tiny sizes and 2 rounds: the smoke test of
 * bench/run_all.sh checks the tables' shape, never their values).
 *
 * Figures are medians of rounds in which seqstore and its baseline alternate
 * in the same run, reported with their range (a single best-of run let the
 * baselines swing 1.5-11.3 GB/s). */
#ifndef SS_BENCH_COMMON_H
#define SS_BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median, min and max of n > 0 values; v is left untouched. */
typedef struct bench_mr {
    double med, lo, hi;
} bench_mr;

static inline bench_mr bench_stats(const double *v, int n) {
    bench_mr r = {0, 0, 0};
    double *c = (double *)malloc((size_t)n * sizeof *c);
    if (!c || n <= 0) {
        free(c);
        return r;
    }
    memcpy(c, v, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, bench_cmp_double);
    r.med = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    r.lo = c[0];
    r.hi = c[n - 1];
    free(c);
    return r;
}

/* "12.3 (11.9–13.0)" with the printf format `f` for each number. */
static inline const char *bench_fmt(char *buf, size_t size, const char *f, bench_mr m) {
    char a[32], b[32], c[32];
    snprintf(a, sizeof a, f, m.med);
    snprintf(b, sizeof b, f, m.lo);
    snprintf(c, sizeof c, f, m.hi);
    if (snprintf(buf, size, "%s (%s–%s)", a, b, c) < 0) buf[0] = 0;
    return buf;
}

/* The 1-minute load average, or -1. */
static inline double bench_loadavg(void) {
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

/* Today's date (UTC) as YYYY-MM-DD. */
static inline const char *bench_date(char *buf, size_t size) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%d", &tm);
    return buf;
}

/* The line README puts above each table. */
static inline void bench_md_header(double load0, double load1, int rounds, const char *how) {
    char d[16];
    printf("%s, load average %.2f at the start, %.2f at the end; medians (and ranges) of %d "
           "rounds %s:\n\n",
           bench_date(d, sizeof d), load0, load1, rounds, how);
}

/* SS_BENCH_QUICK set and not "0": minimal sizes and rounds. */
static inline int bench_quick(void) {
    const char *q = getenv("SS_BENCH_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

/* Rounds from "--rounds R" style arguments: at least 1; 2 when quick and
 * not given. */
static inline int bench_rounds(int given, int dflt) {
    if (given > 0) return given;
    return bench_quick() ? 2 : dflt;
}

#endif
