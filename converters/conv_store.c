/* SPDX-License-Identifier: BSD-2-Clause */
/* conv_store.c - the store a conversion writes: created, appended to or
 * resumed, checked against the run's schema and options, and appended to. */
#include "conv_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* -------------------------------------------------------------- the store */

/* The store appended to or resumed, if any. Every attribute is checked here,
 * once: the converters then look theirs up as optional (a vocabulary, class
 * names, signal.*), and a damaged one must stop the conversion, naming it,
 * rather than read as absent and be written anew. */
static int open_existing(ss_conv *c, ss_store **out, unsigned flags) {
    *out = NULL;
    int rc = ss_open(out, c->opts.output, flags);
    if (rc == SS_ENOTFOUND) return 0;
    if (rc) return ss__conv_ss_error(c, "cannot open '%s'", c->opts.output);
    for (uint64_t k = 0; k < ss_attr_count(*out); k++) {
        ss_attr a;
        if (ss_attr_at(&a, *out, k) == 0) continue;
        rc = ss__conv_ss_error(c, "cannot read the attributes of '%s'", c->opts.output);
        ss_close(*out);
        *out = NULL;
        return rc;
    }
    return 0;
}

int ss__conv_open_existing(ss_conv *c, ss_store **out) {
    return open_existing(c, out, c->opts.resume ? SS_OPEN_INCOMPLETE : 0);
}

/* A copy of text attribute `name`, NUL-terminated; NULL when missing. */
static char *attr_text(const ss_store *s, const char *name) {
    ss_attr a;
    if (ss_attr_get(&a, s, name) != 0 || a.type != SS_ATTR_TEXT) return NULL;
    char *t = malloc(a.size + 1);
    if (!t) return NULL;
    memcpy(t, a.data, a.size);
    t[a.size] = 0;
    return t;
}

static uint32_t count_lines(const char *t) {
    uint32_t n = 0;
    if (!t || !*t) return 0;
    for (; *t; t++) n += *t == '\n';
    return t[-1] == '\n' ? n : n + 1;
}

static int same_field(const ss_field *a, const ss_field *b) {
    if (strcmp(a->name, b->name) || a->dtype != b->dtype || !a->sequence != !b->sequence ||
        a->ndim != b->ndim)
        return 0;
    for (uint32_t k = 0; k < a->ndim; k++)
        if (a->dims[k] != b->dims[k]) return 0;
    return 1;
}

static void describe_field(char *buf, size_t n, const ss_field *f) {
    int k = snprintf(buf, n, "%s %s%s", ss_dtype_name(f->dtype) ? ss_dtype_name(f->dtype) : "?",
                     f->sequence ? "sequence" : "fixed", f->ndim ? " of [" : "");
    for (uint32_t d = 0; d < f->ndim && k > 0 && (size_t)k < n; d++)
        k += snprintf(buf + k, n - (size_t)k, "%s%" PRIu64, d ? "," : "", f->dims[d]);
    if (f->ndim && k > 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, "]");
}

/* Compare the existing store's schema with ours; print the first difference. */
static int check_schema(ss_conv *c, const ss_store *s, uint32_t nf) {
    const ss_schema *old = ss_store_schema(s);
    char a[128], b[128];
    for (uint32_t k = 0; k < nf || k < old->nfields; k++) {
        if (k >= old->nfields)
            return ss__conv_error(
                c, "schema mismatch: '%s' has no field '%s' (it has %" PRIu32 " fields)",
                c->opts.output, c->fields[k].name, old->nfields);
        if (k >= nf)
            return ss__conv_error(c, "schema mismatch: '%s' has an extra field '%s'",
                                  c->opts.output,
                                  old->fields[k].name);
        if (!same_field(&old->fields[k], &c->fields[k])) {
            describe_field(a, sizeof a, &old->fields[k]);
            describe_field(b, sizeof b, &c->fields[k]);
            return ss__conv_error(c,
                                  "schema mismatch: field %" PRIu32 " of '%s' is '%s' (%s), this "
                                  "conversion makes '%s' (%s)",
                                  k, c->opts.output, old->fields[k].name, a, c->fields[k].name, b);
        }
    }
    return 0;
}

