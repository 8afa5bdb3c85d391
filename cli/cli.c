/* SPDX-License-Identifier: BSD-2-Clause */
/* cli.c - `seqstore`: dispatch to the subcommands. */
#include "commands.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct ss_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} ss_command;

static const ss_command ss_commands[] = {
    {"convert", ss_cmd_convert,
     "convert source files (text, jsonl, parallel, megatron, edf, idx, npy) into a store"},
    {"info", ss_cmd_info, "examples, fields, length statistics, attributes of a store"},
    {"verify", ss_cmd_verify, "recompute every checksum of a store"},
    {"cat", ss_cmd_cat, "print examples as text"},
    {"split", ss_cmd_split, "add, list and show named index-range splits"},
    {"index", ss_cmd_index, "build a bucket index sorted by example lengths"},
    {"bench", ss_cmd_bench, "measure how fast a store reads on this machine"},
    {"attr", ss_cmd_attr, "list, get, set and remove attributes"},
    {"export", ss_cmd_export, "write examples as JSON Lines, .npy files or a Megatron dataset"},
    {"dataset", ss_cmd_dataset, "build the manifest of a dataset of shards (convert --shard)"},
    {"merge", ss_cmd_merge, "write one store from a dataset of shards (streaming)"},
};

#define SS_NCOMMANDS (sizeof ss_commands / sizeof ss_commands[0])

static void ss_usage(FILE *out) {
    fprintf(out, "usage: seqstore COMMAND [options] [arguments]\n\n"
                 "Store sequential ML data in an LMDB-backed, memory-mapped format.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < SS_NCOMMANDS; i++)
        fprintf(out, "  %-9s %s\n", ss_commands[i].name, ss_commands[i].summary);
    fprintf(out,
            "\n'seqstore COMMAND --help' or 'seqstore help COMMAND' describes a command.\n"
            "options: -h, --help; -V, --version\n"
            "exit codes: 0 success, 1 error, 2 usage error, 3 verify found corruption\n"
            "lock files: LMDB keeps its readers in STORE-lock; a command removes the one\n"
            "it created when it ends, unless another process has the store open then.\n"
            "--nolock (read commands) creates none: for read-only media, no writer may run.\n"
            "On a full disk a read command reads without one when no other process has the\n"
            "store open, and says so (disk full, naming STORE-lock) when one has.\n");
}

int ss_cli_store_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "seqstore %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    const char *m = ss_error_message();
    fprintf(stderr, "%s%s\n", *m ? ": " : "", m);
    return SS_EXIT_ERROR;
}

int ss_cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "seqstore %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'seqstore %s --help'.\n", cmd);
    return SS_EXIT_USAGE;
}

int ss_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out) {
    /* digits only: strtoull alone would take "-5" (wrapped), " 7", "+7", "0x10" */
    if (!text || !*text) return -1;
    for (const char *p = text; *p; p++)
        if (*p < '0' || *p > '9') return -1;
    errno = 0;
    unsigned long long v = strtoull(text, NULL, 10);
    if (errno || v < min || v > max) return -1;
    *out = (uint64_t)v;
    return 0;
}

int ss_parse_i64(const char *text, int64_t *out) {
    const char *digits = text && (*text == '-') ? text + 1 : text;
    uint64_t mag;
    if (ss_parse_u64(digits, 0, (uint64_t)INT64_MAX + 1, &mag)) return -1;
    if (digits == text && mag > (uint64_t)INT64_MAX) return -1;
    /* negate in unsigned arithmetic: -(2^63) has no positive counterpart */
    *out = digits == text ? (int64_t)mag : (int64_t)(0 - mag);
    return 0;
}

/* One bound of a range: v >= 0 as is, v < 0 counts from the end of n; in
 * unsigned arithmetic so that no value of v can overflow. -1 if outside [0, n]. */
static int ss_range_bound(int64_t v, uint64_t n, uint64_t *out) {
    uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    if (mag > n) return -1;
    *out = v < 0 ? n - mag : mag;
    return 0;
}

int ss_cli_parse_range(const char *text, uint64_t n, uint64_t *a, uint64_t *b) {
    char buf[64];
    const char *colon = strchr(text, ':');
    int64_t v;
    if (strlen(text) >= sizeof buf) return -1;
    if (!colon) {
        if (ss_parse_i64(text, &v) || ss_range_bound(v, n, a) || *a == n) return -1;
        *b = *a + 1;
        return 0;
    }
    memcpy(buf, text, (size_t)(colon - text));
    buf[colon - text] = 0;
    *a = 0;
    *b = n;
    if (buf[0] && (ss_parse_i64(buf, &v) || ss_range_bound(v, n, a))) return -1;
    if (colon[1] && (ss_parse_i64(colon + 1, &v) || ss_range_bound(v, n, b))) return -1;
    return *b < *a ? -1 : 0;
}

