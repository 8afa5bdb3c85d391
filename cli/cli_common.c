/* SPDX-License-Identifier: BSD-2-Clause */
/* cli_common.c - what the commands share: messages, numeric options and
 * ranges, opening stores, attributes that may be absent (see commands.h). */
#include "commands.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ss__cli_store_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "seqstore %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    const char *m = ss_error_message();
    fprintf(stderr, "%s%s\n", *m ? ": " : "", m);
    return SS_EXIT_ERROR;
}

int ss__cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "seqstore %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'seqstore %s --help'.\n", cmd);
    return SS_EXIT_USAGE;
}

/* One bound of a range: v >= 0 as is, v < 0 counts from the end of n; in
 * unsigned arithmetic so that no value of v can overflow. -1 if outside [0, n]. */
static int ss_range_bound(int64_t v, uint64_t n, uint64_t *out) {
    uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    if (mag > n) return -1;
    *out = v < 0 ? n - mag : mag;
    return 0;
}

int ss__cli_parse_range(const char *text, uint64_t n, uint64_t *a, uint64_t *b) {
    char buf[64];
    const char *colon = strchr(text, ':');
    int64_t v;
    if (strlen(text) >= sizeof buf) return -1;
    if (!colon) {
        if (ss__parse_i64(text, &v) || ss_range_bound(v, n, a) || *a == n) return -1;
        *b = *a + 1;
        return 0;
    }
    memcpy(buf, text, (size_t)(colon - text));
    buf[colon - text] = 0;
    *a = 0;
    *b = n;
    if (buf[0] && (ss__parse_i64(buf, &v) || ss_range_bound(v, n, a))) return -1;
    if (colon[1] && (ss__parse_i64(colon + 1, &v) || ss_range_bound(v, n, b))) return -1;
    return *b < *a ? -1 : 0;
}

int ss__cli_number(const char *cmd, const char *option, const char *text, uint64_t min,
                   uint64_t max,
                   uint64_t *out) {
    if (ss__parse_u64(text, min, max, out) == 0) return 0;
    ss__cli_usage_error(cmd, "%s needs an integer in [%" PRIu64 ", %" PRIu64 "], not '%s'", option,
                        min, max, text ? text : "");
    return SS_EXIT_USAGE;
}

int ss__cli_bad_option(const char *cmd, int c, char **argv) {
    /* getopt_long's own message is off (opterr = 0): one message, naming the option */
    const char *opt = optind > 0 ? argv[optind - 1] : "?";
    if (c == ':') return ss__cli_usage_error(cmd, "option '%s' needs a value", opt);
    if (optopt) /* an unknown short option (glibc sets optopt to 0 for long ones) */
        return ss__cli_usage_error(cmd, "unknown option '-%c'", optopt);
    return ss__cli_usage_error(cmd, "unknown option '%s'", opt);
}

int ss__cli_attr_find(ss_attr *out, int *found, const char *cmd, const ss_store *s,
                      const char *name) {
    int rc = ss_attr_get(out, s, name);
    *found = rc == 0;
    if (rc == 0 || rc == SS_ENOTFOUND) return 0;
    /* the library's message names the store and the attribute */
    fprintf(stderr, "seqstore %s: %s\n", cmd, ss_error_message());
    return SS_EXIT_ERROR;
}

int ss__cli_refuse_existing(const char *cmd, const ss_store *s, const char *attr,
                            const char *what) {
    ss_attr a;
    int rc = ss_attr_get(&a, s, attr);
    if (rc == SS_ENOTFOUND) return 0;
    if (rc == 0)
        fprintf(stderr, "seqstore %s: %s exists (use --force to replace it)\n", cmd, what);
    else
        fprintf(stderr,
                "seqstore %s: %s exists but cannot be read (%s): use --force to replace it\n",
                cmd, what, ss_error_message());
    return SS_EXIT_ERROR;
}

int ss__cli_remove_attr(const char *cmd, const char *path, const char *attr, const char *what) {
    ss_store *s;
    if (ss__cli_open(&s, cmd, path, 0)) return SS_EXIT_ERROR;
    ss_attr a;
    int rc = ss_attr_get(&a, s, attr);
    ss_close(s);
    if (rc == SS_ENOTFOUND) {
        fprintf(stderr, "seqstore %s: %s has no %s\n", cmd, path, what);
        return SS_EXIT_ERROR;
    }
    if (rc) return ss__cli_store_error(cmd, "%s", what);
    ss_writer *w;
    if (ss_sections_writer_open(&w, path))
        return ss__cli_store_error(cmd, "open '%s' for writing", path);
    rc = ss_writer_remove_attr(w, attr);
    if (!rc) rc = ss_writer_finish(w);
    ss_writer_free(w);
    if (rc) return ss__cli_store_error(cmd, "remove %s", what);
    printf("removed %s from %s\n", what, path);
    return SS_EXIT_OK;
}

int ss__cli_open(ss_store **out, const char *cmd, const char *path, unsigned flags) {
    ss__cli_note_store(path, flags);
    int rc = ss_open(out, path, flags | SS_OPEN_VERIFY); /* the CLI never prints unchecked data */
    if (rc) {
        fprintf(stderr, "seqstore %s: %s\n", cmd, ss_error_message());
        return SS_EXIT_ERROR;
    }
    return 0;
}
