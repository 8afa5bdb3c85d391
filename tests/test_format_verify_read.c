/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_verify_read.c - SS_OPEN_VERIFY: verification on first touch.
 *
 * One byte of one data chunk is flipped in a stored file. A plain open hands
 * out the wrong byte (no verification, as documented); an SS_OPEN_VERIFY open
 * returns SS_ECORRUPT for every example in that chunk, on every call and from
 * many threads at once, and the right data for every other example; the flat
 * view, the loader, the window reader and the CLI report it too. A flipped index segment fails
 * an SS_OPEN_VERIFY open. The examples of the damaged chunk are found from
 * the map's geometry (which views lie inside the chunk's bytes), not from the
 * code under test. */
#include "store.h"
#include "testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <xxhash.h>
#include <unistd.h>

static const ss_field fields[2] = {{"tokens", SS_U16, 1, 0, {0}}, {"label", SS_U32, 0, 0, {0}}};
static const ss_schema schema = {2, fields};

#define N 3000u
#define BAD_CHUNK 3u
#define NTHREADS 4

static uint64_t mix(uint64_t x) {
    uint64_t s = x * 0x9E3779B97F4A7C15ull + 7;
    return ss_test_rand(&s);
}
static uint64_t tok_len(uint64_t i) {
    return i % 11 == 0 ? 0 : mix(i) % 300; /* some empty examples */
}
static uint16_t tok_at(uint64_t i, uint64_t k) {
    return (uint16_t)(mix(i) + k * 3);
}

static void make_store(const char *path) {
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
    o.chunk_pages = 4; /* 16 KiB chunks: many of them */
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    uint16_t buf[300];
    for (uint64_t i = 0; i < N; i++) {
        for (uint64_t k = 0; k < tok_len(i); k++) buf[k] = tok_at(i, k);
        uint32_t label = (uint32_t)(i * 7);
        ss_value v[2] = {{buf, tok_len(i)}, {&label, 1}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

static int tokens_right(const ss_view *v, uint64_t i) {
    if (v->length != tok_len(i)) return 0;
    for (uint64_t k = 0; k < v->length; k++)
        if (((const uint16_t *)v->data)[k] != tok_at(i, k)) return 0;
    return 1;
}

/* Byte offset in the file of `p`, inside the block whose payload is `b`. A
 * block is an LMDB overflow value: it starts after its first page's 16-byte
 * header, whose first field is the page number. */
static off_t file_offset(const ss_block *b, const void *p) {
    const unsigned char *page = b->data - SS_BLOCK_HDR - SS_LMDB_OVERFLOW_HDR;
    uint64_t pgno;
    memcpy(&pgno, page, 8);
    return (off_t)(pgno * SS_PAGE + (uint64_t)((const unsigned char *)p - page));
}

static void flip_byte(const char *path, off_t at) {
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    unsigned char c;
    CHECK(pread(fd, &c, 1, at) == 1);
    c ^= 0x20;
    CHECK(pwrite(fd, &c, 1, at) == 1);
    close(fd);
}

static void copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    CHECK(a && b);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0) CHECK(fwrite(buf, 1, n, b) == n);
    fclose(a);
    CHECK(fclose(b) == 0);
}

/* in_bad[i] = 1 when example i has tokens inside data chunk BAD_CHUNK (from
 * the views' addresses); returns the file offset of a byte to flip in it,
 * inside the first such example. */
static off_t find_victims(const char *path, unsigned char *in_bad, uint64_t *victims) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    const ss_block *b = &s->f[0].chunks[BAD_CHUNK];
    off_t flip = 0;
    *victims = 0;
    for (uint64_t i = 0; i < N; i++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, 0, i));
        const unsigned char *p = v.data;
        in_bad[i] = v.length && p >= b->data && p < b->data + b->size;
        if (in_bad[i] && (*victims)++ == 0) flip = file_offset(b, p + 1);
    }
    CHECK(*victims > 1);
    ss_close(s);
    return flip;
}

