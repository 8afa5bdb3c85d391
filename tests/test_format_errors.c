/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_errors.c - bad input gives its specific error, never a crash:
 * non-store files, empty and truncated files, flipped bytes found by verify,
 * a newer format version, an incomplete store, bad names and indices, bad
 * writer input, and read-only media opened with SS_OPEN_NOLOCK. */
#include "testutil.h"

#include "layout.h"

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK_MSG(substr)                                                                          \
    do {                                                                                           \
        if (!strstr(ss_error_message(), (substr))) {                                               \
            fprintf(stderr, "%s:%d: message '%s' does not contain '%s'\n", __FILE__, __LINE__,     \
                    ss_error_message(), (substr));                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* ------------------------------------------------------------ test store */

/* Two fields: "tokens" (u16 sequence) and "label" (u32 fixed). Contents are
 * a pure function of the example index. */
static const ss_field test_fields[2] = {{"tokens", SS_U16, 1, 0, {0}},
                                        {"label", SS_U32, 0, 0, {0}}};
static const ss_schema test_schema = {2, test_fields};

static uint64_t tok_len(uint64_t i) {
    return 1 + (i * 37) % 300;
}
static uint16_t tok_at(uint64_t i, uint64_t k) {
    return (uint16_t)(i * 7919 + k * 31 + 1);
}
static uint32_t label_of(uint64_t i) {
    return (uint32_t)(i * 2654435761u);
}

#define TEST_CHUNK_PAGES 2u
#define TEST_COUNT 2000u

static void append_range(ss_writer *w, uint64_t first, uint64_t last) {
    uint16_t buf[300];
    for (uint64_t i = first; i < last; i++) {
        uint64_t n = tok_len(i);
        for (uint64_t k = 0; k < n; k++) buf[k] = tok_at(i, k);
        uint32_t label = label_of(i);
        ss_value v[2] = {{buf, n}, {&label, 1}};
        CHECK_OK(ss_writer_append(w, v));
    }
}

static void make_store(const char *path, uint64_t count) {
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.chunk_pages = TEST_CHUNK_PAGES;
    o.flags = SS_WRITE_NOSYNC | SS_WRITE_FORCE;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &test_schema, &o));
    append_range(w, 0, count);
    CHECK_OK(ss_writer_set_attr(w, "note", SS_ATTR_TEXT, "hi", 2));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

/* Every example of `s` holds what append_range() wrote. */
static void check_contents(const ss_store *s, uint64_t count) {
    CHECK_EQ_U64(ss_count(s), count);
    for (uint64_t i = 0; i < count; i++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, 0, i));
        CHECK_EQ_U64(v.length, tok_len(i));
        const uint16_t *t = v.data;
        for (uint64_t k = 0; k < v.length; k++) CHECK(t[k] == tok_at(i, k));
        CHECK_OK(ss_get(&v, s, 1, i));
        CHECK(*(const uint32_t *)v.data == label_of(i));
    }
}

/* Naive model of the writer's packing (spec §6.1): examples go into the
 * current chunk while they fit, else into the next one. Returns the examples
 * [first, last) of `chunk` of the "tokens" field. */
static void naive_chunk_examples(uint64_t count, uint64_t chunk, uint64_t *first, uint64_t *last) {
    uint64_t cap = ss_chunk_capacity(TEST_CHUNK_PAGES), used = 0, c = 0;
    *first = *last = UINT64_MAX;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t b = tok_len(i) * 2;
        if (b > cap - used && used > 0) c++, used = 0;
        used += b;
        if (c == chunk && *first == UINT64_MAX) *first = i;
        if (c == chunk) *last = i + 1;
    }
}

static void copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    CHECK(in && out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) CHECK(fwrite(buf, 1, n, out) == n);
    fclose(in);
    CHECK(fclose(out) == 0);
    char lock[1024];
    snprintf(lock, sizeof lock, "%s-lock", to);
    unlink(lock);
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f);
    if (n) CHECK(fwrite(data, 1, n, f) == n);
    CHECK(fclose(f) == 0);
}

static uint64_t file_size(const char *path) {
    struct stat st;
    CHECK(stat(path, &st) == 0);
    return (uint64_t)st.st_size;
}

/* ------------------------------------------------- raw LMDB manipulation */

typedef struct raw_env {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
} raw_env;

static void raw_open(raw_env *r, const char *path, int rdonly) {
    CHECK(mdb_env_create(&r->env) == 0);
    CHECK(mdb_env_set_mapsize(r->env, file_size(path) * 2 + (64u << 20)) == 0);
    CHECK(mdb_env_open(r->env, path, MDB_NOSUBDIR | (rdonly ? MDB_RDONLY : 0), 0644) == 0);
    CHECK(mdb_txn_begin(r->env, NULL, rdonly ? MDB_RDONLY : 0, &r->txn) == 0);
    CHECK(mdb_dbi_open(r->txn, NULL, 0, &r->dbi) == 0);
}

static void raw_close(raw_env *r, int commit) {
    if (commit)
        CHECK(mdb_txn_commit(r->txn) == 0);
    else
        mdb_txn_abort(r->txn);
    mdb_env_close(r->env);
}

typedef void (*header_edit)(unsigned char *payload);

/* Rewrite the header block through LMDB: edit its payload, then reseal it
 * (new checksum) or leave the old checksum in place. */
static void patch_header(const char *path, header_edit edit, int reseal) {
    raw_env r;
    raw_open(&r, path, 0);
    ss_key key;
    ss__key_named(&key, SS_KEY_HEADER, NULL);
    MDB_val k = ss_key_val(&key), v;
    CHECK(mdb_get(r.txn, r.dbi, &k, &v) == 0);
    unsigned char *copy = malloc(v.mv_size);
    CHECK(copy);
    memcpy(copy, v.mv_data, v.mv_size);
    uint64_t len = ss_le64(copy + 8);
    edit(copy + SS_BLOCK_HDR);
    if (reseal) ss__block_seal(copy, v.mv_size, len, &key, ss_le32(copy + SS_BLOCK_HDR + 8));
    MDB_val nv = {v.mv_size, copy};
    CHECK(mdb_put(r.txn, r.dbi, &k, &nv, 0) == 0);
    raw_close(&r, 1);
    free(copy);
}

