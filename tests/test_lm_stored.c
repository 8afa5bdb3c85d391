/* SPDX-License-Identifier: BSD-2-Clause */
/* test_lm_stored.c - the stored LM index (ss_lm_save, seqstore/lm.h): an
 * index read back gives every sample of a fresh build; other options or
 * grown stores build afresh; a damaged section (a document or sample out of
 * range, a wrong size, a later version) is refused with its name. */
#include "testutil.h"

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

static void bad_document(unsigned char *b, size_t *size) {
    memset(b + *size - 4, 0xff, 4); /* the last document index entry */
}
static void bad_sample(unsigned char *b, size_t *size) {
    (void)size;
    memset(b + 128, 0x7f, 8); /* the first sample of the shuffle */
}
static void bad_size(unsigned char *b, size_t *size) {
    (void)b;
    *size -= 4;
}
static void bad_version(unsigned char *b, size_t *size) {
    (void)size;
    b[8] = 2;
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
    /* damaged sections are refused, naming the section */
    char name[300];
    snprintf(name, sizeof name, "ss.lm.tokens.L32.seed77.samples0.epochs3.append1");
    void (*edits[4])(unsigned char *, size_t *) = {bad_document, bad_sample, bad_size, bad_version};
    const int codes[4] = {SS_ECORRUPT, SS_ECORRUPT, SS_ECORRUPT, SS_EVERSION};
    for (int k = 0; k < 4; k++) {
        CHECK_OK(ss_lm_save(path, "tokens", &o));
        damage(path, name, edits[k]);
        CHECK_OK(ss_open(&s1, path, 0));
        lm = (ss_lm *)1;
        CHECK_RC(ss_lm_create(&lm, s1, 0, &o), codes[k]);
        CHECK(lm == NULL);
        CHECK_CONTAINS(ss_error_message(), name);
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
