/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_keys.c - checksums bound to keys (format version 2) and what
 * version 1 still guarantees; the attribute walk refusing a damaged B-tree;
 * verify naming each damaged block. The store files are edited below LMDB:
 * a small walker reads LMDB's pages (lmdb's mdb.c layout, 64-bit) to find
 * the node of a key, so that page numbers can be changed as a bit flip
 * would change them. Checksums are recomputed from spec §4 here. */
#include "testutil.h"

#include "layout.h"

#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

static const ss_field test_fields[2] = {{"tokens", SS_U16, 1, 0, {0}},
                                        {"label", SS_U32, 0, 0, {0}}};
static const ss_schema test_schema = {2, test_fields};
/* Stores written here add "copy", a second sequence field equal to "tokens":
 * its index segment holds the same bytes under another key. */
static const ss_field fields3[3] = {
    {"tokens", SS_U16, 1, 0, {0}}, {"label", SS_U32, 0, 0, {0}}, {"copy", SS_U16, 1, 0, {0}}};
static const ss_schema schema3 = {3, fields3};

/* The contents of tests/data/v1_store.ss (tests/data/make_v1_store.c). */
static uint64_t tok_len(uint64_t i) {
    return (i * 37) % 50;
}
static uint16_t tok_at(uint64_t i, uint64_t k) {
    return (uint16_t)(i * 7919 + k * 31 + 1);
}
static uint32_t label_of(uint64_t i) {
    return (uint32_t)(i * 2654435761u);
}

static void append_range(ss_writer *w, uint64_t first, uint64_t last) {
    uint16_t buf[64];
    for (uint64_t i = first; i < last; i++) {
        for (uint64_t k = 0; k < tok_len(i); k++) buf[k] = tok_at(i, k);
        uint32_t label = label_of(i);
        ss_value v[3] = {{buf, tok_len(i)}, {&label, 1}, {buf, tok_len(i)}};
        CHECK_OK(ss_writer_append(w, v));
    }
}

static void check_contents(const ss_store *s, uint64_t count) {
    CHECK_EQ_U64(ss_count(s), count);
    for (uint64_t i = 0; i < count; i++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, 0, i));
        CHECK_EQ_U64(v.length, tok_len(i));
        for (uint64_t k = 0; k < v.length; k++)
            CHECK(((const uint16_t *)v.data)[k] == tok_at(i, k));
        CHECK_OK(ss_get(&v, s, 1, i));
        CHECK(*(const uint32_t *)v.data == label_of(i));
    }
}

/* The same store as the golden one, written by this library in format
 * `version` (0: the newest), with `nattrs` extra attributes of long names
 * (to spread them over pages). */
static void make_store(const char *path, int nattrs, uint32_t version) {
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.format_version = version;
    o.chunk_pages = 1;
    o.flags = SS_WRITE_NOSYNC | SS_WRITE_FORCE;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema3, &o));
    append_range(w, 0, 300);
    CHECK_OK(ss_writer_set_attr(w, "note", SS_ATTR_TEXT, "version 2", 9));
    for (int a = 0; a < nattrs; a++) {
        char name[128];
        snprintf(name, sizeof name, "attr.%04d.%0100d", a, a);
        CHECK_OK(ss_writer_set_attr(w, name, SS_ATTR_TEXT, name, strlen(name)));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
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
    char lock[1100];
    snprintf(lock, sizeof lock, "%s-lock", to);
    unlink(lock);
}

/* ---------------------------------------------------- LMDB, raw and paged */

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

/* A copy of the value of `key`. */
static unsigned char *raw_get(const char *path, const ss_key *key, size_t *size) {
    raw_env r;
    raw_open(&r, path, 1);
    MDB_val k = {key->size, (void *)key->bytes}, v;
    CHECK(mdb_get(r.txn, r.dbi, &k, &v) == 0);
    unsigned char *copy = malloc(v.mv_size);
    CHECK(copy);
    memcpy(copy, v.mv_data, v.mv_size);
    *size = v.mv_size;
    raw_close(&r, 0);
    return copy;
}

