/* SPDX-License-Identifier: BSD-2-Clause */
/* seqstore/bptt.h - part of the public API; include <seqstore.h>, not this file.
 *
 * Truncated back-propagation through time: readers that cut long sequences
 * into consecutive pieces and hand them out so that a recurrent model can
 * carry its hidden state from one piece to the next.
 *
 *  - The piece splitter (ss_splitter) cuts every example longer than
 *    `max_len` into consecutive pieces and flags them (split, cont,
 *    has_next); the lane assembler (ss_lanes) deals the pieces of one example
 *    into consecutive batches, always in the same batch row.
 *  - The window reader (ss_window_reader) is the stateful reader for long
 *    signals (EEG): it slides overlapping windows over every sequence, keeps
 *    a hidden-state buffer per sequence, hands the stored state out with the
 *    next window of that sequence and collates the windows into batches.
 *
 * Everything here reads from an open store and borrows it: close the store
 * only after freeing these objects. None of these objects may be used by two
 * threads at once (each call may use OpenMP threads inside). */
#ifndef SEQSTORE_BPTT_H
#define SEQSTORE_BPTT_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared in transform.h (repeated: C11 allows identical typedefs). */
typedef struct ss_pipeline ss_pipeline;

/* =========================================================== piece splitter */

/** Piece flags (ss_piece.flags). */
enum {
    SS_PIECE_SPLIT = 1u << 0,   /**< the piece comes from an example longer than max_len */
    SS_PIECE_CONT = 1u << 1,    /**< not the first piece of its example: continue from the
                                     hidden state the previous piece ended with */
    SS_PIECE_HAS_NEXT = 1u << 2 /**< not the last (kept) piece of its example */
};

/** One piece: time steps [t0, t1) of the chosen fields of example `example`. */
typedef struct ss_piece {
    uint64_t example; /**< example index in the store */
    uint64_t t0;      /**< first time step */
    uint64_t t1;      /**< one past the last time step */
    uint32_t flags;   /**< SS_PIECE_... */
    uint32_t index;   /**< piece number within its example (0, 1, ...) */
} ss_piece;

/** Options of ss_splitter_open(). Start from SS_SPLIT_OPTIONS_INIT. */
typedef struct ss_split_options {
    unsigned version;         /**< SS_SPLIT_OPTIONS_VERSION */
    uint64_t max_len;         /**< longest piece, >= 1 */
    uint64_t min_len;         /**< pieces shorter than this are dropped (0 keeps even
                                   empty examples); must be <= max_len */
    const uint32_t *fields;   /**< the fields to split (sequence fields whose lengths agree
                                   per example); NULL = every sequence field */
    uint32_t nfields;         /**< entries of `fields`, 1..SS_MAX_FIELDS when fields is set */
    const uint64_t *examples; /**< examples to read, in this order (read at open only);
                                   NULL = all */
    uint64_t n_examples;      /**< entries of `examples` */
} ss_split_options;

#define SS_SPLIT_OPTIONS_VERSION 1
#define SS_SPLIT_OPTIONS_INIT                                                                      \
    { SS_SPLIT_OPTIONS_VERSION, 0, 1, NULL, 0, NULL, 0 }
/** Fill `out` with SS_SPLIT_OPTIONS_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_SPLIT_OPTIONS_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_split_options_init(ss_split_options *out, unsigned version);

typedef struct ss_splitter ss_splitter;

/** Split the examples into pieces (torchnet's TruncatedDatasetIterator).
 *
 *  An example of length L > max_len gives pieces [0, max_len),
 *  [max_len, 2 max_len), ... with the last one shorter; an example with
 *  L <= max_len gives one piece [0, L) without SS_PIECE_SPLIT. Pieces shorter
 *  than min_len are then dropped and the flags describe the kept pieces
 *  (the piece before a dropped last piece has no SS_PIECE_HAS_NEXT). E.g.
 *  max_len 3 over lengths 5, 3, 1, 7 gives pieces 3,2 | 3 | 1 | 3,3,1.
 *  Reads only the index (ss_length), no example data.
 *  @param[out] out     the splitter; free it with ss_splitter_free().
 *  @param[in]  s       the store; borrowed until ss_splitter_free().
 *  @param[in]  options required (no NULL default); read at open only.
 *  @return 0; SS_EINVAL (NULL store or options, an unknown options
 *          version, max_len 0, min_len >
 *          max_len, a field that is not a sequence field or is chosen
 *          twice, nfields 0 or > SS_MAX_FIELDS with fields set, a store
 *          without sequence fields); SS_ERANGE (a field or example index out
 *          of range); SS_EINPUT (two chosen fields differ in length in one
 *          example; the message names both and the example); SS_ENOMEM. */
