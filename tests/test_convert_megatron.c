/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_megatron.c - `convert megatron` and `export megatron` against
 * tests/megatron/megatron_ref.py, an independent numpy writer and reader of
 * the published MMIDIDX layout: every dtype read back exactly, the round trip
 * convert -> export byte-identical, and a specific error for each corrupt
 * index. */
#include "convtest.h"

#include <stdint.h>

#define REF "/usr/bin/python3 " SS_SOURCE_DIR "/tests/megatron/megatron_ref.py"

static const char *const dtypes[] = {"uint8", "int8",    "int16",   "int32",
                                     "int64", "float64", "float32", "uint16"};
static const ss_dtype ss_types[] = {SS_U8, SS_I8, SS_I16, SS_I32, SS_I64, SS_F64, SS_F32, SS_U16};

/* The store as megatron_ref.py dumps a dataset: dtype, doc_idx (from the
 * attribute), each sequence's bytes in hex. Also checks field `document`
 * against doc_idx, the plain way. */
static char *dump_store(const char *path) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    size_t cap = 1 << 20, n = 0;
    char *out = malloc(cap);
    CHECK(out);
    ss_field f;
    CHECK_OK(ss_field_info(&f, s, 0));
    const char *name = NULL;
    for (int k = 0; k < 8; k++)
        if (ss_types[k] == f.dtype) name = dtypes[k];
    CHECK(name);
    n += (size_t)snprintf(out + n, cap - n, "dtype %s\ndoc_idx", name);
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, "megatron.doc_idx"));
    CHECK(a.type == SS_U64);
    const uint64_t *d = a.data;
    size_t nd = (size_t)(a.size / 8);
    for (size_t k = 0; k < nd; k++) n += (size_t)snprintf(out + n, cap - n, " %" PRIu64, d[k]);
    n += (size_t)snprintf(out + n, cap - n, "\n");
    uint32_t df = ss_test_field(s, "document");
    for (uint64_t i = 0; i < ss_count(s); i++) {
        ss_view v, dv;
        CHECK_OK(ss_get(&v, s, 0, i));
        CHECK_OK(ss_get(&dv, s, (uint32_t)df, i));
        uint64_t want = 0;
        for (size_t k = 0; k < nd; k++)
            if (d[k] <= i) want = k;
        CHECK_EQ_U64(*(const uint64_t *)dv.data, want);
        CHECK(n + 2 * v.length * v.row_bytes + 2 < cap);
        const uint8_t *b = v.data;
        for (uint64_t j = 0; j < v.length * v.row_bytes; j++)
            n += (size_t)snprintf(out + n, cap - n, "%02x", b[j]);
        n += (size_t)snprintf(out + n, cap - n, "\n");
    }
    ss_close(s);
    return out;
}

static void check_same_file(const char *a, const char *b) {
    size_t na, nb;
    char *x = ss_test_read_file(a, &na), *y = ss_test_read_file(b, &nb);
    if (na != nb || memcmp(x, y, na)) {
        fprintf(stderr, "%s and %s differ (%zu / %zu bytes)\n", a, b, na, nb);
        exit(1);
    }
    free(x);
    free(y);
}

