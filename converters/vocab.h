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
#include <string.h>

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

/** Add `n` to the count of word [w, w + len). The map copies the bytes of a
 *  word it has not seen (they need not outlive the call).
 *  @return 0, or -1 out of memory. */
int ss_vocab_count(ss_vocab *v, const uint8_t *w, size_t len, uint64_t n);

/** Add every count of `from` into `into` (new words copied). @return 0 or -1. */
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

/** The hash the map uses, inline for callers that find a word's end
 *  themselves and then look it up with ss_vocab_count_h()/ss_vocab_lookup_h().
 *  It reads the word 8 bytes at a time (overlapping loads inside [w, w + len),
 *  never past it) with one multiply per 8 bytes rather than a chain of one
 *  multiply per byte (counting 100 MB of words: about 25 rather than 28 ns
 *  per word; scanning for the word's end and the table lookup are the rest).
 *  Only equal words must hash equal; ids never depend on the hash. */
static inline uint64_t ss_vocab_load64(const uint8_t *p) {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}
static inline uint64_t ss_vocab_load32(const uint8_t *p) {
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
}
static inline uint64_t ss_vocab_mix(uint64_t h, uint64_t x) {
    h = (h ^ x) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}
static inline uint64_t ss_vocab_hash(const uint8_t *w, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull ^ (len * 0xbf58476d1ce4e5b9ull);
    if (len >= 8) {
        size_t i = 0;
        for (; i + 8 < len; i += 8) h = ss_vocab_mix(h, ss_vocab_load64(w + i));
        h = ss_vocab_mix(h, ss_vocab_load64(w + len - 8)); /* overlaps the previous */
    } else if (len >= 4) {
        h = ss_vocab_mix(h, ss_vocab_load32(w) | ss_vocab_load32(w + len - 4) << 32);
    } else if (len) {
        h = ss_vocab_mix(h,
                         (uint64_t)w[0] | (uint64_t)w[len / 2] << 8 | (uint64_t)w[len - 1] << 16);
    }
    h *= 0x94D049BB133111EBull;
    return h ^ (h >> 32);
}

/** ss_vocab_count() and ss_vocab_lookup() with a precomputed ss_vocab_hash(). */
int ss_vocab_count_h(ss_vocab *v, const uint8_t *w, size_t len, uint64_t hash, uint64_t n);
int64_t ss_vocab_lookup_h(const ss_vocab *v, const uint8_t *w, size_t len, uint64_t hash);

/** ss_vocab_count_h() that also says which entry the word is: *entry_no is
 *  its entry number, 0..ss_vocab_entries()-1 in the order words were first
 *  counted (an entry keeps its number as the map grows and when other maps
 *  are merged into it). Lets a caller remember the words of a text as
 *  numbers and map them to ids later without looking them up again.
 *  @return 0, or -1 out of memory (*entry_no unchanged). */
int ss_vocab_count_at(ss_vocab *v, const uint8_t *w, size_t len, uint64_t hash, uint64_t n,
                      uint32_t *entry_no);

/** ss_vocab_count_at() with n = 1 for the n words w[i] (len[i] bytes,
 *  hash[i] = ss_vocab_hash()), in order; entry_no[i] gets word i's entry
 *  number. Faster than one call per word for large maps: it fetches the
 *  table memory of all n words before counting them. @return 0, or -1 out
 *  of memory (the words before the failing one are counted). */
int ss_vocab_count_batch(ss_vocab *v, size_t n, const uint8_t *const *w, const uint32_t *len,
                         const uint64_t *hash, uint32_t *entry_no);

/** The bytes of entry `k` of a map (see ss_vocab_count_at(); not
 *  NUL-terminated, owned by the map), its length in *len; NULL if k >=
 *  ss_vocab_entries(). */
const uint8_t *ss_vocab_entry(const ss_vocab *v, uint64_t k, size_t *len);

/** Number of tokens (ids are 0..size-1). */
uint64_t ss_vocab_size(const ss_vocab *v);

/** Token of `id` (not NUL-terminated), its length in *len; NULL if out of range. */
const uint8_t *ss_vocab_token(const ss_vocab *v, uint64_t id, size_t *len);

/** The vocabulary as text, one token per line (malloc'ed; *size bytes, also
 *  NUL-terminated). NULL when out of memory. */
char *ss_vocab_text(const ss_vocab *v, size_t *size);

/** Counts as text, one "WORD\tCOUNT\n" line per word (words hold no
 *  whitespace), most frequent first, ties by bytes (malloc'ed; *size bytes,
 *  also NUL-terminated). NULL when out of memory. */
char *ss_vocab_counts_text(const ss_vocab *counts, size_t *size);

#endif
