/* SPDX-License-Identifier: BSD-2-Clause */
/* text_pipeline.c - the text engine: blocks tokenized in parallel, appended
 * in order (see text.h). */
#include "internal.h"
#include "internal.h"
#include "memlimit.h"
#include "spm_text.h"
#include "text.h"
#include "text_impl.h"
#include "utf8.h"
#include "words.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* -------------------------------------------------------------- pipeline */

enum { SLOT_FREE, SLOT_BUSY, SLOT_DONE };

typedef struct tx_pool {
    const tx_job *j;
    tx_slot *slots;
    size_t nslots;
    size_t *slot_block;
    int *slot_state;
    size_t next;
    int stop;
    pthread_mutex_t mu;
    pthread_cond_t done, freed;
} tx_pool;

static void *worker(void *arg) {
    tx_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stop && p->next < p->j->nblocks) {
        size_t i = p->next, k = i % p->nslots;
        if (p->slot_state[k] != SLOT_FREE) {
            pthread_cond_wait(&p->freed, &p->mu);
            continue;
        }
        p->next++;
        p->slot_state[k] = SLOT_BUSY;
        p->slot_block[k] = i;
        pthread_mutex_unlock(&p->mu);
        ss__tx_process_block(p->j, &p->j->blocks[i], &p->slots[k]);
        pthread_mutex_lock(&p->mu);
        p->slot_state[k] = SLOT_DONE;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

typedef struct tx_cursor {
    uint64_t skip;          /* --resume: examples still to skip */
    uint64_t base_line;     /* lines of the current input before this block */
    uint32_t input;         /* input of the previous block */
    uint64_t *lens, *lines; /* consume_many(): a block's lengths and lines */
    size_t cap;             /* entries of each */
    uint64_t skipped;       /* blank examples --skip-empty dropped */
} tx_cursor;

/* The items of a block appended at once (ss__conv_append_many()) when they
 * are all examples of one side whose tokens follow one another in the slot
 * and none is to be skipped: the usual block of a text converted to ids.
 * -1 when the block is not such (consume() appends one by one), else 0
 * or 1 (error printed). */
static int consume_many(ss_conv *c, const tx_job *j, const tx_block *b, const tx_slot *s,
                        tx_cursor *cur) {
    if (j->nsides != 1 || cur->skip || !s->nitems) return -1;
    if (s->nitems > cur->cap) {
        uint64_t *l = realloc(cur->lens, s->nitems * sizeof *l);
        if (l) cur->lens = l;
        uint64_t *n = l ? realloc(cur->lines, s->nitems * sizeof *n) : NULL;
        if (!n) return ss__conv_error(c, "out of memory");
        cur->lines = n;
        cur->cap = s->nitems;
    }
    uint64_t next = s->items[0].off[0];
    for (size_t k = 0; k < s->nitems; k++) {
        const tx_item *it = &s->items[k];
        if (it->bad[0] || it->zero_copy[0] || it->off[0] != next) return -1;
        next += it->len[0];
        cur->lens[k] = it->len[0];
        cur->lines[k] = cur->base_line + it->line;
    }
    const void *data[1] = {s->tok[0] + s->items[0].off[0] * j->tok[0].esize};
    const uint64_t *lengths[1] = {cur->lens};
    return ss__conv_append_many(c, s->nitems, data, lengths, ss__tx_side_input(j, b, 0)->source,
                                cur->lines,
                                b->start[0]);
}

/* Append the items of one processed block, in order. */
static int consume(ss_conv *c, const tx_job *j, const tx_block *b, const tx_slot *s,
                   tx_cursor *cur) {
    if (s->oom) return ss__conv_error(c, "out of memory");
    if (j->nsides == 1 && b->input != cur->input) {
        cur->input = b->input;
        cur->base_line = 0;
    }
    cur->skipped += s->nskipped;
    int many = consume_many(c, j, b, s, cur); /* -1: one by one below */
    if (many > 0) return 1;
    ss_value values[2];
    for (size_t n = 0; n < s->nitems && many < 0; n++) {
        const tx_item *it = &s->items[n];
        uint64_t line = cur->base_line + it->line;
        if (it->bad[0] || it->bad[1]) {
            for (int sd = 0; sd < j->nsides; sd++)
                if (it->bad[sd] && ss__conv_bad(c, ss__tx_side_input(j, b, sd)->path, line, "%s",
                                                s->msgs + it->bad[sd] - 1))
                    return 1;
            continue;
        }
        if (cur->skip) {
            cur->skip--;
            continue;
        }
        for (int sd = 0; sd < j->nsides; sd++) {
            values[sd].length = it->len[sd];
            values[sd].data = it->zero_copy[sd]
                                  ? (const void *)(ss__tx_side_input(j, b, sd)->data + it->off[sd])
                                  : (const void *)(s->tok[sd] + it->off[sd] * j->tok[sd].esize);
        }
        if (ss__conv_append_at(c, values, ss__tx_side_input(j, b, 0)->source, line,
                               b->start[0])) return 1;
    }
    cur->base_line += s->nlines;
    uint64_t bytes = 0;
    for (int sd = 0; sd < j->nsides; sd++) bytes += b->end[sd] - b->start[sd];
    ss__conv_progress(c, bytes);
    return 0;
}

static int run_serial(ss_conv *c, const tx_job *j, tx_cursor *cur) {
    tx_slot s;
    memset(&s, 0, sizeof s);
    int rc = 0;
    for (size_t i = 0; i < j->nblocks && !rc; i++) {
        ss__tx_process_block(j, &j->blocks[i], &s);
        rc = consume(c, j, &j->blocks[i], &s, cur);
    }
    ss__tx_slot_free(&s);
    return rc;
}

static int run_threads(ss_conv *c, const tx_job *j, int threads, tx_cursor *cur) {
    tx_pool p;
    memset(&p, 0, sizeof p);
    p.j = j;
    p.nslots = 2 * (size_t)threads;
    p.slots = calloc(p.nslots, sizeof *p.slots);
    p.slot_block = calloc(p.nslots, sizeof *p.slot_block);
    p.slot_state = calloc(p.nslots, sizeof *p.slot_state);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    if (!p.slots || !p.slot_block || !p.slot_state || !tid) {
        free(p.slots);
        free(p.slot_block);
        free(p.slot_state);
        free(tid);
        return ss__conv_error(c, "out of memory");
    }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.done, NULL);
    pthread_cond_init(&p.freed, NULL);
    int started = 0, rc = 0;
    for (; started < threads; started++)
        if (pthread_create(&tid[started], NULL, worker, &p)) break;
    if (!started) rc = ss__conv_error(c, "cannot start threads");
    for (size_t i = 0; i < j->nblocks && !rc; i++) {
        size_t k = i % p.nslots;
        pthread_mutex_lock(&p.mu);
        while (!(p.slot_state[k] == SLOT_DONE && p.slot_block[k] == i))
            pthread_cond_wait(&p.done, &p.mu);
        pthread_mutex_unlock(&p.mu);
        rc = consume(c, j, &j->blocks[i], &p.slots[k], cur);
        pthread_mutex_lock(&p.mu);
        p.slot_state[k] = SLOT_FREE;
        pthread_cond_broadcast(&p.freed);
        pthread_mutex_unlock(&p.mu);
    }
    pthread_mutex_lock(&p.mu);
    p.stop = 1;
    pthread_cond_broadcast(&p.freed);
    pthread_mutex_unlock(&p.mu);
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    for (size_t k = 0; k < p.nslots; k++) ss__tx_slot_free(&p.slots[k]);
    pthread_cond_destroy(&p.done);
    pthread_cond_destroy(&p.freed);
    pthread_mutex_destroy(&p.mu);
    free(p.slots);
    free(p.slot_block);
    free(p.slot_state);
    free(tid);
    return rc;
}

