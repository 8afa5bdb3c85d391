/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_flat_runs.c - ss_flat_read() copies consecutive examples that
 * follow each other in a chunk as one run: checked against a naive
 * concatenation of ss_get() views on a store of many short and empty
 * examples over several chunks and more than one index segment (65536
 * entries in format version 3, 65534 in version 2: both are tested), plainly and with
 * SS_OPEN_VERIFY; and against a damaged index, whose run must be refused (SS_ECORRUPT) instead of
 * copied. The same for ss_read_examples(), against a loop of ss_get(). */
#include "testutil.h"

#include "store.h"

#include <stdlib.h>
#include <string.h>

enum { COUNT = 140000 }; /* past two segment boundaries */

static const ss_field fields[2] = {{"tokens", SS_U16, 1, 0, {0}}, {"label", SS_U32, 0, 0, {0}}};
static const ss_schema schema = {2, fields};
static uint64_t g_per; /* index entries per segment in the version under test */
static uint32_t g_version;

/* Entry i of field `rf` where the file holds it (the reader may also map
 * it elsewhere: the flat index of format 3). */
static const ss_entry *entry_in_file(const ss_rfield *rf, uint64_t i) {
    uint64_t g = i / rf->seg_entries;
    return &rf->segments[g][i - g * rf->seg_entries];
}

static void make(const char *path) {
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_NOSYNC | SS_WRITE_FORCE;
    o.chunk_pages = 4; /* many chunks, so runs end at chunk boundaries */
    o.format_version = g_version;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    uint64_t rng = 77;
    uint16_t buf[64];
    for (uint64_t i = 0; i < COUNT; i++) {
        uint64_t len = ss_test_rand(&rng) % 10 == 0 ? 0 : 1 + ss_test_rand(&rng) % 32;
        if (i % g_per == g_per - 1) len = 5; /* the last entry of a segment: damaged below */
        if (i == 0) len = 20;                /* its start is damaged below */
        for (uint64_t k = 0; k < len; k++) buf[k] = (uint16_t)(i * 7 + k);
        uint32_t label = (uint32_t)(i * 3);
        ss_value v[2] = {{buf, len}, {&label, 1}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

/* Every row of the field, example after example, from ss_get(). */
static unsigned char *naive_flat(const ss_store *s, uint64_t *total) {
    *total = ss_flat_size(s, 0);
    unsigned char *all = malloc(*total * 2 + 1), *at = all;
    CHECK(all);
    for (uint64_t i = 0; i < COUNT; i++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, 0, i));
        memcpy(at, v.data, v.length * 2);
        at += v.length * 2;
    }
    CHECK_EQ_U64((uint64_t)(at - all), *total * 2);
    return all;
}

static void check_reads(const char *path, unsigned flags) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, flags));
    uint64_t total;
    unsigned char *all = naive_flat(s, &total), *buf = malloc(total * 2 + 1);
    CHECK(buf);
    CHECK_OK(ss_flat_read(buf, s, 0, 0, total));
    CHECK(memcmp(buf, all, total * 2) == 0);
    /* windows around the segment boundaries, and random ones */
    uint64_t b1 = 0, b2 = 0;
    for (uint64_t i = 0; i < g_per; i++) b1 += ss_length(s, 0, i);
    for (uint64_t i = 0; i < 2 * g_per; i++) b2 += ss_length(s, 0, i);
    uint64_t around[] = {b1, b2};
    for (int k = 0; k < 2; k++)
        for (uint64_t d = 0; d < 70; d += 3) {
            uint64_t p = around[k] - d, q = around[k] + d / 2 + 1;
            memset(buf, 0xEE, (q - p) * 2);
            CHECK_OK(ss_flat_read(buf, s, 0, p, q));
            CHECK(memcmp(buf, all + p * 2, (q - p) * 2) == 0);
        }
    uint64_t rng = 5;
    for (int t = 0; t < 300; t++) {
        uint64_t p = ss_test_rand(&rng) % total, q = p + ss_test_rand(&rng) % (total - p + 1);
        if (t % 3 == 0 && q > p + 50) q = p + ss_test_rand(&rng) % 50;
        CHECK_OK(ss_flat_read(buf, s, 0, p, q));
        CHECK(memcmp(buf, all + p * 2, (q - p) * 2) == 0);
    }
    free(buf);
    free(all);
    ss_close(s);
}

