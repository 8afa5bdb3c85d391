/* SPDX-License-Identifier: BSD-2-Clause */
/* test_lengths.c - the stored lengths section `ss.lengths.FIELD`
 * (spec/FORMAT.md §7.3): the narrowest type at each boundary, rewritten by
 * an append, absent from an old store (SS_ENOTFOUND, ss_lengths() still
 * works), and a section with a valid checksum but wrong values caught by
 * verify. */
#include "testutil.h"

#include "layout.h"

#include <lmdb.h>
#include <stdlib.h>
#include <string.h>

static ss_field fields[2] = {{"tok", SS_U16, 1, 0, {0}}, {"label", SS_U32, 0, 0, {0}}};
static const ss_schema schema = {2, fields};

static void append(ss_writer *w, uint64_t len) {
    uint16_t *buf = calloc(len ? len : 1, 2);
    uint32_t label = (uint32_t)len;
    for (uint64_t k = 0; k < len; k++) buf[k] = (uint16_t)(k * 3 + len);
    ss_value v[2] = {{buf, len}, {&label, 1}};
    CHECK_OK(ss_writer_append(w, v));
    free(buf);
}

static uint64_t stored(const void *data, ss_dtype dt, uint64_t i) {
    return dt == SS_U8    ? ((const uint8_t *)data)[i]
           : dt == SS_U16 ? ((const uint16_t *)data)[i]
           : dt == SS_U32 ? ((const uint32_t *)data)[i]
                          : ((const uint64_t *)data)[i];
}

/* The section of `path` holds `want[0..n)` as type `dt`, and verify passes. */
static void check(const char *path, const uint64_t *want, uint64_t n, ss_dtype dt) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    const void *data;
    ss_dtype got_dt;
    uint64_t count;
    CHECK_OK(ss_lengths_view(&data, &got_dt, &count, s, 0));
    CHECK_EQ_U64(count, n);
    CHECK_EQ_U64(got_dt, dt);
    for (uint64_t i = 0; i < n; i++) CHECK_EQ_U64(stored(data, got_dt, i), want[i]);
    CHECK_RC(ss_lengths_view(&data, &got_dt, &count, s, 1), SS_EINVAL); /* fixed */
    CHECK(data == NULL && count == 0);
    CHECK_RC(ss_lengths_view(&data, &got_dt, &count, s, 2), SS_ERANGE);
    CHECK_RC(ss_lengths_view(NULL, &got_dt, &count, s, 0), SS_EINVAL);
    CHECK_OK(ss_verify(NULL, s, NULL, NULL));
    ss_close(s);
}

/* Type boundaries: 255 fits u8, 256 needs u16, 65536 needs u32; zero-length
 * examples and an empty store included. */
static void test_types(void) {
    const char *path = ss_test_path("types.ss");
    static const uint64_t cases[][4] = {
        {0, 1, 255, SS_U8}, {3, 256, 0, SS_U16}, {65535, 2, 1, SS_U16}, {65536, 0, 9, SS_U32}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ss_writer_options o = SS_WRITER_OPTIONS_INIT;
        o.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
        ss_writer *w;
        CHECK_OK(ss_writer_create(&w, path, &schema, &o));
        for (int i = 0; i < 3; i++) append(w, cases[c][i]);
        CHECK_OK(ss_writer_finish(w));
        ss_writer_free(w);
        check(path, cases[c], 3, (ss_dtype)cases[c][3]);
    }
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    check(path, NULL, 0, SS_U8);
}

/* Many examples over several index segments and commits, then an append
 * with a longer one: rewritten whole, wider. */
static void test_append(void) {
    const char *path = ss_test_path("append.ss");
    uint64_t n = 3 * SS_SEGMENT_ENTRIES_V3 + 17, total = n + 1000;
    uint64_t *want = malloc(total * sizeof *want);
    uint64_t rng = 7;
    for (uint64_t i = 0; i < total; i++) want[i] = ss_test_rand(&rng) % 200;
    want[n + 500] = 70000;
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
    o.commit_bytes = 1 << 20;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    for (uint64_t i = 0; i < n; i++) append(w, want[i]);
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    check(path, want, n, SS_U8);
    CHECK_OK(ss_writer_open(&w, path, NULL, &o));
    for (uint64_t i = n; i < total; i++) append(w, want[i]);
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    check(path, want, total, SS_U32);
    free(want);
}