static void delete_key(const char *path, const ss_key *key) {
    raw_env r;
    raw_open(&r, path, 0);
    MDB_val k = {key->size, (void *)key->bytes};
    CHECK(mdb_del(r.txn, r.dbi, &k, NULL) == 0);
    raw_close(&r, 1);
}

/* File offset of the mapped address `p`, from /proc/self/maps (LMDB does not
 * report where it mapped the file). */
static uint64_t mapped_file_offset(const void *p) {
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f);
    char line[1024];
    uintptr_t a = (uintptr_t)p;
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi, off;
        if (sscanf(line, "%llx-%llx %*s %llx", &lo, &hi, &off) == 3 && a >= lo && a < hi) {
            fclose(f);
            return (uint64_t)(a - lo + off);
        }
    }
    fclose(f);
    fprintf(stderr, "address %p is not mapped\n", p);
    exit(1);
}

/* File offset of byte `at` of the payload of block `key`. */
static uint64_t block_file_offset(const char *path, const ss_key *key, uint64_t at) {
    raw_env r;
    raw_open(&r, path, 1);
    MDB_val k = {key->size, (void *)key->bytes}, v;
    CHECK(mdb_get(r.txn, r.dbi, &k, &v) == 0);
    CHECK(at < ss_le64((const unsigned char *)v.mv_data + 8));
    uint64_t off = mapped_file_offset((const unsigned char *)v.mv_data + SS_BLOCK_HDR + at);
    raw_close(&r, 0);
    return off;
}

static void flip_byte(const char *path, uint64_t offset) {
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    unsigned char b;
    CHECK(pread(fd, &b, 1, (off_t)offset) == 1);
    b ^= 0x5A;
    CHECK(pwrite(fd, &b, 1, (off_t)offset) == 1);
    close(fd);
}

static void edit_version2(unsigned char *p) {
    ss_put_le32(p + 8, SS_FORMAT_VERSION + 1);
}
static void edit_unknown_incompat(unsigned char *p) {
    ss_put_le32(p + 12, 0x4);
}
static void edit_padding(unsigned char *p) {
    p[36] ^= 1; /* between chunk_pages and segment_entries: reserved */
}
/* field records start at 48, 112 bytes each: name[48], dtype, sequence,
 * ndim, 5 reserved bytes, dims, total_rows, nchunks, tail_bytes */
static void edit_field_reserved(unsigned char *p) {
    p[SS_HEADER_FIXED + 51] = 1;
}
static void edit_name_padding(unsigned char *p) {
    p[SS_HEADER_FIXED + 40] = 'x'; /* after "tokens" and its NUL */
}
static void edit_duplicate_name(unsigned char *p) {
    memcpy(p + SS_HEADER_FIXED + SS_FIELD_RECORD, "tokens", 7); /* field 1 was "label" */
}
static void edit_sequence_byte(unsigned char *p) {
    p[SS_HEADER_FIXED + 49] = 2;
}
static void edit_fixed_chunks(unsigned char *p) {
    unsigned char *n = p + SS_HEADER_FIXED + SS_FIELD_RECORD + 96; /* label's nchunks */
    ss_put_le64(n, ss_le64(n) - 1);
}
static void edit_version0(unsigned char *p) {
    ss_put_le32(p + 8, 0);
}
static void edit_count(unsigned char *p) {
    ss_put_le64(p + 24, ss_le64(p + 24) + 1);
}
static void edit_dtype(unsigned char *p) {
    p[SS_HEADER_FIXED + 48] = 99;
}
static void edit_magic(unsigned char *p) {
    p[0] = 'X';
}

/* ------------------------------------------------------------------ tests */

/* Failures that do not stop the test (crashes caught in a child process). */
static int deferred_failures;

static void test_not_a_store(void) {
    ss_store *s = (ss_store *)1;
    CHECK_RC(ss_open(&s, ss_test_path("missing.ss"), 0), SS_ENOTFOUND);
    CHECK(s == NULL);
    CHECK_MSG("missing.ss");

    const char *empty = ss_test_path("empty-file.ss");
    write_file(empty, "", 0);
    CHECK_RC(ss_open(&s, empty, 0), SS_ENOTSTORE);
    CHECK(s == NULL);
    CHECK_MSG("empty");

    const char *text = ss_test_path("text.ss");
    char lines[20000];
    for (size_t i = 0; i < sizeof lines; i++) lines[i] = (char)('a' + i % 26);
    write_file(text, lines, sizeof lines);
    CHECK_RC(ss_open(&s, text, 0), SS_ENOTSTORE);
    CHECK_MSG("not a seqstore store");

    const char *tiny = ss_test_path("tiny.ss");
    write_file(tiny, "SEQSTORE", 8);
    CHECK_RC(ss_open(&s, tiny, 0), SS_ENOTSTORE);

    const char *noise = ss_test_path("noise.ss");
    static unsigned char rnd[1 << 20];
    uint64_t st = 42;
    for (size_t i = 0; i < sizeof rnd; i++) rnd[i] = (unsigned char)ss_test_rand(&st);
    write_file(noise, rnd, sizeof rnd);
    CHECK_RC(ss_open(&s, noise, 0), SS_ENOTSTORE);

    CHECK_RC(ss_open(&s, ss_test_tmpdir(), 0), SS_ENOTSTORE);
    CHECK_RC(ss_open(&s, "", 0), SS_EINVAL);
    CHECK_RC(ss_open(&s, NULL, 0), SS_EINVAL);
    CHECK_RC(ss_open(NULL, text, 0), SS_EINVAL);

    /* a valid LMDB environment that holds other data: no header */
    const char *lmdb = ss_test_path("plain-lmdb.ss");
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_env_create(&env) == 0);
    CHECK(mdb_env_open(env, lmdb, MDB_NOSUBDIR, 0644) == 0);
    CHECK(mdb_txn_begin(env, NULL, 0, &txn) == 0);
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi) == 0);
    MDB_val k = {3, "key"}, v = {5, "value"};
    CHECK(mdb_put(txn, dbi, &k, &v, 0) == 0);
    CHECK(mdb_txn_commit(txn) == 0);
    mdb_env_close(env);
    CHECK_RC(ss_open(&s, lmdb, 0), SS_ENOTSTORE);
    CHECK_MSG("no header");
    ss_writer *w = (ss_writer *)1;
    CHECK_RC(ss_writer_open(&w, lmdb, NULL, NULL), SS_ENOTSTORE);
    CHECK(w == NULL);
    CHECK_RC(ss_writer_open(&w, text, NULL, NULL), SS_ENOTSTORE);
    CHECK_RC(ss_writer_open(&w, empty, NULL, NULL), SS_ENOTSTORE);
    CHECK_RC(ss_writer_open(&w, ss_test_path("missing.ss"), NULL, NULL), SS_ENOTFOUND);
    ss_close(NULL);
    ss_writer_free(NULL);
}

