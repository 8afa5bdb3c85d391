/* SPDX-License-Identifier: BSD-2-Clause */
/* lm_stored.c - the stored LM sample index (section ss.lm.FIELD.OPTIONS, see
 * spec/SDK_SECTIONS.md): written by ss_lm_save(), found by ss_lm_create(),
 * which then uses its document index, sample index and sample shuffle in
 * place (zero copy) instead of drawing them again.
 *
 * Opening one costs O(1) in the documents: the section's header and its
 * table of block checksums are checked at open, and each block of the
 * arrays the first time a read reaches it (ss__lm_stored_check()), so a
 * training loop that opens a 10^9-token index pays for the blocks it reads,
 * when it reads them. Nothing of a block is used before its checksum
 * matches; what the checksums cannot tell (a section sealed with values
 * that lie) the reads check as they use each value (lm_sample.c). */
#include "lm_internal.h"
#include "internal.h"
#include "layout.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define LM_MAGIC 0x005844494d4c5353ull /* "SSLMIDX\0" read as a LE u64 */
#define LM_VERSION 2
#define LM_HEADER 256
/* Bytes per checked block: small enough that the first batches of a
 * training loop (a few blocks each) wait microseconds, large enough that
 * the table checked at open stays a few kilobytes at 10^9 tokens. */
#define LM_BLOCK 65536
enum { H_MAGIC, H_VERSION, H_LAYOUT, H_L, H_SEED, H_SAMPLES, H_EPOCHS, H_APPEND, H_N, H_T, H_E,
       H_S, H_SANS, H_SEPARATE, H_SPLIT, H_BLOCK, H_NBLOCKS, H_LENGTHS, H_DOCS, H_SUM, H_COUNT };

int ss__lm_section_name(char *buf, size_t cap, const char *field, const ss_lm_options *o) {
    int n = snprintf(buf, cap, "ss.lm.%s.L%" PRIu64 ".seed%" PRIu64 ".samples%" PRIu64
                     ".epochs%" PRIu64 ".append%d", field, o->seq_length, o->seed,
                     o->num_samples, o->num_epochs, (o->flags & SS_LM_APPEND_EOD) != 0);
    if (n < 0 || n > SS_MAX_ATTR_NAME)
        return ss__fail(SS_EINVAL, "lm: field name '%s' too long for a stored index", field);
    if ((size_t)n >= cap)
        return ss__fail(SS_EBUFS, "lm: the stored index's name needs %d bytes, the buffer holds "
                        "%zu", n + 1, cap);
    return 0;
}

int ss_lm_index_name(char *buf, size_t cap, const char *field, const ss_lm_options *options) {
    if ((!buf && cap) || !field || !options)
        return ss__fail(SS_EINVAL, "ss_lm_index_name: NULL argument");
    if (cap) buf[0] = 0;
    if (options->version != SS_LM_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL, "lm: unknown options version %u (this library knows 1)",
                        options->version);
    if (options->layout != SS_LM_MEGATRON)
        return ss__fail(SS_EINVAL, "lm: only SS_LM_MEGATRON indices are stored");
    int rc = ss__lm_section_name(buf, cap, field, options);
    if (rc && cap) buf[0] = 0;
    return rc;
}

static int little_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* The header fields lm's index would have, up to H_SPLIT. */
static void header(uint64_t *h, const ss_lm *lm) {
    memset(h, 0, H_COUNT * sizeof *h);
    h[H_MAGIC] = LM_MAGIC, h[H_VERSION] = LM_VERSION, h[H_LAYOUT] = lm->o.layout;
    h[H_L] = lm->o.seq_length, h[H_SEED] = lm->o.seed, h[H_SAMPLES] = lm->o.num_samples;
    h[H_EPOCHS] = lm->o.num_epochs, h[H_APPEND] = (lm->o.flags & SS_LM_APPEND_EOD) != 0;
    h[H_N] = lm->ndocs, h[H_T] = lm->tokens_per_epoch, h[H_E] = lm->epochs;
    h[H_S] = lm->nsamples, h[H_SANS] = lm->sans_final, h[H_SEPARATE] = (uint64_t)lm->separate;
    h[H_SPLIT] = lm->split;
}