/* A store written before the section: not found, the index still answers. */
static void test_old_store(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/v1_store.ss", SS_SOURCE_DIR);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, SS_OPEN_NOLOCK));
    const void *data = (const void *)1;
    ss_dtype dt;
    uint64_t n = 5;
    CHECK_RC(ss_lengths_view(&data, &dt, &n, s, 0), SS_ENOTFOUND);
    CHECK(data == NULL && n == 0);
    CHECK(strstr(ss_error_message(), "ss_lengths()"));
    uint64_t len;
    CHECK_OK(ss_lengths(&len, s, 0, 0, 1));
    ss_close(s);
}

/* Replace the section of `path` by `payload` (type + values), sealed with a
 * valid checksum, as a buggy or malicious writer would. */
static void put_section(const char *path, const void *payload, uint64_t len) {
    MDB_env *env;
    CHECK(mdb_env_create(&env) == 0);
    CHECK(mdb_env_open(env, path, MDB_NOSUBDIR, 0644) == 0);
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn) == 0);
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi) == 0);
    ss_key key;
    ss__key_named(&key, SS_KEY_ATTR, "ss.lengths.tok");
    MDB_val k = ss_key_val(&key), v = {ss__block_value_size(len), NULL};
    CHECK(mdb_put(txn, dbi, &k, &v, MDB_RESERVE) == 0);
    memcpy((unsigned char *)v.mv_data + SS_BLOCK_HDR, payload, len);
    ss__block_seal(v.mv_data, v.mv_size, len, &key, 2);
    CHECK(mdb_txn_commit(txn) == 0);
    mdb_env_close(env);
}

static void test_verify(void) {
    const char *path = ss_test_path("verify.ss");
    uint64_t want[3] = {5, 0, 9};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    for (int i = 0; i < 3; i++) append(w, want[i]);
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    check(path, want, 3, SS_U8);
    /* one wrong length, a valid checksum: verify names example 1 */
    unsigned char p[8 + 3] = {SS_U8, 0, 0, 0, 0, 0, 0, 0, 5, 1, 9};
    put_section(path, p, sizeof p);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    uint64_t problems = 0;
    CHECK_RC(ss_verify(&problems, s, NULL, NULL), SS_ECORRUPT);
    CHECK_EQ_U64(problems, 1);
    CHECK(strstr(ss_error_message(), "ss.lengths.tok"));
    ss_close(s);
    /* right values, a wider type than the writer's: refused too */
    unsigned char q[8 + 6] = {SS_U16, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 9, 0};
    put_section(path, q, sizeof q);
    CHECK_OK(ss_open(&s, path, 0));
    CHECK_RC(ss_verify(&problems, s, NULL, NULL), SS_ECORRUPT);
    ss_close(s);
    /* a size that is not count lengths: the accessor refuses it */
    unsigned char r[8 + 2] = {SS_U8, 0, 0, 0, 0, 0, 0, 0, 5, 0};
    put_section(path, r, sizeof r);
    CHECK_OK(ss_open(&s, path, 0));
    const void *data;
    ss_dtype dt;
    uint64_t n;
    CHECK_RC(ss_lengths_view(&data, &dt, &n, s, 0), SS_ECORRUPT);
    CHECK_RC(ss_verify(&problems, s, NULL, NULL), SS_ECORRUPT);
    ss_close(s);
    /* the writer's next finish writes the right section again */
    CHECK_OK(ss_writer_open(&w, path, NULL, &o));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    check(path, want, 3, SS_U8);
}

int main(void) {
    test_types();
    test_append();
    test_old_store();
    test_verify();
    puts("test_lengths: ok");
    return 0;
}
