/* SPDX-License-Identifier: BSD-2-Clause */
/* conv_run.c - one conversion from start to end: its framework made and
 * freed, the converter run, bad input reported or listed, the store
 * finished (and its indices built) or abandoned saying how to go on. */
#include "conv_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static char *xvasprintf(const char *fmt, va_list ap) {
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) return NULL;
    return s;
}

int ss__conv_bad(ss_conv *c, const char *file, uint64_t location, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *what = xvasprintf(fmt, ap);
    va_end(ap);
    char *msg = NULL;
    int n = location ? asprintf(&msg, "%s:%" PRIu64 ": %s", file, location, what ? what : "?")
                     : asprintf(&msg, "%s: %s", file, what ? what : "?");
    free(what);
    if (n < 0) msg = NULL;
    if (c->shard_n && !c->shard_self &&
        !ss__conv_shard_keeps_path(c, file)) { /* another shard's input: its job reports it */
        free(msg);
        return 0;
    }
    if (!c->opts.skip_bad) {
        for (uint32_t k = 0; k < c->nsources && !c->bad_source; k++)
            if (!strcmp(c->sources[k], file)) c->bad_source = k + 1;
        ss__conv_error(c, "%s", msg ? msg : "bad input (out of memory)");
        free(msg);
        c->bad_input = 1;
        return 1;
    }
    if (c->nbad < SS_CONV_MAX_LISTED) {
        if (!c->bad) c->bad = calloc(SS_CONV_MAX_LISTED, sizeof *c->bad);
        if (c->bad) c->bad[c->nbad] = msg, msg = NULL;
    }
    free(msg);
    c->nbad++;
    return 0;
}

static void print_summary(ss_conv *c) {
    double el = ss__conv_now() - c->t0;
    double out = (double)ss__conv_file_size(c->opts.output) / 1e6;
    fprintf(stderr,
            "seqstore convert: %" PRIu64 " example%s, %" PRIu64
            " element%s, %.2f MB in, %.2f MB out, %.2f s, %.1f MB/s%s\n",
            c->examples, c->examples == 1 ? "" : "s", c->elements, c->elements == 1 ? "" : "s",
            (double)c->bytes_in / 1e6, out, el, el > 0 ? (double)c->bytes_in / 1e6 / el : 0.0,
            c->start_count ? " (after the examples already in the store)" : "");
    if (c->skipped_what)
        fprintf(stderr, "seqstore convert: skipped %" PRIu64 " %s%s%s%s%s\n", c->nskipped,
                c->skipped_what, c->nskipped == 1 ? "" : "s", c->skipped_why ? " (" : "",
                c->skipped_why ? c->skipped_why : "", c->skipped_why ? ")" : "");
}

static void print_skipped(ss_conv *c) {
    if (!c->nbad) return;
    fprintf(stderr, "seqstore convert: skipped %" PRIu64 " bad input%s:\n", c->nbad,
            c->nbad == 1 ? "" : "s");
    uint64_t listed = c->nbad < SS_CONV_MAX_LISTED ? c->nbad : SS_CONV_MAX_LISTED;
    for (uint64_t k = 0; k < listed; k++)
        fprintf(stderr, "  %s\n", c->bad && c->bad[k] ? c->bad[k] : "(out of memory)");
    if (c->nbad > listed) fprintf(stderr, "  ... and %" PRIu64 " more\n", c->nbad - listed);
}

/* 1 if an input cannot be read a second time (stdin, a pipe). */
static int has_unrepeatable_input(const ss_conv *c) {
    for (uint32_t k = 0; k < c->nsources; k++) {
        struct stat st;
        if (!strcmp(c->sources[k], "-") || stat(c->sources[k], &st) != 0 || !S_ISREG(st.st_mode))
            return 1;
    }
    return 0;
}

/* 1 if the file system holding the store has (next to) no space left: the
 * likely reason a write failed, whatever errno LMDB passed on. */