SS_API int ss_splitter_open(ss_splitter **out, const ss_store *s, const ss_split_options *options);

/** Free the splitter. Accepts NULL. */
SS_API void ss_splitter_free(ss_splitter *sp);

/** Number of pieces (0 for NULL). */
SS_API uint64_t ss_splitter_count(const ss_splitter *sp);

/** All pieces, in example order (the pieces of one example are consecutive).
 *  Borrowed from the splitter, valid until ss_splitter_free(). */
SS_API const ss_piece *ss_splitter_pieces(const ss_splitter *sp);

/** Examples that gave no piece (all of their pieces were shorter than min_len). */
SS_API uint64_t ss_splitter_dropped_examples(const ss_splitter *sp);

/** View of field `field` of a piece: time steps [t0, t1) for a chosen field,
 *  the whole value for any other field (a label travels unchanged with every
 *  piece). Zero-copy, as ss_get_range(): out->data is borrowed from the
 *  store's map, valid until ss_close().
 *  @param[in]  piece a piece of this splitter (ss_splitter_pieces()).
 *  @param[out] out   the view.
 *  @return 0; SS_ERANGE (bad field, NULL piece, or a piece outside its
 *          example); SS_ECORRUPT as ss_get(). */
SS_API int ss_splitter_view(ss_view *out, const ss_splitter *sp, const ss_piece *piece,
                            uint32_t field);

/* ============================================================ lane assembler */

/** Lane assembler flags (ss_lanes_options.flags). */
enum {
    SS_LANES_SHRINK = 1u << 0 /**< at the end of an epoch drop empty lanes from the batch
                                   instead of masking them (ss_lane_batch.lane says which
                                   lane each row is) */
};

/** Options of ss_lanes_open(). Start from SS_LANES_OPTIONS_INIT. */
typedef struct ss_lanes_options {
    unsigned version; /**< SS_LANES_OPTIONS_VERSION */
    uint32_t lanes;   /**< batch rows B, >= 1 */
    int shuffle;      /**< 0: examples in splitter order; 1: shuffled per epoch by seed */
    uint64_t seed;    /**< seed of the shuffle (with shuffle = 1) */
    unsigned flags;   /**< SS_LANES_... */
} ss_lanes_options;

#define SS_LANES_OPTIONS_VERSION 1
#define SS_LANES_OPTIONS_INIT                                                                      \
    { SS_LANES_OPTIONS_VERSION, 1, 0, 0, 0 }
/** Fill `out` with SS_LANES_OPTIONS_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_LANES_OPTIONS_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_lanes_options_init(ss_lanes_options *out, unsigned version);

/** One batch of pieces. All arrays have `size` entries and belong to the
 *  assembler; they are valid until the next ss_lanes_next() or ss_lanes_free(). */
typedef struct ss_lane_batch {
    uint32_t size;          /**< rows: B, fewer with SS_LANES_SHRINK; >= 1 */
    uint32_t active;        /**< rows holding a piece */
    uint64_t epoch;         /**< epoch this batch belongs to */
    const ss_piece *pieces; /**< the piece of each row (all zero where masked) */
    const uint8_t *mask;    /**< 1: the row holds a piece; 0: masked out */
    const uint32_t *lane;   /**< the lane of each row (the identity unless shrinking) */
} ss_lane_batch;

typedef struct ss_lanes ss_lanes;

/** Deal the pieces of a splitter into B lanes.
 *
 *  Lane b keeps an example until its last piece is out, one piece per batch,
 *  then takes the next example in the epoch's order; the pieces of one example
 *  thus arrive in consecutive batches in the same lane, so SS_PIECE_CONT
 *  means "start from the hidden state this lane ended with". When the order
 *  is used up, lanes with nothing left are masked until every lane is empty.
 *  Every piece is handed out exactly once per epoch.
 *  Starts at epoch 0.
 *  @param[out] out     the assembler; free it with ss_lanes_free().
 *  @param[in]  sp      borrowed until ss_lanes_free().
 *  @param[in]  options required (no NULL default); copied.
 *  @return 0; SS_EINVAL (0 lanes, NULL splitter or options, an unknown
 *          options version); SS_ENOMEM. */
