/* SPDX-License-Identifier: BSD-2-Clause */
/* convert_text.c - `seqstore convert text` and the text engine (see text.h). */
#include "commands.h"
#include "internal.h"
#include "memlimit.h"
#include "spm_text.h"
#include "text.h"
#include "utf8.h"
#include "words.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <omp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#define TX_BLOCK_BYTES ((size_t)1 << 20)
#define TX_BATCH 32 /* words counted together (ss_vocab_count_batch()) */

/* ------------------------------------------------------------- tokens */

static const char *const kind_names[] = {"bytes", "chars", "words", "ids", "spm"};

int tx_parse_kind(const char *name) {
    for (int k = 0; k < 4; k++)
        if (!strcmp(name, kind_names[k])) return k;
    return -1;
}

const char *tx_kind_name(int kind) {
    return kind >= 0 && kind < 5 ? kind_names[kind] : "?";
}

static ss_dtype dtype_for(uint64_t max_id) {
    return max_id <= UINT8_MAX ? SS_U8 : max_id <= UINT16_MAX ? SS_U16 : SS_U32;
}

static int need_special(ss_conv *c, const tx_tok *t, const char *name, uint32_t *id) {
    int64_t v = ss_vocab_lookup(t->vocab, (const uint8_t *)name, strlen(name));
    if (v < 0) return c ? ss_conv_error(c, "the vocabulary has no %s token", name) : 1;
    *id = (uint32_t)v;
    return 0;
}

