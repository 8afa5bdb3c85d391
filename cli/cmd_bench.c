/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_bench.c - `seqstore bench`: how fast this store reads on this machine. */
#include "commands.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* 10^9 random reads take minutes; more is a typo, not a measurement */
#define SS_BENCH_MAX_QUERIES 1000000000ull
/* a scan of less than this runs from the CPU caches: no fair memcpy comparison */
#define SS_BENCH_MIN_SCAN_BYTES (64ull << 20)

static double ss_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t ss_next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Random ss_get touching each example's first and last byte: ns per call. */
static double ss_bench_random(const ss_store *s, uint32_t field, uint64_t queries, uint64_t *sum) {
    uint64_t n = ss_count(s), state = 1;
    double t0 = ss_now();
    for (uint64_t q = 0; q < queries; q++) {
        ss_view v;
        if (ss_get(&v, s, field, ss_next_random(&state) % n)) return -1;
        const unsigned char *d = v.data;
        if (v.length) *sum += d[0] + d[v.length * v.row_bytes - 1];
    }
    return (ss_now() - t0) * 1e9 / (double)queries;
}

/* Every example copied into one buffer; the same bytes memcpy'd from memory. */
static int ss_bench_scan(const ss_store *s, uint32_t field, double *scan_gbs, double *memcpy_gbs) {
    uint64_t n = ss_count(s), bytes = ss_flat_size(s, field) * ss_field_row_bytes(s, field);
    const uint64_t cap = 64ull << 20;
    unsigned char *dst = malloc(cap), *src = malloc(cap);
    if (!dst || !src) {
        free(dst);
        free(src);
        return SS_ENOMEM;
    }
    memset(src, 1, cap);
    double best_scan = 1e30, best_copy = 1e30;
    for (int round = 0; round < 3; round++) {
        double t0 = ss_now();
        uint64_t at = 0;
        for (uint64_t i = 0; i < n; i++) {
            ss_view v;
            if (ss_get(&v, s, field, i)) break;
            uint64_t b = v.length * v.row_bytes;
            if (b > cap) b = cap;
            if (at + b > cap) at = 0;
            memcpy(dst + at, v.data, b);
            at += b;
        }
        double t1 = ss_now();
        for (uint64_t done = 0; done < bytes; done += cap)
            memcpy(dst, src, bytes - done < cap ? bytes - done : cap);
        double t2 = ss_now();
        if (round && t1 - t0 < best_scan) best_scan = t1 - t0; /* round 0 warms the map */
        if (round && t2 - t1 < best_copy) best_copy = t2 - t1;
    }
    free(dst);
    free(src);
    *scan_gbs = (double)bytes / best_scan / 1e9;
    *memcpy_gbs = (double)bytes / best_copy / 1e9;
    return 0;
}

