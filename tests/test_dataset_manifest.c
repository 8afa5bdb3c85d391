/* SPDX-License-Identifier: BSD-2-Clause */
/* test_dataset_manifest.c - the dataset manifest (spec/FORMAT.md §13):
 * format/parse round trips, golden inputs that must fail with a given code
 * and message, the file's atomic write and read, and the shard checks
 * (schema, count, header digest) against real stores. */
#include "manifest.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* `body` followed by its correct checksum line (static buffer). */
static const char *sealed(const char *body) {
    static char buf[8192];
    snprintf(buf, sizeof buf, "%schecksum %016llx\n", body,
             (unsigned long long)XXH3_64bits(body, strlen(body)));
    return buf;
}

#define HEAD "seqstore-dataset 1\nexamples 5\nfields 1\nfield u16 sequence 0 tok\nshards 2\n"
#define GOOD HEAD "shard 3 0123456789abcdef 9 a.ss\nshard 2 fedcba9876543210 9 sub/b c.ss\n"

static void expect_parse_fail(const char *text, int code, const char *msg) {
    ss_manifest m;
    CHECK_RC(ss__manifest_parse(&m, text, strlen(text)), code);
    CHECK(m.shards == NULL && m.nshards == 0);
    CHECK_CONTAINS(ss_error_message(), msg);
}

static void test_parse_good(void) {
    const char *t = sealed(GOOD);
    ss_manifest m;
    CHECK_OK(ss__manifest_parse(&m, t, strlen(t)));
    CHECK(m.version == 1 && m.nfields == 1 && m.nshards == 2);
    CHECK_EQ_U64(m.examples, 5);
    CHECK(!strcmp(m.fields[0].name, "tok") && m.fields[0].dtype == SS_U16 && m.fields[0].sequence);
    CHECK(!strcmp(m.shards[1].path, "sub/b c.ss"));
    CHECK_EQ_U64(m.shards[0].digest, 0x0123456789abcdefull);
    CHECK_EQ_U64(m.shards[1].count, 2);
    char *out;
    size_t len;
    CHECK_OK(ss__manifest_format(&m, &out, &len));
    CHECK(len == strlen(t) && !memcmp(out, t, len)); /* one spelling per manifest */
    free(out);
    ss__manifest_free(&m);
}