static void test_truncated(const char *good) {
    uint64_t size = file_size(good);
    CHECK(size > 64 * 4096);
    const char *cut = ss_test_path("truncated.ss");
    uint64_t sizes[40];
    int n = 0;
    for (int k = 1; k < 16; k++) sizes[n++] = size * (uint64_t)k / 16;
    uint64_t fixed[] = {1,    19,   20,   100,      4095,        4096,    4097,
                        8191, 8192, 8193, 3 * 4096, size - 4096, size - 1};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) sizes[n++] = fixed[i];
    for (int i = 0; i < n; i++) {
        copy_file(good, cut);
        CHECK(truncate(cut, (off_t)sizes[i]) == 0);
        ss_store *s;
        int rc = ss_open(&s, cut, 0);
        /* Once LMDB's magic number (bytes 16..19) is there, it is a store
         * missing its end, also below the two meta pages (8 KiB). */
        int ok = sizes[i] < 20 ? rc == SS_ENOTSTORE
                               : rc == SS_ECORRUPT && strstr(ss_error_message(), "truncated");
        if (!ok) {
            fprintf(stderr, "truncated to %llu: rc %d (%s)\n", (unsigned long long)sizes[i], rc,
                    ss_error_message());
            exit(1);
        }
        CHECK(s == NULL);
        /* the writer must refuse it too; a crash here is a library bug, so
         * it runs in a child and is reported without stopping the test */
        fflush(stdout);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            ss_writer *w;
            rc = ss_writer_open(&w, cut, NULL, NULL);
            if (rc < 0 && w == NULL) _exit(0);
            fprintf(stderr, "ss_writer_open returned %d (%s)\n", rc, ss_error_message());
            _exit(1);
        }
        int status;
        CHECK(waitpid(pid, &status, 0) == pid);
        if (WIFSIGNALED(status)) {
            fprintf(stderr,
                    "FAIL: ss_writer_open on a store truncated to %llu bytes: killed by signal "
                    "%d\n",
                    (unsigned long long)sizes[i], WTERMSIG(status));
            deferred_failures++;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "FAIL: ss_writer_open accepted a store truncated to %llu bytes\n",
                    (unsigned long long)sizes[i]);
            deferred_failures++;
        }
    }
}

typedef struct seen {
    int calls;
    ss_verify_problem p[4];
    char what[4][64];
} seen;

static int record_problem(void *ctx, const ss_verify_problem *p) {
    seen *sn = ctx;
    if (sn->calls < 4) {
        sn->p[sn->calls] = *p;
        snprintf(sn->what[sn->calls], sizeof sn->what[0], "%s", p->what);
    }
    sn->calls++;
    return 0;
}

