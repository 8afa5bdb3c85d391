/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * seqstore/core.h - part of the public API; include <seqstore.h>, not this file.
 *
 * The base every other part of the API builds on: errors, versions, schemas,
 * stores and writers, ss_get(), attributes, datasets and verification. The
 * conventions every part keeps are written at the top of seqstore.h; the
 * other parts (seqstore/select.h ... seqstore/lm.h) include this file and
 * the parts whose types they use, never seqstore.h, so the headers include
 * each other without a cycle.
 */
#ifndef SEQSTORE_CORE_H
#define SEQSTORE_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) || defined(__CYGWIN__)
#define SS_API
#elif defined(__GNUC__)
#define SS_API __attribute__((visibility("default")))
#else
#define SS_API
#endif

/* ---------------------------------------------------------------- version */

#define SS_VERSION_MAJOR 0
#define SS_VERSION_MINOR 3
#define SS_VERSION_PATCH 0
#define SS_VERSION_STRING "0.3.0"
/** The version of the on-disk format this library writes for new stores and the
 *  newest it reads (it reads versions 1, 2 and 3). Version 2 binds each block's
 *  checksum to its key; version 3 lays index segments out so that a reader
 *  maps them as one flat array. Appending to a store keeps its version
 *  (spec/FORMAT.md §4, §6.2, §11); ss_writer_options.format_version creates
 *  an older one. */
#define SS_FORMAT_VERSION 3

/** The library's version as "MAJOR.MINOR.PATCH" (static storage). It may differ from
 *  SS_VERSION_STRING when a program runs against a newer shared library. */
SS_API const char *ss_version(void);

/* ----------------------------------------------------------------- errors */

/* X(name, value, message). One table: codes and texts never drift apart. */
#define SS_ERROR_TABLE(X)                                                                          \
    X(SS_OK, 0, "success")                                                                         \
    X(SS_EINVAL, -1, "invalid argument")                                                           \
    X(SS_ENOTFOUND, -2, "not found")                                                               \
    X(SS_ENOTSTORE, -3, "not a seqstore store")                                                    \
    X(SS_EVERSION, -4, "unsupported format version")                                               \
    X(SS_ECORRUPT, -5, "store is corrupt")                                                         \
    X(SS_EINCOMPLETE, -6, "store is incomplete")                                                   \
    X(SS_EIO, -7, "input/output error")                                                            \
    X(SS_ENOMEM, -8, "out of memory")                                                              \
    X(SS_EEXIST, -9, "file exists")                                                                \
    X(SS_ESCHEMA, -10, "schema mismatch")                                                          \
    X(SS_ETOOBIG, -11, "value too large")                                                          \
    X(SS_ERANGE, -12, "index out of range")                                                        \
    X(SS_ESTATE, -13, "call not valid in the current state")                                       \
    X(SS_EINPUT, -14, "bad input data")                                                            \
    X(SS_ECALLBACK, -15, "a user callback failed")                                                 \
    X(SS_EBUSY, -16, "store is busy")                                                              \
    X(SS_EFULL, -17, "disk full")                                                                  \
    X(SS_ITEROVER, -18, "iteration is over")                                                       \
    X(SS_EBUFS, -19, "buffer too small")

typedef enum ss_error {
#define SS_ERROR_ENUM_(name, value, message) name = value,
    SS_ERROR_TABLE(SS_ERROR_ENUM_)
#undef SS_ERROR_ENUM_
} ss_error;

/** The fixed text of an error code ("store is corrupt"); "unknown error" for an
 *  unknown code. Static storage, never NULL. */
SS_API const char *ss_strerror(int code);

/** The name of an error code as written in this header ("SS_ECORRUPT",
 *  "SS_ITEROVER"), for bindings and logs; "SS_UNKNOWN" for an unknown code.
 *  Static storage, never NULL. */
SS_API const char *ss_error_name(int code);

/** The calling thread's most recent error message, with its context, e.g.
 *  "open 'a.ss': format version 3 is newer than this library's 1". Never NULL
 *  ("" when no error happened yet). Valid until the next seqstore call in the
 *  same thread that fails. */
SS_API const char *ss_error_message(void);

/* ----------------------------------------------------------------- dtypes */

/** Element types. The numeric values are part of the on-disk format. */
typedef enum ss_dtype {
    SS_U8 = 1,
    SS_I8 = 2,
    SS_U16 = 3,
    SS_I16 = 4,
    SS_U32 = 5,
    SS_I32 = 6,
    SS_U64 = 7,
    SS_I64 = 8,
    SS_F16 = 9, /**< IEEE 754 binary16 */
    SS_F32 = 10,
    SS_F64 = 11,
    SS_BF16 = 12 /**< bfloat16 */
} ss_dtype;

/** Size of one element of `dtype` in bytes; 0 for an unknown dtype. */
SS_API size_t ss_dtype_size(ss_dtype dtype);
/** Lower-case name of `dtype` ("u16", "f32"); NULL for an unknown dtype. */
SS_API const char *ss_dtype_name(ss_dtype dtype);
/** Parse a dtype name as printed by ss_dtype_name().
 *  @param[out] out the dtype.  @return 0, or SS_EINVAL for an unknown name. */
