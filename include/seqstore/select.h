/* SPDX-License-Identifier: BSD-2-Clause */
/* seqstore/select.h - part of the public API; include <seqstore.h>, not this file.
 *
 * Selections: which examples of a store a job reads. A selection is a sorted
 * list of disjoint half-open index ranges [start, end) inside [0, total),
 * where `total` is the number of examples of the store it was made for.
 * Selections are immutable values owned by the caller; they do not borrow
 * from a store and stay valid after ss_close().
 *
 * Named splits ("train", "valid", "fold3.valid") are selections stored in the
 * store as the attribute `ss.split.<NAME>` (see spec/FORMAT.md). */
#ifndef SEQSTORE_SELECT_H
#define SEQSTORE_SELECT_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One half-open range of example indices [start, end). */
typedef struct ss_range {
    uint64_t start; /**< first index */
    uint64_t end;   /**< one past the last index; start <= end */
} ss_range;

/** An immutable selection (see above); create it with ss_selection_all(),
 *  _create(), _parse(), _kfold(), _filter_length(), _union(), _intersect(),
 *  _minus() or ss_split_load(), free it
 *  with ss_selection_free(). May be shared by threads (every function here
 *  only reads it). */
typedef struct ss_selection ss_selection;

/** Prefix of the attribute that holds a named split. */
#define SS_SPLIT_ATTR_PREFIX "ss.split."

/** Select every example of a store of `total` examples ([0, total)).
 *  @param[out] out the selection; free it with ss_selection_free().
 *  @return 0 or SS_ENOMEM. */
SS_API int ss_selection_all(ss_selection **out, uint64_t total);

/** Make a selection from explicit ranges.
 *
 *  Ranges may come in any order; they are sorted. Empty ranges (start ==
 *  end) are ignored and adjacent ranges are merged.
 *  @param[out] out    the selection; free it with ss_selection_free().
 *  @param[in] ranges  `nranges` ranges (copied).
 *  @param[in] total   examples in the store; every range must lie in [0, total).
 *  @return 0; SS_EINVAL if a range has start > end, two ranges overlap (the
 *          message names them) or `ranges` is NULL with nranges > 0;
 *          SS_ERANGE if a range ends beyond `total`; SS_ENOMEM. */
SS_API int ss_selection_create(ss_selection **out, const ss_range *ranges, size_t nranges,
                               uint64_t total);

/** Parse a selection from text such as "0:800,900:1000", "-100:" or ":50".
 *
 *  The text is a comma-separated list of ranges `A:B` (half-open, like
 *  Python slices without a step) or single indices `A`. A negative bound
 *  counts from `total` (-100 is total - 100); an omitted start is 0 and an
 *  omitted end is `total`. Spaces around numbers are allowed. The ranges
 *  must not overlap and must lie inside [0, total) after resolution.
 *  "all" or ":" selects everything; "" (or only spaces) selects nothing.
 *  @param[out] out   the selection; free it with ss_selection_free().
 *  @param[in]  text  NUL-terminated; not kept.
 *  @param[in]  total examples in the store.
 *  @return 0; SS_EINVAL for a syntax error, an inverted range, overlapping
 *          ranges or NULL text; SS_ERANGE for a bound outside [-total,
 *          total] or a single index outside [-total, total) (the message
 *          quotes the offending range); SS_ENOMEM. */
SS_API int ss_selection_parse(ss_selection **out, const char *text, uint64_t total);

/** Free a selection. Accepts NULL. */
SS_API void ss_selection_free(ss_selection *sel);

/** Number of selected examples; 0 for NULL. */
SS_API uint64_t ss_selection_count(const ss_selection *sel);

/** The `total` the selection was made against (examples in the store); 0
 *  for NULL. */
SS_API uint64_t ss_selection_total(const ss_selection *sel);

/** Number of (sorted, disjoint, non-adjacent, non-empty) ranges. */
SS_API size_t ss_selection_range_count(const ss_selection *sel);

/** The ss_selection_range_count() ranges, sorted; borrowed from `sel`,
 *  valid until ss_selection_free(). Never NULL for a valid selection, even an
 *  empty one; NULL for NULL. */
SS_API const ss_range *ss_selection_ranges(const ss_selection *sel);

/** The store index of the i-th selected example, in O(log ranges).
 *  @param[out] out the index.
 *  @param[in]  sel the selection.
 *  @param[in]  i   position in the selection, < ss_selection_count().
 *  @return 0; SS_ERANGE if i >= count; SS_EINVAL (NULL argument). */
SS_API int ss_selection_index(uint64_t *out, const ss_selection *sel, uint64_t i);

/** Whether store index `index` is selected (O(log ranges)): 1 or 0 (also 0
 *  for NULL). */
SS_API int ss_selection_contains(const ss_selection *sel, uint64_t index);

