/* SPDX-License-Identifier: BSD-2-Clause */
/* biosig_check.c - the header fields BioSig 2.5 trusts (biosig_check.h).
 * Each check mirrors how BioSig 2.5 reads the field (biosig.c: sopen,
 * gdfbin2struct; its BrainVision and marker file parsers), so that what
 * passes here is what BioSig reads without reaching past the field. */
#include "biosig_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GDF_MAX_TYPE 592 /* entries of BioSig 2.5's GDFTYP_BITS */
#define BV_MAX_LABEL 80  /* BioSig's MAX_LENGTH_LABEL */

static int bad(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (cap) vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return 1;
}

static uint64_t le(const uint8_t *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* BioSig 2.5 tells formats apart by their first 4096 bytes, and before it
 * looks for GDF or BrainVision it takes any file whose first bytes (up to a
 * NUL) hold "ALPHA-TRACE-MEDICAL" for an alpha trace recording, whose
 * reader then crashes on it. 1 = such a file. */
static int alpha_trace(const void *data, size_t n) {
    static const char tag[] = "ALPHA-TRACE-MEDICAL";
    const char *p = data, *nul = memchr(p, 0, n < 4096 ? n : 4096);
    size_t m = nul ? (size_t)(nul - p) : n < 4096 ? n : 4096;
    return memmem(p, m, tag, sizeof tag - 1) != NULL;
}

static int alpha_bad(char *err, size_t cap) {
    return bad(err, cap, "its first bytes hold 'ALPHA-TRACE-MEDICAL', so BioSig 2.5 would read it "
                         "as an alpha trace recording");
}

/* ------------------------------------------------------------------ GDF */

unsigned ss__bs_gdftyp_bits(uint32_t t) {
    static const unsigned char low[19] = {8, 8, 8, 16, 16, 32, 32, 64, 64, 32,
                                          64, 0, 0, 0, 0, 0, 32, 64, 128};
    if (t < 19) return low[t];
    if (t == 128) return 16; /* EEG1100 coder */
    if (t < 256 || t >= GDF_MAX_TYPE) return 0;
    unsigned nb = t < 512 ? t - 255 : t - 511; /* intN 255+N, uintN 511+N */
    return nb <= 80 && (nb % 8 == 0 || nb == 10 || nb == 12) ? nb : 0;
}

/* BioSig's version: atof() of the 5 bytes after "GDF" (" 2.20"). */
static double gdf_version(const uint8_t *head) {
    char v[6];
    memcpy(v, head + 3, 5);
    v[5] = '\0';
    return atof(v);
}

uint64_t ss__bs_gdf_header_len(const uint8_t *head, size_t n) {
    if (n < SS_BS_GDF_FIXED || memcmp(head, "GDF", 3)) return 0;
    double ver = gdf_version(head);
    if (!(ver > 0)) return 0;
    return ver > 1.90 ? le(head + 184, 2) << 8 : le(head + 184, 8);
}

/* Header 3 (GDF >= 2.10): tag (1 byte), length (3 bytes), value; BioSig
 * copies each value without checking that it lies inside the header. */
static int gdf_header3(const uint8_t *h3, uint64_t len, char *err, size_t cap) {
    uint64_t pos = 0;
    while (len >= 4 && pos < len - 4 && h3[pos]) {
        unsigned tag = h3[pos];
        uint64_t vlen = le(h3 + pos + 1, 3);
        if (vlen > len - pos - 4)
            return bad(err, cap,
                       "GDF header 3: tag %u at byte %llu has %llu bytes, past the header's end",
                       tag, (unsigned long long)pos, (unsigned long long)vlen);
        const uint8_t *v = h3 + pos + 4;
        if (tag == 1) { /* event descriptions: NUL-terminated strings, at most 256 */
            unsigned strings = 0;
            uint64_t k = 1;
            while (k < vlen && v[k]) {
                const uint8_t *z = memchr(v + k, 0, vlen - k);
                if (!z) { /* BioSig's strlen() would run past the value */
                    k = vlen;
                    break;
                }
                strings++;
                k = (uint64_t)(z - v) + 1;
            }
            if (k >= vlen || strings > 256)
                return bad(err, cap,
                           "GDF header 3: tag 1 (event descriptions) is not a list of at most 256 "
                           "NUL-terminated strings ending in an empty one");
        }
        if (tag == 5 && vlen > 16) /* copied into 16 bytes */
            return bad(err, cap, "GDF header 3: tag 5 (IP address) has %llu bytes, at most 16",
                       (unsigned long long)vlen);
        pos += 4 + vlen;
        if (pos >= len) /* BioSig reads the next tag there */
            return bad(err, cap, "GDF header 3: no end tag 0 before the header's end");
    }
    return 0;
}

int ss__bs_check_gdf(const uint8_t *head, size_t n, uint64_t size, char *err, size_t cap) {
    if (n >= 3 && !memcmp(head, "GDF", 3) && alpha_trace(head, n)) return alpha_bad(err, cap);
    uint64_t hl = ss__bs_gdf_header_len(head, n);
    if (!hl && (n < SS_BS_GDF_FIXED || memcmp(head, "GDF", 3) || !(gdf_version(head) > 0)))
        return 0; /* BioSig says why (too short, no version) */
    double ver = gdf_version(head);
    uint64_t ns = le(head + 252, 2);
    int64_t nrec = (int64_t)le(head + 236, 8);
    if (hl < 256 * (ns + 1))
        return bad(err, cap,
                   "GDF header: header length %llu (byte 184) is less than 256 * (NS + 1) = %llu "
                   "for NS = %llu channels (byte 252)",
                   (unsigned long long)hl, (unsigned long long)(256 * (ns + 1)),
                   (unsigned long long)ns);
    if (hl > size)
        return bad(err, cap, "GDF header: header length %llu (byte 184) exceeds the file's %llu bytes",
                   (unsigned long long)hl, (unsigned long long)size);
    if (n < hl) return bad(err, cap, "GDF header: %zu of its %llu bytes read", n, (unsigned long long)hl);
    const uint8_t *h2 = head + 256;
    uint64_t bits = 0;
    for (uint64_t k = 0; k < ns; k++) {
        uint32_t spr = (uint32_t)le(h2 + 216 * ns + 4 * k, 4);
        uint32_t typ = (uint32_t)le(h2 + 220 * ns + 4 * k, 2); /* BioSig reads 2 of the 4 bytes */
        unsigned b = ss__bs_gdftyp_bits(typ);
        if (!b)
            return bad(err, cap, "GDF header: channel %llu has data type %u, which BioSig does not know",
                       (unsigned long long)k + 1, typ);
        bits += (uint64_t)spr * b;
    }
    uint64_t bpb = (bits + 7) / 8, avail = size - hl;
    if (!bpb) /* BioSig divides by it (SIGFPE when NRec is -1) */
        return bad(err, cap,
                   "GDF header: data records of 0 bytes (NS = %llu at byte 252, no channel "
                   "with samples per record)",
                   (unsigned long long)ns);
    if (nrec < -1)
        return bad(err, cap, "GDF header: NRec = %lld data records (byte 236) is negative",
                   (long long)nrec);
    if (nrec > 0 && bpb && (uint64_t)nrec > avail / bpb)
        return bad(err, cap,
                   "GDF header: NRec = %lld data records (byte 236) of %llu bytes need more than "
                   "the %llu bytes after the header (truncated, or a wrong record count)",
                   (long long)nrec, (unsigned long long)bpb, (unsigned long long)avail);
    if (ver >= 2.10 && hl > 256 * (ns + 1))
        return gdf_header3(head + 256 * (ns + 1), hl - 256 * (ns + 1), err, cap);
    return 0;
}

/* ---------------------------------------------------------- BrainVision */

/* The next line of text[*pos, n) into *line and *len (BioSig ends a line at CR or
 * LF); 0 at the end. */
static int next_line(const char *text, size_t n, size_t *pos, const char **line, size_t *len) {
    if (*pos >= n) return 0;
    size_t a = *pos, b = a;
    while (b < n && text[b] != '\r' && text[b] != '\n') b++;
    *line = text + a, *len = b - a;
    while (b < n && (text[b] == '\r' || text[b] == '\n')) b++;
    *pos = b;
    return 1;
}

/* Line breaks in text[*at, end) (CR LF, LF or CR each one), *at moved to end. */
static size_t line_breaks(const char *text, size_t n, size_t *at, size_t end) {
    size_t k = *at, lines = 0;
    for (; k < end; k++)
        lines += text[k] == '\n' || (text[k] == '\r' && (k + 1 >= n || text[k + 1] != '\n'));
    *at = end;
    return lines;
}

static int starts(const char *line, size_t len, const char *prefix) {
    size_t k = strlen(prefix);
    return len >= k && !memcmp(line, prefix, k);
}

/* The value after "KEY=" into out[cap], as BioSig takes it (to the end of
 * the line, blanks included); 1 if it does not fit. */
static int value_of(const char *line, size_t len, size_t klen, char *out, size_t cap) {
    const char *v = line + klen;
    size_t vl = len - klen;
    if (vl >= cap) return 1;
    memcpy(out, v, vl);
    out[vl] = '\0';
    return 0;
}

/* Blanks at the end of a number cut (BioSig's atoi()/atof() stop there). */
static void trim(char *v) {
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) v[--n] = '\0';
}

