/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_write_cost.c - the writer's cost per short example (target
 * <= 60 ns) and `convert text --tokens bytes` on 40-byte lines against a plain
 * read() of the file (target >= 0.3x).
 *
 * usage: bench_write_cost [PATH/TO/seqstore] [-n EXAMPLES] [-r ROUNDS] [-d DIR]
 *
 * Part 1, in this process: ss_writer_append of N examples shaped like the
 * converters' (a u8 sequence of 39 bytes, and a fixed [2] u64 'source'), with
 * the writer's default commits; CPU ns per example of the appends (commits
 * included, as a converter pays them), then ss_writer_finish (the last
 * commit and fdatasync) reported apart; the same with SS_WRITE_NOSYNC and
 * commits of 4 MiB, the converters' mode (commits not flushed, their
 * write-back started; the pages LMDB copies into the page cache at a commit
 * are still in the CPU's caches). Floors
 * for the store's size: write() into a new file, its fdatasync, the two
 * with a sync_file_range hint per 64 MiB, and (given the CLI) the start of
 * a seqstore process. Baseline in the same rounds: memcpy
 * of the same bytes into a 64 MiB ring (the floor of any writer that copies).
 * Part 2 (given the CLI): a file of N 40-byte lines; read() into a 1 MiB
 * buffer against `seqstore convert text --tokens bytes --threads 1` and with
 * the default threads, wall clock, alternating in each round. Figures are
 * medians (ranges) of the rounds, with the load average. */
#include "seqstore.h"

#include "bench_common.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* User and system CPU seconds of this process so far. */
static void cpu_split(double *user, double *sys) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *user = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec;
    *sys = (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

enum { LEN = 39 };

/* The converters' commit size (SS_CONV_COMMIT_BYTES in converters/conv_impl.h) */
#define CONV_COMMIT_BYTES (4ull << 20)

/* One writer round with writer `flags`, committing every `commit_bytes` (0:
 * the writer's default): CPU ns per example of the appends (*append_ns, of
 * it *user_ns in user space; the rest is the kernel copying commits into the
 * page cache), *finish_s for the finish (wall), and the store's size in
 * *bytes. */
static void write_round(const char *path, uint64_t n, unsigned flags, uint64_t commit_bytes,
                        double *append_ns, double *user_ns, double *finish_s, double *bytes) {
    const ss_field f[2] = {{"tokens", SS_U8, 1, 0, {0}}, {"source", SS_U64, 0, 1, {2}}};
    const ss_schema schema = {2, f};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = flags;
    o.commit_bytes = commit_bytes;
    ss_writer *w;
    unlink(path);
    if (ss_writer_create(&w, path, &schema, &o)) {
        fprintf(stderr, "create: %s\n", ss_error_message());
        exit(1);
    }
    uint8_t line[LEN];
    for (int k = 0; k < LEN; k++) line[k] = (uint8_t)('a' + k % 26);
    uint64_t src[2] = {1, 0};
    ss_value v[2] = {{line, LEN}, {src, 1}};
    double t = cpu_now(), u0, s0, u1, s1;
    cpu_split(&u0, &s0);
    for (uint64_t i = 0; i < n; i++) {
        src[1] = i;
        line[0] = (uint8_t)i;
        if (ss_writer_append(w, v)) {
            fprintf(stderr, "append: %s\n", ss_error_message());
            exit(1);
        }
    }
    *append_ns = (cpu_now() - t) / (double)n * 1e9;
    cpu_split(&u1, &s1);
    *user_ns = (u1 - u0) / (double)n * 1e9;
    t = bench_now();
    if (ss_writer_finish(w)) {
        fprintf(stderr, "finish: %s\n", ss_error_message());
        exit(1);
    }
    *finish_s = bench_now() - t;
    ss_writer_free(w);
    struct stat st;
    *bytes = stat(path, &st) == 0 ? (double)st.st_size : 0;
    unlink(path);
    char lock[1100];
    snprintf(lock, sizeof lock, "%s-lock", path);
    unlink(lock);
}

/* The floors of writing a store of `bytes`: write() of them into a new file
 * in 1 MiB calls (*write_s, the copy into the page cache), its fdatasync
 * (*sync_s), and the same with a sync_file_range(WRITE) hint after every
 * 64 MiB (*overlap_s, write and fdatasync together). Wall seconds. */
static void floor_round(const char *path, double bytes, double *write_s, double *sync_s,
                        double *overlap_s) {
    static char buf[1 << 20];
    memset(buf, 'x', sizeof buf);
    for (int mode = 0; mode < 2; mode++) {
        unlink(path);
        double t0 = bench_now();
        int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fd < 0) {
            perror(path);
            exit(1);
        }
        off_t done = 0, hinted = 0;
        while ((double)done < bytes) {
            if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) {
                perror(path);
                exit(1);
            }
            done += (off_t)sizeof buf;
            if (mode == 1 && done - hinted >= (64 << 20)) {
                sync_file_range(fd, hinted, done - hinted, SYNC_FILE_RANGE_WRITE);
                hinted = done;
            }
        }
        double t1 = bench_now();
        fdatasync(fd);
        double t2 = bench_now();
        close(fd);
        if (mode == 0) {
            *write_s = t1 - t0;
            *sync_s = t2 - t1;
        } else {
            *overlap_s = t2 - t0;
        }
    }
    unlink(path);
}