/** Write the selection as text that ss_selection_parse() reads back
 *  ("0:800,900:1000"; "" when empty), NUL-terminated.
 *  @param[out] buf  `cap` bytes; may be NULL when cap is 0. Holds "" after
 *                   SS_EBUFS (if cap > 0).
 *  @param[in]  cap  bytes of `buf`, including room for the NUL.
 *  @param[out] len  bytes needed without the NUL (may be NULL); set also on
 *                   SS_EBUFS.
 *  @return 0; SS_EBUFS if `cap` is too small (call again with *len + 1);
 *          SS_EINVAL (NULL selection). */
SS_API int ss_selection_format(char *buf, size_t cap, size_t *len, const ss_selection *sel);

/** Options of ss_selection_kfold(). Start from SS_KFOLD_OPTIONS_INIT. */
typedef struct ss_kfold_options {
    unsigned version; /**< SS_KFOLD_OPTIONS_VERSION (1 is also accepted) */
    int shuffle;      /**< 0: contiguous folds; 1: a seeded shuffled assignment */
    uint64_t seed;    /**< seed of the shuffled assignment */
    /* Version 2. */
    int strict;            /**< 1: refuse (SS_EINVAL) a count that k does not
                                divide (Fuel's strict=True): all folds equal */
    const int64_t *groups; /**< NULL, or a group id per selected example (in
                                selection order; see ss_selection_field_values()):
                                grouped folds */
    const int64_t *labels; /**< NULL, or a label per selected example:
                                stratified folds */
} ss_kfold_options;

/** Version 1 ended at seed; both versions are accepted. */
#define SS_KFOLD_OPTIONS_VERSION 2
#define SS_KFOLD_OPTIONS_INIT                                                                      \
    { SS_KFOLD_OPTIONS_VERSION, 0, 0, 0, NULL, NULL }
/** Fill `out` with SS_KFOLD_OPTIONS_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_KFOLD_OPTIONS_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_kfold_options_init(ss_kfold_options *out, unsigned version);

/** Fold `fold` of `k` of a selection, for k-fold cross-validation.
 *
 *  The n selected examples, taken in selection order, are cut into k folds
 *  of floor(n*(i+1)/k) - floor(n*i/k) examples (sizes differ by at most one).
 *  Contiguous: fold i is the positions [floor(n*i/k), floor(n*(i+1)/k)).
 *  Shuffled: the positions are first permuted by a Fisher-Yates shuffle
 *  driven by `seed` (the same on every machine), then cut the same way.
 *  Grouped (options.groups): every group's examples land in one fold.
 *  The groups, largest first (ties: by the group's first example in
 *  selection order, or in a seeded shuffled order with `shuffle`), each go
 *  to the fold with the fewest examples so far (ties: the lowest fold), as
 *  scikit-learn's GroupKFold; fold sizes then differ by at most the largest
 *  group. Use it to keep one subject or recording out of its own training
 *  set.
 *  Stratified (options.labels): the examples sorted by label (ties: in
 *  selection order, or shuffled with `shuffle`) are dealt round-robin, the
 *  j-th to fold j mod k: every label has floor(c/k) or ceil(c/k) of its c
 *  examples in each fold, and fold sizes differ by at most one.
 *  The k validation folds are disjoint and cover the selection exactly once;
 *  `train` is the selection minus `valid`. Both keep the total of `sel`.
 *  @param[out] train the training examples (may be NULL if not wanted);
 *                    free it with ss_selection_free().
 *  @param[out] valid the validation examples (may be NULL if not wanted);
 *                    free it with ss_selection_free().
 *  @param[in]  sel   the selection to fold.
 *  @param[in]  k     number of folds, 2..ss_selection_count(sel).
 *  @param[in]  fold  the validation fold, 0..k-1.
 *  @param[in]  options NULL for contiguous folds.
 *  @return 0; SS_EINVAL if k < 2, fold >= k, k exceeds the count, an unknown
 *          options version or NULL `sel`, strict with a count k does not
 *          divide, strict with groups or labels, groups with labels, fewer
 *          groups than k (the message says which); SS_ENOMEM. */
SS_API int ss_selection_kfold(ss_selection **train, ss_selection **valid, const ss_selection *sel,
                              uint32_t k, uint32_t fold, const ss_kfold_options *options);

/** Per-example integers from a fixed field, for grouped or stratified
 *  folds (a subject id, a label): out[i] = the value of field `field` of
 *  the i-th selected example.
 *  @param[out] out   ss_selection_count(sel) values.
 *  @param[in]  store the store `sel` was made for; read during the call.
 *  @param[in]  sel   the examples.
 *  @param[in]  field a fixed field with one element of an integer dtype.
 *  @return 0; SS_ERANGE (no such field); SS_EINVAL (a field that is not one
 *          integer per example, a selection made for another count, NULL
 *          argument); SS_ECORRUPT (as ss_get()). */
