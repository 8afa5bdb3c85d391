/* SPDX-License-Identifier: BSD-2-Clause */
/* meta.c - typed metadata (see seqstore/meta.h): attribute values read with
 * their type and size checked, line lists (vocabularies, class names), the
 * sample rate and durations in seconds. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One element of a numeric attribute: an integer (exact) or a float. */
typedef struct number {
    int is_int, negative;
    uint64_t mag; /* |value| of an integer */
    double f;     /* the value of a float */
} number;

static number element(const void *data, uint32_t type, uint64_t i) {
    const unsigned char *p = (const unsigned char *)data + i * ss_dtype_size((ss_dtype)type);
    number n = {1, 0, 0, 0};
    int64_t sv = 0;
    switch (type) {
    case SS_U8:
        n.mag = *p;
        return n;
    case SS_U16: {
        uint16_t v;
        memcpy(&v, p, 2);
        n.mag = v;
        return n;
    }
    case SS_U32: {
        uint32_t v;
        memcpy(&v, p, 4);
        n.mag = v;
        return n;
    }
    case SS_U64:
        memcpy(&n.mag, p, 8);
        return n;
    case SS_I8:
        sv = (int8_t)*p;
        break;
    case SS_I16: {
        int16_t v;
        memcpy(&v, p, 2);
        sv = v;
        break;
    }
    case SS_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        sv = v;
        break;
    }
    case SS_I64:
        memcpy(&sv, p, 8);
        break;
    default: {
        n.is_int = 0;
        uint16_t h;
        float f;
        if (type == SS_F16 || type == SS_BF16) memcpy(&h, p, 2);
        if (type == SS_F16) n.f = ss_f16_to_float(h);
        if (type == SS_BF16) n.f = ss_bf16_to_float(h);
        if (type == SS_F32) memcpy(&f, p, 4), n.f = f;
        if (type == SS_F64) memcpy(&n.f, p, 8);
        return n;
    }
    }
    n.negative = sv < 0;
    n.mag = sv < 0 ? (uint64_t)0 - (uint64_t)sv : (uint64_t)sv;
    return n;
}

/* Look up `name` and check it is a numeric array of exactly `n` elements. */
static int numeric(ss_attr *a, const ss_store *s, const char *name, size_t n, const char *what) {
    if (!s || !name) return ss__fail(SS_EINVAL, "%s: NULL argument", what);
    int rc = ss_attr_get(a, s, name);
    if (rc) return rc;
    size_t es =
        a->type == SS_ATTR_TEXT || a->type == SS_ATTR_BYTES ? 0 : ss_dtype_size((ss_dtype)a->type);
    if (!es)
        return ss__fail(SS_EINVAL, "%s: attribute '%s' is %s, not a numeric array", what, name,
                        a->type == SS_ATTR_TEXT ? "text" : "bytes");
    if (a->size != (uint64_t)n * es)
        return ss__fail(SS_EINVAL, "%s: attribute '%s' holds %llu %s values, %zu were asked for",
                        what, name, (unsigned long long)(a->size / es),
                        ss_dtype_name((ss_dtype)a->type), n);
    return 0;
}

int ss_attr_get_f64(double *out, size_t n, const ss_store *s, const char *name) {
    ss_attr a;
    if (!out && n) return ss__fail(SS_EINVAL, "ss_attr_get_f64: NULL out");
    int rc = numeric(&a, s, name, n, "ss_attr_get_f64");
    for (size_t i = 0; !rc && i < n; i++) {
        number v = element(a.data, a.type, i);
        if (v.is_int && v.mag > (1ull << 53))
            return ss__fail(SS_ERANGE,
                            "ss_attr_get_f64: attribute '%s'[%zu] = %s%llu has no exact double",
                            name, i, v.negative ? "-" : "", (unsigned long long)v.mag);
        out[i] = v.is_int ? (v.negative ? -(double)v.mag : (double)v.mag) : v.f;
    }
    return rc;
}

