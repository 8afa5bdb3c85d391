/* SPDX-License-Identifier: BSD-2-Clause */
/* text.h - the text engine behind `convert lines`, `convert text` and
 * `convert parallel` (internal to the command line).
 *
 * Inputs are split into blocks at example boundaries; worker threads turn
 * blocks into examples (tokens + line numbers, or a bad-record message) and
 * the calling thread appends them in block order, so the store does not
 * depend on the number of threads. */
#ifndef SS_TEXT_H
#define SS_TEXT_H

#include "convert.h"
#include "vocab.h"

#include <stddef.h>
#include <stdint.h>

enum { TX_BYTES, TX_CHARS, TX_WORDS, TX_IDS, TX_SPM }; /* --tokens; --tokenizer spm: */
enum { TX_LINES, TX_DOCS_BLANK, TX_DOCS_SEP };         /* example boundaries */
enum { TX_UNREAD = 2 };                                /* tx_block.other_shard: lines not needed */

/* The tokenizer of one side (one field). */
typedef struct tx_tok {
    int kind;            /* TX_... */
    int bos_on, eos_on;  /* --bos / --eos */
    uint64_t vocab_size; /* ids: --vocab-size, 0 = unchecked */
    /* derived by ss__tx_prepare_tokens */
    const ss_vocab *vocab;    /* words */
    const struct ss_spm *spm; /* TX_SPM: the model (spm.h) */
    const char *spm_model;    /* TX_SPM: its path */
    uint32_t bos, eos, unk;   /* ids of the special tokens */
    ss_dtype dtype;
    uint32_t esize;
} tx_tok;

/* One input file, read-only in memory (mapped, or decompressed). */
typedef struct tx_input {
    const char *path;
    const uint8_t *data;
    size_t size;
    void *map; /* munmap(map, map_len) if not NULL */
    size_t map_len;
    void *owned;     /* free() if not NULL */
    uint32_t source; /* ss__conv_add_source() number */
    int ok;          /* 0: skipped (unreadable, --skip-bad) */
} tx_input;

/* A block: side s covers input bytes [start[s], end[s]). Text: side 0 of
 * inputs[input]. Parallel: side 0 of inputs[0], side 1 of inputs[1]. */
typedef struct tx_block {
    uint32_t input;
    size_t start[2], end[2];
    int other_shard; /* --shard: another shard's block; only its lines are counted
                      * (TX_UNREAD: not even those, no later block is ours) */
} tx_block;

/* One example (or bad record) of a processed block. */
typedef struct tx_item {
    uint64_t off[2], len[2]; /* tokens: offset (elements) into tok[s] or data */
    uint64_t line;           /* 1-based within the block */
    uint32_t bad[2];         /* 1 + offset of a message in msgs, or 0 */
    uint8_t zero_copy[2];    /* off[s] is a byte offset into the input data */
} tx_item;

/* Pass 1's words of one side of one block (--tokens words, counted in this
 * process): the entry number (ss__vocab_count_at()) of every word in order,
 * in the map of the thread that counted it, and the number of words and
 * the first line of each example. Pass 2 then maps them to ids through that
 * map's remap table instead of finding the words in the text and the
 * vocabulary again; a text (one side) is not read again at all. */
typedef struct tx_blockids {
    uint32_t *tok;  /* [ntok]; NULL: not kept (pass 2 looks the words up) */
    uint32_t *nper; /* [nex]: words per example */
    uint32_t *line; /* [nex]: its first line, 1-based within the block */
    size_t ntok, nex, tok_cap, nex_cap;
    uint64_t nlines;   /* lines of the block */
    uint64_t nskipped; /* blank examples --skip-empty dropped */
    int map;           /* index into tx_wordids.remap */
} tx_blockids;

/* The words pass 1 kept (ss__tx_build_vocabs()); owned by the job. */
typedef struct tx_wordids {
    tx_blockids *blocks; /* [nblocks * 2]: block b, side s at [2 * b + s] */
    uint32_t **remap;    /* [nmaps]: entry number of map k -> id (<unk> if dropped) */
    uint64_t *nremap;    /* [nmaps]: while the vocabulary is built, entries of remap[k] */
    int nmaps;
} tx_wordids;

/* A processed block; buffers are reused from block to block. */
typedef struct tx_slot {
    tx_item *items;
    size_t nitems, items_cap;
    uint8_t *tok[2];
    size_t tokn[2], tok_cap[2]; /* tokn in elements, tok_cap in bytes */
    char *msgs;
    size_t msgn, msgs_cap;
    uint64_t nlines;   /* lines of side 0 in the block */
    uint64_t nskipped; /* side 0's blank examples --skip-empty dropped */
    int oom;
    size_t idpos[2], expos[2]; /* side s: next word and example of the tx_blockids */
} tx_slot;

