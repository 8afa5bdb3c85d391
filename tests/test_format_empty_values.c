/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_empty_values.c - where an index entry points (spec §6.1): the
 * writer's position, so an empty example after a value with a chunk of its
 * own, and the sentinel, point at (nchunks, 0), which readers accept; an
 * append continues from the position after the last value, even when the
 * last chunk is exactly full; verify refuses a location of neither kind. */
#include "store.h"
#include "testutil.h"

#include <lmdb.h>
#include <unistd.h>

static const ss_field fields[1] = {{"t", SS_U8, 1, 0, {0}}};
static const ss_schema schema = {1, fields};
static unsigned char buf[10000];

/* C of a 1-page chunk: 4096 - 32 payload bytes */
enum { CAP = 4064 };

static void write_store(const char *path, const uint64_t *len, int n, int create) {
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.chunk_pages = 1;
    o.flags = SS_WRITE_FORCE;
    ss_writer *w;
    if (create)
        CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    else
        CHECK_OK(ss_writer_open(&w, path, &schema, &o));
    for (int i = 0; i < n; i++) {
        ss_value v = {buf, len[i]};
        CHECK_OK(ss_writer_append(w, &v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

/* The store's locations are exactly `want` (count + 1 of them, chunk and
 * offset pairs), it has `nchunks` chunks, reads every example's bytes back
 * and verifies. */
static void check_store(const char *path, const uint64_t *len, uint64_t count, uint64_t nchunks,
                        const uint64_t (*want)[2]) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    CHECK_EQ_U64(ss_count(s), count);
    CHECK_EQ_U64(s->f[0].nchunks, nchunks);
    for (uint64_t i = 0; i <= count; i++) {
        uint64_t loc = ss_entry_at(&s->f[0], i)->loc;
        if (SS_LOC_CHUNK(loc) != want[i][0] || SS_LOC_OFFSET(loc) != want[i][1]) {
            fprintf(stderr, "%s: entry %llu at (%llu, %llu), expected (%llu, %llu)\n", path,
                    (unsigned long long)i, (unsigned long long)SS_LOC_CHUNK(loc),
                    (unsigned long long)SS_LOC_OFFSET(loc), (unsigned long long)want[i][0],
                    (unsigned long long)want[i][1]);
            ss_test_fail_exit();
        }
        if (i == count) break;
        ss_view v;
        CHECK_OK(ss_get(&v, s, 0, i));
        CHECK_EQ_U64(v.length, len[i]);
        CHECK(v.data && (len[i] == 0 || memcmp(v.data, buf, len[i]) == 0));
    }
    CHECK_OK(ss_verify(NULL, s, NULL, NULL));
    ss_close(s);
}

/* Set the location of index entries first..count of field 0 to (chunk, 0),
 * resealing segment 0 (format 3: entries after a 4064-byte lead). */
static void move_locs(const char *path, uint64_t first, uint64_t count, uint64_t chunk) {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_env_create(&env) == 0 && mdb_env_set_mapsize(env, 64u << 20) == 0);
    CHECK(mdb_env_open(env, path, MDB_NOSUBDIR, 0644) == 0);
    CHECK(mdb_txn_begin(env, NULL, 0, &txn) == 0 && mdb_dbi_open(txn, NULL, 0, &dbi) == 0);
    ss_key key;
    ss__key_numbered(&key, SS_KEY_INDEX, 0, 0);
    MDB_val k = ss_key_val(&key), v;
    CHECK(mdb_get(txn, dbi, &k, &v) == 0);
    unsigned char *copy = malloc(v.mv_size);
    CHECK(copy);
    memcpy(copy, v.mv_data, v.mv_size);
    for (uint64_t e = first; e <= count; e++)
        ss_put_le64(copy + SS_BLOCK_HDR + SS_SEGMENT_LEAD_V3 + 16 * e, SS_LOC(chunk, 0));
    ss__block_seal(copy, v.mv_size, ss_le64(copy + 8), &key, 3);
    MDB_val nv = {v.mv_size, copy};
    CHECK(mdb_put(txn, dbi, &k, &nv, 0) == 0 && mdb_txn_commit(txn) == 0);
    mdb_env_close(env);
    free(copy);
}

int main(void) {
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 7 + 1);
    const char *path = ss_test_keep_path("e.ss");

    /* a value with a chunk of its own, then an empty one: (0, 0), (1, 0),
     * sentinel (1, 0), one chunk (the spec's example) */
    static const uint64_t big_empty[] = {5000, 0};
    static const uint64_t big_empty_at[][2] = {{0, 0}, {1, 0}, {1, 0}};
    write_store(path, big_empty, 2, 1);
    check_store(path, big_empty, 2, 1, big_empty_at);

    /* only empty values: no chunk at all */
    static const uint64_t empties[] = {0, 0, 0};
    static const uint64_t empties_at[][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
    write_store(path, empties, 3, 1);
    check_store(path, empties, 3, 0, empties_at);

    /* an empty value at the end of an exactly full chunk, then one that
     * closes it */
    static const uint64_t full[] = {CAP, 0, 10, 0};
    static const uint64_t full_at[][2] = {{0, 0}, {0, CAP}, {1, 0}, {1, 10}, {1, 10}};
    write_store(path, full, 4, 1);
    check_store(path, full, 4, 2, full_at);

    /* the same written in two sessions: the append continues from the
     * position after the last value, (0, CAP), not from a fresh chunk */
    write_store(path, full, 2, 1);
    write_store(path, full + 2, 2, 0);
    check_store(path, full, 4, 2, full_at);

    /* an empty example pointing past (nchunks, 0): readers do not refuse
     * it (they never read through it), verify does */
    write_store(path, big_empty, 2, 1);
    move_locs(path, 1, 2, 2);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_view v;
    CHECK_OK(ss_get(&v, s, 0, 1));
    CHECK_EQ_U64(v.length, 0);
    CHECK_RC(ss_verify(NULL, s, NULL, NULL), SS_ECORRUPT);
    CHECK_CONTAINS(ss_error_message(), "field 't', entry 1 (examples 1 to 1): index entry is "
                                       "inconsistent");
    ss_close(s);
    printf("format empty values: ok\n");
    return 0;
}