typedef struct bv_state {
    int common, binary, channels; /* sections seen */
    int seq;                      /* 1 common, 2 binary/ASCII, 3 channels, 9 other */
    int has_df, has_nch, has_si, has_mf, has_dp;
} bv_state;

/* One line of [Common Infos]. */
static int bv_common(ss_bs_vhdr *out, bv_state *s, const char *line, size_t len, char *err,
                     size_t cap) {
    char v[256];
    if (starts(line, len, "DataFile=")) {
        if (s->has_df++) return bad(err, cap, "BrainVision header: DataFile appears twice");
        if (value_of(line, len, 9, out->datafile, sizeof out->datafile))
            return bad(err, cap, "BrainVision header: DataFile is longer than 255 bytes");
    } else if (starts(line, len, "MarkerFile=")) {
        if (s->has_mf++) return bad(err, cap, "BrainVision header: MarkerFile appears twice");
        if (value_of(line, len, 11, out->markerfile, sizeof out->markerfile))
            return bad(err, cap, "BrainVision header: MarkerFile is longer than 255 bytes");
    } else if (starts(line, len, "NumberOfChannels=")) {
        char *end;
        if (s->has_nch++) return bad(err, cap, "BrainVision header: NumberOfChannels appears twice");
        if (value_of(line, len, 17, v, sizeof v)) v[0] = '\0';
        trim(v);
        out->nch = strtol(v, &end, 10);
        if (end == v || *end || out->nch < 1)
            return bad(err, cap, "BrainVision header: NumberOfChannels is missing or not >= 1");
        if (out->nch > 65535)
            return bad(err, cap, "BrainVision header: NumberOfChannels=%s is more than 65535", v);
    } else if (starts(line, len, "DataPoints=")) {
        char *end;
        if (s->has_dp++) return bad(err, cap, "BrainVision header: DataPoints appears twice");
        if (value_of(line, len, 11, v, sizeof v)) v[0] = '\0';
        trim(v);
        out->points = strtoll(v, &end, 10);
        if (end == v || *end || out->points < 0)
            return bad(err, cap, "BrainVision header: DataPoints=%s is not a count of samples", v);
    } else if (starts(line, len, "SamplingInterval=")) {
        char *end;
        if (s->has_si++) return bad(err, cap, "BrainVision header: SamplingInterval appears twice");
        if (value_of(line, len, 17, v, sizeof v)) v[0] = '\0';
        trim(v);
        out->interval = strtod(v, &end);
        if (end == v || *end || !(out->interval > 0) || !isfinite(out->interval) ||
            !isfinite(1e6 / out->interval))
            return bad(err, cap,
                       "BrainVision header: SamplingInterval=%s is not a positive number of "
                       "microseconds",
                       v);
    }
    return 0;
}