SS_API int ss_dtype_parse(ss_dtype *out, const char *name);

/** Which member holds a scalar option given three ways (pads and <eos>
 *  values): a double holds every integer only up to 2^53, so integer
 *  values of int64 and uint64 elements are given as integers. Whatever the
 *  kind, the value must have an exact element of the output dtype (an
 *  integer in range for integer dtypes; for float dtypes an integer that
 *  converts exactly, or any double, rounded to nearest) or the call that
 *  receives it fails with SS_EINVAL. */
typedef enum ss_value_kind {
    SS_VALUE_F64 = 0, /**< the double member (the INIT default) */
    SS_VALUE_I64 = 1, /**< the int64_t member */
    SS_VALUE_U64 = 2  /**< the uint64_t member */
} ss_value_kind;

/* ----------------------------------------------------------------- schema */

#define SS_MAX_DIMS 4        /**< most trailing (feature) dimensions per field */
#define SS_MAX_FIELDS 64     /**< most fields per store */
#define SS_MAX_NAME 47       /**< longest field name in bytes */
#define SS_MAX_ATTR_NAME 255 /**< longest attribute name in bytes */

/** One field of every example.
 *
 *  A sequence field (`sequence` = 1) holds, per example, `length` time steps
 *  of a fixed row shape `dims[0..ndim)`: the example is the row-major array
 *  [length][dims...]. A fixed field (`sequence` = 0) holds exactly one row per
 *  example (a label, a fixed-size vector). `ndim` = 0 means a row is one
 *  scalar. */
typedef struct ss_field {
    const char *name;           /**< 1..SS_MAX_NAME bytes, unique in the schema */
    ss_dtype dtype;             /**< element type (SS_U8 ...) */
    int sequence;               /**< 1: per-example length along time; 0: one row */
    uint32_t ndim;              /**< number of trailing dimensions, 0..SS_MAX_DIMS */
    uint64_t dims[SS_MAX_DIMS]; /**< trailing shape; dims[k] >= 1 for k < ndim */
} ss_field;

/** The fields of a store, in order. */
typedef struct ss_schema {
    uint32_t nfields;       /**< 1..SS_MAX_FIELDS */
    const ss_field *fields; /**< `nfields` fields; example values follow this order */
} ss_schema;

/* ----------------------------------------------------------------- writer */

typedef struct ss_writer ss_writer;

/** Writer flags (ss_writer_options.flags). */
enum {
    SS_WRITE_FORCE = 1u << 0,  /**< create: replace an existing file */
    SS_WRITE_RESUME = 1u << 1, /**< open: continue an interrupted write after its
                                    last committed example */
    SS_WRITE_NOSYNC = 1u << 2  /**< do not fsync at intermediate commits, only start
                                    their write-back (the final commit of
                                    ss_writer_finish always syncs, all pages before
                                    the one that marks the store complete) */
};

typedef struct ss_writer_options {
    unsigned version;      /**< SS_WRITER_OPTIONS_VERSION */
    unsigned flags;        /**< SS_WRITE_... */
    uint32_t chunk_pages;  /**< data chunk size in 4096-byte pages; 0 = 256 (1 MiB) */
    uint64_t commit_bytes; /**< commit a transaction once this many bytes of full
                                chunks are waiting (so at least one chunk per commit);
                                0 = 64 MiB. Bounds the writer's memory. */
    uint64_t map_bytes;    /**< initial LMDB map size; 0 = 1 GiB. The map grows by
                                itself when full, so this only tunes. */
    /* version 2: */
    uint32_t format_version; /**< format version of a created store: 0 = SS_FORMAT_VERSION;
                                  2 for readers of seqstore 0.1 (spec/FORMAT.md §11).
                                  Appending keeps a store's own version. */
} ss_writer_options;

#define SS_WRITER_OPTIONS_VERSION 2
#define SS_WRITER_OPTIONS_INIT                                                                     \
    { SS_WRITER_OPTIONS_VERSION, 0, 0, 0, 0, 0 }
/** Fill `out` with SS_WRITER_OPTIONS_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_WRITER_OPTIONS_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_writer_options_init(ss_writer_options *out, unsigned version);

/** Create a new store at `path` (one file, plus `path`-lock while open), in
 *  format version SS_FORMAT_VERSION.
 *
 *  The store is marked incomplete until ss_writer_finish() succeeds; readers
 *  refuse it until then.
 *  @param[out] out     the writer; free it with ss_writer_free().
 *  @param[in]  path    file to create.
 *  @param[in]  schema  fields of every example (copied).
 *  @param[in]  options NULL for defaults.
 *  A process may not read and write the same file at once (LMDB's locks are
 *  per process): a writer's file cannot be opened by ss_open() in the same
 *  process and vice versa (SS_EBUSY). Other processes may read meanwhile.
 *  @return 0; SS_EEXIST if `path` exists and SS_WRITE_FORCE is not set;
 *          SS_EINVAL for a bad schema (the message names the field), an
 *          empty path, an unknown options version or a too large
 *          chunk_pages; SS_EBUSY (see above); SS_ENOMEM; SS_EFULL (disk
 *          full); SS_EIO on a file system error. */
