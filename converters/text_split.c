/* SPDX-License-Identifier: BSD-2-Clause */
/* text_split.c - the text engine: lines and documents, and the blocks the
 * inputs are cut into (see text.h). */
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

#define TX_BLOCK_BYTES ((size_t)1 << 20)

/* ------------------------------------------------------ lines, documents */

static inline int is_ws(uint8_t ch) {
    return ss_is_ws(ch);
}

static int is_blank(const uint8_t *d, size_t a, size_t e) {
    for (size_t i = a; i < e; i++)
        if (!is_ws(d[i])) return 0;
    return 1;
}

static int is_sep(const tx_job *j, const uint8_t *d, size_t a, size_t e) {
    if (j->mode == TX_DOCS_BLANK) return is_blank(d, a, e);
    if (j->mode != TX_DOCS_SEP) return 0;
    if (e > a && d[e - 1] == '\r') e--;
    return e - a == j->seplen && !memcmp(d + a, j->sep, j->seplen);
}

/* The next line [*a, *e) from *pos (< end); advances *pos past its '\n'. */
static inline void next_line(const uint8_t *d, size_t *pos, size_t end, size_t *a, size_t *e) {
    const uint8_t *nl = memchr(d + *pos, '\n', end - *pos);
    *a = *pos;
    *e = nl ? (size_t)(nl - d) : end;
    *pos = nl ? *e + 1 : end;
}

/* The next example [*a, *e) starting at line *first (1-based, counted in
 * *lines, which counts every line consumed); *skipped counts the blank
 * examples --skip-empty drops. Blank-line documents are separated by one
 * or more blank lines (there is no empty one); with --doc-sep every
 * separator line ends a document, an empty one too (at the separator's
 * line, [la, la)), and a last document needs no separator after it.
 * @return 1, or 0 at the end. */
int ss__tx_next_example(const tx_job *j, const uint8_t *d, size_t *pos, size_t end, uint64_t *lines,
                            size_t *a, size_t *e, uint64_t *first, uint64_t *skipped) {
    size_t la, le;
    if (j->mode == TX_LINES) {
        while (*pos < end) {
            next_line(d, pos, end, &la, &le);
            ++*lines;
            if (j->skip_empty && is_blank(d, la, le)) {
                ++*skipped;
                continue;
            }
            *a = la;
            *e = le;
            *first = *lines;
            return 1;
        }
        return 0;
    }
    for (;;) {
        int in_doc = 0;
        while (*pos < end) {
            next_line(d, pos, end, &la, &le);
            ++*lines;
            if (is_sep(j, d, la, le)) {
                if (in_doc) break;
                if (j->mode == TX_DOCS_BLANK) continue;
                in_doc = 1; /* an empty document */
                *a = *e = la;
                *first = *lines;
                break;
            }
            if (!in_doc) {
                in_doc = 1;
                *a = la;
                *first = *lines;
            }
            *e = le;
        }
        if (!in_doc) return 0;
        if (!j->skip_empty || !is_blank(d, *a, *e)) return 1;
        ++*skipped;
    }
}

uint64_t ss__tx_count_lines(const uint8_t *d, size_t n) {
    uint64_t k = 0;
    const uint8_t *p = d, *end = d + n;
    while (p < end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        k++;
        if (!nl) break;
        p = nl + 1;
    }
    return k;
}

/* ---------------------------------------------------------------- blocks */

static size_t cut_line(const uint8_t *d, size_t size, size_t target) {
    if (target >= size) return size;
    const uint8_t *nl = memchr(d + target, '\n', size - target);
    return nl ? (size_t)(nl - d) + 1 : size;
}

static size_t cut_doc(const tx_job *j, const uint8_t *d, size_t size, size_t target) {
    size_t p = cut_line(d, size, target), a, e;
    while (p < size) {
        next_line(d, &p, size, &a, &e);
        if (is_sep(j, d, a, e)) return p;
    }
    return size;
}

static size_t advance_lines(const uint8_t *d, size_t size, size_t pos, uint64_t n) {
    for (; n && pos < size; n--) {
        const uint8_t *nl = memchr(d + pos, '\n', size - pos);
        pos = nl ? (size_t)(nl - d) + 1 : size;
    }
    return pos;
}

static int add_block(tx_job *j, size_t *cap, const tx_block *b) {
    if (j->nblocks == *cap) {
        size_t n = *cap ? 2 * *cap : 64;
        tx_block *p = realloc(j->blocks, n * sizeof *p);
        if (!p) return -1;
        j->blocks = p;
        *cap = n;
    }
    j->blocks[j->nblocks++] = *b;
    return 0;
}

/* The first cut position at or after byte b of input `in` (side 0): a line
 * start, or with documents the start of the line after a separator line; 0
 * and the end count as cuts. Blocks only ever begin at cut positions, so
 * cutting a block at one changes no example. */
static size_t cut_at(const tx_job *j, const tx_input *in, uint64_t b) {
    const uint8_t *d = in->data;
    if (b == 0) return 0;
    if (b >= in->size) return in->size;
    size_t q = cut_line(d, in->size, (size_t)b - 1); /* the first line start >= b */
    if (j->mode == TX_LINES || q >= in->size) return q;
    size_t ls = q - 1; /* the line before q, [ls, q - 1) */
    while (ls > 0 && d[ls - 1] != '\n') ls--;
    return is_sep(j, d, ls, q - 1) ? q : cut_doc(j, d, in->size, q - 1);
}

