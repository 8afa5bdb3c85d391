/* SPDX-License-Identifier: BSD-2-Clause */
/* vocab.c - word counting and vocabularies (see vocab.h). */
#include "vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A word: its bytes and count (counting) or id (vocabulary). 24 bytes: the
 * hash is not kept (the slot holds its high half; growing recomputes it). */
typedef struct entry {
    const uint8_t *key;
    uint64_t val;
    uint32_t len;
} entry;

/* Counted words' bytes, copied together: the map owns them (counts read
 * from a file outlive it; see wordcounts.c), and a lookup that finds a
 * matching hash compares bytes in a few cache lines rather than at the
 * word's first occurrence somewhere in a large mapped input. */
typedef struct arena {
    struct arena *next;
    size_t used, cap;
    uint8_t data[];
} arena;

#define SS_ARENA_BLOCK (256u << 10)

/* The table is open addressing over 8-byte slots: the hash's high 32 bits
 * and 1 + the index of the word in the dense `ents` array (0 = empty). Small
 * slots and dense entries (in insertion order, which is roughly frequency
 * order; id order in a vocabulary) keep the table small; the slot loads
 * are still about half of the time of --tokens words (perf, 20,000 words). */
struct ss_vocab {
    uint64_t *slots;
    uint64_t cap; /* slots; a power of two, at least 4/3 of nents */
    entry *ents;
    uint64_t nents, ents_cap;
    uint64_t nids; /* vocabularies: ids are 0..nids-1, ents[id] */
    char *owned;   /* vocabularies: the token bytes */
    arena *arena;  /* counts: the words' bytes; the head block is filling */
};

static const char *const specials[SS_VOCAB_NSPECIAL] = {"<pad>", "<unk>", "<bos>", "<eos>"};

int ss_vocab_new(ss_vocab **out) {
    ss_vocab *v = calloc(1, sizeof *v);
    *out = NULL;
    if (!v) return -1;
    v->cap = 1024;
    v->slots = calloc(v->cap, sizeof *v->slots);
    if (!v->slots) {
        free(v);
        return -1;
    }
    *out = v;
    return 0;
}

void ss_vocab_free(ss_vocab *v) {
    if (!v) return;
    while (v->arena) {
        arena *next = v->arena->next;
        free(v->arena);
        v->arena = next;
    }
    free(v->slots);
    free(v->ents);
    free(v->owned);
    free(v);
}

