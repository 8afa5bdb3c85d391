/* SPDX-License-Identifier: BSD-2-Clause */
/* window.h - the window reader's internals, shared by window.c (bookkeeping),
 * window_batch.c (collation) and window_save.c (save/restore); not installed. */
#ifndef SS_WINDOW_H
#define SS_WINDOW_H

#include "internal.h"
#include "cast.h"
#include "rng.h"

#include <pthread.h>

#define SS_NONE UINT64_MAX

/* One batch buffer; the reader keeps max_pending of them in a ring. */
typedef struct ss__wslot {
    ss_window_batch b;
    int pending;      /* handed out, not registered */
    int anticipated;  /* pending, and its sequences already released for the
                         prefetched batch: registering only stores the states */
    uint8_t *keep;    /* [B]: the row's sequence has a next window (its state is kept) */
    uint64_t *seq;    /* [B]: sequence number of each row (SS_NONE where masked) */
    const void **src; /* [B]: the window's samples in the map */
    uint8_t *mask, *step_mask, *reset;
    uint32_t *lane;
    uint64_t *example, *start, *length, *index;
    uint8_t *label;
    /* per-batch transforms: the batch seen as an ss_loader_batch (window_transform.c) */
    ss_loader_batch xb;
    ss_collated xcol[2];
    int64_t *xlen, *xlab_len; /* [B] */
} ss__wslot;

/* A per-window transform and the signal's dtype and shape after it. */
typedef struct ss__wxf {
    const ss_transform *t;
    uint32_t pos; /* position in the pipeline */
    int declares; /* writes into `out` (a new dtype or shape) */
    ss_dtype dtype;
    uint32_t ndim;
    uint64_t dims[SS_MAX_DIMS];
} ss__wxf;

struct ss_window_reader {
    const ss_store *store;
    ss_window_options opt; /* pointers replaced by owned copies or NULL */
    uint64_t W, O, S;      /* window, overlap, stride S = W - O */
    uint32_t B, C;         /* lanes, elements per sample */
    ss_dtype in_dtype, out_dtype;
    size_t in_row, out_row; /* bytes of one sample in and out */
    ss__affine aff;
    int has_aff;
    uint64_t H;          /* bytes of one hidden state */
    uint8_t *init_state; /* [H] */
    int carry;           /* hidden state is carried between windows */
    int strict;          /* max_pending == 1 */
    uint32_t nslots;   /* batches that may be out unregistered (max_pending, >= 1) */
    uint32_t nbuf;     /* slots: nslots, one more with prefetch */
    ss__wslot *slots;
    uint64_t next_id;
    int nthreads;
    uint8_t *scratch;   /* [nthreads][W][C] output rows, for the time-major layout */
    ss_dtype src_dtype; /* of the rows the collation converts: in_dtype, or the dtype
                           after the per-window transforms */

    /* transforms (window_transform.c) */
    ss__wxf *xf; /* [nxf] per-window transforms */
    uint32_t nxf;
    const ss_transform **bxf; /* [nbxf] per-batch transforms */
    uint32_t *bxf_pos;
    uint32_t nbxf;
    uint64_t xrow_max;     /* largest sample over the per-window stages, bytes */
    uint8_t *xbuf;         /* [B][2][W * xrow_max]: each lane's copy and spare */
    ss_example *xex;       /* [B] */
    ss_example_field *xef; /* [B] */
    int *xrc;              /* [B] result per row */
    uint32_t *xfail;       /* [B] the failing transform per row */
    int failed;            /* a sticky error of ss_window_reader_next() */
    char fail_msg[512];

    /* sequences, numbered 0..nseq-1 in the split's order */
    uint64_t nseq;
    uint64_t *seq_ex, *seq_len;
    uint64_t *seq_start, *seq_nwin, *seq_cur; /* this epoch */
    uint8_t *seq_st;                          /* ss_seq_state */
    uint8_t *seq_owned;                       /* held by a lane or queued as parked */
    uint64_t *seq_stamp;                      /* RANDOM: last batch id + 1 that used the sequence */
    uint8_t *hidden;                          /* [nseq][H] */
    uint64_t too_short;
    uint64_t nelig;
    uint64_t *elig;        /* [nelig]: the eligible sequences in split order */
    uint64_t full_windows; /* SEQUENTIAL windows over all eligible sequences (s = 0) */

    /* labels */
    uint64_t label_row;
    ss_dtype label_dtype; /* 0 without a label field */
    uint32_t nclass;
    uint32_t *seq_class;  /* [nseq] class number */
    uint64_t *class_off;  /* [nclass + 1] into class_seq */
    uint64_t *class_seq;  /* eligible sequences grouped by class, the pass's order */
    uint64_t *class_pos;  /* [nclass] */
    uint64_t *class_pass; /* [nclass] */
    uint64_t class_max;   /* most sequences in one class */

