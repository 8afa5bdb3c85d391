/* SPDX-License-Identifier: BSD-2-Clause */
/* test_dataset_binding.c - a dataset's manifest binds each shard's content
 * (spec/FORMAT.md §5, §13), not only its counts: a shard rewritten with other
 * bytes of the same sizes, a shard copied over another of the same size, and
 * a shard whose attribute changed are each refused when first read and by
 * verify, naming the shard. The content digest in a finished store's header
 * is recomputed here from the spec's words with LMDB and xxHash alone;
 * verify finds a block replaced behind the writer's back; an unfinished
 * append does not disturb the digest; shards of an older library (no
 * digest) still build, read and verify. */
#include "testutil.h"

#include "layout.h"
#include "manifest.h"

#include <ctype.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

static const char *const WORDS[] = {"the", "a", "cat", "sat", "on", "mat", "dog", "ran"};

static void write_text(const char *path, int lines, int upper_vowels) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    uint64_t seed = 5;
    for (int i = 0; i < lines; i++) {
        int n = 1 + (int)(ss_test_rand(&seed) % 9);
        for (int w = 0; w < n; w++) {
            const char *word = WORDS[ss_test_rand(&seed) % 8];
            if (w) fputc(' ', f);
            for (const char *c = word; *c; c++)
                fputc(upper_vowels && strchr("aeiou", *c) ? toupper((unsigned char)*c) : *c, f);
        }
        fputc('\n', f);
    }
    fclose(f);
}

/* Read global example `index` of the dataset `dir`, then verify it: expect
 * `rc` of both, and an error naming `shard` when it fails. */
static void expect_get(const char *dir, uint64_t index, int rc, const char *shard) {
    ss_store *d;
    CHECK_OK(ss_open(&d, dir, 0));
    ss_view v;
    CHECK_RC(ss_get(&v, d, 0, index), rc);
    if (rc) CHECK_CONTAINS(ss_error_message(), shard);
    uint64_t problems = 0;
    CHECK_RC(ss_verify(&problems, d, NULL, NULL), rc);
    if (rc) CHECK_CONTAINS(ss_error_message(), shard);
    ss_close(d);
}

/* The text case: the same inputs with vowels upper-cased have the same line
 * lengths, so the rewritten shard's counts, rows and chunks are the old
 * ones; only its bytes differ. Then an attribute set on another shard. */
static void text_shards(void) {
    const char *dir = ss_test_keep_path("text");
    char err[4096], files[3][1024], inputs[4096] = "";
    for (int i = 0; i < 3; i++) { /* of one size: --shard K/3 takes file K */
        char name[32];
        snprintf(name, sizeof name, "corpus-%d.txt", i);
        snprintf(files[i], sizeof files[i], "%s", ss_test_keep_path(name));
        write_text(files[i], 1000, 0);
        strcat(inputs, files[i]);
        strcat(inputs, " ");
    }
    mkdir(dir, 0755);
    for (int k = 0; k < 3; k++)
        CHECK_EXIT(ss_test_cli(err, sizeof err, NULL,
                               "convert lines %s--shard %d/3 -o %s/part-%d.ss --force --quiet",
                               inputs, k, dir, k),
                   0, err);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s", dir), 0, err);
    ss_store *d;
    CHECK_OK(ss_open(&d, dir, 0));
    ss_close(d);
    ss_manifest m;
    CHECK_OK(ss__manifest_read(&m, dir));
    CHECK(m.nshards == 3 && m.shards[1].count > 0 && m.shards[2].count > 0);
    /* the last examples of shards 1 and 2 */
    uint64_t in1 = m.shards[0].count + m.shards[1].count - 1, last = m.examples - 1;
    ss__manifest_free(&m);
    expect_get(dir, in1, 0, NULL);

    write_text(files[1], 1000, 1); /* same path, so the attributes are the same too */
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL,
                           "convert lines %s--shard 1/3 -o %s/part-1.ss --force --quiet", inputs,
                           dir),
               0, err);
    expect_get(dir, in1, SS_ECORRUPT, "shard 1 'part-1.ss'");
    ss_view v;
    CHECK_OK(ss_open(&d, dir, 0));
    CHECK_OK(ss_get(&v, d, 0, 0)); /* shard 0 is untouched */
    ss_close(d);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "verify %s", dir), 3, err);
    CHECK_CONTAINS(err, "part-1.ss");

    /* built again over the new shard: it reads; then an attribute changes */
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s", dir), 0, err);
    expect_get(dir, in1, 0, NULL);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "attr set %s/part-2.ss note --text changed", dir),
               0, err);
    expect_get(dir, last, SS_ECORRUPT, "shard 2 'part-2.ss'");
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "verify %s", dir), 3, err);
    CHECK_CONTAINS(err, "part-2.ss");
}

