/* SPDX-License-Identifier: BSD-2-Clause */
/* object.c - the objects of a dataset URL: GET, PUT (multipart when large),
 * DELETE and HEAD of S3 objects (path-style under an endpoint, virtual-hosted
 * at AWS), GET of http(s) objects. */
#include "remote_impl.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* `s` %-encoded as S3 wants a key in a path: all but unreserved and '/'. */
static char *obj_escape(const char *s) {
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1), *w = out;
    if (!out) return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~' || *p == '/')
            *w++ = (char)*p;
        else
            w += sprintf(w, "%%%02X", *p);
    }
    *w = '\0';
    return out;
}

/* The request URL of object `name` (with `query`, "" or "?...") and its
 * shown form. */
static int obj_urls(char **url, char **shown, const ss__remote *r, const ss__url *u,
                    const char *name, const char *query) {
    *url = *shown = NULL;
    if (u->scheme == SS__URL_HTTP && *u->query)
        return ss__rfail(SS_EINVAL,
                         "URL '%s': a query string (a presigned URL) signs one object, and a "
                         "dataset is several: use s3:// with credentials, or public objects",
                         u->shown);
    char *key = NULL;
    if (u->scheme == SS__URL_S3 &&
        asprintf(&key, "%s%s%s", u->base, *u->base ? "/" : "", name) < 0)
        key = NULL;
    char *ekey = obj_escape(u->scheme == SS__URL_S3 ? (key ? key : "") : name);
    int n = -1;
    if (!ekey)
        ;
    else if (u->scheme == SS__URL_HTTP)
        n = asprintf(url, "%s/%s", u->base, ekey);
    else if (r->aws.endpoint)
        n = asprintf(url, "%s/%s/%s%s", r->aws.endpoint, u->bucket, ekey, query);
    else if (strchr(u->bucket, '.')) /* a dotted bucket breaks the TLS name check */
        n = asprintf(url, "https://s3.%s.amazonaws.com/%s/%s%s", r->aws.region, u->bucket, ekey,
                     query);
    else
        n = asprintf(url, "https://%s.s3.%s.amazonaws.com/%s%s", u->bucket, r->aws.region, ekey,
                     query);
    free(key);
    free(ekey);
    if (n < 0) *url = NULL;
    if (!*url || ss__url_object_shown(shown, u, name)) {
        free(*url), *url = NULL;
        return ss__rfail(SS_ENOMEM, "out of memory");
    }
    return 0;
}

static int obj_request(const ss__remote *r, const ss__url *u, const char *method,
                       const char *name, const char *query, ss__request *q, ss__sink *sink,
                       ss__response *resp) {
    char *url, *shown;
    int rc = obj_urls(&url, &shown, r, u, name, query);
    if (rc) return rc;
    q->method = method, q->url = url, q->shown = shown, q->sign = u->scheme == SS__URL_S3;
    rc = ss__http(r, q, sink, resp);
    free(url);
    free(shown);
    return rc;
}

static int obj_s3_only(const ss__url *u, const char *what) {
    if (u->scheme == SS__URL_S3) return 0;
    return ss__rfail(SS_EINVAL, "%s '%s': only s3:// URLs can be written", what, u->shown);
}

int ss__object_get_mem(char **out, size_t *len, const ss__remote *r, const ss__url *u,
                       const char *name, size_t max) {
    ss__request q = {.body_fd = -1};
    ss__sink s = {.fd = -1, .max = max};
    int rc = obj_request(r, u, "GET", name, "", &q, &s, NULL);
    if (!rc && !s.mem && !(s.mem = calloc(1, 1))) rc = ss__rfail(SS_ENOMEM, "out of memory");
    if (rc) free(s.mem), s.mem = NULL, s.len = 0;
    *out = s.mem;
    *len = s.len;
    return rc;
}

int ss__object_get_fd(uint64_t *len, const ss__remote *r, const ss__url *u, const char *name,
                      int fd, int (*on_length)(void *, uint64_t), void *ctx) {
    ss__request q = {.body_fd = -1};
    ss__sink s = {.fd = fd, .on_length = on_length, .ctx = ctx};
    int rc = obj_request(r, u, "GET", name, "", &q, &s, NULL);
    *len = s.written;
    return rc;
}

int ss__object_put_mem(const ss__remote *r, const ss__url *u, const char *name, const void *data,
                       size_t len) {
    int rc = obj_s3_only(u, "upload");
    ss__request q = {.body = data ? data : "", .body_len = len, .body_fd = -1};
    return rc ? rc : obj_request(r, u, "PUT", name, "", &q, NULL, NULL);
}

int ss__object_delete(const ss__remote *r, const ss__url *u, const char *name) {
    int rc = obj_s3_only(u, "delete");
    ss__request q = {.body_fd = -1};
    if (!rc) rc = obj_request(r, u, "DELETE", name, "", &q, NULL, NULL);
    return rc == SS_ENOTFOUND ? 0 : rc;
}

int ss__object_head(int *found, uint64_t *size, char *meta, size_t cap, const ss__remote *r,
                    const ss__url *u, const char *name) {
    ss__request q = {.body_fd = -1};
    ss__response resp = {0};
    *found = 0, *size = 0;
    if (cap) meta[0] = '\0';
    int rc = obj_request(r, u, "HEAD", name, "", &q, NULL, &resp);
    if (rc == SS_ENOTFOUND) return 0;
    if (rc) return rc;
    *found = 1;
    *size = resp.length;
    if (cap) snprintf(meta, cap, "%s", resp.meta);
    return 0;
}