SS_API int ss_lanes_open(ss_lanes **out, const ss_splitter *sp, const ss_lanes_options *options);

/** Free the assembler. Accepts NULL. */
SS_API void ss_lanes_free(ss_lanes *la);

/** The next batch. At the end of an epoch it returns SS_ITEROVER (and *out
 *  NULL); the call after it starts the next epoch. No allocation.
 *  @param[out] out borrowed from the assembler, valid until the next
 *                  ss_lanes_next(), ss_lanes_set_epoch() or ss_lanes_free();
 *                  NULL at the end of an epoch.
 *  @return 0; SS_ITEROVER (see above); SS_EINVAL (NULL argument). */
SS_API int ss_lanes_next(const ss_lane_batch **out, ss_lanes *la);

/** Restart at the beginning of epoch `epoch` (lanes emptied).
 *  @return 0 (la must not be NULL). */
SS_API int ss_lanes_set_epoch(ss_lanes *la, uint64_t epoch);

/* ============================================================ window reader */

/** Window reader modes. */
typedef enum ss_window_mode {
    /** Windows from s = 0, in order; deterministic (evaluation). */
    SS_WINDOW_SEQUENTIAL = 0,
    /** Windows in order from a start s drawn per sequence per epoch from
     *  [0, min(L - W, W - O)], a function of (seed, epoch, example) (training). */
    SS_WINDOW_SEQUENTIAL_RANDOM_START = 1,
    /** Every window is a random sequence at a random start in [0, L - W]; no
     *  state is carried, every window is a reset. */
    SS_WINDOW_RANDOM = 2
} ss_window_mode;

/** Window reader flags (ss_window_options.flags). */
enum {
    SS_WINDOW_FORGET_STATE = 1u << 0,   /**< hand out a fresh state with every window */
    SS_WINDOW_SHRINK = 1u << 1,         /**< at the end of an epoch drop empty lanes instead of
                                             masking them */
    SS_WINDOW_PAD_TAIL = 1u << 2,       /**< cover the tail of each sequence with one last
                                             window, padded with zeros and masked (evaluation:
                                             every sample is seen exactly once) */
    SS_WINDOW_TIME_MAJOR = 1u << 3,     /**< collate as [W][B][C] instead of [B][W][C] */
    SS_WINDOW_BALANCED = 1u << 4,       /**< class-balanced lanes (needs label_field) */
    SS_WINDOW_LABEL_PER_STEP = 1u << 5, /**< repeat the label at every time step */
    SS_WINDOW_DROP_LAST = 1u << 6,      /**< training: the first batch that would hold
                                             fewer than B windows ends the epoch instead
                                             (its windows are not handed out); needs
                                             max_pending <= 1 */
    SS_WINDOW_REDRAW = 1u << 7          /**< sequential modes: every batch, lane b draws
                                             a sequence uniformly among those that can
                                             give a window now (not done, not blocked, not
                                             drawn by a lower lane of this batch), by
                                             (seed, epoch, batch number), and hands out
                                             its next window, instead
                                             of keeping its sequence until it is done */
};

/** Every flag above (ss_window_reader_open() refuses others). */
#define SS_WINDOW_FLAGS_ALL 0xffu

