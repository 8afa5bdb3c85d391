/* SPDX-License-Identifier: BSD-2-Clause */
/** @file seqstore/remote.h
 *  Datasets in object storage: opening a dataset (spec/FORMAT.md §13, §14)
 *  that lives under a URL through a verified local cache.
 *
 *  `s3://BUCKET/PREFIX/corpus.ds` (S3 and S3-compatible servers: MinIO, Ceph
 *  RGW, GCS's S3 interface), `http://` and `https://` (public objects, read
 *  only) and `file://` (a local path) name a dataset directory, or its
 *  `dataset.manifest`. Opening fetches the manifest and the sections store
 *  (§13.1) and nothing else: no listing of the bucket. A shard is fetched whole
 *  into the cache the first time one of its examples is read, written under a
 *  temporary name, checked against the manifest (its header digest, every
 *  block's checksum and the content digest), renamed into place and then
 *  mapped as a local shard is: nothing unverified is ever read as data.
 *
 *  The cache is a directory several processes of one node share (ranks,
 *  DataLoader workers): one download per shard (the others wait on a file
 *  lock), no torn file after a kill at any moment, and shards that no process
 *  maps are evicted least recently used when the cache would outgrow its
 *  limit.
 *
 *  Credentials and endpoints are found as AWS's tools find them:
 *  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION /
 *  AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, AWS_PROFILE
 *  with ~/.aws/credentials and ~/.aws/config (AWS_SHARED_CREDENTIALS_FILE,
 *  AWS_CONFIG_FILE). Requests are signed with AWS Signature Version 4. No
 *  message of the library contains a secret or a URL's query string.
 *  HTTPS servers are checked against the system's CA certificates, or the
 *  bundle that AWS_CA_BUNDLE, CURL_CA_BUNDLE or SSL_CERT_FILE names (the
 *  first set), else the profile's ca_bundle. A shard download that is cut
 *  off continues on its next try with a range read of the rest (If-Range:
 *  the object's ETag; a changed object is fetched whole again).
 *
 *  A library built without the remote part (cmake -DSS_REMOTE=OFF, or
 *  without libcurl) opens `file://` URLs and refuses the others with
 *  SS_EINVAL saying so. */
#ifndef SEQSTORE_REMOTE_H
#define SEQSTORE_REMOTE_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Options of a remote dataset. Start from SS_REMOTE_OPTIONS_INIT; a NULL
 *  or 0 field takes the default named, most from the environment. */
typedef struct ss_remote_options {
    unsigned version;          /**< SS_REMOTE_OPTIONS_VERSION */
    const char *cache_dir;     /**< the cache directory (created); NULL =
                                    $SEQSTORE_CACHE_DIR, else $XDG_CACHE_HOME/seqstore,
                                    else $HOME/.cache/seqstore */
    uint64_t cache_bytes;      /**< the cache's size limit in bytes; 0 =
                                    $SEQSTORE_CACHE_BYTES, else 64 GiB */
    const char *endpoint;      /**< S3 endpoint URL (http://127.0.0.1:9000); NULL =
                                    AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the
                                    profile's endpoint_url, else AWS's for the region */
    const char *region;        /**< NULL = AWS_REGION, AWS_DEFAULT_REGION, the
                                    profile's region, else us-east-1 */
    const char *profile;       /**< NULL = AWS_PROFILE, else "default" */
    unsigned parallel;         /**< transfers at once (push, pull, the parts of an
                                    upload); 0 = $SEQSTORE_PARALLEL, else 8 */
    unsigned attempts;         /**< tries of one request before it fails (5xx,
                                    SlowDown, a reset, a stall, a short body); 0 =
                                    $SEQSTORE_ATTEMPTS, else 5; 1 = no retry */
    unsigned backoff_ms;       /**< wait before the first retry, doubled at each
                                    (with jitter, at most 20 s); 0 =
                                    $SEQSTORE_BACKOFF_MS, else 200 */
    unsigned connect_timeout_ms; /**< 0 = $SEQSTORE_CONNECT_TIMEOUT_MS, else 10000 */
    unsigned stall_timeout_ms;   /**< a transfer that moves no byte for this long is
                                      retried; 0 = $SEQSTORE_STALL_TIMEOUT_MS, else
                                      30000 (whole seconds: 1000 is the least) */
    uint64_t multipart_bytes;    /**< uploads larger than this go in parts of this
                                      size (at least 5 MiB, S3's least); 0 =
                                      $SEQSTORE_MULTIPART_BYTES, else 64 MiB */
} ss_remote_options;

