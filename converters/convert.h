/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * convert.h - the converter framework of the seqstore command line.
 *
 * `seqstore convert KIND INPUT... -o STORE [options]` turns source files into
 * a store. The framework (convert.c) owns everything that is the same for
 * every KIND: the common options, creating / appending to / resuming the
 * store, provenance, bad-input handling (--skip-bad), progress, the summary
 * line and the exit code. A converter only parses its inputs and calls the
 * helpers below.
 *
 * A converter's life:
 *
 *     static int run(ss_conv *c, int argc, char **argv)
 *     {
 *         // argv[0] is the KIND; the common options are already removed.
 *         // parse own options; on a usage error: return ss__conv_usage_error(c, "...");
 *         uint32_t src = ss__conv_add_source(c, path);          // each input file
 *         uint64_t skip;
 *         if (ss__conv_begin(c, &schema, &skip)) return 1;      // creates/appends/resumes
 *         for each example e (in a deterministic order):
 *             if (bad) { if (ss__conv_bad(c, path, line, "what")) return 1; continue; }
 *             if (skip) { skip--; continue; }                  // --resume
 *             if (ss__conv_append(c, values, src, line)) return 1;
 *             ss__conv_progress(c, bytes_consumed);
 *         return 0;                                            // framework finishes
 *     }
 *
 * Exit codes of `seqstore convert`: 0 ok, 1 runtime error (bad input, I/O,
 * schema mismatch), 2 usage error. Every message goes to stderr as
 * "seqstore convert: <message>"; bad input as "seqstore convert: FILE:LINE: what".
 *
 * Provenance. Every store written by a converter gets, after the converter's
 * own fields, a fixed field `source` (u64, dims {2}) holding for each example
 * (source file number, line or record number), both 1-based; and these
 * attributes (all SS_ATTR_TEXT):
 *   source.files       the input paths, one per line; file number k is line k
 *                      (an --append adds lines; numbers continue)
 *   convert.converter  the KIND ("text", "idx", ...)
 *   convert.options    the command line after "convert", one argument per line
 *                      (each --append run adds its own block after a blank line)
 *   convert.version    ss_version() of the library that wrote the store
 *
 * Interruption: a killed conversion leaves the store incomplete (readers refuse
 * it) with every committed example intact; a killed --append leaves the store
 * readable as it was before the append, the appended part pending. `--resume`
 * (or `--append --resume`) continues either after its last committed example:
 * the converter re-reads its inputs in the same order and skips the `skip`
 * examples ss__conv_begin() reports (for an append only those appended), so
 * the result is identical, attributes included, to an uninterrupted run.
 * `--force` restarts a create from scratch instead.
 *
 * What resume checks (resume.h): from its first commit the store holds a
 * resume record: the KIND, the examples before this conversion, the
 * arguments that can change the store, and each input's (and each
 * ss__conv_add_checked() file's) path, size and modification time. --resume
 * refuses another converter, option, input or changed file, naming the first
 * difference, and leaves the store as it was; standard input and pipes
 * cannot be resumed (never advised). convert.options of a resumed store is
 * the interrupted run's line. Inputs at and after the one whose bad input
 * stopped a run may change (that is the fix being made).
 */
#ifndef SS_CONVERT_H
#define SS_CONVERT_H

#include "seqstore.h"

#include <stdint.h>
#include <stdio.h>

/** The state of one `seqstore convert` run; owned by the framework. */
typedef struct ss_conv ss_conv;

/** One kind of converter (`seqstore convert KIND`). */
typedef struct ss_converter {
    const char *kind;    /**< the KIND on the command line, e.g. "text" */
    const char *summary; /**< one line for `seqstore convert --help` */
    /** Convert. argv[0] is KIND; argv[1..argc) are the converter's own options
     *  and inputs (the common options are removed). Return 0 on success (the
     *  framework then finishes the store), 1 on a runtime error, 2 on a usage
     *  error. Helpers below print their own messages. */
    int (*run)(ss_conv *c, int argc, char **argv);
    /** Print the converter's usage (its own options and inputs) to `out`. */
    void (*usage)(FILE *out);
} ss_converter;

