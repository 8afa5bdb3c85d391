/* SPDX-License-Identifier: BSD-2-Clause */
/* lm_internal.h - the LM sample index's state, shared by lm_index.c and
 * lm_sample.c; not installed. */
#ifndef SS_LM_INTERNAL_H
#define SS_LM_INTERNAL_H

#include "seqstore.h"
#include "lm_mt19937.h"
#include "cast.h"

#include <stdatomic.h>

/* What a reader knows of a block of a stored index. */
enum { SS_LM_BLOCK_UNCHECKED = 0, SS_LM_BLOCK_SOUND = 1, SS_LM_BLOCK_CORRUPT = 2 };

struct ss_lm {
    ss_lm_options o;           /* o.eod resolved */
    const ss_store *store;     /* borrowed */
    uint32_t field;            /* the token field */
    ss_dtype dtype;            /* its element type */
    ss__conv_fn widen;         /* dtype to int64 (cast.c's kernel, AVX2 where there is) */
    uint64_t ndocs;            /* n: documents per epoch */
    uint64_t *sizes;           /* n document lengths, the appended eod included; NULL
                                  with a stored index whose documents the lengths
                                  section names (lengths from the store's index) */
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
    int borrowed;              /* doc, sample and shuffle point into a stored section */
    /* a stored index: its arrays (shuffle, sample, doc) checked by blocks of
     * LM_BLOCK bytes as reads reach them (lm_stored.c) */
    const unsigned char *arrays, *block_sums;
    uint64_t arrays_bytes, nblocks;
    _Atomic unsigned char *verdict; /* per block: SS_LM_BLOCK_...; NULL when built */
    char *stored_name;              /* the section, for messages */
};

/* Length of document d as the index counts it (the appended eod included). */
static inline uint64_t ss__lm_size(const ss_lm *lm, uint64_t d) {
    if (lm->sizes) return lm->sizes[d];
    return ss_length(lm->store, lm->field, d) + ((lm->o.flags & SS_LM_APPEND_EOD) != 0);
}

int ss__lm_stored_check(const ss_lm *lm, const void *at, uint64_t bytes);

/* The section's name for messages (an index built here never fails them). */
static inline const char *ss__lm_name(const ss_lm *lm) {
    return lm->stored_name ? lm->stored_name : "(built)";
}

/* 0 when bytes [at, at + bytes) of lm's arrays may be used: always for an
 * index built here, for a stored one once the blocks holding them passed
 * their checksums (checked on first use); else SS_ECORRUPT naming the
 * section. */
static inline int ss__lm_need(const ss_lm *lm, const void *at, uint64_t bytes) {
    return lm->verdict ? ss__lm_stored_check(lm, at, bytes) : 0;
}

/* ss_lm_create(), with use_stored 0 ignoring any stored index. */
int ss__lm_create(ss_lm **out, const ss_store *s, uint32_t field, const ss_lm_options *options,
                  int use_stored);

/* The stored index's section name for `field` and options `o`. */
int ss__lm_section_name(char *buf, size_t cap, const char *field, const ss_lm_options *o);

/* Use the stored index of lm's options (doc, sample and shuffle in the
 * map, checked by blocks as they are read): 0; 1 (the section names other
 * lengths, or none: call again with lm->sizes read, which it then compares
 * with the documents it was built for); SS_ENOTFOUND (none, one for other
 * documents, or one of the older layout version 1); SS_ECORRUPT,
 * SS_EVERSION, SS_ENOMEM. lm's ndocs, tokens_per_epoch, epochs and
 * samples are set already. */
int ss__lm_stored_find(ss_lm *lm, const char *field);

/* ss__lm_stored_find() on the section's bytes (named `name` in messages),
 * which must outlive lm, `lengths` being the stored checksum of the
 * store's lengths section (0: none); what fuzz_lm_index feeds. */
int ss__lm_stored_use(ss_lm *lm, const char *name, const void *data, size_t size,
                      uint64_t lengths);

/* Bytes of lm's section as ss_lm_save() writes it. */
uint64_t ss__lm_stored_size(const ss_lm *lm);

/* lm's section (built here; `lengths` as for ss__lm_stored_use()) into buf
 * of ss__lm_stored_size(lm) bytes, sealed. */
void ss__lm_stored_write(unsigned char *buf, const ss_lm *lm, uint64_t lengths);

/* Compute the block checksums and the header's of a section of `size`
 * bytes whose header and arrays are written: what ss_lm_save() and
 * fuzz_lm_index (sealing sections whose values lie) call. */
void ss__lm_stored_seal(unsigned char *section, size_t size);

/* The unshuffled sample number of sample i (< nsamples): 0; SS_ECORRUPT
 * (a stored index's block or value is damaged). */
int ss__lm_shuffled(uint64_t *k, const ss_lm *lm, uint64_t i);

/* Tokens [off, off + len) of document `d` (the appended eod included) into dst. */
int ss__lm_read_part(int64_t *dst, const ss_lm *lm, uint64_t d, uint64_t off, uint64_t len);

/* The packed index (lm->epochs ... lm->padding) from lm->sizes. */
int ss__lm_pack_build(ss_lm *lm);

/* Row r of `out` from unshuffled packed row k; buf holds L + 1 tokens. */
int ss__lm_pack_row(const ss_lm_batch *out, const ss_lm *lm, int64_t *buf, uint64_t k,
                    uint64_t r);

#endif /* SS_LM_INTERNAL_H */
