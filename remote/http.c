/* SPDX-License-Identifier: BSD-2-Clause */
/* http.c - one HTTP request through libcurl, retried with exponential
 * backoff: connection failures, 5xx, 429 and SlowDown, stalls (no byte for
 * the stall timeout) and bodies shorter than their Content-Length. S3
 * requests are signed by libcurl (CURLOPT_AWS_SIGV4). A body reaches its
 * sink only from a 2xx response; an error's body is kept for its S3 code.
 *
 * A GET into a file that was cut off continues where it stopped: the next
 * try asks for the rest (`Range: bytes=HELD-`) only if it is still the same
 * object (`If-Range:` its ETag), and takes a 206 only when its Content-Range
 * starts at the bytes held; a server that sends the whole object again (200:
 * no ranges, or the object changed) is written from byte 0. The whole file
 * is then checked as any download is (the manifest's digests). */
#include "remote_impl.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_once_t http_once = PTHREAD_ONCE_INIT;
static CURLcode http_global_rc;
static pthread_key_t http_key;

static void http_handle_free(void *h) {
    curl_easy_cleanup(h);
}

static void http_init(void) {
    http_global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    pthread_key_create(&http_key, http_handle_free);
}

/* This thread's handle: reused so that connections are kept alive. */
static CURL *http_handle(void) {
    pthread_once(&http_once, http_init);
    if (http_global_rc != CURLE_OK) return NULL;
    CURL *h = pthread_getspecific(http_key);
    if (h) {
        curl_easy_reset(h);
        return h;
    }
    h = curl_easy_init();
    if (h) pthread_setspecific(http_key, h);
    return h;
}

typedef struct http_try {
    CURL *h;
    ss__sink *sink;
    const ss__request *q;
    long status;     /* once the headers are in */
    int fatal;       /* a sink failure: the code, not retried */
    int started;     /* the first body byte was seen */
    char err[4096];  /* an error response's body (truncated) */
    size_t err_len;
    uint64_t got;    /* body bytes of a 2xx */
    curl_off_t length; /* Content-Length, or -1 */
    char etag[160];
    char meta[80];
    uint64_t base;       /* bytes held in the file from earlier tries (a range read) */
    char if_range[160];  /* the ETag those bytes came with */
    int64_t range_start; /* a 206's Content-Range start, or -1 */
    int64_t range_total; /* its total length, or -1 */
    const unsigned char *up; /* a request body read from memory */
    uint64_t up_left, up_off;
} http_try;

static size_t http_write(char *data, size_t size, size_t n, void *vctx) {
    http_try *t = vctx;
    size_t bytes = size * n;
    if (!t->started) {
        t->started = 1;
        curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &t->status);
        curl_easy_getinfo(t->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &t->length);
        if (t->status == 206 && t->base) {
            if (t->range_start != (int64_t)t->base) /* not the rest of what is held */
                return t->fatal = ss__rfail(SS_EIO, "%s %s: the range answer starts at byte "
                                                    "%lld, not at %llu",
                                            t->q->method, t->q->shown,
                                            (long long)t->range_start,
                                            (unsigned long long)t->base),
                       0;
        } else if (t->base && t->sink && t->sink->fd >= 0) { /* the whole object again */
            if (ftruncate(t->sink->fd, 0) != 0 || lseek(t->sink->fd, 0, SEEK_SET) != 0)
                return t->fatal = ss__rfail(SS_EIO, "%s %s: cannot rewind the file: %s",
                                            t->q->method, t->q->shown, strerror(errno)),
                       0;
            t->base = 0, t->sink->written = 0;
        }
        if (t->status / 100 == 2 && !t->base && t->sink && t->sink->on_length && t->length >= 0) {
            int rc = t->sink->on_length(t->sink->ctx, (uint64_t)t->length);
            if (rc) return t->fatal = rc, 0;
        }
    }
    if (t->status / 100 != 2) {
        size_t room = sizeof t->err - 1 - t->err_len, take = bytes < room ? bytes : room;
        memcpy(t->err + t->err_len, data, take);
        t->err_len += take;
        t->err[t->err_len] = '\0';
        return bytes;
    }
    t->got += bytes;
    ss__sink *s = t->sink;
    if (!s) return bytes;
    if (s->fd >= 0) {
        for (size_t off = 0; off < bytes;) {
            ssize_t w = write(s->fd, data + off, bytes - off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                int e = w < 0 ? errno : ENOSPC;
                t->fatal = e == ENOSPC || e == EDQUOT ? SS_EFULL : SS_EIO;
                ss__rfail(t->fatal, "%s %s: writing the body: %s", t->q->method, t->q->shown,
                          strerror(e));
                return 0;
            }
            off += (size_t)w;
        }
    } else {
        if (s->len + bytes > s->max) {
            t->fatal = ss__rfail(SS_ETOOBIG, "%s %s: the body is over %zu bytes", t->q->method,
                                 t->q->shown, s->max);
            return 0;
        }
        char *g = realloc(s->mem, s->len + bytes + 1);
        if (!g) return t->fatal = ss__rfail(SS_ENOMEM, "out of memory"), 0;
        s->mem = g;
        memcpy(s->mem + s->len, data, bytes);
        s->len += bytes;
        s->mem[s->len] = '\0';
    }
    s->written += bytes;
    return bytes;
}

