/* SPDX-License-Identifier: BSD-2-Clause */
/* lm_internal.h - the LM sample index's state, shared by lm_index.c and
 * lm_sample.c; not installed. */
#ifndef SS_LM_INTERNAL_H
#define SS_LM_INTERNAL_H

#include "seqstore.h"
#include "lm_mt19937.h"

struct ss_lm {
    ss_lm_options o;           /* o.eod resolved */
    const ss_store *store;     /* borrowed */
    uint32_t field;            /* the token field */
    ss_dtype dtype;            /* its element type */
    uint64_t ndocs;            /* n: documents per epoch */
    uint64_t *sizes;           /* n document lengths, the appended eod included */
    uint64_t tokens_per_epoch; /* T */
    uint64_t epochs;           /* E */
    uint64_t nsamples;         /* S */
    uint64_t sans_final;       /* samples shuffled as the first group (S unless separate) */
    int separate;              /* separate_final_epoch */
    int64_t *doc;              /* E * n: the shuffled document index */
    int64_t *sample;           /* 2 * (S + 1): (position in doc, offset) pairs */
    int64_t *shuffle;          /* S: the sample shuffle */
};

#endif /* SS_LM_INTERNAL_H */