SS_API int ss_writer_create(ss_writer **out, const char *path, const ss_schema *schema,
                            const ss_writer_options *options);

/** Reopen an existing store for writing.
 *  @param[out] out     the writer; free it with ss_writer_free().
 *  @param[in]  path    an existing store file.
 *  @param[in]  options NULL for defaults; `flags` may hold SS_WRITE_RESUME.
 *
 *  Without SS_WRITE_RESUME: append to a finished store; readers that are
 *  already open keep seeing their snapshot, readers opened after
 *  ss_writer_finish() see the new examples. With SS_WRITE_RESUME: continue
 *  an interrupted create or append after its last committed example
 *  (ss_writer_count() says how many are there). The store keeps its format
 *  version: a version-1 store gets version-1 blocks.
 *  @param[in] schema if not NULL, must equal the store's schema, else SS_ESCHEMA.
 *  @return 0; SS_ENOTFOUND (no such file); SS_ENOTSTORE, SS_EVERSION,
 *          SS_ECORRUPT as for ss_open(); SS_EINCOMPLETE if the store's
 *          creation never finished and SS_WRITE_RESUME is not set;
 *          SS_ESCHEMA; SS_EINVAL (empty path, unknown options version);
 *          SS_EBUSY (the file is open in this process, see
 *          ss_writer_create()); SS_ENOMEM; SS_EFULL; SS_EIO. The header (or
 *          with SS_WRITE_RESUME the progress record) is checked as by
 *          ss_open(), its counts against the file's size included. */
SS_API int ss_writer_open(ss_writer **out, const char *path, const ss_schema *schema,
                          const ss_writer_options *options);

/** One field's value of one example, for ss_writer_append(). */
typedef struct ss_value {
    const void *data; /**< length rows of the field's row shape, row-major;
                           may be NULL when length is 0 */
    uint64_t length;  /**< time steps; must be 1 for a fixed field */
} ss_value;

/** Append one example: `values[k]` is field k's value (schema order).
 *  The bytes are copied; the caller may reuse its buffers at once. May commit
 *  by itself (every commit_bytes), so it can also fail as ss_writer_commit().
 *  @param[in] w      the writer.
 *  @param[in] values one value per field of the schema, in schema order.
 *  @return 0; SS_EINVAL (a fixed field with length != 1, data NULL with
 *          length > 0; the message names the field); SS_ETOOBIG if one value
 *          exceeds the largest LMDB value (about 4 GiB); SS_ESTATE (the
 *          writer is finished or broken); SS_ENOMEM; SS_EFULL; SS_EIO. SS_EINVAL,
 *          SS_ESTATE and an SS_ETOOBIG that names the field append nothing
 *          and leave the writer usable; after any other error the writer is
 *          broken (every later call is SS_ESTATE): free it; what was
 *          committed stays. */
SS_API int ss_writer_append(ss_writer *w, const ss_value *values);

/** Open a writer for the SDK sections (ss.* attributes: splits, bucket
 *  indices) of `path`, which is a store or a dataset (spec/FORMAT.md §13.1).
 *  For a store: ss_writer_open(path, NULL, NULL), an append of no examples.
 *  For a dataset (a directory holding dataset.manifest, or the manifest):
 *  its sections store DIR/dataset.sections.ss, whose ss.* attributes number
 *  the whole dataset's examples and which ss_open() of the dataset shows as
 *  its own. Set attributes with ss_writer_set_attr() (or ss_split_set()),
 *  then ss_writer_finish() and ss_writer_free(). Writing a store creates
 *  LMDB's lock file next to it. A dataset's sections store is never written
 *  in place, since its readers use no lock file: the writer holds an
 *  exclusive lock (flock) on DIR/dataset.sections.ss, so writers take turns,
 *  writes a copy DIR/.dataset.sections.ss.PID.tmp, and ss_writer_finish()
 *  renames it over the store; a reader that has the dataset open keeps
 *  reading the file it opened, unchanged. ss_writer_free() removes an
 *  unfinished copy and the copy's lock file.
 *  @param[out] out the writer.
 *  @param[in]  path a store or a dataset.
 *  @return 0; SS_ENOTFOUND (a dataset built without a sections store: run
 *          `seqstore dataset build` again); SS_EINVAL (NULL argument);
 *          SS_EIO, SS_EFULL (the lock or the copy failed); as
 *          ss_writer_open(). ss_writer_finish() also returns SS_EIO when
 *          the rename fails. */
SS_API int ss_sections_writer_open(ss_writer **out, const char *path);