int tx_prepare_tokens(ss_conv *c, tx_tok *t, const char *field) {
    uint64_t base = 0; /* first id after the vocabulary */
    switch (t->kind) {
    case TX_BYTES:
        base = 256;
        break;
    case TX_CHARS:
        base = 0x110000;
        break;
    case TX_IDS:
        if ((t->bos_on || t->eos_on) && !t->vocab_size)
            return c ? ss_conv_usage_error(c, "--bos/--eos with --tokens ids need --vocab-size")
                     : 2;
        base = t->vocab_size ? t->vocab_size : (uint64_t)UINT32_MAX + 1;
        break;
    case TX_WORDS:
        if (!t->vocab) return c ? ss_conv_error(c, "%s: no vocabulary", field) : 1;
        if (ss_vocab_size(t->vocab) > (uint64_t)UINT32_MAX)
            return c ? ss_conv_error(c, "%s: vocabulary too large", field) : 1;
        if (need_special(c, t, "<unk>", &t->unk)) return 1;
        if (t->bos_on && need_special(c, t, "<bos>", &t->bos)) return 1;
        if (t->eos_on && need_special(c, t, "<eos>", &t->eos)) return 1;
        t->dtype = dtype_for(ss_vocab_size(t->vocab) ? ss_vocab_size(t->vocab) - 1 : 0);
        t->esize = (uint32_t)ss_dtype_size(t->dtype);
        return 0;
    case TX_SPM:
        return tx_spm_prepare(c, t, field);
    default:
        return c ? ss_conv_error(c, "%s: unknown token kind", field) : 1;
    }
    if (t->bos_on) t->bos = (uint32_t)base;
    if (t->eos_on) t->eos = (uint32_t)(base + (uint64_t)t->bos_on);
    uint64_t max = base - 1 + (uint64_t)t->bos_on + (uint64_t)t->eos_on;
    t->dtype = t->kind == TX_CHARS ? SS_U32 : dtype_for(max);
    t->esize = (uint32_t)ss_dtype_size(t->dtype);
    return 0;
}

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
static int next_example(const tx_job *j, const uint8_t *d, size_t *pos, size_t end, uint64_t *lines,
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

uint64_t tx_count_lines(const uint8_t *d, size_t n) {
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

int tx_split(tx_job *j) {
    size_t cap = 0, bs = j->block_bytes ? j->block_bytes : TX_BLOCK_BYTES;
    tx_wordids_free(j); /* kept per block: other blocks, other words */
    /* tests: small blocks, so that --shard cuts a small file (the output
     * never depends on the block size) */
    const char *test_bs = getenv("SS_TEST_BLOCK_BYTES");
    if (!j->block_bytes && test_bs && atol(test_bs) > 0) bs = (size_t)atol(test_bs);
    j->nblocks = 0;
    if (j->nsides == 2) {
        const tx_input *s = &j->inputs[0], *t = &j->inputs[1];
        size_t p0 = 0, p1 = 0;
        while (p0 < s->size) {
            size_t e0 = cut_line(s->data, s->size, p0 + bs);
            size_t e1 = advance_lines(t->data, t->size, p1, tx_count_lines(s->data + p0, e0 - p0));
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
        for (size_t p = 0; p < in->size;) {
            size_t e = j->mode == TX_LINES ? cut_line(in->data, in->size, p + bs)
                                           : cut_doc(j, in->data, in->size, p + bs);
            tx_block b = {i, {p, 0}, {e, 0}, 0};
            if (add_block(j, &cap, &b)) return -1;
            p = e;
        }
    }
    return 0;
}

static const tx_input *side_input(const tx_job *j, const tx_block *b, int sd) {
    return j->nsides == 2 ? &j->inputs[sd] : &j->inputs[b->input];
}

int tx_shard_blocks(ss_conv *c, tx_job *j) {
    for (uint32_t i = 0; i < j->ninputs; i++) {
        const tx_input *in = &j->inputs[i];
        uint64_t size = in->ok && !(j->nsides == 2 && i == 1) ? in->size : 0;
        if (ss_conv_shard_size(c, in->ok ? in->source : i, size)) return 1; /* sources = inputs */
    }
    ss_conv_shard_self(c);
    for (size_t k = 0; k < j->nblocks; k++) {
        tx_block *b = &j->blocks[k];
        b->other_shard = !ss_conv_in_shard_at(c, side_input(j, b, 0)->source, b->start[0]);
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

/* ------------------------------------------------------------- the worker */

static int reserve(uint8_t **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : (size_t)1 << 16;
    while (n < need) n *= 2;
    void *p = realloc(*buf, n);
    if (!p) return -1;
    *buf = p;
    *cap = n;
    return 0;
}

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
        reserve((uint8_t **)&s->msgs, &s->msgs_cap, s->msgn + (size_t)n + 1)) {
        s->oom = 1;
        return 0;
    }
    memcpy(s->msgs + s->msgn, buf, (size_t)n + 1);
    uint32_t off = (uint32_t)s->msgn + 1;
    s->msgn += (size_t)n + 1;
    return off;
}

static inline void put(uint8_t *base, uint32_t esize, size_t i, uint32_t v) {
    if (esize == 1)
        base[i] = (uint8_t)v;
    else if (esize == 2)
        ((uint16_t *)(void *)base)[i] = (uint16_t)v;
    else
        ((uint32_t *)(void *)base)[i] = v;
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

/* The map's key of word d[w, w + len), d[0, dsize) readable. */
static inline ss_vocab_key word_key(const uint8_t *d, size_t w, size_t len, size_t dsize) {
    return dsize - w >= 8 ? ss_vocab_key_fast(d + w, len) : ss_vocab_key_of(d + w, len);
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
        int r = tx_spm_tokenize(t, d + a, n, &s->tok[sd], &s->tok_cap[sd], &k, err, sizeof err);
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
    if (reserve(&s->tok[sd], &s->tok_cap[sd], (k + n + 2) * es)) {
        s->oom = 1;
        return;
    }
    uint8_t *out = s->tok[sd];
    size_t m = k;
    if (t->bos_on) put(out, es, m++, t->bos);
    switch (t->kind) {
    case TX_BYTES:
        for (size_t i = a; i < e; i++) put(out, es, m++, d[i]);
        break;
    case TX_CHARS: {
        size_t nout = 0, bad = 0;
        if (ss_utf8_decode((uint32_t *)(void *)out + m, &nout, &bad, d + a, n)) {
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
                ss_vocab_key key = word_key(d, w, len, dsize);
                int64_t id = ss_vocab_lookup_key(t->vocab, &key);
                put(out, es, m++, id < 0 ? t->unk : (uint32_t)id);
            }
        }
        break;
    case TX_IDS:
        for (size_t i = a; i < e;) {
            while (i < e && is_ws(d[i])) i++;
            if (i >= e) break;
            size_t w = i;
            uint64_t v = 0;
            int digits = 1, big = 0;
            for (; i < e && !is_ws(d[i]); i++) {
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
            put(out, es, m++, (uint32_t)v);
        }
        break;
    }
    if (t->eos_on) put(out, es, m++, t->eos);
    it->off[sd] = k;
    it->len[sd] = m - k;
    s->tokn[sd] = m;
}

/* Forget the words kept of a block (pass 2 looks them up). */
static void blockids_drop(tx_blockids *bi) {
    free(bi->tok);
    free(bi->nper);
    free(bi->line);
    bi->tok = bi->nper = bi->line = NULL;
    bi->ntok = bi->nex = bi->tok_cap = bi->nex_cap = 0;
}

/* tx_process_block() of a text (one side) whose words pass 1 kept: the
 * examples, their lines and words are all in bi; the text is not read.
 * Then frees bi's arrays (no block is processed twice): in the worker
 * threads, not all at the end in the thread that writes. */
static void process_kept(const tx_job *j, tx_blockids *bi, tx_slot *s) {
    const tx_tok *t = &j->tok[0];
    const uint32_t *rm = j->ids->remap[bi->map], *w = bi->tok;
    uint32_t es = t->esize;
    if (reserve(&s->tok[0], &s->tok_cap[0], (bi->ntok + 2 * bi->nex) * es) ||
        reserve_items(s, bi->nex)) {
        s->oom = 1;
        return;
    }
    int framed = t->bos_on || t->eos_on; /* else the examples' words are one run */
    if (!framed) put_mapped(s->tok[0], es, 0, rm, w, bi->ntok);
    size_t m = 0;
    for (size_t x = 0; x < bi->nex; x++) {
        size_t k = m;
        if (t->bos_on) put(s->tok[0], es, m++, t->bos);
        if (framed) {
            put_mapped(s->tok[0], es, m, rm, w, bi->nper[x]);
            w += bi->nper[x];
        }
        m += bi->nper[x];
        if (t->eos_on) put(s->tok[0], es, m++, t->eos);
        s->items[x] = (tx_item){{k, 0}, {m - k, 0}, bi->line[x], {0, 0}, {0, 0}};
    }
    s->nitems = bi->nex;
    s->tokn[0] = m;
    s->nlines = bi->nlines;
    s->nskipped = bi->nskipped;
    blockids_drop(bi);
}

void tx_process_block(const tx_job *j, const tx_block *b, tx_slot *s) {
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
                : tx_count_lines(side_input(j, b, 0)->data + b->start[0], b->end[0] - b->start[0]);
        return;
    }
    size_t pos[2] = {b->start[0], b->start[1]};
    uint64_t lines[2] = {0, 0}, skipped[2] = {0, 0};
    for (;;) {
        size_t a[2], e[2];
        uint64_t first[2];
        int got = 0;
        for (int sd = 0; sd < j->nsides; sd++)
            got += next_example(j, side_input(j, b, sd)->data, &pos[sd], b->end[sd], &lines[sd],
                                &a[sd], &e[sd], &first[sd], &skipped[sd]);
        if (got < j->nsides) break; /* parallel sides have equal line counts */
        tx_item *it = new_item(s);
        if (!it) {
            s->oom = 1;
            return;
        }
        it->line = first[0];
        for (int sd = 0; sd < j->nsides && !s->oom; sd++)
            tokenize(j, sd, s, it, side_input(j, b, sd), a[sd], e[sd], bi[sd]);
        if (s->oom) return;
    }
    s->nlines = lines[0];
    s->nskipped = skipped[0];
}

void tx_slot_free(tx_slot *s) {
    free(s->items);
    free(s->tok[0]);
    free(s->tok[1]);
    free(s->msgs);
    memset(s, 0, sizeof *s);
}

/* ----------------------------------------------------------------- inputs */

static int read_fd_all(tx_input *in, int fd, char *err, size_t errlen) {
    size_t cap = 0, n = 0;
    uint8_t *buf = NULL;
    for (;;) {
        if (reserve(&buf, &cap, n + 65536)) {
            free(buf);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            snprintf(err, errlen, "read error: %s", strerror(errno));
            free(buf);
            return -1;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    in->owned = buf;
    in->data = buf;
    in->size = n;
    return 0;
}

/* Read the file `path` as it is: mapped when it is a regular file, else
 * read to its end (a pipe, a device). */
static int load_plain(tx_input *in, const char *path, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot stat: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "is a directory");
        close(fd);
        return -1;
    }
    int rc = 0;
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
            in->map = m;
            in->map_len = (size_t)st.st_size;
            in->data = m;
            in->size = (size_t)st.st_size;
        } else {
            rc = read_fd_all(in, fd, err, errlen);
        }
    } else if (!S_ISREG(st.st_mode)) {
        rc = read_fd_all(in, fd, err, errlen);
    }
    close(fd);
    return rc;
}

/* Where member `*members` of gzip data d[0, n) ended at d[pos]: 0 when the
 * data ends there (nothing, or only the zero bytes that pad a file, which
 * gzip accepts too), 1 when another member starts there, else -1 with the
 * message (what `gzip -t` calls trailing garbage). */
static int gz_after_member(const uint8_t *d, size_t n, size_t pos, int members, char *err,
                           size_t errlen) {
    if (n - pos >= 2 && d[pos] == 0x1f && d[pos + 1] == 0x8b) return 1;
    size_t k = pos;
    while (k < n && d[k] == 0) k++;
    if (k == n) return 0;
    snprintf(err, errlen, "not gzip: %zu bytes after the end of gzip member %d (at byte %zu)",
             n - pos, members, pos);
    return -1;
}

/* Decompress the gzip data d[0, n) into *buf (cap *cap), *out bytes, as
 * `gzip -d` reads a file: one member or more, then nothing but zero bytes.
 * 0, or -1 with the message in err. */
static int gunzip(const uint8_t *d, size_t n, uint8_t **buf, size_t *cap, size_t *out, char *err,
                  size_t errlen) {
    if (n == 0) return snprintf(err, errlen, "not gzip: the file is empty"), -1;
    if (n < 2 || d[0] != 0x1f || d[1] != 0x8b)
        return snprintf(err, errlen, "not gzip: it does not start with the gzip magic bytes 1f 8b"),
               -1;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        return snprintf(err, errlen, "out of memory"), -1;
    size_t pos = 0, m = 0; /* input consumed, output produced */
    int members = 0, rc = -1;
    for (;;) {
        if (*cap - m < (1u << 20) && reserve(buf, cap, m + (1u << 20))) {
            snprintf(err, errlen, "out of memory");
            break;
        }
        size_t room = *cap - m, left = n - pos;
        z.next_in = (Bytef *)(uintptr_t)(d + pos); /* zlib does not write the input */
        z.avail_in = (uInt)(left < (1u << 30) ? left : (1u << 30));
        z.next_out = *buf + m;
        z.avail_out = (uInt)(room < (1u << 30) ? room : (1u << 30));
        int r = inflate(&z, Z_NO_FLUSH);
        pos = (size_t)(z.next_in - d);
        m = (size_t)(z.next_out - *buf);
        if (r == Z_STREAM_END) {
            int next = gz_after_member(d, n, pos, ++members, err, errlen);
            if (next <= 0) {
                rc = next;
                break;
            }
            inflateReset(&z);
        } else if (r == Z_BUF_ERROR && pos == n) {
            snprintf(err, errlen, "gzip error after %zu decompressed bytes: unexpected end of file",
                     m);
            break;
        } else if (r != Z_OK && r != Z_BUF_ERROR) {
            snprintf(err, errlen, "gzip error after %zu decompressed bytes: %s", m,
                     r == Z_MEM_ERROR ? "out of memory" : z.msg ? z.msg : "invalid data");
            break;
        }
    }
    inflateEnd(&z);
    *out = m;
    return rc;
}

static int read_gz(tx_input *in, const char *path, char *err, size_t errlen) {
    tx_input raw;
    memset(&raw, 0, sizeof raw);
    if (load_plain(&raw, path, err, errlen)) return -1;
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;
    int rc = gunzip(raw.data, raw.size, &buf, &cap, &n, err, errlen);
    tx_input_release(&raw);
    if (rc) {
        free(buf);
        return -1;
    }
    in->owned = buf;
    in->data = buf;
    in->size = n;
    return 0;
}

int tx_input_load(tx_input *in, const char *path, char *err, size_t errlen) {
    memset(in, 0, sizeof *in);
    in->path = path;
    if (!strcmp(path, "-")) return read_fd_all(in, 0, err, errlen);
    size_t pl = strlen(path);
    if (pl > 3 && !strcmp(path + pl - 3, ".gz")) return read_gz(in, path, err, errlen);
    return load_plain(in, path, err, errlen);
}

void tx_input_release(tx_input *in) {
    if (in->map) munmap(in->map, in->map_len);
    free(in->owned);
    in->map = NULL;
    in->owned = NULL;
    in->data = NULL;
}

/* ------------------------------------------------------------ vocabularies */

int tx_vocab_load(ss_conv *c, ss_vocab **out, const char *from, const char *field) {
    char err[256] = "", name[SS_MAX_NAME + 16];
    ss_store *s = NULL;
    *out = NULL;
    ss_conv_add_checked(c, from); /* --resume: the same vocabulary */
    ss_cli_note_store(from, 0);   /* its lock file goes when the command ends */
    int rc = ss_open(&s, from, SS_OPEN_VERIFY);
    if (rc == 0) {
        ss_attr a;
        snprintf(name, sizeof name, "%s.vocab", field);
        int arc = ss_attr_get(&a, s, name);
        if (arc == SS_ENOTFOUND) arc = ss_attr_get(&a, s, "vocab");
        if (arc && arc != SS_ENOTFOUND) { /* damaged: not "no vocabulary" */
            rc = ss_conv_ss_error(c, "cannot read the vocabulary of '%s'", from);
            ss_close(s);
            return rc;
        }
        if (arc || (a.type != SS_ATTR_TEXT && a.type != SS_ATTR_BYTES)) {
            ss_close(s);
            return ss_conv_error(c, "'%s' has no vocabulary (attribute '%s' or 'vocab')", from,
                                 name);
        }
        rc = ss_vocab_parse(out, a.data, (size_t)a.size, err, sizeof err);
        ss_close(s);
        if (rc) return ss_conv_error(c, "vocabulary of '%s': %s", from, err);
        return 0;
    }
    if (rc == SS_ENOTFOUND) return ss_conv_error(c, "vocabulary '%s': no such file", from);
    if (rc != SS_ENOTSTORE) return ss_conv_ss_error(c, "cannot open vocabulary store '%s'", from);
    tx_input in;
    if (tx_input_load(&in, from, err, sizeof err))
        return ss_conv_error(c, "vocabulary '%s': %s", from, err);
    rc = ss_vocab_parse(out, (const char *)in.data, in.size, err, sizeof err);
    tx_input_release(&in);
    if (rc) return ss_conv_error(c, "vocabulary file '%s': %s", from, err);
    return 0;
}

/* Append an example of `words` words from line `first` to bi. 0, or -1 OOM. */
static int push_example(tx_blockids *bi, uint32_t words, uint32_t first) {
    if (bi->nex == bi->nex_cap) {
        size_t n = bi->nex_cap ? 2 * bi->nex_cap : 1024;
        uint32_t *p = realloc(bi->nper, n * sizeof *p);
        if (p) bi->nper = p;
        uint32_t *q = p ? realloc(bi->line, n * sizeof *q) : NULL;
        if (!q) return -1;
        bi->line = q;
        bi->nex_cap = n;
    }
    bi->nper[bi->nex] = words;
    bi->line[bi->nex++] = first;
    return 0;
}

/* Words waiting to be counted together (ss_vocab_count_batch()). */
typedef struct word_batch {
    ss_vocab_key key[TX_BATCH];
    uint32_t entry[TX_BATCH];
    size_t n;
} word_batch;

static int flush_batch(word_batch *b, ss_vocab *v, tx_blockids *bi) {
    uint32_t *to = b->entry;
    if (bi) { /* the entry numbers go straight into the kept words */
        if (bi->ntok + b->n > bi->tok_cap) {
            size_t cap = bi->tok_cap ? 2 * bi->tok_cap : 4096;
            while (cap < bi->ntok + b->n) cap *= 2;
            uint32_t *p = realloc(bi->tok, cap * sizeof *p);
            if (!p) return -1;
            bi->tok = p;
            bi->tok_cap = cap;
        }
        to = bi->tok + bi->ntok;
    }
    if (ss_vocab_count_batch(v, b->n, b->key, to)) return -1;
    if (bi) bi->ntok += b->n;
    b->n = 0;
    return 0;
}

/* Count the words of [pos, end) of `in` into v; with bi, also keep them
 * (see tx_blockids). Sets *oom on failure. */
static void count_range(const tx_job *j, const tx_input *in, size_t pos, size_t end, ss_vocab *v,
                        tx_blockids *bi, int *oom) {
    const uint8_t *d = in->data;
    size_t a, e;
    uint64_t lines = 0, first, skipped = 0;
    word_batch b;
    b.n = 0;
    if (bi && !bi->tok) { /* room for the most words [pos, end) can hold: no
                           * growing copies; the pages never written are never
                           * touched, and the array is cut to size at the end */
        size_t most = (end - pos) / 2 + 1;
        if ((bi->tok = malloc(most * sizeof *bi->tok))) bi->tok_cap = most;
    }
    while (next_example(j, d, &pos, end, &lines, &a, &e, &first, &skipped)) {
        uint64_t words = 0;
        ss_wordscan ws;
        size_t w, len;
        ss_wordscan_init(&ws, d, a, e, in->size);
        while (ss_wordscan_next(&ws, &w, &len)) {
            if (len > UINT32_MAX) { /* the map refuses such words */
                *oom = 1;
                return;
            }
            b.key[b.n++] = word_key(d, w, len, in->size);
            words++;
            if (b.n == TX_BATCH && flush_batch(&b, v, bi)) {
                *oom = 1;
                return;
            }
        }
        if (bi && (words > UINT32_MAX || first > UINT32_MAX)) { /* look them up in pass 2 */
            if (b.n && flush_batch(&b, v, bi)) {
                *oom = 1;
                return;
            }
            blockids_drop(bi);
            bi = NULL;
        }
        if (bi && push_example(bi, (uint32_t)words, (uint32_t)first)) {
            *oom = 1;
            return;
        }
    }
    if (b.n && flush_batch(&b, v, bi)) *oom = 1;
    if (!bi) return;
    bi->nlines = lines;
    bi->nskipped = skipped;
    uint32_t *cut = bi->ntok < bi->tok_cap ? realloc(bi->tok, (bi->ntok + 1) * sizeof *cut) : NULL;
    if (cut) {
        bi->tok = cut;
        bi->tok_cap = bi->ntok + 1;
    }
}

/* Bytes of kept words (tx_blockids) a job may hold: a quarter of the
 * memory the process may use, its cgroup's limit included (memlimit.h;
 * tests: $SS_TEST_WORD_IDS_BYTES). */
static size_t ids_budget(void) {
    const char *t = getenv("SS_TEST_WORD_IDS_BYTES");
    if (t && *t) return (size_t)strtoull(t, NULL, 10);
    uint64_t q = ss_memory_limit() / 4;
    return q < SIZE_MAX ? (size_t)q : SIZE_MAX;
}

void tx_wordids_free(tx_job *j) {
    tx_wordids *w = j->ids;
    if (!w) return;
    for (size_t k = 0; w->blocks && k < 2 * j->nblocks; k++) blockids_drop(&w->blocks[k]);
    for (int k = 0; w->remap && k < w->nmaps; k++) free(w->remap[k]);
    free(w->blocks);
    free(w->remap);
    free(w->nremap);
    free(w);
    j->ids = NULL;
}

/* Merge the per-thread maps ([2 * threads]) into maps 0 and 1. With `ids`,
 * ids->remap[k] of each merged map k gets the entry number in the map it
 * went into of each of its entries (maps 0 and 1 keep theirs), and
 * ids->nremap[k] their number. 0, or -1 out of memory. */
static int merge_maps(ss_vocab **maps, int threads, int nmaps, tx_wordids *ids) {
    int oom = 0;
    for (int m = 0; m < nmaps && !oom; m++)
        for (int t = 1; t < threads && !oom; t++) {
            int k = 2 * t + m;
            uint64_t n = ss_vocab_entries(maps[k]);
            uint32_t *to = ids ? malloc((n ? n : 1) * sizeof *to) : NULL;
            if (ids && !(ids->remap[k] = to)) oom = 1;
            if (ids) ids->nremap[k] = n;
            if (!oom && ss_vocab_merge_at(maps[m], maps[k], to)) oom = 1;
        }
    return oom ? -1 : 0;
}

/* tx_count_words(); with `ids`, also keep the words of blocks while their
 * size stays within ids_budget(), as entry numbers of per-thread maps: map
 * 2t + m of thread t; ids->remap (allocated here) then holds where those
 * of maps 2t + m, t > 0, went in counts[m] (merge_maps()). */
static int count_words(ss_conv *c, const tx_job *j, int threads, int shared, const int skip[2],
                       ss_vocab *counts[2], tx_wordids *ids) {
    int nmaps = shared ? 1 : j->nsides, oom = 0;
    ss_vocab **maps = calloc((size_t)threads * 2, sizeof *maps);
    size_t budget = ids ? ids_budget() : 0, kept = 0;
    counts[0] = counts[1] = NULL;
    if (ids && maps) {
        ids->nmaps = 2 * threads;
        ids->remap = calloc((size_t)ids->nmaps, sizeof *ids->remap);
        ids->nremap = calloc((size_t)ids->nmaps, sizeof *ids->nremap);
    }
    if (!maps || (ids && (!ids->remap || !ids->nremap))) {
        free(maps);
        return ss_conv_error(c, "out of memory");
    }
    for (int t = 0; t < threads; t++)
        for (int m = 0; m < nmaps; m++)
            if (ss_vocab_new(&maps[2 * t + m])) oom = 1;
    if (!oom) {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
        for (size_t b = 0; b < j->nblocks; b++) {
            int t = omp_get_thread_num();
            const tx_block *bl = &j->blocks[b];
            if (bl->other_shard) continue; /* --count-only: this shard's words */
            for (int sd = 0; sd < j->nsides; sd++) {
                if (skip[sd]) continue;
                int o = 0, m = 2 * t + (shared ? 0 : sd);
                size_t sofar;
#pragma omp atomic read
                sofar = kept;
                tx_blockids *bi = ids && sofar < budget ? &ids->blocks[2 * b + (size_t)sd] : NULL;
                if (bi) bi->map = m;
                count_range(j, side_input(j, bl, sd), bl->start[sd], bl->end[sd], maps[m], bi, &o);
                if (bi) {
                    size_t add = (bi->tok_cap + 2 * bi->nex_cap) * sizeof(uint32_t);
#pragma omp atomic update
                    kept += add;
                }
                if (o) {
#pragma omp atomic write
                    oom = 1;
                }
            }
        }
    }
    if (!oom && merge_maps(maps, threads, nmaps, ids)) oom = 1;
    for (int k = 0; k < 2 * threads; k++)
        if (oom || k >= nmaps) {
            ss_vocab_free(maps[k]);
            maps[k] = NULL;
        }
    counts[0] = maps[0];
    counts[1] = maps[1];
    free(maps);
    return oom ? ss_conv_error(c, "out of memory while counting words") : 0;
}

int tx_count_words(ss_conv *c, const tx_job *j, int threads, int shared, const int skip[2],
                   ss_vocab *counts[2]) {
    return count_words(c, j, threads, shared, skip, counts, NULL);
}

/* tx_vocabs_from_counts(); with `ids`, ids[m] (allocated here) also gets the
 * id of each entry of counts[m] (ss_vocab_build_ids()), NULL for the maps
 * not built. */
static int build_vocabs(ss_conv *c, ss_vocab *counts[2], uint64_t min_count, uint64_t max_vocab,
                        int shared, const int skip[2], ss_vocab *vocab[2], uint32_t *ids[2]) {
    int nmaps = shared ? 1 : 2, oom = 0;
    vocab[0] = vocab[1] = NULL;
    for (int m = 0; m < nmaps && !oom; m++) {
        if ((skip[m] && !shared) || !counts[m]) continue;
        uint64_t n = ss_vocab_entries(counts[m]);
        if (ids && !(ids[m] = malloc((n ? n : 1) * sizeof *ids[m])))
            oom = 1;
        else if (ss_vocab_build_ids(&vocab[m], counts[m], min_count, max_vocab,
                                    ids ? ids[m] : NULL))
            oom = 1;
    }
    if (!oom) return 0;
    ss_vocab_free(vocab[0]);
    ss_vocab_free(vocab[1]);
    vocab[0] = vocab[1] = NULL;
    return ss_conv_error(c, "out of memory while building the vocabulary");
}

int tx_vocabs_from_counts(ss_conv *c, ss_vocab *counts[2], uint64_t min_count, uint64_t max_vocab,
                          int shared, const int skip[2], ss_vocab *vocab[2]) {
    return build_vocabs(c, counts, min_count, max_vocab, shared, skip, vocab, NULL);
}

/* ids->remap[k] for every map k (2t + m of thread t): entry number -> id in
 * the vocabulary of map m (a side, or 0 when shared), <unk> for words the
 * vocabulary dropped: the ids of counts[m]'s entries (ss_vocab_build_ids(),
 * taken over), and for t > 0 those of the entries the merge put each word
 * into. No word is looked up. */
static void remap_maps(tx_wordids *ids, uint32_t *built[2]) {
    for (int m = 0; m < 2; m++) {
        free(ids->remap[m]);
        ids->remap[m] = built[m];
    }
    for (int k = 2; k < ids->nmaps; k++) {
        uint32_t *to = ids->remap[k];
        const uint32_t *id = ids->remap[k % 2];
        if (!to) continue;
        if (!id) { /* a side not counted */
            free(to);
            ids->remap[k] = NULL;
            continue;
        }
        uint64_t n = ids->nremap[k];
        for (uint64_t e = 0; e < n; e++) to[e] = id[to[e]];
    }
}

int tx_build_vocabs(ss_conv *c, tx_job *j, int threads, uint64_t min_count, uint64_t max_vocab,
                    int shared, const int skip[2], ss_vocab *vocab[2]) {
    ss_vocab *counts[2];
    uint32_t *built[2] = {NULL, NULL};
    vocab[0] = vocab[1] = NULL;
    tx_wordids_free(j);
    j->ids = calloc(1, sizeof *j->ids);
    if (!j->ids || !(j->ids->blocks = calloc(2 * j->nblocks + 1, sizeof *j->ids->blocks))) {
        tx_wordids_free(j);
        return ss_conv_error(c, "out of memory");
    }
    int rc = count_words(c, j, threads, shared, skip, counts, j->ids);
    if (!rc) rc = build_vocabs(c, counts, min_count, max_vocab, shared, skip, vocab, built);
    if (!rc) {
        remap_maps(j->ids, built);
    } else {
        free(built[0]);
        free(built[1]);
        tx_wordids_free(j);
    }
    ss_vocab_free(counts[0]);
    ss_vocab_free(counts[1]);
    return rc;
}

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
        tx_process_block(p->j, &p->j->blocks[i], &p->slots[k]);
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

/* The items of a block appended at once (ss_conv_append_many()) when they
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
        if (!n) return ss_conv_error(c, "out of memory");
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
    return ss_conv_append_many(c, s->nitems, data, lengths, side_input(j, b, 0)->source, cur->lines,
                               b->start[0]);
}

/* Append the items of one processed block, in order. */
static int consume(ss_conv *c, const tx_job *j, const tx_block *b, const tx_slot *s,
                   tx_cursor *cur) {
    if (s->oom) return ss_conv_error(c, "out of memory");
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
                if (it->bad[sd] && ss_conv_bad(c, side_input(j, b, sd)->path, line, "%s",
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
                                  ? (const void *)(side_input(j, b, sd)->data + it->off[sd])
                                  : (const void *)(s->tok[sd] + it->off[sd] * j->tok[sd].esize);
        }
        if (ss_conv_append_at(c, values, side_input(j, b, 0)->source, line, b->start[0])) return 1;
    }
    cur->base_line += s->nlines;
    uint64_t bytes = 0;
    for (int sd = 0; sd < j->nsides; sd++) bytes += b->end[sd] - b->start[sd];
    ss_conv_progress(c, bytes);
    return 0;
}

static int run_serial(ss_conv *c, const tx_job *j, tx_cursor *cur) {
    tx_slot s;
    memset(&s, 0, sizeof s);
    int rc = 0;
    for (size_t i = 0; i < j->nblocks && !rc; i++) {
        tx_process_block(j, &j->blocks[i], &s);
        rc = consume(c, j, &j->blocks[i], &s, cur);
    }
    tx_slot_free(&s);
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
        return ss_conv_error(c, "out of memory");
    }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.done, NULL);
    pthread_cond_init(&p.freed, NULL);
    int started = 0, rc = 0;
    for (; started < threads; started++)
        if (pthread_create(&tid[started], NULL, worker, &p)) break;
    if (!started) rc = ss_conv_error(c, "cannot start threads");
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
    for (size_t k = 0; k < p.nslots; k++) tx_slot_free(&p.slots[k]);
    pthread_cond_destroy(&p.done);
    pthread_cond_destroy(&p.freed);
    pthread_mutex_destroy(&p.mu);
    free(p.slots);
    free(p.slot_block);
    free(p.slot_state);
    free(tid);
    return rc;
}