/** Options of ss_window_reader_open(). Start from SS_WINDOW_OPTIONS_INIT. */
typedef struct ss_window_options {
    unsigned version;          /**< SS_WINDOW_OPTIONS_VERSION */
    uint32_t field;            /**< the signal: a sequence field with rows of C elements */
    uint32_t label_field;      /**< a fixed field holding one label per example, or
                                    SS_FIELD_NONE (INIT) */
    uint64_t window;           /**< W: input samples per window, >= 1 */
    uint64_t overlap;          /**< O, 0 <= O < W; for a conv front end W - conv_output_length(W)
                                    (receptive field - 1) */
    uint32_t lanes;            /**< B: batch lanes, >= 1 */
    uint64_t state_size;       /**< H: hidden-state elements per sequence (0: no state) */
    ss_dtype state_dtype;      /**< element type of the state; 0 = bytes (H is in bytes) */
    ss_window_mode mode;       /**< SS_WINDOW_... */
    uint64_t seed;             /**< seed of every random choice */
    int shuffle;               /**< sequential modes: 1 = sequence order shuffled per epoch */
    unsigned flags;            /**< SS_WINDOW_... */
    ss_dtype out_dtype;        /**< dtype of the collated batch; 0 = the field's dtype
                                    (as the per-window transforms leave it) */
    const double *gain;        /**< per channel: out = in * gain + offset; NULL = 1 */
    const double *offset;      /**< per channel; NULL = 0 */
    const void *initial_state; /**< H elements handed out on reset (copied); NULL = zeros */
    const uint64_t *examples;  /**< the split: example indices in sampler order; NULL = all */
    uint64_t n_examples;       /**< entries of `examples` */
    uint32_t max_pending;      /**< batches that may be out unregistered; 0 or 1 = strict (the
                                    next batch before registering is SS_ESTATE). More lets
                                    other eligible sequences be served meanwhile. */
    uint64_t epoch_windows;    /**< RANDOM mode: windows per epoch; 0 = as many as a
                                    SEQUENTIAL epoch holds */
    int threads;               /**< OpenMP threads for collation and per-window
                                    transforms; 0 = one (see "Threads" in seqstore.h);
                                    < 0 refused */
    const ss_pipeline *transforms; /**< NULL, or transforms applied to every window and
                                        batch (see "Transforms" below); borrowed: it must
                                        outlive the reader */
    /* Version 2. */
    const char *gain_attr;   /**< instead of gain: a store attribute holding C numbers
                                  (f64, f32, any exact numeric type), e.g. "signal.gain";
                                  NULL = none (read at open) */
    const char *offset_attr; /**< instead of offset: likewise, e.g. "signal.offset" */
    /* Version 3. */
    size_t n_gain;   /**< entries of `gain`: must be the field's channel count C when gain
                          is set (else SS_EINVAL naming the field); ignored without gain */
    size_t n_offset; /**< entries of `offset`, likewise */
    /* Version 4. */
    uint32_t prefetch; /**< batches collated ahead: 0 (INIT) = none, each batch is
                            collated inside ss_window_reader_next(); 1 = a thread of
                            the reader plans and collates the next batch (reads the
                            store, converts, runs the transforms) while the caller
                            works on this one; only the hidden states, which the
                            caller registers meanwhile, are gathered in
                            ss_window_reader_next(). The batches, their order and
                            the saved states are the same either way. Needs
                            max_pending <= 1 (with more, the next batch depends on
                            which batches are registered when it is asked for).
                            The thread does not survive fork(): use the reader
                            in the process that opened it. */
} ss_window_options;

/** Version 1 ended at transforms, version 2 at offset_attr, version 3 at
 *  n_offset; all four are accepted. Versions 1 and 2 carry no count of gain
 *  and offset: the reader then reads C values from each, trusting the caller
 *  (use version 3 or later). */
#define SS_WINDOW_OPTIONS_VERSION 4
#define SS_WINDOW_OPTIONS_INIT                                                                     \
    {                                                                                              \
        SS_WINDOW_OPTIONS_VERSION, 0, SS_FIELD_NONE, 0, 0, 1, 0, (ss_dtype)0,                      \
            SS_WINDOW_SEQUENTIAL, 0, 0, 0, (ss_dtype)0, NULL, NULL, NULL, NULL, 0, 1, 0, 0, NULL,  \
            NULL, NULL, 0, 0, 0                                                                    \
    }
