/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_convert_text.c - throughput of `seqstore convert text` against plain
 * reading of the same file.
 *
 * usage: bench_convert_text PATH/TO/seqstore [MB (default 200)] [DIR (default /tmp)]
 *
 * Writes a synthetic English-like corpus of MB megabytes (lines of 1..30 words
 * drawn from a Zipf-like distribution), reads it once to warm the page cache,
 * then reports MB/s of: read() of the file into a 1 MiB buffer (the
 * `cat FILE > /dev/null` baseline), and `convert text` with --tokens bytes and
 * --tokens words, on one thread and on the default thread count, by the wall
 * clock and per CPU second (user + sys of the converter). The conversion
 * times include creating and syncing the store. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void make_corpus(const char *path, size_t bytes) {
    enum { NWORDS = 20000 };
    static char words[NWORDS][12];
    uint64_t s = 42;
    for (int i = 0; i < NWORDS; i++) {
        int len = 1 + (int)(rnd(&s) % 10);
        for (int k = 0; k < len; k++) words[i][k] = (char)('a' + rnd(&s) % 26);
        words[i][len] = 0;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    size_t n = 0;
    while (n < bytes) {
        int nw = 1 + (int)(rnd(&s) % 30);
        for (int w = 0; w < nw; w++) {
            /* Zipf-like: the square of a uniform number favours small ids */
            double u = (double)(rnd(&s) >> 11) / 9007199254740992.0;
            const char *word = words[(int)(u * u * NWORDS)];
            n += (size_t)fprintf(f, w ? " %s" : "%s", word);
        }
        fputc('\n', f);
        n++;
    }
    fclose(f);
}

static double read_mbps(const char *path, size_t bytes) {
    static char buf[1 << 20];
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        int fd = open(path, O_RDONLY);
        double t = now();
        while (read(fd, buf, sizeof buf) > 0) {
        }
        t = now() - t;
        close(fd);
        double r = (double)bytes / 1e6 / t;
        if (r > best) best = r;
    }
    return best;
}

static double children_cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* MB/s by the wall clock; *cpu_mbps by the CPU time the conversion used
 * (meaningful on a loaded machine, and for one thread). */
static double convert_mbps(const char *cli, const char *args, const char *in, const char *out,
                           size_t bytes, double *cpu_mbps) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s convert text %s %s -o %s --force --quiet", cli, args, in, out);
    double c = children_cpu(), t = now();
    int st = system(cmd);
    t = now() - t;
    c = children_cpu() - c;
    *cpu_mbps = (double)bytes / 1e6 / c;
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        fprintf(stderr, "failed: %s\n", cmd);
        exit(1);
    }
    return (double)bytes / 1e6 / t;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH/TO/seqstore [MB] [DIR]\n", argv[0]);
        return 2;
    }
    size_t mb = argc > 2 ? (size_t)atol(argv[2]) : 200;
    const char *quick = getenv("SS_BENCH_QUICK"); /* the smoke tests: at most 5 MB */
    if (quick && *quick && strcmp(quick, "0") != 0 && mb > 5) mb = 5;
    const char *dir = argc > 3 ? argv[3] : "/tmp";
    char in[1024], out[1024], lock[1100];
    snprintf(in, sizeof in, "%s/bench_convert_text.txt", dir);
    snprintf(out, sizeof out, "%s/bench_convert_text.ss", dir);
    snprintf(lock, sizeof lock, "%s-lock", out);
    size_t bytes = mb << 20;
    make_corpus(in, bytes);
    double rd = read_mbps(in, bytes);
    printf("input: %zu MB of text; read() baseline: %.0f MB/s\n", mb, rd);
    static const char *runs[][2] = {
        {"--tokens bytes --threads 1", "bytes, 1 thread"},
        {"--tokens bytes", "bytes, default threads"},
        {"--tokens words --threads 1", "words, 1 thread"},
        {"--tokens words", "words, default threads"},
    };
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        double cpu, r = convert_mbps(argv[1], runs[k][0], in, out, bytes, &cpu);
        printf("convert text %-24s %7.1f MB/s wall (%.2fx read), %7.1f MB/s per CPU second\n",
               runs[k][1], r, r / rd, cpu);
    }
    unlink(in);
    unlink(out);
    unlink(lock);
    return 0;
}
