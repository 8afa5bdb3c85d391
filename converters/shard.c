/* SPDX-License-Identifier: BSD-2-Clause */
/* shard.c - `--shard K/N`: which examples one shard of a conversion keeps
 * (the byte ranges of the inputs; see convert.h). */
#include "conv_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ shards */

/* floor(k * total / n) without overflow (k <= n <= 2^32). */
static uint64_t shard_start(uint64_t k, uint64_t n, uint64_t total) {
    return k * (total / n) + k * (total % n) / n;
}

/* The sliced inputs' layout and this shard's byte range [lo, hi): the bytes
 * of every non-auxiliary input concatenated in input order, T in all, cut at
 * b_k = floor(k*T/N). Returns 0 or 1 (error printed). */
int ss__conv_shard_compute(ss_conv *c) {
    if (c->shard_base) return 0;
    size_t n = c->nsources ? c->nsources : 1;
    c->shard_base = calloc(n, sizeof *c->shard_base);
    c->shard_size = calloc(n, sizeof *c->shard_size);
    int rc = !c->shard_base || !c->shard_size ? ss__conv_error(c, "out of memory") : 0;
    uint64_t total = 0;
    for (uint32_t f = 0; !rc && f < c->nsources; f++) {
        struct stat st;
        c->shard_base[f] = total;
        if (f < c->shard_given_cap && c->shard_given[f] != UINT64_MAX) {
            total += c->shard_size[f] = c->shard_given[f];
            continue;
        }
        if (!strcmp(c->sources[f], "-") || stat(c->sources[f], &st) != 0 || !S_ISREG(st.st_mode))
            rc =
                ss__conv_error(c,
                               "--shard: '%s' is not a regular file (shards slice files by size)",
                               c->sources[f]);
        else
            total += c->shard_size[f] = (uint64_t)st.st_size;
    }
    c->shard_lo = shard_start(c->shard_k, c->shard_n, total);
    c->shard_hi = shard_start(c->shard_k + 1ull, c->shard_n, total);
    if (c->shard_k + 1 == c->shard_n) c->shard_hi = UINT64_MAX; /* past-the-end bytes too */
    if (rc) {
        free(c->shard_base);
        free(c->shard_size);
        c->shard_base = c->shard_size = NULL;
    }
    return rc;
}

int ss__conv_shard_size(ss_conv *c, uint32_t source, uint64_t size) {
    if (source >= c->shard_given_cap) {
        uint32_t cap = source + 16;
        uint64_t *p = realloc(c->shard_given, cap * sizeof *p);
        if (!p) return ss__conv_error(c, "out of memory");
        for (uint32_t k = c->shard_given_cap; k < cap; k++) p[k] = UINT64_MAX;
        c->shard_given = p;
        c->shard_given_cap = cap;
    }
    c->shard_given[source] = size;
    return 0;
}

void ss__conv_shard_self(ss_conv *c) {
    c->shard_self = 1;
}

void ss__conv_shard_spec(const ss_conv *c, uint32_t *k, uint32_t *n) {
    *k = c->shard_k;
    *n = c->shard_n;
}

void ss__conv_no_store(ss_conv *c) {
    c->no_store = 1;
}

int ss__conv_shard_range(ss_conv *c, uint32_t source, uint64_t *lo, uint64_t *hi) {
    *lo = 0;
    *hi = UINT64_MAX;
    if (!c->shard_n) return 1;
    if (ss__conv_shard_compute(c) || source >= c->nsources) return *hi = 0, 0;
    uint64_t b = c->shard_base[source], size = c->shard_size[source];
    if (c->shard_hi <= b || (c->shard_lo >= b + size && size)) return *hi = 0, 0;
    if (!size && c->shard_lo > b) return *hi = 0, 0; /* an empty input: at its offset */
    *lo = c->shard_lo > b ? c->shard_lo - b : 0;
    *hi = c->shard_hi == UINT64_MAX ? UINT64_MAX : c->shard_hi - b;
    return 1;
}

int ss__conv_in_shard_at(ss_conv *c, uint32_t source, uint64_t byte) {
    uint64_t lo, hi;
    if (!ss__conv_shard_range(c, source, &lo, &hi)) return 0;
    return byte >= lo && byte < hi;
}

int ss__conv_in_shard(ss_conv *c, uint32_t source) {
    return ss__conv_in_shard_at(c, source, 0);
}

int ss__conv_shard_keeps_path(ss_conv *c, const char *file) {
    for (uint32_t k = 0; k < c->nsources; k++)
        if (!strcmp(c->sources[k], file)) return ss__conv_in_shard(c, k);
    return 1; /* not an input (e.g. a vocabulary file): every shard's concern */
}

/* --shard K/N: 0 <= K < N, both decimal; or "auto": K and N are the rank
 * and world size of ss_rank_from_env(). Returns 0 or 2 (usage error). */
int ss__conv_parse_shard(ss_conv *c, const char *text) {
    if (text && !strcmp(text, "auto")) {
        uint32_t r = SS_RANK_UNSET, w = SS_RANK_UNSET;
        if (ss_rank_from_env(&r, &w, NULL))
            return ss__conv_usage_error(c, "--shard auto: %s", ss_error_message());
        c->shard_k = r;
        c->shard_n = w;
        return 0;
    }
    const char *slash = text ? strchr(text, '/') : NULL;
    uint64_t k, n;
    char kbuf[32];
    if (!slash || (size_t)(slash - text) >= sizeof kbuf)
        return ss__conv_usage_error(c, "--shard needs K/N (0 <= K < N), not '%s'",
                                    text ? text : "");
    memcpy(kbuf, text, (size_t)(slash - text));
    kbuf[slash - text] = 0;
    if (ss__conv_parse_u64(c, "--shard N", slash + 1, 1, UINT32_MAX, &n) ||
        ss__conv_parse_u64(c, "--shard K", kbuf, 0, n - 1, &k))
        return 2;
    c->shard_k = (uint32_t)k;
    c->shard_n = (uint32_t)n;
    return 0;
}