/* Without the flag the damaged byte is handed out as it is. */
static void test_plain_open_trusts(const char *path, const unsigned char *in_bad) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < N; i++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, 0, i));
        if (!tokens_right(&v, i)) {
            CHECK(in_bad[i]);
            wrong++;
        }
    }
    CHECK_EQ_U64(wrong, 1);
    ss_close(s);
}

typedef struct sweep {
    const ss_store *s;
    const unsigned char *in_bad;
    uint64_t start, failures;
} sweep;

/* Every example: SS_ECORRUPT naming the chunk inside the damaged chunk,
 * exact data elsewhere. Returns problems (no exit: threads). */
static void *sweep_all(void *arg) {
    sweep *w = arg;
    for (uint64_t j = 0; j < N; j++) {
        uint64_t i = (j + w->start) % N;
        ss_view v;
        int rc = ss_get(&v, w->s, 0, i);
        if (w->in_bad[i]) {
            w->failures += rc != SS_ECORRUPT || !strstr(ss_error_message(), "field 'tokens'") ||
                           !strstr(ss_error_message(), "data chunk 3 ");
        } else {
            w->failures += rc != 0 || !tokens_right(&v, i);
        }
        w->failures += ss_get(&v, w->s, 1, i) != 0 || *(const uint32_t *)v.data != i * 7;
    }
    return NULL;
}

static void test_verify_open(const char *path, const unsigned char *in_bad) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, SS_OPEN_VERIFY));
    /* Concurrent first touches, from different starting points. */
    pthread_t th[NTHREADS];
    sweep w[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        w[t] = (sweep){s, in_bad, (uint64_t)t * N / NTHREADS, 0};
        CHECK(pthread_create(&th[t], NULL, sweep_all, &w[t]) == 0);
    }
    for (int t = 0; t < NTHREADS; t++) {
        CHECK(pthread_join(th[t], NULL) == 0);
        CHECK_EQ_U64(w[t].failures, 0);
    }
    sweep again = {s, in_bad, 0, 0}; /* later touches: the same verdicts */
    sweep_all(&again);
    CHECK_EQ_U64(again.failures, 0);

    uint64_t first = 0;
    while (!in_bad[first]) first++;
    ss_view v;
    CHECK_RC(ss_get_range(&v, s, 0, first, 0, 1), SS_ECORRUPT);
    /* The flat view over the damaged chunk, and next to it. */
    uint64_t pos, len = ss_flat_size(s, 0);
    uint16_t *buf = malloc(len * sizeof *buf);
    CHECK(buf);
    CHECK_RC(ss_flat_read(buf, s, 0, 0, len), SS_ECORRUPT);
    CHECK_CONTAINS(ss_error_message(), "data chunk 3 ");
    for (pos = 0; pos < len; pos++) {
        uint64_t ex, off;
        CHECK_OK(ss_flat_locate(&ex, &off, s, 0, pos));
        if (in_bad[ex]) break;
    }
    CHECK_OK(ss_flat_read(buf, s, 0, 0, pos));
    free(buf);
    ss_close(s);
}

/* The loader reads through ss_get: the error surfaces at ss_loader_next. */
static void test_loader(const char *path) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, SS_OPEN_VERIFY));
    ss_loader_options o = SS_LOADER_OPTIONS_INIT;
    ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    o.sampler = &so;
    o.batch = &bo;
    bo.batch_size = 64;
    o.threads = 2;
    ss_loader *l;
    CHECK_OK(ss_loader_open(&l, s, &o));
    const ss_loader_batch *b;
    int rc;
    uint64_t batches = 0;
    while ((rc = ss_loader_next(&b, l)) == 0) batches++;
    CHECK_RC(rc, SS_ECORRUPT);
    CHECK_CONTAINS(ss_error_message(), "data chunk 3 ");
    CHECK(batches < N / 64);
    ss_loader_free(l);
    ss_close(s);
}