typedef struct tx_job {
    int nsides; /* 1 or 2 */
    const char *field[2];
    tx_tok tok[2];
    int mode; /* TX_LINES, ... */
    const char *sep;
    size_t seplen;
    int skip_empty;
    tx_input *inputs;
    uint32_t ninputs;
    tx_block *blocks;
    size_t nblocks;
    size_t block_bytes;        /* 0 = default (1 MiB) */
    const char *vocab_attr[2]; /* attribute holding side s's vocabulary, or NULL */
    tx_wordids *ids;           /* pass 1's words, or NULL; ss__tx_wordids_free() */
    /* counts files (wordcounts.c): the "options" line's value when the
     * converter is not the text engine's (jsonl: "jsonl<TAB>keys<TAB>K,...");
     * NULL: mode, skip_empty, shared and sep */
    const char *counts_options;
} tx_job;

/* The options of `convert text` (and `convert lines`). */
typedef struct tx_text_options {
    int kind, mode;
    const char *sep;
    int skip_empty, bos, eos;
    uint64_t min_count, max_vocab, vocab_size;
    const char *vocab_from;
    const char *spm_model; /* --tokenizer spm:MODEL (kind TX_SPM) */
    char **inputs;
    int ninputs;
    int count_only;      /* --count-only: write this shard's word counts */
    const char **counts; /* --counts FILE...: the vocabulary from these counts */
    int ncounts;
} tx_text_options;

/* `convert text` after option parsing (also used by `convert lines`). */
int ss__tx_text_convert(ss_conv *c, const tx_text_options *o);

/* Parse "--tokens" values. @return TX_... or -1. */
int ss__tx_parse_kind(const char *name);
/* The vocabulary-size options shared by `convert text` and `convert parallel`
 * (--min-count, --max-vocab, --vocab-size) with value v. Returns 1 if `a` is
 * one of them and v was taken, 0 if `a` is not one of them, 2 on a usage
 * error (printed). */
int ss__tx_parse_count_option(ss_conv *c, const char *a, const char *v, uint64_t *min_count,
                              uint64_t *max_vocab, uint64_t *vocab_size);
const char *ss__tx_kind_name(int kind);
/* The attributes that describe a token field `field` tokenized as `t`
 * (spec/FORMAT.md §7.4): FIELD.tokens (the kind), FIELD.bos and .eos when
 * on, FIELD.vocab_size of ids, a SentencePiece model's (from `spm_model`),
 * and a words vocabulary as attribute `vocab_attr` (text, or bytes when it
 * is not UTF-8; NULL: not written here). @return 0, or 1 (printed). */
int ss__tx_field_attrs(ss_conv *c, const tx_tok *t, const char *field, const char *vocab_attr,
                       const char *spm_model);
/* The options `convert text` and `convert jsonl` share: --bos, --eos, the
 * count options above, --vocab, --count-only, --counts; pointers to the
 * fields of their options (TX_VOCAB_ARGS(o), both name them alike). counts
 * has room for every argument. */
typedef struct tx_vocab_args {
    int *bos, *eos, *count_only, *ncounts;
    uint64_t *min_count, *max_vocab, *vocab_size;
    const char **vocab_from;
    const char ***counts;
} tx_vocab_args;
#define TX_VOCAB_ARGS(o)                                                                      \
    {&(o)->bos, &(o)->eos, &(o)->count_only, &(o)->ncounts, &(o)->min_count, &(o)->max_vocab, \
     &(o)->vocab_size, &(o)->vocab_from, &(o)->counts}
/* Before the arguments: the defaults (--min-count 1) and room in *va->counts
 * and *inputs for each of the argc arguments. @return 0, or 1 (out of memory,
 * printed). */
int ss__tx_vocab_args_begin(ss_conv *c, const tx_vocab_args *va, char ***inputs, int argc);
/* Take option `a` (with value v, or NULL when it is the last argument) if it
 * is one of those: 1 (and *i advanced past a value taken), 0 if it is not
 * one of them, 2 on a usage error (printed). */
int ss__tx_vocab_option(ss_conv *c, const tx_vocab_args *va, const char *a, const char *v, int *i);
/* The checks of --count-only and --counts shared by `convert text` and
 * `convert parallel` (`words`: some side has --tokens words). @return 0 or
 * 2 (usage error printed). */
int ss__tx_check_count_options(ss_conv *c, int words, int count_only, int ncounts, int vocab_from);

/* Derive bos/eos/unk ids and the dtype of `t` (vocab already set for words).
 * @return 0, or 1 (error printed through `c`; c may be NULL: no message). */
int ss__tx_prepare_tokens(ss_conv *c, tx_tok *t, const char *field);

/* Split every ok input into blocks (text) or both inputs in lockstep
 * (parallel; their line counts must be equal). @return 0, -1 out of memory. */
int ss__tx_split(tx_job *j);

/* ss__tx_split() for a conversion: with --shard K/N, blocks are also cut at the
 * first line (document) boundaries at or after this shard's byte bounds,
 * so the shard holds the examples whose first line starts in its byte range
 * (documents: whose preceding separator ends there), whatever the block
 * size. @return 0, -1 out of memory. */
int ss__tx_split_shard(ss_conv *c, tx_job *j);