static void test_flipped_bytes(const char *good) {
    const char *bad = ss_test_path("flipped.ss");
    ss_store *s;
    ss_key key;
    uint64_t problems;

    /* the pristine store verifies clean */
    CHECK_OK(ss_open(&s, good, 0));
    CHECK_OK(ss_verify(&problems, s, NULL, NULL));
    CHECK_EQ_U64(problems, 0);
    ss_store_info info;
    CHECK_OK(ss_store_get_info(&info, s));
    CHECK_EQ_U64(info.chunk_bytes, ss_chunk_capacity(TEST_CHUNK_PAGES));
    ss_close(s);

    /* one byte of data chunk 5 of "tokens", flipped on disk */
    copy_file(good, bad);
    ss__key_numbered(&key, SS_KEY_DATA, 0, 5);
    flip_byte(bad, block_file_offset(bad, &key, 100));
    CHECK_OK(ss_open(&s, bad, 0)); /* opening does not hash data */
    seen sn;
    memset(&sn, 0, sizeof sn);
    CHECK_RC(ss_verify(&problems, s, record_problem, &sn), SS_ECORRUPT);
    CHECK_EQ_U64(problems, 1);
    CHECK_EQ_U64(sn.calls, 1);
    CHECK(strcmp(sn.what[0], "data chunk checksum mismatch") == 0);
    CHECK(sn.p[0].field == 0);
    CHECK_EQ_U64(sn.p[0].chunk, 5);
    uint64_t first, last;
    naive_chunk_examples(TEST_COUNT, 5, &first, &last);
    CHECK(first != UINT64_MAX);
    CHECK_EQ_U64(sn.p[0].first_example, first);
    CHECK_EQ_U64(sn.p[0].last_example, last);
    CHECK_MSG("field 'tokens' data chunk 5");
    CHECK_MSG("checksum mismatch");
    ss_close(s);

    /* one byte of the fixed field's only chunk: examples [0, count) */
    copy_file(good, bad);
    ss__key_numbered(&key, SS_KEY_DATA, 1, 0);
    flip_byte(bad, block_file_offset(bad, &key, 4 * 777 + 2));
    CHECK_OK(ss_open(&s, bad, 0));
    memset(&sn, 0, sizeof sn);
    CHECK_RC(ss_verify(&problems, s, record_problem, &sn), SS_ECORRUPT);
    CHECK_EQ_U64(problems, 1);
    CHECK(sn.p[0].field == 1 && sn.p[0].chunk == 0);
    CHECK_EQ_U64(sn.p[0].first_example, 0);
    CHECK_EQ_U64(sn.p[0].last_example, TEST_COUNT);
    CHECK_MSG("field 'label'");
    ss_view v;
    CHECK_OK(ss_get(&v, s, 1, 777)); /* reads do not hash: the flip is visible */
    CHECK(*(const uint32_t *)v.data != label_of(777));
    ss_close(s);

    /* flips in two chunks: both reported, the callback can stop early */
    copy_file(good, bad);
    ss__key_numbered(&key, SS_KEY_DATA, 0, 1);
    flip_byte(bad, block_file_offset(bad, &key, 0));
    ss__key_numbered(&key, SS_KEY_DATA, 0, 9);
    flip_byte(bad, block_file_offset(bad, &key, 7));
    CHECK_OK(ss_open(&s, bad, 0));
    memset(&sn, 0, sizeof sn);
    CHECK_RC(ss_verify(&problems, s, record_problem, &sn), SS_ECORRUPT);
    CHECK_EQ_U64(problems, 2);
    CHECK(sn.p[0].chunk == 1 && sn.p[1].chunk == 9);
    CHECK_MSG("chunk 1");
    ss_close(s);

    /* a flipped byte in an index segment */
    copy_file(good, bad);
    ss__key_numbered(&key, SS_KEY_INDEX, 0, 0);
    flip_byte(bad, block_file_offset(bad, &key, SS_INDEX_ENTRY * 1000 + 9));
    CHECK_OK(ss_open(&s, bad, 0));
    memset(&sn, 0, sizeof sn);
    CHECK_RC(ss_verify(&problems, s, record_problem, &sn), SS_ECORRUPT);
    CHECK(problems >= 1);
    CHECK(strcmp(sn.what[0], "index segment checksum mismatch") == 0);
    CHECK(sn.p[0].field == 0 && sn.p[0].chunk == 0);
    /* the bad entry (example 1000's start row) gives an error, not a crash */
    int rc999 = ss_get(&v, s, 0, 999), rc1000 = ss_get(&v, s, 0, 1000);
    CHECK(rc999 == 0 || rc999 == SS_ECORRUPT);
    CHECK(rc1000 == 0 || rc1000 == SS_ECORRUPT);
    ss_close(s);

    /* the attribute's checksum is checked at every lookup */
    copy_file(good, bad);
    ss__key_named(&key, SS_KEY_ATTR, "note");
    flip_byte(bad, block_file_offset(bad, &key, SS_ATTR_PREFIX));
    CHECK_OK(ss_open(&s, bad, 0));
    ss_attr a;
    CHECK_RC(ss_attr_get(&a, s, "note"), SS_ECORRUPT);
    CHECK_MSG("note");
    CHECK_RC(ss_attr_at(&a, s, 0), SS_ECORRUPT);
    memset(&sn, 0, sizeof sn);
    CHECK_RC(ss_verify(&problems, s, record_problem, &sn), SS_ECORRUPT);
    CHECK_EQ_U64(problems, 1);
    CHECK(strcmp(sn.what[0], "attribute checksum mismatch") == 0 && sn.p[0].field == SS_FIELD_NONE);
    ss_close(s);

    /* random flips anywhere in the data and index payloads never crash */
    uint64_t rng = 7;
    for (int trial = 0; trial < 40; trial++) {
        copy_file(good, bad);
        int nflips = 1 + (int)(ss_test_rand(&rng) % 4);
        for (int f = 0; f < nflips; f++) {
            int idx = ss_test_rand(&rng) % 3 == 0;
            uint64_t nblocks = idx ? 1 : 20;
            ss__key_numbered(&key, idx ? SS_KEY_INDEX : SS_KEY_DATA, 0,
                             ss_test_rand(&rng) % nblocks);
            uint64_t span = idx ? (TEST_COUNT + 1) * SS_INDEX_ENTRY : 4000;
            flip_byte(bad, block_file_offset(bad, &key, ss_test_rand(&rng) % span));
        }
        int rc = ss_open(&s, bad, 0);
        if (rc) {
            CHECK(rc == SS_ECORRUPT && s == NULL);
            continue;
        }
        for (uint64_t i = 0; i < TEST_COUNT; i++) {
            rc = ss_get(&v, s, 0, i);
            CHECK(rc == 0 || rc == SS_ECORRUPT);
            if (rc == 0 && v.length) {
                volatile uint16_t t = ((const uint16_t *)v.data)[v.length - 1];
                (void)t;
            }
        }
        uint64_t flat = ss_flat_size(s, 0);
        unsigned char *buf = malloc(flat * 2 + 1);
        CHECK(buf);
        rc = ss_flat_read(buf, s, 0, 0, flat);
        CHECK(rc == 0 || rc == SS_ECORRUPT);
        free(buf);
        CHECK_RC(ss_verify(&problems, s, NULL, NULL), SS_ECORRUPT);
        CHECK(problems >= 1);
        ss_close(s);
    }
}

