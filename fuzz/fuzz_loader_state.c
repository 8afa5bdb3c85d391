/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_loader_state.c - libFuzzer target for ss_loader_state_load(): a saved
 * loader state is outside input (a checkpoint file). Each input is loaded as
 * it is, and also written over the position words (epoch, batch, ranks,
 * workers, plan) of a valid state, so that the search reaches the elastic
 * resume behind the fingerprints. A load either fails with SS_EINVAL and
 * leaves the loader where it was, or puts it within its epoch, whose
 * remaining batches then all come out. */
#include "seqstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes of a saved loader state in this version (ss_loader_state_size()). */
#define LOADER_STATE_BYTES 128

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { NEX = 64, NLOADERS = 4 };

static ss_store *g_store;
static ss_loader *g_l[NLOADERS];
static unsigned char g_state[LOADER_STATE_BYTES];

static void make_store(void) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/fuzz_loader_state.%d.ss", (int)getpid());
    ss_field f = {"tok", SS_U16, 1, 0, {0}};
    ss_schema schema = {1, &f};
    ss_writer *w;
    if (ss_writer_create(&w, path, &schema, NULL)) abort();
    uint16_t tok[16] = {0};
    for (uint64_t i = 0; i < NEX; i++) {
        ss_value v = {tok, 1 + i % 13};
        if (ss_writer_append(w, &v)) abort();
    }
    if (ss_writer_finish(w)) abort();
    ss_writer_free(w);
    if (ss_open(&g_store, path, 0)) abort();
    unlink(path); /* the map stays */
}

/* world x workers (worker 0, rank `rank`), fixed batch (B = 16) or tokens */
static ss_loader *open_loader(uint32_t world, uint32_t rank, uint32_t workers, int tokens) {
    ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
    so.kind = SS_SAMPLE_SHUFFLE;
    so.seed = 5;
    so.world_size = world;
    so.rank = rank;
    so.num_workers = workers;
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    if (tokens)
        bo.max_tokens = 40;
    else
        bo.batch_size = 16 / world, bo.remainder = SS_REMAINDER_PAD;
    ss_collate_field cf = SS_COLLATE_FIELD_INIT;
    cf.layout = SS_LAYOUT_PACKED;
    ss_loader_options lo = SS_LOADER_OPTIONS_INIT;
    lo.sampler = &so;
    lo.batch = &bo;
    lo.fields = &cf;
    lo.nfields = 1;
    ss_loader *l;
    if (ss_loader_open(&l, g_store, &lo)) abort();
    return l;
}

static void setup(void) {
    make_store();
    ss_loader *saver = open_loader(2, 1, 1, 0);
    const ss_loader_batch *b;
    for (int k = 0; k < 2; k++)
        if (ss_loader_next(&b, saver)) abort();
    if (ss_loader_state_save(g_state, sizeof g_state, NULL, saver)) abort();
    ss_loader_free(saver);
    g_l[0] = open_loader(4, 3, 1, 0);
    g_l[1] = open_loader(1, 0, 3, 0);
    g_l[2] = open_loader(2, 1, 1, 0);
    g_l[3] = open_loader(3, 2, 1, 1);
}

static void try_load(ss_loader *l, const unsigned char *st, size_t len) {
    if (ss_loader_set_epoch(l, 0)) abort();
    int rc = ss_loader_state_load(l, st, len);
    if (rc) {
        if (rc != SS_EINVAL || ss_loader_position(l) != 0 || ss_loader_epoch(l) != 0) abort();
        return;
    }
    uint64_t n = ss_loader_count(l), pos = ss_loader_position(l);
    if (pos > n) abort();
    const ss_loader_batch *b;
    for (uint64_t k = pos; k < n; k++)
        if (ss_loader_next(&b, l)) abort();
    if (ss_loader_next(&b, l) != SS_ITEROVER) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_store) setup();
    for (int k = 0; k < NLOADERS; k++) try_load(g_l[k], data, size);
    /* over a valid state: epoch (kept small: an epoch's plan is computed),
     * batch, ranks, workers and plan */
    unsigned char st[LOADER_STATE_BYTES];
    memcpy(st, g_state, sizeof st);
    static const unsigned at[] = {16, 24, 88, 96, 120};
    size_t used = 0;
    for (size_t i = 0; i < sizeof at / sizeof at[0] && used < size; i++) {
        size_t n = size - used < 8 ? size - used : 8;
        memcpy(st + at[i], data + used, n);
        used += n;
    }
    st[17] = st[18] = st[19] = st[20] = st[21] = st[22] = st[23] = 0;
    for (int k = 0; k < NLOADERS; k++) try_load(g_l[k], st, sizeof st);
    return 0;
}