/* Store `value` under `to` and delete `from` (a renamed key, same bytes). */
static void raw_rename(const char *path, const ss_key *from, const ss_key *to) {
    size_t size;
    unsigned char *value = raw_get(path, from, &size);
    raw_env r;
    raw_open(&r, path, 0);
    MDB_val k = {from->size, (void *)from->bytes}, nk = {to->size, (void *)to->bytes},
            v = {size, value};
    CHECK(mdb_del(r.txn, r.dbi, &k, NULL) == 0);
    CHECK(mdb_put(r.txn, r.dbi, &nk, &v, 0) == 0);
    raw_close(&r, 1);
    free(value);
}

/* The whole file in memory, and LMDB's page layout in it. */
typedef struct pages {
    unsigned char *b;
    uint64_t size, psize, root;
} pages;

static void pages_load(pages *p, const char *path) {
    p->size = file_size(path);
    p->b = malloc(p->size);
    FILE *f = fopen(path, "rb");
    CHECK(p->b && f && fread(p->b, 1, p->size, f) == p->size);
    fclose(f);
    /* meta pages 0 and 1: MDB_meta after the 16-byte page header; the newer
     * (higher txnid at 144) holds the main database's root (at 128); the page
     * size is the free database's md_pad (at 40) */
    p->psize = ss_le32(p->b + 40);
    CHECK(p->psize >= 512 && 2 * p->psize <= p->size);
    const unsigned char *m0 = p->b, *m1 = p->b + p->psize;
    const unsigned char *m = ss_le64(m1 + 144) > ss_le64(m0 + 144) ? m1 : m0;
    p->root = ss_le64(m + 128);
}

static void pages_save(const pages *p, const char *path) {
    FILE *f = fopen(path, "r+b");
    CHECK(f && fwrite(p->b, 1, p->size, f) == p->size);
    CHECK(fclose(f) == 0);
    free(p->b);
}

static unsigned char *page_at(const pages *p, uint64_t pgno) {
    CHECK((pgno + 1) * p->psize <= p->size);
    return p->b + pgno * p->psize;
}
static unsigned page_flags(const unsigned char *pg) {
    return (unsigned)pg[10] | (unsigned)pg[11] << 8;
}
static unsigned page_nkeys(const unsigned char *pg) {
    return ((unsigned)pg[12] | (unsigned)pg[13] << 8) / 2 - 8;
}
static unsigned char *node_at(unsigned char *pg, unsigned i) {
    return pg + ((unsigned)pg[16 + 2 * i] | (unsigned)pg[17 + 2 * i] << 8);
}
static unsigned node_ksize(const unsigned char *n) {
    return (unsigned)n[6] | (unsigned)n[7] << 8;
}
static uint64_t branch_pgno(const unsigned char *n) {
    return ss_le32(n) | (uint64_t)((unsigned)n[4] | (unsigned)n[5] << 8) << 32;
}
#define P_BRANCH 0x01
#define P_LEAF 0x02
#define F_BIGDATA 0x01