/* ss_read_examples() of `field` against ss_get(): whole examples that fit,
 * the length of the first that does not. */
static void check_examples(const ss_store *s, uint32_t field, uint64_t first, uint64_t n,
                           uint64_t cap) {
    unsigned char *buf = malloc(cap + 1), *want = malloc(cap + 1);
    uint64_t *len = malloc((n + 1) * sizeof *len), got = 99, k = 0, used = 0;
    CHECK(buf && want && len);
    CHECK_OK(ss_read_examples(&got, buf, len, s, field, first, n, cap));
    for (; k < n; k++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, field, first + k));
        uint64_t bytes = v.length * v.row_bytes;
        if (used + bytes > cap) {
            CHECK_EQ_U64(len[k], v.length); /* the one that did not fit */
            break;
        }
        CHECK_EQ_U64(len[k], v.length);
        memcpy(want + used, v.data, bytes);
        used += bytes;
    }
    CHECK_EQ_U64(got, k);
    CHECK(memcmp(buf, want, used) == 0);
    free(buf);
    free(want);
    free(len);
}

static void check_read_examples(const char *path, unsigned flags) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, flags));
    uint64_t rng = 9, got = 5, len[1];
    check_examples(s, 0, 0, COUNT, ss_flat_size(s, 0) * 2); /* everything fits */
    check_examples(s, 0, g_per - 40, 100, 1 << 20);         /* across a segment */
    check_examples(s, 1, 0, 1000, 4 * 1000);
    check_examples(s, 1, 17, 1000, 4 * 500 + 3); /* stops at 500 */
    for (int t = 0; t < 200; t++) {
        uint64_t first = ss_test_rand(&rng) % COUNT, n = ss_test_rand(&rng) % (COUNT - first + 1);
        if (n > 5000) n = ss_test_rand(&rng) % 5000;
        check_examples(s, t % 4 == 3, first, n, ss_test_rand(&rng) % 40000);
    }
    CHECK_OK(ss_read_examples(&got, NULL, NULL, s, 0, COUNT, 0, 0));
    CHECK_EQ_U64(got, 0);
    CHECK_RC(ss_read_examples(&got, NULL, len, s, 0, COUNT, 1, 0), SS_ERANGE);
    CHECK_RC(ss_read_examples(&got, NULL, len, s, 2, 0, 1, 0), SS_ERANGE);
    CHECK_RC(ss_read_examples(&got, NULL, NULL, s, 0, 0, 1, 0), SS_EINVAL);
    CHECK_RC(ss_read_examples(NULL, NULL, len, s, 0, 0, 1, 0), SS_EINVAL);
    ss_close(s);
}

/* Point example `victim`'s location at the last byte of its chunk, so that
 * its rows pass the chunk's end. The entry is patched in the file, at its
 * address within the file mapping (ss_store_map()). */
static void damage_entry(const char *path, uint64_t victim) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    const void *base;
    uint64_t size;
    int fd;
    CHECK_OK(ss_store_map(&base, &size, &fd, s));
    const ss_entry *e = entry_in_file(&s->f[0], victim);
    uint64_t off = (uint64_t)((const unsigned char *)e - (const unsigned char *)base);
    uint64_t chunk = SS_LOC_CHUNK(e->loc), loc = chunk << 32 | (s->f[0].chunks[chunk].size - 1);
    ss_close(s);
    FILE *f = fopen(path, "r+b");
    CHECK(f && fseek(f, (long)off, SEEK_SET) == 0);
    CHECK(fwrite(&loc, sizeof loc, 1, f) == 1);
    CHECK(fclose(f) == 0);
}

/* Damage the first example with rows from `from` on; ss_get() and a flat
 * read through it must refuse it. */