/** Fill `out` with SS_WINDOW_OPTIONS_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_WINDOW_OPTIONS_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_window_options_init(ss_window_options *out, unsigned version);

/* Transforms (ss_window_options.transforms, see transform.h).
 *
 * Per-window transforms (ss_transform.example) run on every window of a
 * batch, in parallel over the lanes (ss_window_options.threads), before the
 * collation. Each sees an ss_example with one field, the signal: its `length`
 * rows (W, fewer for a padded tail window) copied from the store in the stored
 * dtype into a preallocated per-lane buffer; ex->index is the sequence id (its
 * example index), ex->epoch the reader's epoch. A transform may change the
 * values and may declare a new dtype or trailing shape of the signal
 * (ss_transform.field must be its index; the shape must keep C elements per
 * sample), but may not change `length` (windows are fixed): that fails the
 * batch. The collation then converts the result to out_dtype and applies
 * gain and offset. Masked rows are not transformed. Without per-window
 * transforms the windows are read straight from the map (no copy).
 *
 * Per-batch transforms (ss_transform.batch) run once per batch, after the
 * collation, on an ss_loader_batch view of
 * the ss_window_batch: position = the batch's number in the epoch (from 0),
 * rows = size, indices = example (0 where masked), data.fields[0] = the
 * signal ([size][W][dims] or [W][size][dims] of out_dtype, lengths = length
 * (0 where masked), mask = step_mask as u8), and with label_field
 * data.fields[1] = the label ([size][dims], or [size][W][dims] /
 * [W][size][dims] with SS_WINDOW_LABEL_PER_STEP). They change values in place.
 *
 * Randomness. A per-window transform at pipeline position p receives stream
 * SS_TRANSFORM_STREAM + p of the generator seeded with
 *     hash(hash(seed, epoch, sequence id), window start, 0),
 * a per-batch transform stream SS_BATCH_TRANSFORM_STREAM + p of the generator
 * seeded with hash(seed, epoch, batch position), with the hash and generator
 * of spec/SDK_SECTIONS.md (as the loader). So the augmentation of a window
 * depends only on (seed, epoch, sequence, start, position): the same for any
 * number of threads and after save/restore. (In RANDOM mode a window drawn
 * twice in one epoch gets the same augmentation both times.)
 *
 * Errors. A transform that returns a negative value (or changes the length)
 * fails ss_window_reader_next() with SS_ECALLBACK (or its code) and a message
 * naming the epoch, batch, sequence id, window start, the transform and its
 * ss_transform_error() message; the first failing row in row order is
 * reported. */

/** Per-sequence states. */
typedef enum ss_seq_state {
    SS_SEQ_NORMAL = 0,  /**< a next window can be read */
    SS_SEQ_BLOCKED = 1, /**< its window is out in a batch not yet registered */
    SS_SEQ_DONE = 2     /**< no window left in this epoch */
} ss_seq_state;

/** One batch of windows. Every array belongs to the reader and stays valid
 *  until the batch is registered (ss_window_reader_register()) or, when no
 *  state is carried, until the next ss_window_reader_next(). Row r of every
 *  per-lane array describes the same window. */
typedef struct ss_window_batch {
    uint64_t id;              /**< batch number since open */
    uint64_t epoch;           /**< epoch this batch belongs to */
    uint32_t size;            /**< rows: B (fewer with SS_WINDOW_SHRINK); >= 1 */
    uint32_t active;          /**< rows holding a window */
    uint64_t window;          /**< W */
    uint32_t channels;        /**< C: elements per sample */
    ss_dtype dtype;           /**< of `data` */
    void *data;               /**< [size][W][C] or [W][size][C] (SS_WINDOW_TIME_MAJOR);
                                   zeros where masked or padded */
    const uint8_t *mask;      /**< [size]: 1 = the row holds a window */
    const uint8_t *step_mask; /**< [size][W] or [W][size]: 1 = a real (not padded) sample */
    const uint8_t *reset;     /**< [size]: 1 = first window of its sequence (or no carry):
                                   `state` holds the initial state */
    const uint32_t *lane;     /**< [size]: the lane of each row */
    const uint64_t *example;  /**< [size]: the sequence id (its example index) */
    const uint64_t *start;    /**< [size]: first time index; sample t of the row is t + start */
    const uint64_t *length;   /**< [size]: real samples (W, less for a padded tail window) */
    const uint64_t *index;    /**< [size]: window number k within its sequence this epoch */
    void *state;              /**< [size][H]: initial hidden state per row (NULL if H = 0) */
    const void *label;        /**< [size] label rows, or [size][W] / [W][size] rows with
                                   SS_WINDOW_LABEL_PER_STEP; NULL without label_field */
    uint64_t label_row_bytes; /**< bytes of one label row */
    ss_dtype label_dtype;     /**< element type of `label` (the label field's dtype); 0
                                   without label_field */
} ss_window_batch;