static size_t http_header(char *data, size_t size, size_t n, void *vctx) {
    http_try *t = vctx;
    size_t bytes = size * n;
    if (bytes > 5 && !strncasecmp(data, "etag:", 5)) {
        const char *v = data + 5;
        size_t len = bytes - 5;
        while (len && (*v == ' ' || *v == '\t')) v++, len--;
        while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' ')) len--;
        if (len < sizeof t->etag) memcpy(t->etag, v, len), t->etag[len] = '\0';
    }
    static const char meta[] = "x-amz-meta-seqstore-digest:";
    if (bytes > sizeof meta - 1 && !strncasecmp(data, meta, sizeof meta - 1)) {
        const char *v = data + sizeof meta - 1;
        size_t len = bytes - (sizeof meta - 1);
        while (len && (*v == ' ' || *v == '\t')) v++, len--;
        while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' ')) len--;
        if (len < sizeof t->meta) memcpy(t->meta, v, len), t->meta[len] = '\0';
    }
    static const char range[] = "content-range:";
    if (bytes > sizeof range - 1 && !strncasecmp(data, range, sizeof range - 1)) {
        long long a, b, total;
        if (sscanf(data + sizeof range - 1, " bytes %lld-%lld/%lld", &a, &b, &total) == 3)
            t->range_start = a, t->range_total = total;
    }
    return bytes;
}

static size_t http_read(char *buf, size_t size, size_t n, void *vctx) {
    http_try *t = vctx;
    size_t want = size * n;
    if (want > t->up_left) want = (size_t)t->up_left;
    if (!want) return 0;
    if (t->up) {
        memcpy(buf, t->up + t->up_off, want);
    } else {
        ssize_t r = pread(t->q->body_fd, buf, want, (off_t)(t->q->body_off + t->up_off));
        if (r <= 0) return CURL_READFUNC_ABORT;
        want = (size_t)r;
    }
    t->up_off += want;
    t->up_left -= want;
    return want;
}

/* A status worth another try: the server's trouble, not the request's. */
static int http_status_retry(long status, const char *code) {
    return status >= 500 || status == 429 || !strcmp(code, "SlowDown") ||
           !strcmp(code, "RequestTimeout") || !strcmp(code, "InternalError");
}

static int http_curl_retry(CURLcode c) {
    return c != CURLE_URL_MALFORMAT && c != CURLE_UNSUPPORTED_PROTOCOL &&
           c != CURLE_PEER_FAILED_VERIFICATION && c != CURLE_SSL_CACERT_BADFILE &&
           c != CURLE_LOGIN_DENIED && c != CURLE_NOT_BUILT_IN && c != CURLE_FUNCTION_NOT_FOUND;
}

