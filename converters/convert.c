/* SPDX-License-Identifier: BSD-2-Clause */
/* convert.c - the converter framework's core (see convert.h): messages,
 * options, sources, progress. */
#include "conv_impl.h"
#include "numbers.h"

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

double ss__conv_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- messages */

void ss__conv_clear_progress(ss_conv *c) {
    if (c && c->drawn) {
        fputs("\r\033[K", stderr);
        c->drawn = 0;
    }
}

int ss__conv_error(ss_conv *c, const char *fmt, ...) {
    va_list ap;
    ss__conv_clear_progress(c);
    fputs("seqstore convert: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

int ss__conv_ss_error(ss_conv *c, const char *fmt, ...) {
    va_list ap;
    ss__conv_clear_progress(c);
    fputs("seqstore convert: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, ": %s\n", ss_error_message());
    return 1;
}

int ss__conv_usage_error(ss_conv *c, const char *fmt, ...) {
    va_list ap;
    const char *kind = c && c->conv ? c->conv->kind : NULL;
    ss__conv_clear_progress(c);
    fprintf(stderr, "seqstore convert%s%s: ", kind ? " " : "", kind ? kind : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see 'seqstore convert %s --help')\n", kind ? kind : "");
    return 2;
}

/* ----------------------------------------------------------------- options */

const ss_conv_options *ss__conv_opts(const ss_conv *c) {
    return &c->opts;
}

int ss__conv_parse_u64(ss_conv *c, const char *option, const char *text, uint64_t min, uint64_t max,
                       uint64_t *out) {
    if (ss__parse_u64(text, min, max, out)) /* the CLI's one strict parser (numbers.c) */
        return ss__conv_usage_error(c,
                                    "%s needs an integer in [%" PRIu64 ", %" PRIu64 "], not '%s'",
                                    option, min, max, text ? text : "");
    return 0;
}

void ss__conv_note_store(ss_conv *c, const char *path) {
    if (c->note_store) c->note_store(path, 0);
}

uint64_t ss__conv_file_size(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    return (uint64_t)st.st_size;
}

/* ----------------------------------------------------------------- sources */

uint32_t ss__conv_add_source(ss_conv *c, const char *path) {
    if (c->nsources == c->sources_cap) {
        uint32_t cap = c->sources_cap ? 2 * c->sources_cap : 16;
        char **p = realloc(c->sources, cap * sizeof *p);
        if (!p) {
            fputs("seqstore convert: out of memory\n", stderr);
            exit(1);
        }
        c->sources = p;
        c->sources_cap = cap;
    }
    c->sources[c->nsources] = strdup(path);
    if (!c->sources[c->nsources]) {
        fputs("seqstore convert: out of memory\n", stderr);
        exit(1);
    }
    return c->nsources++;
}

void ss__conv_add_checked(ss_conv *c, const char *path) {
    if (c->opts.output && !strcmp(path, c->opts.output)) return;
    char **p = realloc(c->checked, (c->nchecked + 1) * sizeof *p);
    char *copy = strdup(path);
    if (!p || !copy) {
        fputs("seqstore convert: out of memory\n", stderr);
        exit(1);
    }
    c->checked = p;
    c->checked[c->nchecked++] = copy;
}

void ss__conv_set_total(ss_conv *c, uint64_t total_bytes) {
    c->total_bytes = total_bytes;
}

/* ---------------------------------------------------------------- progress */

static void fmt_duration(char *buf, size_t n, double s) {
    if (s < 0 || s > 1e7) {
        snprintf(buf, n, "?");
        return;
    }
    unsigned long t = (unsigned long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%lu:%02lu", t / 60, t % 60);
}

static void draw_progress(ss_conv *c, double t) {
    double el = t - c->t0;
    double mb = (double)c->bytes_in / 1e6;
    double rate = el > 0 ? mb / el : 0;
    char eta[64] = "";
    if (c->total_bytes && rate > 0 && c->bytes_in <= c->total_bytes) {
        char d[24];
        fmt_duration(d, sizeof d, ((double)(c->total_bytes - c->bytes_in) / 1e6) / rate);
        snprintf(eta, sizeof eta, "  %3.0f%%  ETA %s",
                 100.0 * (double)c->bytes_in / (double)c->total_bytes, d);
    }
    fprintf(stderr, "\r\033[K%" PRIu64 " examples  %.1f MB  %.1f MB/s%s", c->examples, mb, rate,
            eta);
    fflush(stderr);
    c->drawn = 1;
    c->last_draw = t;
}

void ss__conv_tick(ss_conv *c) {
    if (++c->tick < SS_CONV_TICK) return;
    c->tick = 0;
    if (!c->show_progress) return;
    double t = ss__conv_now();
    if (t - c->last_draw >= SS_CONV_REDRAW) draw_progress(c, t);
}

void ss__conv_progress(ss_conv *c, uint64_t bytes) {
    c->bytes_in += bytes;
    ss__conv_tick(c);
}

void ss__conv_skipped(ss_conv *c, uint64_t n, const char *what, const char *why) {
    c->nskipped = n;
    c->skipped_what = what;
    c->skipped_why = why;
}