/** Set (or replace) an attribute. Written at the next commit or finish.
 *  An attribute set after ss_writer_finish() is never written (and no error
 *  is returned).
 *  @param[in] w    the writer.
 *  @param[in] name 1..SS_MAX_ATTR_NAME bytes, NUL-terminated (copied).
 *  @param[in] type an ss_dtype for a typed array, or SS_ATTR_TEXT /
 *                  SS_ATTR_BYTES.
 *  @param[in] data `size` bytes (copied at once); may be NULL if size is 0.
 *  @param[in] size in bytes.
 *  @return 0; SS_EINVAL (an empty or too long name, an unknown type, NULL
 *          data with size > 0); SS_ETOOBIG (size beyond LMDB's value
 *          limit); SS_ESTATE (the writer is finished or broken); SS_ENOMEM. */
SS_API int ss_writer_set_attr(ss_writer *w, const char *name, uint32_t type, const void *data,
                              size_t size);

/** Remove an attribute (stored or set earlier through this writer) when the
 *  writer finishes; a later ss_writer_set_attr() of the same name sets it
 *  again. Removing an attribute the store does not have is not an error.
 *  @param[in] w    the writer.
 *  @param[in] name as for ss_writer_set_attr().
 *  @return 0; SS_EINVAL (NULL argument, an empty or too long name);
 *          SS_ESTATE (the writer is finished or broken); SS_ENOMEM. */
SS_API int ss_writer_remove_attr(ss_writer *w, const char *name);

/** Commit everything appended so far in one LMDB transaction. A writer killed
 *  later can be resumed from here (SS_WRITE_RESUME). The writer commits by
 *  itself every commit_bytes; call this to force a commit point.
 *  @return 0; SS_ESTATE (the writer is finished or broken); SS_ETOOBIG (a
 *          value exceeds LMDB's limit); SS_ENOMEM; SS_EFULL (the disk is full:
 *          "disk full (No space left on device): ... the store is left
 *          incomplete", or "the append" for an append; what was committed
 *          stays and can be resumed); SS_EIO (or another code mapped from
 *          LMDB). After an error the writer is broken: free it. */
SS_API int ss_writer_commit(ss_writer *w);

/** Number of examples in the store including those appended by this writer
 *  (committed or not); 0 for NULL. */
SS_API uint64_t ss_writer_count(const ss_writer *w);

/** Commit the rest and mark the store complete (one durable transaction).
 *  After it, only ss_writer_free() is useful (other calls give SS_ESTATE).
 *  @return 0, or as ss_writer_commit(); after an error the store keeps its
 *          last committed state and the writer is broken: free it. */
SS_API int ss_writer_finish(ss_writer *w);

/** Close the writer. Without a successful ss_writer_finish() the examples
 *  since the last commit are discarded and the store stays incomplete (a new
 *  store) or keeps its previous finished state (an append). Accepts NULL. */
SS_API void ss_writer_free(ss_writer *w);

/* ------------------------------------------------------------------ store */

typedef struct ss_store ss_store;

/** Open flags. */
enum {
    SS_OPEN_NOLOCK = 1u << 0,     /**< no lock file (read-only media); the caller
                                       guarantees that no writer is active */
    SS_OPEN_INCOMPLETE = 1u << 1, /**< open an unfinished store's committed prefix */
    SS_OPEN_RANDOM = 1u << 2,     /**< random access: turn off OS read-ahead */
    SS_OPEN_VERIFY = 1u << 3      /**< verify on first touch: the checksum of a data
                                       chunk is checked the first time ss_get() (or
                                       anything built on it) hands out a view into
                                       it, and every index segment at open */
};