static char *join_lines(char **v, uint32_t n) {
    size_t len = 1;
    for (uint32_t k = 0; k < n; k++) len += strlen(v[k]) + 1;
    char *t = malloc(len), *p = t;
    if (!t) return NULL;
    for (uint32_t k = 0; k < n; k++) {
        size_t l = strlen(v[k]);
        memcpy(p, v[k], l);
        p += l;
        *p++ = '\n';
    }
    *p = 0;
    return t;
}

/* "a" + sep + "b", or a copy of whichever is not NULL. */
static char *concat(const char *a, const char *sep, const char *b) {
    char *t = NULL;
    if (asprintf(&t, "%s%s%s", a ? a : "", a && *a ? sep : "", b ? b : "") < 0) return NULL;
    return t;
}

static int set_text(ss_conv *c, const char *name, const char *text) {
    if (!text) return ss__conv_error(c, "out of memory");
    return ss__conv_set_attr(c, name, SS_ATTR_TEXT, text, strlen(text));
}

/* This run's arguments for convert.options and the resume record: without
 * those that cannot change the store (so that its bytes do not depend on the
 * thread count). A --resume records the interrupted run's instead, so that
 * the finished store equals an uninterrupted one. NULL: out of memory. */
static char **own_args(ss_conv *c, uint32_t *n) {
    char **kept = calloc((size_t)c->argc + c->old.nargs + 1, sizeof *kept);
    *n = 0;
    if (kept && c->old.kind) {
        memcpy(kept, c->old.args, c->old.nargs * sizeof *kept);
        *n = c->old.nargs;
        return kept;
    }
    for (int i = 0; kept && i < c->argc; i++) {
        const char *a = c->argv[i];
        if (!strcmp(a, "--quiet") || !strcmp(a, "-q") || !strncmp(a, "--threads=", 10)) continue;
        if (!strcmp(a, "--threads")) {
            i++;
            continue;
        }
        if (!strcmp(a, "--")) {
            for (; i < c->argc; i++) kept[(*n)++] = c->argv[i];
            break;
        }
        kept[(*n)++] = c->argv[i];
    }
    return kept;
}

/* Store the resume record of this conversion (written from the next commit). */
int ss__conv_set_resume_record(ss_conv *c) {
    ss_resume_rec r = {.kind = c->conv->kind, .base = c->base, .stopped = c->bad_source};
    char **args = own_args(c, &r.nargs);
    r.args = (const char **)args;
    char *text = NULL;
    size_t len = 0;
    if (args && ss__resume_stat(&r.inputs, c->sources, c->nsources) == 0 &&
        ss__resume_stat(&r.files, c->checked, c->nchecked) == 0) {
        r.ninputs = c->nsources;
        r.nfiles = c->nchecked;
        text = ss__resume_encode(&r, &len);
    }
    free(args);
    free(r.inputs);
    free(r.files);
    if (!text) return ss__conv_error(c, "out of memory");
    int rc = ss__writer_set_resume_record(c->w, text, len);
    free(text);
    return rc ? ss__conv_ss_error(c, "cannot record the resume state") : 0;
}

static int write_framework_attrs(ss_conv *c) {
    char *files = join_lines(c->sources, c->nsources);
    uint32_t nkept = 0;
    char **kept = own_args(c, &nkept);
    char *args = kept ? join_lines(kept, nkept) : NULL;
    free(kept);
    char *all_files = concat(c->old_files, "", files);
    char *all_args = concat(c->old_options, "\n", args);
    char *kinds = concat(c->old_converter, "\n", c->conv->kind);
    int rc = set_text(c, "source.files", all_files) || set_text(c, "convert.options", all_args) ||
             set_text(c, "convert.converter", kinds) ||
             set_text(c, "convert.version", ss_version());
    if (!rc && c->shard_n) { /* spec/FORMAT.md §13: `dataset build` checks the set */
        char shard[32];
        snprintf(shard, sizeof shard, "%u/%u", c->shard_k, c->shard_n);
        rc = set_text(c, "source.shard", shard);
    }
    free(files);
    free(args);
    free(all_files);
    free(all_args);
    free(kinds);
    return rc;
}