/* 4 shards of 20,000 fixed examples (u32 [2]); shard k holds (k, k+1). */
static void write_fixed_shard(const char *path, uint32_t k) {
    ss_field fd = {"pair", SS_U32, 0, 1, {2}};
    ss_schema schema = {1, &fd};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    uint32_t pair[2] = {k, k + 1};
    for (int i = 0; i < 20000; i++) {
        ss_value v = {pair, 1};
        CHECK_OK(ss_writer_append(w, &v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

static void expect_pair(const char *dir, uint64_t index, uint32_t a, uint32_t b) {
    ss_store *d;
    CHECK_OK(ss_open(&d, dir, 0));
    ss_view v;
    CHECK_OK(ss_get(&v, d, 0, index));
    const uint32_t *p = v.data;
    CHECK(v.length == 1 && p[0] == a && p[1] == b);
    ss_close(d);
}

static void strip_digest(const char *path);

/* A new folder `name` of `n` fixed shards, part-00000.ss and on (legacy:
 * as an older library wrote them, without content digest), and `dataset
 * build` over them; err gets its messages. Returns the folder. */
static const char *fixed_dataset(const char *name, uint32_t n, int legacy, char *err,
                                 size_t errlen) {
    const char *dir = ss_test_keep_path(name);
    char path[1024], cmd[4096];
    mkdir(dir, 0755);
    int used = snprintf(cmd, sizeof cmd, "dataset build %s", dir);
    for (uint32_t k = 0; k < n; k++) {
        snprintf(path, sizeof path, "%s/part-%05u.ss", dir, k);
        write_fixed_shard(path, k);
        if (legacy) strip_digest(path);
        used += snprintf(cmd + used, sizeof cmd - (size_t)used, " part-%05u.ss", k);
    }
    CHECK((size_t)used < sizeof cmd);
    CHECK_EXIT(ss_test_cli(err, errlen, NULL, "%s", cmd), 0, err);
    return dir;
}

static void fixed_shards(void) {
    char err[4096], cmd[4096];
    const char *dir = fixed_dataset("fixed", 4, 0, err, sizeof err);
    expect_pair(dir, 40001, 2, 3);
    snprintf(cmd, sizeof cmd, "cp %s/part-00001.ss %s/part-00002.ss", dir, dir);
    CHECK(system(cmd) == 0);
    expect_get(dir, 40001, SS_ECORRUPT, "shard 2 'part-00002.ss'");
    expect_pair(dir, 20001, 1, 2); /* shard 1 is still itself */
    expect_pair(dir, 60001, 3, 4);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "verify %s", dir), 3, err);
    CHECK_CONTAINS(err, "part-00002.ss");
}

static uint64_t be64(const unsigned char *b) {
    uint64_t v = 0;
    for (int k = 0; k < 8; k++) v = v << 8 | b[k];
    return v;
}

static uint64_t le64(const unsigned char *b) {
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--) v = v << 8 | b[k];
    return v;
}

/* The shard at `path` opened with LMDB alone (flags: MDB_RDONLY or 0), one
 * transaction on its unnamed database. */
static void raw_open(const char *path, unsigned flags, MDB_env **env, MDB_txn **txn,
                     MDB_dbi *dbi) {
    unsigned env_flags = MDB_NOSUBDIR | flags;
    if (flags & MDB_RDONLY) env_flags |= MDB_NOLOCK; /* a reader beside no writer */
    CHECK(mdb_env_create(env) == 0);
    CHECK(mdb_env_open(*env, path, env_flags, 0644) == 0);
    CHECK(mdb_txn_begin(*env, NULL, flags & MDB_RDONLY, txn) == 0);
    CHECK(mdb_dbi_open(*txn, NULL, 0, dbi) == 0);
}

/* Write block `key` with `len` payload bytes sealed as the library seals
 * it (behind the writer's back), commit and close. */
static void raw_put_sealed(MDB_env *env, MDB_txn *txn, MDB_dbi dbi, ss_key *key,
                           const void *payload, uint64_t len) {
    uint64_t vsize = ss__block_value_size(len);
    MDB_val k = ss_key_val(key), v = {vsize, NULL};
    CHECK(mdb_put(txn, dbi, &k, &v, MDB_RESERVE) == 0);
    memcpy((unsigned char *)v.mv_data + 16, payload, len);
    ss__block_seal(v.mv_data, vsize, len, key, SS_FORMAT_VERSION);
    CHECK(mdb_txn_commit(txn) == 0);
    mdb_env_close(env);
}

/* The content digest as spec §13 words it, from LMDB and xxHash alone:
 * returns the header's, and checks it equals the recomputed one. */
static uint64_t check_digest_from_spec(const char *path) {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    MDB_val k, v;
    raw_open(path, MDB_RDONLY, &env, &txn, &dbi);
    k.mv_size = 1, k.mv_data = "H";
    CHECK(mdb_get(txn, dbi, &k, &v) == 0);
    const unsigned char *h = (const unsigned char *)v.mv_data + 16;
    uint64_t len = le64((const unsigned char *)v.mv_data + 8);
    uint32_t nfields = (uint32_t)le64(h + 20) & 0xffffffffu;
    uint64_t count = le64(h + 24), per = le64(h + 40);
    CHECK((h[16] & 1) == 1); /* compat bit 0: the digest follows the records */
    CHECK_EQ_U64(len, 48 + 112 * nfields + 8);
    uint64_t want = le64(h + 48 + 112 * nfields);
    XXH3_state_t *st = XXH3_createState();
    XXH3_64bits_reset(st);
    CHECK(mdb_cursor_open(txn, dbi, &cur) == 0);
    int blocks = 0;
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        const unsigned char *key = k.mv_data, *value = v.mv_data;
        int take = key[0] == 'A';
        uint64_t prefix = 0, nblocks = 0; /* a last block: its first `prefix` bytes */
        int is_last = 0;
        if ((key[0] == 'D' || key[0] == 'I') && k.mv_size == 10 && key[1] < nfields) {
            const unsigned char *rec = h + 48 + 112 * key[1];
            uint64_t n = be64(key + 2);
            nblocks = key[0] == 'D' ? le64(rec + 96) : rec[49] ? (count + 1 + per - 1) / per : 0;
            take = n < nblocks;
            if ((is_last = take && n == nblocks - 1))
                prefix = key[0] == 'D' ? le64(rec + 104)
                                       : (per == 65536 ? 4064 : 0) + (count + 1 - n * per) * 16;
        }
        if (!take) continue;
        unsigned char klen[2] = {(unsigned char)k.mv_size, (unsigned char)(k.mv_size >> 8)};
        unsigned char last[16];
        uint64_t sum = XXH3_64bits(value + 16, prefix);
        for (int b = 0; b < 8; b++) last[b] = (unsigned char)(sum >> 8 * b);
        for (int b = 0; b < 8; b++) last[8 + b] = (unsigned char)(prefix >> 8 * b);
        XXH3_64bits_update(st, klen, 2);
        XXH3_64bits_update(st, k.mv_data, k.mv_size);
        XXH3_64bits_update(st, is_last ? last : value, 16);
        blocks++;
    }
    CHECK(blocks >= 1);
    CHECK_EQ_U64(XXH3_64bits_digest(st), want);
    XXH3_freeState(st);
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return want;
}