/* Bytes of the checked arrays: shuffle, sample index, document index. */
static uint64_t arrays_size(const ss_lm *lm) {
    return 8 * lm->nsamples + 16 * (lm->nsamples + 1) + 4 * lm->epochs * lm->ndocs;
}

static uint64_t nblocks_of(uint64_t bytes) { return (bytes + LM_BLOCK - 1) / LM_BLOCK; }

/* The documents an index was built for, named by their lengths (as the
 * index uses them, the appended eod included): XXH3-64 of n u64 values. */
static uint64_t documents_digest(const uint64_t *sizes, uint64_t n) {
    return XXH3_64bits(sizes, n * sizeof *sizes); /* little-endian hosts only (checked) */
}

/* The checksum over the header (H_SUM taken as 0) and the block table. */
static uint64_t header_sum(const unsigned char *p, uint64_t nblocks) {
    unsigned char h[LM_HEADER];
    memcpy(h, p, LM_HEADER);
    memset(h + 8 * H_SUM, 0, 8);
    return XXH3_64bits_withSeed(p + LM_HEADER, 8 * nblocks, XXH3_64bits(h, LM_HEADER));
}

/* Block k of the arrays at `a` (of `bytes` in all), bound to its number so
 * that blocks cannot trade places. */
static uint64_t block_sum(const unsigned char *a, uint64_t bytes, uint64_t k) {
    uint64_t at = k * LM_BLOCK, len = bytes - at < LM_BLOCK ? bytes - at : LM_BLOCK;
    return XXH3_64bits_withSeed(a + at, len, k);
}

/* The stored checksum of the store's lengths section of `field` (what the
 * index was built from), 0 when it has none. */
static uint64_t lengths_name(const ss_store *s, const char *field) {
    char name[SS_MAX_ATTR_NAME + 16];
    snprintf(name, sizeof name, SS_LENGTHS_ATTR_PREFIX "%s", field);
    ss_attr a;
    uint64_t sum = 0;
    if (ss__attr_unhashed(&a, &sum, s, name) != 0) return 0; /* none: bound by the digest */
    return sum;
}

int ss__lm_stored_find(ss_lm *lm, const char *field) {
    char name[SS_MAX_ATTR_NAME + 64];
    int rc = ss__lm_section_name(name, sizeof name, field, &lm->o);
    if (rc) return rc;
    if (!little_endian()) return SS_ENOTFOUND;
    ss_attr a;
    uint64_t sum;
    rc = ss__attr_unhashed(&a, &sum, lm->store, name);
    if (rc == SS_ENOTFOUND) return SS_ENOTFOUND;
    if (rc) return rc;
    return ss__lm_stored_use(lm, name, a.data, a.size, lengths_name(lm->store, field));
}

