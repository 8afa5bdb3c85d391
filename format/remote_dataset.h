/* SPDX-License-Identifier: BSD-2-Clause */
/* remote_dataset.h - a dataset under a URL (spec/FORMAT.md §14): dataset.c
 * reads it from its cache directory and asks here for each shard's file
 * (internal). */
#ifndef SS_REMOTE_DATASET_H
#define SS_REMOTE_DATASET_H

#include "store.h"

typedef struct ss_manifest ss_manifest;
/* The URL, resolved options and cache directory of an open remote dataset,
 * and the cache locks of the shards it maps. Owned by the dataset. */
typedef struct ss__ds_remote ss__ds_remote;

/* `*path` (malloc'd) = the cached, verified file of shard `k` of `m`,
 * downloaded when missing; the dataset's shared lock on it keeps it from
 * eviction until ss__remote_ds_free(). 0 or a code with the message set. */
int ss__remote_shard(char **path, ss__ds_remote *rm, const ss_manifest *m, uint32_t k);
/* Start downloading shard `k` in the background (at most the options'
 * `parallel` at once; a request beyond twice that many waiting is dropped,
 * and the read fetches the shard itself). 0 or SS_ENOMEM. */
int ss__remote_prefetch(ss__ds_remote *rm, const ss_manifest *m, uint32_t k);
/* Stop the prefetch threads, release the locks and free. Accepts NULL. */
void ss__remote_ds_free(ss__ds_remote *rm);

/* dataset.c: open the dataset whose manifest is at `path` (a directory or
 * manifest), its messages naming `shown`; takes `remote` (NULL for a local
 * dataset), freed on failure too. */
int ss__dataset_open_at(ss_store **out, const char *path, const char *shown, unsigned flags,
                        ss__ds_remote *remote);

#endif
