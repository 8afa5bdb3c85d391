/* SPDX-License-Identifier: BSD-2-Clause */
/* test_lm_stored.c - the stored LM index (ss_lm_save, seqstore/lm.h): an
 * index read back gives every sample of a fresh build; other options,
 * grown stores and other documents of the same count and tokens build
 * afresh; a damaged header (a wrong size, a later version, a flipped byte)
 * is refused at ss_lm_create(), a damaged block of the arrays by the read
 * that reaches it (and only by those), and values that lie under valid
 * checksums by the reads that use them, each naming the section. */
#include "testutil.h"
#include "lm_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EOD 65535

static void add_docs(const char *path, int create, uint64_t n, uint64_t *st) {
    ss_field f[1] = {{"tokens", SS_U16, 1, 0, {0}}};
    ss_schema schema = {1, f};
    ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
    wo.flags = SS_WRITE_FORCE;
    ss_writer *w;
    if (create)
        CHECK_OK(ss_writer_create(&w, path, &schema, &wo));
    else
        CHECK_OK(ss_writer_open(&w, path, NULL, NULL));
    uint16_t buf[64];
    for (uint64_t d = 0; d < n; d++) {
        uint64_t len = ss_test_rand(st) % 40;
        for (uint64_t k = 0; k < len; k++) buf[k] = (uint16_t)(ss_test_rand(st) % 1000);
        ss_value v[1] = {{buf, len}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

/* Every sample of a and b is the same. */
static void same_samples(const ss_lm *a, const ss_lm *b, uint64_t L) {
    ss_lm_info ia, ib;
    CHECK_OK(ss_lm_get_info(&ia, a));
    CHECK_OK(ss_lm_get_info(&ib, b));
    CHECK(ia.num_samples == ib.num_samples && ia.num_epochs == ib.num_epochs &&
          ia.split_documents == ib.split_documents &&
          ia.separate_final_epoch == ib.separate_final_epoch);
    int64_t *t = malloc(4 * L * sizeof *t);
    int32_t *cu = malloc(2 * (L + 1) * sizeof *cu);
    CHECK(t && cu);
    for (uint64_t i = 0; i < ia.num_samples; i++) {
        ss_lm_batch ba = {t, t + L, NULL, NULL, NULL, cu, NULL};
        ss_lm_batch bb = {t + 2 * L, t + 3 * L, NULL, NULL, NULL, cu + L + 1, NULL};
        CHECK_OK(ss_lm_get(&ba, a, &i, 1));
        CHECK_OK(ss_lm_get(&bb, b, &i, 1));
        CHECK(!memcmp(t, t + 2 * L, 2 * L * sizeof *t));
        CHECK(!memcmp(cu, cu + L + 1, (L + 1) * sizeof *cu));
    }
    free(t);
    free(cu);
}

static ss_lm *open_lm(ss_store **s, const char *path, const ss_lm_options *o, int *stored) {
    CHECK_OK(ss_open(s, path, 0));
    ss_lm *lm;
    CHECK_OK(ss_lm_create(&lm, *s, 0, o));
    ss_lm_info info;
    CHECK_OK(ss_lm_get_info(&info, lm));
    *stored = info.stored;
    return lm;
}

/* Rewrite the stored section `name` of `path` through `edit`. */
static void damage(const char *path, const char *name, void (*edit)(unsigned char *, size_t *)) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, name));
    size_t size = a.size;
    unsigned char *buf = malloc(size + 8);
    CHECK(buf);
    memcpy(buf, a.data, size);
    ss_close(s);
    edit(buf, &size);
    ss_writer *w;
    CHECK_OK(ss_sections_writer_open(&w, path));
    CHECK_OK(ss_writer_set_attr(w, name, SS_ATTR_BYTES, buf, size));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    free(buf);
}

/* Where the arrays start: after the 256-byte header and the block table. */
static size_t arrays_at(const unsigned char *b) {
    uint64_t nb;
    memcpy(&nb, b + 8 * 16, 8);
    return 256 + 8 * nb;
}

static void bad_document(unsigned char *b, size_t *size) {
    memset(b + *size - 4, 0xff, 4); /* the last document index entry */
}
static void bad_shuffle(unsigned char *b, size_t *size) {
    (void)size;
    memset(b + arrays_at(b), 0x7f, 8); /* the first sample of the shuffle */
}
static void bad_size(unsigned char *b, size_t *size) {
    (void)b;
    *size -= 4;
}
static void bad_version(unsigned char *b, size_t *size) {
    (void)size;
    b[8] = 3;
}
static void bad_header(unsigned char *b, size_t *size) {
    (void)size;
    b[8 * 11] ^= 1; /* S */
}
static void old_version(unsigned char *b, size_t *size) {
    (void)size;
    b[8] = 1; /* what the library wrote before blocks were checked */
}
/* The same, sealed again: checksums that pass over values that lie. */
static void lying_document(unsigned char *b, size_t *size) {
    uint64_t S;
    memcpy(&S, b + 8 * 11, 8);
    memset(b + arrays_at(b) + 24 * S + 16, 0xff, 4); /* the first, which sample 0 reads */
    ss__lm_stored_seal(b, *size);
}
static void lying_shuffle(unsigned char *b, size_t *size) {
    bad_shuffle(b, size);
    ss__lm_stored_seal(b, *size);
}
static void lying_sample(unsigned char *b, size_t *size) {
    uint64_t S;
    memcpy(&S, b + 8 * 11, 8);
    int64_t v = 1; /* sample 1 starts where sample 0 does: 0 tokens long */
    memcpy(b + arrays_at(b) + 8 * S + 16, &v, 8);
    memset(b + arrays_at(b) + 8 * S + 24, 0, 8);
    ss__lm_stored_seal(b, *size);
}

