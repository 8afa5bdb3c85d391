/*
 * dataset.h - the manifest of a sharded dataset (spec/FORMAT.md §12):
 * parse, check against the shard stores, and write.
 *
 * A dataset is a directory holding shard stores and the manifest file
 * DIR/dataset.manifest, a versioned text file naming each shard by its path
 * relative to DIR with its example count and the XXH3-64 of its header, the
 * common schema, and a checksum over all of it. `seqstore dataset build`
 * writes it, `seqstore dataset info` reads and checks it.
 *
 * Every function returns 0, or 1 with a message (naming the file, the shard
 * and the problem) in `err`; none prints or exits.
 */
#ifndef SS_DATASET_H
#define SS_DATASET_H

#include "seqstore.h"

#include <stddef.h>
#include <stdint.h>

/** The manifest's file name inside the dataset directory. */
#define SS_MANIFEST_NAME "dataset.manifest"
/** The dataset section's version (spec/FORMAT.md §12), independent of the
 *  store format's. */
#define SS_MANIFEST_VERSION 1

typedef struct ss_manifest_shard {
    char *path;      /**< relative to the dataset directory (owned) */
    uint64_t count;  /**< its examples */
    uint64_t digest; /**< XXH3-64 of its header block's payload */
} ss_manifest_shard;

typedef struct ss_manifest {
    uint32_t version;
    uint64_t examples; /**< the sum of the shards' counts */
    uint32_t nfields;
    ss_field fields[SS_MAX_FIELDS]; /**< names point into names[] */
    char names[SS_MAX_FIELDS][48];
    uint32_t nshards;
    ss_manifest_shard *shards; /**< owned */
} ss_manifest;

/** XXH3-64 of store `s`'s header payload (its schema, count and per-field
 *  totals: it changes with any append or rewrite). */
uint64_t ss_dataset_header_digest(const ss_store *s);

/** Compare `s`'s schema with `m`'s; on a difference write it to `err`
 *  naming `what` (e.g. "shard 3 'a.ss'") and return 1. */
int ss_dataset_check_schema(const ss_manifest *m, const ss_store *s, const char *what, char *err,
                            size_t errlen);

/** Take `s`'s schema as the manifest's. */
void ss_dataset_set_schema(ss_manifest *m, const ss_store *s);

/** Write `m` to DIR/dataset.manifest atomically (a temporary file renamed
 *  over it), computing its checksum. */
int ss_manifest_write(const ss_manifest *m, const char *dir, char *err, size_t errlen);

/** Read and parse DIR/dataset.manifest, checking its version, syntax, paths
 *  (relative, no "..") and checksum, and that `examples` is the sum of the
 *  counts. Free `*out` with ss_manifest_free() (also on failure). */
int ss_manifest_read(ss_manifest *out, const char *dir, char *err, size_t errlen);

/** Open every shard of `m` (read-only, without a lock file) and check that
 *  it exists, is complete, has the manifest's schema, count and header
 *  digest. With `verify`, also recompute every checksum of every shard
 *  (ss_verify). */
int ss_manifest_check(const ss_manifest *m, const char *dir, int verify, char *err, size_t errlen);

void ss_manifest_free(ss_manifest *m);

#endif
