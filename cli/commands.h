/* SPDX-License-Identifier: BSD-2-Clause */
/* commands.h - the subcommands of the seqstore command line.
 *
 * Each command is `int ss_cmd_NAME(int argc, char **argv)` with argv[0] the
 * command's name, returning the process exit code:
 *   0 success, 1 runtime error (I/O, bad input, incomplete or bad store),
 *   2 usage error, 3 `verify` found corruption.
 * Messages go to stderr as "seqstore NAME: message". */
#ifndef SS_COMMANDS_H
#define SS_COMMANDS_H

#include "numbers.h"
#include "seqstore.h"

#include <jansson.h>
#include <stdio.h>

enum { SS_EXIT_OK = 0, SS_EXIT_ERROR = 1, SS_EXIT_USAGE = 2, SS_EXIT_CORRUPT = 3 };

int ss__cmd_convert(int argc, char **argv);
int ss__cmd_info(int argc, char **argv);
int ss__cmd_verify(int argc, char **argv);
int ss__cmd_cat(int argc, char **argv);
int ss__cmd_split(int argc, char **argv);
int ss__cmd_index(int argc, char **argv);
int ss__cmd_index_samples(int argc, char **argv); /* index STORE --samples L ... */
int ss__cmd_bench(int argc, char **argv);
int ss__cmd_attr(int argc, char **argv);
int ss__cmd_export(int argc, char **argv);
int ss__cmd_export_megatron(int argc, char **argv); /* argv[1] is "megatron" */
int ss__cmd_dataset(int argc, char **argv);
int ss__cmd_dataset_remote(int argc, char **argv); /* argv[0] is "push" or "pull" */
int ss__cmd_merge(int argc, char **argv);

/* Print "seqstore CMD: message: ss_error_message()" and return SS_EXIT_ERROR. */
int ss__cli_store_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2,
                                                                                     3)));
/* Print "seqstore CMD: message" and a --help hint; return SS_EXIT_USAGE. */
int ss__cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2,
                                                                                     3)));
/* Parse a range of examples against n: "A:B" (half-open; negative bounds
 * count from the end, either end may be omitted) or "A" (one example).
 * No value of A or B can overflow. @return 0, or -1 if malformed or outside [0, n]. */
int ss__cli_parse_range(const char *text, uint64_t n, uint64_t *a, uint64_t *b);
/* ss__parse_u64 for option `option` of command `cmd`; on a bad value print
 * "seqstore CMD: OPTION needs an integer in [MIN, MAX], not 'TEXT'" and
 * return SS_EXIT_USAGE. */
int ss__cli_number(const char *cmd, const char *option, const char *text, uint64_t min,
                   uint64_t max,
                   uint64_t *out);
/* After getopt_long (called with opterr = 0 and an optstring starting with
 * ':') returned '?' or ':' as c: one usage message naming the option. */
int ss__cli_bad_option(const char *cmd, int c, char **argv);
/* Note that this command uses the store at `path` (before it opens it or a
 * writer on it): if `path`-lock does not exist yet, it is removed when the
 * command ends, provided no process uses it then (see cli_locks.c). ss__cli_open
 * calls it; commands that open a writer first call it themselves. */
void ss__cli_note_store(const char *path, unsigned flags);
/** Record STORE-lock as one to remove at the end like those
 *  ss__cli_note_store() records, although it was there before: the lock file
 *  of a dead writer, left behind (`convert --resume`, holding the writer's
 *  lock). [in] path: the store; copied. */
void ss__cli_note_leftover(const char *path);
/** Remove the lock files ss__cli_note_store() recorded that no process uses
 *  (cli_locks.c); main() calls it when the command ends. */
void ss__cli_drop_locks(void);
/* Look up attribute `name` of `s` where the store may lack it (a vocabulary,
 * the source files): *found is 1 and *out set when it is there, 0 when the
 * store has none. Any other failure, a checksum mismatch above all, is never
 * taken for absence: it is printed ("seqstore CMD: STORE: attribute 'NAME':
 * checksum mismatch") and SS_EXIT_ERROR returned; else 0. */
int ss__cli_attr_find(ss_attr *out, int *found, const char *cmd, const ss_store *s,
                      const char *name);
/* Before writing attribute `attr` (shown as `what`, e.g. "split 'a'")
 * without --force: 0 when `s` has none; else prints that it exists (or that
 * it exists but cannot be read, with the reason) and returns SS_EXIT_ERROR. */
int ss__cli_refuse_existing(const char *cmd, const ss_store *s, const char *attr,
                            const char *what);
/* Remove attribute `attr` (shown to the user as `what`, e.g. "split 'a'")
 * from the store at `path`; an absent attribute is an error. Returns the
 * exit code. */
int ss__cli_remove_attr(const char *cmd, const char *path, const char *attr, const char *what);
/* Open a store for a read command, honouring --nolock / --incomplete. */
int ss__cli_open(ss_store **out, const char *cmd, const char *path, unsigned flags);

/* --------------------------------------------- values as text and JSON (cli_json.c) */

/* The value of one element of dtype t at p (any alignment) as a double. */
double ss__cli_element_double(const void *p, ss_dtype t);
double ss__cli_half_to_double(uint16_t h);
/* "text", "bytes" or the dtype name of an attribute type. */
const char *ss__cli_attr_type_name(uint32_t type);
/* Print an attribute's value on one line (after two spaces): text quoted, at
 * most 60 bytes, newlines as '|', control bytes and bytes that are not UTF-8
 * as \xHH; a typed array's first 8 elements; nothing for bytes. */
void ss__cli_print_attr_preview(const ss_attr *a);
/* One element as a JSON number: integers exactly (a u64 above INT64_MAX as a
 * decimal string), floats with 17 significant digits (they read back
 * exactly), NaN and infinities as null. */
json_t *ss__json_element(const void *p, ss_dtype t);
/* Bytes as a JSON string. JSON strings are Unicode: when the bytes are not
 * valid UTF-8, each byte that does not begin a valid sequence becomes U+FFFD
 * and *valid (if not NULL) is set to 0. */
json_t *ss__json_text(const void *data, size_t n, int *valid);
/* Bytes as a base64 (RFC 4648, padded) JSON string. */
json_t *ss__json_base64(const void *data, size_t n);
/* obj[key] = ss__json_text(data); when the bytes are not valid UTF-8, also
 * obj[key + "_base64"] = the exact bytes. The documented rule of every --json. */
void ss__json_set_text(json_t *obj, const char *key, const void *data, size_t n);
/* An attribute as {"name", "type", "bytes", "value"}: text as a string,
 * typed arrays as a list, bytes as "value_base64". */
json_t *ss__json_attr(const ss_attr *a);
/* Print `root` as every --json output is printed: 2-space indent, keys in
 * insertion order, then a newline. */
void ss__json_print(json_t *root);

#endif