/* An attribute block replaced behind the writer's back by another block
 * that matches its own checksum: reads pass, the header is unchanged (so a
 * manifest still matches), and verify's recomputed digest differs. */
static void replaced_block(void) {
    const char *path = ss_test_keep_path("replaced.ss");
    char err[4096];
    write_fixed_shard(path, 7);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "attr set %s note --text before", path), 0, err);
    uint64_t digest = check_digest_from_spec(path);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    CHECK_OK(ss_verify(NULL, s, NULL, NULL));
    ss_close(s);

    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    raw_open(path, 0, &env, &txn, &dbi);
    ss_key key;
    ss__key_named(&key, SS_KEY_ATTR, "note");
    unsigned char payload[8 + 5] = {100, 0, 0, 0, 0, 0, 0, 0, 'a', 'f', 't', 'e', 'r'};
    raw_put_sealed(env, txn, dbi, &key, payload, sizeof payload);

    CHECK_OK(ss_open(&s, path, 0));
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, "note")); /* its own checksum holds */
    CHECK(a.size == 5 && !memcmp(a.data, "after", 5));
    uint64_t problems = 0;
    CHECK_RC(ss_verify(&problems, s, NULL, NULL), SS_ECORRUPT);
    CHECK_EQ_U64(problems, 1);
    CHECK_CONTAINS(ss_error_message(), "content digest differs");
    ss_close(s);
    (void)digest;
}

