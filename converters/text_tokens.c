/* SPDX-License-Identifier: BSD-2-Clause */
/* text_tokens.c - the text engine: token kinds and the ids of special tokens (see text.h). */
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

/* ------------------------------------------------------------- tokens */

static const char *const kind_names[] = {"bytes", "chars", "words", "ids", "spm"};

int ss__tx_parse_kind(const char *name) {
    for (int k = 0; k < 4; k++)
        if (!strcmp(name, kind_names[k])) return k;
    return -1;
}

const char *ss__tx_kind_name(int kind) {
    return kind >= 0 && kind < 5 ? kind_names[kind] : "?";
}

int ss__tx_field_attrs(ss_conv *c, const tx_tok *t, const char *field, const char *vocab_attr,
                       const char *spm_model) {
    char name[SS_MAX_NAME + 16];
    const char *kind = ss__tx_kind_name(t->kind);
    snprintf(name, sizeof name, "%s.tokens", field);
    if (ss__conv_set_attr(c, name, SS_ATTR_TEXT, kind, strlen(kind))) return 1;
    if (t->bos_on) {
        snprintf(name, sizeof name, "%s.bos", field);
        if (ss__conv_set_attr(c, name, SS_U32, &t->bos, sizeof t->bos)) return 1;
    }
    if (t->eos_on) {
        snprintf(name, sizeof name, "%s.eos", field);
        if (ss__conv_set_attr(c, name, SS_U32, &t->eos, sizeof t->eos)) return 1;
    }
    if (t->kind == TX_IDS && t->vocab_size) {
        snprintf(name, sizeof name, "%s.vocab_size", field);
        if (ss__conv_set_attr(c, name, SS_U64, &t->vocab_size, sizeof t->vocab_size)) return 1;
    }
    if (t->kind == TX_SPM && ss__tx_spm_attrs(c, t, field, vocab_attr, spm_model)) return 1;
    if (t->kind == TX_WORDS && vocab_attr) {
        size_t size;
        char *text = ss__vocab_text(t->vocab, &size);
        if (!text) return ss__conv_error(c, "out of memory");
        /* text is UTF-8 by the spec: a vocabulary with other bytes is stored as bytes */
        int utf8 = ss__utf8_valid((const uint8_t *)text, size);
        uint32_t type = utf8 ? SS_ATTR_TEXT : SS_ATTR_BYTES;
        int rc = ss__conv_set_attr(c, vocab_attr, type, text, size);
        free(text);
        if (rc) return 1;
    }
    return 0;
}

static ss_dtype dtype_for(uint64_t max_id) {
    return max_id <= UINT8_MAX ? SS_U8 : max_id <= UINT16_MAX ? SS_U16 : SS_U32;
}

static int need_special(ss_conv *c, const tx_tok *t, const char *name, uint32_t *id) {
    int64_t v = ss__vocab_lookup(t->vocab, (const uint8_t *)name, strlen(name));
    if (v < 0) return c ? ss__conv_error(c, "the vocabulary has no %s token", name) : 1;
    *id = (uint32_t)v;
    return 0;
}

int ss__tx_prepare_tokens(ss_conv *c, tx_tok *t, const char *field) {
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
            return c ? ss__conv_usage_error(c, "--bos/--eos with --tokens ids need --vocab-size")
                     : 2;
        base = t->vocab_size ? t->vocab_size : (uint64_t)UINT32_MAX + 1;
        break;
    case TX_WORDS:
        if (!t->vocab) return c ? ss__conv_error(c, "%s: no vocabulary", field) : 1;
        if (ss__vocab_size(t->vocab) > (uint64_t)UINT32_MAX)
            return c ? ss__conv_error(c, "%s: vocabulary too large", field) : 1;
        if (need_special(c, t, "<unk>", &t->unk)) return 1;
        if (t->bos_on && need_special(c, t, "<bos>", &t->bos)) return 1;
        if (t->eos_on && need_special(c, t, "<eos>", &t->eos)) return 1;
        t->dtype = dtype_for(ss__vocab_size(t->vocab) ? ss__vocab_size(t->vocab) - 1 : 0);
        t->esize = (uint32_t)ss_dtype_size(t->dtype);
        return 0;
    case TX_SPM:
        return ss__tx_spm_prepare(c, t, field);
    default:
        return c ? ss__conv_error(c, "%s: unknown token kind", field) : 1;
    }
    if (t->bos_on) t->bos = (uint32_t)base;
    if (t->eos_on) t->eos = (uint32_t)(base + (uint64_t)t->bos_on);
    uint64_t max = base - 1 + (uint64_t)t->bos_on + (uint64_t)t->eos_on;
    t->dtype = t->kind == TX_CHARS ? SS_U32 : dtype_for(max);
    t->esize = (uint32_t)ss_dtype_size(t->dtype);
    return 0;
}