int ss_attr_get_i64(int64_t *out, size_t n, const ss_store *s, const char *name) {
    ss_attr a;
    if (!out && n) return ss__fail(SS_EINVAL, "ss_attr_get_i64: NULL out");
    int rc = numeric(&a, s, name, n, "ss_attr_get_i64");
    for (size_t i = 0; !rc && i < n; i++) {
        number v = element(a.data, a.type, i);
        if (!v.is_int)
            return ss__fail(SS_EINVAL, "ss_attr_get_i64: attribute '%s' is %s, not integers", name,
                            ss_dtype_name((ss_dtype)a.type));
        if (!v.negative && v.mag > (uint64_t)INT64_MAX)
            return ss__fail(SS_ERANGE, "ss_attr_get_i64: attribute '%s'[%zu] = %llu exceeds int64",
                            name, i, (unsigned long long)v.mag);
        out[i] = v.negative ? (int64_t)(0 - v.mag) : (int64_t)v.mag;
    }
    return rc;
}

int ss_attr_get_u32(uint32_t *out, size_t n, const ss_store *s, const char *name) {
    ss_attr a;
    if (!out && n) return ss__fail(SS_EINVAL, "ss_attr_get_u32: NULL out");
    int rc = numeric(&a, s, name, n, "ss_attr_get_u32");
    for (size_t i = 0; !rc && i < n; i++) {
        number v = element(a.data, a.type, i);
        if (!v.is_int)
            return ss__fail(SS_EINVAL, "ss_attr_get_u32: attribute '%s' is %s, not integers", name,
                            ss_dtype_name((ss_dtype)a.type));
        if (v.negative || v.mag > UINT32_MAX)
            return ss__fail(SS_ERANGE, "ss_attr_get_u32: attribute '%s'[%zu] = %s%llu is not a u32",
                            name, i, v.negative ? "-" : "", (unsigned long long)v.mag);
        out[i] = (uint32_t)v.mag;
    }
    return rc;
}

int ss_attr_elements(uint64_t *out, const ss_store *s, const char *name) {
    if (!out || !s || !name) return ss__fail(SS_EINVAL, "ss_attr_elements: NULL argument");
    ss_attr a;
    int rc = ss_attr_get(&a, s, name);
    if (rc) return rc;
    size_t es =
        a.type == SS_ATTR_TEXT || a.type == SS_ATTR_BYTES ? 1 : ss_dtype_size((ss_dtype)a.type);
    *out = a.size / es;
    return 0;
}

int ss_attr_get_text(char *buf, size_t cap, size_t *len, const ss_store *s, const char *name) {
    if (len) *len = 0;
    if (cap) buf[0] = 0;
    if (!s || !name || (!buf && cap)) return ss__fail(SS_EINVAL, "ss_attr_get_text: NULL argument");
    ss_attr a;
    int rc = ss_attr_get(&a, s, name);
    if (rc) return rc;
    if (a.type != SS_ATTR_TEXT)
        return ss__fail(SS_EINVAL, "ss_attr_get_text: attribute '%s' is not text (type %u)", name,
                        a.type);
    if (len) *len = (size_t)a.size;
    if (a.size >= cap)
        return ss__fail(SS_EBUFS, "ss_attr_get_text: attribute '%s' needs %llu bytes, %zu given",
                        name, (unsigned long long)a.size + 1, cap);
    memcpy(buf, a.data, (size_t)a.size);
    buf[a.size] = 0;
    return 0;
}

/* "<field name>.<suffix>", or `suffix` alone for SS_FIELD_NONE. */
static int field_attr(char *name, size_t cap, const ss_store *s, uint32_t field,
                      const char *suffix) {
    if (!s || !suffix) return ss__fail(SS_EINVAL, "NULL argument");
    if (field == SS_FIELD_NONE) {
        if ((size_t)snprintf(name, cap, "%s", suffix) >= cap)
            return ss__fail(SS_EINVAL, "attribute name '%s' is too long", suffix);
        return 0;
    }
    ss_field f;
    int rc = ss_field_info(&f, s, field);
    if (rc) return rc;
    if ((size_t)snprintf(name, cap, "%s.%s", f.name, suffix) >= cap)
        return ss__fail(SS_EINVAL, "attribute name '%s.%s' is too long", f.name, suffix);
    return 0;
}

struct ss_lines {
    uint64_t n;
    const char *text; /* borrowed from the store's map */
    uint64_t *start;  /* n + 1 offsets: line k is text[start[k], start[k+1] - 1) */
};

/* Whether spec/FORMAT.md 7.1 writes attribute `name` as a terminated line
 * list (LF after every entry): the vocabularies, source.files and
 * convert.options. Every other list is separated (LF between entries), and
 * reading one as terminated would drop an empty last entry, shifting the ids
 * an --append gives new names. */