static void test_parse_golden_failures(void) {
    char body[4096];
    /* the checksum covers every byte before its line */
    snprintf(body, sizeof body, "%s", sealed(GOOD));
    body[strlen(HEAD) + 6] = '4'; /* shard 3 -> shard 4 ... and examples no longer match */
    expect_parse_fail(body, SS_ECORRUPT, "line 7");
    snprintf(body, sizeof body, "%s", sealed(GOOD));
    body[strlen(body) - 2] ^= 1; /* the checksum digit itself */
    expect_parse_fail(body, SS_ECORRUPT, "checksum mismatch");
    snprintf(body, sizeof body, "%s", sealed(GOOD));
    *strstr(body, "a.ss") = 'x'; /* a path byte */
    expect_parse_fail(body, SS_ECORRUPT, "checksum mismatch");
    expect_parse_fail(sealed("seqstore-dataset 2\nexamples 0\n"), SS_EVERSION,
                      "dataset version 2 is newer than this library's 1");
    expect_parse_fail(sealed("SEQSTORE\n"), SS_ECORRUPT, "not a seqstore dataset manifest");
    expect_parse_fail(
        sealed(HEAD "shard 3 0123456789abcdef 9 ../a.ss\nshard 2 fedcba9876543210 9 b\n"),
        SS_ECORRUPT, "line 6: '.' or '..' path component");
    expect_parse_fail(
        sealed(HEAD "shard 3 0123456789abcdef 9 /a.ss\nshard 2 fedcba9876543210 9 b\n"),
        SS_ECORRUPT, "line 6: absolute path");
    expect_parse_fail(
        sealed(HEAD "shard 3 0123456789abcdef 9 a//b\nshard 2 fedcba9876543210 9 b\n"), SS_ECORRUPT,
        "empty path component");
    expect_parse_fail(sealed(HEAD "shard 03 0123456789abcdef 9 a\nshard 2 fedcba9876543210 9 b\n"),
                      SS_ECORRUPT, "line 6: not a canonical decimal number");
    expect_parse_fail(sealed(HEAD "shard 3 0123456789ABCDEF 9 a\nshard 2 fedcba9876543210 9 b\n"),
                      SS_ECORRUPT, "16 lowercase hex digits");
    expect_parse_fail(sealed(HEAD "shard 3 0123456789abcdef 9 a\nshard 1 fedcba9876543210 9 b\n"),
                      SS_ECORRUPT, "'examples' is not the sum");
    expect_parse_fail(sealed(HEAD "shard 3  0123456789abcdef 9 a\nshard 2 fedcba9876543210 9 b\n"),
                      SS_ECORRUPT, "empty token");
    expect_parse_fail(sealed("seqstore-dataset 1\nexamples 5\nfields 2\nfield u16 sequence 0 "
                             "t\nfield u8 fixed 0 t\nshards 1\nshard 5 0123456789abcdef 9 a\n"),
                      SS_ECORRUPT, "line 5: duplicate field name");
    expect_parse_fail(sealed("seqstore-dataset 1\nexamples 5\nfields 1\nfield u17 sequence 0 "
                             "t\nshards 1\nshard 5 0123456789abcdef 9 a\n"),
                      SS_ECORRUPT, "line 4: unknown dtype");
    expect_parse_fail(sealed("seqstore-dataset 1\nexamples 5\nfields 1\nfield u16 fixed 1 0 "
                             "t\nshards 1\nshard 5 0123456789abcdef 9 a\n"),
                      SS_ECORRUPT, "a dimension is 0");
    expect_parse_fail(sealed("seqstore-dataset 1\r\nexamples 5\n"), SS_ECORRUPT,
                      "not a canonical decimal number");
    expect_parse_fail(sealed(HEAD "shard 3 0123456789abcdef 9 a\n"), SS_ECORRUPT,
                      "more shards than lines follow");
    /* per-field rows: a fixed field's are the count; a sum past 2^64 is refused */
    expect_parse_fail(sealed("seqstore-dataset 1\nexamples 5\nfields 1\nfield u16 fixed 0 "
                             "t\nshards 1\nshard 5 0123456789abcdef 4 a\n"),
                      SS_ECORRUPT, "line 6: the rows of a fixed field differ from the count");
    expect_parse_fail(sealed(HEAD "shard 3 0123456789abcdef 18446744073709551615 a\n"
                                  "shard 2 fedcba9876543210 1 b\n"),
                      SS_ECORRUPT, "line 7: a field's rows overflow");
    expect_parse_fail(sealed(HEAD "shard 3 0123456789abcdef a\nshard 2 fedcba9876543210 9 b\n"),
                      SS_ECORRUPT, "line 6: not a canonical decimal number");
    /* truncation anywhere, and text after the checksum line */
    snprintf(body, sizeof body, "%s", sealed(GOOD));
    expect_parse_fail(strcat(body, "x\n"), SS_ECORRUPT, "text after the checksum line");
    snprintf(body, sizeof body, "%s", sealed(GOOD));
    for (size_t cut = 0; cut < strlen(body); cut++) {
        ss_manifest m;
        CHECK(ss__manifest_parse(&m, body, cut) != 0);
    }
    /* the separator, tab, in a name is a control character */
    expect_parse_fail(sealed("seqstore-dataset 1\nexamples 5\nfields 1\nfield u16 fixed 0 "
                             "a\tb\nshards 1\nshard 5 0123456789abcdef 9 a\n"),
                      SS_ECORRUPT, "control character");
    expect_parse_fail(
        sealed(HEAD "shard 3 0123456789abcdef 9 \xc0\xaf\nshard 2 fedcba9876543210 9 b\n"),
        SS_ECORRUPT, "not UTF-8");
}