int ss_cli_number(const char *cmd, const char *option, const char *text, uint64_t min, uint64_t max,
                  uint64_t *out) {
    if (ss_parse_u64(text, min, max, out) == 0) return 0;
    ss_cli_usage_error(cmd, "%s needs an integer in [%" PRIu64 ", %" PRIu64 "], not '%s'", option,
                       min, max, text ? text : "");
    return SS_EXIT_USAGE;
}

int ss_cli_bad_option(const char *cmd, int c, char **argv) {
    /* getopt_long's own message is off (opterr = 0): one message, naming the option */
    const char *opt = optind > 0 ? argv[optind - 1] : "?";
    if (c == ':') return ss_cli_usage_error(cmd, "option '%s' needs a value", opt);
    if (optopt) /* an unknown short option (glibc sets optopt to 0 for long ones) */
        return ss_cli_usage_error(cmd, "unknown option '-%c'", optopt);
    return ss_cli_usage_error(cmd, "unknown option '%s'", opt);
}

int ss_cli_attr_find(ss_attr *out, int *found, const char *cmd, const ss_store *s,
                     const char *name) {
    int rc = ss_attr_get(out, s, name);
    *found = rc == 0;
    if (rc == 0 || rc == SS_ENOTFOUND) return 0;
    /* the library's message names the store and the attribute */
    fprintf(stderr, "seqstore %s: %s\n", cmd, ss_error_message());
    return SS_EXIT_ERROR;
}

int ss_cli_refuse_existing(const char *cmd, const ss_store *s, const char *attr,
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

int ss_cli_remove_attr(const char *cmd, const char *path, const char *attr, const char *what) {
    ss_store *s;
    if (ss_cli_open(&s, cmd, path, 0)) return SS_EXIT_ERROR;
    ss_attr a;
    int rc = ss_attr_get(&a, s, attr);
    ss_close(s);
    if (rc == SS_ENOTFOUND) {
        fprintf(stderr, "seqstore %s: %s has no %s\n", cmd, path, what);
        return SS_EXIT_ERROR;
    }
    if (rc) return ss_cli_store_error(cmd, "%s", what);
    ss_writer *w;
    if (ss_sections_writer_open(&w, path))
        return ss_cli_store_error(cmd, "open '%s' for writing", path);
    rc = ss_writer_remove_attr(w, attr);
    if (!rc) rc = ss_writer_finish(w);
    ss_writer_free(w);
    if (rc) return ss_cli_store_error(cmd, "remove %s", what);
    printf("removed %s from %s\n", what, path);
    return SS_EXIT_OK;
}

int ss_cli_open(ss_store **out, const char *cmd, const char *path, unsigned flags) {
    ss_cli_note_store(path, flags);
    int rc = ss_open(out, path, flags | SS_OPEN_VERIFY); /* the CLI never prints unchecked data */
    if (rc) {
        fprintf(stderr, "seqstore %s: %s\n", cmd, ss_error_message());
        return SS_EXIT_ERROR;
    }
    return 0;
}

int main(int argc, char **argv) {
    /* Converters hand LMDB ~64 MiB of pages per commit, which it allocates and
     * frees each time: keep that memory in the heap instead of mapping and
     * faulting it in again at every commit (about a fifth of the CPU). */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    if (argc < 2) {
        ss_usage(stderr);
        return SS_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 && argc > 2) { /* `seqstore help CMD` = `seqstore CMD --help` */
        for (size_t i = 0; i < SS_NCOMMANDS; i++) {
            if (strcmp(ss_commands[i].name, argv[2]) != 0) continue;
            char *args[] = {argv[2], "--help", NULL};
            if (strcmp(argv[2], "convert") == 0 && argc > 3) { /* help convert KIND */
                char *kargs[] = {argv[2], argv[3], "--help", NULL};
                return ss_commands[i].run(3, kargs);
            }
            return ss_commands[i].run(2, args);
        }
        fprintf(stderr, "seqstore: unknown command '%s'\nTry 'seqstore --help'.\n", argv[2]);
        return SS_EXIT_USAGE;
    }
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        ss_usage(stdout);
        return SS_EXIT_OK;
    }
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        printf("seqstore %s (format version %d)\n", ss_version(), SS_FORMAT_VERSION);
        return SS_EXIT_OK;
    }
    for (size_t i = 0; i < SS_NCOMMANDS; i++) {
        if (strcmp(ss_commands[i].name, cmd) == 0) {
            int rc = ss_commands[i].run(argc - 1, argv + 1);
            fflush(stdout);
            ss_cli_drop_locks(); /* every store is closed by now */
            return rc;
        }
    }
    fprintf(stderr, "seqstore: unknown command '%s'\nTry 'seqstore --help'.\n", cmd);
    return SS_EXIT_USAGE;
}
