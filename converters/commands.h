/* commands.h - the subcommands of the seqstore command line.
 *
 * Each command is `int ss_cmd_NAME(int argc, char **argv)` with argv[0] the
 * command's name, returning the process exit code:
 *   0 success, 1 runtime error (I/O, bad input, incomplete or bad store),
 *   2 usage error, 3 `verify` found corruption.
 * Messages go to stderr as "seqstore NAME: message". */
#ifndef SS_COMMANDS_H
#define SS_COMMANDS_H

#include "seqstore.h"

#include <stdio.h>

enum { SS_EXIT_OK = 0, SS_EXIT_ERROR = 1, SS_EXIT_USAGE = 2, SS_EXIT_CORRUPT = 3 };

int ss_cmd_convert(int argc, char **argv);
int ss_cmd_info(int argc, char **argv);
int ss_cmd_verify(int argc, char **argv);
int ss_cmd_cat(int argc, char **argv);
int ss_cmd_split(int argc, char **argv);
int ss_cmd_index(int argc, char **argv);
int ss_cmd_bench(int argc, char **argv);
int ss_cmd_export(int argc, char **argv);

/* Print "seqstore CMD: message: ss_error_message()" and return SS_EXIT_ERROR. */
int ss_cli_store_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print "seqstore CMD: message" and a --help hint; return SS_EXIT_USAGE. */
int ss_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Open a store for a read command, honouring --nolock / --incomplete. */
int ss_cli_open(ss_store **out, const char *cmd, const char *path, unsigned flags);

#endif
