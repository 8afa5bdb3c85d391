/* SPDX-License-Identifier: BSD-2-Clause */
/* env.h - the per-process registry of LMDB environments (internal). */
#ifndef SS_ENV_H
#define SS_ENV_H

#include "internal.h"

#include <lmdb.h>
#include <stdint.h>

/* Opens a new environment into *env (left for the registry to close on error). */
typedef int (*ss_env_open_fn)(MDB_env **env, void *ctx);

/* The environment of `path`: shared with this process's other readers, or
 * opened with `open_fn`. SS_EBUSY when a writer meets any other user. */
int ss__env_acquire(MDB_env **out, const char *path, int writer, ss_env_open_fn open_fn, void *ctx);
/* Drop one reference; the last closes the environment. Accepts NULL. */
void ss__env_release(MDB_env *env);
/* The least map of a read-only environment: 1 TiB of address space. */
#define SS_READER_MAP_MIN (1ull << 40)
/* The map size for a read-only environment of a file of `file_bytes`:
 * max(SS_READER_MAP_MIN, 4 x file) if the address space has room, else
 * 4 x file, else 0 (LMDB's choice). Set it before mdb_env_open. Call it
 * only from an ss_env_open_fn (it reads state guarded by the registry lock). */
uint64_t ss__env_reader_map_bytes(uint64_t file_bytes);
/* The map size for a dataset's shard (spec §13), `file_bytes` long: the file
 * rounded up to 2 MiB. Shards are complete and checked against the
 * manifest's digests, so they do not grow while the dataset reads them;
 * packed small maps share page-table pages, where 1 TiB maps each need
 * their own (measured: random ss_get over 64 shards 1.37-1.42x a single
 * store's against 1.47-1.55x, bench_dataset's corpus). If another handle
 * later finds the file grown, ss__env_begin_read() applies. 0 for an empty
 * or unknown size (LMDB's choice). */
uint64_t ss__env_shard_map_bytes(uint64_t file_bytes);
/* For tests: use `bytes` as every later reader map (0 restores the policy). */
void ss__env_set_reader_map_bytes(uint64_t bytes);
/* Begin a read transaction on a shared read-only environment. If the file
 * outgrew the map (MDB_MAP_RESIZED), remap only when the caller is the
 * environment's sole user, else SS_EBUSY; never remaps under live readers. */
int ss__env_begin_read(MDB_env *env, const char *path, MDB_txn **txn);
/* The size of LMDB's lock file for SS_ENV_MAXREADERS reader slots: LMDB
 * 0.9's MDB_txninfo is a 192-byte header and a 64-byte slot per reader
 * (cache-line padded), 192 + 1021 * 64 bytes. */
#define SS_ENV_MAXREADERS 1022
#define SS_ENV_LOCK_BYTES 65536
/* Before mdb_env_open with a lock: give every page of `path`-lock its disk
 * blocks, creating the file if need be. LMDB sizes the lock file with
 * ftruncate and then writes its header and reader slots through a shared
 * map of it; on a full file system the page fault that would allocate a
 * block kills the process with SIGBUS, where fallocate says ENOSPC.
 * On success *nolock is 1 when a reader (`writer` 0) must open without a
 * lock: the disk is full and no process has the store open (see env.c).
 * SS_EFULL naming the lock file when the blocks cannot be had and a
 * reader may not go without; SS_EIO when the lock file is not a regular
 * file. Other failures (read-only media) are left to mdb_env_open. */
int ss__env_lock_prepare(const char *path, int writer, int *nolock);
/* SS_ECORRUPT when the file is shorter than the pages the meta page claims. */
int ss__env_check_size(MDB_env *env, const char *path);

#endif
