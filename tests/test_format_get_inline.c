/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_get_inline.c - ss_get()'s inline fast path (seqstore.h) against
 * the exported function, (ss_get), and against a naive reader of the examples
 * as written: every example of random stores that span several index
 * segments (the last entry of a segment takes the next segment's first),
 * with empty examples, rows of several bytes and a fixed field (which the
 * fast path leaves to the exported function); then stores whose index
 * entries were rewritten to lie (a chunk past the table, rows past the
 * chunk, a row count whose byte size overflows, a wrapped count): both must
 * report SS_ECORRUPT for the lying example, the same message, and read its
 * neighbours as before. Also bad arguments and SS_OPEN_VERIFY. All of it for
 * format version 3 (the flat index, served once checked) and version 2 (the
 * segments, checked on every call). */
#include "testutil.h"

#include "layout.h"

#include <lmdb.h>

static const ss_field fields[3] = {
    {"tokens", SS_U16, 1, 0, {0}}, {"frames", SS_F32, 1, 1, {3}}, {"label", SS_U32, 0, 0, {0}}};
static const ss_schema schema = {3, fields};
#define COUNT 140000u /* three index segments of 65534 or 65536 entries */

static uint64_t g_per, g_lead; /* the index segments of the version under test */

/* The naive reference: example i's lengths and values, from its number. */
static uint64_t len_of(uint64_t i, uint32_t field) {
    uint64_t s = i * 2654435761u + field;
    return ss_test_rand(&s) % (field == 0 ? 6 : 3); /* 0 included: empty examples */
}
static uint32_t value_of(uint64_t i, uint64_t k) {
    return (uint32_t)(i * 31 + k * 7 + 1);
}

static void make_store(const char *path, uint32_t version) {
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.format_version = version;
    o.chunk_pages = 2; /* many chunks */
    o.flags = SS_WRITE_NOSYNC | SS_WRITE_FORCE;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    uint16_t tok[8];
    float fr[8 * 3];
    for (uint64_t i = 0; i < COUNT; i++) {
        uint64_t n0 = len_of(i, 0), n1 = len_of(i, 1);
        for (uint64_t k = 0; k < n0; k++) tok[k] = (uint16_t)value_of(i, k);
        for (uint64_t k = 0; k < n1 * 3; k++) fr[k] = (float)value_of(i, k);
        uint32_t label = value_of(i, 0);
        ss_value v[3] = {{tok, n0}, {fr, n1}, {&label, 1}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

/* Example i of `field` as the naive reader knows it. */
static int naive_matches(const ss_view *v, uint32_t field, uint64_t i) {
    uint64_t n = field == 2 ? 1 : len_of(i, field);
    if (v->length != n || v->data == NULL) return 0;
    for (uint64_t k = 0; k < n * (field == 1 ? 3 : 1); k++) {
        uint32_t want = value_of(i, field == 2 ? 0 : k);
        if (field == 0 && ((const uint16_t *)v->data)[k] != (uint16_t)want) return 0;
        if (field == 1 && ((const float *)v->data)[k] != (float)want) return 0;
        if (field == 2 && ((const uint32_t *)v->data)[k] != want) return 0;
    }
    return 1;
}

/* The inline and the exported ss_get() agree on example i: the code, the
 * whole view (the same pointer into the map), the message. */
static int both(ss_view *out, const ss_store *s, uint32_t field, uint64_t i) {
    ss_view a, b;
    memset(&a, 0xA5, sizeof a);
    memset(&b, 0x5A, sizeof b);
    int ra = ss_get(&a, s, field, i);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", ss_error_message());
    int rb = (ss_get)(&b, s, field, i);
    CHECK_EQ_U64(ra, rb);
    CHECK(a.data == b.data && a.length == b.length && a.row_bytes == b.row_bytes &&
          a.dtype == b.dtype);
    if (ra) CHECK(strcmp(msg, ss_error_message()) == 0);
    *out = a;
    return ra;
}

/* The inline path's table of field `f` (not API: seqstore.h). */
static const ss__fast_field *fast_of(const ss_store *s, uint32_t f) {
    return &((const ss__fast *)(const void *)s)->f[f];
}

static void check_all(const ss_store *s) {
    const uint64_t edges[] = {0,         1,         g_per - 2,     g_per - 1, g_per,
                              g_per + 1, 2 * g_per, 2 * g_per - 1, COUNT - 1};
    for (uint32_t f = 0; f < 3; f++) {
        for (uint64_t i = 0; i < COUNT; i++) {
            ss_view v;
            CHECK_OK(both(&v, s, f, i));
            if (!naive_matches(&v, f, i)) {
                fprintf(stderr, "field %u example %llu differs\n", f, (unsigned long long)i);
                CHECK(0);
            }
            CHECK_EQ_U64(v.row_bytes, f == 0 ? 2 : f == 1 ? 12 : 4);
        }
        /* format 3: the whole flat index was checked and the inline path
         * serves every example (else all of the above tested only the
         * exported function), with SS_OPEN_VERIFY too once every chunk
         * was verified by a read */
        if (f < 2 && g_per == SS_SEGMENT_ENTRIES_V3)
            CHECK(fast_of(s, f)->index != NULL && fast_of(s, f)->checked == COUNT);
        for (size_t k = 0; k < sizeof edges / sizeof *edges; k++) {
            ss_view v;
            CHECK_OK(both(&v, s, f, edges[k]));
            CHECK(naive_matches(&v, f, edges[k]));
        }
    }
}

static void check_bad_arguments(const ss_store *s) {
    ss_view v;
    CHECK_RC(both(&v, s, 0, COUNT), SS_ERANGE);
    CHECK(v.data == NULL && v.length == 0 && v.row_bytes == 0); /* zeroed on failure */
    CHECK_RC(both(&v, s, 0, UINT64_MAX), SS_ERANGE);
    CHECK_RC(both(&v, s, 3, 0), SS_ERANGE);
    CHECK_RC(both(&v, s, SS_MAX_FIELDS, 0), SS_ERANGE);
    CHECK_RC(both(&v, s, UINT32_MAX, 0), SS_ERANGE);
    CHECK_RC(ss_get(&v, NULL, 0, 0), SS_EINVAL);
    CHECK_RC(ss_get(NULL, s, 0, 0), SS_EINVAL);
    CHECK_RC((ss_get)(NULL, s, 0, 0), SS_EINVAL);
}

/* ss_read_examples() of examples [first, first + n) with `cap` bytes
 * against the naive reader built of ss_length() and ss_get(): examples are
 * taken while their length fits in the rows left, each must read (else
 * SS_ECORRUPT), and the bytes are its view's. */
static void check_scan(const ss_store *s, uint64_t first, uint64_t n, uint64_t cap) {
    unsigned char *buf = malloc(cap + 1);
    uint64_t *lengths = malloc(n * sizeof *lengths), got, k, at = 0, left = cap / 2;
    CHECK(buf && lengths);
    int rc = ss_read_examples(&got, buf, lengths, s, 0, first, n, cap), want = 0;
    for (k = 0; k < n; k++) {
        uint64_t len = ss_length(s, 0, first + k);
        if (len > left) break;
        ss_view v;
        if ((want = ss_get(&v, s, 0, first + k)) != 0) break;
        if (rc == 0) {
            CHECK_EQ_U64(lengths[k], len);
            CHECK(len == 0 || memcmp(buf + at, v.data, len * 2) == 0);
        }
        at += len * 2;
        left -= len;
    }
    CHECK_EQ_U64(rc, want);
    if (rc == 0) {
        CHECK_EQ_U64(got, k);
        if (k < n) CHECK_EQ_U64(lengths[k], ss_length(s, 0, first + k));
    }
    free(buf);
    free(lengths);
}

/* Scans of every shape: from the start, across a segment boundary, a `cap`
 * that ends inside a block of the block walk, single examples. */
static void check_scans(const ss_store *s, uint64_t around) {
    check_scan(s, 0, 4096, 1 << 20);
    check_scan(s, around - 300, 600, 1 << 20);
    check_scan(s, around - 300, 600, 777);
    check_scan(s, around - 1, 3, 1 << 20);
    check_scan(s, g_per - 700, 1400, 1 << 20);
    for (uint64_t cap = 0; cap < 3000; cap += 97) check_scan(s, around - 200, 400, cap);
}

/* Rewrite index entry `e` (location, start) of field 0 in place through
 * LMDB; the store must be closed. The segment's checksum goes stale, which
 * only ss_verify() and SS_OPEN_VERIFY look at. */
static void patch_entry(const char *path, uint64_t e, const uint64_t *loc, const uint64_t *start) {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_env_create(&env) == 0);
    CHECK(mdb_env_set_mapsize(env, 1ull << 30) == 0);
    CHECK(mdb_env_open(env, path, MDB_NOSUBDIR, 0644) == 0);
    CHECK(mdb_txn_begin(env, NULL, 0, &txn) == 0);
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi) == 0);
    ss_key key;
    ss__key_numbered(&key, SS_KEY_INDEX, 0, e / g_per);
    MDB_val k = ss_key_val(&key), v;
    CHECK(mdb_get(txn, dbi, &k, &v) == 0);
    unsigned char *copy = malloc(v.mv_size);
    CHECK(copy);
    memcpy(copy, v.mv_data, v.mv_size);
    unsigned char *at = copy + SS_BLOCK_HDR + g_lead + SS_INDEX_ENTRY * (e % g_per);
    if (loc) ss_put_le64(at, *loc);
    if (start) ss_put_le64(at + 8, *start);
    MDB_val nv = {v.mv_size, copy};
    CHECK(mdb_put(txn, dbi, &k, &nv, 0) == 0);
    CHECK(mdb_txn_commit(txn) == 0);
    mdb_env_close(env);
    free(copy);
}

/* The entry of example e of field 0 as stored. */
static void read_entry(const char *path, uint64_t e, uint64_t *loc, uint64_t *start) {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_env_create(&env) == 0);
    CHECK(mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY, 0644) == 0);
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0);
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi) == 0);
    ss_key key;
    ss__key_numbered(&key, SS_KEY_INDEX, 0, e / g_per);
    MDB_val k = ss_key_val(&key), val;
    CHECK(mdb_get(txn, dbi, &k, &val) == 0);
    const unsigned char *p =
        (const unsigned char *)val.mv_data + SS_BLOCK_HDR + g_lead + SS_INDEX_ENTRY * (e % g_per);
    *loc = ss_le64(p);
    *start = ss_le64(p + 8);
    mdb_txn_abort(txn);
    mdb_env_close(env);
}

