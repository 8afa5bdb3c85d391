/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_verify.c - `seqstore verify`: recompute every checksum. */
#include "commands.h"

#include <getopt.h>
#include <string.h>

typedef struct ss_verify_out {
    const ss_store *s;
    int quiet;
} ss_verify_out;

static int ss_report(void *ctx, const ss_verify_problem *p) {
    ss_verify_out *o = ctx;
    if (o->quiet) return 0;
    if (p->last_example > p->first_example)
        fprintf(stderr, "seqstore verify: %s: %s (examples %llu to %llu)\n", p->where, p->what,
                (unsigned long long)p->first_example, (unsigned long long)p->last_example - 1);
    else
        fprintf(stderr, "seqstore verify: %s: %s\n", p->where, p->what);
    return 0;
}

int ss__cmd_verify(int argc, char **argv) {
    static const struct option longopts[] = {{"quiet", no_argument, 0, 'q'},
                                             {"nolock", no_argument, 0, 'n'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    int quiet = 0, c;
    unsigned flags = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":qh", longopts, NULL)) != -1) {
        if (c == 'q')
            quiet = 1;
        else if (c == 'n')
            flags |= SS_OPEN_NOLOCK;
        else if (c == 'h') {
            printf("usage: seqstore verify STORE [--quiet] [--nolock]\n\n"
                   "Recompute the XXH3-64 checksum of every block (header, index segments,\n"
                   "data chunks, attributes) and check the index. Each problem is printed with\n"
                   "the chunk and the examples it holds.\n"
                   "exit codes: 0 sound, 3 corruption found, 1 cannot open, 2 usage error\n");
            return SS_EXIT_OK;
        } else
            return ss__cli_bad_option("verify", c, argv);
    }
    if (optind != argc - 1) return ss__cli_usage_error("verify", "expected one STORE");
    const char *path = argv[optind];
    ss_store *s;
    ss__cli_note_store(path, flags);
    int rc = ss_open(&s, path, flags);
    if (rc) {
        fprintf(stderr, "seqstore verify: %s\n", ss_error_message());
        return rc == SS_ECORRUPT ? SS_EXIT_CORRUPT : SS_EXIT_ERROR;
    }
    ss_verify_out o = {s, quiet};
    uint64_t problems = 0;
    rc = ss_verify(&problems, s, ss_report, &o);
    ss_store_info info;
    ss_store_get_info(&info, s);
    ss_close(s);
    if (rc == SS_ECORRUPT) {
        fprintf(stderr, "seqstore verify: %s: %llu problem%s found\n", path,
                (unsigned long long)problems, problems == 1 ? "" : "s");
        return SS_EXIT_CORRUPT;
    }
    if (rc) return ss__cli_store_error("verify", "%s", path);
    if (!quiet)
        printf("%s: ok (%llu examples, %llu data chunks verified)\n", path,
               (unsigned long long)info.count, (unsigned long long)info.data_chunks);
    return SS_EXIT_OK;
}
