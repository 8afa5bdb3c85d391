/* SPDX-License-Identifier: BSD-2-Clause */
/* rank_env.c - rank and world size from the launcher's environment
 * (torchrun, Open MPI, Slurm); see ss_rank_from_env() in sampler.h. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* A decimal number below 2^32 - 1 (SS_RANK_UNSET), digits only. */
static int parse_u32(const char *text, uint32_t *out) {
    uint64_t v = 0;
    if (!text || !*text) return -1;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        v = v * 10 + (uint64_t)(*p - '0');
        if (v >= SS_RANK_UNSET) return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

int ss_rank_from_env(uint32_t *rank, uint32_t *world_size, const char **source) {
    static const char *const pairs[][3] = {
        {"RANK", "WORLD_SIZE", "RANK/WORLD_SIZE"},
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
         "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE"},
        {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_PROCID/SLURM_NTASKS"}};
    if (!rank || !world_size) return ss__fail(SS_EINVAL, "ss_rank_from_env: NULL argument");
    uint32_t r = *rank, w = *world_size;
    const char *from = "explicit";
    if (r == SS_RANK_UNSET || w == SS_RANK_UNSET) {
        from = "default";
        for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
            const char *rv = getenv(pairs[k][0]), *wv = getenv(pairs[k][1]);
            if (!rv && !wv) continue;
            uint32_t er, ew;
            if (!rv || !wv)
                return ss__fail(SS_EINVAL, "%s is set but %s is not",
                                rv ? pairs[k][0] : pairs[k][1], rv ? pairs[k][1] : pairs[k][0]);
            if (parse_u32(rv, &er) || parse_u32(wv, &ew))
                return ss__fail(SS_EINVAL, "%s='%s' %s='%s': not a decimal number", pairs[k][0], rv,
                                pairs[k][1], wv);
            if (r == SS_RANK_UNSET) r = er;
            if (w == SS_RANK_UNSET) w = ew;
            from = pairs[k][2];
            break;
        }
        if (r == SS_RANK_UNSET) r = 0;
        if (w == SS_RANK_UNSET) w = 1;
    }
    if (w == 0 || r >= w)
        return ss__fail(SS_EINVAL, "rank %u of world size %u (from %s): need rank < world size", r,
                        w, from);
    *rank = r;
    *world_size = w;
    if (source) *source = from;
    return 0;
}
