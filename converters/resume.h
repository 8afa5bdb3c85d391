/* SPDX-License-Identifier: BSD-2-Clause */
/* resume.h - what `seqstore convert --resume` checks before it continues.
 *
 * A conversion stores a resume record in the store with every intermediate
 * commit (ss__writer_set_resume_record; removed when the store is finished):
 * the KIND, the number of examples the store held before this conversion
 * (0 for a create, the old count for an --append), the arguments after
 * "convert" (without --quiet/--threads: they cannot change the store), and
 * each input's path, size and modification time. `--resume` decodes it and
 * refuses to continue with other inputs or other options (the examples it
 * would skip are the interrupted run's, so anything that changes them would
 * silently mix two conversions). The record is text, one "key<TAB>value"
 * per line:
 *
 *     seqstore-resume<TAB>1
 *     kind<TAB>text
 *     base<TAB>69309
 *     stopped<TAB>0        (1-based input at which bad input stopped the run)
 *     arg<TAB>--tokens     (one per argument, in order)
 *     input<TAB>SIZE<TAB>MTIME_S<TAB>MTIME_NS<TAB>PATH   (SIZE -1: not a regular file; -2: no such
 *                                                        file: a name such as a Megatron PREFIX,
 *                                                        whose files follow as `file` lines)
 *     file<TAB>SIZE<TAB>MTIME_S<TAB>MTIME_NS<TAB>PATH    (another file read, e.g. --vocab)
 *
 * In arguments and paths '\\', newline and tab are written "\\\\", "\\n", "\\t".
 * A store's record is input like any other: decoding checks every field.
 */
#ifndef SS_RESUME_H
#define SS_RESUME_H

#include <stddef.h>
#include <stdint.h>

typedef struct ss_resume_input {
    const char *path;
    int64_t size; /* -1: not a regular file (stdin, a pipe) or not readable */
    int64_t mtime_s, mtime_ns;
} ss_resume_input;

typedef struct ss_resume_rec {
    const char *kind;
    uint64_t base;
    uint32_t stopped;
    const char **args;
    uint32_t nargs;
    ss_resume_input *inputs;
    uint32_t ninputs;
    ss_resume_input *files; /* other files the conversion reads (a vocabulary) */
    uint32_t nfiles;
    char *buf; /* decode: the strings point into it */
} ss_resume_rec;

/* The state of `paths` now (stat()). @return 0, or -1 out of memory. */
int ss__resume_stat(ss_resume_input **out, char *const *paths, uint32_t n);

/* Encode `r` (malloc'ed text, *len bytes); NULL when out of memory. */
char *ss__resume_encode(const ss_resume_rec *r, size_t *len);

/* Decode a record into `r` (free with ss__resume_rec_free).
 * @return 0, or -1 when it is not a valid record (message in msg). */
int ss__resume_decode(ss_resume_rec *r, const void *data, size_t len, char *msg, size_t n);
void ss__resume_rec_free(ss_resume_rec *r);

/* Does this run (`now`) continue the interrupted one (`old`)? Inputs at or
 * after old->stopped may have changed (the bad input being fixed).
 * @return 0, or -1 with the first difference in msg (no prefix). */
int ss__resume_check(const ss_resume_rec *old, const ss_resume_rec *now, char *msg, size_t n);

#endif