/* ------------------------------------------------------ multipart */

typedef struct mp {
    const ss__remote *r;
    const ss__url *u;
    const char *name;
    int fd;
    uint64_t size, part;
    char *eid;      /* the upload id, %-encoded */
    char (*etag)[160];
} mp;

static int mp_part(void *vctx, size_t i) {
    mp *m = vctx;
    char query[1024];
    snprintf(query, sizeof query, "?partNumber=%zu&uploadId=%s", i + 1, m->eid);
    uint64_t off = (uint64_t)i * m->part, n = m->size - off < m->part ? m->size - off : m->part;
    ss__request q = {.body_fd = m->fd, .body_off = off, .body_fd_len = n};
    ss__response resp = {0};
    int rc = obj_request(m->r, m->u, "PUT", m->name, query, &q, NULL, &resp);
    if (!rc && !resp.etag[0])
        rc = ss__rfail(SS_EIO, "upload part %zu of '%s': the answer has no ETag", i + 1, m->name);
    if (!rc) memcpy(m->etag[i], resp.etag, sizeof m->etag[i]);
    return rc;
}

/* The CompleteMultipartUpload document of `n` parts (malloc'd). */
static char *mp_complete_xml(const mp *m, size_t n) {
    size_t cap = 64 + n * 256, len = 0;
    char *x = malloc(cap);
    if (!x) return NULL;
    len += (size_t)snprintf(x, cap, "<CompleteMultipartUpload>");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(x + len, cap - len,
                                "<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag></Part>", i + 1,
                                m->etag[i]);
    snprintf(x + len, cap - len, "</CompleteMultipartUpload>");
    return x;
}

static int mp_upload(const ss__remote *r, const ss__url *u, const char *name, int fd,
                     uint64_t size, const char *meta_hdr) {
    const char *hdrs[1] = {meta_hdr};
    ss__request q = {.body_fd = -1, .headers = hdrs, .nheaders = meta_hdr ? 1 : 0};
    ss__sink s = {.fd = -1, .max = 1 << 20};
    int rc = obj_request(r, u, "POST", name, "?uploads=", &q, &s, NULL);
    char id[1024] = "";
    if (!rc && ss__xml_text(id, sizeof id, s.mem, s.len, "UploadId"))
        rc = ss__rcontext(SS_EIO, "start a multipart upload of '%s'", name);
    free(s.mem);
    if (rc) return rc;
    size_t n = (size_t)((size + r->part_bytes - 1) / r->part_bytes);
    mp m = {r, u, name, fd, size, r->part_bytes, curl_easy_escape(NULL, id, 0), NULL};
    m.etag = calloc(n, sizeof *m.etag);
    if (!m.eid || !m.etag) rc = ss__rfail(SS_ENOMEM, "out of memory");
    if (!rc) rc = ss__parallel(r->parallel, n, mp_part, &m);
    char query[1100];
    snprintf(query, sizeof query, "?uploadId=%s", m.eid ? m.eid : "");
    if (!rc) {
        char *xml = mp_complete_xml(&m, n);
        /* not libcurl's default form type, which servers may parse as a form */
        const char *ct[1] = {"Content-Type: application/xml"};
        ss__request c = {.body = xml, .body_len = xml ? strlen(xml) : 0, .body_fd = -1,
                         .headers = ct, .nheaders = 1};
        ss__sink cs = {.fd = -1, .max = 1 << 20};
        char code[128];
        rc = xml ? obj_request(r, u, "POST", name, query, &c, &cs, NULL)
                 : ss__rfail(SS_ENOMEM, "out of memory");
        /* S3 may answer 200 and report the failure in the body */
        if (!rc && ss__xml_text(code, sizeof code, cs.mem, cs.len, "Code") == 0)
            rc = ss__rfail(SS_EIO, "complete the multipart upload of '%s': %s", name, code);
        free(xml);
        free(cs.mem);
    }
    if (rc && m.eid) { /* leave no parts behind to be billed; the first failure is reported */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", ss__rmessage());
        ss__request d = {.body_fd = -1};
        obj_request(r, u, "DELETE", name, query, &d, NULL, NULL);
        ss__rfail(rc, "%s", msg);
    }
    curl_free(m.eid);
    free(m.etag);
    return rc;
}

int ss__object_put_file(const ss__remote *r, const ss__url *u, const char *name, const char *path,
                        const char *meta) {
    int rc = obj_s3_only(u, "upload");
    if (rc) return rc;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        rc = ss__rfail(errno == ENOENT ? SS_ENOTFOUND : SS_EIO, "upload '%s': %s", path,
                       strerror(errno));
        if (fd >= 0) close(fd);
        return rc;
    }
    char hdr[160];
    if (meta) snprintf(hdr, sizeof hdr, "x-amz-meta-seqstore-digest: %s", meta);
    uint64_t size = (uint64_t)st.st_size;
    if (size > r->part_bytes) {
        rc = mp_upload(r, u, name, fd, size, meta ? hdr : NULL);
    } else {
        const char *hdrs[1] = {hdr};
        ss__request q = {.body_fd = fd, .body_fd_len = size, .headers = hdrs,
                         .nheaders = meta ? 1 : 0};
        rc = obj_request(r, u, "PUT", name, "", &q, NULL, NULL);
    }
    close(fd);
    return rc;
}
