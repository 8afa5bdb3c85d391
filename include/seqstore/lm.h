/* SPDX-License-Identifier: BSD-2-Clause */
/* seqstore/lm.h - part of the public API; include <seqstore.h>, not this file.
 *
 * Language-model pretraining samples, exactly as Megatron-Core builds them.
 *
 * The input is a token field of a store or dataset, one example per
 * document, each document ending with the end-of-document token `eod` (or,
 * with SS_LM_APPEND_EOD, with `eod` appended by this module: the document
 * is then the example's tokens followed by one `eod`). The documents are
 * laid end to end and cut into samples of L + 1 consecutive tokens; sample
 * i gives the L input tokens (the first L), the L labels (the last L: the
 * tokens shifted by one), and per token a loss mask, a position id and a
 * segment. Consecutive samples overlap by one token.
 *
 * The index is Megatron-Core's GPTDataset index
 * (_build_document_sample_shuffle_indices, megatron-core 0.16), for the
 * train split of all documents, add_extra_token_to_sequence on:
 *  - T = tokens per epoch (the sum of the document lengths);
 *    E = epochs = the smallest E >= 1 with E * T >= num_samples * L + 1
 *    (E = 1 when num_samples is 0);
 *  - separate_final_epoch = E > 1 and
 *    (num_samples - s) < (int64)(0.80 * p), where
 *    s = ((E - 1) * T - 1) / L and p = (T - 1) / L (integer division,
 *    0.80 * p in IEEE double);
 *  - the document index: E copies of 0..n-1, epoch after epoch, shuffled as
 *    one array by numpy.random.RandomState(seed).shuffle(); with
 *    separate_final_epoch the first E - 1 copies are shuffled as one array,
 *    then the last copy on its own, by the same RandomState;
 *  - the sample index: Megatron's helpers.build_sample_idx: walking the
 *    document index, sample k starts at (document position, offset) and
 *    takes L + 1 tokens, possibly spanning several documents (empty ones
 *    included); the next sample starts at the last of them. There are
 *    S = (E * T - 1) / L samples (which may exceed num_samples);
 *  - the shuffle index: the permutation of 0..S-1 that the same RandomState
 *    then draws with shuffle(arange(S)); with separate_final_epoch,
 *    shuffle(arange(s)) followed by shuffle(arange(s, S)).
 *  Sample i is sample shuffle[i] of the sample index. numpy's legacy
 *  MT19937 and its shuffle are reproduced bit for bit in C, so sample i
 *  holds the same L + 1 tokens as Megatron's GPTDataset[i] for the same
 *  seed, L and num_samples.
 *
 * Per token t (0 <= t < L) of a sample, as Megatron's
 * _get_ltor_masks_and_position_ids computes them from the input tokens:
 *  - loss_mask[t] = 0 where SS_LM_EOD_MASK_LOSS is set and tokens[t] is
 *    eod, else 1;
 *  - segment: the number of eod tokens among tokens[0..t) when
 *    SS_LM_RESET_ATTENTION_MASK is set, else 0; token t may attend to token
 *    u iff u <= t and both are in the same segment (this is Megatron's
 *    attention mask: an eod ends its segment and belongs to it);
 *    cu_seqlens holds the offsets where segments start, then L
 *    (FlashAttention's varlen layout for one row: 0 = cu[0] < cu[1] < ...
 *    < cu[nsegments] = L);
 *  - position_ids[t] = t - (the offset of t's document start in the row)
 *    when SS_LM_RESET_POSITION_IDS is set (counting restarts at 0 after
 *    every eod), else t.
 *
 * Building reads only the stored lengths (no data page) and is O(n * E + S)
 * time and memory; the index is kept in memory. It uses up to two OpenMP
 * threads (omp_get_max_threads(); the lengths read and the document index
 * filled on more): one draws the shuffles while the other computes the
 * sample index behind it. The index is the same for any thread count.
 *
 * Packed samples (layout SS_LM_PACKED) put whole documents into rows of L
 * tokens instead of cutting the concatenation, so far fewer documents are
 * cut, at the price of some padding:
 *  - the order: per epoch e = 0..E-1, the document order is
 *    RandomState(seed).shuffle(arange(n)) (one RandomState for the whole
 *    index, its draws in the order: epoch 0's documents, epoch 0's rows,
 *    epoch 1's documents, ...);
 *  - pieces: a document of m tokens (eod included) longer than L is split
 *    into floor(m / L) pieces of L tokens, in order, each a row of its own,
 *    and a remainder of m mod L tokens; empty documents give nothing;
 *  - packing: the order is cut into windows of W documents (pack_window);
 *    the remainders of a window are sorted by length, longest first (ties
 *    in order), and each goes into the first row of the window with room
 *    for it (first-fit decreasing), a new row when none has; the window's
 *    rows follow its full pieces. Memory while packing is O(W);
 *  - the rows of each epoch are then shuffled (RandomState.shuffle of their
 *    numbers), so ss_lm_get index i of epoch e is its row shuffle[i]; in
 *    the unshuffled order (ss_lm_sample_position's `shuffled`) the pieces
 *    of a split document are in order;
 *  - E: num_epochs, or with num_samples the fewest epochs giving at least
 *    num_samples rows; S is the number of rows of all E epochs.
 * A packed row holds its documents one after the other, then padding up to
 * L. Per token of a document piece: the label is the document's next token
 * (across a split too), and for the document's last token (its eod) the
 * label is eod with loss mask 0; the position id counts from 0 at the
 * piece's start; each piece is a segment (cu_seqlens, segment ids), and the
 * padding is one more segment at the end (tokens and labels eod, loss mask
 * 0, position ids from 0). So attention confined to segments never crosses
 * a document boundary; the RESET flags are implied and EOD_MASK_LOSS has
 * nothing more to mask. */