static int disk_full(const ss_conv *c, const char *msg) {
    if (msg && strstr(msg, "No space left")) return 1;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", c->opts.output);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir] = 0;
    else
        snprintf(dir, sizeof dir, ".");
    struct statvfs vfs;
    return statvfs(dir, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < (4u << 20);
}

/* Examples committed to the store (a new writer's count is lost with it). */
static uint64_t committed_count(ss_conv *c) {
    ss_store *s = NULL;
    uint64_t n = 0;
    if (ss_open(&s, c->opts.output, SS_OPEN_INCOMPLETE) == 0) n = ss_count(s);
    ss_close(s);
    return n;
}

/* After a failed run: keep what can be kept, never look complete, and say
 * how to go on. An append leaves the store readable as it was before. */
static void abandon(ss_conv *c) {
    if (!c->w) return;
    const char *why = c->writer_broken ? ss_error_message() : NULL;
    char why_copy[1024];
    snprintf(why_copy, sizeof why_copy, "%s", why ? why : "");
    if (!c->writer_broken && ss__conv_set_resume_record(c) == 0) ss_writer_commit(c->w);
    ss_writer_free(c->w);
    c->w = NULL;
    uint64_t n = committed_count(c);
    uint64_t mine = n > c->base ? n - c->base : 0;
    int full = c->writer_broken && disk_full(c, why_copy);
    int again = has_unrepeatable_input(c);
    ss__conv_clear_progress(c);
    if (full) fprintf(stderr, "seqstore convert: the disk holding '%s' is full\n", c->opts.output);
    const char *next = again  ? "rerun the conversion (its standard input or pipe cannot be read "
                                "again, so --resume cannot continue it)"
                       : full ? "free some space and rerun with --resume"
                              : "fix the problem and rerun with --resume";
    if (c->opts.append)
        fprintf(stderr,
                "seqstore convert: the append to '%s' is unfinished with %" PRIu64
                " of its examples committed; the store reads as it did before the append "
                "(%" PRIu64 " examples); %s\n",
                c->opts.output, mine, c->base, next);
    else
        fprintf(stderr,
                "seqstore convert: '%s' is left incomplete with %" PRIu64
                " committed example%s; %s%s\n",
                c->opts.output, n, n == 1 ? "" : "s", next,
                again ? "" : " (or --force to start over)");
}

static int finish(ss_conv *c) {
    if (c->no_store && !c->began) return 0;
    if (!c->began) return ss__conv_error(c, "%s: no store was written", c->conv->kind);
    if (ss_writer_finish(c->w)) {
        ss__conv_ss_error(c, "cannot finish '%s'", c->opts.output);
        ss_writer_free(c->w);
        c->w = NULL;
        return 1;
    }
    ss_writer_free(c->w);
    c->w = NULL;
    if (ss__conv_build_indices(c)) return 1;
    ss__conv_clear_progress(c);
    print_skipped(c);
    if (!c->opts.quiet) print_summary(c);
    return 0;
}

/* --resume: is it an append that was interrupted (the store still reads as
 * complete, its progress record holds the append)? Then the converter must
 * treat the run as an append (e.g. take the store's vocabulary). */
int ss__conv_probe_interrupted_append(ss_conv *c) {
    ss_store *s = NULL;
    if (ss_open(&s, c->opts.output, 0) != 0) return 0;
    ss_close(s);
    return 1;
}

static void conv_free(ss_conv *c) {
    if (c->w) ss_writer_free(c->w);
    for (int k = 0; k < c->nlater; k++) pthread_join(c->later[k], NULL);
    free(c->many_src);
    for (uint32_t k = 0; k < c->nsources; k++) free(c->sources[k]);
    free(c->sources);
    if (c->bad)
        for (uint64_t k = 0; k < c->nbad && k < SS_CONV_MAX_LISTED; k++) free(c->bad[k]);
    free(c->bad);
    free(c->old_files);
    free(c->old_options);
    free(c->old_converter);
    ss__resume_rec_free(&c->old);
    for (uint32_t k = 0; k < c->nchecked; k++) free(c->checked[k]);
    free(c->checked);
    for (uint32_t k = 0; k < c->nindices; k++) free(c->indices[k].name);
    free(c->indices);
    free(c->shard_base);
    free(c->shard_size);
    free(c->shard_given);
    if (c->writer_lock_fd >= 0) close(c->writer_lock_fd);
    free(c);
}


ss_conv *ss__conv_new(const ss_converter *conv, int argc, char **argv) {
    ss_conv *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->conv = conv;
    c->old_store_fd = -1;
    c->argc = argc - 1;
    c->argv = argv + 1;
    /* Tests of interrupted conversions: die by SIGKILL after N examples. */
    const char *kill_env = getenv("SS_TEST_KILL_AFTER");
    if (kill_env) c->kill_after = strtoull(kill_env, NULL, 10);
    /* Tests of live writers: commit and stall after N examples. */
    const char *stall_env = getenv("SS_TEST_STALL_AFTER");
    if (stall_env) c->stall_after = strtoull(stall_env, NULL, 10);
    c->writer_lock_fd = -1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    c->opts.threads = ncpu < 1 ? 1 : ncpu > 8 ? 8 : (int)ncpu;
    return c;
}

int ss__conv_run(ss_conv *c, int nrest, char **rest) {
    c->show_progress = !c->opts.quiet && isatty(2);
    c->t0 = c->last_draw = ss__conv_now();
    int rc = c->conv->run(c, nrest, rest);
    if (rc == 0)
        rc = finish(c);
    else
        abandon(c);
    return rc;
}

void ss__conv_free(ss_conv *c) {
    if (!c) return;
    ss__conv_clear_progress(c);
    conv_free(c);
}
