/* SPDX-License-Identifier: BSD-2-Clause */
/* manifest.h - the manifest of a dataset of shards (spec/FORMAT.md §13):
 * parse, format, read, write, and check against the shard stores (internal;
 * the CLI and the fuzz target use it).
 *
 * Every function that can fail returns 0 or a negative SS_E... code with the
 * thread's error message set (naming the manifest line or the shard); none
 * prints, exits or aborts. */
#ifndef SS_MANIFEST_H
#define SS_MANIFEST_H

#include "seqstore.h"

#include <stddef.h>
#include <stdint.h>

/** The manifest's file name inside the dataset directory. */
#define SS_MANIFEST_NAME "dataset.manifest"
/** Dataset version (spec/FORMAT.md §13), independent of the store format's. */
#define SS_MANIFEST_VERSION 1
/** Most shards in a manifest. */
#define SS_MANIFEST_MAX_SHARDS 1000000u
/** Longest shard path in bytes. */
#define SS_MANIFEST_MAX_PATH 4095u
/** Largest manifest file read (a million shards of long paths fit). */
#define SS_MANIFEST_MAX_BYTES (64u << 20)

typedef struct ss_manifest_shard {
    char *path;      /* relative to the dataset directory (owned) */
    uint64_t count;  /* its examples */
    uint64_t digest; /* ss__store_header_digest() of the shard */
    uint64_t *rows;  /* per field, its rows in the shard (ss_flat_size()); owned */
} ss_manifest_shard;

typedef struct ss_manifest {
    uint32_t version;
    uint64_t examples; /* the sum of the shards' counts */
    uint32_t nfields;
    ss_field fields[SS_MAX_FIELDS]; /* names point into names[] */
    char names[SS_MAX_FIELDS][SS_MAX_NAME + 1];
    uint32_t nshards;
    ss_manifest_shard *shards; /* owned */
    uint64_t checksum;         /* the checksum line's digest (set by parse) */
} ss_manifest;

/* `*out` = XXH3-64 of the payload of store `s`'s H block as stored (§5, §13):
 * with the content digest the header carries, it changes with any change of
 * the store's blocks. 0, or SS_ECORRUPT/SS_EIO naming the store. */
int ss__store_header_digest(uint64_t *out, const ss_store *s);

/* Does the header of store `s` carry a content digest (§5, §13: written by
 * this library's writer), so that its header digest binds every block? 0
 * for a store written before content digests, whose header digest binds its
 * counts only. */
int ss__store_has_content_digest(const ss_store *s);

/* Set `m` (zeroed by the caller, or freed) to the schema of `s` and no
 * shards. */
void ss__manifest_init(ss_manifest *m, const ss_store *s);
/* Append a shard (path and the nfields `rows` copied). 0, SS_EINVAL (bad
 * path, too many shards, examples overflow, a fixed field's rows not the
 * count), SS_ENOMEM. */
int ss__manifest_add(ss_manifest *m, const char *path, uint64_t count, uint64_t digest,
                     const uint64_t *rows);

/* Parse manifest text (`len` bytes, need not be NUL-terminated). On success
 * `*out` owns its shards; on failure `*out` is empty (nothing to free, but
 * ss__manifest_free is harmless). 0, SS_ECORRUPT ("line N: ..."),
 * SS_EVERSION, SS_ENOMEM. */
int ss__manifest_parse(ss_manifest *out, const char *text, size_t len);
/* Format `m` as manifest text with its checksum line; `*out` is malloc'd
 * (free() it), NUL-terminated, `*len` bytes without the NUL. 0, SS_EINVAL
 * (a path or name the syntax cannot carry), SS_ENOMEM. */
int ss__manifest_format(const ss_manifest *m, char **out, size_t *len);

/* The manifest file of `path`: PATH/dataset.manifest if `path` is a
 * directory, else `path` itself; `*dir` the directory the shard paths are
 * relative to. Both malloc'd. 0, SS_ENOTFOUND, SS_ENOMEM. */
int ss__manifest_locate(const char *path, char **file, char **dir);
/* Read and parse the manifest of `path` (a dataset directory or a manifest
 * file). 0, SS_ENOTFOUND (no manifest), SS_EIO, SS_ECORRUPT, SS_EVERSION,
 * SS_ENOMEM; the message names the file. */
int ss__manifest_read(ss_manifest *out, const char *path);
/* Write `m` to DIR/dataset.manifest atomically (a temporary file in DIR,
 * fsync'd, renamed over it). 0, SS_EINVAL, SS_EIO, SS_EFULL, SS_ENOMEM. */
int ss__manifest_write(const ss_manifest *m, const char *dir);

/* Does `s` match shard `k` of `m` (schema, count, rows, header digest)? 0 or
 * SS_ECORRUPT / SS_ESCHEMA naming shard k and its path. */
int ss__manifest_check_shard(const ss_manifest *m, uint32_t k, const ss_store *s);

/* Free the shards of `m` and empty it. Accepts an empty manifest. */
void ss__manifest_free(ss_manifest *m);

#endif
