/* SPDX-License-Identifier: BSD-2-Clause */
/* lmdb_check.h - a structural check of an LMDB snapshot before LMDB reads it
 * (internal).
 *
 * LMDB trusts its pages: a flipped byte in a branch, leaf or meta page makes
 * it dereference NULL, fail an assertion, read out of bounds or loop forever.
 * This check reads the snapshot's meta page and walks both B-trees (the free
 * DB and the main DB) with pread, never through the map, and refuses anything
 * LMDB could trip over. The layout facts come from LMDB 0.9's mdb.c; see the
 * section "LMDB structural check" of spec/FORMAT.md. */
#ifndef SS_LMDB_CHECK_H
#define SS_LMDB_CHECK_H

#include "internal.h"

#include <lmdb.h>

/* Also read the first page of every overflow value and check its header (page
 * number, P_OVERFLOW, page count): one small read per value. Readers never use
 * that header; LMDB's writer does (it frees and rewrites overflow pages by it). */
#define SS_LMDB_CHECK_OVERFLOW 0x1u

/* Before LMDB opens the file at `path` (`file_bytes` long): both meta pages
 * are there and agree on the page size, which LMDB takes from them unchecked.
 * Returns 0; SS_ENOTSTORE when the file does not start with LMDB's magic
 * number; SS_ECORRUPT ("truncated", or naming the meta page); SS_EIO. */
int ss__lmdb_check_file(const char *path, uint64_t file_bytes);

/* Check the snapshot of the read-only transaction *txn of `env` (the file at
 * `path`, for messages). If a writer has meanwhile committed twice, so that
 * the snapshot's meta page is overwritten, *txn is renewed (mdb_txn_reset and
 * mdb_txn_renew: a newer snapshot) and checked again, a bounded number of
 * times. Returns 0; SS_ECORRUPT naming the page and the problem; SS_EIO;
 * SS_ENOMEM; SS_EBUSY when the snapshot kept moving. */
int ss__lmdb_check(MDB_env *env, MDB_txn **txn, const char *path, unsigned flags);

/* The same for a snapshot that must not be renewed (a store's, held since
 * open): when its meta page has been overwritten, a fresh read transaction of
 * `env` is checked instead. */
int ss__lmdb_check_held(MDB_env *env, MDB_txn *txn, const char *path, unsigned flags);

#endif
