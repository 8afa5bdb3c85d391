/* SPDX-License-Identifier: BSD-2-Clause */
/* lm_blend.c - LM samples of several indices blended with weights
 * (Megatron's BlendedDataset over GPTDatasets): the blend of sampler.h
 * picks each row's source and sample, ss_lm_get() writes it. */
#include "lm_internal.h"
#include "internal.h"

#include <inttypes.h>

int ss_lm_blend_get(uint32_t *sources, const ss_lm_batch *out, const ss_lm *const *lms,
                    uint32_t nlms, ss_blend *b, uint64_t n) {
    if (!out || !lms || !nlms || !b) return ss__fail(SS_EINVAL, "ss_lm_blend_get: NULL argument");
    for (uint32_t j = 0; j < nlms; j++) {
        if (!lms[j]) return ss__fail(SS_EINVAL, "ss_lm_blend_get: NULL index %u", j);
        if (lms[j]->o.seq_length != lms[0]->o.seq_length)
            return ss__fail(SS_EINVAL, "lm: blended indices have L %" PRIu64 " (index 0) and %"
                            PRIu64 " (index %u): rows must be of one length",
                            lms[0]->o.seq_length, lms[j]->o.seq_length, j);
    }
    const uint64_t L = lms[0]->o.seq_length;
    for (uint64_t r = 0; r < n; r++) {
        uint32_t j;
        uint64_t i;
        int rc = ss_blend_next(&j, &i, b);
        if (rc) return rc;
        if (j >= nlms)
            return ss__fail(SS_EINVAL, "lm: the blend chose source %u of %u indices", j, nlms);
        /* row r of each output, as ss_lm_get() lays out row 0 of its batch */
        ss_lm_batch row = {
            out->tokens ? out->tokens + r * L : NULL,
            out->labels ? out->labels + r * L : NULL,
            out->loss_mask ? out->loss_mask + r * L : NULL,
            out->position_ids ? out->position_ids + r * L : NULL,
            out->segment_ids ? out->segment_ids + r * L : NULL,
            out->cu_seqlens ? out->cu_seqlens + r * (L + 1) : NULL,
            out->nsegments ? out->nsegments + r : NULL,
        };
        rc = ss_lm_get(&row, lms[j], &i, 1);
        if (rc) return ss__context(rc, "blended row %" PRIu64 " (index %u)", r, j);
        if (sources) sources[r] = j;
    }
    return 0;
}