static void check_damaged(const char *good, uint64_t from) {
    const char *bad = ss_test_path("flat_runs_bad.ss");
    size_t n;
    char *bytes = ss_test_read_file(good, &n);
    ss_test_write_file(bad, bytes, n);
    free(bytes);
    ss_store *s;
    CHECK_OK(ss_open(&s, good, 0));
    uint64_t victim = from, p = 0, q = 0;
    while (ss_length(s, 0, victim) == 0) victim++;
    for (uint64_t i = 0; i < victim - 5; i++) p += ss_length(s, 0, i);
    for (uint64_t i = 0; i < victim + 5; i++) q += ss_length(s, 0, i);
    ss_close(s);
    damage_entry(bad, victim);
    CHECK_OK(ss_open(&s, bad, 0));
    unsigned char *buf = malloc(ss_flat_size(s, 0) * 2 + 1);
    CHECK(buf);
    ss_view v;
    CHECK_RC(ss_get(&v, s, 0, victim), SS_ECORRUPT);
    char want[64];
    snprintf(want, sizeof want, "example %llu:", (unsigned long long)victim);
    CHECK_CONTAINS(ss_error_message(), want);
    /* the victim in the middle of a run: refused, not copied */
    CHECK_RC(ss_flat_read(buf, s, 0, p, q), SS_ECORRUPT);
    CHECK_RC(ss_flat_read(buf, s, 0, 0, ss_flat_size(s, 0)), SS_ECORRUPT);
    /* the examples before it still read */
    uint64_t before = 0;
    for (uint64_t i = 0; i < victim; i++) before += ss_length(s, 0, i);
    CHECK_OK(ss_flat_read(buf, s, 0, p, before));
    uint64_t got = 7, len[16];
    CHECK_RC(ss_read_examples(&got, buf, len, s, 0, victim - 5, 10, 1 << 20), SS_ECORRUPT);
    CHECK_EQ_U64(got, 0);
    CHECK_OK(ss_read_examples(&got, buf, len, s, 0, victim - 5, 5, 1 << 20));
    CHECK_EQ_U64(got, 5);
    free(buf);
    ss_close(s);
}

/* Entry 0's `start` raised from 0 to 3 (open checks only the sentinel's):
 * a flat read from position 0 then starts 3 rows before example 0, which
 * must be refused, not copied from before the example's rows. */
static void check_bad_first_start(const char *good) {
    const char *bad = ss_test_path("flat_runs_start.ss");
    size_t n;
    char *bytes = ss_test_read_file(good, &n);
    ss_test_write_file(bad, bytes, n);
    free(bytes);
    ss_store *s;
    CHECK_OK(ss_open(&s, bad, 0));
    const void *base;
    uint64_t size, start = 3;
    int fd;
    CHECK_OK(ss_store_map(&base, &size, &fd, s));
    const ss_entry *e = entry_in_file(&s->f[0], 0);
    uint64_t off = (uint64_t)((const unsigned char *)&e->start - (const unsigned char *)base);
    ss_close(s);
    FILE *f = fopen(bad, "r+b");
    CHECK(f && fseek(f, (long)off, SEEK_SET) == 0);
    CHECK(fwrite(&start, sizeof start, 1, f) == 1);
    CHECK(fclose(f) == 0);
    CHECK_OK(ss_open(&s, bad, 0));
    CHECK_EQ_U64(ss_length(s, 0, 0), 17);
    unsigned char buf[64];
    CHECK_RC(ss_flat_read(buf, s, 0, 0, 2), SS_ECORRUPT);
    ss_close(s);
}

static void check_version(uint32_t version) {
    const char *path = ss_test_path("flat_runs.ss");
    g_version = version;
    g_per = version >= 3 ? 65536 : 65534;
    make(path);
    check_reads(path, 0);
    check_reads(path, SS_OPEN_VERIFY);
    check_read_examples(path, 0);
    check_read_examples(path, SS_OPEN_VERIFY);
    check_bad_first_start(path);
    check_damaged(path, 1000);
    check_damaged(path, 2 * g_per - 1); /* a run read across a segment boundary */
}

int main(void) {
    check_version(3);
    check_version(2);
    printf("test_format_flat_runs: ok\n");
    return 0;
}
