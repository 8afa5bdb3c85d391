/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_write_rss.c - the writer's memory is bounded: peak RSS while writing
 * stores of different sizes (default 1 M and 10 M examples) should be about
 * the same. Each size is written by its own child process, so that each peak
 * (wait4's ru_maxrss, and the child's VmHWM) is separate; the child also
 * reports its peak before writing (the program's own floor).
 * Usage: bench_write_rss [-l MAXLEN] [-d DIR] [N ...]
 * Defaults: lengths uniform in 1..64 u16 tokens, DIR = $TMPDIR or /tmp,
 * N = 1000000 10000000. Default writer options (commit every 64 MiB). The
 * stores are deleted at the end. */
#include "seqstore.h"

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

int main(int argc, char **argv) {
    uint64_t maxlen = 64, sizes[16];
    int nsizes = 0;
    const char *dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "-l") && a + 1 < argc)
            maxlen = strtoull(argv[++a], NULL, 10);
        else if (!strcmp(argv[a], "-d") && a + 1 < argc)
            dir = argv[++a];
        else if (nsizes < 16 && strtoull(argv[a], NULL, 10) > 0)
            sizes[nsizes++] = strtoull(argv[a], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_write_rss [-l MAXLEN] [-d DIR] [N ...]\n");
            return 2;
        }
    }
    if (nsizes == 0) {
        sizes[0] = 1000000;
        sizes[1] = 10000000;
        nsizes = 2;
    }
    if (maxlen == 0) return 2;
    char path[4096], lock[4200];
    snprintf(path, sizeof path, "%s/bench_write_rss_%d.ss", dir, (int)getpid());
    snprintf(lock, sizeof lock, "%s-lock", path);
    printf("bench_write_rss: lengths 1..%llu u16 tokens, default writer options, in %s\n",
           (unsigned long long)maxlen, dir);
    printf("%11s %9s %9s %8s %9s %14s %14s %12s\n", "examples", "data GB", "file GB", "seconds",
           "MB/s", "peak RSS MiB", "VmHWM MiB", "before MiB");
    double first_peak = 0, last_peak = 0;
    for (int i = 0; i < nsizes; i++) {
        int p[2];
        if (pipe(p) != 0) return 1;
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) return 1;
        if (pid == 0) {
            close(p[0]);
            child(path, sizes[i], maxlen, p[1]);
        }
        close(p[1]);
        int status;
        struct rusage ru;
        report r;
        memset(&r, 0, sizeof r);
        ssize_t got = read(p[0], &r, sizeof r);
        close(p[0]);
        if (wait4(pid, &status, 0, &ru) != pid || got != (ssize_t)sizeof r || !r.ok) {
            fprintf(stderr, "bench_write_rss: child for %llu examples failed\n",
                    (unsigned long long)sizes[i]);
            return 1;
        }
        unlink(path);
        unlink(lock);
        double peak = (double)ru.ru_maxrss / 1024.0; /* ru_maxrss is in KiB on Linux */
        if (i == 0) first_peak = peak;
        last_peak = peak;
        printf("%11llu %9.3f %9.3f %8.2f %9.1f %14.1f %14.1f %12.1f\n",
               (unsigned long long)sizes[i], (double)r.data_bytes / 1e9, (double)r.file_bytes / 1e9,
               r.seconds, (double)r.data_bytes / 1e6 / r.seconds, peak,
               (double)r.hwm_after_kib / 1024.0, (double)r.hwm_before_kib / 1024.0);
    }
    if (nsizes > 1)
        printf("peak RSS, %llu over %llu examples: %.2fx (bounded memory: about 1x)\n",
               (unsigned long long)sizes[nsizes - 1], (unsigned long long)sizes[0],
               last_peak / first_peak);
    return 0;
}
