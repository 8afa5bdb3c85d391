/* SPDX-License-Identifier: BSD-2-Clause */
/* lm_stored.c - the stored LM sample index (section ss.lm.FIELD.OPTIONS, see
 * spec/SDK_SECTIONS.md): written by ss_lm_save(), found by ss_lm_create(),
 * which then uses its document index and sample shuffle in place (zero
 * copy) instead of drawing them again. */
#include "lm_internal.h"
#include "internal.h"
#include "layout.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LM_MAGIC 0x005844494d4c5353ull /* "SSLMIDX\0" read as a LE u64 */
#define LM_HEADER 128
enum { H_MAGIC, H_VERSION, H_LAYOUT, H_L, H_SEED, H_SAMPLES, H_EPOCHS, H_APPEND, H_N, H_T, H_E,
       H_S, H_SANS, H_SEPARATE, H_SPLIT, H_COUNT };

int ss__lm_section_name(char *buf, size_t cap, const char *field, const ss_lm_options *o) {
    int n = snprintf(buf, cap, "ss.lm.%s.L%" PRIu64 ".seed%" PRIu64 ".samples%" PRIu64
                     ".epochs%" PRIu64 ".append%d", field, o->seq_length, o->seed,
                     o->num_samples, o->num_epochs, (o->flags & SS_LM_APPEND_EOD) != 0);
    if (n < 0 || (size_t)n >= cap || n > SS_MAX_ATTR_NAME)
        return ss__fail(SS_EINVAL, "lm: field name '%s' too long for a stored index", field);
    return 0;
}

static int little_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* The header lm's index would have. */
static void header(uint64_t *h, const ss_lm *lm) {
    memset(h, 0, H_COUNT * sizeof *h);
    h[H_MAGIC] = LM_MAGIC, h[H_VERSION] = 1, h[H_LAYOUT] = lm->o.layout;
    h[H_L] = lm->o.seq_length, h[H_SEED] = lm->o.seed, h[H_SAMPLES] = lm->o.num_samples;
    h[H_EPOCHS] = lm->o.num_epochs, h[H_APPEND] = (lm->o.flags & SS_LM_APPEND_EOD) != 0;
    h[H_N] = lm->ndocs, h[H_T] = lm->tokens_per_epoch, h[H_E] = lm->epochs;
    h[H_S] = lm->nsamples, h[H_SANS] = lm->sans_final, h[H_SEPARATE] = (uint64_t)lm->separate;
    h[H_SPLIT] = lm->split;
}

static uint64_t payload_size(const ss_lm *lm) {
    return LM_HEADER + 8 * lm->nsamples + 16 * (lm->nsamples + 1) + 4 * lm->epochs * lm->ndocs;
}

int ss__lm_stored_find(ss_lm *lm, const char *field) {
    char name[SS_MAX_ATTR_NAME + 64];
    int rc = ss__lm_section_name(name, sizeof name, field, &lm->o);
    if (rc) return rc;
    ss_attr a;
    rc = ss_attr_get(&a, lm->store, name);
    if (rc == SS_ENOTFOUND || !little_endian()) return SS_ENOTFOUND;
    if (rc) return rc;
    return ss__lm_stored_use(lm, name, a.data, a.size);
}

int ss__lm_stored_use(ss_lm *lm, const char *name, const void *data, size_t size) {
    uint64_t want[H_COUNT];
    header(want, lm);
    const unsigned char *p = data;
    if (size < LM_HEADER || ss_le64(p) != LM_MAGIC)
        return ss__fail(SS_ECORRUPT, "lm: stored index '%s': bad magic or size", name);
    if (ss_le64(p + 8) != 1)
        return ss__fail(SS_EVERSION, "lm: stored index '%s': version %" PRIu64 " (this library "
                        "reads 1)", name, ss_le64(p + 8));
    for (int k = 0; k < H_COUNT; k++)
        if (k != H_SPLIT && k != H_VERSION && ss_le64(p + 8 * k) != want[k])
            return SS_ENOTFOUND; /* built for other documents: stale, built afresh */
    if (size != payload_size(lm))
        return ss__fail(SS_ECORRUPT, "lm: stored index '%s': %" PRIu64 " bytes, not %" PRIu64,
                        name, (uint64_t)size, payload_size(lm));
    const int64_t *shuffle = (const int64_t *)(const void *)(p + LM_HEADER);
    const int64_t *sample = shuffle + lm->nsamples;
    const uint32_t *doc = (const uint32_t *)(const void *)(sample + 2 * (lm->nsamples + 1));
    for (uint64_t k = 0; k < lm->epochs * lm->ndocs; k++)
        if (doc[k] >= lm->ndocs)
            return ss__fail(SS_ECORRUPT, "lm: stored index '%s': document %" PRIu32 " of %" PRIu64,
                            name, doc[k], lm->ndocs);
    for (uint64_t k = 0; k < lm->nsamples; k++)
        if ((uint64_t)shuffle[k] >= lm->nsamples)
            return ss__fail(SS_ECORRUPT, "lm: stored index '%s': sample %" PRId64 " of %" PRIu64,
                            name, shuffle[k], lm->nsamples);
    /* sample k reads from (sample[2k], sample[2k+1]) to (sample[2k+2],
     * sample[2k+3]) of the document index: in order, inside it (gather()
     * also refuses a sample that is not L + 1 tokens) */
    uint64_t nd = lm->epochs * lm->ndocs;
    for (uint64_t k = 0; k <= lm->nsamples; k++) {
        int64_t pos = sample[2 * k], off = sample[2 * k + 1];
        if (pos < 0 || (uint64_t)pos >= nd || off < 0 ||
            (uint64_t)off >= lm->sizes[doc[pos]] + (lm->sizes[doc[pos]] == 0) ||
            (k && (pos < sample[2 * k - 2] || (pos == sample[2 * k - 2] && off < sample[2 * k - 1]))))
            return ss__fail(SS_ECORRUPT, "lm: stored index '%s': sample %" PRIu64 " starts at %"
                            PRId64 ":%" PRId64, name, k, pos, off);
    }
    lm->doc = (uint32_t *)(uintptr_t)doc; /* borrowed from the map, never written */
    lm->sample = (int64_t *)(uintptr_t)sample;
    lm->shuffle = (int64_t *)(uintptr_t)shuffle;
    lm->borrowed = 1;
    return 0;
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
        size = payload_size(lm);
        buf = malloc(size);
        if (!buf) rc = ss__fail(SS_ENOMEM, "lm: out of memory for a %" PRIu64 "-byte index", size);
    }
    if (!rc) { /* little-endian on disk */
        uint64_t h[H_COUNT];
        header(h, lm);
        for (int k = 0; k < H_COUNT; k++)
            for (int b = 0; b < 8; b++) buf[8 * k + b] = (unsigned char)(h[k] >> (8 * b));
        memset(buf + 8 * H_COUNT, 0, LM_HEADER - 8 * H_COUNT);
        unsigned char *q = buf + LM_HEADER;
        for (uint64_t k = 0; k < lm->nsamples; k++, q += 8)
            for (int b = 0; b < 8; b++) q[b] = (unsigned char)((uint64_t)lm->shuffle[k] >> (8 * b));
        for (uint64_t k = 0; k < 2 * (lm->nsamples + 1); k++, q += 8)
            for (int b = 0; b < 8; b++) q[b] = (unsigned char)((uint64_t)lm->sample[k] >> (8 * b));
        for (uint64_t k = 0; k < lm->epochs * lm->ndocs; k++, q += 4)
            for (int b = 0; b < 4; b++) q[b] = (unsigned char)(lm->doc[k] >> (8 * b));
    }
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