/* The converters, each defined in converters/convert_<kind>.c. */
extern const ss_converter ss__converter_lines, ss__converter_text, ss__converter_parallel;
extern const ss_converter ss__converter_idx, ss__converter_npy, ss__converter_edf;
extern const ss_converter ss__converter_jsonl, ss__converter_megatron;
extern const ss_converter ss__converter_audio, ss__converter_biosig;

/** Table of all converters, NULL-terminated (defined in registry.c). */
extern const ss_converter *const ss__converters[];

/** `seqstore convert KIND ...` (cli/cmd_convert.c) and its framework.
 *  Common options (anywhere after KIND; `--` ends option parsing):
 *    -o, --output STORE   the store to write (required)
 *    --force              replace an existing STORE
 *    --append             add to an existing STORE of the same schema
 *    --resume             continue an interrupted conversion or --append into
 *                         STORE (with --append: the same)
 *    --skip-bad           skip bad records/files, list them at the end
 *    --quiet              no progress, no summary
 *    --threads N          decoding threads (default: online CPUs, at most 8)
 *    --shard K/N          write only shard K (0-based) of N (ss__conv_in_shard_at());
 *                         excludes --append; --resume continues the shard
 *    --index-by FIELD[,FIELD...] --index-resolution R [--index-name NAME]
 *                         also store a bucket index ss.bucket.NAME
 *                         (the same bytes as `seqstore index STORE --by
 *                         FIELDS --resolution R --name NAME`; NAME defaults
 *                         to the FIELDS text); handled by the framework
 *    -h, --help           usage of KIND
 *  Bucket indices: the index asked for is built after the store is finished,
 *  from the whole store (old examples too with --append or --resume). With
 *  --append every bucket index the store already had (ss.bucket.*) is
 *  rebuilt as well, with its own keys and resolution, since the new examples
 *  make it stale. The indices are written in their own transaction after the
 *  examples: if that fails the store is complete, its indices stale or
 *  missing, and `seqstore index` rebuilds them.
 *  The command exits 0, 1 or 2. */

/* ------------------------------------------------------- common options */

/** The common options, read-only for converters. */
typedef struct ss_conv_options {
    const char *output; /**< -o STORE */
    int force, append, resume, skip_bad, quiet;
    int threads; /**< >= 1 */
} ss_conv_options;

/* --shard K/N slices the inputs by bytes. The sliced inputs' bytes, taken
 * in input order, are T in all; shard k owns the global byte range
 * [floor(k*T/N), floor((k+1)*T/N)) (the last shard also any byte past T). An
 * example belongs to the shard owning its first byte: byte `byte` of input
 * `source` is global byte base_source + byte. So shards 0..N-1, in order, hold
 * every example once and in the single-process order, for any N, provided a
 * converter's examples come in input order with non-decreasing `byte` within
 * an input. ss__conv_append() passes byte 0 (whole files); a converter that
 * cuts one large input at record boundaries passes the record's (or its
 * block's) first byte to ss__conv_append_at(); blocks are then cut at the
 * shard's byte bounds too (the text engine's ss__tx_split_shard()), so that the
 * shards are even whatever the block size. Without --shard everything is in
 * the shard. */

/** 1 if an example starting at byte `byte` of input `source` (an
 *  ss__conv_add_source() number) is in this shard, else 0. An input that is
 *  not a regular file and has no ss__conv_shard_size() gives 0 (and
 *  ss__conv_begin() fails naming it). Cheap after the first call; call it
 *  after every ss__conv_add_source() and ss__conv_shard_size(). */
int ss__conv_in_shard_at(ss_conv *c, uint32_t source, uint64_t byte);

/** ss__conv_in_shard_at(c, source, 0): whole-file slicing. ss__conv_append()
 *  drops the examples of other shards' inputs and ss__conv_bad() ignores
 *  their bad records, so a whole-file converter needs no change to be
 *  sharded; calling this to skip other shards' inputs only saves time. A
 *  converter whose ids depend on all inputs (a vocabulary built by counting)
 *  must still count every input: then every shard builds the same
 *  vocabulary, identical to a single-process conversion's. */