static int set_text_attr(ss_conv *c, const char *name, const char *text) {
    return ss_conv_set_attr(c, name, SS_ATTR_TEXT, text, strlen(text));
}

static int write_text_attrs(ss_conv *c, const tx_job *j) {
    char name[SS_MAX_NAME + 16];
    for (int sd = 0; sd < j->nsides; sd++) {
        const tx_tok *t = &j->tok[sd];
        snprintf(name, sizeof name, "%s.tokens", j->field[sd]);
        if (set_text_attr(c, name, tx_kind_name(t->kind))) return 1;
        if (t->bos_on) {
            snprintf(name, sizeof name, "%s.bos", j->field[sd]);
            if (ss_conv_set_attr(c, name, SS_U32, &t->bos, sizeof t->bos)) return 1;
        }
        if (t->eos_on) {
            snprintf(name, sizeof name, "%s.eos", j->field[sd]);
            if (ss_conv_set_attr(c, name, SS_U32, &t->eos, sizeof t->eos)) return 1;
        }
        if (t->kind == TX_IDS && t->vocab_size) {
            snprintf(name, sizeof name, "%s.vocab_size", j->field[sd]);
            if (ss_conv_set_attr(c, name, SS_U64, &t->vocab_size, sizeof t->vocab_size)) return 1;
        }
        if (t->kind == TX_SPM && tx_spm_attrs(c, t, j->field[sd], j->vocab_attr[sd], t->spm_model))
            return 1;
        if (t->kind == TX_WORDS && j->vocab_attr[sd]) {
            size_t size;
            char *text = ss_vocab_text(t->vocab, &size);
            if (!text) return ss_conv_error(c, "out of memory");
            /* text is UTF-8 by the spec: a vocabulary with other bytes is stored as bytes */
            int utf8 = ss_utf8_valid((const uint8_t *)text, size);
            uint32_t type = utf8 ? SS_ATTR_TEXT : SS_ATTR_BYTES;
            int rc = ss_conv_set_attr(c, j->vocab_attr[sd], type, text, size);
            free(text);
            if (rc) return 1;
        }
    }
    return 0;
}

