/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_lengths.c - what the stored lengths section (spec/FORMAT.md §7.3)
 * costs: the writer's final-transaction step that writes it (timed alone,
 * in a write transaction that is then aborted) against the whole write, and
 * ss_open() with and without the section (the section's key removed).
 * Usage: bench_lengths [N] [DIR]   (default 1000000 examples of 1..64 u16
 * tokens, DIR = $TMPDIR or /tmp; 9 rounds, medians). */
#include "seqstore.h"

#include "bench_common.h"
#include "sections.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 9

_Noreturn static void die(const char *what) {
    fprintf(stderr, "bench_lengths: %s: %s\n", what, ss_error_message());
    exit(1);
}

static double write_store(const char *path, uint64_t n) {
    static ss_field f[1] = {{"tokens", SS_U16, 1, 0, {0}}};
    ss_schema schema = {1, f};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE;
    uint16_t buf[64];
    for (int k = 0; k < 64; k++) buf[k] = (uint16_t)(k * 7);
    uint64_t rng = 1;
    double t0 = bench_now();
    ss_writer *w;
    if (ss_writer_create(&w, path, &schema, &o)) die("create");
    for (uint64_t i = 0; i < n; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        ss_value v = {buf, 1 + (rng >> 33) % 64};
        if (ss_writer_append(w, &v)) die("append");
    }
    if (ss_writer_finish(w)) die("finish");
    ss_writer_free(w);
    return bench_now() - t0;
}

/* The section step alone: ss__lengths_put in a write transaction, aborted. */
static double lengths_step(const char *path, const ss_header *h) {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    if (mdb_env_create(&env) || mdb_env_set_mapsize(env, 1ull << 32) ||
        mdb_env_open(env, path, MDB_NOSUBDIR, 0644) || mdb_txn_begin(env, NULL, 0, &txn) ||
        mdb_dbi_open(txn, NULL, 0, &dbi))
        die("lmdb");
    double t0 = bench_now();
    if (ss__lengths_put(txn, dbi, h)) die("lengths");
    double t = bench_now() - t0;
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return t;
}

static double open_ms(const char *path) {
    double v[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = bench_now();
        ss_store *s;
        if (ss_open(&s, path, 0)) die("open");
        ss_close(s);
        v[r] = (bench_now() - t0) * 1e3;
    }
    qsort(v, ROUNDS, sizeof v[0], bench_cmp_double);
    return v[ROUNDS / 2];
}

static void drop_section(const char *path) {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    ss_key key;
    ss__key_named(&key, SS_KEY_ATTR, "ss.lengths.tokens");
    MDB_val k = ss_key_val(&key);
    if (mdb_env_create(&env) || mdb_env_open(env, path, MDB_NOSUBDIR, 0644) ||
        mdb_txn_begin(env, NULL, 0, &txn) || mdb_dbi_open(txn, NULL, 0, &dbi) ||
        mdb_del(txn, dbi, &k, NULL) || mdb_txn_commit(txn))
        die("drop");
    mdb_env_close(env);
}

int main(int argc, char **argv) {
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    const char *dir = argc > 2 ? argv[2] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_lengths.ss", dir);
    double load0 = bench_loadavg(), wv[3], lv[ROUNDS];
    for (int r = 0; r < 3; r++) wv[r] = write_store(path, n);
    qsort(wv, 3, sizeof wv[0], bench_cmp_double);
    ss_store *s;
    if (ss_open(&s, path, 0)) die("open");
    ss_header h = s->h;
    const void *data;
    ss_dtype dt;
    uint64_t count;
    if (ss_lengths_view(&data, &dt, &count, s, 0)) die("view");
    ss_close(s);
    for (int r = 0; r < ROUNDS; r++) lv[r] = lengths_step(path, &h);
    qsort(lv, ROUNDS, sizeof lv[0], bench_cmp_double);
    double with = open_ms(path);
    drop_section(path);
    double without = open_ms(path);
    printf("%llu examples (1..64 u16 tokens): write %.3f s (median of 3); the lengths step "
           "%.2f ms (median of %d) = %.2f%% of the write; section %llu bytes (u%d)\n",
           (unsigned long long)n, wv[1], lv[ROUNDS / 2] * 1e3, ROUNDS,
           100.0 * lv[ROUNDS / 2] / wv[1], (unsigned long long)count, dt == SS_U8 ? 8 : 16);
    printf("ss_open (warm, median of %d): %.3f ms with the section, %.3f ms without\n", ROUNDS,
           with, without);
    printf("load average %.2f -> %.2f\n", load0, bench_loadavg());
    unlink(path);
    snprintf(path + strlen(path), sizeof path - strlen(path), "-lock");
    unlink(path);
    return 0;
}
