/* SPDX-License-Identifier: BSD-2-Clause */
/* conv_impl.h - the converter framework's state, shared by its files
 * (convert.c, conv_run.c, registry.c, shard.c, conv_store.c, bucket_index.c)
 * and by the `convert` command (cli/cmd_convert.c), which parses the common
 * options into it. A converter sees only convert.h. */
#ifndef SS_CONV_IMPL_H
#define SS_CONV_IMPL_H

#include "convert.h"
#include "internal.h"
#include "resume.h"

#include <pthread.h>


/* The converters' commit size (--commit-bytes): smaller than the writer's
 * 64 MiB so that the write-back each NOSYNC commit starts overlaps the
 * decoding, even of stores of a few tens of MB, and ss_writer_finish's
 * flush finds little left (a 30 MB audio store: its fdatasync went from
 * ~20 ms to 2-10 ms); and small enough that the pages are still in the
 * CPU's caches when LMDB copies them into the page cache. 4 MiB against
 * 8 MiB: BioSig at 2 threads 0.76-0.80x its own read against 0.70-0.79x,
 * FLAC 0.61-0.64x against 0.55-0.57x, `--tokens bytes` 314 against 381 ms
 * (medians of 5-9 runs; 2 MiB was as good for signals, slower for text). */
#define SS_CONV_COMMIT_BYTES (4ull << 20)

/* ss__conv_later() threads at once at most (beyond: the work is done at once). */
#define SS_CONV_LATER 4

/* Bad records listed at the end with --skip-bad; beyond this only counted. */
#define SS_CONV_MAX_LISTED 1000
/* Look at the clock every this many progress/append calls. */
#define SS_CONV_TICK 4096
/* Redraw the progress line at most this often (seconds). */
#define SS_CONV_REDRAW 0.25

/* A bucket index to (re)build once the store is finished. */
typedef struct conv_index {
    char *name;
    uint32_t fields[SS_BUCKET_MAX_KEYS];
    size_t nkeys;
    uint64_t resolution;
} conv_index;

struct ss_conv {
    const ss_converter *conv;
    /* Called with each store the run opens or writes, before it does (the
     * command removes the lock files it leaves); NULL: none. */
    void (*note_store)(const char *path, unsigned flags);
    /* Called with a store whose lock file an earlier, dead writer left (a
     * --resume that holds the writer's lock): the command removes it at its
     * end if no process uses it; NULL: none. */
    void (*note_leftover)(const char *path);
    ss_conv_options opts;
    uint64_t commit_bytes;
    int argc; /* the arguments after "convert", for convert.options */
    char **argv;

    char **sources; /* this run's input paths */
    uint32_t nsources, sources_cap;
    uint32_t source_base; /* files recorded in the store before this run (--append) */
    char *old_files;      /* the store's source.files before this run (--append) */
    char *old_options;    /* its convert.options */
    char *old_converter;  /* its convert.converter */
    char **checked;       /* ss__conv_add_checked() files */
    uint32_t nchecked;

    ss_writer *w;
    int began, writer_broken, bad_input;
    uint32_t nfields; /* the converter's fields; `source` is fields[nfields] */
    ss_field fields[SS_MAX_FIELDS];
    uint64_t row_elems[SS_MAX_FIELDS];
    ss_value values[SS_MAX_FIELDS];
    uint64_t start_count; /* examples in the store when this run began */
    uint64_t base;        /* examples before this conversion (0, or an append's old count) */
    ss_resume_rec old;    /* --resume: the interrupted run's record (old.kind NULL: none) */
    uint32_t bad_source;  /* 1-based input at which bad input stopped the run, or 0 */
    uint64_t kill_after;  /* tests: SIGKILL ourselves after this many appends */
    uint64_t stall_after; /* tests: commit and sleep until killed after this many */
    int writer_lock_fd;   /* the output, flock()ed while this run writes it; or -1 */
    uint64_t *many_src;   /* ss__conv_append_many(): the source field's values */
    uint64_t many_cap;    /* examples many_src holds */
    int old_store_fd;     /* --force, --threads > 1: the replaced store, until freed; or -1 */
    pthread_t later[SS_CONV_LATER]; /* ss__conv_later() threads, joined at the end */
    int nlater;
    int one_thread; /* ss__conv_one_thread(): start no thread */

    /* statistics and progress */
    uint64_t examples, elements, bytes_in, total_bytes;
    unsigned tick;
    int show_progress, drawn;
    double t0, last_draw;

    /* ss__conv_skipped() */
    uint64_t nskipped;
    const char *skipped_what, *skipped_why; /* what NULL: nothing reported */

    /* --skip-bad */
    char **bad;
    uint64_t nbad;

    /* bucket indices built after finishing: --index-by, and with --append the
     * store's existing ones (stale after the append) */
    conv_index *indices;
    uint32_t nindices;
    /* --index-by FIELDS --index-resolution R --index-name NAME (not in
     * ss_conv_options: converters have no use for them) */
    const char *index_by;
    uint64_t index_resolution;
    const char *index_name;

    /* --shard K/N: keep the examples whose first byte lies in the K-th of N
     * equal byte ranges of the sliced inputs taken in order (see convert.h) */
    uint32_t shard_k, shard_n; /* shard_n = 0: no --shard */
    uint64_t *shard_base;      /* per source: offset of its first byte among the sliced
                                  inputs; NULL until computed */
    uint64_t *shard_size;      /* per source: its size in the slicing */
    uint64_t *shard_given;     /* per source: ss__conv_shard_size(), or UINT64_MAX */
    uint32_t shard_given_cap;
    int shard_self;              /* ss__conv_shard_self(): the converter filters bad input */
    int no_store;                /* ss__conv_no_store(): the output is not a store */
    uint64_t shard_lo, shard_hi; /* this shard's byte range [lo, hi) */
    uint64_t shard_skip;         /* --resume: in-shard examples already stored */
};


/* --------------------------------------------- between the framework's files */

double ss__conv_now(void);
void ss__conv_clear_progress(ss_conv *c);
void ss__conv_tick(ss_conv *c);
/* Shards (shard.c). */
int ss__conv_shard_compute(ss_conv *c);
int ss__conv_shard_keeps_path(ss_conv *c, const char *file);
int ss__conv_parse_shard(ss_conv *c, const char *text);
/* The store (conv_store.c). */
int ss__conv_set_resume_record(ss_conv *c);
/* --resume: 1 if the interrupted run was an append (conv_run.c). */
int ss__conv_probe_interrupted_append(ss_conv *c);
/* Bucket indices (bucket_index.c). */
int ss__conv_add_index(ss_conv *c, const char *name, const uint32_t *fields, size_t nkeys,
                       uint64_t resolution);
int ss__conv_collect_indices(ss_conv *c, const ss_store *s);
int ss__conv_resolve_index(ss_conv *c, uint32_t fields[SS_BUCKET_MAX_KEYS], size_t *nkeys);
int ss__conv_build_indices(ss_conv *c);
/* The registry (registry.c): the converter named `kind`, or NULL. */
const ss_converter *ss__conv_find(const char *kind);
void ss__conv_print_kinds(FILE *out);

/* One run (conv_run.c): a framework for converter `conv` with the command's
 * arguments (argv[0] "convert", for convert.options), its defaults set; NULL
 * when out of memory. */
ss_conv *ss__conv_new(const ss_converter *conv, int argc, char **argv);
/* Run the converter on the arguments the common options left, then finish
 * the store or, on failure, abandon it saying how to go on. Returns the exit
 * code. */
int ss__conv_run(ss_conv *c, int nrest, char **rest);
void ss__conv_free(ss_conv *c);

#endif