/* Wall seconds of starting the CLI and letting it exit (`--version`). */
static double start_s(const char *cli) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s --version > /dev/null", cli);
    double t = bench_now();
    int st = system(cmd);
    t = bench_now() - t;
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        fprintf(stderr, "failed: %s\n", cmd);
        exit(1);
    }
    return t;
}

/* memcpy of the same bytes per example into a ring: ns per example. */
static double memcpy_round(uint64_t n) {
    static uint8_t ring[64 << 20];
    uint8_t line[LEN + 16];
    memset(line, 'x', sizeof line);
    size_t at = 0;
    double t = cpu_now();
    for (uint64_t i = 0; i < n; i++) {
        if (at + sizeof line > sizeof ring) at = 0;
        line[0] = (uint8_t)i;
        memcpy(ring + at, line, sizeof line);
        at += sizeof line;
    }
    double ns = (cpu_now() - t) / (double)n * 1e9;
    if (ring[n % 1000] == 0xff) puts("");
    return ns;
}

static void make_lines(const char *path, uint64_t n) {
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    uint64_t s = 7;
    for (uint64_t i = 0; i < n; i++) {
        char l[LEN + 1];
        for (int k = 0; k < LEN; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            l[k] = (s >> 60) < 3 ? ' ' : (char)('a' + (s >> 40) % 26);
        }
        l[LEN] = '\n';
        fwrite(l, 1, sizeof l, f);
    }
    fclose(f);
}

static double read_s(const char *path) {
    static char buf[1 << 20];
    int fd = open(path, O_RDONLY);
    double t = bench_now();
    while (read(fd, buf, sizeof buf) > 0) {
    }
    t = bench_now() - t;
    close(fd);
    return t;
}

static double convert_s(const char *cli, const char *args, const char *in, const char *out) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s convert text --tokens bytes %s %s -o %s --force --quiet", cli,
             args, in, out);
    double t = bench_now();
    int st = system(cmd);
    t = bench_now() - t;
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        fprintf(stderr, "failed: %s\n", cmd);
        exit(1);
    }
    return t;
}

