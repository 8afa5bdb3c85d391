/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_lm_index.c - libFuzzer target for the stored LM sample index
 * (sdk/lm_stored.c, spec/SDK_SECTIONS.md): a section written by
 * ss_lm_save() is read back from a store file, so it is outside input.
 * Each input is checked as a whole section, and also XORed into the valid
 * section of a small index (header and payload of the right size), so that
 * the search reaches the checks behind the header. An accepted section must
 * then serve every sample without reading out of bounds: ss_lm_get()
 * answers 0 or SS_ECORRUPT, never a crash. */
#include "lm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { NDOCS = 6, L = 8, HEADER = 128 };

static ss_store *g_store;
static ss_lm *g_lm;
static uint64_t *g_valid; /* the index's own section, 8-byte aligned */
static size_t g_valid_size;
static uint32_t *g_doc;   /* the index's own draws, put back after each input */
static int64_t *g_sample, *g_shuffle;
static uint64_t g_split;

static void make_store(void) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/fuzz_lm_index.%d.ss", (int)getpid());
    ss_field f = {"tok", SS_U16, 1, 0, {0}};
    ss_schema schema = {1, &f};
    ss_writer *w;
    if (ss_writer_create(&w, path, &schema, NULL)) abort();
    uint16_t tok[16];
    for (int i = 0; i < 16; i++) tok[i] = (uint16_t)(2 + i);
    for (uint64_t i = 0; i < NDOCS; i++) {
        ss_value v = {tok, 3 + (i * 5) % 11};
        if (ss_writer_append(w, &v)) abort();
    }
    if (ss_writer_finish(w)) abort();
    ss_writer_free(w);
    if (ss_open(&g_store, path, 0)) abort();
    unlink(path); /* the map stays */
}

static void put_le(unsigned char *q, uint64_t v, int bytes) {
    for (int b = 0; b < bytes; b++) q[b] = (unsigned char)(v >> (8 * b));
}

/* The section ss_lm_save() writes for g_lm (same layout, read back by the
 * check it feeds, so a change of one shows here). */
static void make_valid(void) {
    ss_lm *lm = g_lm;
    g_valid_size = HEADER + 8 * lm->nsamples + 16 * (lm->nsamples + 1) + 4 * lm->epochs * lm->ndocs;
    g_valid = calloc(1, (g_valid_size + 7) / 8 * 8);
    if (!g_valid) abort();
    unsigned char *q = (unsigned char *)g_valid;
    uint64_t h[] = {0x005844494d4c5353ull, 1, lm->o.layout, lm->o.seq_length, lm->o.seed,
                    lm->o.num_samples, lm->o.num_epochs, (lm->o.flags & SS_LM_APPEND_EOD) != 0,
                    lm->ndocs, lm->tokens_per_epoch, lm->epochs, lm->nsamples, lm->sans_final,
                    (uint64_t)lm->separate, lm->split};
    for (size_t k = 0; k < sizeof h / sizeof h[0]; k++) put_le(q + 8 * k, h[k], 8);
    q += HEADER;
    for (uint64_t k = 0; k < lm->nsamples; k++, q += 8) put_le(q, (uint64_t)lm->shuffle[k], 8);
    for (uint64_t k = 0; k < 2 * (lm->nsamples + 1); k++, q += 8) put_le(q, (uint64_t)lm->sample[k], 8);
    for (uint64_t k = 0; k < lm->epochs * lm->ndocs; k++, q += 4) put_le(q, lm->doc[k], 4);
}

static void init(void) {
    make_store();
    ss_lm_options o = SS_LM_OPTIONS_INIT;
    o.seq_length = L, o.seed = 3, o.num_epochs = 3, o.eod = 1, o.flags = SS_LM_APPEND_EOD;
    if (ss__lm_create(&g_lm, g_store, 0, &o, 0)) abort();
    g_doc = g_lm->doc, g_sample = g_lm->sample, g_shuffle = g_lm->shuffle, g_split = g_lm->split;
    make_valid();
}

/* Every sample of g_lm; rc 0 or SS_ECORRUPT (a sample that is not L + 1 tokens). */
static int serve_all(int64_t *rows) {
    uint64_t n = g_lm->nsamples, *idx = malloc(n * sizeof *idx);
    if (!idx) abort();
    for (uint64_t k = 0; k < n; k++) idx[k] = k;
    ss_lm_batch b = {rows, rows + n * L, NULL, NULL, NULL, NULL, NULL};
    int rc = ss_lm_get(&b, g_lm, idx, n);
    free(idx);
    return rc;
}

static void one(const uint64_t *section, size_t size) {
    int rc = ss__lm_stored_use(g_lm, "fuzz", section, size);
    if (rc == 0) {
        int64_t *rows = malloc(2 * g_lm->nsamples * L * sizeof *rows);
        if (!rows) abort();
        rc = serve_all(rows);
        if (rc != 0 && rc != SS_ECORRUPT) abort();
        free(rows);
    } else if (rc != SS_ENOTFOUND && rc != SS_ECORRUPT && rc != SS_EVERSION) {
        abort();
    }
    g_lm->doc = g_doc, g_lm->sample = g_sample, g_lm->shuffle = g_shuffle;
    g_lm->split = g_split, g_lm->borrowed = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_lm) {
        init();
        /* the valid section is accepted and serves the same rows */
        int64_t *own = malloc(2 * g_lm->nsamples * L * sizeof *own);
        int64_t *back = malloc(2 * g_lm->nsamples * L * sizeof *back);
        if (!own || !back || serve_all(own)) abort();
        if (ss__lm_stored_use(g_lm, "fuzz", g_valid, g_valid_size) || serve_all(back) ||
            memcmp(own, back, 2 * g_lm->nsamples * L * sizeof *own) != 0)
            abort();
        g_lm->doc = g_doc, g_lm->sample = g_sample, g_lm->shuffle = g_shuffle, g_lm->borrowed = 0;
        free(own);
        free(back);
    }
    size_t cap = size > g_valid_size ? size : g_valid_size;
    uint64_t *copy = malloc((cap + 7) / 8 * 8);
    if (!copy) abort();
    memcpy(copy, data, size);
    one(copy, size);
    /* XORed into the valid section (header kept unless the input reaches it) */
    memcpy(copy, g_valid, g_valid_size);
    unsigned char *c = (unsigned char *)copy;
    for (size_t k = 0; k < size && k < g_valid_size; k++) c[(k + HEADER) % g_valid_size] ^= data[k];
    one(copy, g_valid_size);
    free(copy);
    return 0;
}