/* --shard: the byte positions [cut[0], cut[1]) of input i (side 0) this
 * shard owns, each the first cut position at or after the shard's byte
 * bound: blocks cut there hold this shard's examples alone, so shards are
 * even (within an example) whatever the block size. {size, size} without
 * --shard or when the shard owns nothing of the input: no extra cut. */
static void shard_cuts(ss_conv *c, const tx_job *j, uint32_t i, size_t cut[2]) {
    const tx_input *in = &j->inputs[i];
    uint64_t lo, hi;
    uint32_t k, n = 0;
    cut[0] = cut[1] = in->size;
    if (c) ss__conv_shard_spec(c, &k, &n);
    if (!n || !in->size || !ss__conv_shard_range(c, in->source, &lo, &hi)) return;
    cut[0] = cut_at(j, in, lo);
    cut[1] = cut_at(j, in, hi);
}

/* The end of a block from p whose natural end is e: the first of the cuts
 * inside it, if any. */
static size_t bound(size_t p, size_t e, const size_t cut[2]) {
    for (int k = 0; k < 2; k++)
        if (p < cut[k] && cut[k] < e) return cut[k];
    return e;
}

/* The slicing's input sizes (see ss__tx_shard_blocks()). */
static int shard_sizes(ss_conv *c, const tx_job *j) {
    for (uint32_t i = 0; i < j->ninputs; i++) {
        const tx_input *in = &j->inputs[i];
        uint64_t size = in->ok && !(j->nsides == 2 && i == 1) ? in->size : 0;
        if (ss__conv_shard_size(c, in->ok ? in->source : i, size)) return 1; /* sources = inputs */
    }
    return 0;
}

static int split(ss_conv *c, tx_job *j) {
    size_t cap = 0, bs = j->block_bytes ? j->block_bytes : TX_BLOCK_BYTES, cut[2];
    ss__tx_wordids_free(j); /* kept per block: other blocks, other words */
    /* tests: small blocks, so that --shard cuts a small file (the output
     * never depends on the block size) */
    const char *test_bs = getenv("SS_TEST_BLOCK_BYTES");
    if (!j->block_bytes && test_bs && atol(test_bs) > 0) bs = (size_t)atol(test_bs);
    j->nblocks = 0;
    if (c && shard_sizes(c, j)) return -1;
    if (j->nsides == 2) {
        const tx_input *s = &j->inputs[0], *t = &j->inputs[1];
        size_t p0 = 0, p1 = 0;
        shard_cuts(c, j, 0, cut);
        while (p0 < s->size) {
            size_t e0 = bound(p0, cut_line(s->data, s->size, p0 + bs), cut);
            size_t e1 = advance_lines(t->data, t->size, p1, ss__tx_count_lines(s->data + p0, e0 - p0));
            tx_block b = {0, {p0, p1}, {e0, e1}, 0};
            if (add_block(j, &cap, &b)) return -1;
            p0 = e0;
            p1 = e1;
        }
        return 0;
    }
    for (uint32_t i = 0; i < j->ninputs; i++) {
        const tx_input *in = &j->inputs[i];
        if (!in->ok) continue;
        shard_cuts(c, j, i, cut);
        for (size_t p = 0; p < in->size;) {
            size_t e = j->mode == TX_LINES ? cut_line(in->data, in->size, p + bs)
                                           : cut_doc(j, in->data, in->size, p + bs);
            e = bound(p, e, cut);
            tx_block b = {i, {p, 0}, {e, 0}, 0};
            if (add_block(j, &cap, &b)) return -1;
            p = e;
        }
    }
    return 0;
}

int ss__tx_split(tx_job *j) {
    return split(NULL, j);
}

int ss__tx_split_shard(ss_conv *c, tx_job *j) {
    return split(c, j);
}

const tx_input *ss__tx_side_input(const tx_job *j, const tx_block *b, int sd) {
    return j->nsides == 2 ? &j->inputs[sd] : &j->inputs[b->input];
}

int ss__tx_shard_blocks(ss_conv *c, tx_job *j) {
    if (shard_sizes(c, j)) return 1;
    ss__conv_shard_self(c);
    for (size_t k = 0; k < j->nblocks; k++) {
        tx_block *b = &j->blocks[k];
        b->other_shard = !ss__conv_in_shard_at(c, ss__tx_side_input(j, b, 0)->source, b->start[0]);
    }
    /* Line numbers start again with each input: another shard's block needs
     * its lines counted only when a block of this shard follows it in the
     * same input. The others are not read at all (a rank of N would
     * otherwise scan the whole corpus). */
    int mine_after = 0;
    for (size_t k = j->nblocks; k-- > 0;) {
        tx_block *b = &j->blocks[k];
        if (k + 1 < j->nblocks && b->input != j->blocks[k + 1].input) mine_after = 0;
        if (!b->other_shard)
            mine_after = 1;
        else if (!mine_after)
            b->other_shard = TX_UNREAD;
    }
    return 0;
}