/** Version 1. */
#define SS_REMOTE_OPTIONS_VERSION 1
#define SS_REMOTE_OPTIONS_INIT                                                                     \
    { SS_REMOTE_OPTIONS_VERSION, NULL, 0, NULL, NULL, NULL, 0, 0, 0, 0, 0, 0 }
/** Fill `out` with SS_REMOTE_OPTIONS_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_REMOTE_OPTIONS_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_remote_options_init(ss_remote_options *out, unsigned version);

/** Is `path` a URL (`SCHEME://...`) that ss_open() hands to the remote part?
 *  @param[in] path a path or URL; may be NULL.
 *  @return 1 yes, 0 no (a predicate). */
SS_API int ss_is_url(const char *path);

/** Open the dataset under `url` (see the file comment), as ss_open() opens a
 *  local dataset. ss_open() of a URL is this with `opts` NULL.
 *  The returned store reads the cache: a view is valid as for a local store,
 *  until ss_close(); a shard's file stays in the cache, never evicted, while
 *  any store maps it. The first read of a shard's example downloads the shard
 *  (on the calling thread) and may fail as below; ss_get() then returns the
 *  code with the message naming the shard and its URL.
 *  @param[out] out   the store; close it with ss_close().
 *  @param[in]  url   s3://BUCKET/KEY, http(s)://HOST/PATH or file://PATH, naming a
 *                    dataset directory (or its dataset.manifest).
 *  @param[in]  flags SS_OPEN_... as ss_open() of a dataset (SS_OPEN_VERIFY checks
 *                    every block again at each read, as for local stores).
 *  @param[in]  opts  NULL for the defaults; copied (the strings too).
 *  @return 0; SS_ENOTFOUND (no manifest under the URL: HTTP 404, NoSuchKey,
 *          NoSuchBucket); SS_EIO (a refused request: 403, a wrong region,
 *          expired credentials; a TLS certificate no trusted CA signed,
 *          not retried; or a failure that outlived its retries); the
 *          message names the URL without its query string, the HTTP status and
 *          the S3 error code. SS_ECORRUPT (a damaged manifest, a shard whose
 *          bytes differ from the manifest after one refetch, naming it);
 *          SS_ETOOBIG (a shard larger than the cache limit, naming both
 *          sizes); SS_EFULL (the cache's disk is full; no partial file is
 *          left); SS_EINVAL (a malformed URL, an unknown scheme, a library
 *          built without the remote part, a bad option); SS_ENOMEM; and
 *          those of ss_open(). */
SS_API int ss_open_url(ss_store **out, const char *url, unsigned flags,
                       const ss_remote_options *opts);

/** Start fetching, in the background, the shards that hold `examples` (a
 *  hint: for a dataset under a URL, shards not yet in the cache are queued
 *  for the options' `parallel` download threads, at most twice that many
 *  waiting; further requests are dropped and the read fetches the shard
 *  itself). Returns at once; nothing for a local store or dataset. The
 *  loader calls it for the batches after the one it prepares.
 *  @param[in] s        the store.
 *  @param[in] examples example numbers (< ss_count(s)); may be NULL when n is 0.
 *  @param[in] n        how many.
 *  @return 0; SS_EINVAL (NULL store, NULL examples with n > 0); SS_ERANGE (an
 *          example beyond the count); SS_ENOMEM. */
SS_API int ss_prefetch(const ss_store *s, const uint64_t *examples, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* SEQSTORE_REMOTE_H */