static int write_text_attrs(ss_conv *c, const tx_job *j) {
    for (int sd = 0; sd < j->nsides; sd++) {
        const tx_tok *t = &j->tok[sd];
        if (ss__tx_field_attrs(c, t, j->field[sd], j->vocab_attr[sd], t->spm_model)) return 1;
    }
    return 0;
}

int ss__tx_run(ss_conv *c, tx_job *j) {
    ss_field fields[2];
    for (int sd = 0; sd < j->nsides; sd++)
        fields[sd] = (ss_field){.name = j->field[sd], .dtype = j->tok[sd].dtype, .sequence = 1};
    ss_schema schema = {(uint32_t)j->nsides, fields};
    tx_cursor cur = {0, 0, UINT32_MAX, NULL, NULL, 0, 0};
    if (ss__tx_shard_blocks(c, j) || ss__conv_begin(c, &schema, &cur.skip)) return 1;
    if (write_text_attrs(c, j)) return 1;
    uint64_t total = 0;
    for (uint32_t i = 0; i < j->ninputs; i++) total += j->inputs[i].ok ? j->inputs[i].size : 0;
    ss__conv_set_total(c, total);
    int threads = ss__conv_opts(c)->threads, rc;
    if (threads <= 1 || j->nblocks <= 1) {
        rc = run_serial(c, j, &cur);
    } else if (ss__writer_background(ss__conv_writer(c))) {
        rc = ss__conv_ss_error(c, "cannot write to '%s'", ss__conv_opts(c)->output);
    } else {
        /* the thread that appends also commits: on a second core, the commits
         * (LMDB's copies into its pages and into the page cache) overlap the
         * appends that follow */
        rc = run_threads(c, j, threads, &cur);
    }
    if (!rc && j->skip_empty)
        ss__conv_skipped(c, cur.skipped, j->mode == TX_LINES ? "blank line" : "blank document",
                         "--skip-empty");
    free(cur.lens);
    free(cur.lines);
    return rc;
}