static int prepare_append(ss_conv *c, uint32_t nf) {
    ss_store *s = NULL;
    if (open_existing(c, &s, 0)) return 1;
    if (!s)
        return ss__conv_error(c, "--append: '%s' does not exist (omit --append to create it)",
                              c->opts.output);
    int rc = check_schema(c, s, nf);
    if (!rc) rc = ss__conv_collect_indices(c, s);
    if (!rc) {
        c->old_files = attr_text(s, "source.files");
        c->old_options = attr_text(s, "convert.options");
        c->old_converter = attr_text(s, "convert.converter");
        c->source_base = count_lines(c->old_files);
        if (c->old_files && *c->old_files && c->old_files[strlen(c->old_files) - 1] != '\n') {
            char *t = concat(c->old_files, "", "\n");
            free(c->old_files);
            c->old_files = t;
        }
    }
    ss_close(s);
    return rc;
}

/* The writer's lock: an exclusive flock() on the output file, held until the
 * run ends (a killed run's goes with it). LMDB's own lock file serializes
 * transactions, not runs: a second run would append from a stale count. So a
 * --resume takes the lock before it reads the store, and a run that finds it
 * held is refused; a new store is locked once created. 0, or 1 (printed). */
static int lock_output(ss_conv *c) {
    if (c->writer_lock_fd >= 0) return 0;
    int fd = open(c->opts.output, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return 0; /* nothing there yet: the writer creates it */
    int rc;
    while ((rc = flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) continue;
    if (rc != 0 && (errno == EWOULDBLOCK || errno == EAGAIN)) {
        close(fd);
        return ss__conv_error(c,
                              "'%s' is being written by another live conversion (it holds the "
                              "store's writer lock); wait for it to end, or end it, before "
                              "--resume",
                              c->opts.output);
    }
    if (rc != 0) { /* a file system without flock(): no second writer is detected */
        close(fd);
        return 0;
    }
    c->writer_lock_fd = fd;
    return 0;
}

/* Tests (SS_TEST_STALL_AFTER): a live writer that stops mid-way, its
 * examples so far committed, until it is killed. */
static void stall(ss_conv *c) {
    ss_writer_commit(c->w);
    for (;;) pause();
}

/* --resume: returns 1 (error printed), 0 with *exists = whether there is
 * something to resume. An interrupted append (opts.append was set by
 * ss__conv_probe_interrupted_append) is prepared as the append was. */
static int prepare_resume(ss_conv *c, uint32_t nf, int *exists) {
    ss_store *s = NULL;
    *exists = 0;
    if (c->opts.append) {
        if (prepare_append(c, nf)) return 1;
        if (open_existing(c, &s, 0)) return 1;
        c->base = s ? ss_count(s) : 0;
        ss_close(s);
        s = NULL;
    }
    if (open_existing(c, &s, SS_OPEN_INCOMPLETE)) return 1;
    if (!s) return 0;
    ss_store_info info;
    int rc = ss_store_get_info(&info, s);
    if (!rc && info.complete)
        rc = ss__conv_error(c,
                            "--resume: '%s' is complete (%" PRIu64
                            " examples); nothing to resume (--force redoes it, --append adds)",
                            c->opts.output, info.count);
    if (!rc) rc = check_schema(c, s, nf);
    ss_close(s);
    *exists = 1;
    return rc;
}

/* A store written before resume records existed: its source.files must
 * match (the only check possible). */
static int check_legacy_resume(ss_conv *c) {
    ss_store *s = NULL;
    if (open_existing(c, &s, SS_OPEN_INCOMPLETE) || !s) return 1;
    char *old = attr_text(s, "source.files");
    char *now = join_lines(c->sources, c->nsources);
    int rc = 0;
    if (old && now && strcmp(old, now) != 0)
        rc = ss__conv_error(c,
                            "--resume: the input files differ from those of the interrupted "
                            "conversion of '%s' (its source.files attribute)",
                            c->opts.output);
    free(old);
    free(now);
    ss_close(s);
    return rc;
}

/* --resume, the writer open: this run must continue the interrupted one
 * (same converter, inputs, options); its record then supplies the options
 * recorded in convert.options. Returns 0 or 1 (error printed). */
static int check_resume(ss_conv *c) {
    size_t len;
    const void *data = ss__writer_resume_record(c->w, &len);
    char msg[2048];
    if (!data) {
        if (ss_writer_count(c->w) == c->base) return 0; /* nothing of it committed */
        if (c->opts.append)
            return ss__conv_error(c,
                                  "--resume: '%s' has an unfinished append without a resume "
                                  "record; it cannot be continued safely",
                                  c->opts.output);
        return check_legacy_resume(c);
    }
    if (ss__resume_decode(&c->old, data, len, msg, sizeof msg))
        return ss__conv_error(c, "--resume: '%s': %s", c->opts.output, msg);
    ss_resume_rec now = {.kind = c->conv->kind, .base = c->base};
    now.args = (const char **)c->argv;
    now.nargs = (uint32_t)c->argc;
    if (ss__resume_stat(&now.inputs, c->sources, c->nsources) ||
        ss__resume_stat(&now.files, c->checked, c->nchecked)) {
        free(now.inputs);
        return ss__conv_error(c, "out of memory");
    }
    now.ninputs = c->nsources;
    now.nfiles = c->nchecked;
    int rc = ss__resume_check(&c->old, &now, msg, sizeof msg);
    free(now.inputs);
    free(now.files);
    if (rc)
        return ss__conv_error(c, "--resume: %s; the store '%s' is left as it was", msg,
                              c->opts.output);
    return 0;
}

/* --force with --threads > 1: hold the store about to be replaced open, so
 * that unlinking it only removes its name; free_old_store() then closes it
 * on a thread of its own, where the file system frees its blocks and pages
 * (tens of ms for a store of 100 MB) while the conversion goes on. */
static void hold_old_store(ss_conv *c) {
    struct stat st;
    if (c->opts.threads <= 1 || c->one_thread || stat(c->opts.output, &st) != 0 ||
        !S_ISREG(st.st_mode))
        return;
    c->old_store_fd = open(c->opts.output, O_RDONLY | O_CLOEXEC);
}

static void *close_fd(void *arg) {
    close((int)(intptr_t)arg);
    return NULL;
}

static void free_old_store(ss_conv *c) {
    if (c->old_store_fd < 0) return;
    void *fd = (void *)(intptr_t)c->old_store_fd;
    c->old_store_fd = -1;
    ss__conv_later(c, close_fd, fd);
}

void ss__conv_one_thread(ss_conv *c) {
    c->one_thread = 1;
}

void ss__conv_later(ss_conv *c, void *(*fn)(void *), void *arg) {
    if (c->opts.threads > 1 && !c->one_thread && c->nlater < SS_CONV_LATER &&
        pthread_create(&c->later[c->nlater], NULL, fn, arg) == 0)
        c->nlater++;
    else
        fn(arg);
}

int ss__conv_begin(ss_conv *c, const ss_schema *schema, uint64_t *skip) {
    *skip = 0;
    if (c->began) return ss__conv_error(c, "internal error: ss__conv_begin called twice");
    if (schema->nfields + 1 > SS_MAX_FIELDS)
        return ss__conv_error(c, "too many fields (%" PRIu32 ")", schema->nfields);
    c->nfields = schema->nfields;
    for (uint32_t k = 0; k < schema->nfields; k++) {
        c->fields[k] = schema->fields[k];
        if (!strcmp(c->fields[k].name, "source"))
            return ss__conv_error(c, "internal error: the field name 'source' is reserved");
        uint64_t e = 1;
        for (uint32_t d = 0; d < c->fields[k].ndim; d++) e *= c->fields[k].dims[d];
        c->row_elems[k] = e;
    }
    c->fields[c->nfields] =
        (ss_field){.name = "source", .dtype = SS_U64, .sequence = 0, .ndim = 1, .dims = {2}};
    uint32_t nf = c->nfields + 1;
    ss_schema full = {nf, c->fields};
    uint32_t ifields[SS_BUCKET_MAX_KEYS];
    size_t inkeys = 0;
    if (c->index_by && ss__conv_resolve_index(c, ifields, &inkeys)) return 1;
    if (c->shard_n && ss__conv_shard_compute(c)) return 1;

    ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
    wo.flags = SS_WRITE_NOSYNC;
    wo.commit_bytes = c->commit_bytes ? c->commit_bytes : SS_CONV_COMMIT_BYTES;
    int rc;
    ss__conv_note_store(c, c->opts.output);
    if (c->opts.append && !c->opts.resume) {
        if (lock_output(c) || prepare_append(c, nf)) return 1;
        rc = ss_writer_open(&c->w, c->opts.output, &full, &wo);
        if (rc) return ss__conv_ss_error(c, "cannot append to '%s'", c->opts.output);
    } else if (c->opts.resume) {
        int exists;
        if (lock_output(c) || prepare_resume(c, nf, &exists)) return 1;
        if (exists) {
            /* the run that left it is dead (we hold its lock): so is its lock file */
            if (c->note_leftover) c->note_leftover(c->opts.output);
            wo.flags |= SS_WRITE_RESUME;
            rc = ss_writer_open(&c->w, c->opts.output, &full, &wo);
            if (rc) return ss__conv_ss_error(c, "cannot resume the store");
            if (check_resume(c)) {
                ss_writer_free(c->w);
                c->w = NULL;
                return 1;
            }
            *skip = ss_writer_count(c->w) - c->base;
            /* --shard: the converter's examples include other shards'; the
             * framework skips this shard's stored ones itself */
            if (c->shard_n) c->shard_skip = *skip, *skip = 0;
        } else {
            rc = ss_writer_create(&c->w, c->opts.output, &full, &wo);
            if (rc) return ss__conv_ss_error(c, "cannot create the store");
        }
    } else {
        if (c->opts.force) {
            wo.flags |= SS_WRITE_FORCE;
            hold_old_store(c);
        }
        rc = ss_writer_create(&c->w, c->opts.output, &full, &wo);
        free_old_store(c);
        if (rc == SS_EEXIST)
            return ss__conv_error(c,
                                  "'%s' exists (--force replaces it, --append adds to it, "
                                  "--resume continues an interrupted conversion)",
                                  c->opts.output);
        if (rc) return ss__conv_ss_error(c, "cannot create the store");
    }
    if (lock_output(c)) return 1;
    /* after the --append's old indices, so that a name given again is replaced */
    if (c->index_by && ss__conv_add_index(c, c->index_name ? c->index_name : c->index_by,
                                          ifields, inkeys, c->index_resolution))
        return 1;
    c->began = 1;
    c->start_count = ss_writer_count(c->w);
    if (c->opts.append && !c->opts.resume) c->base = c->start_count;
    if (write_framework_attrs(c) || ss__conv_set_resume_record(c)) return 1;
    /* the record is in the store before any example is: whatever is
     * committed later, a --resume can check it continues the same run */
    if (ss_writer_commit(c->w)) {
        c->writer_broken = 1;
        return ss__conv_ss_error(c, "cannot write to '%s'", c->opts.output);
    }
    return 0;
}

int ss__conv_append(ss_conv *c, const ss_value *values, uint32_t source, uint64_t location) {
    return ss__conv_append_at(c, values, source, location, 0);
}

int ss__conv_append_at(ss_conv *c, const ss_value *values, uint32_t source, uint64_t location,
                       uint64_t byte) {
    if (c->shard_n) {
        if (!ss__conv_in_shard_at(c, source, byte)) return 0;
        if (c->shard_skip) {
            c->shard_skip--;
            return 0;
        }
    }
    uint64_t src[2] = {(uint64_t)c->source_base + source + 1, location};
    memcpy(c->values, values, c->nfields * sizeof *values);
    c->values[c->nfields] = (ss_value){src, 1};
    int rc = ss_writer_append(c->w, c->values);
    if (rc) {
        if (rc != SS_EINVAL) c->writer_broken = 1;
        return ss__conv_ss_error(c, "cannot append example %" PRIu64 " to '%s'",
                                 ss_writer_count(c->w), c->opts.output);
    }
    c->examples++;
    if (c->kill_after && c->examples == c->kill_after) raise(SIGKILL);
    if (c->stall_after && c->examples == c->stall_after) stall(c);
    for (uint32_t k = 0; k < c->nfields; k++)
        c->elements += (c->fields[k].sequence ? values[k].length : 1) * c->row_elems[k];
    ss__conv_tick(c);
    return 0;
}

/* ss__conv_append_many() one by one: --shard (examples dropped or skipped),
 * SS_TEST_KILL_AFTER (a kill after an exact example). */
static int append_each(ss_conv *c, uint64_t n, const void *const *data,
                       const uint64_t *const *lengths, uint32_t source, const uint64_t *locations,
                       uint64_t byte) {
    const unsigned char *at[SS_MAX_FIELDS];
    for (uint32_t f = 0; f < c->nfields; f++) at[f] = data[f];
    ss_value v[SS_MAX_FIELDS];
    for (uint64_t k = 0; k < n; k++) {
        for (uint32_t f = 0; f < c->nfields; f++) {
            uint64_t len = c->fields[f].sequence ? lengths[f][k] : 1;
            v[f] = (ss_value){at[f], len};
            at[f] += len * c->row_elems[f] * ss_dtype_size(c->fields[f].dtype);
        }
        if (ss__conv_append_at(c, v, source, locations[k], byte)) return 1;
    }
    return 0;
}

int ss__conv_append_many(ss_conv *c, uint64_t n, const void *const *data,
                         const uint64_t *const *lengths, uint32_t source, const uint64_t *locations,
                         uint64_t byte) {
    if (c->shard_n || c->kill_after || c->stall_after)
        return append_each(c, n, data, lengths, source, locations, byte);
    if (n > c->many_cap) { /* the source field's values: (source, location) pairs */
        uint64_t *p = realloc(c->many_src, n * 2 * sizeof *p);
        if (!p) return ss__conv_error(c, "out of memory");
        c->many_src = p;
        c->many_cap = n;
    }
    uint64_t src = (uint64_t)c->source_base + source + 1;
    for (uint64_t k = 0; k < n; k++) {
        c->many_src[2 * k] = src;
        c->many_src[2 * k + 1] = locations[k];
    }
    const void *d[SS_MAX_FIELDS];
    const uint64_t *l[SS_MAX_FIELDS];
    memcpy(d, data, c->nfields * sizeof *d);
    memcpy(l, lengths, c->nfields * sizeof *l);
    d[c->nfields] = c->many_src;
    l[c->nfields] = NULL;
    uint64_t before = ss_writer_count(c->w);
    int rc = ss__writer_append_many(c->w, n, d, l);
    uint64_t done = ss_writer_count(c->w) - before;
    c->examples += done;
    for (uint32_t f = 0; f < c->nfields; f++) {
        uint64_t rows = done;
        if (c->fields[f].sequence)
            for (uint64_t k = rows = 0; k < done; k++) rows += lengths[f][k];
        c->elements += rows * c->row_elems[f];
    }
    c->tick += (unsigned)(done < SS_CONV_TICK ? done : SS_CONV_TICK);
    ss__conv_tick(c);
    if (rc) {
        if (rc != SS_EINVAL) c->writer_broken = 1;
        return ss__conv_ss_error(c, "cannot append example %" PRIu64 " to '%s'",
                                 ss_writer_count(c->w), c->opts.output);
    }
    return 0;
}

int ss__conv_set_attr(ss_conv *c, const char *name, uint32_t type, const void *data, size_t size) {
    if (!c->w) return ss__conv_error(c, "internal error: attribute '%s' set before begin", name);
    if (ss_writer_set_attr(c->w, name, type, data, size))
        return ss__conv_ss_error(c, "cannot set attribute '%s'", name);
    return 0;
}

ss_writer *ss__conv_writer(ss_conv *c) {
    return c->w;
}

