/* SPDX-License-Identifier: BSD-2-Clause */
/* sections.h - stored lengths (spec/FORMAT.md §7.3) and a dataset's sections
 * store (§13.1), shared by the writer, verify and dataset.c (internal). */
#ifndef SS_SECTIONS_H
#define SS_SECTIONS_H

#include "store.h"

/* lengths.c */

/* The dtype (SS_U8..SS_U64) and `*width` in bytes of the narrowest unsigned
 * type that holds `longest`. */
uint32_t ss__lengths_dtype(uint64_t longest, unsigned *width);
/* In the writer's final transaction, after every index segment is put:
 * write `ss.lengths.F` for every sequence field F of `h` from the index as
 * stored in `txn` (or delete it when too large for one block). 0 or an LMDB
 * code (MDB_CORRUPTED for an index that does not hold h->count + 1 entries). */
int ss__lengths_put(MDB_txn *txn, MDB_dbi dbi, const ss_header *h);
/* Length `i` of a section of type `dtype`. */
uint64_t ss__lengths_value(const void *data, ss_dtype dtype, uint64_t i);
/* Verify: the section of `field` equals ss_length() of every example and has
 * the narrowest type. 0, SS_ENOTFOUND (no section), or SS_ECORRUPT with
 * `*bad` the first wrong example (count for a wrong type). */
int ss__lengths_check(const ss_store *s, uint32_t field, uint64_t *bad);

/* dataset_sections.c */

/** The sections store's file name inside a dataset directory (§13.1). */
#define SS_SECTIONS_NAME "dataset.sections.ss"
/** Its attribute binding it to one manifest: the manifest's checksum. */
#define SS_SECTIONS_BINDING "dataset.manifest"

typedef struct ss_manifest ss_manifest;

/* `*out` = DIR/dataset.sections.ss (malloc'd). 0 or SS_ENOMEM. */
int ss__sections_path(char **out, const char *dir);
/* Open the sections store of dataset directory `dir` read-only without a
 * lock file (*out NULL when there is none) and check that it is bound to
 * manifest `m` (its checksum). 0; SS_ECORRUPT (another manifest's); as
 * ss_open(). */
int ss__sections_open(ss_store **out, const char *dir, const ss_manifest *m, unsigned flags);
/* The dataset's lengths of each sequence field, gathered shard by shard
 * (ss__global_lengths_add()), so that the shards need not stay open: each
 * field's entries in the narrowest width holding the longest so far. */
typedef struct ss_global_lengths_field {
    unsigned char *data; /* n entries of `width` bytes, little-endian */
    uint64_t n, cap;     /* entries; bytes allocated */
    unsigned width;      /* 0 before the first shard */
    int off;             /* too many for one section (§7.3): none is written */
} ss_global_lengths_field;
typedef struct ss_global_lengths {
    uint32_t nfields; /* the dataset's fields (set by the caller; zero the rest) */
    ss_global_lengths_field f[SS_MAX_FIELDS];
} ss_global_lengths;
/* Append the lengths of every sequence field of shard `s` (the next one in
 * order): its stored lengths section copied, widened when narrower than the
 * dataset's so far (O(its size in bytes), no index pass); a shard without a
 * section is read through ss_lengths(). 0; SS_ENOMEM; SS_ECORRUPT (its
 * section fails its checksum); as ss_lengths(). */
int ss__global_lengths_add(ss_global_lengths *g, const ss_store *s);
/* Free the arrays; `g` is zeroed. */
void ss__global_lengths_free(ss_global_lengths *g);
/* Write the sections store of `dir` for manifest `m` (its checksum set) with
 * the global lengths `lengths` (gathered over its m->nshards shards in
 * order): the binding, every sequence field's global lengths, and the splits
 * and bucket indices of the previous sections store if it was bound to the
 * same manifest (`*kept`; `*dropped` those of another manifest's). Written to
 * a temporary file and renamed. */
int ss__sections_build(const char *dir, const ss_manifest *m, const ss_global_lengths *lengths,
                       uint64_t *kept, uint64_t *dropped);

#endif
