/* SPDX-License-Identifier: BSD-2-Clause */
/* vocab.h - word counting and vocabularies for `convert text --tokens words`.
 *
 * A vocabulary maps tokens (byte strings without whitespace) to ids 0..size-1.
 * Built vocabularies start with the reserved tokens <pad>=0, <unk>=1, <bos>=2,
 * <eos>=3, followed by the words in decreasing count, ties broken by byte-wise
 * comparison (so the result does not depend on the input order or on the
 * number of threads that counted). Stored in a store as the attribute
 * `vocab`: one token per line, in id order; of type text when every token is
 * valid UTF-8, else of type bytes (text attributes are UTF-8 by the spec). */
#ifndef SS_VOCAB_H
#define SS_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#define SS_VOCAB_PAD 0
#define SS_VOCAB_UNK 1
#define SS_VOCAB_BOS 2
#define SS_VOCAB_EOS 3
#define SS_VOCAB_NSPECIAL 4

/** A hash map from byte strings to a 64-bit value: a count while counting,
 *  an id in a vocabulary. */
typedef struct ss_vocab ss_vocab;

/** An empty map. @return 0, or -1 out of memory. */
int ss_vocab_new(ss_vocab **out);
void ss_vocab_free(ss_vocab *v);

/** Add `n` to the count of word [w, w + len). The bytes are borrowed: they
 *  must stay valid as long as `v` (they point into the mapped input).
 *  @return 0, or -1 out of memory. */
int ss_vocab_count(ss_vocab *v, const uint8_t *w, size_t len, uint64_t n);

/** Add every count of `from` into `into` (keys stay borrowed). @return 0 or -1. */
int ss_vocab_merge(ss_vocab *into, const ss_vocab *from);

/** Distinct words counted. */
uint64_t ss_vocab_entries(const ss_vocab *v);

/** Build a vocabulary from counts: the 4 reserved tokens, then every word
 *  with count >= min_count, most frequent first, ties by bytes; at most
 *  max_size tokens in all (0 = no limit). Words equal to a reserved token get
 *  the reserved id. The result owns copies of its tokens. @return 0 or -1. */
int ss_vocab_build(ss_vocab **out, const ss_vocab *counts, uint64_t min_count, uint64_t max_size);

/** Parse a vocabulary text (one token per line in id order; a final newline
 *  is optional; a trailing '\r' is removed). Copies the text.
 *  @param[out] err a message on failure ("line 7: duplicate token 'the'").
 *  @return 0, or -1. */
int ss_vocab_parse(ss_vocab **out, const char *text, size_t size, char *err, size_t errlen);

/** Id of token [w, w + len), or -1 if absent. Thread-safe on a finished vocabulary. */
int64_t ss_vocab_lookup(const ss_vocab *v, const uint8_t *w, size_t len);

/** The hash the map uses, for callers that compute it while scanning a word:
 *  h = SS_VOCAB_HASH_INIT; for each byte: h = ss_vocab_hash_step(h, byte);
 *  then ss_vocab_hash_final(h). */
#define SS_VOCAB_HASH_INIT 0xcbf29ce484222325ull
static inline uint64_t ss_vocab_hash_step(uint64_t h, uint8_t byte) {
    return (h ^ byte) * 0x100000001b3ull;
}
static inline uint64_t ss_vocab_hash_final(uint64_t h) {
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}
uint64_t ss_vocab_hash(const uint8_t *w, size_t len);

/** ss_vocab_count() and ss_vocab_lookup() with a precomputed ss_vocab_hash(). */
int ss_vocab_count_h(ss_vocab *v, const uint8_t *w, size_t len, uint64_t hash, uint64_t n);
int64_t ss_vocab_lookup_h(const ss_vocab *v, const uint8_t *w, size_t len, uint64_t hash);

/** Number of tokens (ids are 0..size-1). */
uint64_t ss_vocab_size(const ss_vocab *v);

/** Token of `id` (not NUL-terminated), its length in *len; NULL if out of range. */
const uint8_t *ss_vocab_token(const ss_vocab *v, uint64_t id, size_t *len);

/** The vocabulary as text, one token per line (malloc'ed; *size bytes, also
 *  NUL-terminated). NULL when out of memory. */
char *ss_vocab_text(const ss_vocab *v, size_t *size);

#endif