/** Facts about a window reader. */
typedef struct ss_window_info {
    uint64_t sequences;     /**< sequences in the split */
    uint64_t eligible;      /**< sequences that give at least one window */
    uint64_t too_short;     /**< sequences shorter than W (no window; counted, not lost
                                 silently) */
    uint64_t epoch_windows; /**< windows in the current epoch */
    uint64_t epoch;         /**< current epoch */
    uint64_t windows_out;   /**< windows handed out in the current epoch */
    uint32_t classes;       /**< distinct labels (with SS_WINDOW_BALANCED) */
    uint64_t state_bytes;   /**< bytes of one hidden state */
} ss_window_info;

typedef struct ss_window_reader ss_window_reader;

/** Open a window reader over the sequences of `options->examples`.
 *
 *  Window k of a sequence starting at s covers input [s + k(W-O), s + k(W-O) + W);
 *  the last O samples of a window are the first O of the next, so the conv
 *  outputs (window minus its first O samples) of consecutive windows tile the
 *  sequence. A sequence is done when the next window would run past its end;
 *  a sequence shorter than W gives no window and is counted as too short
 *  (ss_window_info). With SS_WINDOW_PAD_TAIL the uncovered tail (and a
 *  sequence of length O < L < W) gets one more window, padded and masked.
 *
 *  Lane b keeps its sequence until it is done, then takes the next one in the
 *  epoch's order (the split's order, or a shuffle by (seed, epoch)); with
 *  SS_WINDOW_REDRAW it draws a sequence every batch instead. In the
 *  sequential modes an epoch hands out every window of every eligible sequence
 *  exactly once, in an order that depends only on the seed and the epoch.
 *  @param[out] out     the reader; free it with ss_window_reader_free().
 *  @param[in]  s       borrowed until ss_window_reader_free().
 *  @param[in]  options required; copied at open (`gain`, `offset`,
 *                      `initial_state`, `examples` too), except
 *                      `transforms`, which is borrowed.
 *  @return 0; SS_EINVAL (NULL store or options, an unknown options
 *          version, W = 0, O >= W, B = 0, a bad mode, a bad dtype,
 *          SS_WINDOW_BALANCED without label_field or with max_pending > 1,
 *          an unknown flag, SS_WINDOW_DROP_LAST with max_pending > 1,
 *          prefetch > 1, prefetch with max_pending > 1,
 *          SS_WINDOW_REDRAW in RANDOM mode or with SS_WINDOW_BALANCED,
 *          gain and gain_attr (or offset and offset_attr) both set, a
 *          gain/offset attribute that is not C numbers (SS_ENOTFOUND when
 *          it is missing), threads < 0,
 *          a balanced run with no sequence, whose B is not a multiple of
 *          the classes or whose classes have too few sequences, a RANDOM run
 *          with fewer eligible sequences than lanes, a transform declaring a
 *          change of another field than the signal, or a shape that does not
 *          keep C elements per sample; the message names the parameter);
 *          SS_ERANGE (a field or example index out of range); SS_ESCHEMA
 *          (the signal is not a sequence field, the label not a fixed field
 *          or not a scalar integer for SS_WINDOW_BALANCED); SS_ENOMEM. */
SS_API int ss_window_reader_open(ss_window_reader **out, const ss_store *s,
                                 const ss_window_options *options);

/** Free the reader. Accepts NULL. */
SS_API void ss_window_reader_free(ss_window_reader *r);

/** Facts about the reader (r and out must not be NULL). @return 0. */
SS_API int ss_window_reader_info(ss_window_info *out, const ss_window_reader *r);

/** The next batch.
 *
 *  At the end of an epoch it returns SS_ITEROVER (*out NULL, nothing to
 *  register); the call after it starts the next epoch. No allocation happens here.
 *  After a failed call (a read error, a failing transform) the reader keeps
 *  returning that error until ss_window_reader_set_epoch() or a successful
 *  ss_window_reader_state_load().
 *  @param[out] out borrowed; see ss_window_batch for how long it is valid.
 *                  NULL on error.
 *  With options.prefetch the batch was collated by the reader's thread and
 *  this call only waits for it, gathers the hidden states and starts the
 *  collation of the following one; an error of that collation is returned
 *  here, for the batch it belongs to.
 *  @return 0; SS_ITEROVER at the end of an epoch (*out NULL); SS_ESTATE if
 *          a batch carrying state is still unregistered and max_pending
 *          batches are out ("register the final hidden states of batch N
 *          first"), or if nothing can be served until a pending batch
 *          is registered; an error of ss_get_range(); a transform's error. */
SS_API int ss_window_reader_next(const ss_window_batch **out, ss_window_reader *r);

