/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_jsonl.c - libFuzzer target for JSON-lines handling (converters/jsonl.c).
 *
 * Byte 0 picks the tokenizer (bytes / chars / ids / words, with or without BOS/EOS,
 * with or without a vocabulary size) and whether a second key is read; the
 * rest is split into lines, each parsed as `convert jsonl` does. Checks: a
 * bad line appends nothing and says why; a good line's tokens are exactly its
 * value (string bytes / code points / one id per word, or the array's ids).
 * Words are also counted as the first pass of --tokens words does. */
#include "../converters/jsonl.c"
#include "../converters/utf8.c"
#include "../converters/vocab.c"

#include <jansson.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

const char *ss__tx_kind_name(int kind) {
    return kind == TX_IDS ? "ids" : kind == TX_CHARS ? "chars" : "bytes";
}

/* The expected tokens of a good value, the plain way. */
static void check_value(const tx_tok *t, const json_t *v, const uint8_t *got, uint64_t n) {
    uint32_t es = t->esize;
    uint64_t k = 0;
#define AT(i)                                                                                      \
    (es == 1   ? got[i]                                                                            \
     : es == 2 ? ((const uint16_t *)(const void *)got)[i]                                          \
               : ((const uint32_t *)(const void *)got)[i])
    if (t->kind == TX_WORDS) { /* one known id per whitespace-separated word */
        const uint8_t *s = (const uint8_t *)json_string_value(v);
        size_t len = json_string_length(v), words = 0;
        for (size_t i = 0; i < len; i++)
            if (!jl_is_ws(s[i]) && (i == 0 || jl_is_ws(s[i - 1]))) words++;
        if (n != words + t->bos_on + t->eos_on) abort();
        for (uint64_t i = 0; i < n; i++)
            if (AT(i) >= ss__vocab_size(t->vocab)) abort();
        return;
    }
    if (json_is_array(v)) {
        if (n != json_array_size(v)) abort();
        for (size_t i = 0; i < n; i++)
            if (AT(i) != (uint32_t)json_integer_value(json_array_get(v, i))) abort();
        return;
    }
    const uint8_t *s = (const uint8_t *)json_string_value(v);
    size_t len = json_string_length(v);
    if (t->bos_on && AT(k++) != t->bos) abort();
    for (size_t i = 0; i < len;) {
        uint32_t cp = s[i];
        size_t l = 1;
        if (t->kind == TX_CHARS && s[i] >= 0x80) {
            l = s[i] >= 0xF0 ? 4 : s[i] >= 0xE0 ? 3 : 2;
            cp = s[i] & (0x3Fu >> (l - 1));
            for (size_t j = 1; j < l; j++) cp = cp << 6 | (s[i + j] & 63u);
        }
        if (k >= n || AT(k++) != cp) abort();
        i += l;
    }
    if (t->eos_on && AT(k++) != t->eos) abort();
    if (k != n) abort();
#undef AT
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const int kinds[4] = {TX_BYTES, TX_CHARS, TX_IDS, TX_WORDS};
    static ss_vocab *vocab, *counts;
    static const char vtext[] = "<pad>\n<unk>\n<bos>\n<eos>\na\nbc\n\xc3\xa9\n";
    char verr[128];
    if (!vocab && ss__vocab_parse(&vocab, vtext, sizeof vtext - 1, verr, sizeof verr)) abort();
    tx_tok t;
    memset(&t, 0, sizeof t);
    t.kind = kinds[data[0] & 3];
    t.bos_on = t.eos_on = (data[0] >> 2) & 1;
    t.vocab_size = (data[0] >> 3) & 1 ? 300 : 0;
    if (t.kind != TX_IDS) t.vocab_size = 0;
    uint64_t top = t.kind == TX_BYTES   ? 256
                   : t.kind == TX_CHARS ? 0x110000
                   : t.vocab_size       ? t.vocab_size
                                        : (uint64_t)UINT32_MAX + 1;
    t.bos = (uint32_t)top;
    t.eos = (uint32_t)top + 1;
    if (t.kind == TX_IDS && !t.vocab_size) t.bos_on = t.eos_on = 0;
    uint64_t max = top + 1;
    t.esize = t.kind == TX_CHARS || max > UINT16_MAX ? 4 : max > UINT8_MAX ? 2 : 1;
    if (t.kind == TX_BYTES && !t.bos_on) t.esize = 1;
    if (t.kind == TX_IDS && t.vocab_size) t.esize = 2;
    if (t.kind == TX_WORDS) {
        t.vocab = vocab;
        t.unk = SS_VOCAB_UNK, t.bos = SS_VOCAB_BOS, t.eos = SS_VOCAB_EOS;
        t.esize = 1;
    }
    jl_arena arena = {NULL};
    if (t.kind == TX_WORDS && ss__vocab_new(&counts)) abort();
    static const char *const keys[2] = {"text", "b"};
    jl_spec sp = {1 + ((data[0] >> 4) & 1), keys, &t, NULL};
    jl_buf bufs[2];
    memset(bufs, 0, sizeof bufs);
    const uint8_t *p = data + 1, *end = data + size;
    for (int lines = 0; p <= end && lines < 32; lines++) { /* bounded: CI runs 300000 inputs */
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        uint64_t lens[2] = {0, 0};
        size_t before[2] = {bufs[0].n, bufs[1].n};
        char err[512] = "";
        int rc = ss__jl_parse_line(&sp, p, n, bufs, lens, err, sizeof err);
        if (counts && ss__jl_count_line(&sp, p, n, counts, &arena)) abort();
        if (rc == -1 && !err[0]) abort();
        if (rc != 0 && (bufs[0].n != before[0] || bufs[1].n != before[1])) abort();
        if (rc == 0) {
            json_t *root = json_loadb((const char *)p, n, 0, NULL);
            if (!root) abort();
            for (uint32_t k = 0; k < sp.nkeys; k++) {
                if (bufs[k].n != before[k] + lens[k]) abort();
                const uint8_t *got = lens[k] ? bufs[k].data + before[k] * t.esize : NULL;
                check_value(&t, json_object_get(root, keys[k]), got, lens[k]);
            }
            json_decref(root);
        }
        if (!nl) break;
        p = nl + 1;
    }
    free(bufs[0].data);
    free(bufs[1].data);
    if (counts) {
        ss_vocab *built; /* the counted words outlive their lines */
        if (ss__vocab_build(&built, counts, 1, 0)) abort();
        ss__vocab_free(built);
        ss__vocab_free(counts);
        counts = NULL;
    }
    ss__jl_arena_free(&arena);
    return 0;
}