/* LMDB's default order: bytes, then the shorter first. */
static int key_cmp(const unsigned char *a, size_t na, const unsigned char *b, size_t nb) {
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

/* The leaf node of `key` (its overflow page number follows the key). */
static unsigned char *find_leaf_node(const pages *p, const ss_key *key) {
    unsigned char *pg = page_at(p, p->root);
    while (page_flags(pg) & P_BRANCH) {
        unsigned n = page_nkeys(pg), pick = 0;
        for (unsigned i = 1; i < n; i++) {
            unsigned char *nd = node_at(pg, i);
            if (key_cmp(nd + 8, node_ksize(nd), key->bytes, key->size) <= 0) pick = i;
        }
        pg = page_at(p, branch_pgno(node_at(pg, pick)));
    }
    CHECK(page_flags(pg) & P_LEAF);
    for (unsigned i = 0; i < page_nkeys(pg); i++) {
        unsigned char *nd = node_at(pg, i);
        if (key_cmp(nd + 8, node_ksize(nd), key->bytes, key->size) == 0) {
            CHECK((nd[4] & F_BIGDATA) != 0); /* blocks live in overflow pages */
            return nd;
        }
    }
    CHECK(!"key not found in its leaf");
    return NULL;
}

/* Swap the overflow page numbers of two blocks: each key now leads to the
 * other's (valid, checksummed) block, as one flipped bit of a page number can. */
static void swap_block_pages(const char *path, const ss_key *a, const ss_key *b) {
    pages p;
    pages_load(&p, path);
    unsigned char *na = find_leaf_node(&p, a), *nb = find_leaf_node(&p, b);
    unsigned char *pa = na + 8 + node_ksize(na), *pb = nb + 8 + node_ksize(nb), t[8];
    CHECK(ss_le32(na) == ss_le32(nb)); /* same value size: nothing read past a block */
    memcpy(t, pa, 8);
    memcpy(pa, pb, 8);
    memcpy(pb, t, 8);
    pages_save(&p, path);
}

/* In a branch page under `pgno`, a node i >= 1 whose subtree holds attribute
 * keys only (its key and the next node's start with 'A'): point it at a page
 * beyond the file, so that a cursor walking the attributes fails there. */
static int break_attr_subtree(pages *p, uint64_t pgno) {
    unsigned char *pg = page_at(p, pgno);
    if (!(page_flags(pg) & P_BRANCH)) return 0;
    unsigned n = page_nkeys(pg);
    for (unsigned i = 1; i + 1 < n; i++) {
        unsigned char *nd = node_at(pg, i), *next = node_at(pg, i + 1);
        if (node_ksize(nd) && nd[8] == 'A' && node_ksize(next) && next[8] == 'A') {
            nd[0] = nd[1] = nd[2] = nd[3] = 0xFF;
            nd[4] = 0xFF; /* page number 2^40 - 1 */
            return 1;
        }
    }
    for (unsigned i = 0; i < n; i++)
        if (break_attr_subtree(p, branch_pgno(node_at(pg, i)))) return 1;
    return 0;
}

/* spec §4 */
static uint64_t spec_checksum(const unsigned char *payload, uint64_t len, const ss_key *key,
                              uint32_t version) {
    if (version < 2) return XXH3_64bits(payload, len);
    return XXH3_64bits_withSeed(payload, len, XXH3_64bits(key->bytes, key->size));
}

/* Every block's stored checksum is what the spec says for `version`. */
static void check_block_sums(const char *path, uint32_t version) {
    raw_env r;
    raw_open(&r, path, 1);
    MDB_cursor *c;
    CHECK(mdb_cursor_open(r.txn, r.dbi, &c) == 0);
    MDB_val k, v;
    int n = 0;
    while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0) {
        ss_key key;
        CHECK(k.mv_size <= sizeof key.bytes);
        memcpy(key.bytes, k.mv_data, k.mv_size);
        key.size = k.mv_size;
        const unsigned char *b = v.mv_data;
        uint64_t len = ss_le64(b + 8);
        CHECK(len + SS_BLOCK_HDR <= v.mv_size);
        CHECK(ss_le64(b) == spec_checksum(b + SS_BLOCK_HDR, len, &key, version));
        CHECK(ss_le64(b) != spec_checksum(b + SS_BLOCK_HDR, len, &key, version == 1 ? 2 : 1));
        n++;
    }
    CHECK(n >= 5);
    mdb_cursor_close(c);
    raw_close(&r, 0);
}

/* --------------------------------------------------------------- verify */

typedef struct seen {
    int calls;
    char what[4][64], where[4][400];
    ss_verify_problem p[4];
} seen;

