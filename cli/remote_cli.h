/* SPDX-License-Identifier: BSD-2-Clause */
/* remote_cli.h - the CLI's writing of datasets in object storage
 * (spec/FORMAT.md §14): `dataset push`, `convert ... -o s3://.../NAME.ss` and
 * `dataset build s3://...`, which share one upload path (internal; only in a
 * build with the remote part, SS_HAVE_REMOTE). */
#ifndef SS_REMOTE_CLI_H
#define SS_REMOTE_CLI_H

#include "remote_impl.h"

struct ss_conv;

/* `seqstore dataset push DIR URL`: check every shard of DIR against its
 * manifest, delete URL's manifest, upload the shards (with `resume`, only
 * those whose object lacks the file's size and header digest), the sections
 * store, the manifest last. An exit code (printed). `parallel` 0: the
 * options' default. */
int ss__cli_push(const char *dir, const char *url, int resume, unsigned parallel);

/* Does object `name` under `u` hold a shard of `size` bytes and header digest
 * `digest` (as ss__cli_put_shard() uploads it)? `*current` 1 or 0. 0 or the
 * code of the failed HEAD (this layer's message). */
int ss__cli_object_current(int *current, const ss__remote *r, const ss__url *u, const char *name,
                           uint64_t size, uint64_t digest);

/* Upload the shard file `path` as object `name` under `u`, carrying its
 * header digest (x-amz-meta-seqstore-digest), in parts when large. */
int ss__cli_put_shard(const ss__remote *r, const ss__url *u, const char *name, const char *path,
                      uint64_t digest);

/* `dataset build URL SHARD... --scratch DIR`: download each named shard
 * that DIR lacks (converted on another node) from URL/SHARD into DIR (a
 * temporary file, its header digest checked against the one its upload
 * recorded, renamed). An exit code (printed). */
int ss__cli_fetch_missing(const char *dir, const char *url, char *const *names, size_t n);

/* The local directory that `convert -o URL/NAME.ss` writes to and `dataset
 * build URL` builds from: `given` (--scratch), else $SEQSTORE_SCRATCH_DIR;
 * NULL when neither is set (the caller says so). */
const char *ss__cli_scratch_dir(const char *given);

/* `seqstore convert ... -o URL/NAME.ss`: the conversion writes
 * SCRATCH/NAME.ss, then ss__convert_url_end() verifies every block, deletes
 * URL's manifest (spec/FORMAT.md §14.2) and uploads the shard. With
 * --resume, a complete SCRATCH/NAME.ss is not converted again (`*skip` 1) and
 * an object that holds it already is not uploaded again.
 * begin: parse the URL, make SCRATCH, point c's output at the local file and
 * adjust --resume (nothing to resume: a new conversion). An exit code
 * (printed); on success `*out` is freed by ss__convert_url_end(). */
typedef struct ss__url_output ss__url_output;
int ss__convert_url_begin(ss__url_output **out, int *skip, struct ss_conv *c, const char *url,
                          const char *scratch);
/* end: after the conversion's exit code `rc` (0: verify and upload; else
 * keep SCRATCH/NAME.ss for --resume and upload nothing). Frees `o`; returns
 * the command's exit code. */
int ss__convert_url_end(ss__url_output *o, int rc);

#endif