/* An append in progress (or killed) rewrites a field's last chunk and index
 * segment with more bytes after those the header counts: the shard still
 * verifies, and a dataset of it still reads. */
static void unfinished_append(void) {
    const char *dir = ss_test_keep_path("append");
    char err[4096], path[1024];
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/a.ss", dir);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "convert lines %s -o %s --quiet",
                           ss_test_keep_path("corpus-0.txt"), path),
               0, err);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s a.ss", dir), 0, err);
    ss_writer *w;
    CHECK_OK(ss_writer_open(&w, path, NULL, NULL));
    for (int i = 0; i < 100; i++) {
        ss_value v[2] = {{"more", 4}, {(uint64_t[2]){1, 1}, 1}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_commit(w));
    ss_writer_free(w); /* not finished: the header is the old one */
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    CHECK_OK(ss_verify(NULL, s, NULL, NULL));
    ss_close(s);
    expect_get(dir, 0, 0, NULL);
}

/* A shard as a library before content digests wrote it: its header without
 * the digest and with compat_flags 0, sealed again. */
static void strip_digest(const char *path) {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    raw_open(path, 0, &env, &txn, &dbi);
    ss_key key;
    ss__key_named(&key, SS_KEY_HEADER, NULL);
    MDB_val k = ss_key_val(&key), v;
    CHECK(mdb_get(txn, dbi, &k, &v) == 0);
    uint64_t len = le64((const unsigned char *)v.mv_data + 8) - 8;
    unsigned char payload[SS_HEADER_FIXED + SS_MAX_FIELDS * SS_FIELD_RECORD];
    memcpy(payload, (const unsigned char *)v.mv_data + 16, len);
    memset(payload + 16, 0, 4);
    raw_put_sealed(env, txn, dbi, &key, payload, len);
}

/* Shards of an older library: the dataset builds (with a note that their
 * bytes are not bound), reads and verifies as before. */
static void legacy_shards(void) {
    char err[4096];
    const char *dir = fixed_dataset("legacy", 2, 1, err, sizeof err);
    CHECK_CONTAINS(err, "shard 'part-00000.ss' was written by an older seqstore");
    expect_pair(dir, 20001, 1, 2);
    expect_get(dir, 20001, 0, NULL);
}

int main(void) {
    text_shards();
    fixed_shards();
    char p[1024];
    snprintf(p, sizeof p, "%s/part-00000.ss", ss_test_keep_path("fixed"));
    check_digest_from_spec(p);
    snprintf(p, sizeof p, "%s/part-1.ss", ss_test_keep_path("text"));
    check_digest_from_spec(p);
    replaced_block();
    unfinished_append();
    legacy_shards();
    puts("ok");
    return 0;
}
