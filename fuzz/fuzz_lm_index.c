/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_lm_index.c - libFuzzer target for the stored LM sample index
 * (sdk/lm_stored.c, spec/SDK_SECTIONS.md): a section written by
 * ss_lm_save() is read back from a store file, so it is outside input.
 * Each input is checked as a whole section, and also XORed into the arrays
 * of the valid section of a small index, twice: as it is (the blocks'
 * checksums then fail when a read reaches them) and sealed again (block
 * and header checksums recomputed, as a section written with values that
 * lie would be), so that the search reaches the checks reads make of each
 * value. An accepted section must then serve every sample without reading
 * out of bounds: ss_lm_get() answers 0 or SS_ECORRUPT, never a crash, and
 * so do ss_lm_sample_position() and ss_lm_document(). */
#include "lm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { NDOCS = 6, L = 8 };

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

/* The section ss_lm_save() writes for g_lm (its own writer), bound to the
 * documents by their digest (no lengths section named). */
static void make_valid(void) {
    g_valid_size = ss__lm_stored_size(g_lm);
    g_valid = calloc(1, (g_valid_size + 7) / 8 * 8);
    if (!g_valid) abort();
    ss__lm_stored_write((unsigned char *)g_valid, g_lm, 0);
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

/* Back to the index as built (the section's state freed). */
static void restore(void) {
    free((void *)g_lm->verdict);
    free(g_lm->stored_name);
    g_lm->verdict = NULL, g_lm->stored_name = NULL;
    g_lm->doc = g_doc, g_lm->sample = g_sample, g_lm->shuffle = g_shuffle;
    g_lm->split = g_split, g_lm->borrowed = 0;
}

static void one(const uint64_t *section, size_t size) {
    int rc = ss__lm_stored_use(g_lm, "fuzz", section, size, 0);
    if (rc == 0) {
        int64_t *rows = malloc(2 * g_lm->nsamples * L * sizeof *rows);
        if (!rows) abort();
        rc = serve_all(rows);
        if (rc != 0 && rc != SS_ECORRUPT) abort();
        free(rows);
        for (uint64_t i = 0; i < g_lm->nsamples; i++) {
            uint64_t first, off;
            rc = ss_lm_sample_position(&first, &off, NULL, g_lm, i);
            if (rc != 0 && rc != SS_ECORRUPT) abort();
            if (!rc && first >= g_lm->epochs * g_lm->ndocs) abort();
        }
        for (uint64_t k = 0; k < g_lm->epochs * g_lm->ndocs; k++) {
            uint64_t d = ss_lm_document(g_lm, k);
            if (d >= g_lm->ndocs && d != UINT64_MAX) abort();
        }
    } else if (rc != SS_ENOTFOUND && rc != SS_ECORRUPT && rc != SS_EVERSION) {
        abort();
    }
    restore();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_lm) {
        init();
        /* the valid section is accepted and serves the same rows */
        int64_t *own = malloc(2 * g_lm->nsamples * L * sizeof *own);
        int64_t *back = malloc(2 * g_lm->nsamples * L * sizeof *back);
        if (!own || !back || serve_all(own)) abort();
        if (ss__lm_stored_use(g_lm, "fuzz", g_valid, g_valid_size, 0) || serve_all(back) ||
            memcmp(own, back, 2 * g_lm->nsamples * L * sizeof *own) != 0)
            abort();
        restore();
        free(own);
        free(back);
    }
    size_t cap = size > g_valid_size ? size : g_valid_size;
    uint64_t *copy = malloc((cap + 7) / 8 * 8);
    if (!copy) abort();
    memcpy(copy, data, size);
    one(copy, size);
    /* XORed into the valid section's arrays (behind its header and block
     * table), as it is and sealed again */
    size_t head = g_valid_size - (size_t)(8 * g_lm->nsamples + 16 * (g_lm->nsamples + 1) +
                                          4 * g_lm->epochs * g_lm->ndocs);
    unsigned char *c = (unsigned char *)copy;
    for (int sealed = 0; sealed < 2; sealed++) {
        memcpy(copy, g_valid, g_valid_size);
        for (size_t k = 0; k < size && k < g_valid_size - head; k++)
            c[head + k % (g_valid_size - head)] ^= data[k];
        if (sealed) ss__lm_stored_seal(c, g_valid_size);
        one(copy, g_valid_size);
    }
    free(copy);
    return 0;
}