static void test_header_edits(const char *good) {
    const char *bad = ss_test_path("header.ss");
    ss_store *s;
    ss_writer *w;

    /* a store written by a newer library: version 2, correctly checksummed */
    copy_file(good, bad);
    patch_header(bad, edit_version2, 1);
    CHECK_RC(ss_open(&s, bad, 0), SS_EVERSION);
    CHECK(s == NULL);
    char want[64];
    snprintf(want, sizeof want, "format version %d is newer than this library's %d",
             SS_FORMAT_VERSION + 1, SS_FORMAT_VERSION);
    CHECK_MSG(want);
    CHECK_RC(ss_writer_open(&w, bad, NULL, NULL), SS_EVERSION);
    CHECK(w == NULL);

    copy_file(good, bad);
    patch_header(bad, edit_unknown_incompat, 1);
    CHECK_RC(ss_open(&s, bad, 0), SS_EVERSION);
    CHECK_MSG("0x4");

    copy_file(good, bad);
    patch_header(bad, edit_padding, 0);
    CHECK_RC(ss_open(&s, bad, 0), SS_ECORRUPT);
    CHECK_MSG("metadata checksum mismatch");
    CHECK_RC(ss_writer_open(&w, bad, NULL, NULL), SS_ECORRUPT);

    /* headers the checksum covers that break a rule of spec §5: refused by
     * the reader (and so by verify, which opens the store first) */
    static const struct {
        header_edit edit;
        int code;
        const char *message;
    } rules[] = {
        {edit_padding, SS_ECORRUPT, "header bytes 36..39 are reserved and must be zero"},
        {edit_field_reserved, SS_ECORRUPT,
         "field 0: record bytes 51..55 are reserved and must be zero"},
        {edit_name_padding, SS_ECORRUPT,
         "field 0: name bytes after the terminating NUL must be zero"},
        {edit_duplicate_name, SS_ECORRUPT,
         "fields 0 and 1 are both named 'tokens' (names must be unique)"},
        {edit_sequence_byte, SS_ECORRUPT, "field 0: field 'tokens': sequence must be 0 or 1"},
        {edit_fixed_chunks, SS_ECORRUPT, "fixed field 'label': "},
        {edit_version0, SS_ECORRUPT, "format version 0 is not valid"},
    };
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++) {
        copy_file(good, bad);
        patch_header(bad, rules[i].edit, 1);
        CHECK_RC(ss_open(&s, bad, 0), rules[i].code);
        CHECK_MSG(rules[i].message);
        CHECK_RC(ss_open(&s, bad, SS_OPEN_VERIFY), rules[i].code);
        CHECK_RC(ss_writer_open(&w, bad, NULL, NULL), rules[i].code);
        char err[4096];
        CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "verify %s", bad), 3, err); /* corrupt */
        CHECK_CONTAINS(err, rules[i].message);
    }

    copy_file(good, bad);
    patch_header(bad, edit_count, 1);
    CHECK_RC(ss_open(&s, bad, 0), SS_ECORRUPT);

    copy_file(good, bad);
    patch_header(bad, edit_dtype, 1);
    CHECK_RC(ss_open(&s, bad, 0), SS_ECORRUPT);
    CHECK_MSG("field 0");

    copy_file(good, bad);
    patch_header(bad, edit_magic, 1);
    CHECK_RC(ss_open(&s, bad, 0), SS_ENOTSTORE);
    CHECK_MSG("bad magic");

    ss_key key;
    copy_file(good, bad);
    ss__key_named(&key, SS_KEY_HEADER, NULL);
    delete_key(bad, &key);
    CHECK_RC(ss_open(&s, bad, 0), SS_ENOTSTORE);

    copy_file(good, bad);
    ss__key_numbered(&key, SS_KEY_DATA, 0, 3);
    delete_key(bad, &key);
    CHECK_RC(ss_open(&s, bad, 0), SS_ECORRUPT);
    CHECK_MSG("data chunk 3 is missing");

    copy_file(good, bad);
    ss__key_numbered(&key, SS_KEY_INDEX, 0, 0);
    delete_key(bad, &key);
    CHECK_RC(ss_open(&s, bad, 0), SS_ECORRUPT);
    CHECK_MSG("index segment 0 is missing");
}

static void test_incomplete(void) {
    const char *path = ss_test_path("incomplete.ss");
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.chunk_pages = TEST_CHUNK_PAGES;
    o.flags = SS_WRITE_NOSYNC;
    ss_writer *w;
    ss_store *s;
    CHECK_OK(ss_writer_create(&w, path, &test_schema, &o));
    /* one LMDB environment per file per process: no reader beside a writer */
    CHECK_RC(ss_open(&s, path, 0), SS_EBUSY);
    CHECK(s == NULL);
    ss_writer_free(w);
    /* created but nothing committed beyond the empty header */
    CHECK_RC(ss_open(&s, path, 0), SS_EINCOMPLETE);
    CHECK_MSG("0 examples committed");
    o.flags |= SS_WRITE_RESUME;
    CHECK_OK(ss_writer_open(&w, path, &test_schema, &o));
    CHECK_EQ_U64(ss_writer_count(w), 0);
    append_range(w, 0, 500);
    CHECK_OK(ss_writer_commit(w));
    append_range(w, 500, 700); /* never committed */
    ss_writer_free(w);

    CHECK_RC(ss_open(&s, path, 0), SS_EINCOMPLETE);
    CHECK(s == NULL);
    CHECK_MSG("500 examples committed");
    CHECK_RC(ss_writer_open(&w, path, NULL, NULL), SS_EINCOMPLETE);
    CHECK(w == NULL);

    /* the committed prefix is readable on request */
    CHECK_OK(ss_open(&s, path, SS_OPEN_INCOMPLETE));
    ss_store_info info;
    CHECK_OK(ss_store_get_info(&info, s));
    CHECK(info.complete == 0);
    check_contents(s, 500);
    ss_close(s);

    /* and resuming finishes it */
    CHECK_OK(ss_writer_open(
        &w, path, &test_schema,
        &(ss_writer_options){SS_WRITER_OPTIONS_VERSION, SS_WRITE_RESUME, 0, 0, 0, 0}));
    CHECK_EQ_U64(ss_writer_count(w), 500);
    append_range(w, 500, 900);
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    CHECK_OK(ss_open(&s, path, 0));
    CHECK_OK(ss_store_get_info(&info, s));
    CHECK(info.complete == 1);
    check_contents(s, 900);
    CHECK_OK(ss_verify(NULL, s, NULL, NULL));
    ss_close(s);
}