static void test_dtypes_round_trip(void) {
    for (int k = 0; k < 8; k++) {
        char name[64];
        snprintf(name, sizeof name, "ds_%s", dtypes[k]);
        const char *prefix = ss_test_keep_path(name), *store = ss_test_keep_path("mg.ss"),
                   *back = ss_test_keep_path("back");
        const char *dump = ss_test_keep_path("ref.txt"), *dump2 = ss_test_keep_path("ref2.txt");
        EXPECT_SH(0, REF " write %s %s %d", prefix, dtypes[k], 10 + k);
        EXPECT_SH(0, REF " dump %s > %s", prefix, dump);
        EXPECT_RUN(0, "convert megatron %s -o %s --force --quiet", prefix, store);
        size_t n;
        char *want = ss_test_read_file(dump, &n), *got = dump_store(store);
        if (strcmp(want, got)) {
            fprintf(stderr, "%s: the store differs from the reference reader:\n%s\n---\n%s\n",
                    dtypes[k], want, got);
            exit(1);
        }
        free(want);
        free(got);
        EXPECT_RUN(0, "export megatron %s %s --force", store, back);
        char a[800], b[800];
        for (int e = 0; e < 2; e++) {
            snprintf(a, sizeof a, "%s.%s", prefix, e ? "idx" : "bin");
            snprintf(b, sizeof b, "%s.%s", back, e ? "idx" : "bin");
            check_same_file(a, b);
        }
        /* and Megatron's way of reading accepts the export */
        EXPECT_SH(0, REF " dump %s > %s && cmp -s %s %s", back, dump2, dump, dump2);
    }
}

/* Two datasets joined: sequences in order, doc_idx merged as Megatron's
 * merge does; exporting writes the merged dataset. */
static void test_two_prefixes(void) {
    const char *p1 = ss_test_keep_path("two_a"), *p2 = ss_test_keep_path("two_b"),
               *store = ss_test_keep_path("two.ss"), *out = ss_test_keep_path("two_o");
    EXPECT_SH(0, REF " write %s int32 1 && " REF " write %s int32 2", p1, p2);
    EXPECT_RUN(0, "convert megatron %s %s -o %s --force --quiet", p1, p2, store);
    { /* --shard K/N: sliced by sequence number, the same examples in order */
        char args[2048];
        snprintf(args, sizeof args, "convert megatron %s %s", p1, p2);
        ss_test_convert_shards(NULL, args, store, "two-shard");
    }
    EXPECT_RUN(0, "export megatron %s %s", store, out);
    const char *d1 = ss_test_keep_path("d1.txt"), *d2 = ss_test_keep_path("d2.txt"),
               *d3 = ss_test_keep_path("d3.txt");
    EXPECT_SH(0, REF " dump %s > %s && " REF " dump %s > %s && " REF " dump %s > %s", p1, d1, p2,
              d2, out, d3);
    size_t n1, n2, n3;
    char *a = ss_test_read_file(d1, &n1), *b = ss_test_read_file(d2, &n2),
         *c = ss_test_read_file(d3, &n3);
    /* expected: a's sequences then b's; doc_idx = a's, then b's (after its
     * 0) plus a's sequence count */
    char *la = strchr(strchr(a, '\n') + 1, '\n') + 1, *lb = strchr(strchr(b, '\n') + 1, '\n') + 1;
    uint64_t na = 0;
    for (char *p = la; *p; p++) na += *p == '\n';
    char *want = malloc(n1 + n2 + 4096), *w = want;
    CHECK(want);
    w += sprintf(w, "dtype int32\ndoc_idx");
    char *tok = strchr(a, '\n') + 8; /* after "doc_idx" */
    for (char *e; *tok == ' '; tok = e)
        w += sprintf(w, " %" PRIu64, (uint64_t)strtoull(tok, &e, 10));
    tok = strchr(b, '\n') + 8;
    strtoull(tok, &tok, 10); /* b's leading 0 */
    for (char *e; *tok == ' '; tok = e)
        w += sprintf(w, " %" PRIu64, na + (uint64_t)strtoull(tok, &e, 10));
    w += sprintf(w, "\n%s%s", la, lb);
    if (strcmp(want, c)) {
        fprintf(stderr, "merged export differs:\n%s\n---\n%s\n", want, c);
        exit(1);
    }
    free(a), free(b), free(c), free(want);
}

