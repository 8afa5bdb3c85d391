/* cli.c - `seqstore`: dispatch to the subcommands. */
#include "commands.h"

#include <malloc.h>
#include <stdarg.h>
#include <string.h>

typedef struct ss_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} ss_command;

static const ss_command ss_commands[] = {
    {"convert", ss_cmd_convert,
     "convert source files (text, parallel, edf, idx, npy) into a store"},
    {"info", ss_cmd_info, "examples, fields, length statistics, attributes of a store"},
    {"verify", ss_cmd_verify, "recompute every checksum of a store"},
    {"cat", ss_cmd_cat, "print examples as text"},
    {"split", ss_cmd_split, "add, list and show named index-range splits"},
    {"index", ss_cmd_index, "build a bucket index sorted by example lengths"},
    {"bench", ss_cmd_bench, "measure how fast a store reads on this machine"},
};

#define SS_NCOMMANDS (sizeof ss_commands / sizeof ss_commands[0])

static void ss_usage(FILE *out) {
    fprintf(out, "usage: seqstore COMMAND [options] [arguments]\n\n"
                 "Store sequential ML data in an LMDB-backed, memory-mapped format.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < SS_NCOMMANDS; i++)
        fprintf(out, "  %-9s %s\n", ss_commands[i].name, ss_commands[i].summary);
    fprintf(out, "\n'seqstore COMMAND --help' describes a command.\n"
                 "options: -h, --help; -V, --version\n"
                 "exit codes: 0 success, 1 error, 2 usage error, 3 verify found corruption\n");
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

int ss_cli_open(ss_store **out, const char *cmd, const char *path, unsigned flags) {
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
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        ss_usage(stdout);
        return SS_EXIT_OK;
    }
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        printf("seqstore %s (format version %d)\n", ss_version(), SS_FORMAT_VERSION);
        return SS_EXIT_OK;
    }
    for (size_t i = 0; i < SS_NCOMMANDS; i++)
        if (strcmp(ss_commands[i].name, cmd) == 0) return ss_commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "seqstore: unknown command '%s'\nTry 'seqstore --help'.\n", cmd);
    return SS_EXIT_USAGE;
}
