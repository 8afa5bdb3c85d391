/* SPDX-License-Identifier: BSD-2-Clause */
/* flat.c - a field's examples seen as one continuous stream of rows. */
#include "store.h"

uint64_t ss_flat_size(const ss_store *s, uint32_t field) {
    return s && field < s->h.nfields ? s->h.fields[field].total_rows : 0;
}

int ss_flat_locate(uint64_t *example, uint64_t *offset, const ss_store *s, uint32_t field,
                   uint64_t pos) {
    if (!s || !example || !offset) return ss__fail(SS_EINVAL, "ss_flat_locate: NULL argument");
    if (field >= s->h.nfields || pos >= s->h.fields[field].total_rows)
        return ss__fail(SS_ERANGE, "%s: flat position %llu of field %u is out of range", s->path,
                        (unsigned long long)pos, field);
    const ss_rfield *rf = &s->f[field];
    if (!rf->sequence) {
        *example = pos;
        *offset = 0;
        return 0;
    }
    if (s->ds) return ss_dataset_flat_locate(example, offset, s, field, pos);
    /* The last example whose start is <= pos; later ties are empty examples
     * before it, so taking the last one skips them. */
    uint64_t lo = 0, hi = s->h.count; /* answer in [lo, hi) */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (ss_entry_at(rf, mid)->start <= pos)
            lo = mid;
        else
            hi = mid;
    }
    *example = lo;
    *offset = pos - ss_entry_at(rf, lo)->start;
    return 0;
}

int ss_flat_read(void *buf, const ss_store *s, uint32_t field, uint64_t p, uint64_t q) {
    if (!s || (!buf && q > p)) return ss__fail(SS_EINVAL, "ss_flat_read: NULL argument");
    if (field >= s->h.nfields || p > q || q > s->h.fields[field].total_rows)
        return ss__fail(SS_ERANGE, "%s: flat range [%llu, %llu) of field %u is out of range",
                        s->path, (unsigned long long)p, (unsigned long long)q, field);
    if (p == q) return 0;
    uint64_t example, offset;
    int rc = ss_flat_locate(&example, &offset, s, field, p);
    unsigned char *dst = buf;
    while (rc == 0 && p < q) {
        ss_view v;
        if ((rc = ss_get(&v, s, field, example))) break;
        uint64_t take = v.length - offset;
        if (take > q - p) take = q - p;
        memcpy(dst, (const unsigned char *)v.data + offset * v.row_bytes, take * v.row_bytes);
        dst += take * v.row_bytes;
        p += take;
        offset = 0;
        example++;
    }
    return rc;
}