    /* the batch planned ahead of the caller (window_prefetch.c): a slot neither
     * handed out nor free, filled by the reader's thread with prefetch, or
     * restored from a save (then collated when handed out) */
    ss__wslot *prep;
    ss__wslot *last;        /* the slot handed out last */
    int prep_kind;          /* SS__PREP_NONE, _BATCH or _END (the epoch is over) */
    int prep_collated;      /* its data is collated (prep_rc says how it went) */
    int prep_rc;            /* the collation's result */
    char prep_msg[512];     /* and its message */
    uint64_t prep_planned;  /* windows the plan took (also the ones DROP_LAST drops) */
    uint32_t prep_rows;     /* rows the plan filled (b.size is 0 at the end of an epoch) */
    int thread_on;          /* the prefetch thread runs */
    int job, stop;          /* under mu: a plan is requested / the thread must end */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;

    /* position */
    uint64_t epoch;
    int ended;       /* the last batch was the end-of-epoch marker */
    int exhausted;   /* balanced: a largest class is used up */
    uint64_t *order; /* [nelig]: this epoch's order */
    uint64_t order_pos;
    uint64_t *lane_seq; /* [B] */
    uint64_t *cand;     /* [nelig]: SS_WINDOW_REDRAW's candidates of a round */
    uint64_t *parked;   /* [nseq] FIFO of unowned in-progress sequences */
    uint64_t park_head, park_n;
    uint64_t epoch_windows, windows_out, batches_in_epoch;
};

enum { SS__PREP_NONE = 0, SS__PREP_BATCH = 1, SS__PREP_END = 2 };

/* Collate rows of slot `sl` (its seq/start/length/mask are filled): data,
 * step mask, label; not the states. window_batch.c. */
int ss__window_collate(ss_window_reader *r, ss__wslot *sl);
/* Gather each row's initial hidden state into the slot (once the batches
 * before it are registered). window_batch.c. */
void ss__window_gather_states(ss_window_reader *r, ss__wslot *sl);

/* Plan the next batch into the free slot `sl` (rows, bookkeeping); returns
 * SS__PREP_BATCH or SS__PREP_END, or SS_ESTATE when every remaining sequence
 * waits for a pending batch (the message is set). Sets sl->b.id, epoch,
 * size, active; r->prep_planned. window.c. */
int ss__window_plan(ss_window_reader *r, ss__wslot *sl);
/* Mark the sequences of a handed-out batch as released (the bookkeeping of
 * registering it, without the states). window.c. */
void ss__window_release_marks(ss_window_reader *r, ss__wslot *sl);

/* The prefetch thread (window_prefetch.c): start it at open, stop it at
 * free; wait until no plan is in progress (every call that reads or changes
 * the reader's bookkeeping does); plan the next batch ahead. */
int ss__window_prefetch_start(ss_window_reader *r);
void ss__window_prefetch_stop(ss_window_reader *r);
void ss__window_prefetch_wait(const ss_window_reader *r);
void ss__window_prefetch_request(ss_window_reader *r);
/* Plan and collate the next batch into r->prep now (in this thread). */
void ss__window_prepare(ss_window_reader *r);
/* Collate the planned batch r->prep (planned, or restored from a save):
 * prep_rc and prep_msg say how it went. */
void ss__window_prep_collate(ss_window_reader *r);
/* Drop the planned batch (set_epoch, a restore). */
void ss__window_prep_drop(ss_window_reader *r);

/* Allocate the buffers of every slot. window_batch.c. */
int ss__window_slots_alloc(ss_window_reader *r);
void ss__window_slots_free(ss_window_reader *r);

/* Resolve options->transforms: sets src_dtype (in_dtype without per-window
 * transforms). window_transform.c. */
int ss__window_xf_resolve(ss_window_reader *r, const ss_pipeline *p);
/* Allocate the transform buffers (after the slots). */
int ss__window_xf_alloc(ss_window_reader *r);
void ss__window_xf_free(ss_window_reader *r);
/* Copy the slot's windows (sl->src, from the map) into the lane buffers, run
 * the per-window transforms in parallel and point sl->src at the results. */
int ss__window_xf_rows(ss_window_reader *r, ss__wslot *sl);
/* Run the per-batch transforms on a collated slot. */
int ss__window_xf_batch(ss_window_reader *r, ss__wslot *sl);

/* Windows of a sequence of length L starting at s (with the padded tail
 * window of SS_WINDOW_PAD_TAIL). window.c. */
uint64_t ss__window_count(const ss_window_reader *r, uint64_t L, uint64_t s);

/* Start epoch `epoch` (orders, random starts, cursors). window.c. */
void ss__window_start_epoch(ss_window_reader *r, uint64_t epoch);

#endif
