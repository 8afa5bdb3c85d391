/* SPDX-License-Identifier: BSD-2-Clause */
/* ordered.c - decode inputs on several threads, emit them in input order on
 * the calling thread (ordered.h).
 *
 * Inputs are handed out in order; input i goes to slot i mod nslots, and is
 * handed out only once input i - nslots has been emitted. The emitter waits
 * for input i, which has been handed out (i < emitted + nslots), so the run
 * cannot deadlock. Before, each thread decoded into its own slot and emitted
 * under `omp ordered`: a thread whose input was decoded waited for the emit
 * of the one before it, and commits (every few MB) stalled the decoders. */
#include "ordered.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct ordered_run {
    pthread_mutex_t mu;
    pthread_cond_t slot_free; /* `emitted` grew, or `stop` */
    pthread_cond_t decoded;   /* a slot became ready */
    void *ctx;
    char *slots;
    size_t slot_size;
    uint64_t nslots, n;
    ss_conv_decode_fn decode;
    uint64_t next;        /* the next input to hand out */
    uint64_t emitted;     /* inputs [0, emitted) are emitted: their slots are free */
    int stop;             /* an emit failed: hand out nothing more */
    unsigned char *ready; /* per slot: its input is decoded, not yet emitted */
} ordered_run;

int ss__conv_ordered_slots(int nthreads) {
    return (nthreads < 1 ? 1 : nthreads) + 1;
}

static void *slot_of(const ordered_run *r, uint64_t i) {
    return r->slots + (size_t)(i % r->nslots) * r->slot_size;
}

/* A decoding thread: take the next input whose slot is free, decode it. */
static void *decode_loop(void *arg) {
    ordered_run *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->stop && r->next < r->n && r->next >= r->emitted + r->nslots)
            pthread_cond_wait(&r->slot_free, &r->mu);
        if (r->stop || r->next >= r->n) break;
        uint64_t i = r->next++;
        pthread_mutex_unlock(&r->mu);
        r->decode(r->ctx, slot_of(r, i), i);
        pthread_mutex_lock(&r->mu);
        r->ready[i % r->nslots] = 1;
        pthread_cond_signal(&r->decoded); /* only the emitter waits on it */
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* The calling thread: emit the inputs in order as they become ready. */
static int emit_loop(ordered_run *r, void *ctx, ss_conv_emit_fn emit) {
    int fatal = 0;
    for (uint64_t i = 0; i < r->n && !fatal; i++) {
        pthread_mutex_lock(&r->mu);
        while (!r->ready[i % r->nslots]) pthread_cond_wait(&r->decoded, &r->mu);
        r->ready[i % r->nslots] = 0;
        pthread_mutex_unlock(&r->mu);
        fatal = emit(ctx, slot_of(r, i), i) != 0;
        pthread_mutex_lock(&r->mu);
        if (fatal)
            r->stop = 1;
        else
            r->emitted = i + 1;
        pthread_cond_broadcast(&r->slot_free);
        pthread_mutex_unlock(&r->mu);
    }
    return fatal;
}

int ss__conv_serial_ordered(void *ctx, void *slot, uint64_t n, ss_conv_decode_fn decode,
                            ss_conv_emit_fn emit) {
    for (uint64_t i = 0; i < n; i++) {
        decode(ctx, slot, i);
        if (emit(ctx, slot, i)) return 1;
    }
    return 0;
}

int ss__conv_parallel_ordered(void *ctx, void *slots, size_t slot_size, int nthreads, uint64_t n,
                              ss_conv_decode_fn decode, ss_conv_emit_fn emit) {
    if (nthreads < 1) nthreads = 1;
    ordered_run r = {.ctx = ctx,
                     .slots = slots,
                     .slot_size = slot_size,
                     .nslots = (uint64_t)ss__conv_ordered_slots(nthreads),
                     .n = n,
                     .decode = decode};
    pthread_t *tid = NULL;
    int started = 0, fatal;
    /* nothing to overlap, or no memory for the flags: one thread does all */
    if (n <= 1 || !(r.ready = calloc(r.nslots, 1)) ||
        !(tid = calloc((size_t)nthreads, sizeof *tid))) {
        free(r.ready);
        return ss__conv_serial_ordered(ctx, slots, n, decode, emit);
    }
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.slot_free, NULL);
    pthread_cond_init(&r.decoded, NULL);
    /* threads of our own, not OpenMP's: a pool thread spins for a while
     * after its region ends, on a core the appends and the flush need */
    while (started < nthreads && pthread_create(&tid[started], NULL, decode_loop, &r) == 0)
        started++;
    if (started) {
        fatal = emit_loop(&r, ctx, emit);
    } else { /* no thread could start: decode and emit in turn */
        fatal = ss__conv_serial_ordered(ctx, slots, n, decode, emit);
    }
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    pthread_cond_destroy(&r.decoded);
    pthread_cond_destroy(&r.slot_free);
    pthread_mutex_destroy(&r.mu);
    free(r.ready);
    free(tid);
    return fatal;
}