static void copy_file(const char *from, const char *to) {
    size_t n;
    char *b = ss_test_read_file(from, &n);
    ss_test_write_file(to, b, n);
    free(b);
}

/* Example e's entry rewritten by `loc`/`start` (NULL: kept): the examples in
 * `bad` report SS_ECORRUPT through both paths, e - 2 and e + 2 still read. */
static void lying_entry(const char *good, const char *path, uint64_t e, const uint64_t *loc,
                        const uint64_t *start, uint64_t bad0, uint64_t bad1) {
    copy_file(good, path);
    patch_entry(path, e, loc, start);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_view v;
    for (uint64_t i = bad0; i <= bad1; i++) {
        CHECK_RC(both(&v, s, 0, i), SS_ECORRUPT);
        CHECK(strstr(ss_error_message(), "index points outside its chunk"));
    }
    CHECK_OK(both(&v, s, 0, e - 2));
    CHECK(naive_matches(&v, 0, e - 2));
    CHECK_OK(both(&v, s, 0, e + 2));
    CHECK(naive_matches(&v, 0, e + 2));
    check_scans(s, e);
    /* every example read, the lying one included: the checked prefix of
     * the flat index stops before it */
    for (uint64_t i = 0; i < COUNT; i++) (void)both(&v, s, 0, i);
    if (bad0 <= bad1) CHECK(fast_of(s, 0)->checked <= bad0);
    ss_close(s);
}

