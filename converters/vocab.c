/* SPDX-License-Identifier: BSD-2-Clause */
/* vocab.c - word counting and vocabularies (see vocab.h). */
#include "vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A word: its bytes and the slot that holds it. */
typedef struct entry {
    const uint8_t *key;
    uint64_t slot;
    uint32_t len;
} entry;

/* Counted words' bytes, copied together: the map owns them (counts read
 * from a file outlive it; see wordcounts.c), and a lookup that must compare
 * a long word's bytes reads a few cache lines rather than the word's first
 * occurrence somewhere in a large mapped input. */
typedef struct arena {
    struct arena *next;
    size_t used, cap;
    uint8_t data[];
} arena;

#define SS_ARENA_BLOCK (256u << 10)

/* A slot of the table: the word's ss_vocab_key pre, tail and length, its
 * count (counting) or id (vocabulary) and 1 + the index of its entry in the
 * dense `ents` array (0 = empty). Counting a word of up to 16 bytes reads
 * and writes its slot, half a cache line, and nothing else: the 8-byte slots
 * with a hash tag this replaces needed the entry and the key bytes as well,
 * two dependent loads and a byte loop per word (with perf on 100 MB of
 * words, 35% of --tokens words in the lookup). Entries are in insertion
 * order, roughly frequency order (id order in a vocabulary). */
typedef struct slot {
    uint64_t pre, tail, val;
    uint32_t len, idx;
} slot;

struct ss_vocab {
    slot *slots;
    uint64_t cap; /* slots; a power of two, at least 4/3 of nents */
    entry *ents;
    uint64_t nents, ents_cap;
    uint64_t nids; /* vocabularies: ids are 0..nids-1, ents[id] */
    char *owned;   /* vocabularies: the token bytes */
    arena *arena;  /* counts: the words' bytes; the head block is filling */
};

static const char *const specials[SS_VOCAB_NSPECIAL] = {"<pad>", "<unk>", "<bos>", "<eos>"};

