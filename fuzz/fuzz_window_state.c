/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_window_state.c - libFuzzer target for ss_window_reader_state_load():
 * a saved window reader position is outside input (a checkpoint file). Each
 * input is loaded as it is, and also XORed over valid positions (one saved
 * between batches, one carrying the batch planned ahead by a prefetching
 * reader), so that the search reaches the lanes, the cursors and the planned
 * batch behind the fingerprint. A load either fails with SS_EINVAL, or the
 * reader then serves batches whose every window lies inside its sequence,
 * up to the end of the epoch. */
#include "seqstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { NSEQ = 9, W = 4, B = 3, H = 8, STEPS = 200 };

static ss_store *g_store;
static uint64_t g_len[NSEQ];
static ss_window_reader *g_r[2];
static uint8_t *g_blob[2];
static size_t g_size[2];

static void make_store(void) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/fuzz_window_state.%d.ss", (int)getpid());
    ss_field f = {"x", SS_I16, 1, 0, {0}};
    ss_schema schema = {1, &f};
    ss_writer *w;
    if (ss_writer_create(&w, path, &schema, NULL)) abort();
    int16_t x[64] = {0};
    for (uint64_t i = 0; i < NSEQ; i++) {
        g_len[i] = 2 + (i * 7) % 23;
        ss_value v = {x, g_len[i]};
        if (ss_writer_append(w, &v)) abort();
    }
    if (ss_writer_finish(w)) abort();
    ss_writer_free(w);
    if (ss_open(&g_store, path, 0)) abort();
    unlink(path); /* the map stays */
}

static ss_window_reader *open_reader(uint32_t prefetch) {
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    o.window = W;
    o.overlap = 1;
    o.lanes = B;
    o.state_size = H;
    o.mode = SS_WINDOW_SEQUENTIAL_RANDOM_START;
    o.shuffle = 1;
    o.seed = 3;
    o.flags = SS_WINDOW_PAD_TAIL;
    o.prefetch = prefetch;
    ss_window_reader *r;
    if (ss_window_reader_open(&r, g_store, &o)) abort();
    return r;
}

/* `n` batches, registering zero states; every window inside its sequence. */
static void run(ss_window_reader *r, int n) {
    static const uint8_t zeros[B * H];
    for (int k = 0; k < n; k++) {
        const ss_window_batch *b;
        int rc = ss_window_reader_next(&b, r);
        if (rc) return; /* the end of the epoch, or a refusal */
        for (uint32_t i = 0; i < b->size; i++) {
            if (!b->mask[i]) continue;
            uint64_t q = b->example[i];
            if (q >= NSEQ || b->start[i] > g_len[q] || b->length[i] > g_len[q] - b->start[i])
                abort();
        }
        if (ss_window_reader_register(r, b, zeros)) abort();
    }
}

static void setup(void) {
    make_store();
    for (uint32_t p = 0; p < 2; p++) {
        ss_window_reader *saver = open_reader(p);
        run(saver, 3);
        g_size[p] = ss_window_reader_state_size(saver, SS_WINDOW_SAVE_STATES);
        g_blob[p] = malloc(g_size[p]);
        if (!g_blob[p]) abort();
        if (ss_window_reader_state_save(g_blob[p], g_size[p], NULL, saver,
                                        SS_WINDOW_SAVE_STATES))
            abort();
        ss_window_reader_free(saver);
        g_r[p] = open_reader(p);
    }
}

static void try_load(ss_window_reader *r, const uint8_t *buf, size_t size) {
    int rc = ss_window_reader_state_load(r, buf, size);
    if (rc == 0)
        run(r, STEPS);
    else if (rc != SS_EINVAL)
        abort();
    if (ss_window_reader_set_epoch(r, 0)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_store) setup();
    for (int p = 0; p < 2; p++) try_load(g_r[p], data, size);
    for (int p = 0; p < 2; p++) {
        uint8_t *buf = malloc(g_size[p]);
        if (!buf) abort();
        memcpy(buf, g_blob[p], g_size[p]);
        for (size_t i = 0; i < size && i < g_size[p]; i++) buf[i] ^= data[i];
        try_load(g_r[1 - p], buf, g_size[p]); /* with and without prefetch */
        free(buf);
    }
    return 0;
}
