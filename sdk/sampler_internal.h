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

#endif
