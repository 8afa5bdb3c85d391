/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_loader_rss.c - a rank's loader memory against the dataset's size:
 * for a store of N examples of a fixed u8 field x and a u8 sequence t of
 * 1-4 steps (made here, quickly), the anonymous memory (RssAnon) a shuffled
 * loader adds at rank 0 of 8 once its first batch is out, per global
 * example, and the time of a state save, of its restore, and of the first
 * batch after it: fixed-size batches of 256 of x (SHUFFLE, then
 * BLOCK_SHUFFLE with blocks of 1024 examples and windows of 4), then
 * token-budget batches of t (max_tokens 1024, SHUFFLE).
 * Usage: bench_loader_rss [-d DIR] N...   (e.g. 1000000 10000000)
 * Each N runs in a child process, so that one's memory does not hide in the
 * next's. Files are deleted at the end. */
#include "seqstore.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what) {
    fprintf(stderr, "bench_loader_rss: %s: %s\n", what, ss_error_message());
    exit(1);
}

/* RssAnon of this process, in bytes. */
static uint64_t rss_anon(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    uint64_t kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "RssAnon: %lu", (unsigned long *)&kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024;
}

/* Heap bytes in use (malloc's arenas and its own maps): what the loader
 * allocates, without the pages the heap held already. */
static uint64_t heap_used(void) {
    struct mallinfo2 m = mallinfo2();
    return (uint64_t)m.uordblks + (uint64_t)m.hblkhd;
}

static void write_store(const char *path, uint64_t n) {
    ss_field f[2] = {{"x", SS_U8, 0, 0, {0}}, {"t", SS_U8, 1, 0, {0}}};
    ss_schema sc = {2, f};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
    ss_writer *w;
    if (ss_writer_create(&w, path, &sc, &o)) die(path);
    for (uint64_t i = 0; i < n; i++) {
        uint8_t b[4] = {(uint8_t)i, 1, 2, 3};
        ss_value v[2] = {{b, 1}, {b, 1 + i % 4}};
        if (ss_writer_append(w, v)) die(path);
    }
    if (ss_writer_finish(w)) die(path);
    ss_writer_free(w);
}

static void measure(const char *path, uint64_t n, ss_sampler_kind kind, int tokens) {
    ss_store *s;
    if (ss_open(&s, path, 0)) die(path);
    uint64_t before = rss_anon(), heap0 = heap_used();
    ss_loader_options lo = SS_LOADER_OPTIONS_INIT;
    ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    so.kind = kind, so.seed = 1, so.world_size = 8, so.rank = 0;
    if (kind == SS_SAMPLE_BLOCK_SHUFFLE) so.block_size = 1024, so.window_blocks = 4;
    ss_collate_field cf = SS_COLLATE_FIELD_INIT;
    cf.field = tokens ? 1 : 0;
    if (tokens)
        bo.max_tokens = 1024;
    else
        bo.batch_size = 256;
    lo.sampler = &so, lo.batch = &bo, lo.fields = &cf, lo.nfields = 1;
    ss_loader *l;
    double t0 = now();
    if (ss_loader_open(&l, s, &lo)) die("loader");
    const ss_loader_batch *b;
    if (ss_loader_next(&b, l)) die("next");
    double t_open = now() - t0;
    uint64_t after = rss_anon(), heap = heap_used() - heap0;
    size_t cap = ss_loader_state_size(l), len;
    void *buf = malloc(cap);
    t0 = now();
    if (ss_loader_state_save(buf, cap, &len, l)) die("save");
    double t_save = now() - t0;
    t0 = now();
    if (ss_loader_state_load(l, buf, len)) die("load");
    double t_load = now() - t0;
    t0 = now();
    if (ss_loader_next(&b, l)) die("next after load");
    double t_next = now() - t0;
    printf("%11llu examples, %-13s: loader RssAnon %8.1f kB (%.4f bytes per global example), "
           "heap %.1f kB, open + first batch %.4f s, state %zu bytes: save %.1f us, restore "
           "%.1f us, next batch %.1f us\n",
           (unsigned long long)n,
           tokens ? "tokens" : kind == SS_SAMPLE_SHUFFLE ? "SHUFFLE" : "BLOCK_SHUFFLE",
           (double)(after - before) / 1e3, (double)(after - before) / (double)n,
           (double)heap / 1e3, t_open, len,
           t_save * 1e6, t_load * 1e6, t_next * 1e6);
    fflush(stdout);
    free(buf);
    ss_loader_free(l);
    ss_close(s);
}

int main(int argc, char **argv) {
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    int i = 1;
    if (argc > 2 && !strcmp(argv[1], "-d")) dir = argv[2], i = 3;
    for (; i < argc; i++) {
        uint64_t n = strtoull(argv[i], NULL, 10);
        char path[4200];
        snprintf(path, sizeof path, "%s/bench_loader_rss.%d.ss", dir, (int)getpid());
        write_store(path, n);
        for (int k = 0; k < 3; k++) {
            pid_t pid = fork();
            if (pid == 0) {
                measure(path, n, k == 1 ? SS_SAMPLE_BLOCK_SHUFFLE : SS_SAMPLE_SHUFFLE, k == 2);
                _exit(0);
            }
            int st;
            waitpid(pid, &st, 0);
            if (!WIFEXITED(st) || WEXITSTATUS(st)) {
                unlink(path);
                return 1;
            }
        }
        unlink(path);
    }
    return 0;
}