static int terminated_list(const char *name) {
    size_t n = strlen(name);
    return !strcmp(name, "vocab") || (n > 6 && !strcmp(name + n - 6, ".vocab")) ||
           !strcmp(name, "source.files") || !strcmp(name, "convert.options");
}

int ss_lines_open(ss_lines **out, const ss_store *s, uint32_t field, const char *suffix) {
    if (!out) return ss__fail(SS_EINVAL, "ss_lines_open: out is NULL");
    *out = NULL;
    char name[SS_MAX_ATTR_NAME + 1];
    int rc = field_attr(name, sizeof name, s, field, suffix);
    ss_attr a;
    if (!rc) rc = ss_attr_get(&a, s, name);
    if (rc) return ss__context(rc, "ss_lines_open");
    if (a.type != SS_ATTR_TEXT && a.type != SS_ATTR_BYTES)
        return ss__fail(SS_EINVAL, "ss_lines_open: attribute '%s' is %s, not text", name,
                        ss_dtype_name((ss_dtype)a.type));
    const char *t = a.data;
    int term = terminated_list(name);
    uint64_t n = !term; /* separated: k LFs are k + 1 entries, zero bytes one */
    for (uint64_t i = 0; i < a.size; i++) n += t[i] == '\n';
    if (term && a.size && t[a.size - 1] != '\n') n++; /* a last entry without its LF */
    ss_lines *l = calloc(1, sizeof *l);
    if (l) l->start = malloc((n + 1) * sizeof *l->start);
    if (!l || !l->start) {
        free(l);
        return ss__fail(SS_ENOMEM, "ss_lines_open: out of memory");
    }
    l->n = n;
    l->text = t;
    uint64_t k = 0;
    l->start[0] = 0;
    for (uint64_t i = 0; i < a.size; i++)
        if (t[i] == '\n') l->start[++k] = i + 1;
    if (k < n) l->start[n] = a.size + 1; /* as if the last entry had its LF */
    *out = l;
    return 0;
}

void ss_lines_free(ss_lines *l) {
    if (!l) return;
    free(l->start);
    free(l);
}

uint64_t ss_lines_count(const ss_lines *l) {
    return l ? l->n : 0;
}

int ss_lines_get(const char **out, size_t *len, const ss_lines *l, uint64_t k) {
    if (out) *out = NULL;
    if (len) *len = 0;
    if (!out || !l) return ss__fail(SS_EINVAL, "ss_lines_get: NULL argument");
    if (k >= l->n)
        return ss__fail(SS_ERANGE, "ss_lines_get: entry %llu of %llu", (unsigned long long)k,
                        (unsigned long long)l->n);
    if (len) *len = (size_t)(l->start[k + 1] - 1 - l->start[k]);
    *out = l->text + l->start[k];
    return 0;
}

int ss_sample_rate(double *out, const ss_store *s, uint32_t field) {
    if (!out) return ss__fail(SS_EINVAL, "ss_sample_rate: out is NULL");
    char name[SS_MAX_ATTR_NAME + 1];
    int rc = field_attr(name, sizeof name, s, field, "sample_rate");
    double r = 0;
    if (!rc) rc = ss_attr_get_f64(&r, 1, s, name);
    if (rc) return ss__context(rc, "ss_sample_rate");
    if (!(r > 0) || !isfinite(r))
        return ss__fail(SS_EINVAL, "ss_sample_rate: attribute '%s' = %g is not a rate", name, r);
    *out = r;
    return 0;
}

int ss_seconds_to_samples(uint64_t *out, const ss_store *s, uint32_t field, double seconds) {
    if (!out) return ss__fail(SS_EINVAL, "ss_seconds_to_samples: out is NULL");
    double rate;
    int rc = ss_sample_rate(&rate, s, field);
    if (rc) return rc;
    double x = seconds * rate, r = nearbyint(x);
    if (!(seconds >= 0) || !isfinite(x) || r >= 0x1p63)
        return ss__fail(SS_EINVAL, "ss_seconds_to_samples: %g s is not a duration", seconds);
    /* a duration that falls between two samples would be silently rounded */
    if (fabs(x - r) > 1e-6 * (r > 1 ? r : 1))
        return ss__fail(SS_EINVAL,
                        "ss_seconds_to_samples: %g s at %g Hz is %.6g samples, not a whole "
                        "number",
                        seconds, rate, x);
    *out = (uint64_t)r;
    return 0;
}