static int record(void *ctx, const ss_verify_problem *p) {
    seen *s = ctx;
    if (s->calls < 4) {
        s->p[s->calls] = *p;
        snprintf(s->what[s->calls], sizeof s->what[0], "%s", p->what);
        snprintf(s->where[s->calls], sizeof s->where[0], "%s", p->where);
    }
    s->calls++;
    return 0;
}

static uint64_t verify(const char *path, seen *sn) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    memset(sn, 0, sizeof *sn);
    uint64_t problems = 99;
    int rc = ss_verify(&problems, s, record, sn);
    CHECK(rc == (problems ? SS_ECORRUPT : 0));
    ss_close(s);
    return problems;
}

/* ---------------------------------------------------------------- tests */

static void test_v1_golden(void) {
    static char v1[1024];
    char src[1024];
    snprintf(src, sizeof src, "%s/tests/data/v1_store.ss", SS_SOURCE_DIR);
    snprintf(v1, sizeof v1, "%s", ss_test_path("v1.ss"));
    copy_file(src, v1);
    check_block_sums(v1, 1); /* it really is version 1 */
    ss_store *s;
    CHECK_OK(ss_open(&s, v1, 0));
    ss_store_info info;
    CHECK_OK(ss_store_get_info(&info, s));
    CHECK_EQ_U64(info.format_version, 1);
    check_contents(s, 300);
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, "note"));
    CHECK(a.size == 9 && memcmp(a.data, "version 1", 9) == 0);
    CHECK_OK(ss_verify(NULL, s, NULL, NULL));
    ss_close(s);

    /* appending keeps version 1: every block, old and new, in its checksum */
    ss_writer *w;
    CHECK_OK(ss_writer_open(&w, v1, &test_schema, NULL));
    append_range(w, 300, 700);
    CHECK_OK(ss_writer_set_attr(w, "added", SS_ATTR_TEXT, "by v2", 5));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    check_block_sums(v1, 1);
    CHECK_OK(ss_open(&s, v1, 0));
    CHECK_OK(ss_store_get_info(&info, s));
    CHECK_EQ_U64(info.format_version, 1);
    check_contents(s, 700);
    CHECK_OK(ss_attr_get(&a, s, "added"));
    CHECK_OK(ss_verify(NULL, s, NULL, NULL));
    ss_close(s);

    /* an interrupted append, resumed, too */
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.commit_bytes = 1;
    CHECK_OK(ss_writer_open(&w, v1, &test_schema, &o));
    append_range(w, 700, 800); /* commits at every closed chunk: W is version 1 */
    ss_writer_free(w);
    o.flags = SS_WRITE_RESUME;
    CHECK_OK(ss_writer_open(&w, v1, &test_schema, &o));
    uint64_t at = ss_writer_count(w); /* the last commit: when a chunk closed */
    CHECK(at > 700 && at <= 800);
    append_range(w, at, 850);
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    check_block_sums(v1, 1);
    CHECK_OK(ss_open(&s, v1, 0));
    check_contents(s, 850);
    CHECK_OK(ss_verify(NULL, s, NULL, NULL));
    ss_close(s);

    /* version 1's documented weakness: a chunk key leading to another valid
     * block passes verify (and reads the wrong examples) */
    copy_file(src, v1);
    ss_key k0, k1;
    ss__key_numbered(&k0, SS_KEY_DATA, 0, 0);
    ss__key_numbered(&k1, SS_KEY_DATA, 0, 1);
    swap_block_pages(v1, &k0, &k1);
    seen sn;
    CHECK_EQ_U64(verify(v1, &sn), 0);
}

/* The store at `path` is sound in format `version`: every block carries
 * that version's checksum, the header says it, the `count` examples read as
 * written and verify finds nothing. */
static void check_sound(const char *path, uint32_t version, uint64_t count) {
    check_block_sums(path, version);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_store_info info;
    CHECK_OK(ss_store_get_info(&info, s));
    CHECK_EQ_U64(info.format_version, version);
    check_contents(s, count);
    ss_close(s);
    seen sn;
    CHECK_EQ_U64(verify(path, &sn), 0);
}