static void test_bad_arguments(const char *good) {
    ss_store *s;
    CHECK_OK(ss_open(&s, good, 0));
    ss_view v;
    uint32_t fi = 77;
    CHECK_RC(ss_field_index(&fi, s, "tokenz"), SS_ENOTFOUND);
    CHECK_MSG("no field 'tokenz'");
    CHECK(fi == 77); /* unchanged on failure */
    CHECK_RC(ss_field_index(&fi, s, ""), SS_ENOTFOUND);
    CHECK_RC(ss_field_index(&fi, s, NULL), SS_EINVAL);
    CHECK_RC(ss_field_index(NULL, s, "label"), SS_EINVAL);
    CHECK_OK(ss_field_index(&fi, s, "label"));
    CHECK_EQ_U64(fi, 1);

    CHECK_RC(ss_get(&v, s, 0, TEST_COUNT), SS_ERANGE);
    CHECK_MSG("example 2000 is out of range (2000 examples)");
    CHECK_RC(ss_get(&v, s, 0, UINT64_MAX), SS_ERANGE);
    CHECK_RC(ss_get(&v, s, 1, TEST_COUNT), SS_ERANGE);
    CHECK_RC(ss_get(&v, s, 2, 0), SS_ERANGE);
    CHECK_MSG("field 2");
    CHECK_RC(ss_get(&v, s, UINT32_MAX, 0), SS_ERANGE);
    CHECK_RC(ss_get(NULL, s, 0, 0), SS_EINVAL);
    CHECK_RC(ss_get(&v, NULL, 0, 0), SS_EINVAL);

    uint64_t len5 = tok_len(5);
    CHECK_OK(ss_get_range(&v, s, 0, 5, 0, len5));
    CHECK_EQ_U64(v.length, len5);
    CHECK_OK(ss_get_range(&v, s, 0, 5, len5, len5));
    CHECK_EQ_U64(v.length, 0);
    CHECK_RC(ss_get_range(&v, s, 0, 5, 0, len5 + 1), SS_ERANGE);
    CHECK_MSG("example 5");
    CHECK_RC(ss_get_range(&v, s, 0, 5, 3, 2), SS_ERANGE);
    CHECK_RC(ss_get_range(&v, s, 0, TEST_COUNT, 0, 0), SS_ERANGE);

    CHECK_EQ_U64(ss_length(s, 0, 5), len5);
    CHECK_EQ_U64(ss_length(s, 0, TEST_COUNT), 0);
    CHECK_EQ_U64(ss_length(s, 2, 0), 0);
    CHECK_EQ_U64(ss_length(NULL, 0, 0), 0);
    uint64_t lens[4];
    CHECK_OK(ss_lengths(lens, s, 0, TEST_COUNT - 2, 2));
    CHECK_EQ_U64(lens[1], tok_len(TEST_COUNT - 1));
    CHECK_OK(ss_lengths(lens, s, 0, TEST_COUNT, 0));
    CHECK_RC(ss_lengths(lens, s, 0, TEST_COUNT - 1, 2), SS_ERANGE);
    CHECK_RC(ss_lengths(lens, s, 0, UINT64_MAX, 2), SS_ERANGE);
    CHECK_RC(ss_lengths(lens, s, 0, 2, UINT64_MAX), SS_ERANGE);
    CHECK_RC(ss_lengths(lens, s, 3, 0, 1), SS_ERANGE);

    ss_field info;
    CHECK_RC(ss_field_info(&info, s, 2), SS_ERANGE);
    CHECK_EQ_U64(ss_field_row_bytes(s, 2), 0);
    CHECK_EQ_U64(ss_field_row_bytes(s, 0), 2);

    uint64_t flat = ss_flat_size(s, 0), ex, off;
    CHECK_EQ_U64(ss_flat_size(s, 5), 0);
    CHECK_RC(ss_flat_locate(&ex, &off, s, 0, flat), SS_ERANGE);
    CHECK_RC(ss_flat_locate(&ex, &off, s, 0, UINT64_MAX), SS_ERANGE);
    CHECK_RC(ss_flat_locate(&ex, &off, s, 9, 0), SS_ERANGE);
    uint16_t buf[8];
    CHECK_RC(ss_flat_read(buf, s, 0, flat - 1, flat + 1), SS_ERANGE);
    CHECK_RC(ss_flat_read(buf, s, 0, 5, 4), SS_ERANGE);
    CHECK_OK(ss_flat_read(buf, s, 0, flat - 2, flat));
    CHECK(buf[1] == tok_at(TEST_COUNT - 1, tok_len(TEST_COUNT - 1) - 1));

    ss_attr a;
    CHECK_RC(ss_attr_get(&a, s, "nope"), SS_ENOTFOUND);
    CHECK_MSG("nope");
    CHECK_EQ_U64(ss_attr_count(s), 2); /* note, ss.lengths of the sequence field */
    CHECK_RC(ss_attr_at(&a, s, 2), SS_ERANGE);
    CHECK_OK(ss_attr_at(&a, s, 0));
    CHECK(a.size == 2 && memcmp(a.data, "hi", 2) == 0);
    ss_close(s);

    /* error codes and their fixed texts */
    CHECK(strcmp(ss_strerror(SS_ECORRUPT), "store is corrupt") == 0);
    CHECK(strcmp(ss_strerror(SS_EINCOMPLETE), "store is incomplete") == 0);
    CHECK(strcmp(ss_strerror(SS_EVERSION), "unsupported format version") == 0);
    CHECK(strcmp(ss_strerror(0), "success") == 0);
    CHECK(strcmp(ss_strerror(-99), "unknown error") == 0);
    CHECK(strcmp(ss_strerror(3), "unknown error") == 0);
    CHECK(strcmp(ss_error_name(SS_ECORRUPT), "SS_ECORRUPT") == 0);
    CHECK(strcmp(ss_error_name(SS_ITEROVER), "SS_ITEROVER") == 0);
    CHECK(strcmp(ss_error_name(SS_EBUFS), "SS_EBUFS") == 0);
    CHECK(strcmp(ss_error_name(0), "SS_OK") == 0);
    CHECK(strcmp(ss_error_name(-99), "SS_UNKNOWN") == 0);
    ss_dtype dt;
    CHECK_RC(ss_dtype_parse(&dt, "u17"), SS_EINVAL);
    CHECK(ss_dtype_name((ss_dtype)0) == NULL && ss_dtype_size((ss_dtype)13) == 0);
}