int tx_run(ss_conv *c, tx_job *j) {
    ss_field fields[2];
    for (int sd = 0; sd < j->nsides; sd++)
        fields[sd] = (ss_field){.name = j->field[sd], .dtype = j->tok[sd].dtype, .sequence = 1};
    ss_schema schema = {(uint32_t)j->nsides, fields};
    tx_cursor cur = {0, 0, UINT32_MAX, NULL, NULL, 0, 0};
    if (tx_shard_blocks(c, j) || ss_conv_begin(c, &schema, &cur.skip)) return 1;
    if (write_text_attrs(c, j)) return 1;
    uint64_t total = 0;
    for (uint32_t i = 0; i < j->ninputs; i++) total += j->inputs[i].ok ? j->inputs[i].size : 0;
    ss_conv_set_total(c, total);
    int threads = ss_conv_opts(c)->threads, rc;
    if (threads <= 1 || j->nblocks <= 1) {
        rc = run_serial(c, j, &cur);
    } else if (ss__writer_background(ss_conv_writer(c))) {
        rc = ss_conv_ss_error(c, "cannot write to '%s'", ss_conv_opts(c)->output);
    } else {
        /* the thread that appends also commits: on a second core, the commits
         * (LMDB's copies into its pages and into the page cache) overlap the
         * appends that follow */
        rc = run_threads(c, j, threads, &cur);
    }
    if (!rc && j->skip_empty)
        ss_conv_skipped(c, cur.skipped, j->mode == TX_LINES ? "blank line" : "blank document",
                        "--skip-empty");
    free(cur.lens);
    free(cur.lines);
    return rc;
}