/* A store from another converter: one document per example. */
static void test_export_plain_store(void) {
    const char *txt = ss_test_keep_path("plain.txt"), *store = ss_test_keep_path("plain.ss"),
               *out = ss_test_keep_path("plain_o");
    ss_test_write_file(txt, "ab\n\ncde\n", 8);
    EXPECT_RUN(0, "convert text %s -o %s --quiet", txt, store);
    EXPECT_RUN(0, "export megatron %s %s", store, out);
    const char *d = ss_test_keep_path("plain_dump.txt");
    EXPECT_SH(0, REF " dump %s > %s", out, d);
    size_t n;
    char *got = ss_test_read_file(d, &n);
    CHECK(!strcmp(got, "dtype uint8\ndoc_idx 0 1 2 3\n6162\n\n636465\n"));
    free(got);
    /* refusals */
    EXPECT_RUN(1, "export megatron %s %s", store, out);
    EXPECT_ERR("exists (--force replaces it)");
    EXPECT_RUN(1, "export megatron %s %s --field nope --force", store, out);
    EXPECT_ERR("no field 'nope'");
    EXPECT_RUN(1, "export megatron %s %s --field source --force", store, out);
    EXPECT_ERR("field 'source' is not a sequence of scalars");
    const char *chars = ss_test_keep_path("chars.ss");
    EXPECT_RUN(0, "convert text %s --tokens chars -o %s --quiet", txt, chars);
    EXPECT_RUN(1, "export megatron %s %s --force", chars, out);
    EXPECT_ERR("field 'tokens' is u32: Megatron has");
    EXPECT_RUN(2, "export megatron %s", store);
    EXPECT_RUN(2, "export parquet %s %s", store, out);
    EXPECT_ERR("expected one STORE"); /* 'export STORE --format F' or 'export megatron ...' */
}

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i);
}

