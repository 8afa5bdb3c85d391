/* SPDX-License-Identifier: BSD-2-Clause */
/* seqstore/meta.h - part of the public API; include <seqstore.h>, not this file.
 *
 * Typed metadata: the helpers every user otherwise writes around
 * ss_attr_get(). Attribute values read with their type and element count
 * checked; line lists in their two layouts (a vocabulary: `vocab`, or per
 * side `src.vocab` and `tgt.vocab` in a parallel store without
 * --shared-vocab; class names label.names, subject names subject.names,
 * channel labels signal.labels; spec/FORMAT.md section 7.1);
 * a signal's sample rate (FIELD.sample_rate) and durations in seconds
 * turned into samples, for the window reader's window and overlap.
 *
 * Everything returned is a copy, except the text of ss_lines_get(), which is
 * borrowed from the store's map (valid until ss_close()). */
#ifndef SEQSTORE_META_H
#define SEQSTORE_META_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------ typed attributes */

/** Read attribute `name` as `n` doubles. Any numeric type is accepted, each
 *  element converted exactly (an integer beyond 2^53 in magnitude is
 *  refused rather than rounded); a scalar is n = 1.
 *  @param[out] out  `n` values (unchanged up to the failing one on error).
 *  @param[in]  n    the number of elements the attribute must hold.
 *  @param[in]  s    the store.
 *  @param[in]  name the attribute.
 *  @return 0; SS_ENOTFOUND (no such attribute); SS_EINVAL (text or bytes,
 *          another element count: the message gives both; NULL argument);
 *          SS_ERANGE (a value without an exact double); SS_ECORRUPT
 *          (checksum). */
SS_API int ss_attr_get_f64(double *out, size_t n, const ss_store *s, const char *name);

/** Read attribute `name` as `n` int64 values. Integer types only (a float
 *  attribute is SS_EINVAL); a u64 value above INT64_MAX is SS_ERANGE.
 *  @return as ss_attr_get_f64(). */
SS_API int ss_attr_get_i64(int64_t *out, size_t n, const ss_store *s, const char *name);

/** Read attribute `name` as `n` uint32 values. Integer types only; a value
 *  outside [0, 2^32) is SS_ERANGE.
 *  @return as ss_attr_get_f64(). */
SS_API int ss_attr_get_u32(uint32_t *out, size_t n, const ss_store *s, const char *name);

/** Number of elements of attribute `name`: of its dtype for a typed array,
 *  bytes for text and bytes.
 *  @param[out] out the count.
 *  @return 0; SS_ENOTFOUND; SS_ECORRUPT; SS_EINVAL (NULL argument). */
SS_API int ss_attr_elements(uint64_t *out, const ss_store *s, const char *name);

/** Copy text attribute `name` into `buf`, NUL-terminated.
 *  @param[out] buf `cap` bytes; holds "" after an error (if cap > 0).
 *  @param[in]  cap bytes of buf, including room for the NUL.
 *  @param[out] len the text's length without the NUL (may be NULL); set also
 *                  on SS_EBUFS, so a caller can allocate *len + 1.
 *  @return 0; SS_ENOTFOUND; SS_EINVAL (not text, NULL argument); SS_EBUFS
 *          (cap <= the length); SS_ECORRUPT. */
SS_API int ss_attr_get_text(char *buf, size_t cap, size_t *len, const ss_store *s,
                            const char *name);

/* ------------------------------------------------------------ line lists */

