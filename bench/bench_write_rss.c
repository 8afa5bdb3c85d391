/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_write_rss.c - the writer's memory: peak RSS while writing stores of
 * different sizes (default 1 M and 10 M examples). The examples' bytes are
 * streamed to the file, but the writer keeps per-example bookkeeping until
 * finish, so the peak grows with the number of examples (about 50 bytes
 * each). Each size is written by its own child process, so that each peak
 * (wait4's ru_maxrss, and the child's VmHWM) is separate; the child also
 * reports its peak before writing (the program's own floor).
 * Usage: bench_write_rss [-l MAXLEN] [-d DIR] [-r ROUNDS] [--markdown] [N ...]
 * Defaults: lengths uniform in 1..64 u16 tokens, DIR = $TMPDIR or /tmp,
 * N = 1000000 10000000 (SS_BENCH_QUICK=1: 20000 200000), 5 rounds, each
 * writing every size in turn; figures are medians (and ranges) over the
 * rounds, with the load average at the start and end. Default writer
 * options (commit every 64 MiB). --markdown prints README's table. The
 * stores are deleted at the end. */
#include "seqstore.h"

#include "bench_common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    return bench_now();
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* VmHWM of this process in KiB, from /proc/self/status; 0 if unknown. */
static uint64_t vm_hwm_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kib = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %llu kB", &kib) == 1) break;
    fclose(f);
    return kib;
}

typedef struct report {
    uint64_t hwm_before_kib, hwm_after_kib, data_bytes, file_bytes;
    double seconds;
    int ok;
} report;

static void child(const char *path, uint64_t n, uint64_t maxlen, int fd) {
    report r = {0, 0, 0, 0, 0, 0};
    const ss_field f = {"tokens", SS_U16, 1, 0, {0}};
    const ss_schema schema = {1, &f};
    uint16_t *buf = malloc(maxlen * sizeof *buf);
    for (uint64_t k = 0; k < maxlen; k++) buf[k] = (uint16_t)k;
    r.hwm_before_kib = vm_hwm_kib();
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE;
    ss_writer *w;
    double t0 = now();
    int rc = ss_writer_create(&w, path, &schema, &o);
    uint64_t s = n;
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        uint64_t len = 1 + splitmix(&s) % maxlen;
        buf[0] = (uint16_t)i;
        ss_value v = {buf, len};
        rc = ss_writer_append(w, &v);
        r.data_bytes += len * 2;
    }
    if (rc == 0) rc = ss_writer_finish(w);
    ss_writer_free(w);
    r.seconds = now() - t0;
    r.hwm_after_kib = vm_hwm_kib();
    struct stat st;
    if (stat(path, &st) == 0) r.file_bytes = (uint64_t)st.st_size;
    r.ok = rc == 0;
    if (rc) fprintf(stderr, "bench_write_rss: %s\n", ss_error_message());
    if (write(fd, &r, sizeof r) != sizeof r) _exit(2);
    free(buf);
    _exit(rc ? 1 : 0);
}

/* Writes `n` examples in a child process; its report and peak RSS (MiB). */
static int write_in_child(const char *path, uint64_t n, uint64_t maxlen, report *r, double *peak) {
    int p[2];
    if (pipe(p) != 0) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        close(p[0]);
        child(path, n, maxlen, p[1]);
    }
    close(p[1]);
    int status;
    struct rusage ru;
    memset(r, 0, sizeof *r);
    ssize_t got = read(p[0], r, sizeof *r);
    close(p[0]);
    char lock[4200];
    snprintf(lock, sizeof lock, "%s-lock", path);
    unlink(path);
    unlink(lock);
    if (wait4(pid, &status, 0, &ru) != pid || got != (ssize_t)sizeof *r || !r->ok) {
        fprintf(stderr, "bench_write_rss: child for %llu examples failed\n", (unsigned long long)n);
        return -1;
    }
    *peak = (double)ru.ru_maxrss / 1024.0; /* ru_maxrss is in KiB on Linux */
    return 0;
}

enum { MAX_SIZES = 16, MAX_ROUNDS = 64 };

static void usage(void) {
    fprintf(stderr,
            "usage: bench_write_rss [-l MAXLEN] [-d DIR] [-r ROUNDS] [--markdown] [N ...]\n");
    exit(2);
}