#ifndef SEQSTORE_LM_H
#define SEQSTORE_LM_H

#include "core.h"
#include "sampler.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An LM sample index over one token field. */
typedef struct ss_lm ss_lm;

/** Flags of ss_lm_options.flags. */
enum {
    SS_LM_APPEND_EOD = 1u << 0,           /**< append `eod` to every document */
    SS_LM_RESET_POSITION_IDS = 1u << 1,   /**< Megatron's reset_position_ids */
    SS_LM_RESET_ATTENTION_MASK = 1u << 2, /**< Megatron's reset_attention_mask */
    SS_LM_EOD_MASK_LOSS = 1u << 3         /**< Megatron's eod_mask_loss */
};

/** Layouts of ss_lm_options.layout. */
enum {
    SS_LM_MEGATRON = 0, /**< Megatron-Core GPTDataset samples (the default) */
    SS_LM_PACKED = 1    /**< whole documents packed into rows of L tokens */
};

/** Default ss_lm_options.pack_window. */
#define SS_LM_PACK_WINDOW_DEFAULT 4096

/** `eod` value asking for the store's own end-of-document id: the one
 *  element of the attribute "FIELD.eos" (written by `seqstore convert text
 *  --eos`), whose documents therefore already end with it. */
#define SS_LM_EOD_FROM_STORE INT64_MIN