/* Appending to a version-2 store (and a version-3 one) keeps its version:
 * its header, checksums and index segment layout (spec §8), past a segment
 * boundary of either layout; the result reads and verifies. */
static void test_append_keeps_version(const char *good, uint32_t version) {
    const char *path = ss_test_path("appended.ss");
    copy_file(good, path);
    ss_writer *w;
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_NOSYNC;
    o.format_version = version == 2 ? 3 : 2; /* only for created stores: ignored */
    CHECK_OK(ss_writer_open(&w, path, &schema3, &o));
    append_range(w, 300, 140000);
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    check_sound(path, version, 140000);
}

/* Versions 2 and 3 bind checksums to keys alike. */
static void test_v2_binding(const char *good, uint32_t version) {
    const char *bad = ss_test_path("bound.ss");
    check_sound(good, version, 300);
    ss_store *s;
    seen sn;

    /* two data chunks' overflow page numbers swapped */
    copy_file(good, bad);
    ss_key k0, k1;
    ss__key_numbered(&k0, SS_KEY_DATA, 0, 1);
    ss__key_numbered(&k1, SS_KEY_DATA, 0, 2);
    swap_block_pages(bad, &k0, &k1);
    CHECK_EQ_U64(verify(bad, &sn), 2);
    CHECK(strcmp(sn.what[0], "data chunk checksum mismatch") == 0);
    CHECK(sn.p[0].field == 0 && sn.p[0].chunk == 1 && sn.p[1].chunk == 2);
    CHECK(strcmp(sn.where[0], "field 'tokens' data chunk 1") == 0);

    /* two fields' index segments swapped: the same bytes under other keys */
    copy_file(good, bad);
    ss__key_numbered(&k0, SS_KEY_INDEX, 0, 0);
    ss__key_numbered(&k1, SS_KEY_INDEX, 2, 0);
    swap_block_pages(bad, &k0, &k1);
    CHECK_EQ_U64(verify(bad, &sn), 2);
    CHECK(strcmp(sn.what[0], "index segment checksum mismatch") == 0);
    CHECK(strcmp(sn.where[0], "index segment 0 of field 'tokens'") == 0);
    CHECK(strcmp(sn.where[1], "index segment 0 of field 'copy'") == 0);
    CHECK_EQ_U64(sn.p[0].first_example, 0);
    CHECK_EQ_U64(sn.p[0].last_example, 300);
    CHECK(strstr(ss_error_message(), "index segment 0 of field 'tokens' (examples 0 to 299)"));

    /* an attribute renamed: its bytes are intact, its key is not */
    copy_file(good, bad);
    ss__key_named(&k0, SS_KEY_ATTR, "note");
    ss__key_named(&k1, SS_KEY_ATTR, "nose");
    raw_rename(bad, &k0, &k1);
    CHECK_OK(ss_open(&s, bad, 0));
    ss_attr a;
    CHECK_RC(ss_attr_get(&a, s, "nose"), SS_ECORRUPT);
    CHECK(strstr(ss_error_message(), "'nose'"));
    CHECK_RC(ss_attr_get(&a, s, "note"), SS_ENOTFOUND);
    ss_close(s);
    CHECK_EQ_U64(verify(bad, &sn), 1);
    CHECK(strcmp(sn.where[0], "attribute 'nose'") == 0);
    CHECK(sn.p[0].field == SS_FIELD_NONE);
}

/* A progress record copied over the header: same layout, valid checksum
 * under W. Version 2 refuses it as corrupt rather than as incomplete. */
static void test_header_binding(void) {
    const char *path = ss_test_path("hw.ss");
    make_store(path, 0, 0);
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_NOSYNC;
    ss_writer *w;
    CHECK_OK(ss_writer_open(&w, path, &schema3, &o));
    append_range(w, 300, 400);
    CHECK_OK(ss_writer_commit(w));
    ss_writer_free(w);
    ss_key h, wk;
    ss__key_named(&h, SS_KEY_HEADER, NULL);
    ss__key_named(&wk, SS_KEY_PROGRESS, NULL);
    raw_rename(path, &wk, &h);
    ss_store *s;
    CHECK_RC(ss_open(&s, path, 0), SS_ECORRUPT);
    CHECK(strstr(ss_error_message(), "metadata checksum mismatch"));
}

