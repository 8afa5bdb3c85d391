/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_bounds.c - a header (or progress record) whose checksum is
 * valid but whose counts are absurd: every reader and the writer refuse it
 * with SS_ECORRUPT naming the field, before it sizes an allocation or indexes
 * a table. Each case runs in a child process, so that a crash (the bug this
 * guards against: count = 2^64 - 226 overflowed the segment count, then an
 * index read went out of bounds) is reported as a failure, not a dead test.
 * The checksum is recomputed here from spec §4, independently of the library. */
#include "testutil.h"

#include "layout.h"

#include <lmdb.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

static const ss_field test_fields[2] = {{"tokens", SS_U16, 1, 0, {0}},
                                        {"label", SS_U32, 0, 0, {0}}};
static const ss_schema test_schema = {2, test_fields};
#define TEST_CHUNK_PAGES 2u
#define TEST_COUNT 2000u

static void append_range(ss_writer *w, uint64_t first, uint64_t last) {
    uint16_t buf[300];
    for (uint64_t i = first; i < last; i++) {
        uint64_t n = 1 + (i * 37) % 300;
        for (uint64_t k = 0; k < n; k++) buf[k] = (uint16_t)(i + k);
        uint32_t label = (uint32_t)i;
        ss_value v[2] = {{buf, n}, {&label, 1}};
        CHECK_OK(ss_writer_append(w, v));
    }
}

static void make_store(const char *path) {
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.chunk_pages = TEST_CHUNK_PAGES;
    o.flags = SS_WRITE_NOSYNC | SS_WRITE_FORCE;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &test_schema, &o));
    append_range(w, 0, TEST_COUNT);
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

/* A finished store with an unfinished append of 500 more examples: its
 * progress record W is committed, its header H still says TEST_COUNT. */
static void make_store_with_progress(const char *path) {
    make_store(path);
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_NOSYNC;
    ss_writer *w;
    CHECK_OK(ss_writer_open(&w, path, &test_schema, &o));
    append_range(w, TEST_COUNT, TEST_COUNT + 500);
    CHECK_OK(ss_writer_commit(w));
    ss_writer_free(w); /* never finished */
}

static uint64_t file_size(const char *path) {
    struct stat st;
    CHECK(stat(path, &st) == 0);
    return (uint64_t)st.st_size;
}

static void copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    CHECK(in && out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) CHECK(fwrite(buf, 1, n, out) == n);
    fclose(in);
    CHECK(fclose(out) == 0);
}

/* ------------------------------------------------ header edits, resealed */

/* Offsets of spec §5. */
#define H_COUNT 24
#define F_TOTAL_ROWS 88
#define F_NCHUNKS 96
#define F_TAIL_BYTES 104
#define FIELD(p, i) ((p) + SS_HEADER_FIXED + (i)*SS_FIELD_RECORD)

typedef struct edit {
    const char *name;   /* the case */
    char tag;           /* H or W */
    const char *needle; /* the message must name this field */
    void (*apply)(unsigned char *payload, uint64_t file_bytes);
} edit;

/* spec §4: version 1 hashes the payload; version 2 seeds with the key's hash */
static uint64_t spec_checksum(const unsigned char *payload, uint64_t len, char tag) {
    uint32_t version = ss_le32(payload + 8);
    unsigned char key = (unsigned char)tag;
    if (version < 2) return XXH3_64bits(payload, len);
    return XXH3_64bits_withSeed(payload, len, XXH3_64bits(&key, 1));
}

/* File offset of the mapped address `p`, from /proc/self/maps. */
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
    CHECK(!"address not mapped");
    return 0;
}

/* Edit the block `tag` in place in the file (its overflow pages do not
 * move, so the file and LMDB's pages stay exactly as they were), with a
 * checksum recomputed as the spec says. The edit gets the bytes of LMDB pages
 * in use, the library's bound. */
static void patch_block(const char *path, char tag, const edit *e) {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_env_create(&env) == 0);
    CHECK(mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY, 0644) == 0);
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0);
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi) == 0);
    MDB_envinfo info;
    MDB_stat st;
    CHECK(mdb_env_info(env, &info) == 0 && mdb_env_stat(env, &st) == 0);
    uint64_t used = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
    CHECK(used <= file_size(path));
    MDB_val k = {1, &tag}, v;
    CHECK(mdb_get(txn, dbi, &k, &v) == 0);
    unsigned char *copy = malloc(v.mv_size);
    CHECK(copy);
    memcpy(copy, v.mv_data, v.mv_size);
    uint64_t offset = mapped_file_offset(v.mv_data);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    uint64_t len = ss_le64(copy + 8);
    e->apply(copy + SS_BLOCK_HDR, used);
    ss_put_le64(copy, spec_checksum(copy + SS_BLOCK_HDR, len, tag));
    FILE *f = fopen(path, "r+b");
    CHECK(f && fseek(f, (long)offset, SEEK_SET) == 0);
    CHECK(fwrite(copy, 1, SS_BLOCK_HDR + len, f) == SS_BLOCK_HDR + len);
    CHECK(fclose(f) == 0);
    free(copy);
}