/** Register the final hidden states of a batch and unblock its sequences.
 *
 *  `final_states` is [batch->size][H] in the batch's row order; rows that are
 *  masked are ignored. The state of a sequence that has a next window is
 *  stored and handed out with that window. May be NULL only when no state is
 *  carried (RANDOM mode, SS_WINDOW_FORGET_STATE or H = 0). Registering
 *  (without carried state) a batch already released does nothing and returns 0.
 *  @param[in] batch        a batch returned by ss_window_reader_next() of
 *                          this reader.
 *  @param[in] final_states copied before the call returns.
 *  @return 0; SS_EINVAL (not a batch of this reader, NULL states while state
 *          is carried); SS_ESTATE (already registered, with carried
 *          state). */
SS_API int ss_window_reader_register(ss_window_reader *r, const ss_window_batch *batch,
                                     const void *final_states);

/** State of sequence number `seq` (0 .. sequences-1 in the split's order);
 *  SS_SEQ_DONE for a number out of range. */
SS_API ss_seq_state ss_window_reader_seq_state(const ss_window_reader *r, uint64_t seq);

/** Restart at the beginning of epoch `epoch` (every sequence NORMAL, lanes
 *  empty, hidden states kept but every sequence starts with a reset). Also
 *  clears a failure of ss_window_reader_next().
 *  @return 0; SS_ESTATE if a batch carrying state is pending (unregistered
 *          batches without state are dropped). */
SS_API int ss_window_reader_set_epoch(ss_window_reader *r, uint64_t epoch);

/** Gather the targets of a batch aligned to the conv output: for every row,
 *  field `field` at time indices [start + O, start + W) (W - O steps; the
 *  first O positions dropped), converted to `dtype`, into `out`
 *  ([size][W-O][row] or [W-O][size][row] with SS_WINDOW_TIME_MAJOR). A
 *  sequence field is sliced (it must be as long as the signal); a fixed
 *  field (a label) is repeated. Masked rows and padded steps are zeros.
 *  @param[in]  batch the reader's current batch (before it is registered).
 *  @param[out] out   room for the layout above.
 *  @return 0; SS_ERANGE (bad field); SS_EINVAL (a bad dtype); SS_EINPUT (a
 *          sequence field shorter than the signal); an error of
 *          ss_get_range(). */
SS_API int ss_window_reader_targets(void *out, const ss_window_reader *r,
                                    const ss_window_batch *batch, uint32_t field, ss_dtype dtype);

/** Save flags. */
enum {
    SS_WINDOW_SAVE_STATES = 1u << 0 /**< include every sequence's hidden state */
};

/** Bytes ss_window_reader_state_save() needs with these flags
 *  (SS_WINDOW_SAVE_...); 0 for NULL. */
SS_API size_t ss_window_reader_state_size(const ss_window_reader *r, unsigned flags);

/** Save the reader's position (epoch, every sequence's cursor and state, the
 *  lane assignment, the random streams) and optionally the hidden states into
 *  `buf` (little-endian, self-describing).
 *  @param[out] buf  `cap` bytes.
 *  @param[in]  cap  bytes of buf.
 *  @param[out] len  bytes written (or needed, on SS_EBUFS); may be NULL.
 *  @param[in]  flags SS_WINDOW_SAVE_...
 *  @return 0; SS_ESTATE if a batch carrying state is pending, or any batch
 *          is pending with max_pending > 1 (save between batches);
 *          SS_EBUFS if `cap` is smaller than ss_window_reader_state_size()
 *          (nothing written, *len set); SS_EINVAL (NULL argument). */
SS_API int ss_window_reader_state_save(void *buf, size_t cap, size_t *len,
                                       const ss_window_reader *r, unsigned flags);

/** Restore a position saved by ss_window_reader_state_save() into a reader opened
 *  with the same store, split and options. The next batch is the one the
 *  saved reader would have produced.
 *  @param[in] buf `len` bytes; only read during the call.
 *  @return 0; SS_EINVAL (NULL buf, not a saved window reader, an unknown
 *          save version, truncated, saved with other options or another
 *          split: the message says which); SS_ESTATE (a batch of this reader
 *          carrying state is pending). On failure the reader is unchanged. */
SS_API int ss_window_reader_state_load(ss_window_reader *r, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* SEQSTORE_BPTT_H */