/* A "ChN=label,reference,resolution,unit" line: BioSig 2.5 takes the label
 * up to the first comma (at most 80 bytes) and the resolution after the
 * second; without those commas it reads on into the next line. */
static int bv_channel(const char *line, size_t len, long nch, char *err, size_t cap) {
    const char *eq = memchr(line, '=', len);
    size_t k = 2;
    long ch = 0;
    while (k < len && line[k] >= '0' && line[k] <= '9' && ch <= nch) ch = ch * 10 + line[k++] - '0';
    if (!eq || line + k != eq || ch < 1 || ch > nch) /* BioSig closes the data file twice */
        return bad(err, cap, "BrainVision header: channel line '%.*s' is not ChN=... with N from 1 to "
                   "NumberOfChannels=%ld", (int)len, line, nch);
    const char *v = eq + 1, *e = line + len;
    const char *c1 = memchr(v, ',', (size_t)(e - v));
    const char *c2 = c1 ? memchr(c1 + 1, ',', (size_t)(e - c1 - 1)) : NULL;
    if (!c2)
        return bad(err, cap,
                   "BrainVision header: channel line '%.*s' has no name,reference,resolution fields",
                   (int)len, line);
    if (c1 - v > BV_MAX_LABEL)
        return bad(err, cap, "BrainVision header: channel line '%.*s': name longer than %d bytes",
                   (int)len, line, BV_MAX_LABEL);
    return 0;
}

