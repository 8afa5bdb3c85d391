/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_background.c - the writer's paths for the converters of
 * many short examples (internal.h): commits written in the background
 * (ss__writer_background()) and appends of many examples at once
 * (ss__writer_append_many()).
 * 1. The store is the one a writer committing itself writes, byte for byte:
 *    created and appended to, with chunks of a few KiB and commits of 16 KiB
 *    (many commits in the background), examples larger than a chunk or
 *    beginning one each, index segments filled past their end, a resume
 *    record and attributes changed and commits asked for while a commit may
 *    be in the background.
 * 2. A commit that fails in the background (the file size limit reached:
 *    EFBIG) is returned by a later call, the writer is broken from then on,
 *    and the store holds what the commits before it wrote: the same examples
 *    as after the same failure of a writer committing itself.
 * 3. Appending many at once writes the store one append at a time writes,
 *    byte for byte, in batches of 1 to 9000 examples (runs that fill a chunk
 *    or a segment, an example larger than a chunk, commits due inside a
 *    batch), with commits in the background or not; a batch without data is
 *    refused and appends nothing. */
#include "testutil.h"

#include "internal.h"

#include <signal.h>
#include <string.h>
#include <sys/resource.h>

static const ss_field fields[2] = {{"tokens", SS_U16, 1, 0, {0}}, {"source", SS_U64, 0, 1, {2}}};
static const ss_schema schema = {2, fields};

/* Example i: mostly short (many examples: index segments of 65534 or 65536
 * entries fill), every 5000th longer than a chunk of 4 KiB, and a run of
 * examples of 3000 bytes: each begins a chunk, so the append after a commit
 * rewrites the index entry the commit wrote last (the end of the example
 * before, now the start of the new chunk; the commit must have the old). */
static uint64_t example_length(uint64_t i) {
    return i % 5000 == 17 ? 3000 : i / 1000 == 120 ? 1500 : i % 7;
}

static void example(uint64_t i, uint16_t *tok, ss_value v[2], uint64_t src[2]) {
    uint64_t len = example_length(i);
    for (uint64_t k = 0; k < len; k++) tok[k] = (uint16_t)(i * 31 + k);
    src[0] = i;
    src[1] = i * 3;
    v[0] = (ss_value){tok, len};
    v[1] = (ss_value){src, 1};
}

static ss_writer_options small_options(unsigned flags) {
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = flags;
    o.chunk_pages = 1;
    o.commit_bytes = 16 << 10;
    return o;
}

/* Append examples [from, to): the first append error, or 0. */
static int append_range(ss_writer *w, uint64_t from, uint64_t to) {
    static uint16_t tok[3000];
    for (uint64_t i = from; i < to; i++) {
        ss_value v[2];
        uint64_t src[2];
        example(i, tok, v, src);
        int rc = ss_writer_append(w, v);
        if (rc) return rc;
    }
    return 0;
}

/* Create (or with `append`, extend) `path` with examples [from, to), in
 * the background or not, changing the resume record, an attribute and
 * committing in between. */
