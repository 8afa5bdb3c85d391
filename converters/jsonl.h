/* SPDX-License-Identifier: BSD-2-Clause */
/* jsonl.h - one line of a JSON-lines corpus into token arrays (internal to
 * the command line; `convert jsonl` drives it, fuzz/fuzz_jsonl.c fuzzes it).
 *
 * A line is one JSON object; each requested key becomes one field. A string
 * value is tokenized (bytes, chars, words, or SentencePiece ids); an array of
 * integers is taken as ids already tokenized (--tokens ids, or ids of the
 * SentencePiece model), stored as given (no BOS/EOS added). */
#ifndef SS_JSONL_H
#define SS_JSONL_H

#include "text.h"
#include "vocab.h"

#include <stddef.h>
#include <stdint.h>

/* Encodes a string with a model (ss__tx_spm_tokenize() of spm_text.h). */
typedef int (*jl_encode_fn)(const tx_tok *t, const uint8_t *s, size_t n, uint8_t **out, size_t *cap,
                            size_t *m, char *err, size_t errlen);

typedef struct jl_spec {
    uint32_t nkeys;
    const char *const *keys;
    const tx_tok *tok;   /* every key's tokenizer: TX_BYTES, TX_CHARS, TX_WORDS, TX_IDS or TX_SPM,
                          * prepared (dtype, esize, bos/eos, vocab_size) */
    jl_encode_fn encode; /* TX_SPM: encodes strings */
} jl_spec;

/* Token output of one key: elements of tok->esize bytes. */
typedef struct jl_buf {
    uint8_t *data;
    size_t n;   /* elements */
    size_t cap; /* bytes */
} jl_buf;

/* Parse the line [line, line + n) (without its '\n') and append key k's
 * tokens to bufs[k], their number in lens[k].
 * @return 0; 1 for a blank line (nothing appended); -1 for a bad line (a
 * message naming the problem in err, nothing appended); -2 out of memory. */
int ss__jl_parse_line(const jl_spec *s, const uint8_t *line, size_t n, jl_buf *bufs, uint64_t *lens,
                      char *err, size_t errlen);

/* Word counting (the first pass of --tokens words). The arena is no longer
 * used (the map copies the words it counts, see ss__vocab_count()); it stays
 * in the interface so that its callers need not change. */
typedef struct jl_arena {
    struct jl_chunk *head;
} jl_arena;

/* Count the words of the string values of the line's keys into `v` (a bad
 * line counts nothing: the second pass reports it).
 * @return 0, or -2 out of memory. */
int ss__jl_count_line(const jl_spec *s, const uint8_t *line, size_t n, ss_vocab *v, jl_arena *a);

void ss__jl_arena_free(jl_arena *a);

#endif