/** Options of ss_lm_create(). Start from SS_LM_OPTIONS_INIT. */
typedef struct ss_lm_options {
    unsigned version;     /**< SS_LM_OPTIONS_VERSION */
    unsigned flags;       /**< SS_LM_... */
    uint64_t seq_length;  /**< L, the tokens per sample: 2..2^31 - 2 */
    uint64_t seed;        /**< Megatron's random_seed: 0..2^32 - 1 */
    uint64_t num_samples; /**< samples asked for (Megatron's num_samples);
                               0 = one epoch */
    int64_t eod;          /**< end-of-document token id, or SS_LM_EOD_FROM_STORE
                               (the default) */
    uint64_t num_epochs;  /**< with num_samples 0: E >= 1 epochs, i.e.
                               num_samples = (E * T - 1) / L, which the rule
                               above turns back into E epochs when T >= L;
                               0 = one epoch. Both set is SS_EINVAL. */
    unsigned layout;      /**< SS_LM_MEGATRON or SS_LM_PACKED */
    uint64_t pack_window; /**< SS_LM_PACKED: documents packed together (W),
                               1..2^31 - 1; 0 = SS_LM_PACK_WINDOW_DEFAULT;
                               with SS_LM_MEGATRON it must be 0 */
} ss_lm_options;

#define SS_LM_OPTIONS_VERSION 1
#define SS_LM_OPTIONS_INIT                                                                         \
    { SS_LM_OPTIONS_VERSION, 0, 0, 0, 0, SS_LM_EOD_FROM_STORE, 0, SS_LM_MEGATRON, 0 }

/** Fill `*out` with the defaults SS_LM_OPTIONS_INIT gives, for a caller that
 *  cannot expand the macro (a binding in another language).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_LM_OPTIONS_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_lm_options_init(ss_lm_options *out, unsigned version);

/** Build the sample index of field `field` of `s`.
 *  @param[out] out     the index; free it with ss_lm_free().
 *  @param[in]  s       a store or dataset; it must stay open while `out` is
 *                      used (samples are read from it).
 *  @param[in]  field   a sequence field of integer dtype with scalar rows.
 *  @param[in]  options seq_length is required, so not NULL.
 *  Uses the index stored by ss_lm_save() for the same field and options
 *  when there is one for these documents.
 *  @return 0; SS_EINVAL (NULL argument, unknown options version or flag,
 *          seq_length, seed, layout or pack_window out of range
 *          (pack_window with SS_LM_MEGATRON), both num_samples and
 *          num_epochs, a field that is not a sequence
 *          of scalar integers, SS_LM_EOD_FROM_STORE on a store without the
 *          attribute FIELD.eos or with SS_LM_APPEND_EOD, no documents or
 *          fewer than 2 tokens per epoch, a document or document count
 *          beyond 2^31 - 1 (Megatron's int32 sizes)); SS_ERANGE (no such
 *          field); SS_ENOMEM; SS_ECORRUPT, SS_EVERSION (a stored index whose
 *          header is damaged or of a later version; its arrays are checked
 *          as they are read, see ss_lm_save()); as ss_lengths(). */
SS_API int ss_lm_create(ss_lm **out, const ss_store *s, uint32_t field,
                        const ss_lm_options *options);

/** Build the SS_LM_MEGATRON index of `options` over field `field` of the
 *  finished store or dataset at `path` and store it in the store (a dataset:
 *  its sections store) as the attribute "ss.lm.FIELD.L<L>.seed<S>.samples<N>
 *  .epochs<E>.append<0|1>" (ss_lm_index_name(), spec/SDK_SECTIONS.md),
 *  replacing one of that name. ss_lm_create() with the same field and
 *  options then uses its document, sample and shuffle indices in place
 *  (not drawn again; ss_lm_info.stored) while the documents are those it
 *  was built for (the same count, tokens and lengths section); otherwise it
 *  builds afresh. Opening it then costs O(1) in the documents: the
 *  section's header is checked at ss_lm_create(), each 64 KiB block of its
 *  arrays against its checksum the first time a read reaches it, and every
 *  value a read uses against the documents, so a damaged section is
 *  SS_ECORRUPT from the ss_lm_get(), ss_lm_sample_position() or
 *  ss_lm_document() that reaches it. The store must not be open for
 *  writing.
 *  @param[in] path    the store or dataset.
 *  @param[in] field   the token field's name.
 *  @param[in] options as for ss_lm_create(); layout SS_LM_MEGATRON.
 *  @return 0; SS_EINVAL (NULL argument, another layout, a field name too
 *          long for the attribute name); SS_EBUSY (the store changed while
 *          the index was built); SS_ENOTFOUND (no such field); as ss_open(),
 *          ss_lm_create(),
 *          ss_sections_writer_open() and ss_writer_finish(). */