static void expect_bad_schema(const ss_field *fields, uint32_t n, const char *needle) {
    const char *path = ss_test_path("bad-schema.ss");
    ss_schema sc = {n, fields};
    ss_writer *w = (ss_writer *)1;
    CHECK_RC(ss_writer_create(&w, path, &sc, NULL), SS_EINVAL);
    CHECK(w == NULL);
    if (needle) CHECK_MSG(needle);
    struct stat st;
    CHECK(stat(path, &st) != 0); /* nothing was created */
}

static void test_writer_input(const char *good) {
    ss_field f[2] = {{"a", SS_U8, 1, 0, {0}}, {"b", SS_F32, 0, 1, {3, 0, 0, 0}}};
    expect_bad_schema(f, 0, NULL);
    expect_bad_schema(NULL, 1, NULL);
    f[1].name = "a";
    expect_bad_schema(f, 2, "'a' appears twice");
    f[1].name = "";
    expect_bad_schema(f, 2, NULL);
    f[1].name = "a_name_that_is_much_longer_than_forty_seven_bytes!";
    expect_bad_schema(f, 2, NULL);
    f[1].name = "b";
    f[1].dtype = (ss_dtype)13;
    expect_bad_schema(f, 2, "field 'b': unknown dtype");
    f[1].dtype = SS_F32;
    f[1].ndim = 5;
    expect_bad_schema(f, 2, "field 'b'");
    f[1].ndim = 1;
    f[1].dims[0] = 0;
    expect_bad_schema(f, 2, "dimension 0");
    f[1].dims[0] = 3;
    f[1].dims[2] = 4;
    expect_bad_schema(f, 2, "beyond ndim");
    f[1].dims[2] = 0;
    f[1].sequence = 2;
    expect_bad_schema(f, 2, "sequence");
    f[1].sequence = 0;

    ss_writer *w;
    ss_writer_options bad = SS_WRITER_OPTIONS_INIT;
    bad.version = 99;
    CHECK_RC(ss_writer_create(&w, ss_test_path("opts.ss"), &test_schema, &bad), SS_EINVAL);
    CHECK(w == NULL);
    CHECK_RC(ss_writer_create(&w, good, &test_schema, NULL), SS_EEXIST);
    CHECK(w == NULL);
    CHECK_RC(ss_writer_create(&w, NULL, &test_schema, NULL), SS_EINVAL);

    /* ss_writer_open with a schema that differs */
    ss_field other[2] = {{"tokens", SS_U32, 1, 0, {0}}, {"label", SS_U32, 0, 0, {0}}};
    ss_schema osc = {2, other};
    CHECK_RC(ss_writer_open(&w, good, &osc, NULL), SS_ESCHEMA);
    CHECK(w == NULL);
    ss_schema one = {1, test_fields};
    CHECK_RC(ss_writer_open(&w, good, &one, NULL), SS_ESCHEMA);

    /* bad values: SS_EINVAL naming the field; the writer stays usable */
    const char *path = ss_test_path("values.ss");
    CHECK_OK(ss_writer_create(&w, path, &test_schema, NULL));
    uint16_t toks[4] = {1, 2, 3, 4};
    uint32_t labels[2] = {7, 8};
    ss_value v[2] = {{toks, 4}, {labels, 2}};
    CHECK_RC(ss_writer_append(w, v), SS_EINVAL);
    CHECK_MSG("fixed field 'label' needs length 1");
    v[1].length = 0;
    CHECK_RC(ss_writer_append(w, v), SS_EINVAL);
    v[1].length = 1;
    v[0].data = NULL;
    CHECK_RC(ss_writer_append(w, v), SS_EINVAL);
    CHECK_MSG("'tokens'");
    CHECK_EQ_U64(ss_writer_count(w), 0);
    v[0].data = toks;
    CHECK_OK(ss_writer_append(w, v));
    v[0].data = NULL;
    v[0].length = 0; /* an empty sequence needs no data */
    CHECK_OK(ss_writer_append(w, v));
    CHECK_RC(ss_writer_append(w, NULL), SS_EINVAL);
    CHECK_RC(ss_writer_set_attr(w, "", SS_ATTR_TEXT, "x", 1), SS_EINVAL);
    CHECK_RC(ss_writer_set_attr(w, "t", 55, "x", 1), SS_EINVAL);
    CHECK_RC(ss_writer_set_attr(w, "t", SS_ATTR_BYTES, NULL, 1), SS_EINVAL);
    char longname[SS_MAX_ATTR_NAME + 2];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    CHECK_RC(ss_writer_set_attr(w, longname, SS_ATTR_TEXT, "x", 1), SS_EINVAL);
    CHECK_EQ_U64(ss_writer_count(w), 2);
    CHECK_OK(ss_writer_finish(w));
    CHECK_RC(ss_writer_append(w, v), SS_ESTATE);
    CHECK_RC(ss_writer_commit(w), SS_ESTATE);
    CHECK_RC(ss_writer_finish(w), SS_ESTATE);
    ss_writer_free(w);

    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    CHECK_EQ_U64(ss_count(s), 2);
    ss_view view;
    CHECK_OK(ss_get(&view, s, 0, 1));
    CHECK(view.length == 0 && view.data != NULL);
    CHECK_OK(ss_get(&view, s, 0, 0));
    CHECK(view.length == 4 && ((const uint16_t *)view.data)[3] == 4);
    ss_close(s);

    /* SS_WRITE_FORCE replaces */
    CHECK_OK(ss_writer_create(
        &w, path, &test_schema,
        &(ss_writer_options){SS_WRITER_OPTIONS_VERSION, SS_WRITE_FORCE, 0, 0, 0, 0}));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    CHECK_OK(ss_open(&s, path, 0));
    CHECK_EQ_U64(ss_count(s), 0);
    ss_close(s);
}

