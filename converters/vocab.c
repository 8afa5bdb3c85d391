/* SPDX-License-Identifier: BSD-2-Clause */
/* vocab.c - word counting and vocabularies (see vocab.h). */
#include "vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    const uint8_t *key; /* NULL: empty slot */
    uint64_t hash;
    uint64_t val;
    uint32_t len;
} entry;

struct ss_vocab {
    entry *slots;
    uint64_t cap, used; /* cap is a power of two */
    const entry **ids;  /* vocabularies: id -> entry */
    uint64_t nids;
    char *owned; /* vocabularies: the token bytes */
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
    free(v->slots);
    free(v->ids);
    free(v->owned);
    free(v);
}

uint64_t ss_vocab_hash(const uint8_t *w, size_t len) {
    uint64_t h = SS_VOCAB_HASH_INIT;
    for (size_t i = 0; i < len; i++) h = ss_vocab_hash_step(h, w[i]);
    return ss_vocab_hash_final(h);
}

static inline int same_bytes(const uint8_t *a, const uint8_t *b, size_t n) {
    if (n > 16) return !memcmp(a, b, n);
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static entry *find(const ss_vocab *v, const uint8_t *w, size_t len, uint64_t h) {
    uint64_t mask = v->cap - 1;
    for (uint64_t i = h & mask;; i = (i + 1) & mask) {
        entry *e = &v->slots[i];
        if (!e->key) return e;
        if (e->hash == h && e->len == len && same_bytes(e->key, w, len)) return e;
    }
}

static int grow(ss_vocab *v) {
    uint64_t cap = v->cap * 2;
    entry *s = calloc(cap, sizeof *s);
    if (!s) return -1;
    for (uint64_t i = 0; i < v->cap; i++) {
        entry *e = &v->slots[i];
        if (!e->key) continue;
        uint64_t j = e->hash & (cap - 1);
        while (s[j].key) j = (j + 1) & (cap - 1);
        s[j] = *e;
    }
    free(v->slots);
    v->slots = s;
    v->cap = cap;
    return 0;
}

/* Insert or find; *fresh says whether it was inserted (val = 0). */
static entry *insert(ss_vocab *v, const uint8_t *w, size_t len, uint64_t h, int *fresh) {
    entry *e = find(v, w, len, h);
    *fresh = 0;
    if (e->key) return e;
    if ((v->used + 1) * 2 > v->cap) {
        if (grow(v)) return NULL;
        e = find(v, w, len, h);
    }
    e->key = w ? w : (const uint8_t *)"";
    e->len = (uint32_t)len;
    e->hash = h;
    e->val = 0;
    v->used++;
    *fresh = 1;
    return e;
}

int ss_vocab_count(ss_vocab *v, const uint8_t *w, size_t len, uint64_t n) {
    int fresh;
    entry *e = insert(v, w, len, ss_vocab_hash(w, len), &fresh);
    if (!e) return -1;
    e->val += n;
    return 0;
}

int ss_vocab_count_h(ss_vocab *v, const uint8_t *w, size_t len, uint64_t hash, uint64_t n) {
    int fresh;
    entry *e = insert(v, w, len, hash, &fresh);
    if (!e) return -1;
    e->val += n;
    return 0;
}

int64_t ss_vocab_lookup_h(const ss_vocab *v, const uint8_t *w, size_t len, uint64_t hash) {
    const entry *e = find(v, w, len, hash);
    return e->key ? (int64_t)e->val : -1;
}

int ss_vocab_merge(ss_vocab *into, const ss_vocab *from) {
    for (uint64_t i = 0; i < from->cap; i++) {
        const entry *f = &from->slots[i];
        if (!f->key) continue;
        int fresh;
        entry *e = insert(into, f->key, f->len, f->hash, &fresh);
        if (!e) return -1;
        e->val += f->val;
    }
    return 0;
}

uint64_t ss_vocab_entries(const ss_vocab *v) {
    return v->used;
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
    v->ids = malloc((n ? n : 1) * sizeof *v->ids);
    if (!v->owned || !v->ids) return -1;
    while (v->cap < 2 * (n + 1)) v->cap *= 2;
    free(v->slots);
    v->slots = calloc(v->cap, sizeof *v->slots);
    if (!v->slots) return -1;
    size_t off = 0;
    for (uint64_t i = 0; i < n; i++) {
        memcpy(v->owned + off, tok[i], len[i]);
        const uint8_t *key = (const uint8_t *)v->owned + off;
        off += len[i];
        int fresh;
        entry *e = insert(v, key, len[i], ss_vocab_hash(key, len[i]), &fresh);
        if (!e) return -1;
        if (!fresh) return (int64_t)i + 1;
        e->val = i;
        v->ids[i] = e;
    }
    v->nids = n;
    return 0;
}

int ss_vocab_build(ss_vocab **out, const ss_vocab *counts, uint64_t min_count, uint64_t max_size) {
    *out = NULL;
    const entry **words = malloc((counts->used ? counts->used : 1) * sizeof *words);
    uint64_t n = 0;
    if (!words) return -1;
    for (uint64_t i = 0; i < counts->cap; i++) {
        const entry *e = &counts->slots[i];
        if (e->key && e->val >= min_count && !is_special(e)) words[n++] = e;
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
    const entry *e = find(v, w, len, ss_vocab_hash(w, len));
    return e->key ? (int64_t)e->val : -1;
}

uint64_t ss_vocab_size(const ss_vocab *v) {
    return v->nids;
}

const uint8_t *ss_vocab_token(const ss_vocab *v, uint64_t id, size_t *len) {
    if (id >= v->nids) return NULL;
    *len = v->ids[id]->len;
    return v->ids[id]->key;
}

char *ss_vocab_text(const ss_vocab *v, size_t *size) {
    size_t total = 1;
    for (uint64_t i = 0; i < v->nids; i++) total += v->ids[i]->len + 1;
    char *t = malloc(total), *p = t;
    if (!t) return NULL;
    for (uint64_t i = 0; i < v->nids; i++) {
        memcpy(p, v->ids[i]->key, v->ids[i]->len);
        p += v->ids[i]->len;
        *p++ = '\n';
    }
    *p = 0;
    *size = (size_t)(p - t);
    return t;
}
