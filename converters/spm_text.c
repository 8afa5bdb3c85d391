/* SPDX-License-Identifier: BSD-2-Clause */
/* spm_text.c - SentencePiece tokenization for the text converters (see spm_text.h). */
#include "spm_text.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int ss__tx_spm_option(ss_conv *c, const char *value, const char **model) {
    if (!value || strncmp(value, "spm:", 4) || !value[4])
        return ss__conv_usage_error(c, "--tokenizer needs spm:MODEL (a SentencePiece .model file)");
    *model = value + 4;
    return 0;
}

int ss__tx_spm_load(ss_conv *c, ss_spm **out, const char *model) {
    char err[512];
    if (ss__spm_load(out, model, err, sizeof err)) return ss__conv_error(c, "%s: %s", model, err);
    if (!ss__spm_vocab_size(*out)) {
        ss__spm_free(*out);
        *out = NULL;
        return ss__conv_error(c, "%s: the model has no pieces", model);
    }
    return 0;
}

int ss__tx_spm_prepare(ss_conv *c, tx_tok *t, const char *field) {
    uint32_t size = ss__spm_vocab_size(t->spm);
    int64_t bos = ss__spm_special(t->spm, "bos"), eos = ss__spm_special(t->spm, "eos");
    if (t->bos_on && bos < 0)
        return c ? ss__conv_error(c, "%s: --bos, but the SentencePiece model has no BOS id", field)
                 : 1;
    if (t->eos_on && eos < 0)
        return c ? ss__conv_error(c, "%s: --eos, but the SentencePiece model has no EOS id", field)
                 : 1;
    t->bos = (uint32_t)(bos < 0 ? 0 : bos);
    t->eos = (uint32_t)(eos < 0 ? 0 : eos);
    t->vocab_size = size;
    t->dtype = size - 1 <= UINT8_MAX ? SS_U8 : size - 1 <= UINT16_MAX ? SS_U16 : SS_U32;
    t->esize = (uint32_t)ss_dtype_size(t->dtype);
    return 0;
}

static int set_i64(ss_conv *c, const char *field, const char *what, int64_t v) {
    char name[SS_MAX_NAME + 32];
    if (v < 0) return 0;
    snprintf(name, sizeof name, "%s.%s", field, what);
    return ss__conv_set_attr(c, name, SS_I64, &v, sizeof v);
}

static int set_vocab(ss_conv *c, const ss_spm *m, const char *model, const char *attr) {
    uint32_t n = ss__spm_vocab_size(m);
    size_t total = 0, len;
    for (uint32_t i = 0; i < n; i++) {
        const char *p = ss__spm_piece(m, i, &len);
        if (memchr(p, '\n', len))
            return ss__conv_error(c, "%s: piece %" PRIu32 " contains a newline", model, i);
        total += len + 1;
    }
    char *text = malloc(total ? total : 1), *w = text;
    if (!text) return ss__conv_error(c, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        const char *p = ss__spm_piece(m, i, &len);
        memcpy(w, p, len);
        w += len;
        *w++ = '\n';
    }
    int rc = ss__conv_set_attr(c, attr, SS_ATTR_TEXT, text, total);
    free(text);
    return rc;
}

int ss__tx_spm_attrs(ss_conv *c, const tx_tok *t, const char *field, const char *vocab_attr,
                     const char *model) {
    char name[SS_MAX_NAME + 32], value[1024];
    const char *base = strrchr(model, '/');
    snprintf(name, sizeof name, "%s.tokenizer", field);
    snprintf(value, sizeof value, "spm:%s", base ? base + 1 : model);
    if (ss__conv_set_attr(c, name, SS_ATTR_TEXT, value, strlen(value))) return 1;
    uint64_t size = ss__spm_vocab_size(t->spm);
    snprintf(name, sizeof name, "%s.vocab_size", field);
    if (ss__conv_set_attr(c, name, SS_U64, &size, sizeof size)) return 1;
    static const char *const special[] = {"bos", "eos", "eod", "unk", "pad"};
    for (int k = 0; k < 5; k++) {
        char what[16];
        snprintf(what, sizeof what, "%s_id", special[k]);
        if (set_i64(c, field, what, ss__spm_special(t->spm, special[k]))) return 1;
    }
    return vocab_attr ? set_vocab(c, t->spm, model, vocab_attr) : 0;
}

int ss__tx_spm_tokenize(const tx_tok *t, const uint8_t *s, size_t n, uint8_t **out, size_t *cap,
                        size_t *m, char *err, size_t errlen) {
    size_t k = 0;
    const int *ids = ss__spm_encode(t->spm, (const char *)s, n, &k, err, errlen);
    if (!ids) return -1;
    size_t need = (*m + k + 2) * t->esize;
    if (need > *cap) {
        size_t c2 = *cap ? *cap : (size_t)1 << 16;
        while (c2 < need) c2 *= 2;
        uint8_t *p = realloc(*out, c2);
        if (!p) return -2;
        *out = p;
        *cap = c2;
    }
    uint32_t es = t->esize;
    size_t w = *m;
    if (t->bos_on) tx_put_id(*out, es, w++, t->bos);
    for (size_t i = 0; i < k; i++) tx_put_id(*out, es, w++, (uint32_t)ids[i]);
    if (t->eos_on) tx_put_id(*out, es, w++, t->eos);
    *m = w;
    return 0;
}
