/* SPDX-License-Identifier: BSD-2-Clause */
/* url.c - dataset URLs: s3://BUCKET/PREFIX, http(s)://HOST/PATH, file://PATH. */
#include "remote_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ss__url_free(ss__url *u) {
    free(u->bucket);
    free(u->base);
    free(u->query);
    free(u->shown);
    memset(u, 0, sizeof *u);
}

/* `n` bytes of `s`, NUL-terminated, malloc'd. */
static char *url_dup(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n), d[n] = '\0';
    return d;
}

static int url_hex(int c) {
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Decode %XX in place; 0, or -1 for a bad escape or a decoded NUL. */
static int url_decode(char *s) {
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r != '%') {
            *w++ = *r;
            continue;
        }
        int hi = url_hex(r[1]), lo = hi < 0 ? -1 : url_hex(r[2]);
        if (lo < 0 || (hi == 0 && lo == 0)) return -1;
        *w++ = (char)(hi * 16 + lo);
        r += 2;
    }
    *w = '\0';
    return 0;
}

/* Drop a trailing "/dataset.manifest" and trailing '/'s from s[0..*n). */
static void url_trim(const char *s, size_t *n, size_t keep) {
    static const char tail[] = "/dataset.manifest";
    size_t t = sizeof tail - 1;
    if (*n >= keep + t && !memcmp(s + *n - t, tail, t)) *n -= t;
    while (*n > keep && s[*n - 1] == '/') --*n;
}

/* The bucket naming rules S3 and its clones share (3-63 of a-z 0-9 . -). */
static int url_bucket_ok(const char *b, size_t n) {
    if (n < 3 || n > 63) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '.' ||
              b[i] == '-'))
            return 0;
    return 1;
}

static int url_s3(ss__url *u, const char *rest, const char *text) {
    if (strpbrk(rest, "?#"))
        return ss__rfail(SS_EINVAL, "URL '%.*s': an s3:// URL has no query string or fragment",
                         (int)strcspn(text, "?#"), text);
    size_t n = strlen(rest);
    url_trim(rest, &n, 0);
    const char *slash = memchr(rest, '/', n);
    size_t bn = slash ? (size_t)(slash - rest) : n;
    if (!url_bucket_ok(rest, bn))
        return ss__rfail(SS_EINVAL,
                         "URL '%s': bad bucket name (3 to 63 characters of a-z, 0-9, '.', '-')",
                         text);
    const char *key = slash ? slash + 1 : rest + n;
    size_t kn = rest + n - key;
    u->scheme = SS__URL_S3;
    u->bucket = url_dup(rest, bn);
    u->base = url_dup(key, kn);
    u->query = url_dup("", 0);
    if (u->bucket && u->base && asprintf(&u->shown, "s3://%s%s%s", u->bucket, kn ? "/" : "",
                                         u->base) < 0)
        u->shown = NULL;
    if (strstr(u->base, "//"))
        return ss__rfail(SS_EINVAL, "URL '%s': an empty path component ('//')", u->shown);
    return 0;
}

static int url_http(ss__url *u, const char *text, size_t scheme_len) {
    const char *q = strchr(text, '?');
    size_t n = q ? (size_t)(q - text) : strlen(text);
    const char *host = text + scheme_len;
    size_t hn = strcspn(host, "/?");
    if (hn == 0 || memchr(host, '@', hn))
        return ss__rfail(SS_EINVAL, "URL '%.*s': no host (or user:password@, which is not taken)",
                         (int)n, text);
    url_trim(text, &n, scheme_len + hn);
    u->scheme = SS__URL_HTTP;
    u->base = url_dup(text, n);
    u->shown = url_dup(text, n);
    u->query = url_dup(q ? q : "", q ? strlen(q) : 0);
    return 0;
}

static int url_file(ss__url *u, const char *rest, const char *text) {
    if (!strncmp(rest, "localhost/", 10)) rest += 9;
    if (rest[0] != '/')
        return ss__rfail(SS_EINVAL, "URL '%s': file:// needs an absolute path (file:///PATH)",
                         text);
    size_t n = strlen(rest);
    url_trim(rest, &n, 1);
    u->scheme = SS__URL_FILE;
    u->base = url_dup(rest, n);
    u->query = url_dup("", 0);
    u->shown = url_dup(text, strlen(text));
    if (u->base && url_decode(u->base) != 0)
        return ss__rfail(SS_EINVAL, "URL '%s': bad %%-escape", text);
    return 0;
}

int ss__url_parse(ss__url *out, const char *text) {
    memset(out, 0, sizeof *out);
    if (!text) return ss__rfail(SS_EINVAL, "URL: NULL");
    int rc;
    for (const char *p = text; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            const char *q = strchr(text, '?');
            return ss__rfail(SS_EINVAL, "URL '%.*s': a control character",
                             (int)(q ? q - text : (long)strlen(text)), text);
        }
    if (!strncmp(text, "s3://", 5))
        rc = url_s3(out, text + 5, text);
    else if (!strncmp(text, "https://", 8))
        rc = url_http(out, text, 8);
    else if (!strncmp(text, "http://", 7))
        rc = url_http(out, text, 7);
    else if (!strncmp(text, "file://", 7))
        rc = url_file(out, text + 7, text);
    else {
        const char *e = strstr(text, "://");
        return ss__rfail(SS_EINVAL, "URL: unknown scheme '%.*s' (s3, https, http or file)",
                         e ? (int)(e - text) : 0, text);
    }
    if (!rc && !(out->base && out->shown && out->query))
        rc = ss__rfail(SS_ENOMEM, "URL: out of memory");
    if (rc) ss__url_free(out);
    return rc;
}

int ss__url_object_shown(char **out, const ss__url *u, const char *name) {
    int slash = u->shown[strlen(u->shown) - 1] != '/';
    if (asprintf(out, "%s%s%s", u->shown, slash ? "/" : "", name) < 0) {
        *out = NULL;
        return ss__rfail(SS_ENOMEM, "out of memory");
    }
    return 0;
}