int main(int argc, char **argv) {
    uint64_t maxlen = 64, sizes[MAX_SIZES];
    int nsizes = 0, rounds = 0, markdown = 0;
    const char *dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "-l") && a + 1 < argc)
            maxlen = strtoull(argv[++a], NULL, 10);
        else if (!strcmp(argv[a], "-d") && a + 1 < argc)
            dir = argv[++a];
        else if (!strcmp(argv[a], "-r") && a + 1 < argc)
            rounds = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--markdown"))
            markdown = 1;
        else if (nsizes < MAX_SIZES && strtoull(argv[a], NULL, 10) > 0)
            sizes[nsizes++] = strtoull(argv[a], NULL, 10);
        else
            usage();
    }
    if (nsizes == 0) {
        int quick = bench_quick();
        sizes[0] = quick ? 20000 : 1000000;
        sizes[1] = quick ? 200000 : 10000000;
        nsizes = 2;
    }
    int R = bench_rounds(rounds, 5);
    if (maxlen == 0 || R > MAX_ROUNDS) usage();
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_write_rss_%d.ss", dir, (int)getpid());
    double load0 = bench_loadavg();
    static double mbs[MAX_SIZES][MAX_ROUNDS], peak[MAX_SIZES][MAX_ROUNDS],
        hwm[MAX_SIZES][MAX_ROUNDS], before[MAX_SIZES][MAX_ROUNDS];
    report last[MAX_SIZES];
    for (int r = 0; r < R; r++) /* the sizes take turns */
        for (int i = 0; i < nsizes; i++) {
            report *rp = &last[i];
            if (write_in_child(path, sizes[i], maxlen, rp, &peak[i][r])) return 1;
            mbs[i][r] = (double)rp->data_bytes / 1e6 / rp->seconds;
            hwm[i][r] = (double)rp->hwm_after_kib / 1024.0;
            before[i][r] = (double)rp->hwm_before_kib / 1024.0;
        }
    double load1 = bench_loadavg();
    char b[4][96];
    double first = bench_stats(peak[0], R).med, lastp = bench_stats(peak[nsizes - 1], R).med;
    if (markdown) {
        bench_md_header(load0, load1, R, "in which the sizes take turns");
        printf("| examples | data | write speed | peak RSS |\n| --- | --- | --- | --- |\n");
    } else {
        printf("bench_write_rss: lengths 1..%llu u16 tokens, default writer options, in %s; "
               "median (range) of %d rounds\n",
               (unsigned long long)maxlen, dir, R);
    }
    for (int i = 0; i < nsizes; i++) {
        bench_fmt(b[0], sizeof b[0], "%.0f", bench_stats(mbs[i], R));
        bench_fmt(b[1], sizeof b[1], "%.1f", bench_stats(peak[i], R));
        bench_fmt(b[2], sizeof b[2], "%.1f", bench_stats(hwm[i], R));
        bench_fmt(b[3], sizeof b[3], "%.1f", bench_stats(before[i], R));
        if (markdown) {
            char note[128] = "";
            if (i > 0)
                snprintf(note, sizeof note, " (%.2f× the first size for %.0f× the examples)",
                         bench_stats(peak[i], R).med / first,
                         (double)sizes[i] / (double)sizes[0]);
            printf("| %llu | %.3f GB | %s MB/s | %s MiB%s |\n", (unsigned long long)sizes[i],
                   (double)last[i].data_bytes / 1e9, b[0], b[1], note);
        } else {
            printf("%11llu examples, %.3f GB of data, file %.3f GB: %s MB/s, peak RSS %s MiB, "
                   "VmHWM %s MiB, before writing %s MiB\n",
                   (unsigned long long)sizes[i], (double)last[i].data_bytes / 1e9,
                   (double)last[i].file_bytes / 1e9, b[0], b[1], b[2], b[3]);
        }
    }
    if (!markdown) {
        if (nsizes > 1)
            printf("peak RSS, %llu over %llu examples: %.2fx\n",
                   (unsigned long long)sizes[nsizes - 1], (unsigned long long)sizes[0],
                   lastp / first);
        printf("load average: %.2f at the start, %.2f at the end\n", load0, load1);
    }
    return 0;
}