int ss__conv_in_shard(ss_conv *c, uint32_t source);

/** --shard K/N as given: *n = 0 without --shard. */
void ss__conv_shard_spec(const ss_conv *c, uint32_t *k, uint32_t *n);

/** The converter's output is a plain file, not a store (`--count-only`):
 *  the run succeeds without ss__conv_begin(). */
void ss__conv_no_store(ss_conv *c);

/** The bytes [*lo, *hi) of input `source` whose examples this shard keeps
 *  (*hi may be UINT64_MAX); returns 0 when it keeps none of it (then the
 *  range is empty), 1 otherwise (always 1 without --shard). */
int ss__conv_shard_range(ss_conv *c, uint32_t source, uint64_t *lo, uint64_t *hi);

/** Give input `source`'s size in the slicing instead of its file size: the
 *  size of its decompressed bytes (a .gz input), or 0 for an input whose
 *  examples are located by another's bytes (the target side of a parallel
 *  corpus, a label file). Before ss__conv_begin(). @return 0, or 1 (error
 *  printed). */
int ss__conv_shard_size(ss_conv *c, uint32_t source, uint64_t size);

/** The converter reports bad records only for the bytes it keeps (by
 *  ss__conv_in_shard_at()), so ss__conv_bad() must not drop them by file. */
void ss__conv_shard_self(ss_conv *c);

/** The parsed common options of this run. */
const ss_conv_options *ss__conv_opts(const ss_conv *c);

/* ------------------------------------------------------------- messages */