/* Read every sample of `o` from `path` one by one: the count that fail,
 * each SS_ECORRUPT naming `name`. */
static uint64_t failing_reads(const char *path, const ss_lm_options *o, const char *name) {
    ss_store *s;
    int stored;
    ss_lm *lm = open_lm(&s, path, o, &stored);
    CHECK(stored);
    ss_lm_info info;
    CHECK_OK(ss_lm_get_info(&info, lm));
    int64_t t[64];
    uint64_t bad = 0;
    for (uint64_t i = 0; i < info.num_samples; i++) {
        ss_lm_batch b = {t, NULL, NULL, NULL, NULL, NULL, NULL};
        int rc = ss_lm_get(&b, lm, &i, 1);
        if (rc) {
            CHECK_RC(rc, SS_ECORRUPT);
            CHECK_CONTAINS(ss_error_message(), name);
            bad++;
        }
    }
    ss_lm_free(lm);
    ss_close(s);
    return bad;
}

/* Store the index section of `from` in `to` under the same name. */
static void copy_section(const char *from, const char *to, const char *name) {
    ss_store *s;
    CHECK_OK(ss_open(&s, from, 0));
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, name));
    ss_writer *w;
    CHECK_OK(ss_sections_writer_open(&w, to));
    CHECK_OK(ss_writer_set_attr(w, name, SS_ATTR_BYTES, a.data, a.size));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_close(s);
}