static inline int same_bytes(const uint8_t *a, const uint8_t *b, size_t n) {
    if (n > 16) return !memcmp(a, b, n);
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* The slot of [w, w + len): the word's, or the empty one where it goes. */
static uint64_t find(const ss_vocab *v, const uint8_t *w, size_t len, uint64_t h) {
    uint64_t mask = v->cap - 1, tag = h >> 32;
    for (uint64_t i = h & mask;; i = (i + 1) & mask) {
        uint64_t s = v->slots[i];
        if (!s) return i;
        if (s >> 32 != tag) continue;
        const entry *e = &v->ents[(uint32_t)s - 1];
        if (e->len == len && same_bytes(e->key, w, len)) return i;
    }
}

static const entry *found(const ss_vocab *v, uint64_t slot) {
    uint64_t s = v->slots[slot];
    return s ? &v->ents[(uint32_t)s - 1] : NULL;
}

static int grow(ss_vocab *v) {
    uint64_t cap = v->cap * 2;
    uint64_t *s = calloc(cap, sizeof *s);
    if (!s) return -1;
    for (uint64_t k = 0; k < v->nents; k++) {
        uint64_t h = ss_vocab_hash(v->ents[k].key, v->ents[k].len), j = h & (cap - 1);
        while (s[j]) j = (j + 1) & (cap - 1);
        s[j] = (h >> 32) << 32 | (k + 1);
    }
    free(v->slots);
    v->slots = s;
    v->cap = cap;
    return 0;
}

/* A copy of [w, w + len) in v's arena, or NULL out of memory. A word larger
 * than a block gets a block of its own behind the filling one. */
static const uint8_t *arena_copy(ss_vocab *v, const uint8_t *w, size_t len) {
    arena *a = v->arena;
    if (!a || a->cap - a->used < len) {
        size_t cap = len > SS_ARENA_BLOCK ? len : SS_ARENA_BLOCK;
        arena *b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->used = 0;
        b->cap = cap;
        if (a && len > SS_ARENA_BLOCK) { /* keep filling the current block */
            b->next = a->next;
            a->next = b;
        } else {
            b->next = a;
            v->arena = b;
        }
        a = b;
    }
    uint8_t *p = a->data + a->used;
    if (len) memcpy(p, w, len);
    a->used += len;
    return p;
}

/* Insert or find; *fresh says whether it was inserted (val = 0). `copy`:
 * the map keeps its own copy of the bytes (counting), else borrows them. */
static entry *insert(ss_vocab *v, const uint8_t *w, size_t len, uint64_t h, int *fresh, int copy) {
    uint64_t i = find(v, w, len, h);
    *fresh = 0;
    if (v->slots[i]) return &v->ents[(uint32_t)v->slots[i] - 1];
    if (v->nents >= UINT32_MAX - 1 || len > UINT32_MAX) return NULL;
    if ((v->nents + 1) * 4 > v->cap * 3) { /* load <= 3/4: 8 slots per cache line */
        if (grow(v)) return NULL;
        i = find(v, w, len, h);
    }
    if (v->nents == v->ents_cap) {
        uint64_t n = v->ents_cap ? 2 * v->ents_cap : 256;
        entry *g = realloc(v->ents, n * sizeof *g);
        if (!g) return NULL;
        v->ents = g;
        v->ents_cap = n;
    }
    if (copy && !(w = arena_copy(v, w, len))) return NULL;
    entry *e = &v->ents[v->nents++];
    e->key = w ? w : (const uint8_t *)"";
    e->len = (uint32_t)len;
    e->val = 0;
    v->slots[i] = (h >> 32) << 32 | v->nents;
    *fresh = 1;
    return e;
}

int ss_vocab_count(ss_vocab *v, const uint8_t *w, size_t len, uint64_t n) {
    return ss_vocab_count_h(v, w, len, ss_vocab_hash(w, len), n);
}

int ss_vocab_count_h(ss_vocab *v, const uint8_t *w, size_t len, uint64_t hash, uint64_t n) {
    int fresh;
    entry *e = insert(v, w, len, hash, &fresh, 1);
    if (!e) return -1;
    e->val += n;
    return 0;
}

int ss_vocab_count_at(ss_vocab *v, const uint8_t *w, size_t len, uint64_t hash, uint64_t n,
                      uint32_t *entry_no) {
    int fresh;
    entry *e = insert(v, w, len, hash, &fresh, 1);
    if (!e) return -1;
    e->val += n;
    *entry_no = (uint32_t)(e - v->ents); /* < UINT32_MAX - 1 (insert) */
    return 0;
}

/* Fetch the table memory of the n words (slot, entry, key bytes), each
 * stage for all words before the next, so that their misses overlap. */
static void prefetch_words(const ss_vocab *v, size_t n, const uint64_t *hash) {
    uint64_t mask = v->cap - 1;
    for (size_t i = 0; i < n; i++) __builtin_prefetch(&v->slots[hash[i] & mask]);
    for (size_t i = 0; i < n; i++) {
        uint64_t s = v->slots[hash[i] & mask];
        if (s && s >> 32 == hash[i] >> 32) __builtin_prefetch(&v->ents[(uint32_t)s - 1]);
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t s = v->slots[hash[i] & mask];
        if (s && s >> 32 == hash[i] >> 32) __builtin_prefetch(v->ents[(uint32_t)s - 1].key);
    }
}

int ss_vocab_count_batch(ss_vocab *v, size_t n, const uint8_t *const *w, const uint32_t *len,
                         const uint64_t *hash, uint32_t *entry_no) {
    /* Three dependent cache misses per word (slot, entry, key bytes) were
     * most of the counting time; fetched for the batch first, they overlap.
     * The loads are hints only: the inserts below redo them (and grow). */
    prefetch_words(v, n, hash);
    for (size_t i = 0; i < n; i++)
        if (ss_vocab_count_at(v, w[i], len[i], hash[i], 1, &entry_no[i])) return -1;
    return 0;
}

const uint8_t *ss_vocab_entry(const ss_vocab *v, uint64_t k, size_t *len) {
    if (k >= v->nents) return NULL;
    *len = v->ents[k].len;
    return v->ents[k].key;
}

int64_t ss_vocab_lookup_h(const ss_vocab *v, const uint8_t *w, size_t len, uint64_t hash) {
    const entry *e = found(v, find(v, w, len, hash));
    return e ? (int64_t)e->val : -1;
}

int ss_vocab_merge(ss_vocab *into, const ss_vocab *from) {
    for (uint64_t k = 0; k < from->nents; k++) {
        const entry *f = &from->ents[k];
        int fresh;
        entry *e = insert(into, f->key, f->len, ss_vocab_hash(f->key, f->len), &fresh, 1);
        if (!e) return -1;
        e->val += f->val;
    }
    return 0;
}

uint64_t ss_vocab_entries(const ss_vocab *v) {
    return v->nents;
}

static int is_special(const entry *e) {
    for (int k = 0; k < SS_VOCAB_NSPECIAL; k++)
        if (e->len == strlen(specials[k]) && !memcmp(e->key, specials[k], e->len)) return 1;
    return 0;
}

/* Most frequent first; ties by bytes, then by length (a prefix first). */
static int by_count(const void *pa, const void *pb) {
    const entry *a = *(const entry *const *)pa, *b = *(const entry *const *)pb;
    if (a->val != b->val) return a->val > b->val ? -1 : 1;
    uint32_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->key, b->key, n);
    if (c) return c;
    return a->len < b->len ? -1 : a->len > b->len;
}