/* ------------------------------------------------------ read-only media */

/* Make `dir` unwritable for this process. Permission bits do not stop root,
 * so as root use a read-only bind mount in a private mount namespace (only
 * this child process sees it), or failing that drop to an unprivileged uid.
 * Returns a description of the method, or NULL. */
static const char *make_readonly(const char *dir) {
    if (geteuid() != 0) return chmod(dir, 0555) == 0 ? "chmod 0555" : NULL;
    if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
        mount(dir, dir, NULL, MS_BIND, NULL) == 0 &&
        mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) == 0)
        return "read-only bind mount";
    if (chmod(dir, 0555) == 0 && setgid(65534) == 0 && setuid(65534) == 0)
        return "chmod 0555 as uid 65534";
    return NULL;
}

/* In a child process: the directory is read-only; open the store there. */
static int readonly_child(const char *dir, const char *path) {
    const char *how = make_readonly(dir);
    if (!how) return 77;
    char probe[1200], lock[1200];
    snprintf(probe, sizeof probe, "%s/probe", dir);
    snprintf(lock, sizeof lock, "%s-lock", path);
    int fd = open(probe, O_WRONLY | O_CREAT, 0644);
    if (fd >= 0) {
        close(fd);
        unlink(probe);
        return 77; /* not actually read-only */
    }
    int why = errno;
    CHECK(why == EACCES || why == EROFS);
    printf("read-only directory by %s (creating a file fails: %s)\n", how, strerror(why));

    ss_store *s;
    /* Without the flag LMDB needs the lock file: with EACCES it is refused
     * with a hint; on a read-only file system LMDB itself runs lock-free. */
    int rc = ss_open(&s, path, 0);
    if (why == EACCES || rc != 0) {
        CHECK_RC(rc, SS_EIO);
        CHECK_MSG("SS_OPEN_NOLOCK");
    } else {
        ss_close(s);
    }
    CHECK_OK(ss_open(&s, path, SS_OPEN_NOLOCK));
    check_contents(s, TEST_COUNT);
    CHECK_OK(ss_verify(NULL, s, NULL, NULL));
    ss_close(s);
    struct stat st;
    CHECK(stat(lock, &st) != 0); /* no lock file appeared */
    ss_writer *w;
    rc = ss_writer_open(&w, path, NULL, NULL);
    CHECK(rc < 0 && w == NULL);
    fflush(stdout);
    return 0;
}

static void test_readonly(const char *good) {
    char dir[1024], path[1100], lock[1200];
    snprintf(dir, sizeof dir, "%s/ro", ss_test_tmpdir());
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(path, sizeof path, "%s/copy.ss", dir);
    snprintf(lock, sizeof lock, "%s-lock", path);
    copy_file(good, path);
    CHECK(chmod(ss_test_tmpdir(), 0755) == 0); /* traversable for uid 65534 */
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) _exit(readonly_child(dir, path));
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(chmod(dir, 0755) == 0);
    if (WEXITSTATUS(status) == 77)
        printf("note: no way to make a directory read-only here; lock-path test only\n");
    else
        CHECK(WEXITSTATUS(status) == 0);

    /* Always possible, even as root: the lock file cannot be created because
     * its path is taken by a directory. Only SS_OPEN_NOLOCK opens the store. */
    CHECK(mkdir(lock, 0755) == 0);
    ss_store *s;
    CHECK_RC(ss_open(&s, path, 0), SS_EIO);
    CHECK(s == NULL);
    CHECK_OK(ss_open(&s, path, SS_OPEN_NOLOCK));
    check_contents(s, TEST_COUNT);
    ss_close(s);
    CHECK(rmdir(lock) == 0);
}

int main(void) {
    static char good[1024]; /* ss_test_path() reuses its buffers */
    snprintf(good, sizeof good, "%s", ss_test_path("good.ss"));
    make_store(good, TEST_COUNT);
    ss_store *s;
    CHECK_OK(ss_open(&s, good, 0));
    check_contents(s, TEST_COUNT);
    ss_close(s);

    test_not_a_store();
    test_truncated(good);
    test_flipped_bytes(good);
    test_header_edits(good);
    test_incomplete();
    test_bad_arguments(good);
    test_writer_input(good);
    test_readonly(good);
    if (deferred_failures) {
        fprintf(stderr, "format errors: %d failure(s)\n", deferred_failures);
        return 1;
    }
    printf("format errors: ok\n");
    return 0;
}