/* A non-empty example at or after i whose neighbours are non-empty too. */
static uint64_t solid_after(uint64_t i) {
    while (len_of(i - 1, 0) == 0 || len_of(i, 0) == 0 || len_of(i + 1, 0) == 0) i++;
    return i;
}

static void check_lies(const char *good) {
    const char *path = ss_test_path("lie.ss");
    /* e: an interior example; b: the first of segment 1, whose start ends
     * the last example of segment 0 (the fast path's other branch) */
    uint64_t e = solid_after(1000), b = g_per, loc, start, next_loc, next_start;
    read_entry(good, e, &loc, &start);
    read_entry(good, e + 1, &next_loc, &next_start);
    ss_store *s;
    CHECK_OK(ss_open(&s, good, 0));
    ss_store_info info;
    CHECK_OK(ss_store_get_info(&info, s));
    ss_close(s);

    uint64_t x = SS_LOC(1u << 20, 0); /* a chunk far past the table */
    lying_entry(good, path, e, &x, NULL, e, e);
    x = SS_LOC(SS_LOC_CHUNK(loc), info.chunk_bytes - 1); /* two bytes from the end */
    lying_entry(good, path, e, &x, NULL, e, e);
    x = SS_LOC(SS_LOC_CHUNK(loc), 0xFFFFFFFFu);
    lying_entry(good, path, e, &x, NULL, e, e);
    /* a location inside the chunk but not where the rows before end: ss_get()
     * reads it, so must ss_read_examples() (not the bytes that follow) */
    CHECK(SS_LOC_OFFSET(loc) != 0);
    x = SS_LOC(SS_LOC_CHUNK(loc), 0);
    lying_entry(good, path, e, &x, NULL, 1, 0);
    /* start - 2^40: 2^40 more rows for e, a wrapped count for e - 1 */
    x = next_start - (1ull << 40);
    lying_entry(good, path, e, NULL, &x, e - 1, e);
    /* exactly 2^32 rows: the inline path's widest count */
    x = next_start - (1ull << 32);
    lying_entry(good, path, e, NULL, &x, e - 1, e);
    /* 2^63 rows of 2 bytes: the byte count overflows 64 bits */
    x = next_start - (1ull << 63);
    lying_entry(good, path, e, NULL, &x, e - 1, e);

    /* the segment boundary: the first entry of segment 1 lies, so does the
     * length of the last example of segment 0 */
    uint64_t bloc, bstart;
    read_entry(good, b, &bloc, &bstart);
    (void)bloc;
    (void)next_loc;
    x = bstart + (1ull << 36);
    copy_file(good, path);
    patch_entry(path, b, NULL, &x);
    CHECK_OK(ss_open(&s, path, 0));
    ss_view v;
    CHECK_RC(both(&v, s, 0, b - 1), SS_ECORRUPT);
    CHECK_RC(both(&v, s, 0, b), SS_ECORRUPT);
    CHECK_OK(both(&v, s, 0, b - 2));
    CHECK(naive_matches(&v, 0, b - 2));
    CHECK_OK(both(&v, s, 0, b + 1));
    CHECK(naive_matches(&v, 0, b + 1));
    check_scans(s, b);
    ss_close(s);
}

static void check_version(uint32_t version) {
    const char *good = ss_test_path("good.ss");
    g_per = version >= 3 ? SS_SEGMENT_ENTRIES_V3 : SS_SEGMENT_ENTRIES_V2;
    g_lead = version >= 3 ? SS_SEGMENT_LEAD_V3 : 0;
    make_store(good, version);
    ss_store *s;
    CHECK_OK(ss_open(&s, good, 0));
    ss_store_info info;
    CHECK_OK(ss_store_get_info(&info, s));
    CHECK_EQ_U64(info.format_version, version);
    check_all(s);
    check_bad_arguments(s);
    check_scans(s, 5000);
    ss_close(s);
    /* SS_OPEN_VERIFY: the out-of-line path until a read verified the
     * chunk, then the inline one: same answers */
    CHECK_OK(ss_open(&s, good, SS_OPEN_VERIFY));
    check_all(s);
    ss_close(s);
    check_lies(good);
}

int main(void) {
    check_version(3);
    check_version(2);
    printf("test_format_get_inline: ok\n");
    return 0;
}