SS_API int ss_lm_save(const char *path, const char *field, const ss_lm_options *options);

/** Longest name ss_lm_index_name() writes, with its NUL. */
#define SS_LM_INDEX_NAME_MAX (SS_MAX_ATTR_NAME + 1)

/** The name of the section ss_lm_save() writes for `field` and `options`
 *  (an attribute of the store, or of a dataset's sections store), e.g. to
 *  ask ss_attr_get() whether a stored index exists for them. It names the
 *  options only: whether the index stored under it fits the store's
 *  current documents is for ss_lm_create() to find (ss_lm_info.stored).
 *  @param[out] buf     `cap` bytes, NUL-terminated ("" on failure when cap > 0).
 *  @param[in]  cap     bytes of buf; SS_LM_INDEX_NAME_MAX always suffices.
 *  @param[in]  field   the token field's name.
 *  @param[in]  options layout SS_LM_MEGATRON.
 *  @return 0; SS_EBUFS (cap too small); SS_EINVAL (NULL argument, unknown
 *          options version, another layout, a field name that makes the
 *          name longer than SS_MAX_ATTR_NAME). */
SS_API int ss_lm_index_name(char *buf, size_t cap, const char *field,
                            const ss_lm_options *options);

/** Free the index; accepts NULL. The store is not closed. */
SS_API void ss_lm_free(ss_lm *lm);

/** Facts about an index. */
typedef struct ss_lm_info {
    uint64_t num_samples;      /**< S: samples in the index (ss_lm_get indices
                                    0..S-1), >= the num_samples asked for */
    uint64_t num_epochs;       /**< E */
    uint64_t tokens_per_epoch; /**< T, eod tokens included */
    uint64_t documents;        /**< n: documents per epoch */
    int64_t eod;               /**< the end-of-document id used */
    int separate_final_epoch;  /**< 1 when the last epoch was shuffled apart
                                    (SS_LM_MEGATRON) */
    unsigned layout;           /**< SS_LM_MEGATRON or SS_LM_PACKED */
    uint64_t padding_tokens;   /**< padding in all S rows (0 for SS_LM_MEGATRON);
                                    the padding fraction is
                                    padding_tokens / (S * L) */
    uint64_t split_documents;  /**< document occurrences (over all epochs)
                                    whose tokens lie in more than one row:
                                    those longer than L for SS_LM_PACKED,
                                    those a sample boundary cuts for
                                    SS_LM_MEGATRON */
    int stored;                /**< 1 when the index came from a stored
                                    section (ss_lm_save()) */
} ss_lm_info;

/** Fill `out` with facts about `lm`.
 *  @return 0; SS_EINVAL (NULL argument). */
SS_API int ss_lm_get_info(ss_lm_info *out, const ss_lm *lm);

/** Where ss_lm_get() writes a batch of rows. Every pointer may be NULL (that
 *  output is not written); row k of a batch starts at k * L in tokens,
 *  labels, loss_mask, position_ids and segment_ids, at k * (L + 1) in
 *  cu_seqlens, and at k in nsegments. */
typedef struct ss_lm_batch {
    int64_t *tokens;       /**< n * L input tokens */
    int64_t *labels;       /**< n * L labels: tokens shifted by one */
    float *loss_mask;      /**< n * L: 1 or 0 */
    int64_t *position_ids; /**< n * L */
    int32_t *segment_ids;  /**< n * L: 0, 1, ... per row */
    int32_t *cu_seqlens;   /**< n * (L + 1): row k's segment starts then L, in
                                its first nsegments[k] + 1 entries (the rest
                                repeat L) */
    int32_t *nsegments;    /**< n: segments of each row, >= 1 */
} ss_lm_batch;

