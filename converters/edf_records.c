/* SPDX-License-Identifier: BSD-2-Clause */
/* edf_records.c - an EDF/BDF file's samples straight from its data records
 * (edf_records.h). */
#include "edf_records.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REC_BLOCK (1u << 20) /* bytes of data records read at once */

/* An ASCII integer header field of `len` (<= 16) bytes; -1 if it is none. */
static long long field_int(const char *p, size_t len) {
    char b[17], *end;
    memcpy(b, p, len);
    b[len] = '\0';
    errno = 0;
    long long v = strtoll(b, &end, 10);
    while (*end == ' ') end++;
    return errno || end == b || *end ? -1 : v;
}

static int pread_all(int fd, void *buf, size_t n, uint64_t at) {
    for (size_t got = 0; got < n;) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(at + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return errno = r < 0 ? errno : EIO, -1;
        got += (size_t)r;
    }
    return 0;
}

/* Walk the raw signals of `raw` (ns of them) and match them with EDFlib's. */
static int map_signals(ss_edf_layout *L, const char *raw, int ns, const struct edf_hdr_struct *h) {
    int bdf = h->filetype == EDFLIB_FILETYPE_BDF || h->filetype == EDFLIB_FILETYPE_BDFPLUS;
    int plus = h->filetype == EDFLIB_FILETYPE_EDFPLUS || h->filetype == EDFLIB_FILETYPE_BDFPLUS;
    const char *annot = bdf ? "BDF Annotations " : "EDF Annotations ";
    int k = 0;
    uint64_t off = 0;
    L->bps = bdf ? 3 : 2;
    for (int i = 0; i < ns; i++) {
        const char *label = raw + 256 + 16 * i;
        long long spr = field_int(raw + 256 + (size_t)ns * 216 + 8 * (size_t)i, 8);
        if (spr < 1) return 1;
        if (!(plus && !memcmp(label, annot, 16))) { /* an ordinary signal: EDFlib's k */
            const struct edf_param_struct *p = &h->signalparam[k];
            if (k >= h->edfsignals || memcmp(label, p->label, 16) || spr != p->smp_in_datarecord)
                return 1;
            L->off[k++] = off;
        }
        off += (uint64_t)spr * L->bps;
    }
    L->rec_bytes = off;
    return k != h->edfsignals;
}

int ss_edf_layout_read(ss_edf_layout *out, int fd, const struct edf_hdr_struct *h) {
    char head[256];
    struct stat st;
    if (pread_all(fd, head, sizeof head, 0)) return -1;
    long long ns = field_int(head + 252, 4);
    if (ns < 1 || ns > EDFLIB_MAXSIGNALS) return 1;
    out->hdr_bytes = 256 * ((uint64_t)ns + 1);
    char *raw = malloc(out->hdr_bytes);
    if (!raw) return errno = ENOMEM, -1;
    int rc = pread_all(fd, raw, out->hdr_bytes, 0);
    if (rc == 0) rc = map_signals(out, raw, (int)ns, h);
    free(raw);
    if (rc) return rc;
    if (fstat(fd, &st)) return -1;
    out->nrec = (uint64_t)h->datarecords_in_file;
    return (uint64_t)st.st_size != out->hdr_bytes + out->nrec * out->rec_bytes;
}

/* One sample of `bps` bytes, little-endian two's complement. */
static inline int32_t sample_at(const unsigned char *p, uint32_t bps) {
    if (bps == 2) return (int16_t)(uint16_t)(p[0] | p[1] << 8);
    uint32_t v = p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
    return (int32_t)(v & 0x800000u ? v | 0xff000000u : v);
}

/* The selected channels of one data record into rows [t0, t0 + spr). */
static void pick_record(void *out, ss_edf_values kind, const ss_edf_layout *L,
                        const unsigned char *rec, const struct edf_hdr_struct *h, const int *sig,
                        uint32_t nch, uint64_t spr, uint64_t t0, const double *gain,
                        const double *edf_offset) {
    for (uint32_t k = 0; k < nch; k++) {
        const struct edf_param_struct *p = &h->signalparam[sig[k]];
        const unsigned char *in = rec + L->off[sig[k]];
        const int32_t lo = p->dig_min, hi = p->dig_max;
        size_t at = (size_t)t0 * nch + k;
        for (uint64_t t = 0; t < spr; t++, in += L->bps, at += nch) {
            int32_t d = sample_at(in, L->bps);
            d = d < lo ? lo : d > hi ? hi : d; /* as edfread_*_samples */
            if (kind == SS_EDF_I16)
                ((int16_t *)out)[at] = (int16_t)d;
            else if (kind == SS_EDF_I32)
                ((int32_t *)out)[at] = d;
            else
                ((float *)out)[at] = (float)(gain[k] * (edf_offset[k] + (double)d));
        }
    }
}

int ss_edf_read(void *out, ss_edf_values kind, const ss_edf_layout *L, int fd,
                const struct edf_hdr_struct *h, const int *sig, uint32_t nch, const double *gain,
                const double *edf_offset, unsigned char **buf, size_t *cap) {
    uint64_t spr = (uint64_t)h->signalparam[sig[0]].smp_in_datarecord;
    uint64_t block = L->rec_bytes >= REC_BLOCK ? 1 : REC_BLOCK / L->rec_bytes;
    if (block > L->nrec) block = L->nrec ? L->nrec : 1;
    if (*cap < block * L->rec_bytes) {
        unsigned char *b = realloc(*buf, block * L->rec_bytes);
        if (!b) return errno = ENOMEM, -1;
        *buf = b, *cap = block * L->rec_bytes;
    }
    for (uint64_t r0 = 0; r0 < L->nrec; r0 += block) {
        uint64_t nr = L->nrec - r0 < block ? L->nrec - r0 : block;
        if (pread_all(fd, *buf, nr * L->rec_bytes, L->hdr_bytes + r0 * L->rec_bytes)) return -1;
        for (uint64_t j = 0; j < nr; j++)
            pick_record(out, kind, L, *buf + j * L->rec_bytes, h, sig, nch, spr, (r0 + j) * spr,
                        gain, edf_offset);
    }
    return 0;
}
