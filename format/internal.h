/* SPDX-License-Identifier: BSD-2-Clause */
/* internal.h - declarations shared inside the library; not installed. */
#ifndef SS_INTERNAL_H
#define SS_INTERNAL_H

#include "seqstore.h"

#include <stdarg.h>

/* Set the calling thread's error message and return `code`, so that callers
 * can write `return ss__fail(SS_EINVAL, "field '%s': ...", name);`. */
int ss__fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the current message with context: "open 'a.ss': " + old message. */
int ss__context(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Map an LMDB return code to a seqstore code, recording `what` and LMDB's text. */
int ss__lmdb_fail(int rc, const char *what);

/* The resume record of an unfinished write: opaque bytes of the writer's
 * client (the converter: what a resume must check), stored with every
 * intermediate commit (key 'R') and removed by ss_writer_finish().
 * set: copies `size` bytes; written from the next commit on. 0, SS_EINVAL,
 * SS_ENOMEM. get: the record set, or read by ss_writer_open() (NULL and
 * *size = 0 when there is none); valid until the next set or free. */
int ss__writer_set_resume_record(ss_writer *w, const void *data, size_t size);
const void *ss__writer_resume_record(const ss_writer *w, size_t *size);

/* Commit in the background from now on, for a caller with a core to spare
 * (the converters with --threads > 1): the commits ss_writer_append() makes
 * due are written by a thread of the writer's own, one at a time and in
 * order, each the transaction a commit at that moment would have written
 * (the same store, byte for byte), while the caller appends on. The buffers
 * of up to two commits are held instead of one, plus a copy of each
 * sequence field's partial index segment. A commit's failure is returned
 * by the call after it (an append, ss_writer_commit(), ss_writer_finish()),
 * and the writer is then broken: the store holds what the commits before
 * it wrote. Every other call waits for the commit in the background where
 * it must; ss_writer_free() waits for it and ends the thread.
 * 0, SS_EINVAL, SS_ENOMEM, SS_EIO (no thread). */
int ss__writer_background(ss_writer *w);

/* Append n examples at once, for callers with many short ones (the text
 * converters): the store is the one n ss_writer_append() calls write,
 * commits included, but the examples that fit in the fields' current chunks
 * and index segments are copied a field at a time, without the checks and
 * bookkeeping of each call. data[f]: field f's values of the n examples one
 * after the other (never NULL); lengths[f]: their lengths in rows, for a
 * sequence field; a fixed field's are 1 (lengths[f] unused, may be NULL).
 * 0, or the error of the first example that fails (those before it are
 * appended; ss_writer_count() says how many), as ss_writer_append(). */
int ss__writer_append_many(ss_writer *w, uint64_t n, const void *const *data,
                           const uint64_t *const *lengths);

/* Make `w`, a writer of a copy of a store, write that store by replacing
 * it: ss_writer_finish() renames the copy (`w`'s path) over `final` (taken,
 * malloc'd); ss_writer_free() removes the copy if it was not renamed, and
 * its LMDB lock file, and closes `lock_fd` (a lock on the file replaced, or
 * -1). The file a reader has open is then never written. */
void ss__writer_publish(ss_writer *w, char *final, int lock_fd);

/* The examples the sections written through `w` number: for a writer from
 * ss_sections_writer_open(w, path) of a dataset, the dataset's count (from
 * its manifest); of a store, ss_writer_count(w). 0 or as the manifest read. */
int ss__sections_count(uint64_t *count, const char *path, const ss_writer *w);

/* 1 for a dataset under a URL (its shards are downloaded: ss_prefetch()
 * helps), 0 for anything else and NULL. */
int ss__store_remote(const ss_store *s);

#endif