int ss__lm_stored_use(ss_lm *lm, const char *name, const void *data, size_t size,
                      uint64_t lengths) {
    const unsigned char *p = data;
    if (size < LM_HEADER || ss_le64(p) != LM_MAGIC)
        return ss__fail(SS_ECORRUPT, "lm: stored index '%s': bad magic or size", name);
    uint64_t version = ss_le64(p + 8 * H_VERSION);
    if (version < LM_VERSION) return SS_ENOTFOUND; /* checked whole at open: built afresh */
    if (version > LM_VERSION)
        return ss__fail(SS_EVERSION, "lm: stored index '%s': version %" PRIu64 " (this library "
                        "reads %d)", name, version, LM_VERSION);
    uint64_t nb = ss_le64(p + 8 * H_NBLOCKS);
    if (nb > (size - LM_HEADER) / 8 || header_sum(p, nb) != ss_le64(p + 8 * H_SUM))
        return ss__fail(SS_ECORRUPT, "lm: stored index '%s': its header fails its checksum",
                        name);
    /* the header is now as ss_lm_save() wrote it */
    uint64_t want[H_COUNT];
    header(want, lm);
    for (int k = 0; k < H_SPLIT; k++)
        if (ss_le64(p + 8 * k) != want[k])
            return SS_ENOTFOUND; /* built for other documents: stale, built afresh */
    /* the same count and tokens; the same lengths too? */
    if (!lengths || ss_le64(p + 8 * H_LENGTHS) != lengths) {
        if (!lm->sizes) return 1; /* the caller reads them and asks again */
        if (documents_digest(lm->sizes, lm->ndocs) != ss_le64(p + 8 * H_DOCS)) return SS_ENOTFOUND;
    }
    uint64_t bytes = arrays_size(lm);
    if (ss_le64(p + 8 * H_BLOCK) != LM_BLOCK || nb != nblocks_of(bytes) ||
        size != LM_HEADER + 8 * nb + bytes)
        return ss__fail(SS_ECORRUPT, "lm: stored index '%s': %" PRIu64 " bytes, not %" PRIu64,
                        name, (uint64_t)size, LM_HEADER + 8 * nblocks_of(bytes) + bytes);
    const unsigned char *arrays = p + LM_HEADER + 8 * nb;
    lm->verdict = calloc(nb ? nb : 1, 1);
    lm->stored_name = strdup(name);
    if (!lm->verdict || !lm->stored_name) {
        free((void *)lm->verdict), free(lm->stored_name);
        lm->verdict = NULL, lm->stored_name = NULL;
        return ss__fail(SS_ENOMEM, "lm: out of memory");
    }
    lm->block_sums = p + LM_HEADER;
    lm->arrays = arrays;
    lm->arrays_bytes = bytes;
    lm->nblocks = nb;
    lm->split = ss_le64(p + 8 * H_SPLIT);
    lm->shuffle = (int64_t *)(uintptr_t)arrays; /* borrowed from the map, never written */
    lm->sample = lm->shuffle + lm->nsamples;
    lm->doc = (uint32_t *)(uintptr_t)(lm->sample + 2 * (lm->nsamples + 1));
    lm->borrowed = 1;
    return 0;
}

int ss__lm_stored_check(const ss_lm *lm, const void *at, uint64_t bytes) {
    if (!bytes) return 0;
    uint64_t from = (uint64_t)((const unsigned char *)at - lm->arrays);
    if (from >= lm->arrays_bytes || bytes > lm->arrays_bytes - from) /* a caller's bug */
        return ss__fail(SS_ECORRUPT, "lm: stored index '%s': bytes %" PRIu64 "+%" PRIu64
                        " are outside it", lm->stored_name, from, bytes);
    for (uint64_t k = from / LM_BLOCK; k <= (from + bytes - 1) / LM_BLOCK; k++) {
        unsigned char v = atomic_load_explicit(&lm->verdict[k], memory_order_acquire);
        if (v == SS_LM_BLOCK_SOUND) continue;
        /* two threads may hash the same block: they store the same verdict */
        if (v == SS_LM_BLOCK_UNCHECKED)
            v = block_sum(lm->arrays, lm->arrays_bytes, k) == ss_le64(lm->block_sums + 8 * k)
                    ? SS_LM_BLOCK_SOUND
                    : SS_LM_BLOCK_CORRUPT;
        atomic_store_explicit(&lm->verdict[k], v, memory_order_release);
        if (v != SS_LM_BLOCK_SOUND)
            return ss__fail(SS_ECORRUPT, "lm: stored index '%s': block %" PRIu64 " of %" PRIu64
                            " fails its checksum", lm->stored_name, k, lm->nblocks);
    }
    return 0;
}