/* The window (BPTT) reader reads through ss_get_range: it reports it too. */
static void test_window(const char *path) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, SS_OPEN_VERIFY));
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    o.field = 0;
    o.window = 16;
    o.lanes = 4;
    o.threads = 1;
    ss_window_reader *r;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    const ss_window_batch *b;
    int rc;
    uint64_t batches = 0;
    while ((rc = ss_window_reader_next(&b, r)) == 0) {
        CHECK_OK(ss_window_reader_register(r, b, NULL));
        batches++;
    }
    CHECK_RC(rc, SS_ECORRUPT);
    CHECK_CONTAINS(ss_error_message(), "data chunk 3 ");
    CHECK(batches > 0);
    ss_window_reader_free(r);
    ss_close(s);
}

static void test_cli(const char *path) {
    char err[4096];
    int code = ss_test_cli(err, sizeof err, NULL, "cat %s >/dev/null", path);
    CHECK_EXIT(code, 1, err);
    CHECK_CONTAINS(err, "corrupt");
    CHECK_CONTAINS(err, "data chunk 3 ");
}

/* A flipped index segment: an SS_OPEN_VERIFY open refuses the store. */
static void test_index_segment(const char *clean, const char *path) {
    copy_file(clean, path);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    off_t at = file_offset(&s->f[0].segment_blocks[0], &s->f[0].segments[0][10].start);
    ss_close(s);
    flip_byte(path, at);
    CHECK_OK(ss_open(&s, path, 0)); /* unverified: the wrong length is believed */
    CHECK(ss_length(s, 0, 9) != tok_len(9) || ss_length(s, 0, 10) != tok_len(10));
    ss_close(s);
    CHECK_RC(ss_open(&s, path, SS_OPEN_VERIFY), SS_ECORRUPT);
    CHECK_CONTAINS(ss_error_message(), "field 'tokens': index segment 0");
    CHECK(s == NULL);
}

/* An index segment whose header claims fewer bytes than its entries, with a
 * checksum recomputed over them: the checksum passes but the entries read
 * beyond it are unchecked, so a verified open refuses it. */
static void test_index_segment_short(const char *clean, const char *path) {
    copy_file(clean, path);
    ss_store *s;
    CHECK_OK(ss_open(&s, clean, 0));
    const ss_block *b = &s->f[0].segment_blocks[0];
    uint64_t len = (uint64_t)N * SS_INDEX_ENTRY; /* N + 1 entries hold the index */
    unsigned char hdr[SS_BLOCK_HDR];
    ss_key key;
    ss__key_numbered(&key, SS_KEY_INDEX, 0, 0);
    ss_put_le64(hdr, ss__block_checksum(b->data, len, &key, s->h.format_version));
    ss_put_le64(hdr + 8, len);
    off_t at = file_offset(b, b->data - SS_BLOCK_HDR);
    ss_close(s);
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0 && pwrite(fd, hdr, sizeof hdr, at) == (ssize_t)sizeof hdr);
    close(fd);
    CHECK_RC(ss_open(&s, path, SS_OPEN_VERIFY), SS_ECORRUPT);
    CHECK_CONTAINS(ss_error_message(), "index segment 0 holds");
}

int main(void) {
    const char *clean = ss_test_path("verify-clean.ss");
    const char *path = ss_test_path("verify-chunk.ss");
    make_store(clean);
    ss_store *s;
    CHECK_OK(ss_open(&s, clean, SS_OPEN_VERIFY)); /* a sound store reads fully */
    for (uint64_t i = 0; i < N; i++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, 0, i));
        CHECK(tokens_right(&v, i));
    }
    ss_close(s);

    copy_file(clean, path);
    static unsigned char in_bad[N];
    uint64_t victims;
    flip_byte(path, find_victims(path, in_bad, &victims));
    test_plain_open_trusts(path, in_bad);
    test_verify_open(path, in_bad);
    test_loader(path);
    test_window(path);
    test_cli(path);
    test_index_segment(clean, ss_test_path("verify-index.ss"));
    test_index_segment_short(clean, ss_test_path("verify-index-short.ss"));
    printf("ok (%llu examples in the damaged chunk)\n", (unsigned long long)victims);
    return 0;
}