/* ------------------------------------------------------- convert text */

/* The inputs freed (j->inputs taken). */
typedef struct tx_inputs {
    tx_input *inputs;
    uint32_t n;
    int trim; /* on a thread of its own: also malloc_trim() */
} tx_inputs;

static void *free_inputs(void *arg) {
    tx_inputs *in = arg;
    int trim = in->trim;
    for (uint32_t i = 0; i < in->n; i++) tx_input_release(&in->inputs[i]);
    free(in->inputs);
    free(in);
#ifdef __GLIBC__
    /* the heap the passes freed (words kept, maps merged), given back here
     * rather than torn down when the process exits: -4 ms at the end of
     * 100 MB of words on 2 threads */
    if (trim) malloc_trim(0);
#else
    (void)trim;
#endif
    return NULL;
}

/* Free j's inputs after a conversion, with --threads > 1 while the store is
 * finished (ss_conv_later()): unmapping 100 MB of text takes ~5 ms. */
static void release_inputs(ss_conv *c, tx_job *j) {
    tx_inputs *in = malloc(sizeof *in);
    if (in) *in = (tx_inputs){j->inputs, j->ninputs, ss_conv_opts(c)->threads > 1};
    if (in) ss_conv_later(c, free_inputs, in);
    for (uint32_t i = 0; !in && i < j->ninputs; i++) tx_input_release(&j->inputs[i]);
    if (!in) free(j->inputs);
    j->inputs = NULL;
    j->ninputs = 0;
}