int main(int argc, char **argv) {
    const char *cli = NULL, *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    uint64_t n = bench_quick() ? 100000 : 5000000;
    int rounds = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-d") && i + 1 < argc)
            dir = argv[++i];
        else
            cli = argv[i];
    }
    rounds = bench_rounds(rounds, 5);
    char store[1024], in[1024];
    snprintf(store, sizeof store, "%s/bench_write_cost.ss", dir);
    snprintf(in, sizeof in, "%s/bench_write_cost.txt", dir);
    double load0 = bench_loadavg();
    enum { NCOL = 14 };
    double *col[NCOL];
    for (int k = 0; k < NCOL; k++) col[k] = calloc((size_t)rounds, sizeof(double));
    double *app = col[0], *fin = col[1], *cpy = col[2], *rd = col[3], *c1 = col[4], *cd = col[5],
           *usr = col[6], *napp = col[7], *nfin = col[8], *nusr = col[9], *fw = col[10],
           *fs = col[11], *fo = col[12], *st = col[13];
    double bytes = 0;
    for (int r = 0; r < rounds; r++) {
        cpy[r] = memcpy_round(n);
        write_round(store, n, 0, 0, &app[r], &usr[r], &fin[r], &bytes);
        write_round(store, n, SS_WRITE_NOSYNC, CONV_COMMIT_BYTES, &napp[r], &nusr[r], &nfin[r],
                    &bytes);
        floor_round(store, bytes, &fw[r], &fs[r], &fo[r]);
    }
    char b[96];
    bench_md_header(load0, bench_loadavg(), rounds,
                    "(writer, memcpy, floors, read() and convert alternate)");
    printf("| %llu examples of %d u8 + [2] u64 | per example |\n|---|---|\n", (unsigned long long)n,
           LEN);
    printf("| ss_writer_append (commits of 64 MiB, each flushed), CPU | %s ns |\n",
           bench_fmt(b, sizeof b, "%.1f", bench_stats(app, rounds)));
    printf("| of it in user space | %s ns |\n",
           bench_fmt(b, sizeof b, "%.1f", bench_stats(usr, rounds)));
    printf("| memcpy of the same bytes, CPU | %s ns |\n",
           bench_fmt(b, sizeof b, "%.1f", bench_stats(cpy, rounds)));
    printf("| ss_writer_finish (last commit + fdatasync), wall | %s s in all |\n",
           bench_fmt(b, sizeof b, "%.3f", bench_stats(fin, rounds)));
    printf("| SS_WRITE_NOSYNC, commits of %llu MiB (the converters' mode): append, CPU | %s ns "
           "|\n",
           (unsigned long long)(CONV_COMMIT_BYTES >> 20),
           bench_fmt(b, sizeof b, "%.1f", bench_stats(napp, rounds)));
    printf("| of it in user space | %s ns |\n",
           bench_fmt(b, sizeof b, "%.1f", bench_stats(nusr, rounds)));
    printf("| SS_WRITE_NOSYNC: ss_writer_finish, wall | %s s in all |\n",
           bench_fmt(b, sizeof b, "%.3f", bench_stats(nfin, rounds)));
    printf("\n| floors for the store's %.0f MB | wall |\n|---|---|\n", bytes / 1e6);
    printf("| write() into a new file (page cache) | %s s |\n",
           bench_fmt(b, sizeof b, "%.3f", bench_stats(fw, rounds)));
    printf("| then fdatasync | %s s |\n", bench_fmt(b, sizeof b, "%.3f", bench_stats(fs, rounds)));
    printf("| write() with a sync_file_range hint per 64 MiB, then fdatasync | %s s |\n",
           bench_fmt(b, sizeof b, "%.3f", bench_stats(fo, rounds)));
    if (cli) {
        make_lines(in, n);
        read_s(in);
        for (int r = 0; r < rounds; r++) {
            st[r] = start_s(cli);
            rd[r] = read_s(in);
            c1[r] = convert_s(cli, "--threads 1", in, store);
            cd[r] = convert_s(cli, "", in, store);
        }
        printf("| process start (`seqstore --version` through the shell) | %s s |\n",
               bench_fmt(b, sizeof b, "%.4f", bench_stats(st, rounds)));
    }
    if (cli) {
        double mb = (double)n * (LEN + 1) / 1e6, x1[64], xd[64], rr[64];
        for (int r = 0; r < rounds && r < 64; r++) {
            rr[r] = mb / rd[r];
            x1[r] = rd[r] / c1[r];
            xd[r] = rd[r] / cd[r];
        }
        int k = rounds < 64 ? rounds : 64;
        printf("\n| %.0f MB of 40-byte lines | wall | vs read() |\n|---|---|---|\n", mb);
        printf("| read() | %s MB/s | 1 |\n", bench_fmt(b, sizeof b, "%.0f", bench_stats(rr, k)));
        for (int r = 0; r < k; r++) rr[r] = mb / c1[r];
        printf("| convert text --tokens bytes --threads 1 | %s MB/s |",
               bench_fmt(b, sizeof b, "%.0f", bench_stats(rr, k)));
        printf(" %s |\n", bench_fmt(b, sizeof b, "%.3f", bench_stats(x1, k)));
        for (int r = 0; r < k; r++) rr[r] = mb / cd[r];
        printf("| convert text --tokens bytes (default threads) | %s MB/s |",
               bench_fmt(b, sizeof b, "%.0f", bench_stats(rr, k)));
        printf(" %s |\n", bench_fmt(b, sizeof b, "%.3f", bench_stats(xd, k)));
        unlink(in);
        unlink(store);
        char lock[1100];
        snprintf(lock, sizeof lock, "%s-lock", store);
        unlink(lock);
    }
    for (int k = 0; k < NCOL; k++) free(col[k]);
    return 0;
}