/** Read samples idx[0..n) into `out` (see ss_lm_batch for the layout).
 *  @param[out] out the caller's buffers.
 *  @param[in]  lm  the index.
 *  @param[in]  idx n sample indices, each < ss_lm_info.num_samples.
 *  @param[in]  n   rows.
 *  @return 0; SS_ERANGE (an index beyond the samples; the message names it;
 *          rows before it are written); SS_EINVAL (NULL lm, out or idx with
 *          n > 0); SS_ECORRUPT as ss_get(), a document shorter than its
 *          stored length, or a damaged stored index (a block that fails its
 *          checksum, a value outside the documents; the message names the
 *          section; rows before it are written). */
SS_API int ss_lm_get(const ss_lm_batch *out, const ss_lm *lm, const uint64_t *idx, uint64_t n);

/** Read the next n rows of a blend of LM indices with weights (Megatron's
 *  BlendedDataset over GPTDatasets): row r is sample `index` of
 *  lms[source] for the r-th (source, index) ss_blend_next(b) gives. Create
 *  b (sampler.h) with nsources = nlms, sizes[j] = ss_lm_info.num_samples
 *  of lms[j] and shuffle 0, so that source j's samples are read in the
 *  order of its own (already shuffled) index, as Megatron's blend reads
 *  them; world_size/rank/num_workers/worker shard the global stream as
 *  the blend documents. The rows are a function of b's options and
 *  position alone: deterministic, and resumed exactly by
 *  ss_blend_state_save()/ss_blend_state_load() between calls.
 *  @param[out] sources n source numbers (may be NULL).
 *  @param[out] out     n rows, laid out as ss_lm_get() lays them out.
 *  @param[in]  lms     nlms indices of one seq_length (their stores open).
 *  @param[in]  nlms    1..65536.
 *  @param[in,out] b    the blend; advanced by the rows read (on failure,
 *                      past the row that failed: restore a saved state to
 *                      retry).
 *  @param[in]  n       rows.
 *  @return 0; SS_EINVAL (NULL argument, indices of different L, a source
 *          the blend chose that is not in lms); as ss_blend_next() and
 *          ss_lm_get() (SS_ERANGE for a blend made with sizes larger than
 *          the indices'), the message naming the row and index. */
SS_API int ss_lm_blend_get(uint32_t *sources, const ss_lm_batch *out, const ss_lm *const *lms,
                           uint32_t nlms, ss_blend *b, uint64_t n);

/** The document positions of sample `i` before the sample shuffle, for a
 *  caller checking the index: sample i reads the L + 1 tokens from offset
 *  `*offset` of document `doc_index[*first]` on, where doc_index is the
 *  shuffled document index (ss_lm_document()). With SS_LM_PACKED, row i's
 *  first piece is tokens from `*offset` on of document (example) `*first`.
 *  @param[out] first  position in the document index where sample i starts.
 *  @param[out] offset token offset in that document.
 *  @param[out] shuffled the unshuffled sample number (shuffle[i]); may be NULL.
 *  @return 0; SS_ERANGE (i >= num_samples); SS_EINVAL (NULL argument);
 *          SS_ECORRUPT (a damaged block of a stored index). */
SS_API int ss_lm_sample_position(uint64_t *first, uint64_t *offset, uint64_t *shuffled,
                                 const ss_lm *lm, uint64_t i);

/** Document (example index) at position `k` of the shuffled document index
 *  (0 <= k < num_epochs * documents; with SS_LM_PACKED, epoch k / documents's
 *  order); UINT64_MAX for a bad argument or a damaged block of a stored
 *  index (ss_error_message() then names the section). */
SS_API uint64_t ss_lm_document(const ss_lm *lm, uint64_t k);

#ifdef __cplusplus
}
#endif

#endif /* SEQSTORE_LM_H */
