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

#define XXH_INLINE_ALL /* the hash is taken once per word: no call */
#include <xxhash.h>

#define SS_VOCAB_PAD 0
#define SS_VOCAB_UNK 1
#define SS_VOCAB_BOS 2
#define SS_VOCAB_EOS 3
#define SS_VOCAB_NSPECIAL 4

/** A hash map from byte strings to a 64-bit value: a count while counting,
 *  an id in a vocabulary. */
typedef struct ss_vocab ss_vocab;

/** An empty map. @return 0, or -1 out of memory. */
int ss__vocab_new(ss_vocab **out);
void ss__vocab_free(ss_vocab *v);

/** Add `n` to the count of word [w, w + len). The map copies the bytes of a
 *  word it has not seen (they need not outlive the call).
 *  @return 0, or -1 out of memory. */
int ss__vocab_count(ss_vocab *v, const uint8_t *w, size_t len, uint64_t n);

/** Add every count of `from` into `into` (new words copied). @return 0 or -1. */
int ss__vocab_merge(ss_vocab *into, const ss_vocab *from);

/** ss__vocab_merge() that also says where each word of `from` went:
 *  entry_no[k] ([ss__vocab_entries(from)], NULL: not wanted) gets the entry
 *  number in `into` (ss__vocab_count_at()) of entry k of `from`. */
int ss__vocab_merge_at(ss_vocab *into, const ss_vocab *from, uint32_t *entry_no);

/** Distinct words counted. */
uint64_t ss__vocab_entries(const ss_vocab *v);

/** Build a vocabulary from counts: the 4 reserved tokens, then every word
 *  with count >= min_count, most frequent first, ties by bytes; at most
 *  max_size tokens in all (0 = no limit). Words equal to a reserved token get
 *  the reserved id. The result owns copies of its tokens. @return 0 or -1. */
int ss__vocab_build(ss_vocab **out, const ss_vocab *counts, uint64_t min_count, uint64_t max_size);

/** ss__vocab_build() that also gives the id of every entry of `counts`:
 *  ids[k] ([ss__vocab_entries(counts)], NULL: not wanted) is what
 *  ss__vocab_lookup() of entry k's word returns in *out, SS_VOCAB_UNK for a
 *  word the vocabulary dropped; a caller maps entry numbers to ids without
 *  looking the words up. @return 0 or -1 (ids then undefined). */
int ss__vocab_build_ids(ss_vocab **out, const ss_vocab *counts, uint64_t min_count,
                        uint64_t max_size, uint32_t *ids);

/** Parse a vocabulary text (one token per line in id order; a final newline
 *  is optional; a trailing '\r' is removed). Copies the text.
 *  @param[out] err a message on failure ("line 7: duplicate token 'the'").
 *  @return 0, or -1. */
int ss__vocab_parse(ss_vocab **out, const char *text, size_t size, char *err, size_t errlen);

/** Id of token [w, w + len), or -1 if absent. Thread-safe on a finished vocabulary. */
int64_t ss__vocab_lookup(const ss_vocab *v, const uint8_t *w, size_t len);

/** A word as the map takes it: its bytes, their first and last 8 as
 *  numbers and its hash (ss_vocab_key_of(), or ss_vocab_key_fast() where 8
 *  bytes can be read at w). Words of up to 16 bytes are told apart by
 *  `pre`, `tail` and `len` alone, in the table's slot, without reading the
 *  words' bytes. */
typedef struct ss_vocab_key {
    const uint8_t *w;
    size_t len;
    uint64_t pre;  /* w[0..min(len, 8)) as ss_vocab_load64() reads them, the rest 0 */
    uint64_t tail; /* w[len - 8..len) when len > 8, else 0 */
    uint64_t hash; /* XXH3-64 of pre (len <= 8) or of the bytes (len > 8) */
} ss_vocab_key;