/** Print "seqstore convert: <message>" and return 1 (for `return ss__conv_error(...)`). */
int ss__conv_error(ss_conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Print "seqstore convert: <message>: <ss_error_message()>" for a failed
 *  seqstore call and return 1. */
int ss__conv_ss_error(ss_conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Print "seqstore convert KIND: <message>" plus a hint to use --help, and
 *  return 2 (usage error). */
int ss__conv_usage_error(ss_conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Report bad input at `file`:`location` (a line or record number, 1-based;
 *  0 = the whole file; put byte offsets into the message).
 *  With --skip-bad: records "FILE:LOCATION: what" for the final list and
 *  returns 0 (the caller skips the record and continues).
 *  Without: prints "seqstore convert: FILE:LOCATION: what" and returns 1; the
 *  framework then commits what was appended so far and leaves the store
 *  incomplete (resumable after the input is fixed). */
int ss__conv_bad(ss_conv *c, const char *file, uint64_t location, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ------------------------------------------------------------ the store */

/** Register input file `path` (copied) and return its number in this run
 *  (0, 1, 2...), to pass to ss__conv_append(). Call it for every input, in a
 *  deterministic order, before ss__conv_begin(). */
uint32_t ss__conv_add_source(ss_conv *c, const char *path);

/** Register a file the conversion reads besides its inputs and whose bytes
 *  shape the store (e.g. a vocabulary file): `--resume` refuses to continue
 *  when it changed (size or modification time). Call it before
 *  ss__conv_begin(). The output STORE itself is ignored. */
void ss__conv_add_checked(ss_conv *c, const char *path);

/** Open the output STORE read-only if it exists (for --append / --resume: to
 *  read its attributes, e.g. a vocabulary, before choosing a schema).
 *  @param[out] out the store (close it with ss_close()), or NULL when it does
 *  not exist. @return 0 or 1 (error printed). */
int ss__conv_open_existing(ss_conv *c, ss_store **out);

/** Create / append to / resume the store with the converter's `schema`
 *  (the framework adds the `source` field after it).
 *  - default: create; an existing STORE is an error unless --force.
 *  - --append: the existing store's schema must equal this one (a clear
 *    error names the first difference); new examples go after the old ones.
 *  - --resume: continue an interrupted conversion or append (refused when its
 *    resume record shows other inputs or options); a missing STORE is created.
 *  @param[out] skip examples already in the store from this conversion
 *  (non-zero only with --resume; an append's old examples are not counted):
 *  the converter must skip that many of its examples, in order, before
 *  appending.
 *  @return 0, or 1 (error printed). */
int ss__conv_begin(ss_conv *c, const ss_schema *schema, uint64_t *skip);

/** Append one example: `values` has one entry per field of the converter's
 *  schema; `source` is an ss__conv_add_source() number and `location` the
 *  1-based line or record number it came from.
 *  @return 0, or 1 (error printed). */
int ss__conv_append(ss_conv *c, const ss_value *values, uint32_t source, uint64_t location);

/** ss__conv_append() of an example whose first byte in input `source` is
 *  `byte` (see --shard above): with --shard it is dropped unless this shard
 *  owns that byte. @return 0, or 1 (error printed). */
int ss__conv_append_at(ss_conv *c, const ss_value *values, uint32_t source, uint64_t location,
                       uint64_t byte);

/** Run fn(arg) on a thread of its own when --threads > 1, joined before
 *  the command ends, else (or when no thread can be had) now: work whose
 *  result nothing waits for, such as freeing a large input, which then
 *  overlaps the writing of the store. */
void ss__conv_later(ss_conv *c, void *(*fn)(void *), void *arg);

/** Start no thread of the conversion's own (ss__conv_later() then runs its
 *  work at once), whatever --threads says: for a converter that forks
 *  decoding processes, which must come from a process that never had a
 *  second thread (ordered.h). Call it before ss__conv_begin(). */
void ss__conv_one_thread(ss_conv *c);

/** ss__conv_append_at() of n examples of input `source` at once, all with
 *  first byte `byte` (one block of a cut input): field f's values of the n
 *  examples one after the other from data[f], lengths[f][k] rows each for a
 *  sequence field (unused for a fixed one: 1 each), locations[k] the 1-based
 *  line or record number of example k. The store is the one n
 *  ss__conv_append_at() calls write; the examples are copied a field at a
 *  time where they can (ss__writer_append_many()), for converters of many
 *  short examples. @return 0, or 1 (error printed). */
int ss__conv_append_many(ss_conv *c, uint64_t n, const void *const *data,
                         const uint64_t *const *lengths, uint32_t source, const uint64_t *locations,
                         uint64_t byte);

/** Set an attribute on the store (after ss__conv_begin()); the same types as
 *  ss_writer_set_attr(). Names starting with "source." and "convert." are the
 *  framework's. @return 0, or 1 (error printed). */
int ss__conv_set_attr(ss_conv *c, const char *name, uint32_t type, const void *data, size_t size);

/** The writer (after ss__conv_begin()), for ss_writer_commit() and the like. */
ss_writer *ss__conv_writer(ss_conv *c);

/* ------------------------------------------------------------- progress */

/** Declare the total input size in bytes (for the ETA); 0 = unknown. */
void ss__conv_set_total(ss_conv *c, uint64_t total_bytes);

/** Account `bytes` of input consumed. Cheap: the clock is looked at only every
 *  few thousand calls and the terminal line redrawn at most ~4 times a second. */
void ss__conv_progress(ss_conv *c, uint64_t bytes);

/** Report that the run left out `n` pieces of input that are no examples
 *  by the converter's rules: `what` (singular, e.g. "blank line") and why
 *  (NULL, or e.g. "--skip-empty"); the summary says "skipped N WHATs
 *  (WHY)". Call it once, at the end of the run; a converter that drops input
 *  only on an option calls it whenever the option is given, with 0 too, so
 *  the summary shows that the option took effect. */
void ss__conv_skipped(ss_conv *c, uint64_t n, const char *what, const char *why);

/* -------------------------------------------------------------- helpers */

/** Parse a decimal unsigned integer option value in [min, max]; on failure
 *  prints a usage error naming `option` and returns 2, else 0. */
int ss__conv_parse_u64(ss_conv *c, const char *option, const char *text, uint64_t min, uint64_t max,
                       uint64_t *out);

/** Size of the file at `path` in bytes, or 0 if it cannot be stat()ed. */
uint64_t ss__conv_file_size(const char *path);
/* Tell the command running this conversion that the store at `path` is about
 * to be opened or written (before it is), so that the lock file it may leave
 * goes when the command ends. */
void ss__conv_note_store(ss_conv *c, const char *path);

#endif /* SS_CONVERT_H */