/* Each corruption of a valid index gets its own message. */
static void test_bad_index(void) {
    const char *good = ss_test_keep_path("good");
    EXPECT_SH(0, REF " write %s uint16 5", good);
    char path[800];
    snprintf(path, sizeof path, "%s.idx", good);
    size_t n;
    uint8_t *idx = (uint8_t *)ss_test_read_file(path, &n);
    uint64_t nseq = 0, ndoc = 0;
    for (int i = 7; i >= 0; i--) nseq = nseq << 8 | idx[18 + i], ndoc = ndoc << 8 | idx[26 + i];
    size_t sizes = 34, ptrs = 34 + 4 * nseq, docs = 34 + 12 * nseq;
    CHECK(nseq > 3 && ndoc > 3 && n == docs + 8 * ndoc);
    uint64_t before_last = 0; /* doc_idx[ndoc - 2]: the last document is not empty */
    for (int i = 7; i >= 0; i--) before_last = before_last << 8 | idx[docs + 8 * (ndoc - 2) + i];
    CHECK(before_last < nseq);
    struct {
        const char *name, *expect;
        size_t at, len; /* bytes [at, at+len) replaced by `with` */
        uint64_t with;
        size_t newsize; /* 0: unchanged */
    } cases[] = {
        {"short", "shorter than the 34-byte header", 0, 0, 0, 20},
        {"magic", "not a Megatron index", 0, 1, 'X', 0},
        {"version", "index version 2: only version 1", 9, 8, 2, 0},
        {"code", "unknown dtype code 9", 17, 1, 9, 0},
        {"count", "more than its", 18, 8, 1u << 30, 0},
        {"trailing", "3 trailing bytes after the document indices", 0, 0, 0, n + 3},
        {"modes", "sequence modes of a multimodal dataset", 0, 0, 0, n + nseq},
        {"negsize", "sequence 1 has a negative length", sizes + 4, 4, 0xFFFFFFFFu, 0},
        {"pointer", "sequence 2 (bytes 1000000", ptrs + 16, 8, 1000000, 0},
        {"doc0", "document index 0 is 1, not 0", docs, 8, 1, 0},
        {"docorder", "document index 2 is 0: must be in", docs + 16, 8, 0, 0},
        {"docbig", "must be in", docs + 8 * (ndoc - 1), 8, nseq + 1, 0},
        /* the last document ends before the last sequence: the sequences
         * after it would get a document that does not exist */
        {"docend", "sequences after it belong to no document", docs + 8 * (ndoc - 1), 8,
         nseq - 1, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char prefix[700], f[800];
        snprintf(prefix, sizeof prefix, "%s_%s", good, cases[k].name);
        size_t m = cases[k].newsize ? cases[k].newsize : n;
        uint8_t *bad = calloc(1, m + 8);
        CHECK(bad);
        memcpy(bad, idx, m < n ? m : n);
        if (cases[k].len == 1) bad[cases[k].at] = (uint8_t)cases[k].with;
        if (cases[k].len == 4)
            for (int i = 0; i < 4; i++) bad[cases[k].at + i] = (uint8_t)(cases[k].with >> 8 * i);
        if (cases[k].len == 8) put64(bad + cases[k].at, cases[k].with);
        snprintf(f, sizeof f, "%s.idx", prefix);
        ss_test_write_file(f, bad, m);
        free(bad);
        EXPECT_SH(0, "cp %s.bin %s.bin", good, prefix);
        EXPECT_RUN(1, "convert megatron %s -o %s --force --quiet", prefix,
                   ss_test_keep_path("bad.ss"));
        EXPECT_ERR(prefix);
        EXPECT_ERR(cases[k].expect);
    }
    free(idx);
    EXPECT_RUN(1, "convert megatron %s_missing -o %s --force", good, ss_test_keep_path("bad.ss"));
    EXPECT_ERR("_missing.bin: cannot open: No such file");
    /* --skip-bad skips a bad dataset and keeps the good one */
    EXPECT_RUN(0, "convert megatron %s_magic %s --skip-bad -o %s --force --quiet", good, good,
               ss_test_keep_path("skip.ss"));
    ss_store *s;
    CHECK_OK(ss_open(&s, ss_test_keep_path("skip.ss"), 0));
    CHECK_EQ_U64(ss_count(s), nseq);
    ss_close(s);
    EXPECT_RUN(2, "convert megatron -o %s --force", ss_test_keep_path("bad.ss"));
    EXPECT_ERR("no dataset PREFIX");
}

/* A conversion of two datasets killed part way and resumed exports the same
 * files as an uninterrupted one. */
static void test_resume(void) {
    const char *p1 = ss_test_keep_path("res_a"), *p2 = ss_test_keep_path("res_b"),
               *full = ss_test_keep_path("res_full.ss"), *part = ss_test_keep_path("res_part.ss");
    EXPECT_SH(0, REF " write %s int16 7 && " REF " write %s int16 8", p1, p2);
    EXPECT_RUN(0, "convert megatron %s %s -o %s --quiet", p1, p2, full);
    int rc = run_sh("SS_TEST_KILL_AFTER=30 %s convert megatron %s %s --commit-bytes 64 -o %s "
                    "--quiet",
                    SS_CLI, p1, p2, part);
    CHECK_EXIT(rc, 128 + 9, g_err);
    EXPECT_RUN(0, "convert megatron %s %s --resume -o %s --quiet", p1, p2, part);
    EXPECT_RUN(0, "export megatron %s %s", full, ss_test_keep_path("res_o1"));
    EXPECT_RUN(0, "export megatron %s %s", part, ss_test_keep_path("res_o2"));
    check_same_file(ss_test_keep_path("res_o1.bin"), ss_test_keep_path("res_o2.bin"));
    check_same_file(ss_test_keep_path("res_o1.idx"), ss_test_keep_path("res_o2.idx"));
    char *a = dump_store(full), *b = dump_store(part);
    CHECK(!strcmp(a, b));
    free(a), free(b);
}

int main(void) {
    test_dtypes_round_trip();
    test_two_prefixes();
    test_export_plain_store();
    test_bad_index();
    test_resume();
    printf("ok\n");
    return 0;
}
