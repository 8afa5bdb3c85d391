/* SPDX-License-Identifier: BSD-2-Clause */
/* jsonl.c - one JSON line into token arrays (see jsonl.h). */
#include "jsonl.h"
#include "utf8.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int jl_is_ws(uint8_t ch) {
    return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

static int jl_grow(jl_buf *b, size_t elems, uint32_t esize) {
    size_t need = (b->n + elems) * esize;
    if (need <= b->cap) return 0;
    size_t c = b->cap ? b->cap : (size_t)1 << 16;
    while (c < need) c *= 2;
    uint8_t *p = realloc(b->data, c);
    if (!p) return -1;
    b->data = p;
    b->cap = c;
    return 0;
}

static const char *jl_type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

/* A string value: bytes, chars or model ids, with bos/eos. */
static int jl_put_string(const jl_spec *s, const char *key, const json_t *v, jl_buf *b, char *err,
                         size_t errlen) {
    const tx_tok *t = s->tok;
    const uint8_t *str = (const uint8_t *)json_string_value(v);
    size_t n = json_string_length(v), m = b->n;
    if (t->kind == TX_SPM) {
        int r = s->encode(t, str, n, &b->data, &b->cap, &m, err, errlen);
        if (r == 0) b->n = m;
        return r;
    }
    if (t->kind != TX_BYTES && t->kind != TX_CHARS && t->kind != TX_WORDS) {
        snprintf(err, errlen, "key '%s' is a string; --tokens %s takes arrays of ids", key,
                 ss__tx_kind_name(t->kind));
        return -1;
    }
    if (jl_grow(b, n + 2, t->esize)) return -2;
    if (t->bos_on) tx_put_id(b->data, t->esize, m++, t->bos);
    if (t->kind == TX_BYTES) {
        for (size_t i = 0; i < n; i++) tx_put_id(b->data, t->esize, m++, str[i]);
    } else if (t->kind == TX_WORDS) {
        for (size_t i = 0; i < n;) { /* the words of `convert text --tokens words` */
            while (i < n && jl_is_ws(str[i])) i++;
            if (i >= n) break;
            size_t w = i;
            while (i < n && !jl_is_ws(str[i])) i++;
            int64_t id = ss__vocab_lookup(t->vocab, str + w, i - w);
            tx_put_id(b->data, t->esize, m++, id < 0 ? t->unk : (uint32_t)id);
        }
    } else {
        size_t k = 0, bad = 0; /* jansson checked the UTF-8; decode it */
        if (ss__utf8_decode((uint32_t *)(void *)b->data + m, &k, &bad, str, n)) {
            snprintf(err, errlen, "key '%s': invalid UTF-8 at byte %zu of the string", key, bad);
            return -1;
        }
        m += k;
    }
    if (t->eos_on) tx_put_id(b->data, t->esize, m++, t->eos);
    b->n = m;
    return 0;
}

/* An array value: ids, each checked against the vocabulary. */
static int jl_put_ids(const jl_spec *s, const char *key, const json_t *v, jl_buf *b, char *err,
                      size_t errlen) {
    const tx_tok *t = s->tok;
    if (t->kind != TX_IDS && t->kind != TX_SPM) {
        snprintf(err, errlen,
                 "key '%s' is an array of ids: use --tokens ids or --tokenizer spm:MODEL", key);
        return -1;
    }
    size_t n = json_array_size(v);
    uint64_t limit = t->vocab_size ? t->vocab_size : (uint64_t)UINT32_MAX + 1;
    if (jl_grow(b, n, t->esize)) return -2;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, i);
        if (!json_is_integer(e)) {
            snprintf(err, errlen, "key '%s': element %zu is %s, not a token id", key, i,
                     jl_type_name(e));
            return -1;
        }
        json_int_t id = json_integer_value(e);
        if (id < 0 || (uint64_t)id >= limit) {
            snprintf(err, errlen,
                     "key '%s': element %zu, id %" JSON_INTEGER_FORMAT
                     ", is out of range [0, %" PRIu64 ")%s",
                     key, i, id, limit,
                     t->kind == TX_SPM ? " (the model's vocabulary)"
                     : t->vocab_size   ? " (--vocab-size)"
                                       : "");
            return -1;
        }
        tx_put_id(b->data, t->esize, b->n + i, (uint32_t)id);
    }
    b->n += n;
    return 0;
}