/** Open a store read-only.
 *
 *  Opening is lazy: it reads the header, the schema and the chunk tables
 *  (O(chunks), not O(examples)) and touches no example data. It checks the
 *  magic, the format version, the metadata checksum, every count of the
 *  header against what the file can hold (before allocating anything by
 *  it), the chunk and index tables, and reads the attribute names (a damaged
 *  B-tree there is SS_ECORRUPT, not fewer attributes); with SS_OPEN_VERIFY
 *  also the index segments' checksums, which reads the index: O(examples).
 *  Before LMDB reads the file, its meta pages and B-tree pages are checked
 *  (spec/FORMAT.md section 12), so a damaged page is SS_ECORRUPT naming the
 *  page, never a crash. The store reads one
 *  consistent snapshot, taken at open, until ss_close().
 *
 *  Integrity: without SS_OPEN_VERIFY a read trusts the data it maps; only the
 *  header, attributes and the index's bounds are checked, so a damaged data
 *  chunk is returned as it is (ss_verify() finds it). With SS_OPEN_VERIFY,
 *  every index segment's checksum is checked at open (XXH3 over 16 bytes per
 *  example) and each data chunk's the first time a view into it is handed
 *  out (about 0.1 ms per 1 MiB chunk, once per chunk per open store); a
 *  damaged chunk makes that and every later ss_get() into it return
 *  SS_ECORRUPT naming the field and the chunk, while other chunks read
 *  normally. The seqstore CLI always verifies.
 *
 *  Threads and processes: one open store may be read by many threads at
 *  once. Opening the same file several times in one process is fine: the
 *  opens share one LMDB environment (LMDB allows one per file per process),
 *  each with its own snapshot. Another process may append meanwhile: a
 *  reader maps max(1 TiB, 4 x the file size) of address space (read-only,
 *  file-backed: no memory is reserved, only pages read are loaded), so the
 *  file can grow that far under the process's open stores without the map
 *  ever being replaced under them. Should the file outgrow it, a later open
 *  of the same file in this process fails with SS_EBUSY while other handles
 *  of it are open (close them and open again) rather than move the map under
 *  their views. With a limited address space (ulimit -v) the map falls back
 *  to 4 x the file size. Do not carry an open store across fork(); open it
 *  in the child.
 *
 *  Lock file: without SS_OPEN_NOLOCK, LMDB lists the reader in `path`-lock
 *  (created if absent, 64 KiB), whose disk blocks are allocated before LMDB
 *  maps it. On a full file system, when no process has the store open (no
 *  lock file, or none holds it), the store is read without a lock, as with
 *  SS_OPEN_NOLOCK, and no lock file is left; a writer that starts meanwhile
 *  needs the lock file's blocks too, so it fails with SS_EFULL while the
 *  disk stays full. When another process has the store open, SS_EFULL
 *  naming the lock file.
 *
 *  Datasets of shards (spec/FORMAT.md §13): when `path` is a dataset
 *  directory (it holds `dataset.manifest`) or a manifest file, the store
 *  returned is the dataset: its examples are the shards' concatenated in
 *  manifest order, with global indices, and every function of this header
 *  and the SDK works on it unchanged. Opening reads the manifest and the
 *  first shard (for the attributes) only, O(shards); every other shard is
 *  opened, and checked against the manifest (schema, count, rows, header
 *  digest), the first time one of its examples is read, so a missing or
 *  changed shard is reported then, by ss_get() and the like, naming the
 *  shard (SS_ENOTFOUND, SS_ECORRUPT, SS_ESCHEMA), and every later read of
 *  it fails the same way without opening it again (until ss_close()).
 *  ss_verify() checks every shard.
 *
 *  Open shards are budgeted: each holds a file descriptor and two or more
 *  maps, so a dataset keeps at most B shards open, B = the environment
 *  variable SS_MAX_OPEN_SHARDS when set (at least 8), else half the soft
 *  limit of open files (`ulimit -n`; at least 64), read at ss_open(). With
 *  more shards than that, opening one more closes the one opened longest
 *  ago (reopened, and checked again, when read again), shard 0 excepted.
 *  A closed shard stays mapped until B / 4 further shards have been closed,
 *  so with more shards than B a view of a dataset's example (ss_get() and
 *  the like, on any thread) is valid until B / 4 more shards have been
 *  opened, not until ss_close(): copy it first if the reads in between
 *  touch many shards. The collator holds the views of a batch's rows while
 *  it collates them, so B / 4 must exceed the rows collated at once (batch
 *  size times the loader's threads) when they come from that many shards.
 *  Within the budget nothing is closed before ss_close().
 *
 *  Shards are opened read-only without a lock file (SS_OPEN_NOLOCK):
 *  a built dataset has no writer, so it reads from read-only or shared
 *  network storage; SS_OPEN_VERIFY applies to each shard, SS_OPEN_INCOMPLETE
 *  is refused (SS_EINVAL). The attributes are the first shard's except
 *  `source.shard` and the per-shard `ss.*` ones (splits, bucket indices).
 *  @param[out] out   the store; close it with ss_close().
 *  @param[in]  path  the store file, or a dataset directory or manifest.
 *  @param[in]  flags SS_OPEN_... (0 for defaults)
 *  @return 0; SS_ENOTFOUND (no such file); SS_ENOTSTORE ("not a seqstore
 *          store"); SS_EVERSION ("format version 3 is newer than this
 *          library's 2"); SS_ECORRUPT ("metadata checksum mismatch", a header
 *          count larger than the file can hold naming the field, an
 *          inconsistent table, a damaged attribute walk, a damaged LMDB
 *          page); SS_EINCOMPLETE (the writer did not finish; the message says
 *          how many examples are committed); SS_EBUSY (this process has the
 *          file open for writing, or the file outgrew the map shared with
 *          this process's other handles of it); SS_EFULL (the lock file
 *          cannot be allocated while another process has the store open);
 *          SS_EINVAL (NULL out, empty path); SS_ENOMEM; SS_EIO. A directory without a manifest or an
 *          empty file is SS_ENOTSTORE; a damaged manifest SS_ECORRUPT naming
 *          its line, a newer dataset version SS_EVERSION. */
SS_API int ss_open(ss_store **out, const char *path, unsigned flags);

/** Close the store; every view and pointer obtained from it becomes invalid.
 *  Accepts NULL. */
SS_API void ss_close(ss_store *s);

/** Number of examples in the store's snapshot; 0 for NULL. */
SS_API uint64_t ss_count(const ss_store *s);
/** Number of fields; 0 for NULL. */
SS_API uint32_t ss_field_count(const ss_store *s);
/** "No field" wherever a field index is optional (ss_window_options.label_field,
 *  ss_transform.field, ss_verify_problem.field of an attribute). */
