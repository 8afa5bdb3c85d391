/* SPDX-License-Identifier: BSD-2-Clause */
/* window_prefetch.c - the batch a window reader plans ahead of its caller.
 *
 * In strict mode (max_pending <= 1) batch k+1 depends on batch k only
 * through its registration: which sequences are unblocked (known as soon as
 * k is planned) and their hidden states (known only when the caller
 * registers them). So with ss_window_options.prefetch the reader's thread
 * plans k+1 and collates its data (reads, conversion, transforms) while the
 * caller works on k, and ss_window_reader_next() only gathers the states.
 * Without prefetch the same planned slot is filled inside the call. Every
 * call that reads or changes the bookkeeping waits for the thread first, so
 * the thread never runs beside them. */
#include "window.h"

#include <stdio.h>

static int slot_free(const ss_window_reader *r, const ss__wslot *sl) {
    return !sl->pending && sl != r->prep;
}

/* Plan the next batch into a slot neither out nor planned, and collate it:
 * the one handed out last when it is free again (its lines are in cache). */
void ss__window_prepare(ss_window_reader *r) {
    ss__wslot *sl = r->last && slot_free(r, r->last) ? r->last : NULL;
    for (uint32_t k = 0; k < r->nbuf && !sl; k++)
        if (slot_free(r, &r->slots[k])) sl = &r->slots[k];
    r->prep = sl;
    r->prep_collated = 1;
    r->prep_rc = 0;
    r->prep_msg[0] = 0;
    r->prep_planned = 0;
    r->prep_rows = 0;
    /* next() leaves a slot free (with prefetch there is one more than may be
     * out); never otherwise, but say so rather than write past the slots */
    int kind = sl ? ss__window_plan(r, sl)
                  : ss__fail(SS_ESTATE, "window reader: no free batch buffer");
    if (kind < 0) snprintf(r->prep_msg, sizeof r->prep_msg, "%s", ss_error_message());
    if (kind == SS__PREP_BATCH) ss__window_prep_collate(r);
    r->prep_kind = kind;
}

void ss__window_prep_collate(ss_window_reader *r) {
    ss__wslot *sl = r->prep;
    /* a dataset under a URL: the batch's shards are downloaded at once, not
     * one row after another (a hint: a failure is the read's) */
    if (ss__store_remote(r->store)) (void)ss_prefetch(r->store, sl->example, sl->b.size);
    r->prep_rc = ss__window_collate(r, sl);
    if (!r->prep_rc) r->prep_rc = ss__window_xf_batch(r, sl);
    if (r->prep_rc) snprintf(r->prep_msg, sizeof r->prep_msg, "%s", ss_error_message());
    r->prep_collated = 1;
}

void ss__window_prep_drop(ss_window_reader *r) {
    r->prep = NULL;
    r->prep_kind = SS__PREP_NONE;
    r->prep_planned = 0;
    r->prep_rows = 0;
}

/* r->job: IDLE, REQUESTED (not started: whoever comes first runs it) or
 * RUNNING (in the thread). */
enum { IDLE = 0, REQUESTED = 1, RUNNING = 2 };

static void *run(void *arg) {
    ss_window_reader *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (r->job != REQUESTED && !r->stop) pthread_cond_wait(&r->cv, &r->mu);
        if (r->stop) break;
        r->job = RUNNING;
        pthread_mutex_unlock(&r->mu);
        ss__window_prepare(r);
        pthread_mutex_lock(&r->mu);
        r->job = IDLE;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

int ss__window_prefetch_start(ss_window_reader *r) {
    if (pthread_mutex_init(&r->mu, NULL))
        return ss__fail(SS_ENOMEM, "window reader: cannot make the prefetch lock");
    if (pthread_cond_init(&r->cv, NULL)) {
        pthread_mutex_destroy(&r->mu);
        return ss__fail(SS_ENOMEM, "window reader: cannot make the prefetch condition");
    }
    if (pthread_create(&r->thread, NULL, run, r)) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        return ss__fail(SS_ENOMEM, "window reader: cannot start the prefetch thread");
    }
    r->thread_on = 1;
    return 0;
}

void ss__window_prefetch_stop(ss_window_reader *r) {
    if (!r->thread_on) return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    r->thread_on = 0;
}

/* A plan the thread has not started is called off: the next batch is then
 * planned when it is asked for, as without prefetch, into the buffer just
 * released. On a loaded machine the thread may not get a core before the
 * caller needs the batch; the caller must never wait longer than doing the
 * work itself, nor pay for a second buffer the thread did not use. Const
 * callers (info, seq_state) wait too: the lock and the planned batch are
 * not part of the reader's observable state. */
void ss__window_prefetch_wait(const ss_window_reader *cr) {
    ss_window_reader *r = (ss_window_reader *)cr;
    if (!r->thread_on) return;
    pthread_mutex_lock(&r->mu);
    if (r->job == REQUESTED) r->job = IDLE;
    while (r->job == RUNNING) pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
}

void ss__window_prefetch_request(ss_window_reader *r) {
    if (!r->thread_on || r->prep_kind != SS__PREP_NONE) return;
    pthread_mutex_lock(&r->mu);
    r->job = REQUESTED;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}
