/* SPDX-License-Identifier: BSD-2-Clause */
/* text_options.c - the vocabulary options the text converters share (see text.h). */
#include "text.h"

#include <string.h>

int ss__tx_check_count_options(ss_conv *c, int words, int count_only, int ncounts, int vocab_from) {
    if ((count_only || ncounts) && !words)
        return ss__conv_usage_error(c, "--count-only and --counts need --tokens words");
    if (count_only && ncounts) return ss__conv_usage_error(c, "--count-only excludes --counts");
    if ((count_only || ncounts) && vocab_from)
        return ss__conv_usage_error(c, "--count-only and --counts exclude --vocab");
    if (ncounts && ss__conv_opts(c)->append) /* the store's vocabulary is kept */
        return ss__conv_usage_error(c, "--counts excludes --append (it keeps the store's "
                                      "vocabulary)");
    if (count_only && (ss__conv_opts(c)->append || ss__conv_opts(c)->resume))
        return ss__conv_usage_error(c, "--count-only writes a counts file; it excludes --append "
                                      "and --resume");
    return 0;
}

int ss__tx_parse_count_option(ss_conv *c, const char *a, const char *v, uint64_t *min_count,
                              uint64_t *max_vocab, uint64_t *vocab_size) {
    int rc;
    if (!strcmp(a, "--min-count"))
        rc = ss__conv_parse_u64(c, a, v, 1, UINT64_MAX, min_count);
    else if (!strcmp(a, "--max-vocab"))
        rc = ss__conv_parse_u64(c, a, v, SS_VOCAB_NSPECIAL + 1, UINT32_MAX, max_vocab);
    else if (!strcmp(a, "--vocab-size"))
        rc = ss__conv_parse_u64(c, a, v, 1, (uint64_t)UINT32_MAX - 1, vocab_size);
    else
        return 0;
    return rc ? 2 : 1;
}

int ss__tx_vocab_args_begin(ss_conv *c, const tx_vocab_args *va, char ***inputs, int argc) {
    *va->min_count = 1;
    *inputs = calloc((size_t)argc + 1, sizeof **inputs);
    *va->counts = calloc((size_t)argc + 1, sizeof **va->counts);
    if (!*inputs || !*va->counts) return ss__conv_error(c, "out of memory");
    return 0;
}

int ss__tx_vocab_option(ss_conv *c, const tx_vocab_args *va, const char *a, const char *v, int *i) {
    int k;
    if (!strcmp(a, "--bos")) {
        *va->bos = 1;
    } else if (!strcmp(a, "--eos")) {
        *va->eos = 1;
    } else if ((k = ss__tx_parse_count_option(c, a, v, va->min_count, va->max_vocab,
                                              va->vocab_size)) != 0) {
        if (k == 2) return 2;
        ++*i;
    } else if (!strcmp(a, "--vocab")) {
        if (!v) return ss__conv_usage_error(c, "--vocab needs a store or a file");
        *va->vocab_from = v;
        ++*i;
    } else if (!strcmp(a, "--count-only")) {
        *va->count_only = 1;
    } else if (!strcmp(a, "--counts")) {
        if (!v) return ss__conv_usage_error(c, "--counts needs a counts file or directory");
        (*va->counts)[(*va->ncounts)++] = v;
        ++*i;
    } else {
        return 0;
    }
    return 1;
}