/** A list of strings stored one per line in a text or bytes attribute:
 *  entry k (id k) is the (k + 1)-th line; lines end at LF, CR is an ordinary
 *  byte (spec/FORMAT.md section 7.1). Two layouts are stored, and the
 *  attribute's name says which:
 *  - terminated, LF after every entry: the vocabularies `vocab` and
 *    `FIELD.vocab` (any name ending in ".vocab"), `source.files`,
 *    `convert.options`. n LFs are n entries, zero bytes none. A last entry
 *    without its LF (a vocabulary set by hand) is read as if it had one.
 *  - separated, LF between entries: every other name, the converters'
 *    `FIELD.names` (label.names, subject.names, ...), `signal.labels`,
 *    `signal.units`, `signal.channels`, `convert.converter`, and a list of
 *    your own. The text splits at every LF: k LFs are k + 1 entries, so
 *    zero bytes are one entry, the empty string (a recording without a
 *    patient code), and "P01" LF is "P01" and "".
 *  Entries may be empty anywhere in either layout. The one separated list
 *  written without entries, label.names of `--events-as windows` that found
 *  no event, is zero bytes and reads as one empty entry; its store has no
 *  examples, so no id refers to it. */
typedef struct ss_lines ss_lines;

/** Open the line list in attribute "<name of field>.<suffix>", in the
 *  layout its name gives (above): a parallel side's vocabulary (suffix
 *  "vocab", as src.vocab; its size is ss_lines_count()), the class names of
 *  a label field ("names", as label.names), a recording's subject ("names",
 *  as subject.names), a signal's channel labels ("labels"). With field =
 *  SS_FIELD_NONE, `suffix` is the whole attribute name: "vocab" is the one
 *  vocabulary of a text, jsonl or --shared-vocab parallel store,
 *  "source.files" the input paths (file number k is entry k - 1).
 *  @param[out] out the list; free it with ss_lines_free(). It borrows the
 *                  store: close the store after freeing it.
 *  @return 0; SS_ERANGE (a field beyond the schema); SS_ENOTFOUND (no such
 *          attribute); SS_EINVAL (not text or bytes, a too long name, NULL
 *          argument); SS_ECORRUPT; SS_ENOMEM. */
SS_API int ss_lines_open(ss_lines **out, const ss_store *s, uint32_t field, const char *suffix);

/** Free a line list. Accepts NULL. */
SS_API void ss_lines_free(ss_lines *l);

/** Number of entries (the vocabulary size, the number of classes): LFs
 *  (+ 1 when separated, or when a terminated list's last LF is missing);
 *  a separated list has at least one. 0 for NULL. */
SS_API uint64_t ss_lines_count(const ss_lines *l);

/** Entry `k` without its LF.
 *  @param[out] out the entry's first byte (not NULL even for an empty entry),
 *                  not NUL-terminated, borrowed from the store's map (valid
 *                  until ss_close()); NULL on error.
 *  @param[out] len its bytes (0 for an empty entry, or on error); may be NULL.
 *  @return 0; SS_ERANGE (k >= ss_lines_count()); SS_EINVAL (NULL out or l). */
SS_API int ss_lines_get(const char **out, size_t *len, const ss_lines *l, uint64_t k);

/* ------------------------------------------------------- time and samples */

/** The sample rate of sequence field `field`: the f64 attribute
 *  "<name of field>.sample_rate" (signal.sample_rate for EDF stores).
 *  @param[out] out samples per second, > 0.
 *  @return 0; SS_ERANGE (no such field); SS_ENOTFOUND (no sample rate);
 *          SS_EINVAL (not one finite positive number); SS_ECORRUPT. */
SS_API int ss_sample_rate(double *out, const ss_store *s, uint32_t field);

/** `seconds` of field `field` in samples, by its sample rate: for the
 *  window reader's window and overlap (2 s at 256 Hz is 512). A duration
 *  that is not a whole number of samples (within 1e-6 relative) is refused
 *  rather than rounded.
 *  @param[out] out the number of samples.
 *  @return 0; SS_EINVAL (a negative, non-finite or fractional duration, and
 *          as ss_sample_rate()). */
SS_API int ss_seconds_to_samples(uint64_t *out, const ss_store *s, uint32_t field, double seconds);

#ifdef __cplusplus
}
#endif

#endif /* SEQSTORE_META_H */