int main(void) {
    /* two stores of the same documents: one gets the stored index */
    const char *path = ss_test_path("lm_stored.ss"), *copy = ss_test_path("lm_fresh.ss");
    uint64_t st = 5, st2 = 5;
    add_docs(path, 1, 400, &st);
    add_docs(copy, 1, 400, &st2);
    ss_lm_options o = SS_LM_OPTIONS_INIT;
    o.flags = SS_LM_APPEND_EOD | SS_LM_RESET_ATTENTION_MASK, o.eod = EOD, o.seq_length = 32;
    o.seed = 77, o.num_epochs = 3;
    ss_store *s0, *s1;
    int stored;
    ss_lm *fresh = open_lm(&s0, copy, &o, &stored);
    CHECK(!stored);
    CHECK_OK(ss_lm_save(path, "tokens", &o));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ss_lm *back = open_lm(&s1, path, &o, &stored);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(stored);
    printf("opened with a stored index in %.3f ms\n",
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    same_samples(fresh, back, 32);
    ss_lm_free(back);
    ss_close(s1);
    /* other options: built afresh */
    ss_lm_options other = o;
    other.seed = 78;
    ss_lm *lm = open_lm(&s1, path, &other, &stored);
    CHECK(!stored);
    ss_lm_free(lm);
    ss_close(s1);
    /* the name, as ss_lm_index_name() gives it */
    char name[SS_LM_INDEX_NAME_MAX];
    CHECK_OK(ss_lm_index_name(name, sizeof name, "tokens", &o));
    CHECK(!strcmp(name, "ss.lm.tokens.L32.seed77.samples0.epochs3.append1"));
    CHECK_OK(ss_open(&s1, path, 0));
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s1, name));
    ss_close(s1);
    char tiny[8];
    CHECK_RC(ss_lm_index_name(tiny, sizeof tiny, "tokens", &o), SS_EBUFS);
    CHECK(tiny[0] == 0);
    CHECK_RC(ss_lm_index_name(name, sizeof name, NULL, &o), SS_EINVAL);
    char longname[300];
    memset(longname, 'f', 250);
    longname[250] = 0;
    CHECK_RC(ss_lm_index_name(name, sizeof name, longname, &o), SS_EINVAL);
    ss_lm_options packed_name = o;
    packed_name.layout = SS_LM_PACKED;
    CHECK_RC(ss_lm_index_name(name, sizeof name, "tokens", &packed_name), SS_EINVAL);
    CHECK_OK(ss_lm_index_name(name, sizeof name, "tokens", &o));
    /* a damaged header is refused at ss_lm_create, naming the section */
    void (*edits[3])(unsigned char *, size_t *) = {bad_size, bad_version, bad_header};
    const int codes[3] = {SS_ECORRUPT, SS_EVERSION, SS_ECORRUPT};
    for (int k = 0; k < 3; k++) {
        CHECK_OK(ss_lm_save(path, "tokens", &o));
        damage(path, name, edits[k]);
        CHECK_OK(ss_open(&s1, path, 0));
        lm = (ss_lm *)1;
        CHECK_RC(ss_lm_create(&lm, s1, 0, &o), codes[k]);
        CHECK(lm == NULL);
        CHECK_CONTAINS(ss_error_message(), name);
        ss_close(s1);
    }
    /* the older layout (no block checksums) is built afresh */
    CHECK_OK(ss_lm_save(path, "tokens", &o));
    damage(path, name, old_version);
    lm = open_lm(&s1, path, &o, &stored);
    CHECK(!stored);
    ss_lm_free(lm);
    ss_close(s1);
    /* a damaged block of the arrays: opened (nothing of it is read at
     * open), then refused by the reads that reach it, and only those */
    ss_lm_options ob = o; /* an index of several 64 KiB blocks */
    ob.num_epochs = 30;
    char name_b[SS_LM_INDEX_NAME_MAX];
    CHECK_OK(ss_lm_index_name(name_b, sizeof name_b, "tokens", &ob));
    void (*blocks[2])(unsigned char *, size_t *) = {bad_document, bad_shuffle};
    for (int k = 0; k < 2; k++) {
        CHECK_OK(ss_lm_save(path, "tokens", &ob));
        damage(path, name_b, blocks[k]);
        ss_lm *full;
        CHECK_OK(ss_open(&s1, path, 0));
        CHECK_OK(ss_lm_create(&full, s1, 0, &ob));
        ss_lm_info fi;
        CHECK_OK(ss_lm_get_info(&fi, full));
        CHECK(fi.stored && full->nblocks >= 3);
        ss_lm_free(full);
        ss_close(s1);
        uint64_t bad = failing_reads(path, &ob, name_b);
        CHECK(bad > 0 && (k == 1 || bad < fi.num_samples)); /* the shuffle is all in block 0 */
        CHECK_CONTAINS(ss_error_message(), "checksum");
    }
    /* values that lie under valid checksums: refused by the reads using them */
    void (*lies[3])(unsigned char *, size_t *) = {lying_document, lying_shuffle, lying_sample};
    for (int k = 0; k < 3; k++) {
        CHECK_OK(ss_lm_save(path, "tokens", &o));
        damage(path, name, lies[k]);
        uint64_t bad = failing_reads(path, &o, name);
        if (!bad) fprintf(stderr, "lie %d was served\n", k);
        CHECK(bad > 0);
    }
    /* other documents of the same count and tokens (two lengths traded):
     * the section names the lengths it was built for, so it is not used */
    {
        const char *other_path = ss_test_path("lm_other.ss");
        ss_field f[1] = {{"tokens", SS_U16, 1, 0, {0}}};
        ss_schema schema = {1, f};
        ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
        wo.flags = SS_WRITE_FORCE;
        ss_store *src;
        CHECK_OK(ss_open(&src, copy, 0));
        uint64_t n = ss_count(src);
        uint64_t swap_a = 0, swap_b = 1;
        while (ss_length(src, 0, swap_b) == ss_length(src, 0, swap_a)) swap_b++;
        ss_writer *w;
        CHECK_OK(ss_writer_create(&w, other_path, &schema, &wo));
        for (uint64_t d = 0; d < n; d++) {
            uint64_t from = d == swap_a ? swap_b : d == swap_b ? swap_a : d;
            ss_view v;
            CHECK_OK(ss_get(&v, src, 0, from));
            ss_value val[1] = {{v.data, v.length}};
            CHECK_OK(ss_writer_append(w, val));
        }
        CHECK_OK(ss_writer_finish(w));
        ss_writer_free(w);
        ss_close(src);
        CHECK_OK(ss_lm_save(path, "tokens", &o));
        copy_section(path, other_path, name);
        lm = open_lm(&s1, other_path, &o, &stored);
        CHECK(!stored);
        ss_lm_free(lm);
        ss_close(s1);
        /* and the same documents written again: used */
        const char *same = ss_test_path("lm_same.ss");
        uint64_t st3 = 5;
        add_docs(same, 1, 400, &st3);
        copy_section(path, same, name);
        lm = open_lm(&s1, same, &o, &stored);
        CHECK(stored);
        ss_lm_free(lm);
        ss_close(s1);
    }
    /* a grown store: the stored index is for other documents */
    CHECK_OK(ss_lm_save(path, "tokens", &o));
    ss_lm_free(fresh);
    ss_close(s0);
    add_docs(path, 0, 10, &st);
    lm = open_lm(&s1, path, &o, &stored);
    CHECK(!stored);
    ss_lm_free(lm);
    ss_close(s1);
    /* errors */
    ss_lm_options packed = o;
    packed.layout = SS_LM_PACKED;
    CHECK_RC(ss_lm_save(path, "tokens", &packed), SS_EINVAL);
    CHECK_RC(ss_lm_save(path, "nope", &o), SS_ENOTFOUND);
    CHECK_RC(ss_lm_save(NULL, "tokens", &o), SS_EINVAL);
    puts("ok");
    return 0;
}