void ss__lm_stored_write(unsigned char *buf, const ss_lm *lm, uint64_t lengths) {
    uint64_t bytes = arrays_size(lm), nb = nblocks_of(bytes);
    unsigned char *arrays = buf + LM_HEADER + 8 * nb, *q = arrays;
    for (uint64_t k = 0; k < lm->nsamples; k++, q += 8) ss_put_le64(q, (uint64_t)lm->shuffle[k]);
    for (uint64_t k = 0; k < 2 * (lm->nsamples + 1); k++, q += 8)
        ss_put_le64(q, (uint64_t)lm->sample[k]);
    for (uint64_t k = 0; k < lm->epochs * lm->ndocs; k++, q += 4) ss_put_le32(q, lm->doc[k]);
    uint64_t h[H_COUNT];
    header(h, lm);
    h[H_BLOCK] = LM_BLOCK, h[H_NBLOCKS] = nb, h[H_LENGTHS] = lengths;
    h[H_DOCS] = documents_digest(lm->sizes, lm->ndocs);
    memset(buf, 0, LM_HEADER);
    for (int k = 0; k < H_COUNT; k++) ss_put_le64(buf + 8 * k, h[k]);
    ss__lm_stored_seal(buf, LM_HEADER + 8 * nb + bytes);
}

void ss__lm_stored_seal(unsigned char *section, size_t size) {
    uint64_t nb = ss_le64(section + 8 * H_NBLOCKS), bytes = size - LM_HEADER - 8 * nb;
    const unsigned char *arrays = section + LM_HEADER + 8 * nb;
#pragma omp parallel for schedule(static) if (nb > 64)
    for (uint64_t k = 0; k < nb; k++)
        ss_put_le64(section + LM_HEADER + 8 * k, block_sum(arrays, bytes, k));
    ss_put_le64(section + 8 * H_SUM, header_sum(section, nb));
}

uint64_t ss__lm_stored_size(const ss_lm *lm) {
    uint64_t bytes = arrays_size(lm);
    return LM_HEADER + 8 * nblocks_of(bytes) + bytes;
}

int ss_lm_save(const char *path, const char *field, const ss_lm_options *options) {
    if (!path || !field || !options) return ss__fail(SS_EINVAL, "ss_lm_save: NULL argument");
    if (options->layout != SS_LM_MEGATRON)
        return ss__fail(SS_EINVAL, "lm: only SS_LM_MEGATRON indices are stored");
    char name[SS_MAX_ATTR_NAME + 64];
    int rc = ss__lm_section_name(name, sizeof name, field, options);
    if (rc) return rc;
    ss_store *s = NULL;
    rc = ss_open(&s, path, 0);
    uint32_t f = 0;
    if (!rc) rc = ss_field_index(&f, s, field);
    ss_lm *lm = NULL;
    if (!rc) rc = ss__lm_create(&lm, s, f, options, 0); /* drawn afresh */
    unsigned char *buf = NULL;
    uint64_t size = 0, count = s ? ss_count(s) : 0;
    if (!rc) {
        size = ss__lm_stored_size(lm);
        buf = malloc(size);
        if (!buf) rc = ss__fail(SS_ENOMEM, "lm: out of memory for a %" PRIu64 "-byte index", size);
    }
    if (!rc) ss__lm_stored_write(buf, lm, lengths_name(s, field));
    ss_lm_free(lm);
    ss_close(s);
    ss_writer *w = NULL;
    uint64_t now = 0;
    if (!rc) rc = ss_sections_writer_open(&w, path); /* a dataset's: its sections store */
    if (!rc) rc = ss__sections_count(&now, path, w);
    if (!rc && now != count)
        rc = ss__fail(SS_EBUSY, "lm: '%s' changed while its index was built", path);
    if (!rc) rc = ss_writer_set_attr(w, name, SS_ATTR_BYTES, buf, (size_t)size);
    if (!rc) rc = ss_writer_finish(w);
    ss_writer_free(w);
    free(buf);
    return rc;
}