int tx_text_convert(ss_conv *c, const tx_text_options *o) {
    tx_job j;
    memset(&j, 0, sizeof j);
    j.nsides = 1;
    j.field[0] = "tokens";
    j.mode = o->mode;
    j.sep = o->sep;
    j.seplen = o->sep ? strlen(o->sep) : 0;
    j.skip_empty = o->skip_empty;
    j.tok[0].kind = o->kind;
    j.tok[0].bos_on = o->bos;
    j.tok[0].eos_on = o->eos;
    j.tok[0].vocab_size = o->vocab_size;
    j.vocab_attr[0] = "vocab";
    int rc = 1;
    ss_vocab *vocab = NULL;
    ss_spm *spm = NULL;
    if (o->kind == TX_SPM && tx_spm_load(c, &spm, o->spm_model)) return 1;
    j.tok[0].spm = spm;
    j.tok[0].spm_model = o->spm_model;
    j.inputs = calloc((size_t)o->ninputs, sizeof *j.inputs);
    if (!j.inputs) {
        ss_spm_free(spm);
        return ss_conv_error(c, "out of memory");
    }
    j.ninputs = (uint32_t)o->ninputs;
    for (int i = 0; i < o->ninputs; i++) {
        char err[256];
        uint32_t src = ss_conv_add_source(c, o->inputs[i]);
        if (tx_input_load(&j.inputs[i], o->inputs[i], err, sizeof err)) {
            j.inputs[i].path = o->inputs[i];
            if (ss_conv_bad(c, o->inputs[i], 0, "%s", err)) goto done;
            continue;
        }
        j.inputs[i].source = src;
        j.inputs[i].ok = 1;
    }
    if (tx_split(&j)) {
        rc = ss_conv_error(c, "out of memory");
        goto done;
    }
    if (o->count_only) {
        int skip[2] = {0, 1};
        rc = tx_write_counts(c, &j, ss_conv_opts(c)->threads, 0, skip);
        goto done;
    }
    if (o->kind == TX_WORDS) {
        if (o->ncounts) {
            ss_vocab *counts[2], *v[2];
            int skip[2] = {0, 1};
            if (tx_read_counts(c, &j, 0, skip, o->counts, o->ncounts, counts)) goto done;
            int r = tx_vocabs_from_counts(c, counts, o->min_count, o->max_vocab, 0, skip, v);
            ss_vocab_free(counts[0]);
            ss_vocab_free(counts[1]);
            if (r) goto done;
            vocab = v[0];
        } else if (o->vocab_from) {
            if (tx_vocab_load(c, &vocab, o->vocab_from, "tokens")) goto done;
        } else if (ss_conv_opts(c)->append) {
            if (tx_vocab_load(c, &vocab, ss_conv_opts(c)->output, "tokens")) goto done;
        } else {
            ss_vocab *v[2];
            int skip[2] = {0, 1};
            if (tx_build_vocabs(c, &j, ss_conv_opts(c)->threads, o->min_count, o->max_vocab, 0,
                                skip, v))
                goto done;
            vocab = v[0];
        }
        j.tok[0].vocab = vocab;
    }
    rc = tx_prepare_tokens(c, &j.tok[0], "tokens");
    if (!rc) rc = tx_run(c, &j);
done:
    release_inputs(c, &j);
    tx_wordids_free(&j);
    free(j.blocks);
    ss_vocab_free(vocab);
    ss_spm_free(spm);
    return rc;
}