/* A cursor error in the middle of the attributes is corruption, not the end
 * of the attributes (before: open succeeded with the attributes of the first
 * leaf page only, and `cat` and `verify` went on without the rest). */
static void test_attr_walk(void) {
    const char *path = ss_test_path("attrs.ss");
    make_store(path, 200, 0);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    CHECK_EQ_U64(ss_attr_count(s), 203); /* + ss.lengths of the 2 sequence fields */
    ss_close(s);
    pages p;
    pages_load(&p, path);
    CHECK(page_flags(page_at(&p, p.root)) & P_BRANCH);
    CHECK(break_attr_subtree(&p, p.root));
    pages_save(&p, path);
    s = (ss_store *)1;
    int rc = ss_open(&s, path, 0);
    if (rc == 0) {
        fprintf(stderr, "open succeeded with %llu of 203 attributes\n",
                (unsigned long long)ss_attr_count(s));
        exit(1);
    }
    CHECK_RC(rc, SS_ECORRUPT);
    CHECK(s == NULL);
    /* either this walk names the attributes, or a check before it the pages */
    printf("damaged attribute subtree: %s\n", ss_error_message());
}

/* The CLI prints verify's names. */
static void test_cli_names(const char *good) {
    const char *bad = ss_test_path("names.ss");
    copy_file(good, bad);
    ss_key k0, k1;
    ss__key_named(&k0, SS_KEY_ATTR, "note");
    ss__key_named(&k1, SS_KEY_ATTR, "nose");
    raw_rename(bad, &k0, &k1);
    char err[4096];
    int code = ss_test_cli(err, sizeof err, NULL, "verify %s", bad);
    CHECK_EXIT(code, 3, err);
    CHECK_CONTAINS(err, "attribute 'nose': attribute checksum mismatch");

    copy_file(good, bad);
    ss__key_numbered(&k0, SS_KEY_INDEX, 2, 0);
    ss__key_numbered(&k1, SS_KEY_INDEX, 0, 0);
    swap_block_pages(bad, &k0, &k1);
    code = ss_test_cli(err, sizeof err, NULL, "verify %s", bad);
    CHECK_EXIT(code, 3, err);
    CHECK_CONTAINS(err, "index segment 0 of field 'tokens': index segment checksum mismatch "
                        "(examples 0 to 299)");
    CHECK_CONTAINS(err, "index segment 0 of field 'copy'");
}

/* Runs every test, or those named on the command line (v1, binding, header,
 * attrs, cli). */
int main(int argc, char **argv) {
    static char good[1024], good2[1024];
    snprintf(good, sizeof good, "%s", ss_test_path("good.ss"));
    snprintf(good2, sizeof good2, "%s", ss_test_path("good2.ss"));
    make_store(good, 0, 0);
    make_store(good2, 0, 2);
    static const char *names[] = {"v1", "binding", "header", "attrs", "cli"};
    for (int t = 0; t < 5; t++) {
        int run = argc < 2;
        for (int a = 1; a < argc; a++) run |= strcmp(argv[a], names[t]) == 0;
        if (!run) continue;
        if (t == 0) test_v1_golden();
        if (t == 1) test_v2_binding(good, SS_FORMAT_VERSION);
        if (t == 1) test_v2_binding(good2, 2);
        if (t == 1) test_append_keeps_version(good2, 2);
        if (t == 1) test_append_keeps_version(good, SS_FORMAT_VERSION);
        if (t == 2) test_header_binding();
        if (t == 3) test_attr_walk();
        if (t == 4) test_cli_names(good);
        printf("%s: ok\n", names[t]);
    }
    printf("format keys: ok\n");
    return 0;
}