int ss__bs_check_vhdr(ss_bs_vhdr *out, const char *text, size_t n, char *err, size_t cap) {
    bv_state s = {0};
    static const char magic[] = "Brain Vision Data Exchange Header File",
                      vamp[] = "Brain Vision V-Amp Data Header File Version";
    memset(out, 0, sizeof *out);
    out->points = -1;
    size_t skip = n >= 3 && !memcmp(text, "\xef\xbb\xbf", 3) ? 3 : 0; /* UTF-8 BOM */
    if (!(n - skip >= sizeof magic - 1 && !memcmp(text + skip, magic, sizeof magic - 1)) &&
        !(n >= sizeof vamp - 1 && !memcmp(text, vamp, sizeof vamp - 1)))
        return bad(err, cap, "BrainVision header: does not begin 'Brain Vision Data Exchange "
                             "Header File', the header BioSig 2.5 reads");
    if (alpha_trace(text, n)) return alpha_bad(err, cap);
    size_t pos = 0, len;
    const char *line;
    next_line(text, n, &pos, &line, &len); /* the first line: BioSig's magic */
    while (next_line(text, n, &pos, &line, &len)) {
        if (memchr(line, '\0', len))
            return bad(err, cap, "BrainVision header: a NUL byte in line '%.*s'", (int)len, line);
        if (starts(line, len, ";")) continue;
        if (starts(line, len, "[Common Infos]")) {
            s.seq = 1, s.common++;
        } else if (starts(line, len, "[Binary Infos]") || starts(line, len, "[ASCII Infos]")) {
            s.seq = 2, s.binary++;
        } else if (starts(line, len, "[Channel Infos")) { /* BioSig compares 14 bytes */
            if (s.common != 1 || s.binary != 1)
                return bad(err, cap, "BrainVision header: [Channel Infos] before one [Common Infos] "
                                     "and one [Binary Infos] (or [ASCII Infos])");
            if (!s.has_nch)
                return bad(err, cap, "BrainVision header: NumberOfChannels is missing or not >= 1");
            s.seq = 3, s.channels++;
        } else if (starts(line, len, "[")) {
            s.seq = 9;
        } else if (s.seq == 1) {
            if (bv_common(out, &s, line, len, err, cap)) return 1;
        } else if (s.seq == 2 && starts(line, len, "BinaryFormat")) { /* BioSig's prefixes */
            out->sample_bytes = starts(line, len, "BinaryFormat=IEEE_FLOAT_32") ? 4
                                : starts(line, len, "BinaryFormat=INT_16") ||
                                        starts(line, len, "BinaryFormat=UINT_16")
                                    ? 2
                                    : 0;
        } else if (s.seq == 3 && starts(line, len, "Ch")) {
            if (bv_channel(line, len, out->nch, err, cap)) return 1;
        }
    }
    if (s.common != 1 || s.binary != 1 || s.channels != 1)
        return bad(err, cap,
                   "BrainVision header: %d [Common Infos], %d [Binary Infos] or [ASCII Infos], %d "
                   "[Channel Infos] sections (one of each needed)",
                   s.common, s.binary, s.channels);
    if (!s.has_nch)
        return bad(err, cap, "BrainVision header: NumberOfChannels is missing or not >= 1");
    if (!s.has_df) return bad(err, cap, "BrainVision header: no DataFile");
    if (!s.has_si) return bad(err, cap, "BrainVision header: no SamplingInterval");
    return 0;
}

/* The commas of a marker line "MkN=type,description,position,size,channel
 * [,date]" after its '=' (f[0..4], NULL when missing); the '=' or NULL. */
static const char *marker_fields(const char *line, size_t len, const char *f[5]) {
    const char *eq = memchr(line, '=', len), *e = line + len;
    memset(f, 0, 5 * sizeof *f);
    for (int k = 0, more = eq != NULL; k < 5 && more; k++) {
        const char *from = k ? f[k - 1] : eq;
        more = (f[k] = memchr(from + 1, ',', (size_t)(e - from - 1))) != NULL;
    }
    return eq;
}

static int new_segment(const char *eq, const char *e) {
    return e - eq - 1 >= 11 && !memcmp(eq + 1, "New Segment", 11);
}

/* 1 with err when BioSig 2.5 would read past the line; *undated counts a
 * 'New Segment' without a date. */
