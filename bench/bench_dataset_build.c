/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_dataset_build.c - the cost of `seqstore dataset build` (the manifest
 * step of a sharded or MPI conversion) against the number of shards and of
 * examples: S shards of E examples each (u16 tokens, 1..128 per example) are
 * written into DIR with source.shard K/S, then `SEQSTORE dataset build DIR`
 * (shards found and ordered by source.shard) and `SEQSTORE dataset build DIR
 * part-0 ... part-S-1` (named in order, as seqstore-mpi runs it) each run R
 * times, alternating; printed for each: the median wall and CPU seconds
 * (user + sys of the child), and the CPU per shard and per example.
 * Usage: bench_dataset_build SEQSTORE S E [R] [DIR]
 * Defaults: R = 3, DIR = $TMPDIR or /tmp (a fresh subdirectory, removed at
 * the end). A DIR that already holds such shards (a kept run's) is reused
 * and kept. */
#include "seqstore.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what) {
    fprintf(stderr, "bench_dataset_build: %s: %s\n", what, ss_error_message());
    exit(1);
}

static void write_shard(const char path[4200], uint32_t k, uint32_t n, uint64_t e) {
    ss_field f = {"tok", SS_U16, 1, 0, {0}};
    ss_schema sc = {1, &f};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
    ss_writer *w;
    if (ss_writer_create(&w, path, &sc, &o)) die(path);
    uint16_t buf[128];
    for (uint64_t i = 0; i < e; i++) {
        uint64_t len = 1 + (i * 2654435761u + k) % 128;
        for (uint64_t t = 0; t < len; t++) buf[t] = (uint16_t)(i + t);
        ss_value v = {buf, len};
        if (ss_writer_append(w, &v)) die(path);
    }
    char spec[32];
    snprintf(spec, sizeof spec, "%u/%u", k, n);
    if (ss_writer_set_attr(w, "source.shard", SS_ATTR_TEXT, spec, strlen(spec))) die(path);
    if (ss_writer_finish(w)) die(path);
    ss_writer_free(w);
    char lock[4300];
    snprintf(lock, sizeof lock, "%s-lock", path);
    unlink(lock);
}

/* Run argv with stdout to /dev/null; its wait status. */
static int run_named(char **argv) {
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) dup2(fd, 1);
        execv(argv[0], argv);
        _exit(127);
    }
    int st = -1;
    if (pid > 0) waitpid(pid, &st, 0);
    return st;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: bench_dataset_build SEQSTORE SHARDS EXAMPLES [ROUNDS] [DIR]\n");
        return 2;
    }
    const char *prog = argv[1];
    uint32_t n = (uint32_t)strtoul(argv[2], NULL, 10);
    uint64_t e = strtoull(argv[3], NULL, 10);
    int rounds = argc > 4 ? atoi(argv[4]) : 3;
    const char *tmp = argc > 5 ? argv[5] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char dir[4096], path[4200], cmd[8400];
    snprintf(path, sizeof path, "%s/part-00000-of-%05u.ss", tmp, n);
    int reuse = argc > 5 && access(path, F_OK) == 0;
    snprintf(dir, sizeof dir, reuse ? "%s" : "%s/bench-dsbuild-%d", tmp, (int)getpid());
    if (!reuse && mkdir(dir, 0777)) die(dir);
    double t0 = now();
    for (uint32_t k = 0; k < n && !reuse; k++) {
        snprintf(path, sizeof path, "%s/part-%05u-of-%05u.ss", dir, k, n);
        write_shard(path, k, n, e);
    }
    fprintf(stderr, "wrote %u shards of %llu examples in %.1f s\n", n, (unsigned long long)e,
            now() - t0);
    double wall[2][64], cpu[2][64];
    if (rounds > 64) rounds = 64;
    /* named: argv of its own (one `sh -c` string may not exceed 128 KiB) */
    char **named = calloc((size_t)n + 4, sizeof *named);
    if (!named) die("out of memory");
    named[0] = (char *)prog, named[1] = "dataset", named[2] = "build", named[3] = dir;
    for (uint32_t k = 0; k < n; k++)
        if (asprintf(&named[4 + k], "part-%05u-of-%05u.ss", k, n) < 0) die("out of memory");
    snprintf(cmd, sizeof cmd, "exec %s dataset build %s > /dev/null", prog, dir);
    for (int r = 0; r < rounds; r++)
        for (int m = 0; m < 2; m++) {
            struct rusage a, b;
            getrusage(RUSAGE_CHILDREN, &a);
            double w0 = now();
            int st = m ? run_named(named) : system(cmd);
            if (st != 0) {
                fprintf(stderr, "bench_dataset_build: dataset build (%s) exited with status %d; "
                                "the shards are kept in %s\n", m ? "named" : "found", st, dir);
                return 1;
            }
            wall[m][r] = now() - w0;
            getrusage(RUSAGE_CHILDREN, &b);
            cpu[m][r] = (double)(b.ru_utime.tv_sec - a.ru_utime.tv_sec) +
                        1e-6 * (double)(b.ru_utime.tv_usec - a.ru_utime.tv_usec) +
                        (double)(b.ru_stime.tv_sec - a.ru_stime.tv_sec) +
                        1e-6 * (double)(b.ru_stime.tv_usec - a.ru_stime.tv_usec);
        }
    for (uint32_t k = 0; k < n; k++) free(named[4 + k]);
    free(named);
    for (int m = 0; m < 2; m++) {
        qsort(wall[m], (size_t)rounds, sizeof *wall[m], cmp);
        qsort(cpu[m], (size_t)rounds, sizeof *cpu[m], cmp);
        double w = wall[m][rounds / 2], c = cpu[m][rounds / 2];
        printf("dataset build (%s): %u shards x %llu examples: wall %.3f s, cpu %.3f s (median "
               "of %d; %.1f us cpu per shard, %.2f ns per example)\n",
               m ? "named" : "found", n, (unsigned long long)e, w, c, rounds, 1e6 * c / n,
               1e9 * c / ((double)n * (double)e));
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!reuse && system(cmd) != 0) return 1;
    return 0;
}
