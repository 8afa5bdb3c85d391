/* SPDX-License-Identifier: BSD-2-Clause */
/* batch_internal.h - the batch builder shared by batch.c and bucket.c; not installed. */
#ifndef SS_BATCH_INTERNAL_H
#define SS_BATCH_INTERNAL_H

#include "seqstore.h"

/* Batches under construction: items[offs[k] .. offs[k+1]) is batch k. The
 * capacities are fixed at init (a batch list never holds more items than
 * its input, nor more batches than items), so building never reallocates. */
typedef struct ss__batch_builder {
    uint64_t *items, *lens, *offs;
    uint64_t nitems, nbatches, cap;
    uint64_t skipped;
} ss__batch_builder;

/* Check options; `n` examples will be batched (for messages). */
int ss__batch_check_options(const ss_batch_options *o, int have_lengths);
/* Items a builder needs for n examples cut in `segments` separate runs. */
uint64_t ss__batch_capacity(uint64_t n, uint64_t segments, const ss_batch_options *o);
/* Allocate room for up to `cap` items. */
int ss__batch_builder_init(ss__batch_builder *bb, uint64_t cap);
void ss__batch_builder_free(ss__batch_builder *bb);
/* Append the batches of one segment `order[0..n)` (lengths parallel). */
int ss__batch_segment(ss__batch_builder *bb, const uint64_t *order, const uint64_t *lengths,
                      uint64_t n, const ss_batch_options *o);
/* Turn the builder into a batcher (takes its arrays; bb is emptied). */
int ss__batcher_from_builder(ss_batcher **out, ss__batch_builder *bb);

#endif