/* --shard K/N: give the slicing each input's loaded size (a parallel
 * corpus: side 0's; side 1 counts 0), mark every block whose first byte
 * another shard owns (ss__tx_process_block() then only counts its lines, so line
 * numbers stay those of a single-process run; not even that, TX_UNREAD,
 * when no block of this shard follows in the same input) and have ss__conv_bad() trust
 * the caller, which reports bad records of its own blocks only. Blocks are
 * cut at line (document) boundaries, so a large file is sliced there. Call it
 * after ss__tx_split() and before ss__conv_begin(). @return 0, or 1 (error
 * printed). */
int ss__tx_shard_blocks(ss_conv *c, tx_job *j);

/* Turn block `b` into items in `slot` (no I/O; thread-safe for distinct
 * blocks). Frees the words pass 1 kept of the block (j->ids) once they are
 * in `slot`: a block is processed once. */
void ss__tx_process_block(const tx_job *j, const tx_block *b, tx_slot *slot);

void ss__tx_slot_free(tx_slot *slot);

/* Count the lines of [d, d + n) (a last line without '\n' counts). */
uint64_t ss__tx_count_lines(const uint8_t *d, size_t n);

/* Read `path` ("-" = stdin; "*.gz" decompressed) into `in`. On failure
 * returns -1 with a message in err. */
int ss__tx_input_load(tx_input *in, const char *path, char *err, size_t errlen);
void ss__tx_input_release(tx_input *in);

/* Load the vocabulary FROM (a store: attribute `<field>.vocab`, else
 * `vocab`; or a text file, one token per line). @return 0 or 1 (printed). */
int ss__tx_vocab_load(ss_conv *c, ss_vocab **out, const char *from, const char *field);

/* Build word vocabularies by counting (pass 1), using `threads` threads.
 * vocab[s] gets side s's vocabulary; with `shared`, both sides count into
 * one vocabulary, returned in vocab[0] (vocab[1] = NULL).
 * Sides whose `skip[s]` is set are not counted. Pass 1 also keeps the words
 * it counted as numbers in j->ids (up to a memory budget: a quarter of the
 * memory the process may use, memlimit.h; blocks beyond it are looked up
 * again in pass 2), which
 * ss__tx_process_block() then uses; the store is the same either way. Free them
 * with ss__tx_wordids_free(). @return 0 or 1. */
int ss__tx_build_vocabs(ss_conv *c, tx_job *j, int threads, uint64_t min_count, uint64_t max_vocab,
                        int shared, const int skip[2], ss_vocab *vocab[2]);

/* Free j->ids (if any) and set it to NULL. */
void ss__tx_wordids_free(tx_job *j);

/* Count the words of every block of this shard (blocks marked other_shard
 * are skipped) with `threads` threads: counts[s] for side s, or with
 * `shared` one map in counts[0] (counts[1] = NULL). Sides with skip[s] set
 * are not counted. @return 0 or 1 (printed). */
int ss__tx_count_words(ss_conv *c, const tx_job *j, int threads, int shared, const int skip[2],
                       ss_vocab *counts[2]);

/* The vocabularies of counts (as ss__tx_build_vocabs(), which is
 * ss__tx_count_words() and this). @return 0 or 1 (printed). */
int ss__tx_vocabs_from_counts(ss_conv *c, ss_vocab *counts[2], uint64_t min_count,
                              uint64_t max_vocab, int shared, const int skip[2],
                              ss_vocab *vocab[2]);

/* --count-only (wordcounts.c): count this shard's words (after ss__tx_split())
 * and write them to the output path as a counts file; no store is written.
 * @return 0 or 1 (printed). */
int ss__tx_write_counts(ss_conv *c, tx_job *j, int threads, int shared, const int skip[2]);

/* ss__tx_write_counts() of counts a caller counted itself (after ss__conv_no_store()
 * and ss__tx_shard_blocks(); convert jsonl): counts[s] for each side not
 * skipped, or counts[0] when `shared`. @return 0 or 1 (printed). */
int ss__tx_write_counts_of(ss_conv *c, const tx_job *j, int shared, const int skip[2],
                           ss_vocab *const counts[2]);

/* --counts: sum the counts files `paths` (each holding one or more shards'
 * documents) into counts[] as ss__tx_count_words() would have counted the whole
 * input, after checking that they counted these inputs (basename and size)
 * with these options and cover shards 0..N-1 once each. @return 0 or 1
 * (printed, naming the file and line, or the missing shard). */
int ss__tx_read_counts(ss_conv *c, const tx_job *j, int shared, const int skip[2],
                       const char *const *paths, int npaths, ss_vocab *counts[2]);

/* Token id v as element i of an array of esize-byte (1, 2 or 4) unsigned
 * integers at base: how every text converter writes its ids. */
static inline void tx_put_id(uint8_t *base, uint32_t esize, size_t i, uint32_t v) {
    if (esize == 1)
        base[i] = (uint8_t)v;
    else if (esize == 2)
        ((uint16_t *)(void *)base)[i] = (uint16_t)v;
    else
        ((uint32_t *)(void *)base)[i] = v;
}

/* Begin the store, write the text attributes, run the pipeline.
 * @return 0, or 1 (printed). */
int ss__tx_run(ss_conv *c, tx_job *j);

#endif
