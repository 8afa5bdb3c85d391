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
    uint32_t *doc;             /* E * n: the shuffled document index (n < 2^31) */
    int64_t *sample;           /* 2 * (S + 1): (position in doc, offset) pairs */
    int64_t *shuffle;          /* S: the sample shuffle */
    uint64_t split;            /* ss_lm_info.split_documents */
    /* SS_LM_PACKED: row k holds pieces row_first[k] .. row_first[k + 1] - 1,
     * piece j being tokens [piece_off[j], + piece_len[j]) of document
     * piece_doc[j] */
    uint64_t *row_first;       /* S + 1 */
    uint32_t *piece_doc, *piece_off, *piece_len;
    uint64_t npieces, piece_cap, row_cap;
    uint64_t padding;          /* padding tokens in all rows */
    int borrowed;              /* doc and shuffle point into a stored section */
};

/* ss_lm_create(), with use_stored 0 ignoring any stored index. */
int ss__lm_create(ss_lm **out, const ss_store *s, uint32_t field, const ss_lm_options *options,
                  int use_stored);

/* The stored index's section name for `field` and options `o`. */
int ss__lm_section_name(char *buf, size_t cap, const char *field, const ss_lm_options *o);

/* Use the stored index of lm's options (doc and shuffle into the map, once
 * checked): 0; SS_ENOTFOUND (none, or one for other documents); SS_ECORRUPT,
 * SS_EVERSION. lm's sizes, epochs and samples are set already. */
int ss__lm_stored_find(ss_lm *lm, const char *field);

/* ss__lm_stored_find() on the section's bytes (named `name` in messages),
 * which must outlive lm; what fuzz_lm_index feeds. */
int ss__lm_stored_use(ss_lm *lm, const char *name, const void *data, size_t size);

/* Tokens [off, off + len) of document `d` (the appended eod included) into dst. */
int ss__lm_read_part(int64_t *dst, const ss_lm *lm, uint64_t d, uint64_t off, uint64_t len);

/* The packed index (lm->epochs ... lm->padding) from lm->sizes. */
int ss__lm_pack_build(ss_lm *lm);

/* Row r of `out` from unshuffled packed row k; buf holds L + 1 tokens. */
int ss__lm_pack_row(const ss_lm_batch *out, const ss_lm *lm, int64_t *buf, uint64_t k,
                    uint64_t r);

#endif /* SS_LM_INTERNAL_H */