/* Make `v` (empty) a vocabulary of the tokens tok[0..n) (borrowed), copying
 * their bytes into v->owned. Returns the index of a duplicate + 1, or -1. */
static int64_t fill(ss_vocab *v, const uint8_t *const *tok, const uint32_t *len, uint64_t n) {
    size_t total = 1;
    for (uint64_t i = 0; i < n; i++) total += len[i];
    v->owned = malloc(total);
    v->ents = malloc((n ? n : 1) * sizeof *v->ents);
    if (!v->owned || !v->ents) return -1;
    v->ents_cap = n ? n : 1;
    while (v->cap * 3 < 4 * (n + 1)) v->cap *= 2;
    free(v->slots);
    v->slots = calloc(v->cap, sizeof *v->slots);
    if (!v->slots) return -1;
    size_t off = 0;
    for (uint64_t i = 0; i < n; i++) {
        memcpy(v->owned + off, tok[i], len[i]);
        const uint8_t *key = (const uint8_t *)v->owned + off;
        off += len[i];
        int fresh;
        entry *e = insert(v, key, len[i], ss_vocab_hash(key, len[i]), &fresh, 0);
        if (!e) return -1;
        if (!fresh) return (int64_t)i + 1;
        e->val = i; /* ents[i]: ids are in insertion order */
    }
    v->nids = n;
    return 0;
}

int ss_vocab_build(ss_vocab **out, const ss_vocab *counts, uint64_t min_count, uint64_t max_size) {
    *out = NULL;
    const entry **words = malloc((counts->nents ? counts->nents : 1) * sizeof *words);
    uint64_t n = 0;
    if (!words) return -1;
    for (uint64_t i = 0; i < counts->nents; i++) {
        const entry *e = &counts->ents[i];
        if (e->val >= min_count && !is_special(e)) words[n++] = e;
    }
    qsort(words, n, sizeof *words, by_count);
    uint64_t total = SS_VOCAB_NSPECIAL + n;
    if (max_size && total > max_size)
        total = max_size < SS_VOCAB_NSPECIAL ? SS_VOCAB_NSPECIAL : max_size;
    const uint8_t **tok = malloc(total * sizeof *tok);
    uint32_t *len = malloc(total * sizeof *len);
    ss_vocab *v = NULL;
    int rc = -1;
    if (tok && len && ss_vocab_new(&v) == 0) {
        for (uint64_t i = 0; i < total; i++) {
            if (i < SS_VOCAB_NSPECIAL) {
                tok[i] = (const uint8_t *)specials[i];
                len[i] = (uint32_t)strlen(specials[i]);
            } else {
                tok[i] = words[i - SS_VOCAB_NSPECIAL]->key;
                len[i] = words[i - SS_VOCAB_NSPECIAL]->len;
            }
        }
        rc = fill(v, tok, len, total) == 0 ? 0 : -1;
    }
    free(words);
    free(tok);
    free(len);
    if (rc) {
        ss_vocab_free(v);
        return -1;
    }
    *out = v;
    return 0;
}