/* A fixed field has total_rows = count (checked first), so the fixed field
 * "label" follows count in these edits; its nchunks follows too, so that the
 * count itself is what must be refused. */
static void set_count(unsigned char *p, uint64_t count) {
    ss_put_le64(p + H_COUNT, count);
    ss_put_le64(FIELD(p, 1) + F_TOTAL_ROWS, count);
    uint64_t per = ss_chunk_capacity(TEST_CHUNK_PAGES) / 4;
    ss_put_le64(FIELD(p, 1) + F_NCHUNKS, count / per + (count % per != 0));
}
static void count_2p64_226(unsigned char *p, uint64_t fb) {
    (void)fb;
    set_count(p, UINT64_MAX - 225); /* 2^64 - 226, the fuzzer's value */
}
static void count_max(unsigned char *p, uint64_t fb) {
    (void)fb;
    set_count(p, UINT64_MAX);
}
static void count_2p44(unsigned char *p, uint64_t fb) {
    (void)fb;
    set_count(p, 1ull << 44); /* tables of gigabytes */
}
static void count_just_too_many(unsigned char *p, uint64_t fb) {
    set_count(p, fb / SS_INDEX_ENTRY); /* count + 1 index entries exceed the file */
}
static void tokens_nchunks(unsigned char *p, uint64_t fb) {
    (void)fb;
    ss_put_le64(FIELD(p, 0) + F_NCHUNKS, 1ull << 62);
}
static void label_nchunks(unsigned char *p, uint64_t fb) {
    (void)fb;
    ss_put_le64(FIELD(p, 1) + F_NCHUNKS, 1ull << 60);
}
static void tokens_total_rows(unsigned char *p, uint64_t fb) {
    (void)fb;
    ss_put_le64(FIELD(p, 0) + F_TOTAL_ROWS, 1ull << 63);
}
static void tokens_tail_bytes(unsigned char *p, uint64_t fb) {
    (void)fb;
    ss_put_le64(FIELD(p, 0) + F_TAIL_BYTES, UINT64_MAX - 15);
}
static void label_tail_bytes(unsigned char *p, uint64_t fb) { /* fb: bytes in use */
    ss_put_le64(FIELD(p, 1) + F_TAIL_BYTES, fb + 1);
}
/* Each field's chunk count alone fits the file; with the index segments and
 * the other field's chunks they do not. */
static void blocks_sum(unsigned char *p, uint64_t fb) {
    ss_put_le64(FIELD(p, 0) + F_NCHUNKS, fb / (SS_PAGE - 16));
}

static const edit edits[] = {
    {"H count 2^64-226", 'H', "count", count_2p64_226},
    {"H count 2^64-1", 'H', "count", count_max},
    {"H count 2^44", 'H', "count", count_2p44},
    {"H count file/16", 'H', "count", count_just_too_many},
    {"H tokens nchunks 2^62", 'H', "nchunks", tokens_nchunks},
    {"H label nchunks 2^60", 'H', "nchunks", label_nchunks},
    {"H tokens total_rows 2^63", 'H', "total_rows", tokens_total_rows},
    {"H tokens tail_bytes 2^64-16", 'H', "tail_bytes", tokens_tail_bytes},
    {"H label tail_bytes file+1", 'H', "tail_bytes", label_tail_bytes},
    {"H chunks + segments", 'H', "chunks and index segments", blocks_sum},
    {"W count 2^64-226", 'W', "count", count_2p64_226},
    {"W count 2^44", 'W', "count", count_2p44},
    {"W tokens nchunks 2^62", 'W', "nchunks", tokens_nchunks},
    {"W tokens tail_bytes 2^64-16", 'W', "tail_bytes", tokens_tail_bytes},
};

/* ------------------------------------------------------- the child's checks */

static int expect_corrupt(const char *what, int rc, const char *needle, const char *record) {
    const char *m = ss_error_message();
    if (rc == SS_ECORRUPT && strstr(m, needle) && strstr(m, record)) return 0;
    fprintf(stderr, "  %s: rc %d (%s), message '%s' (wanted SS_ECORRUPT naming %s and '%s')\n",
            what, rc, ss_strerror(rc), m, record, needle);
    return 1;
}