#define SS_FIELD_NONE UINT32_MAX

/** Find the field called `name`: the one place where a name becomes an index
 *  (every other function addresses fields by uint32_t index).
 *  @param[out] out the field index (unchanged on failure).
 *  @param[in]  s    the store.
 *  @param[in]  name NUL-terminated field name.
 *  @return 0; SS_ENOTFOUND (no such field; the message names it and the
 *          store); SS_EINVAL (NULL argument). */
SS_API int ss_field_index(uint32_t *out, const ss_store *s, const char *name);
/** Description of field `field`; `out->name` is borrowed from the store,
 *  valid until ss_close().
 *  @param[out] out the description.
 *  @return 0; SS_ERANGE (no such field); SS_EINVAL (NULL argument). */
SS_API int ss_field_info(ss_field *out, const ss_store *s, uint32_t field);
/** Bytes of one row (one time step) of `field`: dtype size times the trailing
 *  shape; 0 for a bad field index. */
SS_API uint64_t ss_field_row_bytes(const ss_store *s, uint32_t field);
/** The store's schema; borrowed, valid until ss_close(); NULL for NULL. */
SS_API const ss_schema *ss_store_schema(const ss_store *s);

/** Where the store's file is mapped, for a caller that maps the same file a
 *  second time (e.g. privately, copy-on-write, so that a stray write through
 *  a view cannot fault or reach the file): the data of every non-empty view
 *  and attribute this store hands out lies in [*base, *base + *size), and the
 *  byte at *base + k is the file's byte at offset k. So p - *base is the file
 *  offset of a view's data p.
 *  @param[out] base the start of LMDB's read-only shared map of the file;
 *                   borrowed, valid until ss_close(); never write through it.
 *  @param[out] size bytes from *base that the file holds now and the map
 *                   covers: at least every page of this store's snapshot.
 *  @param[out] fd   the read-only descriptor LMDB opened the file with
 *                   (mmap() it to map the very file the views come from);
 *                   borrowed: do not close it or change its offset; valid
 *                   until ss_close().
 *  @param[in]  s    the open store.
 *  @return 0; SS_EINVAL (NULL argument; outputs untouched); SS_EIO (the file
 *          cannot be examined); SS_ECORRUPT (the file is now shorter than the
 *          snapshot: it was truncated under the store). */
SS_API int ss_store_map(const void **base, uint64_t *size, int *fd, const ss_store *s);

/** Whether every view `s` hands out (ss_get() and the like) stays valid
 *  until ss_close(): 1 for a store file and for a dataset whose shards all
 *  fit its budget of open shards (see ss_open()); 0 for a dataset with more
 *  shards than that, whose views are valid only until B / 4 further shards
 *  have been opened. A caller that keeps views for an unbounded time (a
 *  binding handing them to a garbage-collected language) copies them when
 *  this is 0.
 *  @param[in] s the open store.
 *  @return 1 or 0; 0 for NULL. */
SS_API int ss_views_stable(const ss_store *s);

/** A borrowed, read-only view of one example's field (or a sub-range of it). */
typedef struct ss_view {
    const void *data;   /**< first row, inside the map; aligned to the dtype size.
                             Valid until ss_close(); never write through it.
                             Not NULL even when length is 0. */
    uint64_t length;    /**< rows (time steps); 1 for a fixed field */
    uint64_t row_bytes; /**< bytes per row */
    ss_dtype dtype;     /**< the field's element type */
} ss_view;

/** View of field `field` of example `index`: O(1), no allocation, no copy.
 *  With SS_OPEN_VERIFY, the first view into a data chunk also hashes the
 *  chunk once (see ss_open()); threads may race to do it, which is harmless.
 *  @param[out] out the view; its data is
 *                  borrowed from the map, valid until ss_close(). Zeroed on
 *                  failure (except for a NULL argument).
 *  @return 0; SS_ERANGE (bad field or index; the message names them);
 *          SS_ECORRUPT if the index points outside its chunk, or with
 *          SS_OPEN_VERIFY if the chunk's checksum does not match (the
 *          message names the field, the chunk and the example); SS_EINVAL
 *          (NULL argument). */
SS_API int ss_get(ss_view *out, const ss_store *s, uint32_t field, uint64_t index);

/* ss_get() called by name compiles to an inline fast path (same results and
 * codes; measured: bench/bench_read). It lives in seqstore/get_inline.h and
 * is not API; define SS_NO_INLINE_GET to always call the exported function. */
#include "get_inline.h"

/** View of time steps [t0, t1) of example `index`, still zero-copy.
 *  @return as ss_get(), plus SS_ERANGE when t0 > t1 or t1 > length. */
SS_API int ss_get_range(ss_view *out, const ss_store *s, uint32_t field, uint64_t index,
                        uint64_t t0, uint64_t t1);

/** Length (time steps) of example `index` in `field`, from the index alone
 *  (no data page is touched); 1 for a fixed field, 0 for a bad argument. */