static inline uint64_t ss_vocab_load64(const uint8_t *p) {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

/* The bits of the first min(len, 8) bytes of a loaded 8-byte word (len >= 1). */
static inline uint64_t ss_vocab_prefix_mask(size_t len) {
    unsigned drop = 8 * (unsigned)(8 - (len < 8 ? len : 8));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return ~0ull << drop;
#else
    return ~0ull >> drop;
#endif
}

/* The hash of a word whose pre is set. XXH3 (libxxhash, inlined: one call
 * per word of the text); a word of up to 8 bytes hashes as its `pre`, 8
 * bytes with a fixed length, so that no branch depends on its length. Only
 * equal words must hash equal; ids never depend on the hash. */
static inline uint64_t ss_vocab_hash_of(const uint8_t *w, size_t len, uint64_t pre) {
    return len <= 8 ? XXH3_64bits(&pre, 8) : XXH3_64bits(w, len);
}

/** The key of [w, w + len), reading only those bytes. */
static inline ss_vocab_key ss_vocab_key_of(const uint8_t *w, size_t len) {
    ss_vocab_key k = {w, len, 0, 0, 0};
    if (len >= 8) {
        k.pre = ss_vocab_load64(w);
        if (len > 8) k.tail = ss_vocab_load64(w + len - 8);
    } else if (len) {
        uint8_t b[8] = {0};
        memcpy(b, w, len);
        k.pre = ss_vocab_load64(b);
    }
    k.hash = ss_vocab_hash_of(w, len, k.pre);
    return k;
}

/** The key of [w, w + len) (len >= 1) where w[0..8) may be read (bytes
 *  past the word are masked off): no branch on the length for short words. */
static inline ss_vocab_key ss_vocab_key_fast(const uint8_t *w, size_t len) {
    ss_vocab_key k = {w, len, ss_vocab_load64(w) & ss_vocab_prefix_mask(len), 0, 0};
    /* the tail's load and mask are selected, not branched on */
    k.tail = ss_vocab_load64(len > 8 ? w + len - 8 : w) & (len > 8 ? ~0ull : 0);
    k.hash = ss_vocab_hash_of(w, len, k.pre);
    return k;
}

/** ss__vocab_count() and ss__vocab_lookup() of a key. */
int ss__vocab_count_key(ss_vocab *v, const ss_vocab_key *k, uint64_t n);
int64_t ss__vocab_lookup_key(const ss_vocab *v, const ss_vocab_key *k);

/** ss__vocab_count_key() that also says which entry the word is: *entry_no is
 *  its entry number, 0..ss__vocab_entries()-1 in the order words were first
 *  counted (an entry keeps its number as the map grows and when other maps
 *  are merged into it). Lets a caller remember the words of a text as
 *  numbers and map them to ids later without looking them up again.
 *  @return 0, or -1 out of memory (*entry_no unchanged). */
int ss__vocab_count_at(ss_vocab *v, const ss_vocab_key *k, uint64_t n, uint32_t *entry_no);

/** ss__vocab_count_at() with n = 1 for the n words keys[i], in order;
 *  entry_no[i] gets word i's entry number. Faster than one call per word for
 *  large maps: it fetches the table memory of all n words before counting
 *  them. @return 0, or -1 out of memory (the words before the failing one
 *  are counted). */
int ss__vocab_count_batch(ss_vocab *v, size_t n, const ss_vocab_key *keys, uint32_t *entry_no);

/** The bytes of entry `k` of a map (see ss__vocab_count_at(); not
 *  NUL-terminated, owned by the map), its length in *len; NULL if k >=
 *  ss__vocab_entries(). */
const uint8_t *ss__vocab_entry(const ss_vocab *v, uint64_t k, size_t *len);

/** Number of tokens (ids are 0..size-1). */
uint64_t ss__vocab_size(const ss_vocab *v);

/** Token of `id` (not NUL-terminated), its length in *len; NULL if out of range. */
const uint8_t *ss__vocab_token(const ss_vocab *v, uint64_t id, size_t *len);

/** The vocabulary as text, one token per line (malloc'ed; *size bytes, also
 *  NUL-terminated). NULL when out of memory. */
char *ss__vocab_text(const ss_vocab *v, size_t *size);

/** Counts as text, one "WORD\tCOUNT\n" line per word (words hold no
 *  whitespace), most frequent first, ties by bytes (malloc'ed; *size bytes,
 *  also NUL-terminated). NULL when out of memory. */
char *ss__vocab_counts_text(const ss_vocab *counts, size_t *size);

#endif