/* A store of `n` examples of one u16 sequence field "tok". */
static void make_store(const char *path, uint64_t n, int append) {
    ss_field f = {"tok", SS_U16, 1, 0, {0}};
    ss_schema sc = {1, &f};
    ss_writer *w;
    if (append)
        CHECK_OK(ss_writer_open(&w, path, &sc, NULL));
    else
        CHECK_OK(ss_writer_create(&w, path, &sc, NULL));
    for (uint64_t i = 0; i < n; i++) {
        uint16_t tok[3] = {(uint16_t)i, 1, 2};
        ss_value v = {tok, 1 + i % 3};
        CHECK_OK(ss_writer_append(w, &v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

static void test_file_and_shards(void) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s", ss_test_path("ds"));
    mkdir(dir, 0755);
    char a[800], b[800];
    snprintf(a, sizeof a, "%s/a.ss", dir);
    snprintf(b, sizeof b, "%s/b.ss", dir);
    unlink(a), unlink(b);
    make_store(a, 4, 0);
    make_store(b, 3, 0);
    ss_store *sa, *sb;
    CHECK_OK(ss_open(&sa, a, SS_OPEN_NOLOCK));
    CHECK_OK(ss_open(&sb, b, SS_OPEN_NOLOCK));
    uint64_t da, db;
    CHECK_OK(ss__store_header_digest(&da, sa));
    CHECK_OK(ss__store_header_digest(&db, sb));
    CHECK(da != db);
    ss_manifest m;
    ss__manifest_init(&m, sa);
    uint64_t ra = ss_flat_size(sa, 0), rb = ss_flat_size(sb, 0);
    CHECK_OK(ss__manifest_add(&m, "a.ss", ss_count(sa), da, &ra));
    CHECK_OK(ss__manifest_add(&m, "b.ss", ss_count(sb), db, &rb));
    CHECK_RC(ss__manifest_add(&m, "../x.ss", 1, 0, &ra), SS_EINVAL);
    CHECK_EQ_U64(m.examples, 7);
    CHECK_OK(ss__manifest_write(&m, dir));
    CHECK_OK(ss__manifest_check_shard(&m, 0, sa));
    CHECK_OK(ss__manifest_check_shard(&m, 1, sb));
    CHECK_RC(ss__manifest_check_shard(&m, 0, sb), SS_ECORRUPT); /* count differs */
    CHECK_CONTAINS(ss_error_message(), "shard 0 'a.ss': 3 examples, the manifest says 4");
    m.shards[1].rows[0]++; /* the manifest's rows must be the shard's */
    CHECK_RC(ss__manifest_check_shard(&m, 1, sb), SS_ECORRUPT);
    CHECK_CONTAINS(ss_error_message(), "field 'tok' has");
    m.shards[1].rows[0]--;
    ss_close(sb);

    ss_manifest r, r2;
    CHECK_OK(ss__manifest_read(&r, dir));
    char file[800];
    snprintf(file, sizeof file, "%s/" SS_MANIFEST_NAME, dir);
    CHECK_OK(ss__manifest_read(&r2, file)); /* the manifest file itself */
    CHECK(r.nshards == 2 && r2.nshards == 2 && !strcmp(r.shards[1].path, "b.ss"));
    CHECK_EQ_U64(r.shards[1].digest, db);
    CHECK_EQ_U64(r2.examples, 7);
    ss__manifest_free(&r2);

    /* an append changes the header: the digest no longer matches */
    make_store(b, 2, 1);
    CHECK_OK(ss_open(&sb, b, SS_OPEN_NOLOCK));
    m.shards[1].count = 5; /* even with the count and rows updated */
    m.shards[1].rows[0] = ss_flat_size(sb, 0);
    CHECK_RC(ss__manifest_check_shard(&m, 1, sb), SS_ECORRUPT);
    CHECK_CONTAINS(ss_error_message(), "changed after the dataset was built");
    ss_close(sb);
    ss_close(sa);

    /* a schema that differs */
    char c[800];
    snprintf(c, sizeof c, "%s/c.ss", dir);
    unlink(c);
    ss_field f2 = {"tok", SS_U32, 1, 0, {0}};
    ss_schema sc2 = {1, &f2};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, c, &sc2, NULL));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *sc;
    CHECK_OK(ss_open(&sc, c, SS_OPEN_NOLOCK));
    CHECK_RC(ss__manifest_check_shard(&r, 0, sc), SS_ESCHEMA);
    CHECK_CONTAINS(ss_error_message(), "field 0 'tok' differs");
    ss_close(sc);

    /* a damaged file is refused naming it; a missing one is SS_ENOTFOUND */
    FILE *fp = fopen(file, "r+");
    CHECK(fp && fseek(fp, 30, SEEK_SET) == 0 && fputc('9', fp) != EOF && fclose(fp) == 0);
    ss_manifest bad;
    CHECK_RC(ss__manifest_read(&bad, dir), SS_ECORRUPT);
    CHECK_CONTAINS(ss_error_message(), SS_MANIFEST_NAME "'");
    unlink(file);
    CHECK_RC(ss__manifest_read(&bad, dir), SS_ENOTFOUND);
    ss__manifest_free(&r);
    ss__manifest_free(&m);
}

int main(void) {
    test_parse_good();
    test_parse_golden_failures();
    test_file_and_shards();
    puts("ok");
    return 0;
}