SS_API uint64_t ss_length(const ss_store *s, uint32_t field, uint64_t index);

/** Copy the lengths of examples [first, first + n) of `field` into `out`
 *  (touches only index pages).
 *  @param[out] out `n` lengths; may be NULL if
 *                  n is 0.
 *  @return 0; SS_ERANGE (bad field, or the range passes the count);
 *          SS_EINVAL (NULL argument); for a dataset also SS_ECORRUPT (its
 *          stored lengths section fails its checksum: an error, not a
 *          reason to ask the shards) and what opening a shard returns. */
SS_API int ss_lengths(uint64_t *out, const ss_store *s, uint32_t field, uint64_t first, uint64_t n);

/** Attribute name prefix of a sequence field's stored lengths: the section
 *  `ss.lengths.FIELD` (spec/FORMAT.md §7.3), written by the writer. */
#define SS_LENGTHS_ATTR_PREFIX "ss.lengths."

/** The stored lengths of sequence field `field`, zero-copy: one typed array
 *  of every example's length (time steps) in example order, the narrowest of
 *  u8/u16/u32/u64 that holds the longest (spec/FORMAT.md §7.3). The writer
 *  writes it when it finishes (ss_writer_finish(), again after every append
 *  or resume); `seqstore dataset build` writes the whole dataset's. No pass
 *  over the index, no allocation; the section's checksum is checked at every
 *  call (like ss_attr_get(), one hash of count × width bytes): call it once
 *  and keep the pointer.
 *  @param[out] data   first length; 8-byte aligned, read-only, inside the map;
 *                     valid until ss_close(s). Element i is example i's length.
 *  @param[out] dtype  SS_U8, SS_U16, SS_U32 or SS_U64.
 *  @param[out] count  elements: ss_count(s).
 *  @param[in]  s      a store or a dataset.
 *  @param[in]  field  a sequence field.
 *  @return 0; SS_ENOTFOUND when the store has no such section (written by a
 *          library before it, or with more examples than one block holds,
 *          or a dataset built before it): then ss_lengths() gives the same
 *          values from the index; SS_EINVAL (NULL argument, fixed field);
 *          SS_ERANGE (no such field); SS_ECORRUPT (checksum mismatch, or a
 *          type or size that is not count lengths). On error *data is NULL
 *          and *count 0. */
SS_API int ss_lengths_view(const void **data, ss_dtype *dtype, uint64_t *count, const ss_store *s,
                           uint32_t field);

/** Sequential scan: copy the rows of examples first, first + 1, ... of
 *  `field` back to back into `buf`, as many whole examples as fit in `cap`
 *  bytes (at most `n`), and their lengths into `lengths`. One pass over the
 *  index and one memcpy per run of examples that lie together in a data
 *  chunk, where a loop of ss_get() and memcpy() pays a call and a copy per
 *  example (for short examples, most of the time). Checks what ss_get()
 *  checks, for every example copied.
 *  @param[out] got     examples copied, 0..n: fewer than n when the next one
 *                      does not fit in what is left of `cap`; 0 on an error.
 *  @param[out] buf     `cap` bytes; example first + k starts at the sum of
 *                      the lengths before it times the row size. May be NULL
 *                      if cap is 0.
 *  @param[out] lengths `n` entries; lengths[0..*got) are the lengths of the
 *                      examples copied, and when *got < n, lengths[*got] is
 *                      the length of the first one that did not fit (so the
 *                      caller can grow `buf`); the entries after those are
 *                      unspecified. May be NULL if n is 0.
 *  @return 0; SS_ERANGE (bad field, or first + n passes the count);
 *          SS_EINVAL (NULL argument); SS_ECORRUPT as ss_get() (then the
 *          contents of buf and lengths are unspecified). */
SS_API int ss_read_examples(uint64_t *got, void *buf, uint64_t *lengths, const ss_store *s,
                            uint32_t field, uint64_t first, uint64_t n, uint64_t cap);

/* ------------------------------------------------------------- flat view */

/** Total rows of `field` over all examples: the length of its flat stream
 *  (all examples concatenated in order); 0 for a bad field. */
SS_API uint64_t ss_flat_size(const ss_store *s, uint32_t field);

/** Map position `pos` of the flat stream to (example, offset within it), in
 *  O(log n). Examples of length 0 are skipped: the example found holds `pos`.
 *  @param[out] example the example holding `pos`.
 *  @param[out] offset  the row of `pos` within that example.
 *  @return 0; SS_ERANGE if pos >= ss_flat_size() or the field is bad;
 *          SS_EINVAL (NULL argument). */
SS_API int ss_flat_locate(uint64_t *example, uint64_t *offset, const ss_store *s, uint32_t field,
                          uint64_t pos);

/** Copy rows [p, q) of the flat stream of `field` into `buf`.
 *  @param[out] buf (q - p) * ss_field_row_bytes() bytes; may be NULL if p == q.
 *  @return 0; SS_ERANGE (bad field, p > q or q > ss_flat_size());
 *          SS_EINVAL (NULL argument); SS_ECORRUPT as ss_get(). */