static int jl_is_blank(const uint8_t *d, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (d[i] != ' ' && d[i] != '\t' && d[i] != '\r' && d[i] != '\f' && d[i] != '\v') return 0;
    return 1;
}

int ss__jl_parse_line(const jl_spec *s, const uint8_t *line, size_t n, jl_buf *bufs, uint64_t *lens,
                      char *err, size_t errlen) {
    if (jl_is_blank(line, n)) return 1;
    json_error_t je;
    json_t *root = json_loadb((const char *)line, n, 0, &je);
    if (!root) {
        snprintf(err, errlen, "invalid JSON at column %d: %s", je.column, je.text);
        return -1;
    }
    int rc = 0;
    uint32_t k = 0;
    if (!json_is_object(root)) {
        snprintf(err, errlen, "the line is %s, not a JSON object", jl_type_name(root));
        rc = -1;
    }
    for (; k < s->nkeys && !rc; k++) {
        const json_t *v = json_object_get(root, s->keys[k]);
        size_t before = bufs[k].n;
        if (!v) {
            snprintf(err, errlen, "no key '%s'", s->keys[k]);
            rc = -1;
        } else if (json_is_string(v)) {
            rc = jl_put_string(s, s->keys[k], v, &bufs[k], err, errlen);
        } else if (json_is_array(v)) {
            rc = jl_put_ids(s, s->keys[k], v, &bufs[k], err, errlen);
        } else {
            snprintf(err, errlen, "key '%s' is %s, not a string or an array of ids", s->keys[k],
                     jl_type_name(v));
            rc = -1;
        }
        lens[k] = bufs[k].n - before;
    }
    json_decref(root);
    if (rc) /* roll back the keys already appended */
        for (uint32_t i = 0; i < k && i < s->nkeys; i++) bufs[i].n -= lens[i];
    return rc;
}

/* ------------------------------------------------------- word counting */

struct jl_chunk {
    struct jl_chunk *next;
    size_t used, cap;
    uint8_t data[];
};

void ss__jl_arena_free(jl_arena *a) {
    for (struct jl_chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    a->head = NULL;
}

static int jl_count_words(const uint8_t *s, size_t n, ss_vocab *v) {
    for (size_t i = 0; i < n;) {
        while (i < n && jl_is_ws(s[i])) i++;
        if (i >= n) break;
        size_t w = i;
        while (i < n && !jl_is_ws(s[i])) i++;
        /* the map copies a new word's bytes (they must outlive the line) */
        if (ss__vocab_count(v, s + w, i - w, 1)) return -2;
    }
    return 0;
}

int ss__jl_count_line(const jl_spec *s, const uint8_t *line, size_t n, ss_vocab *v, jl_arena *a) {
    (void)a; /* nothing to keep: the map copies the words it counts */
    if (jl_is_blank(line, n)) return 0;
    json_t *root = json_loadb((const char *)line, n, 0, NULL);
    if (!root) return 0;
    /* only lines the second pass accepts: every key a string */
    int rc = 0, ok = json_is_object(root);
    for (uint32_t k = 0; k < s->nkeys && ok; k++)
        ok = json_is_string(json_object_get(root, s->keys[k]));
    for (uint32_t k = 0; k < s->nkeys && ok && !rc; k++) {
        const json_t *val = json_object_get(root, s->keys[k]);
        rc = jl_count_words((const uint8_t *)json_string_value(val), json_string_length(val), v);
    }
    json_decref(root);
    return rc;
}