int ss_vocab_parse(ss_vocab **out, const char *text, size_t size, char *err, size_t errlen) {
    *out = NULL;
    uint64_t n = 0;
    for (size_t i = 0; i < size; i++) n += text[i] == '\n';
    if (size && text[size - 1] != '\n') n++;
    const uint8_t **tok = malloc((n ? n : 1) * sizeof *tok);
    uint32_t *len = malloc((n ? n : 1) * sizeof *len);
    ss_vocab *v = NULL;
    int rc = -1;
    if (!tok || !len || ss_vocab_new(&v)) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    const char *p = text, *end = text + size;
    for (uint64_t i = 0; i < n; i++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        size_t l = (size_t)(e - p);
        if (l && p[l - 1] == '\r') l--;
        if (!l) {
            snprintf(err, errlen, "line %llu: empty token", (unsigned long long)i + 1);
            goto done;
        }
        for (size_t j = 0; j < l; j++)
            if (p[j] == ' ' || p[j] == '\t' || p[j] == '\r' || p[j] == '\v' || p[j] == '\f') {
                snprintf(err, errlen, "line %llu: token contains whitespace",
                         (unsigned long long)i + 1);
                goto done;
            }
        if (l > UINT32_MAX) {
            snprintf(err, errlen, "line %llu: token too long", (unsigned long long)i + 1);
            goto done;
        }
        tok[i] = (const uint8_t *)p;
        len[i] = (uint32_t)l;
        p = nl ? nl + 1 : end;
    }
    int64_t dup = fill(v, tok, len, n);
    if (dup > 0) {
        snprintf(err, errlen, "line %lld: duplicate token '%.*s'", (long long)dup,
                 (int)(len[dup - 1] < 64 ? len[dup - 1] : 64), (const char *)tok[dup - 1]);
        goto done;
    }
    if (dup < 0) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    rc = 0;
done:
    free(tok);
    free(len);
    if (rc) {
        ss_vocab_free(v);
        return -1;
    }
    *out = v;
    return 0;
}

int64_t ss_vocab_lookup(const ss_vocab *v, const uint8_t *w, size_t len) {
    return ss_vocab_lookup_h(v, w, len, ss_vocab_hash(w, len));
}

uint64_t ss_vocab_size(const ss_vocab *v) {
    return v->nids;
}

const uint8_t *ss_vocab_token(const ss_vocab *v, uint64_t id, size_t *len) {
    if (id >= v->nids) return NULL;
    *len = v->ents[id].len;
    return v->ents[id].key;
}

char *ss_vocab_text(const ss_vocab *v, size_t *size) {
    size_t total = 1;
    for (uint64_t i = 0; i < v->nids; i++) total += v->ents[i].len + 1;
    char *t = malloc(total), *p = t;
    if (!t) return NULL;
    for (uint64_t i = 0; i < v->nids; i++) {
        memcpy(p, v->ents[i].key, v->ents[i].len);
        p += v->ents[i].len;
        *p++ = '\n';
    }
    *p = 0;
    *size = (size_t)(p - t);
    return t;
}

char *ss_vocab_counts_text(const ss_vocab *counts, size_t *size) {
    const entry **words = malloc((counts->nents ? counts->nents : 1) * sizeof *words);
    if (!words) return NULL;
    size_t total = 1;
    for (uint64_t i = 0; i < counts->nents; i++) {
        words[i] = &counts->ents[i];
        total += counts->ents[i].len + 22;
    }
    qsort(words, counts->nents, sizeof *words, by_count); /* the same file for any threads */
    char *t = malloc(total), *p = t;
    for (uint64_t i = 0; t && i < counts->nents; i++) {
        memcpy(p, words[i]->key, words[i]->len);
        p += words[i]->len;
        p += sprintf(p, "\t%llu\n", (unsigned long long)words[i]->val);
    }
    free(words);
    if (!t) return NULL;
    *p = 0;
    *size = (size_t)(p - t);
    return t;
}