static void write_store(const char *path, int background, int append, uint64_t from, uint64_t to) {
    ss_writer_options o = small_options(SS_WRITE_NOSYNC | SS_WRITE_FORCE);
    ss_writer *w;
    if (append)
        CHECK_OK(ss_writer_open(&w, path, &schema, &o));
    else
        CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    if (background) CHECK_OK(ss__writer_background(w));
    uint64_t third = (to - from) / 3;
    CHECK_OK(ss__writer_set_resume_record(w, "first", 5));
    CHECK_OK(append_range(w, from, from + third));
    CHECK_OK(ss__writer_set_resume_record(w, "second record", 13));
    CHECK_OK(ss_writer_set_attr(w, "note", SS_ATTR_TEXT, "a", 1));
    CHECK_OK(append_range(w, from + third, from + 2 * third));
    CHECK_OK(ss_writer_commit(w));
    CHECK_OK(ss_writer_set_attr(w, "note", SS_ATTR_TEXT, "bc", 2));
    CHECK_OK(append_range(w, from + 2 * third, to));
    CHECK_EQ_U64(ss_writer_count(w), to);
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

static void check_same_file(const char *a, const char *b) {
    size_t na, nb;
    char *da = ss_test_read_file(a, &na), *db = ss_test_read_file(b, &nb);
    CHECK_EQ_U64(na, nb);
    CHECK(memcmp(da, db, na) == 0);
    free(da);
    free(db);
}

static void test_same_bytes(void) {
    const char *self = ss_test_keep_path("self.ss"), *bg = ss_test_keep_path("bg.ss");
    write_store(self, 0, 0, 0, 140000);
    write_store(bg, 1, 0, 0, 140000);
    check_same_file(self, bg);
    write_store(self, 0, 1, 140000, 150000);
    write_store(bg, 1, 1, 140000, 150000);
    check_same_file(self, bg);
    ss_store *s;
    CHECK_OK(ss_open(&s, bg, SS_OPEN_VERIFY));
    CHECK_EQ_U64(ss_count(s), 150000);
    ss_view v;
    CHECK_OK(ss_get(&v, s, 0, 135017));
    CHECK_EQ_U64(v.length, 3000);
    CHECK_EQ_U64(((const uint16_t *)v.data)[2999], (uint16_t)(135017 * 31 + 2999));
    ss_close(s);
}

/* Append until an append or the finish fails with the file size limited to
 * `limit` bytes. Returns that error; *failed_at: the examples appended then.
 * The writer is broken after it: the next append says so. */
static int fill_until_failure(const char *path, int background, rlim_t limit, uint64_t *failed_at) {
    ss_writer_options o = small_options(SS_WRITE_NOSYNC | SS_WRITE_FORCE);
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    if (background) CHECK_OK(ss__writer_background(w));
    struct rlimit old, lim;
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    lim = old;
    lim.rlim_cur = limit;
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    int rc = 0;
    uint64_t i = 0;
    for (; i < 400000 && !rc; i += 1000) rc = append_range(w, i, i + 1000);
    if (!rc) rc = ss_writer_finish(w);
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
    *failed_at = ss_writer_count(w);
    CHECK(rc != 0);
    CHECK_RC(append_range(w, i, i + 1), SS_ESTATE);
    ss_writer_free(w);
    return rc;
}

static uint64_t committed(const char *path) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, SS_OPEN_INCOMPLETE | SS_OPEN_VERIFY));
    uint64_t n = ss_count(s);
    ss_close(s);
    return n;
}

static void test_failure(void) {
    signal(SIGXFSZ, SIG_IGN); /* a write past the limit fails with EFBIG instead */
    const char *self = ss_test_keep_path("full-self.ss"), *bg = ss_test_keep_path("full-bg.ss");
    uint64_t at_self, at_bg;
    int rc_self = fill_until_failure(self, 0, 2 << 20, &at_self);
    int rc_bg = fill_until_failure(bg, 1, 2 << 20, &at_bg);
    CHECK_EQ_U64((uint64_t)-rc_bg, (uint64_t)-rc_self);
    CHECK(strstr(ss_error_message(), "full-bg.ss") != NULL);
    uint64_t n = committed(self);
    CHECK(n > 0 && n < at_self);
    CHECK_EQ_U64(committed(bg), n);
    CHECK(at_bg >= at_self); /* reported by a call after the one that made it due */
    signal(SIGXFSZ, SIG_DFL);
}

/* Examples [0, n) through ss__writer_append_many() in batches of 1, 2, 3...
 * up to 9000 examples, then finished. */
static void write_many(const char *path, int background, uint64_t n) {
    ss_writer_options o = small_options(SS_WRITE_NOSYNC | SS_WRITE_FORCE);
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    if (background) CHECK_OK(ss__writer_background(w));
    enum { MAX = 9000 };
    static uint16_t tok[MAX * 7];
    static uint64_t len[MAX], src[2 * MAX];
    const uint64_t *lengths[2] = {len, NULL};
    const void *data[2] = {tok, src};
    CHECK_RC(ss__writer_append_many(w, 1, (const void *const[]){tok, NULL}, lengths), SS_EINVAL);
    CHECK_EQ_U64(ss_writer_count(w), 0);
    for (uint64_t i = 0, batch = 1; i < n; batch = batch % MAX + 1 + batch / 3) {
        uint64_t m = 0, rows = 0;
        for (; m < batch && m < MAX && i + m < n && rows + example_length(i + m) <= MAX * 7; m++) {
            ss_value v[2];
            example(i + m, tok + rows, v, src + 2 * m);
            len[m] = v[0].length;
            rows += len[m];
        }
        CHECK_OK(ss__writer_append_many(w, m, data, lengths));
        i += m;
        CHECK_EQ_U64(ss_writer_count(w), i);
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

static void test_many(void) {
    const char *one = ss_test_keep_path("one.ss"), *many = ss_test_keep_path("many.ss");
    ss_writer_options o = small_options(SS_WRITE_NOSYNC | SS_WRITE_FORCE);
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, one, &schema, &o));
    CHECK_OK(append_range(w, 0, 140000));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    for (int background = 0; background < 2; background++) {
        write_many(many, background, 140000);
        check_same_file(one, many);
    }
}

int main(void) {
    test_same_bytes();
    test_failure();
    test_many();
    printf("ok\n");
    return 0;
}