static void text_usage(FILE *out) {
    fputs("usage: seqstore convert text FILE... -o STORE [options]\n"
          "One example per line (default) or per document; FILE may be '-' (stdin) or\n"
          "*.gz. Lines end at '\\n'.\n"
          "  --tokens KIND     bytes (u8, default) | chars (Unicode code points, u32) |\n"
          "                    words (whitespace-separated, vocabulary built in a first\n"
          "                    pass) | ids (integer token ids, e.g. from BPE)\n"
          "  --tokenizer spm:MODEL  subword ids of a SentencePiece model (as spm_encode);\n"
          "                    --bos/--eos use the model's ids; attribute 'vocab' holds\n"
          "                    its pieces, 'tokens.eod_id' etc. its special ids\n"
          "  --docs            one example per document: documents are separated by\n"
          "                    one or more blank lines\n"
          "  --doc-sep LINE    every line equal to LINE ends a document, so two in a\n"
          "                    row make an empty one (kept); the last document needs\n"
          "                    no LINE after it (e.g. --doc-sep % for fortune files)\n"
          "  --skip-empty      skip blank (empty or whitespace-only) lines or\n"
          "                    documents; the summary says how many\n"
          "  --bos, --eos      add a begin / end of sequence token to every example\n"
          "                    (bytes: 256/257 and u16; chars: 0x110000/0x110001;\n"
          "                    ids: vocab-size and after; words: <bos>/<eos>)\n"
          "words:\n"
          "  --min-count N     keep words seen at least N times (default 1)\n"
          "  --max-vocab N     at most N tokens including <pad>=0 <unk>=1 <bos>=2 <eos>=3\n"
          "  --vocab FROM      reuse the vocabulary of store FROM (attribute 'vocab') or\n"
          "                    of a text file with one token per line (id = line - 1)\n"
          "  --count-only      write the word counts of this --shard K/N (all without\n"
          "                    --shard) to -o FILE instead of a store (job arrays:\n"
          "                    -o counts/K.counts)\n"
          "  --counts PATH     build the vocabulary from the counts files PATH (a file,\n"
          "                    or a directory: its *.counts files; repeatable) instead\n"
          "                    of counting: they must cover shards 0..N-1 of these\n"
          "                    inputs and options, and the vocabulary (with --min-count,\n"
          "                    --max-vocab) is then that of a single-process run\n"
          "ids:\n"
          "  --vocab-size N    every id must be < N; the dtype is the smallest that\n"
          "                    holds N (plus --bos/--eos); without it, u32\n"
          "The store gets field 'tokens' and attributes 'tokens.tokens' (the KIND),\n"
          "'vocab' (words: one token per line in id order), 'tokens.bos'/'tokens.eos'.\n",
          out);
}

