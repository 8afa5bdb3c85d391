/* SPDX-License-Identifier: BSD-2-Clause */
/* main.c - `seqstore`: dispatch to the subcommands. */
#include "commands.h"

#include <malloc.h>
#include <stdio.h>
#include <string.h>

typedef struct ss_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} ss_command;

static const ss_command ss_commands[] = {
    {"convert", ss__cmd_convert,
     "convert sources into a store (lines text jsonl parallel megatron edf biosig idx npy audio)"},
    {"info", ss__cmd_info, "examples, fields, length statistics, attributes of a store"},
    {"verify", ss__cmd_verify, "recompute every checksum of a store"},
    {"cat", ss__cmd_cat, "print examples as text"},
    {"split", ss__cmd_split, "add, list and show named index-range splits"},
    {"index", ss__cmd_index, "build a bucket index sorted by example lengths"},
    {"bench", ss__cmd_bench, "measure how fast a store reads on this machine"},
    {"attr", ss__cmd_attr, "list, get, set and remove attributes"},
    {"export", ss__cmd_export, "write examples as JSON Lines, .npy files or a Megatron dataset"},
    {"dataset", ss__cmd_dataset, "build the manifest of a dataset of shards (convert --shard)"},
    {"merge", ss__cmd_merge, "write one store from a dataset of shards (streaming)"},
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
            "exit codes: 0 success; 1 error (I/O, bad input, an output that exists without\n"
            "--force, an incomplete or unreadable store); 2 usage error (an unknown or bad\n"
            "option or argument, a range outside the store); 3 verify found corruption\n"
            "lock files: LMDB keeps its readers in STORE-lock; a command removes the one\n"
            "it created when it ends, unless another process has the store open then.\n"
            "--nolock (read commands) creates none: for read-only media, no writer may run.\n"
            "On a full disk a read command reads without one when no other process has the\n"
            "store open, and says so (disk full, naming STORE-lock) when one has.\n");
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
            ss__cli_drop_locks(); /* every store is closed by now */
            return rc;
        }
    }
    fprintf(stderr, "seqstore: unknown command '%s'\nTry 'seqstore --help'.\n", cmd);
    return SS_EXIT_USAGE;
}