SS_API int ss_selection_field_values(int64_t *out, const ss_store *store, const ss_selection *sel,
                                     uint32_t field);

/** Per-example integers from an attribute array: out[i] = element x of the
 *  attribute `name`, x the i-th selected example. The attribute must be a
 *  typed array of an integer dtype with one element per store example.
 *  @param[out] out   ss_selection_count(sel) values.
 *  @return 0; SS_ENOTFOUND (no such attribute); SS_EINVAL (not an integer
 *          array of ss_count() elements, a selection made for another count,
 *          NULL argument); SS_ECORRUPT (as ss_attr_get()). */
SS_API int ss_selection_attr_values(int64_t *out, const ss_store *store, const ss_selection *sel,
                                    const char *name);

/** The union of two selections made for the same total (indices in a or
 *  b). O(ranges of a + ranges of b).
 *  @param[out] out the result (same total); free it with ss_selection_free().
 *  @return 0; SS_EINVAL (NULL argument, different totals); SS_ENOMEM. */
SS_API int ss_selection_union(ss_selection **out, const ss_selection *a, const ss_selection *b);

/** The intersection (indices in both a and b); as ss_selection_union(). */
SS_API int ss_selection_intersect(ss_selection **out, const ss_selection *a, const ss_selection *b);

/** The difference (indices in a and not in b); as ss_selection_union(). */
SS_API int ss_selection_minus(ss_selection **out, const ss_selection *a, const ss_selection *b);

/** Keep the examples of `sel` whose lengths lie in [min_len, max_len] in
 *  every one of `fields` (a fixed field has length 1). Reads only the length
 *  index, never a data page.
 *  @param[out] out    the kept examples (same total); free it with
 *                     ss_selection_free().
 *  @param[in] store   the store `sel` was made for; only read during the call.
 *  @param[in] sel     the examples to filter.
 *  @param[in] fields  `nfields` >= 1 field indices.
 *  @param[in] min_len lower bound, inclusive.
 *  @param[in] max_len upper bound, inclusive; 0 means no upper bound.
 *  @return 0; SS_EINVAL (no fields, min_len > max_len, NULL argument, or
 *          `sel` was made for a different number of examples than the store
 *          has); SS_ERANGE (a bad field index; the message names it);
 *          SS_ENOMEM. */
SS_API int ss_selection_filter_length(ss_selection **out, const ss_store *store,
                                      const ss_selection *sel, const uint32_t *fields,
                                      size_t nfields,
                                      uint64_t min_len, uint64_t max_len);

/** Load the named split `name` of an open store (attribute ss.split.<name>).
 *  The selection's total is the store's count; it is a copy and does not
 *  borrow from the store.
 *  @param[out] out   the split; free it with ss_selection_free().
 *  @param[in]  store the open store.
 *  @param[in]  name  the split name, as for ss_split_set().
 *  @return 0; SS_ENOTFOUND (no such split; the message names it);
 *          SS_EINVAL (a bad name as for ss_split_set(), NULL store);
 *          SS_ECORRUPT (checksum mismatch, a payload that is not u64 pairs,
 *          an empty, unsorted or overlapping range, or a range beyond the
 *          store); SS_ENOMEM. */
SS_API int ss_split_load(ss_selection **out, const ss_store *store, const char *name);

/** Stage `sel` as the named split `name` on a writer (ss_writer_set_attr();
 *  written at the writer's next commit or finish).
 *  @param[in] w    a writer (ss_writer_create() or ss_writer_open()).
 *  @param[in] name the split name (copied).
 *  @param[in] sel  the examples (copied); it should be made for the count
 *                  the store will have (this is not checked here; ss_split_load()
 *                  refuses ranges beyond the store).
 *  @return 0; SS_EINVAL for an empty name, a name with bytes outside
 *          printable ASCII 0x21..0x7e, one longer than SS_MAX_ATTR_NAME
 *          minus the prefix, or a NULL writer or selection; SS_ENOMEM; as
 *          ss_writer_set_attr(). */
SS_API int ss_split_set(ss_writer *w, const char *name, const ss_selection *sel);

/** Add (or replace) the named split in the finished store at `path`: opens
 *  a writer in append mode, sets the attribute and finishes. The store must
 *  not have an active writer, nor be open (ss_open()) in this process.
 *  On failure the store is unchanged.
 *  @return 0; SS_ERANGE if `sel` reaches beyond the store; SS_EINVAL (a bad
 *          name, NULL path or selection); as ss_writer_open(),
 *          ss_split_set() and ss_writer_finish(). */
SS_API int ss_split_save(const char *path, const char *name, const ss_selection *sel);

#ifdef __cplusplus
}
#endif

#endif /* SEQSTORE_SELECT_H */