/* Runs in the child: 0 if every entry point refuses the damaged record. */
static int child_checks(const char *path, const edit *e) {
    /* Outside sanitizers, a table sized by an unchecked count fails to
     * allocate rather than quietly reserving gigabytes of address space. */
#if !defined(__SANITIZE_ADDRESS__)
    struct rlimit lim = {(rlim_t)2 << 30, (rlim_t)2 << 30};
    setrlimit(RLIMIT_AS, &lim);
#endif
    int bad = 0;
    ss_store *s = NULL;
    ss_writer *w = NULL;
    if (e->tag == 'H') {
        const char *record = "header";
        int rc = ss_open(&s, path, 0);
        if (rc == 0) { /* must not happen; exercise the store to expose the damage */
            ss_store_info info;
            ss_store_get_info(&info, s);
            ss_view v;
            for (uint64_t i = 0; i < ss_count(s) && i < 5000; i++) ss_get(&v, s, 0, i);
            ss_verify(NULL, s, NULL, NULL);
            ss_close(s);
        }
        bad |= expect_corrupt("ss_open", rc, e->needle, record);
        rc = ss_writer_open(&w, path, NULL, NULL);
        if (rc == 0) ss_writer_free(w);
        bad |= expect_corrupt("ss_writer_open", rc, e->needle, record);
    } else {
        const char *record = "progress record";
        int rc = ss_open(&s, path, 0); /* a reader of H never looks at W */
        if (rc != 0) {
            fprintf(stderr, "  ss_open of the finished store: %s\n", ss_error_message());
            bad = 1;
        }
        ss_close(s);
        s = NULL;
        rc = ss_open(&s, path, SS_OPEN_INCOMPLETE);
        if (rc == 0) {
            ss_view v;
            for (uint64_t i = 0; i < ss_count(s) && i < 5000; i++) ss_get(&v, s, 0, i);
            ss_verify(NULL, s, NULL, NULL);
            ss_close(s);
        }
        bad |= expect_corrupt("ss_open(SS_OPEN_INCOMPLETE)", rc, e->needle, record);
        ss_writer_options o = SS_WRITER_OPTIONS_INIT;
        o.flags = SS_WRITE_RESUME;
        rc = ss_writer_open(&w, path, NULL, &o);
        if (rc == 0) ss_writer_free(w);
        bad |= expect_corrupt("ss_writer_open(SS_WRITE_RESUME)", rc, e->needle, record);
    }
    return bad;
}

int main(void) {
    static char good_h[1024], good_w[1024], bad[1024];
    snprintf(good_h, sizeof good_h, "%s", ss_test_path("good.ss"));
    snprintf(good_w, sizeof good_w, "%s", ss_test_path("progress.ss"));
    snprintf(bad, sizeof bad, "%s", ss_test_path("bad.ss"));
    make_store(good_h);
    make_store_with_progress(good_w);
    int failures = 0;
    for (size_t c = 0; c < sizeof edits / sizeof edits[0]; c++) {
        const edit *e = &edits[c];
        char lock[1100];
        snprintf(lock, sizeof lock, "%s-lock", bad);
        unlink(lock);
        copy_file(e->tag == 'H' ? good_h : good_w, bad);
        patch_block(bad, e->tag, e);
        fflush(stdout);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) _exit(child_checks(bad, e));
        int status;
        CHECK(waitpid(pid, &status, 0) == pid);
        int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (WIFSIGNALED(status))
            fprintf(stderr, "FAIL %s: the library was killed by signal %d\n", e->name,
                    WTERMSIG(status));
        else if (!ok)
            fprintf(stderr, "FAIL %s: not refused as corrupt (above)\n", e->name);
        /* the command-line tools: an error naming the field, never a signal */
        if (e->tag == 'H') {
            char err[4096];
            int code = ss_test_cli(err, sizeof err, NULL, "info %s", bad);
            if (code != 1 || !strstr(err, e->needle)) {
                fprintf(stderr, "FAIL %s: seqstore info: exit %d, stderr: %s\n", e->name, code,
                        err);
                ok = 0;
            }
            code = ss_test_cli(err, sizeof err, NULL, "verify %s", bad);
            if (code != 3 || !strstr(err, e->needle)) {
                fprintf(stderr, "FAIL %s: seqstore verify: exit %d, stderr: %s\n", e->name, code,
                        err);
                ok = 0;
            }
        }
        printf("%-30s %s\n", e->name, ok ? "refused" : "FAILED");
        failures += !ok;
    }
    if (failures) {
        fprintf(stderr, "format bounds: %d of %zu cases failed\n", failures,
                sizeof edits / sizeof edits[0]);
        return 1;
    }
    printf("format bounds: ok\n");
    return 0;
}