int ss__cmd_bench(int argc, char **argv) {
    static const struct option longopts[] = {
        {"field", required_argument, 0, 'f'}, {"queries", required_argument, 0, 'q'},
        {"json", no_argument, 0, 'j'},        {"nolock", no_argument, 0, 'n'},
        {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
    const char *fname = NULL;
    uint64_t queries = 1000000;
    int json = 0, c;
    unsigned flags = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:q:h", longopts, NULL)) != -1) {
        if (c == 'f')
            fname = optarg;
        else if (c == 'q') {
            if (ss__cli_number("bench", "--queries", optarg, 1, SS_BENCH_MAX_QUERIES, &queries))
                return SS_EXIT_USAGE;
        } else if (c == 'j')
            json = 1;
        else if (c == 'n')
            flags |= SS_OPEN_NOLOCK;
        else if (c == 'h') {
            printf(
                "usage: seqstore bench STORE [--field F] [--queries N] [--json] [--nolock]\n\n"
                "Measure this store on this machine: open time, random ss_get (touching\n"
                "each example's first and last byte) in ns per call, and a sequential\n"
                "scan (ss_get + memcpy of every example) against memcpy of the same\n"
                "bytes in the same run. The first pass warms the page cache. A field of\n"
                "less than 64 MiB fits in caches: its scan is not compared with memcpy.\n"
                "  --field F    the field to read (default: the first sequence field)\n"
                "  --queries N  random reads, 1 to 10^9 (default 1000000)\n"
                "  --json       one JSON object on stdout (formatted as 'info --json')\n"
                "  --nolock     open without a lock file (read-only media; no writer may run)\n");
            return SS_EXIT_OK;
        } else
            return ss__cli_bad_option("bench", c, argv);
    }
    if (optind != argc - 1) return ss__cli_usage_error("bench", "expected one STORE");
    const char *path = argv[optind];
    double t0 = ss_now();
    ss_store *s;
    if (ss__cli_open(&s, "bench", path, flags)) return SS_EXIT_ERROR;
    double open_ms = (ss_now() - t0) * 1e3;
    uint32_t field = 0;
    if (fname && ss_field_index(&field, s, fname)) {
        ss_close(s);
        return ss__cli_store_error("bench", "--field %s", fname);
    }
    if (ss_count(s) == 0) {
        ss_close(s);
        fprintf(stderr, "seqstore bench: %s holds no examples\n", path);
        return SS_EXIT_ERROR;
    }
    double scan = 0, copy = 0;
    uint64_t sum = 0;
    int rc = ss_bench_scan(s, (uint32_t)field, &scan, &copy);
    double ns = rc ? -1 : ss_bench_random(s, (uint32_t)field, queries, &sum);
    ss_field info;
    ss_field_info(&info, s, (uint32_t)field);
    if (rc || ns < 0) {
        ss_close(s);
        return ss__cli_store_error("bench", "%s", path);
    }
    uint64_t bytes = ss_flat_size(s, (uint32_t)field) * ss_field_row_bytes(s, (uint32_t)field);
    int measurable = bytes >= SS_BENCH_MIN_SCAN_BYTES;
    if (json) {
        json_t *o = json_object();
        ss__json_set_text(o, "store", path, strlen(path));
        ss__json_set_text(o, "field", info.name, strlen(info.name));
        json_object_set_new(o, "examples", json_integer((json_int_t)ss_count(s)));
        json_object_set_new(o, "field_bytes", json_integer((json_int_t)bytes));
        json_object_set_new(o, "open_ms", json_real(open_ms));
        json_object_set_new(o, "random_get_ns", json_real(ns));
        json_object_set_new(o, "random_reads", json_integer((json_int_t)queries));
        /* too small to measure: null, not a meaningless ratio */
        json_object_set_new(o, "scan_gbps", measurable ? json_real(scan) : json_null());
        json_object_set_new(o, "memcpy_gbps", measurable ? json_real(copy) : json_null());
        json_object_set_new(o, "checksum", json_integer((json_int_t)(sum & INT64_MAX)));
        ss__json_print(o);
        json_decref(o);
    } else {
        uint64_t n = ss_count(s);
        printf("%s, field '%s', %" PRIu64 " example%s\n"
               "  open                 %8.3f ms (cold or warm, as the page cache is)\n"
               "  random ss_get        %8.1f ns per example (%" PRIu64 " read%s)\n",
               path, info.name, n, n == 1 ? "" : "s", open_ms, ns, queries,
               queries == 1 ? "" : "s");
        if (measurable)
            printf(
                "  sequential scan      %8.2f GB/s = %.2fx memcpy of the same bytes (%.2f GB/s)\n",
                scan, scan / copy, copy);
        else
            printf("  sequential scan      not measured: the field holds %" PRIu64 " bytes, too "
                   "few to measure (it needs %llu MiB to exceed the caches)\n",
                   bytes, SS_BENCH_MIN_SCAN_BYTES >> 20);
    }
    ss_close(s);
    return SS_EXIT_OK;
}