static void http_sleep(const ss__remote *r, unsigned attempt) {
    uint64_t ms = r->backoff_ms;
    for (unsigned i = 1; i < attempt && ms < 20000; i++) ms *= 2;
    if (ms > 20000) ms = 20000;
    /* jitter, so that the ranks of a job do not retry in step */
    ms = ms / 2 + (uint64_t)rand() % (ms / 2 + 1);
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static int http_setup(CURL *h, const ss__remote *r, const ss__request *q, http_try *t,
                      struct curl_slist **hdrs, char *errbuf) {
    curl_easy_setopt(h, CURLOPT_URL, q->url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, http_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)r->connect_ms);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)((r->stall_ms + 999) / 1000));
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_USERAGENT, "seqstore");
    if (r->aws.ca_bundle) curl_easy_setopt(h, CURLOPT_CAINFO, r->aws.ca_bundle);
    /* no "Expect:" to suppress 100-continue: libcurl would sign the empty
     * header it does not send; a short wait for the 100 costs less */
    curl_easy_setopt(h, CURLOPT_EXPECT_100_TIMEOUT_MS, 50L);
    for (size_t i = 0; i < q->nheaders; i++) *hdrs = curl_slist_append(*hdrs, q->headers[i]);
    if (t->base) { /* the rest of a transfer that was cut off, if still the same object */
        char range[64], if_range[200];
        snprintf(range, sizeof range, "Range: bytes=%llu-", (unsigned long long)t->base);
        snprintf(if_range, sizeof if_range, "If-Range: %s", t->if_range);
        *hdrs = curl_slist_append(*hdrs, range);
        *hdrs = curl_slist_append(*hdrs, if_range);
    }
    if (q->sign && r->aws.access_key) {
        char sig[128];
        snprintf(sig, sizeof sig, "aws:amz:%s:s3", r->aws.region);
        curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sig);
        curl_easy_setopt(h, CURLOPT_USERNAME, r->aws.access_key);
        curl_easy_setopt(h, CURLOPT_PASSWORD, r->aws.secret_key);
        *hdrs = curl_slist_append(*hdrs, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
        if (r->aws.token) {
            char *tok = NULL;
            if (asprintf(&tok, "x-amz-security-token: %s", r->aws.token) < 0) return SS_ENOMEM;
            *hdrs = curl_slist_append(*hdrs, tok);
            free(tok);
        }
    }
    if (!*hdrs && q->sign && r->aws.access_key) return SS_ENOMEM;
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
    const char *m = q->method;
    uint64_t up = q->body ? q->body_len : q->body_fd >= 0 ? q->body_fd_len : 0;
    if (!strcmp(m, "HEAD")) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (!strcmp(m, "PUT")) {
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, http_read);
        curl_easy_setopt(h, CURLOPT_READDATA, t);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)up);
    } else if (!strcmp(m, "POST")) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body ? (const char *)q->body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(q->body ? q->body_len : 0));
    } else if (strcmp(m, "GET")) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, m);
    }
    return 0;
}

/* After a try that was cut off: can the next one continue it with a range
 * read? A GET into a file whose 2xx answer had a length and an ETag, of
 * which some but not all bytes arrived. */
static void http_plan_range(http_try *t, const ss__request *q) {
    if (!t->sink || t->sink->fd < 0 || strcmp(q->method, "GET") || t->fatal) {
        t->base = 0, t->if_range[0] = '\0';
        return;
    }
    if (t->status / 100 != 2) return; /* no body came this time: keep what is held */
    uint64_t held = t->base + t->got, total = t->base + (uint64_t)t->length;
    int same = !t->base || !t->etag[0] || !strcmp(t->etag, t->if_range);
    if (t->length >= 0 && same && (t->etag[0] || t->if_range[0]) && held > 0 && held < total) {
        if (t->etag[0]) snprintf(t->if_range, sizeof t->if_range, "%s", t->etag);
        t->base = held;
    } else {
        t->base = 0, t->if_range[0] = '\0';
    }
}

/* Reset the sink and the request body for another try (keeping the bytes
 * held for a range read). */
static int http_rewind(http_try *t, const ss__request *q) {
    ss__sink *s = t->sink;
    t->status = 0, t->fatal = 0, t->started = 0, t->err_len = 0, t->err[0] = '\0';
    t->got = 0, t->length = -1, t->etag[0] = '\0', t->meta[0] = '\0';
    t->range_start = t->range_total = -1;
    t->up = q->body;
    t->up_off = 0;
    t->up_left = q->body ? q->body_len : q->body_fd >= 0 ? q->body_fd_len : 0;
    if (!s) return 0;
    s->written = t->base;
    if (s->fd < 0) {
        s->len = 0;
        return 0;
    }
    if (ftruncate(s->fd, (off_t)t->base) != 0 || lseek(s->fd, (off_t)t->base, SEEK_SET) < 0)
        return ss__rfail(SS_EIO, "%s %s: cannot rewind the file: %s", q->method, q->shown,
                         strerror(errno));
    return 0;
}