static int bv_marker(const char *line, size_t len, size_t lineno, size_t *undated, char *err,
                     size_t cap) {
    const char *f[5], *eq = marker_fields(line, len, f), *e = line + len;
    int name = (int)(eq ? eq - line : (ptrdiff_t)len);
    if (!eq || !f[3])
        return bad(err, cap,
                   "line %zu (%.*s): fewer than the 5 fields type,description,position,size,channel",
                   lineno, name, line);
    if (!new_segment(eq, e)) return 0;
    if (!f[4]) {
        ++*undated;
        return 0;
    }
    if (e - f[4] - 1 < 14) /* BioSig 2.5 cuts YYYYMMDDhhmmss out of it in place */
        return bad(err, cap, "line %zu (%.*s): a 'New Segment' date shorter than YYYYMMDDhhmmss",
                   lineno, name, line);
    return 0;
}

/* Walk the marker lines of [Marker Infos] as BioSig 2.5 does; for each,
 * fn(ctx, line, len, lineno, end of its line break) until fn returns
 * nonzero. */
typedef int (*marker_fn)(void *ctx, const char *line, size_t len, size_t lineno, size_t brk);

static int each_marker(const char *text, size_t n, marker_fn fn, void *ctx) {
    size_t pos = 0, len, lineno = 1, at = 0;
    const char *line;
    int seq = 0;
    next_line(text, n, &pos, &line, &len); /* the first line: the magic */
    lineno += line_breaks(text, n, &at, pos);
    while (next_line(text, n, &pos, &line, &len)) {
        size_t here = lineno; /* this line's number, 1-based */
        lineno += line_breaks(text, n, &at, pos);
        if (starts(line, len, ";")) continue;
        if (starts(line, len, "[Common Infos]"))
            seq = 1;
        else if (starts(line, len, "[Marker Infos]"))
            seq = 2;
        else if (seq == 2 && starts(line, len, "Mk") && fn(ctx, line, len, here, pos))
            return 1;
    }
    return 0;
}

typedef struct vmrk_check {
    size_t count, undated;
    char *err;
    size_t cap;
} vmrk_check;

static int check_one(void *ctx, const char *line, size_t len, size_t lineno, size_t brk) {
    vmrk_check *v = ctx;
    (void)brk;
    v->count++;
    return bv_marker(line, len, lineno, &v->undated, v->err, v->cap);
}

int ss__bs_check_vmrk(size_t *count, size_t *undated, const char *text, size_t n, char *err,
                      size_t cap) {
    static const char magic[] = "Brain Vision Data Exchange Marker File, Version";
    vmrk_check v = {0, 0, err, cap};
    *count = 0, *undated = 0;
    if (n < sizeof magic - 1 || memcmp(text, magic, sizeof magic - 1))
        return bad(err, cap,
                   "does not begin 'Brain Vision Data Exchange Marker File, Version', the marker "
                   "file BioSig 2.5 reads");
    if (memchr(text, '\0', n)) return bad(err, cap, "a NUL byte in the marker file");
    if (alpha_trace(text, n)) return alpha_bad(err, cap);
    if (each_marker(text, n, check_one, &v)) return 1;
    *count = v.count, *undated = v.undated;
    return 0;
}

typedef struct vmrk_date {
    const char *text;
    char *out;
    size_t cap, from, len; /* text[from..] not yet copied; out[0, len) written */
} vmrk_date;

static int date_one(void *ctx, const char *line, size_t len, size_t lineno, size_t brk) {
    static const char date[] = ",00000000000000000000";
    vmrk_date *d = ctx;
    const char *f[5], *eq = marker_fields(line, len, f);
    size_t end = (size_t)(line - d->text) + len; /* before its line break */
    (void)lineno, (void)brk;
    if (!eq || !f[3] || f[4] || !new_segment(eq, line + len)) return 0;
    if (d->len + (end - d->from) + sizeof date - 1 > d->cap) return 1;
    memcpy(d->out + d->len, d->text + d->from, end - d->from);
    d->len += end - d->from;
    memcpy(d->out + d->len, date, sizeof date - 1);
    d->len += sizeof date - 1;
    d->from = end;
    return 0;
}

size_t ss__bs_vmrk_dated(char *out, size_t cap, const char *text, size_t n) {
    vmrk_date d = {text, out, cap, 0, 0};
    if (each_marker(text, n, date_one, &d) || d.len + (n - d.from) > cap) return 0;
    memcpy(out + d.len, text + d.from, n - d.from);
    return d.len + (n - d.from);
}
