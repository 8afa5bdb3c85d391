/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_lmdb_check.c - the cost of the LMDB structural check (format/
 * lmdb_check.c) at open: ss_open + ss_close of a store of N examples warm and
 * cold, and the check alone in its open mode (branch and leaf pages) and its
 * verify/writer mode (also every overflow page header), warm and cold.
 * Cold means the file evicted from the page cache with POSIX_FADV_DONTNEED,
 * or, with -D (root only), after `echo 3 > /proc/sys/vm/drop_caches`.
 * Usage: bench_lmdb_check [-n N] [-d DIR] [-D] [-k]
 * Defaults: N = 1000000 examples of 1..512 u16 tokens, DIR = $TMPDIR or /tmp.
 * The store is deleted at the end unless -k (keep) is given. */
#include "lmdb_check.h"
#include "seqstore.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int drop_all, keep;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, int rc) {
    fprintf(stderr, "bench_lmdb_check: %s: %s (%s)\n", what, ss_strerror(rc), ss_error_message());
    exit(1);
}

static void evict(const char *path) {
    if (drop_all) {
        sync();
        FILE *f = fopen("/proc/sys/vm/drop_caches", "w");
        if (!f || fputs("3\n", f) < 0 || fclose(f) != 0) {
            fprintf(stderr, "bench_lmdb_check: -D needs root\n");
            exit(1);
        }
        return;
    }
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void make_store(const char *path, uint64_t n) {
    static const ss_field f[1] = {{"tokens", SS_U16, 1, 0, {0}}};
    ss_schema schema = {1, f};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
    ss_writer *w;
    int rc = ss_writer_create(&w, path, &schema, &o);
    if (rc) die("create", rc);
    static uint16_t buf[512];
    uint64_t s = 1;
    for (uint64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t len = 1 + (s >> 33) % 512;
        buf[0] = (uint16_t)i;
        ss_value v = {buf, len};
        if ((rc = ss_writer_append(w, &v))) die("append", rc);
    }
    if ((rc = ss_writer_finish(w))) die("finish", rc);
    ss_writer_free(w);
}

/* Median ms of `reps` runs of ss_open + ss_close (check = -1) or of the check
 * alone with `check` flags on a raw read-only environment. */
static double run_ms(const char *path, int check, int cold, int reps) {
    double t[32];
    MDB_env *env = NULL;
    if (check >= 0 && (mdb_env_create(&env) ||
                       mdb_env_open(env, path, MDB_RDONLY | MDB_NOSUBDIR | MDB_NOTLS, 0644)))
        die("raw open", SS_EIO);
    for (int r = 0; r < reps; r++) {
        if (cold) evict(path);
        double t0 = now();
        int rc;
        if (check < 0) {
            ss_store *s;
            if ((rc = ss_open(&s, path, 0))) die("open", rc);
            t[r] = (now() - t0) * 1e3;
            ss_close(s);
            continue;
        }
        MDB_txn *txn;
        if (mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) die("begin", SS_EIO);
        if ((rc = ss__lmdb_check(env, &txn, path, (unsigned)check))) die("check", rc);
        t[r] = (now() - t0) * 1e3;
        mdb_txn_abort(txn);
    }
    if (env) mdb_env_close(env);
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}

int main(int argc, char **argv) {
    uint64_t n = 1000000;
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "-d") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "-D"))
            drop_all = 1;
        else if (!strcmp(argv[i], "-k"))
            keep = 1;
        else {
            fprintf(stderr, "usage: bench_lmdb_check [-n N] [-d DIR] [-D] [-k]\n");
            return 2;
        }
    }
    char path[4096], lock[4200];
    snprintf(path, sizeof path, "%s/bench_lmdb_check.ss", dir);
    snprintf(lock, sizeof lock, "%s-lock", path);
    make_store(path, n);
    MDB_env *env;
    MDB_stat st;
    mdb_env_create(&env);
    mdb_env_open(env, path, MDB_RDONLY | MDB_NOSUBDIR, 0644);
    mdb_env_stat(env, &st);
    mdb_env_close(env);
    printf("store: %llu examples; main DB: %llu entries, depth %u, %llu branch + %llu leaf + "
           "%llu overflow pages\n",
           (unsigned long long)n, (unsigned long long)st.ms_entries, st.ms_depth,
           (unsigned long long)st.ms_branch_pages, (unsigned long long)st.ms_leaf_pages,
           (unsigned long long)st.ms_overflow_pages);
    const char *names[3] = {"ss_open + ss_close (with the check)", "check, open mode",
                            "check, verify/writer mode (+ overflow headers)"};
    int modes[3] = {-1, 0, (int)SS_LMDB_CHECK_OVERFLOW};
    for (int m = 0; m < 3; m++)
        printf("%-48s %8.3f ms warm %8.3f ms cold (%s)\n", names[m], run_ms(path, modes[m], 0, 21),
               run_ms(path, modes[m], 1, 7), drop_all ? "drop_caches" : "fadvise");
    if (!keep) {
        unlink(path);
        unlink(lock);
    }
    return 0;
}
