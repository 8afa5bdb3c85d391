/* SPDX-License-Identifier: BSD-2-Clause */
/* text_worker.c - the text engine: a block tokenized into examples (see text.h). */
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

/* ------------------------------------------------------------- the worker */

/* Room for `more` items after s->nitems. 0, or -1 out of memory. */
static int reserve_items(tx_slot *s, size_t more) {
    if (s->items_cap - s->nitems >= more) return 0;
    size_t n = s->items_cap ? 2 * s->items_cap : 1024;
    while (n - s->nitems < more) n *= 2;
    tx_item *p = realloc(s->items, n * sizeof *p);
    if (!p) return -1;
    s->items = p;
    s->items_cap = n;
    return 0;
}

static tx_item *new_item(tx_slot *s) {
    if (reserve_items(s, 1)) return NULL;
    tx_item *it = &s->items[s->nitems++];
    memset(it, 0, sizeof *it);
    return it;
}

static uint32_t add_msg(tx_slot *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static uint32_t add_msg(tx_slot *s, const char *fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
    if (s->msgn + (size_t)n + 1 > UINT32_MAX - 1 ||
        ss__tx_reserve((uint8_t **)&s->msgs, &s->msgs_cap, s->msgn + (size_t)n + 1)) {
        s->oom = 1;
        return 0;
    }
    memcpy(s->msgs + s->msgn, buf, (size_t)n + 1);
    uint32_t off = (uint32_t)s->msgn + 1;
    s->msgn += (size_t)n + 1;
    return off;
}

/* out[m..m+n) = ids rm[w[0..n)] as elements of es bytes (the switch out of
 * the loop). */
static void put_mapped(uint8_t *out, uint32_t es, size_t m, const uint32_t *rm, const uint32_t *w,
                       size_t n) {
    if (es == 1)
        for (size_t x = 0; x < n; x++) out[m + x] = (uint8_t)rm[w[x]];
    else if (es == 2)
        for (size_t x = 0; x < n; x++) ((uint16_t *)(void *)out)[m + x] = (uint16_t)rm[w[x]];
    else
        for (size_t x = 0; x < n; x++) ((uint32_t *)(void *)out)[m + x] = rm[w[x]];
}

/* A printable excerpt of a bad token for messages. */
static int excerpt_len(size_t n) {
    return n > 40 ? 40 : (int)n;
}

/* Tokenize [a, e) of input `in` for side `sd` into item `it`. */
static void tokenize(const tx_job *j, int sd, tx_slot *s, tx_item *it, const tx_input *in, size_t a,
                     size_t e, const tx_blockids *bi) {
    const tx_tok *t = &j->tok[sd];
    const uint8_t *d = in->data;
    size_t dsize = in->size;
    size_t n = e - a, k = s->tokn[sd];
    uint32_t es = t->esize;
    if (t->kind == TX_SPM) {
        char err[256];
        int r = ss__tx_spm_tokenize(t, d + a, n, &s->tok[sd], &s->tok_cap[sd], &k, err, sizeof err);
        if (r == -2) s->oom = 1;
        if (r == -1) it->bad[sd] = add_msg(s, "%s", err);
        if (r) return;
        it->off[sd] = s->tokn[sd];
        it->len[sd] = k - s->tokn[sd];
        s->tokn[sd] = k;
        return;
    }
    if (t->kind == TX_BYTES && !t->bos_on && !t->eos_on) {
        it->zero_copy[sd] = 1;
        it->off[sd] = a;
        it->len[sd] = n;
        return;
    }
    if (ss__tx_reserve(&s->tok[sd], &s->tok_cap[sd], (k + n + 2) * es)) {
        s->oom = 1;
        return;
    }
    uint8_t *out = s->tok[sd];
    size_t m = k;
    if (t->bos_on) tx_put_id(out, es, m++, t->bos);
    switch (t->kind) {
    case TX_BYTES:
        for (size_t i = a; i < e; i++) tx_put_id(out, es, m++, d[i]);
        break;
    case TX_CHARS: {
        size_t nout = 0, bad = 0;
        if (ss__utf8_decode((uint32_t *)(void *)out + m, &nout, &bad, d + a, n)) {
            it->bad[sd] =
                add_msg(s, "invalid UTF-8 at byte offset %zu (byte 0x%02x)", a + bad, d[a + bad]);
            return;
        }
        m += nout;
        break;
    }
    case TX_WORDS:
        if (bi) { /* pass 1 kept this block's words: map them, no lookup */
            const uint32_t *rm = j->ids->remap[bi->map], *w = bi->tok + s->idpos[sd];
            size_t nw = bi->nper[s->expos[sd]++];
            s->idpos[sd] += nw;
            put_mapped(out, es, m, rm, w, nw);
            m += nw;
            break;
        }
        {
            ss_wordscan ws;
            size_t w, len;
            ss_wordscan_init(&ws, d, a, e, dsize);
            while (ss_wordscan_next(&ws, &w, &len)) {
                ss_vocab_key key = tx_word_key(d, w, len, dsize);
                int64_t id = ss__vocab_lookup_key(t->vocab, &key);
                tx_put_id(out, es, m++, id < 0 ? t->unk : (uint32_t)id);
            }
        }
        break;
    case TX_IDS:
        for (size_t i = a; i < e;) {
            while (i < e && ss_is_ws(d[i])) i++;
            if (i >= e) break;
            size_t w = i;
            uint64_t v = 0;
            int digits = 1, big = 0;
            for (; i < e && !ss_is_ws(d[i]); i++) {
                if (d[i] < '0' || d[i] > '9')
                    digits = 0;
                else if (!big && (v = v * 10 + (uint64_t)(d[i] - '0')) > UINT32_MAX)
                    big = 1;
            }
            if (!digits) {
                it->bad[sd] = add_msg(s, "'%.*s' is not a token id (byte offset %zu)",
                                      excerpt_len(i - w), (const char *)d + w, w);
                return;
            }
            if (big || (t->vocab_size && v >= t->vocab_size)) {
                if (t->vocab_size)
                    it->bad[sd] =
                        add_msg(s,
                                "token id %.*s is out of range: --vocab-size is %" PRIu64
                                " (byte offset %zu)",
                                excerpt_len(i - w), (const char *)d + w, t->vocab_size, w);
                else
                    it->bad[sd] = add_msg(s, "token id %.*s does not fit 32 bits (byte offset %zu)",
                                          excerpt_len(i - w), (const char *)d + w, w);
                return;
            }
            tx_put_id(out, es, m++, (uint32_t)v);
        }
        break;
    }
    if (t->eos_on) tx_put_id(out, es, m++, t->eos);
    it->off[sd] = k;
    it->len[sd] = m - k;
    s->tokn[sd] = m;
}

/* Forget the words kept of a block (pass 2 looks them up). */
/* ss__tx_process_block() of a text (one side) whose words pass 1 kept: the
 * examples, their lines and words are all in bi; the text is not read.
 * Then frees bi's arrays (no block is processed twice): in the worker
 * threads, not all at the end in the thread that writes. */
static void process_kept(const tx_job *j, tx_blockids *bi, tx_slot *s) {
    const tx_tok *t = &j->tok[0];
    const uint32_t *rm = j->ids->remap[bi->map], *w = bi->tok;
    uint32_t es = t->esize;
    if (ss__tx_reserve(&s->tok[0], &s->tok_cap[0], (bi->ntok + 2 * bi->nex) * es) ||
        reserve_items(s, bi->nex)) {
        s->oom = 1;
        return;
    }
    int framed = t->bos_on || t->eos_on; /* else the examples' words are one run */
    if (!framed) put_mapped(s->tok[0], es, 0, rm, w, bi->ntok);
    size_t m = 0;
    for (size_t x = 0; x < bi->nex; x++) {
        size_t k = m;
        if (t->bos_on) tx_put_id(s->tok[0], es, m++, t->bos);
        if (framed) {
            put_mapped(s->tok[0], es, m, rm, w, bi->nper[x]);
            w += bi->nper[x];
        }
        m += bi->nper[x];
        if (t->eos_on) tx_put_id(s->tok[0], es, m++, t->eos);
        s->items[x] = (tx_item){{k, 0}, {m - k, 0}, bi->line[x], {0, 0}, {0, 0}};
    }
    s->nitems = bi->nex;
    s->tokn[0] = m;
    s->nlines = bi->nlines;
    s->nskipped = bi->nskipped;
    ss__tx_blockids_drop(bi);
}

void ss__tx_process_block(const tx_job *j, const tx_block *b, tx_slot *s) {
    s->nitems = 0;
    s->tokn[0] = s->tokn[1] = 0;
    s->msgn = 0;
    s->nlines = 0;
    s->nskipped = 0;
    s->oom = 0;
    tx_blockids *bi[2] = {NULL, NULL};
    for (int sd = 0; sd < j->nsides; sd++) {
        s->idpos[sd] = s->expos[sd] = 0;
        tx_blockids *k = j->ids ? &j->ids->blocks[2 * (size_t)(b - j->blocks) + sd] : NULL;
        if (k && k->tok && j->tok[sd].kind == TX_WORDS) bi[sd] = k;
    }
    if (j->nsides == 1 && bi[0] && !b->other_shard) {
        process_kept(j, bi[0], s);
        return;
    }
    if (b->other_shard) {
        s->nlines =
            b->other_shard == TX_UNREAD
                ? 0
                : ss__tx_count_lines(ss__tx_side_input(j, b, 0)->data + b->start[0],
                                     b->end[0] - b->start[0]);
        return;
    }
    size_t pos[2] = {b->start[0], b->start[1]};
    uint64_t lines[2] = {0, 0}, skipped[2] = {0, 0};
    for (;;) {
        size_t a[2], e[2];
        uint64_t first[2];
        int got = 0;
        for (int sd = 0; sd < j->nsides; sd++)
            got += ss__tx_next_example(j, ss__tx_side_input(j, b, sd)->data, &pos[sd], b->end[sd],
                                       &lines[sd], &a[sd], &e[sd], &first[sd], &skipped[sd]);
        if (got < j->nsides) break; /* parallel sides have equal line counts */
        tx_item *it = new_item(s);
        if (!it) {
            s->oom = 1;
            return;
        }
        it->line = first[0];
        for (int sd = 0; sd < j->nsides && !s->oom; sd++)
            tokenize(j, sd, s, it, ss__tx_side_input(j, b, sd), a[sd], e[sd], bi[sd]);
        if (s->oom) return;
    }
    s->nlines = lines[0];
    s->nskipped = skipped[0];
}

void ss__tx_slot_free(tx_slot *s) {
    free(s->items);
    free(s->tok[0]);
    free(s->tok[1]);
    free(s->msgs);
    memset(s, 0, sizeof *s);
}