/* Parse the options of `convert text`; returns 0 or 2. */
static int parse_text_options(ss_conv *c, int argc, char **argv, tx_text_options *o) {
    memset(o, 0, sizeof *o);
    o->min_count = 1;
    o->inputs = calloc((size_t)argc + 1, sizeof *o->inputs);
    o->counts = calloc((size_t)argc + 1, sizeof *o->counts);
    if (!o->inputs || !o->counts) return ss_conv_error(c, "out of memory");
    int only_files = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int k;
        if (only_files || a[0] != '-' || !strcmp(a, "-")) {
            o->inputs[o->ninputs++] = argv[i];
        } else if (!strcmp(a, "--")) {
            only_files = 1;
        } else if (!strcmp(a, "--tokens")) {
            if (!v || (o->kind = tx_parse_kind(v)) < 0)
                return ss_conv_usage_error(c, "--tokens needs bytes, chars, words or ids");
            i++;
        } else if (!strcmp(a, "--tokenizer")) {
            if (tx_spm_option(c, v, &o->spm_model)) return 2;
            o->kind = TX_SPM;
            i++;
        } else if (!strcmp(a, "--docs")) {
            o->mode = TX_DOCS_BLANK;
        } else if (!strcmp(a, "--doc-sep")) {
            if (!v) return ss_conv_usage_error(c, "--doc-sep needs a separator line");
            o->mode = *v ? TX_DOCS_SEP : TX_DOCS_BLANK;
            o->sep = v;
            if (strchr(v, '\n')) return ss_conv_usage_error(c, "--doc-sep: one line only");
            i++;
        } else if (!strcmp(a, "--skip-empty")) {
            o->skip_empty = 1;
        } else if (!strcmp(a, "--bos")) {
            o->bos = 1;
        } else if (!strcmp(a, "--eos")) {
            o->eos = 1;
        } else if ((k = tx_parse_count_option(c, a, v, &o->min_count, &o->max_vocab,
                                              &o->vocab_size)) != 0) {
            if (k == 2) return 2;
            i++;
        } else if (!strcmp(a, "--vocab")) {
            if (!v) return ss_conv_usage_error(c, "--vocab needs a store or a file");
            o->vocab_from = v;
            i++;
        } else if (!strcmp(a, "--count-only")) {
            o->count_only = 1;
        } else if (!strcmp(a, "--counts")) {
            if (!v) return ss_conv_usage_error(c, "--counts needs a counts file or directory");
            o->counts[o->ncounts++] = v;
            i++;
        } else {
            return ss_conv_usage_error(c, "unknown option '%s'", a);
        }
    }
    if (!o->ninputs) return ss_conv_usage_error(c, "no input file");
    if (o->spm_model && o->kind != TX_SPM)
        return ss_conv_usage_error(c, "--tokenizer and --tokens exclude each other");
    if (o->kind != TX_WORDS && (o->vocab_from || o->max_vocab || o->min_count != 1))
        return ss_conv_usage_error(c, "--vocab, --min-count and --max-vocab need --tokens words");
    if (o->kind != TX_IDS && o->vocab_size)
        return ss_conv_usage_error(c, "--vocab-size needs --tokens ids");
    if (o->vocab_from && (o->max_vocab || o->min_count != 1))
        return ss_conv_usage_error(c, "--vocab excludes --min-count and --max-vocab");
    if (o->kind == TX_IDS && (o->bos || o->eos) && !o->vocab_size)
        return ss_conv_usage_error(c, "--bos/--eos with --tokens ids need --vocab-size");
    return tx_check_count_options(c, o->kind == TX_WORDS, o->count_only, o->ncounts,
                                  o->vocab_from != NULL);
}

static int run_text(ss_conv *c, int argc, char **argv) {
    tx_text_options o;
    int rc = parse_text_options(c, argc, argv, &o);
    if (!rc) rc = tx_text_convert(c, &o);
    free(o.inputs);
    free(o.counts);
    return rc;
}

int tx_check_count_options(ss_conv *c, int words, int count_only, int ncounts, int vocab_from) {
    if ((count_only || ncounts) && !words)
        return ss_conv_usage_error(c, "--count-only and --counts need --tokens words");
    if (count_only && ncounts) return ss_conv_usage_error(c, "--count-only excludes --counts");
    if ((count_only || ncounts) && vocab_from)
        return ss_conv_usage_error(c, "--count-only and --counts exclude --vocab");
    if (ncounts && ss_conv_opts(c)->append) /* the store's vocabulary is kept */
        return ss_conv_usage_error(c, "--counts excludes --append (it keeps the store's "
                                      "vocabulary)");
    if (count_only && (ss_conv_opts(c)->append || ss_conv_opts(c)->resume))
        return ss_conv_usage_error(c, "--count-only writes a counts file; it excludes --append "
                                      "and --resume");
    return 0;
}

const ss_converter ss_converter_text = {
    "text", "text corpora: one example per line or document; bytes, chars, words or ids", run_text,
    text_usage};

int tx_parse_count_option(ss_conv *c, const char *a, const char *v, uint64_t *min_count,
                          uint64_t *max_vocab, uint64_t *vocab_size) {
    int rc;
    if (!strcmp(a, "--min-count"))
        rc = ss_conv_parse_u64(c, a, v, 1, UINT64_MAX, min_count);
    else if (!strcmp(a, "--max-vocab"))
        rc = ss_conv_parse_u64(c, a, v, SS_VOCAB_NSPECIAL + 1, UINT32_MAX, max_vocab);
    else if (!strcmp(a, "--vocab-size"))
        rc = ss_conv_parse_u64(c, a, v, 1, (uint64_t)UINT32_MAX - 1, vocab_size);
    else
        return 0;
    return rc ? 2 : 1;
}
