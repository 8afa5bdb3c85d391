/* SPDX-License-Identifier: BSD-2-Clause */
/* remote_impl.h - objects under a URL, for datasets in object storage
 * (spec/FORMAT.md §14; internal). The layer below format/: URLs, AWS
 * credentials and configuration, HTTP transfers through libcurl with retries,
 * S3 error documents, the verified shard cache and whole-dataset push/pull.
 *
 * It knows nothing of stores: what "verified" means is a callback of the
 * layer above. Every function that can fail returns 0 or a negative SS_E...
 * code with this layer's thread-local message set (ss__rmessage()), naming
 * the URL without its query string; none prints, exits or aborts, and no
 * message holds a secret. */
#ifndef SS_REMOTE_INTERNAL_H
#define SS_REMOTE_INTERNAL_H

#include "seqstore.h"
#include "seqstore/remote.h"

#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------- rerror.c */

/* Set the message, return `code`. */
int ss__rfail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the message with "context: ", return `code`. */
int ss__rcontext(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The calling thread's last message of this layer; never NULL. */
const char *ss__rmessage(void);

/* ------------------------------------------------------------- url.c */

typedef enum { SS__URL_S3 = 1, SS__URL_HTTP, SS__URL_FILE } ss__url_scheme;

/* A dataset URL, parsed. All strings owned. */
typedef struct ss__url {
    ss__url_scheme scheme;
    char *bucket; /* s3: the bucket; else NULL */
    char *base;   /* s3: the key prefix ("" or without leading or trailing '/');
                     http: "http(s)://HOST[:PORT]/PATH" without a trailing '/';
                     file: the decoded local path */
    char *query;  /* http: "?..." (a presigned URL's), else ""; never shown */
    char *shown;  /* the URL without its query string and trailing '/': what messages show */
} ss__url;

/* Parse `text`: s3://BUCKET[/PREFIX], http(s)://HOST[:PORT][/PATH][?QUERY],
 * file://[localhost]/PATH; a trailing "/dataset.manifest" and '/' are
 * dropped (the URL names the directory). 0, SS_EINVAL (the message shows the
 * URL without its query), SS_ENOMEM. On failure `*out` is empty. */
int ss__url_parse(ss__url *out, const char *text);
void ss__url_free(ss__url *u);
/* `*out` = the shown URL of object `name` under `u` (malloc'd). */
int ss__url_object_shown(char **out, const ss__url *u, const char *name);

/* -------------------------------------------------------- awsconf.c */

/* The value of `key` in section `section` of INI text (AWS's config and
 * credentials files: `[section]`, `key = value`, `#`/`;` comments, indented
 * lines continue a nested block and are skipped). `*out` malloc'd, NULL
 * when absent. 0, SS_ECORRUPT ("line N: ..."), SS_ENOMEM. */
int ss__ini_get(char **out, const char *text, size_t len, const char *section, const char *key);

/* What signs and addresses S3 requests. Owned strings, NULL when absent. */
typedef struct ss__aws {
    char *access_key, *secret_key, *token;
    char *region;   /* never NULL once resolved */
    char *endpoint; /* "http(s)://HOST[:PORT]" without a trailing '/', or NULL for AWS's */
    /* The CA bundle that TLS peers are checked against, or NULL for the
     * system's: AWS_CA_BUNDLE (AWS's tools), CURL_CA_BUNDLE (curl's),
     * SSL_CERT_FILE (OpenSSL's), else the profile's ca_bundle; `ca_from`
     * names where it came from, for messages. */
    char *ca_bundle;
    const char *ca_from;
} ss__aws;

/* Resolve credentials, region, endpoint and CA bundle as AWS's tools do; the option
 * strings (NULL = unset) come first. No credentials at all means unsigned
 * (anonymous) requests. 0, SS_ECORRUPT (a damaged config file, naming it and
 * the line), SS_EINVAL (only one of the key pair), SS_ENOMEM. */
int ss__aws_resolve(ss__aws *out, const char *profile, const char *region, const char *endpoint);
void ss__aws_free(ss__aws *a);

/* ---------------------------------------------------------- config.c */

/* The options, resolved. */
typedef struct ss__remote {
    char *cache_dir;
    uint64_t cache_bytes;
    unsigned parallel, attempts, backoff_ms, connect_ms, stall_ms;
    uint64_t part_bytes;
    ss__aws aws;
} ss__remote;

/* Resolve `o` (NULL = defaults) and the environment into `out`. 0, SS_EINVAL
 * (a bad option or SEQSTORE_CACHE_BYTES, naming it), SS_ECORRUPT, SS_ENOMEM. */
int ss__remote_config(ss__remote *out, const ss_remote_options *o);
void ss__remote_config_free(ss__remote *r);

/* -------------------------------------------------------- s3xml.c */

/* The text of the first element named `element` (any depth) of the XML
 * document `xml` (`len` bytes), cut to `cap` - 1 bytes. 0, SS_ENOTFOUND (no
 * such element), SS_ECORRUPT (not well-formed XML, with expat's reason and
 * line). */
int ss__xml_text(char *out, size_t cap, const char *xml, size_t len, const char *element);

/* ------------------------------------------------------------ http.c */

/* Where a response body goes: a file (from offset 0, truncated at each try)
 * or memory (at most `max` bytes). */
typedef struct ss__sink {
    int fd;          /* >= 0: the file; else memory */
    char *mem;       /* memory: the body (malloc'd, NUL-terminated), the caller frees */
    size_t len, max; /* memory: bytes held, the most accepted */
    uint64_t written;
    /* Called once the body's length is known, before its first byte is
     * stored (a reservation of cache room); non-zero fails the transfer with
     * that code and this layer's message, not retried. */
    int (*on_length)(void *ctx, uint64_t length);
    void *ctx;
} ss__sink;

typedef struct ss__request {
    const char *method; /* "GET", "PUT", "POST", "DELETE", "HEAD" */
    const char *url;    /* with its query string */
    const char *shown;  /* what messages show (s3://..., without query) */
    int sign;           /* 1: sign with the credentials (S3) */
    const char *const *headers; /* extra "Name: value" headers */
    size_t nheaders;
    const void *body;   /* request body in memory, or NULL */
    size_t body_len;
    int body_fd;        /* or from a file, when body is NULL: >= 0 */
    uint64_t body_off, body_fd_len;
} ss__request;

typedef struct ss__response {
    long status;
    char etag[160]; /* the ETag header, quotes kept */
    char meta[80];  /* the x-amz-meta-seqstore-digest header */
    uint64_t length; /* Content-Length (0 when absent) */
} ss__response;

/* One request, retried (connection failures, 5xx, 429, SlowDown, stalls,
 * bodies shorter than their Content-Length) up to r->attempts with
 * exponential backoff. A 2xx fills `sink` (NULL: the body is dropped).
 * Otherwise SS_ENOTFOUND (404), SS_EIO (other statuses, or transport
 * failures after the last try), SS_EFULL (the sink's disk is full),
 * SS_ETOOBIG (a memory body over sink->max); the message: "METHOD SHOWN:
 * HTTP 403, AccessDenied (Access Denied)". `resp` may be NULL. */
int ss__http(const ss__remote *r, const ss__request *q, ss__sink *sink, ss__response *resp);

/* ---------------------------------------------------------- object.c */

/* Object `name` (a path relative to the dataset, '/'-separated) under `u`. */
/* Into memory (`*out` malloc'd, NUL-terminated; at most `max` bytes). */
int ss__object_get_mem(char **out, size_t *len, const ss__remote *r, const ss__url *u,
                       const char *name, size_t max);
/* Into the file `fd` (see ss__sink for on_length). `*len` the bytes. */
int ss__object_get_fd(uint64_t *len, const ss__remote *r, const ss__url *u, const char *name,
                      int fd, int (*on_length)(void *, uint64_t), void *ctx);
/* Upload the file `path` (s3 only), in parts of r->part_bytes, r->parallel
 * at once, when larger than that. `meta`: an x-amz-meta-seqstore-digest
 * value, or NULL. */
int ss__object_put_file(const ss__remote *r, const ss__url *u, const char *name, const char *path,
                        const char *meta);
/* Upload `len` bytes of memory (s3 only). */
int ss__object_put_mem(const ss__remote *r, const ss__url *u, const char *name, const void *data,
                       size_t len);
/* Delete (s3 only); a missing object is not an error. */
int ss__object_delete(const ss__remote *r, const ss__url *u, const char *name);
/* The x-amz-meta-seqstore-digest and size of an object (s3 HEAD): `*found`
 * 0 when it does not exist. */
int ss__object_head(int *found, uint64_t *size, char *meta, size_t cap, const ss__remote *r,
                    const ss__url *u, const char *name);

/* ----------------------------------------------------------- cache.c */

/* The cache directory of dataset `u`: CACHE/HASH (created, with a file
 * `url` naming it). `*out` malloc'd. */
int ss__cache_dataset_dir(char **out, const ss__remote *r, const ss__url *u);

/* Check a downloaded file before it enters the cache: 0 good, SS_ECORRUPT
 * (the object differs from what the manifest describes; refetched once),
 * another code (fails at once). The message is the layer above's: it is
 * copied into this layer's by `copy_message`. */
typedef struct ss__verifier {
    int (*check)(void *ctx, const char *tmp_path);
    const char *(*message)(void);
    void *ctx;
} ss__verifier;

/* The cached, verified file of shard object `name` (header digest `digest`)
 * of the dataset cached in `dsdir`: downloaded (once per node: the others
 * wait for the first) when missing, into a temporary file, checked by `v`,
 * renamed into place. `*path` malloc'd; `*fd` an open descriptor holding a
 * shared lock that keeps the file from eviction until it is closed. */
int ss__cache_shard(char **path, int *fd, const ss__remote *r, const ss__url *u, const char *dsdir,
                    const char *name, uint64_t digest, const ss__verifier *v);

/* Write `len` bytes to `dir`/`name` atomically (a temporary file, flushed,
 * renamed); nothing when the file holds them already. 0, SS_EIO, SS_EFULL. */
int ss__cache_write_file(const char *dir, const char *name, const void *data, size_t len);
/* Download object `name` to `dir`/`file` atomically; SS_ENOTFOUND removes
 * `dir`/`file`. */
int ss__cache_fetch_file(const ss__remote *r, const ss__url *u, const char *name, const char *dir,
                         const char *file);

/* -------------------------------------------------------- parallel.c */

/* Run job(ctx, i) for i in [0, n) on up to `threads` threads; stops handing
 * out jobs after the first failure. The first failure's code, its message
 * in the calling thread's. */
int ss__parallel(unsigned threads, size_t n, int (*job)(void *ctx, size_t i), void *ctx);

#endif
