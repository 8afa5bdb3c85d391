/* SPDX-License-Identifier: BSD-2-Clause */
/* sampler_internal.h - what the loader needs of a sampler beyond its API
 * (not installed). */
#ifndef SS_SAMPLER_INTERNAL_H
#define SS_SAMPLER_INTERNAL_H

#include "seqstore.h"

/* A hash of what fixes the sampler's global order and its global steps of
 * B = world_size * batch_size examples, leaving out world_size, rank,
 * num_workers, worker and batch_size themselves: samplers with equal values
 * put the same examples in global step k ("elastic determinism"), so a
 * position counted in global steps carries over between them. 0 for NULL. */
uint64_t ss__sampler_elastic_fingerprint(const ss_sampler *s);

/* Store indices of this rank's and worker's positions [q0, q0 + n) of the
 * current epoch (q0 + n <= ss_sampler_epoch_length()), as ss_sampler_next()
 * would give them, without moving the sampler: each is computed on its own
 * in O(1) (O(log blocks) with blocks by bytes or buckets), so a loader makes
 * a batch's indices when it fills the batch, from any thread, and keeps no
 * list of the epoch. */
void ss__sampler_at(uint64_t *out, const ss_sampler *s, uint64_t q0, uint64_t n);

/* 1 if the sampler's global order is not the one seqstore 0.3 gave for the
 * same options (SHUFFLE and BLOCK_SHUFFLE: per-position bijections replaced
 * whole-epoch Fisher-Yates permutations), so a version 1 state cannot resume
 * it exactly; 0 for the other kinds and NULL. */
int ss__sampler_order_changed(const ss_sampler *s);

#endif