/* The message of a failed try: the status and the S3 code and message. */
static int http_status_error(const http_try *t, const ss__request *q, char *code, size_t cap) {
    char msg[256] = "";
    code[0] = '\0';
    if (t->err_len && ss__xml_text(code, cap, t->err, t->err_len, "Code") == 0)
        ss__xml_text(msg, sizeof msg, t->err, t->err_len, "Message");
    int rc = t->status == 404 ? SS_ENOTFOUND : SS_EIO;
    if (!strcmp(q->method, "HEAD") && t->status == 404) rc = SS_ENOTFOUND;
    return ss__rfail(rc, "%s %s: HTTP %ld%s%s%s%s%s", q->method, q->shown, t->status,
                     *code ? ", " : "", code, *msg ? " (" : "", msg, *msg ? ")" : "");
}

int ss__http(const ss__remote *r, const ss__request *q, ss__sink *sink, ss__response *resp) {
    CURL *h = http_handle();
    if (!h) return ss__rfail(SS_EIO, "libcurl could not be initialized");
    http_try *t = calloc(1, sizeof *t);
    if (!t) return ss__rfail(SS_ENOMEM, "out of memory");
    t->h = h, t->sink = sink, t->q = q;
    int rc = 0;
    for (unsigned attempt = 1;; attempt++) {
        char errbuf[CURL_ERROR_SIZE] = "";
        struct curl_slist *hdrs = NULL;
        rc = http_rewind(t, q);
        if (!rc && http_setup(h, r, q, t, &hdrs, errbuf))
            rc = ss__rfail(SS_ENOMEM, "out of memory");
        if (rc) {
            curl_slist_free_all(hdrs);
            break;
        }
        CURLcode c = curl_easy_perform(h);
        curl_slist_free_all(hdrs);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &t->status);
        int retry = 0;
        if (t->fatal) {
            rc = t->fatal; /* the sink's message */
            break;
        } else if (c != CURLE_OK) {
            retry = http_curl_retry(c);
            char hint[4200] = "";
            if (c == CURLE_PEER_FAILED_VERIFICATION && r->aws.ca_bundle)
                snprintf(hint, sizeof hint, " (checked against the CA bundle '%s', from %s)",
                         r->aws.ca_bundle, r->aws.ca_from);
            else if (c == CURLE_PEER_FAILED_VERIFICATION)
                snprintf(hint, sizeof hint, " (the server's certificate is not signed by a CA "
                                            "this system trusts: name its CA bundle in "
                                            "AWS_CA_BUNDLE, CURL_CA_BUNDLE or SSL_CERT_FILE)");
            else if (c == CURLE_SSL_CACERT_BADFILE)
                snprintf(hint, sizeof hint, " (the CA bundle '%s', from %s)",
                         r->aws.ca_bundle ? r->aws.ca_bundle : "?",
                         r->aws.ca_from ? r->aws.ca_from : "libcurl's default");
            rc = ss__rfail(SS_EIO, "%s %s: %s%s", q->method, q->shown,
                           *errbuf ? errbuf : curl_easy_strerror(c), hint);
        } else if (t->status / 100 != 2) {
            char code[128];
            rc = http_status_error(t, q, code, sizeof code);
            retry = http_status_retry(t->status, code);
        } else if (strcmp(q->method, "HEAD") && t->length >= 0 && t->got != (uint64_t)t->length) {
            retry = 1;
            rc = ss__rfail(SS_EIO, "%s %s: the body has %llu bytes, its Content-Length %lld",
                           q->method, q->shown, (unsigned long long)t->got, (long long)t->length);
        } else if (t->status == 206 && t->base &&
                   (t->range_total < 0 || t->base + t->got != (uint64_t)t->range_total)) {
            retry = 1; /* a range answer that does not end the object */
            rc = ss__rfail(SS_EIO, "%s %s: the range answer ends at byte %llu of %lld",
                           q->method, q->shown, (unsigned long long)(t->base + t->got),
                           (long long)t->range_total);
            t->base = 0, t->if_range[0] = '\0', t->length = -1; /* start again */
        } else {
            rc = 0;
            break;
        }
        if (!retry || attempt >= r->attempts) {
            if (attempt > 1) {
                char m[1024];
                snprintf(m, sizeof m, "%s", ss__rmessage());
                ss__rfail(rc, "%s (after %u tries)", m, attempt);
            }
            break;
        }
        http_plan_range(t, q);
        http_sleep(r, attempt);
    }
    if (resp) {
        resp->status = t->status;
        snprintf(resp->etag, sizeof resp->etag, "%s", t->etag);
        snprintf(resp->meta, sizeof resp->meta, "%s", t->meta);
        curl_off_t len = -1;
        curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
        resp->length = len >= 0 ? (uint64_t)len : 0;
    }
    free(t);
    return rc;
}