SS_API int ss_flat_read(void *buf, const ss_store *s, uint32_t field, uint64_t p, uint64_t q);

/* ------------------------------------------------------------- attributes */

/** Attribute types beyond the ss_dtype values (typed arrays). */
enum { SS_ATTR_BYTES = 0, SS_ATTR_TEXT = 100 };

/** A borrowed attribute value. */
typedef struct ss_attr {
    const char *name; /**< NUL-terminated copy owned by the store; valid until
                           ss_close() */
    uint32_t type;    /**< SS_ATTR_TEXT, SS_ATTR_BYTES or an ss_dtype */
    const void *data; /**< inside the map, 8-byte aligned; valid until ss_close().
                           Text is not NUL-terminated: use size. */
    uint64_t size;    /**< bytes */
} ss_attr;

/** Look up attribute `name` (checksum verified). A damaged attribute is
 *  SS_ECORRUPT, never SS_ENOTFOUND: a caller for whom the attribute is
 *  optional must still report it (the message names the store and the
 *  attribute).
 *  @param[out] out the attribute, borrowed from the store. On SS_ECORRUPT
 *                  out->name is still its name (data NULL, size 0).
 *  @return 0; SS_ENOTFOUND; SS_ECORRUPT (checksum mismatch); SS_EINVAL
 *          (NULL argument). */
SS_API int ss_attr_get(ss_attr *out, const ss_store *s, const char *name);

/** Number of attributes; they are sorted by name. 0 for NULL. */
SS_API uint64_t ss_attr_count(const ss_store *s);
/** Attribute number `k` in name order, as ss_attr_get().
 *  @return 0; SS_ERANGE (k >= ss_attr_count()); SS_ECORRUPT; SS_EINVAL. */
SS_API int ss_attr_at(ss_attr *out, const ss_store *s, uint64_t k);

/* ------------------------------------------------------------ store info */

/** Facts about an open store. */
typedef struct ss_store_info {
    uint32_t format_version; /**< the file's format version: 1, 2 (checksums bound to keys) or
                                  3 (index segments mapped as one array) */
    int complete;            /**< 0 when opened with SS_OPEN_INCOMPLETE on an unfinished store */
    uint64_t count;          /**< examples */
    uint64_t file_bytes;     /**< size of the store file */
    uint64_t chunk_bytes;    /**< data chunk payload capacity */
    uint64_t data_chunks;    /**< chunks over all fields */
} ss_store_info;

/** Fill `out` with facts about the store. Of a dataset, every shard is
 *  opened (file_bytes and data_chunks are the shards' sums).
 *  @param[out] out the facts; of a dataset with an unreadable shard, the
 *                  sums over the readable ones.
 *  @return 0, or SS_EINVAL (NULL argument); of a dataset, the error of its
 *          first shard that cannot be opened (SS_ENOTFOUND, SS_ECORRUPT...),
 *          the message counting the unreadable shards and naming the first. */
SS_API int ss_store_get_info(ss_store_info *out, const ss_store *s);

/* ---------------------------------------------------------------- verify */

/** One problem found by ss_verify(); valid only during the callback (`what`
 *  is a static string, `where` is overwritten by the next problem). */
typedef struct ss_verify_problem {
    const char *what;       /**< e.g. "data chunk checksum mismatch" */
    uint32_t field;         /**< field index, or SS_FIELD_NONE for an attribute */
    uint64_t chunk;         /**< data chunk or index segment number (see `what`); for an
                                 attribute, its number in name order */
    uint64_t first_example; /**< first example the block holds */
    uint64_t last_example;  /**< one past the last example it holds (= first: none) */
    const char *where;      /**< the block by name: "field 'tokens' chunk 5",
                                 "index segment 0 of field 'tokens'", "attribute 'note'" */
} ss_verify_problem;

/** Called for every problem; return non-zero to stop verifying. */
typedef int (*ss_verify_fn)(void *ctx, const ss_verify_problem *problem);

/** Check the structure of the file's LMDB B-trees (every page, node and
 *  overflow page header the snapshot reaches), recompute every checksum
 *  (header, index segments, data chunks, attributes) and check the index for
 *  consistency. In a format-version-2 store each
 *  checksum is bound to the block's key, so a block found under another key
 *  (a renamed attribute, a chunk key leading to another chunk) is reported;
 *  version 1 checksums cover the payload only (spec/FORMAT.md §11).
 *  Reads every data page: O(file size).
 *  @param[in] report called per problem, on the calling thread; may be NULL.
 *  @param[in] ctx    passed to `report` unchanged.
 *  @param[out] problems number of problems found; may be NULL.
 *  @return 0 if the store is sound; SS_ECORRUPT if a problem was found (the
 *          message names the first, e.g. the damaged LMDB page); SS_EINVAL
 *          (NULL store); SS_EIO or SS_ENOMEM while checking the B-trees. */
SS_API int ss_verify(uint64_t *problems, const ss_store *s, ss_verify_fn report, void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* SEQSTORE_CORE_H */
