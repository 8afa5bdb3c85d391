/* SPDX-License-Identifier: BSD-2-Clause */
/* cli_json.c - values as JSON for the CLI's --json outputs (see commands.h). */
#include "commands.h"
#include "utf8.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* attribute arrays longer than this show their first elements only */
#define SS_PREVIEW_ELEMENTS 8

double ss__cli_half_to_double(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

double ss__cli_element_double(const void *p, ss_dtype t) {
    uint16_t h;
    switch (t) {
    case SS_F16:
        memcpy(&h, p, 2);
        return ss__cli_half_to_double(h);
    case SS_BF16: {
        memcpy(&h, p, 2);
        uint32_t bits = (uint32_t)h << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        return (double)f;
    }
    case SS_F32: {
        float f;
        memcpy(&f, p, sizeof f);
        return (double)f;
    }
    default: {
        double d;
        memcpy(&d, p, sizeof d);
        return d;
    }
    }
}

json_t *ss__json_element(const void *p, ss_dtype t) {
    int64_t i = 0;
    switch (t) {
    case SS_U8:
        return json_integer(*(const uint8_t *)p);
    case SS_I8:
        return json_integer(*(const int8_t *)p);
    case SS_U16:
        return json_integer(*(const uint16_t *)p);
    case SS_I16:
        return json_integer(*(const int16_t *)p);
    case SS_U32:
        return json_integer(*(const uint32_t *)p);
    case SS_I32:
        return json_integer(*(const int32_t *)p);
    case SS_U64: {
        uint64_t u;
        memcpy(&u, p, sizeof u);
        if (u <= INT64_MAX) return json_integer((json_int_t)u);
        char buf[24]; /* beyond json_int_t: a string keeps every digit */
        snprintf(buf, sizeof buf, "%" PRIu64, u);
        return json_string(buf);
    }
    case SS_I64:
        memcpy(&i, p, sizeof i);
        return json_integer((json_int_t)i);
    default: {
        /* jansson prints reals with 17 significant digits: they read back exactly.
         * JSON has no NaN or infinity: those become null. */
        double d = ss__cli_element_double(p, t);
        return isfinite(d) ? json_real(d) : json_null();
    }
    }
}

json_t *ss__json_text(const void *data, size_t n, int *valid) {
    const uint8_t *s = data;
    if (ss__utf8_valid(s, n)) {
        if (valid) *valid = 1;
        return json_stringn(data, n);
    }
    if (valid) *valid = 0;
    /* each byte that does not start a valid sequence becomes U+FFFD */
    char *buf = malloc(3 * n + 1);
    if (!buf) return NULL;
    size_t k = 0;
    for (size_t i = 0, len; i < n; i += len) {
        len = ss__utf8_seq(s + i, n - i);
        if (len) {
            memcpy(buf + k, s + i, len);
            k += len;
        } else {
            memcpy(buf + k, "\xEF\xBF\xBD", 3);
            k += 3;
            len = 1;
        }
    }
    json_t *j = json_stringn(buf, k);
    free(buf);
    return j;
}

json_t *ss__json_base64(const void *data, size_t n) {
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const uint8_t *s = data;
    char *out = malloc((n + 2) / 3 * 4 + 1);
    if (!out) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < n) v |= (uint32_t)s[i + 1] << 8;
        if (i + 2 < n) v |= s[i + 2];
        out[k++] = abc[v >> 18];
        out[k++] = abc[(v >> 12) & 63];
        out[k++] = i + 1 < n ? abc[(v >> 6) & 63] : '=';
        out[k++] = i + 2 < n ? abc[v & 63] : '=';
    }
    json_t *j = json_stringn(out, k);
    free(out);
    return j;
}

void ss__json_set_text(json_t *obj, const char *key, const void *data, size_t n) {
    int valid;
    json_object_set_new(obj, key, ss__json_text(data, n, &valid));
    if (!valid) {
        char k2[64];
        snprintf(k2, sizeof k2, "%s_base64", key);
        json_object_set_new(obj, k2, ss__json_base64(data, n));
    }
}

const char *ss__cli_attr_type_name(uint32_t type) {
    if (type == SS_ATTR_TEXT) return "text";
    if (type == SS_ATTR_BYTES) return "bytes";
    const char *n = ss_dtype_name((ss_dtype)type);
    return n ? n : "?";
}

json_t *ss__json_attr(const ss_attr *a) {
    json_t *o = json_object();
    ss__json_set_text(o, "name", a->name, strlen(a->name));
    json_object_set_new(o, "type", json_string(ss__cli_attr_type_name(a->type)));
    json_object_set_new(o, "bytes", json_integer((json_int_t)a->size));
    if (a->type == SS_ATTR_TEXT) {
        ss__json_set_text(o, "value", a->data, (size_t)a->size);
    } else if (a->type == SS_ATTR_BYTES) {
        json_object_set_new(o, "value_base64", ss__json_base64(a->data, (size_t)a->size));
    } else if (ss_dtype_name((ss_dtype)a->type)) {
        size_t es = ss_dtype_size((ss_dtype)a->type);
        json_t *arr = json_array();
        for (uint64_t off = 0; es && off + es <= a->size; off += es)
            json_array_append_new(arr,
                                  ss__json_element((const char *)a->data + off, (ss_dtype)a->type));
        json_object_set_new(o, "value", arr);
    }
    return o;
}

void ss__json_print(json_t *root) {
    json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    putchar('\n');
}

/* Text shown on one line: newlines as '|', other control characters and
 * bytes that are not UTF-8 as \xHH; at most `max` bytes of it. */
static void ss_print_text_preview(const unsigned char *p, uint64_t size, uint64_t max) {
    uint64_t n = size < max ? size : max;
    putchar('"');
    for (uint64_t i = 0, len; i < n; i += len) {
        len = ss__utf8_seq(p + i, (size_t)(size - i));
        if (len == 1 && p[i] == '\n')
            putchar('|');
        else if (len == 1 && (p[i] < 32 || p[i] == 127))
            printf("\\x%02x", p[i]);
        else if (len)
            fwrite(p + i, 1, (size_t)len, stdout);
        else
            printf("\\x%02x", p[i]), len = 1;
    }
    printf("%s\"", size > n ? "..." : "");
}

/* A typed array's first elements. */
static void ss_print_array_preview(const ss_attr *a) {
    size_t es = ss_dtype_size((ss_dtype)a->type);
    uint64_t n = es ? a->size / es : 0;
    putchar('[');
    for (uint64_t i = 0; i < n && i < SS_PREVIEW_ELEMENTS; i++) {
        const void *p = (const char *)a->data + i * es;
        if (i) printf(", ");
        if (a->type == SS_F16 || a->type == SS_BF16 || a->type == SS_F32 || a->type == SS_F64)
            printf("%.9g", ss__cli_element_double(p, (ss_dtype)a->type));
        else {
            json_t *j = ss__json_element(p, (ss_dtype)a->type);
            char *t = json_dumps(j, JSON_ENCODE_ANY);
            fputs(t ? t : "?", stdout);
            free(t);
            json_decref(j);
        }
    }
    printf("%s]", n > SS_PREVIEW_ELEMENTS ? ", ..." : "");
}

void ss__cli_print_attr_preview(const ss_attr *a) {
    printf("  ");
    if (a->type == SS_ATTR_TEXT)
        ss_print_text_preview(a->data, a->size, 60);
    else if (a->type != SS_ATTR_BYTES && ss_dtype_name((ss_dtype)a->type))
        ss_print_array_preview(a);
}