int ss__vocab_new(ss_vocab **out) {
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

void ss__vocab_free(ss_vocab *v) {
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

/* Slot s holds word k. */
static inline int holds(const ss_vocab *v, const slot *s, const ss_vocab_key *k) {
    if (s->pre != k->pre || s->tail != k->tail || s->len != k->len) return 0;
    return k->len <= 16 || !memcmp(v->ents[s->idx - 1].key + 8, k->w + 8, k->len - 16);
}

/* The slot of word k: the word's, or the empty one where it goes. */
static inline uint64_t find(const ss_vocab *v, const ss_vocab_key *k) {
    uint64_t mask = v->cap - 1;
    for (uint64_t i = k->hash & mask;; i = (i + 1) & mask)
        if (!v->slots[i].idx || holds(v, &v->slots[i], k)) return i;
}

static int grow(ss_vocab *v) {
    uint64_t cap = v->cap * 2;
    slot *s = calloc(cap, sizeof *s);
    if (!s) return -1;
    for (uint64_t k = 0; k < v->nents; k++) {
        ss_vocab_key key = ss_vocab_key_of(v->ents[k].key, v->ents[k].len);
        uint64_t j = key.hash & (cap - 1);
        while (s[j].idx) j = (j + 1) & (cap - 1);
        s[j] = v->slots[v->ents[k].slot];
        v->ents[k].slot = j;
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

/* Room for n entries. */
static int grow_ents(ss_vocab *v, uint64_t n) {
    entry *g = realloc(v->ents, n * sizeof *g);
    if (!g) return -1;
    v->ents = g;
    v->ents_cap = n;
    return 0;
}

/* The count (id) of entry k. */
static inline uint64_t *val_of(const ss_vocab *v, uint64_t k) {
    return &v->slots[v->ents[k].slot].val;
}

/* Insert or find: the word's slot, or NULL out of memory; *fresh says
 * whether it was inserted (value 0). `copy`: the map keeps its own copy of
 * the bytes (counting), else borrows them. */
static slot *insert(ss_vocab *v, const ss_vocab_key *k, int *fresh, int copy) {
    uint64_t i = find(v, k);
    *fresh = 0;
    if (v->slots[i].idx) return &v->slots[i];
    if (v->nents >= UINT32_MAX - 1 || k->len > UINT32_MAX) return NULL;
    if ((v->nents + 1) * 4 > v->cap * 3) { /* load <= 3/4 */
        if (grow(v)) return NULL;
        i = find(v, k);
    }
    if (v->nents == v->ents_cap && grow_ents(v, v->ents_cap ? 2 * v->ents_cap : 256)) return NULL;
    const uint8_t *w = k->w;
    if (copy && !(w = arena_copy(v, w, k->len))) return NULL;
    entry *e = &v->ents[v->nents];
    e->key = w ? w : (const uint8_t *)"";
    e->len = (uint32_t)k->len;
    e->slot = i;
    v->slots[i] = (slot){k->pre, k->tail, 0, (uint32_t)k->len, (uint32_t)++v->nents};
    *fresh = 1;
    return &v->slots[i];
}

int ss__vocab_count(ss_vocab *v, const uint8_t *w, size_t len, uint64_t n) {
    ss_vocab_key k = ss_vocab_key_of(w, len);
    return ss__vocab_count_key(v, &k, n);
}

int ss__vocab_count_key(ss_vocab *v, const ss_vocab_key *k, uint64_t n) {
    uint32_t e;
    return ss__vocab_count_at(v, k, n, &e);
}

int ss__vocab_count_at(ss_vocab *v, const ss_vocab_key *k, uint64_t n, uint32_t *entry_no) {
    int fresh;
    slot *s = insert(v, k, &fresh, 1);
    if (!s) return -1;
    s->val += n;
    *entry_no = s->idx - 1; /* < UINT32_MAX - 1 (insert) */
    return 0;
}

int ss__vocab_count_batch(ss_vocab *v, size_t n, const ss_vocab_key *keys, uint32_t *entry_no) {
    /* A cache miss per word (its slot) was most of the counting time of a
     * large map; fetched for the batch first, the misses overlap. */
    uint64_t mask = v->cap - 1;
    for (size_t i = 0; i < n; i++) __builtin_prefetch(&v->slots[keys[i].hash & mask]);
    for (size_t i = 0; i < n; i++) {
        const ss_vocab_key *k = &keys[i];
        slot *s;
        for (uint64_t j = k->hash & mask;; j = (j + 1) & mask) { /* find(), inline */
            s = &v->slots[j];
            if (!s->idx || holds(v, s, k)) break;
        }
        if (!s->idx) { /* a new word */
            if (ss__vocab_count_at(v, k, 1, &entry_no[i])) return -1;
            mask = v->cap - 1; /* the table may have grown */
            continue;
        }
        s->val++;
        entry_no[i] = s->idx - 1;
    }
    return 0;
}

const uint8_t *ss__vocab_entry(const ss_vocab *v, uint64_t k, size_t *len) {
    if (k >= v->nents) return NULL;
    *len = v->ents[k].len;
    return v->ents[k].key;
}

int64_t ss__vocab_lookup_key(const ss_vocab *v, const ss_vocab_key *k) {
    const slot *s = &v->slots[find(v, k)];
    return s->idx ? (int64_t)s->val : -1;
}

int ss__vocab_merge(ss_vocab *into, const ss_vocab *from) {
    return ss__vocab_merge_at(into, from, NULL);
}

int ss__vocab_merge_at(ss_vocab *into, const ss_vocab *from, uint32_t *entry_no) {
    for (uint64_t k = 0; k < from->nents; k++) {
        const entry *f = &from->ents[k];
        ss_vocab_key key = ss_vocab_key_of(f->key, f->len);
        uint32_t e;
        if (ss__vocab_count_at(into, &key, *val_of(from, k), &e)) return -1;
        if (entry_no) entry_no[k] = e;
    }
    return 0;
}

uint64_t ss__vocab_entries(const ss_vocab *v) {
    return v->nents;
}

/* The reserved id of a word equal to a reserved token, else -1. */
static int special_id(const entry *e) {
    for (int k = 0; k < SS_VOCAB_NSPECIAL; k++)
        if (e->len == strlen(specials[k]) && !memcmp(e->key, specials[k], e->len)) return k;
    return -1;
}

/* A counted word to sort: its count, its first 8 bytes in the order of
 * their bytes (most ties are decided there, without reading the word) and
 * its entry. */
typedef struct ranked {
    uint64_t count, order;
    const entry *e;
} ranked;

static ranked rank_of(const ss_vocab *counts, uint64_t k) {
    const slot *s = &counts->slots[counts->ents[k].slot];
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    uint64_t order = s->pre;
#else
    uint64_t order = __builtin_bswap64(s->pre);
#endif
    return (ranked){s->val, order, &counts->ents[k]};
}

/* Most frequent first; ties by bytes, then by length (a prefix first).
 * `order` is the first 8 bytes with 0 after a shorter word's end: where it
 * differs, so do the bytes, or the word that ends first is smaller. */
static int by_count(const void *pa, const void *pb) {
    const ranked *ra = pa, *rb = pb;
    if (ra->count != rb->count) return ra->count > rb->count ? -1 : 1;
    if (ra->order != rb->order) return ra->order < rb->order ? -1 : 1;
    const entry *a = ra->e, *b = rb->e;
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
    if (!v->owned || grow_ents(v, n ? n : 1)) return -1;
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
        ss_vocab_key k = ss_vocab_key_of(key, len[i]);
        slot *s = insert(v, &k, &fresh, 0);
        if (!s) return -1;
        if (!fresh) return (int64_t)i + 1;
        s->val = i; /* entry i: ids are in insertion order */
    }
    v->nids = n;
    return 0;
}

int ss__vocab_build(ss_vocab **out, const ss_vocab *counts, uint64_t min_count, uint64_t max_size) {
    return ss__vocab_build_ids(out, counts, min_count, max_size, NULL);
}

int ss__vocab_build_ids(ss_vocab **out, const ss_vocab *counts, uint64_t min_count,
                        uint64_t max_size, uint32_t *ids) {
    *out = NULL;
    ranked *words = malloc((counts->nents ? counts->nents : 1) * sizeof *words);
    uint64_t n = 0;
    if (!words) return -1;
    for (uint64_t i = 0; i < counts->nents; i++) {
        int sp = special_id(&counts->ents[i]);
        ranked r = rank_of(counts, i);
        if (ids) ids[i] = sp >= 0 ? (uint32_t)sp : SS_VOCAB_UNK;
        if (r.count >= min_count && sp < 0) words[n++] = r;
    }
    /* counts read from one file are in this order already (a reduced MPI
     * document, ss__vocab_counts_text()): a look costs n comparisons where
     * the sort costs n log n, for every rank of a job */
    uint64_t in_order = 1;
    while (in_order < n && by_count(&words[in_order - 1], &words[in_order]) <= 0) in_order++;
    if (in_order < n) qsort(words, n, sizeof *words, by_count);
    uint64_t total = SS_VOCAB_NSPECIAL + n;
    if (max_size && total > max_size)
        total = max_size < SS_VOCAB_NSPECIAL ? SS_VOCAB_NSPECIAL : max_size;
    for (uint64_t i = SS_VOCAB_NSPECIAL; ids && i < total; i++)
        ids[words[i - SS_VOCAB_NSPECIAL].e - counts->ents] = (uint32_t)i;
    const uint8_t **tok = malloc(total * sizeof *tok);
    uint32_t *len = malloc(total * sizeof *len);
    ss_vocab *v = NULL;
    int rc = -1;
    if (tok && len && ss__vocab_new(&v) == 0) {
        for (uint64_t i = 0; i < total; i++) {
            if (i < SS_VOCAB_NSPECIAL) {
                tok[i] = (const uint8_t *)specials[i];
                len[i] = (uint32_t)strlen(specials[i]);
            } else {
                tok[i] = words[i - SS_VOCAB_NSPECIAL].e->key;
                len[i] = words[i - SS_VOCAB_NSPECIAL].e->len;
            }
        }
        rc = fill(v, tok, len, total) == 0 ? 0 : -1;
    }
    free(words);
    free(tok);
    free(len);
    if (rc) {
        ss__vocab_free(v);
        return -1;
    }
    *out = v;
    return 0;
}

int ss__vocab_parse(ss_vocab **out, const char *text, size_t size, char *err, size_t errlen) {
    *out = NULL;
    uint64_t n = 0;
    for (size_t i = 0; i < size; i++) n += text[i] == '\n';
    if (size && text[size - 1] != '\n') n++;
    const uint8_t **tok = malloc((n ? n : 1) * sizeof *tok);
    uint32_t *len = malloc((n ? n : 1) * sizeof *len);
    ss_vocab *v = NULL;
    int rc = -1;
    if (!tok || !len || ss__vocab_new(&v)) {
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
        ss__vocab_free(v);
        return -1;
    }
    *out = v;
    return 0;
}

int64_t ss__vocab_lookup(const ss_vocab *v, const uint8_t *w, size_t len) {
    ss_vocab_key k = ss_vocab_key_of(w, len);
    return ss__vocab_lookup_key(v, &k);
}

uint64_t ss__vocab_size(const ss_vocab *v) {
    return v->nids;
}

const uint8_t *ss__vocab_token(const ss_vocab *v, uint64_t id, size_t *len) {
    if (id >= v->nids) return NULL;
    *len = v->ents[id].len;
    return v->ents[id].key;
}

char *ss__vocab_text(const ss_vocab *v, size_t *size) {
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

char *ss__vocab_counts_text(const ss_vocab *counts, size_t *size) {
    ranked *words = malloc((counts->nents ? counts->nents : 1) * sizeof *words);
    if (!words) return NULL;
    size_t total = 1;
    for (uint64_t i = 0; i < counts->nents; i++) {
        words[i] = rank_of(counts, i);
        total += counts->ents[i].len + 22;
    }
    qsort(words, counts->nents, sizeof *words, by_count); /* the same file for any threads */
    char *t = malloc(total), *p = t;
    for (uint64_t i = 0; t && i < counts->nents; i++) {
        memcpy(p, words[i].e->key, words[i].e->len);
        p += words[i].e->len;
        p += sprintf(p, "\t%llu\n", (unsigned long long)words[i].count);
    }
    free(words);
    if (!t) return NULL;
    *p = 0;
    *size = (size_t)(p - t);
    return t;
}
