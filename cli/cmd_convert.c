/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_convert.c - `seqstore convert KIND INPUT... -o STORE`: the common
 * options, then the converter KIND's run (converters/). */
#include "commands.h"
#include "conv_impl.h"
#ifdef SS_HAVE_REMOTE
#include "remote_cli.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- the command */

static void common_usage(FILE *out) {
    fputs("common options:\n"
          "  -o, --output STORE  the store to write (required); s3://BUCKET/PREFIX/NAME.ss:\n"
          "                      written to --scratch DIR, verified, then uploaded\n"
          "                      (then 'seqstore dataset build s3://BUCKET/PREFIX')\n"
          "  --scratch DIR       with -o s3://...: the local directory the shard is\n"
          "                      written to and kept in (default: $SEQSTORE_SCRATCH_DIR);\n"
          "                      --resume continues it and uploads only what is missing\n"
          "  --force             replace an existing STORE\n"
          "  --append            add to an existing STORE of the same schema\n"
          "  --resume            continue an interrupted conversion or --append after\n"
          "                      its last committed example (same inputs and options;\n"
          "                      refused otherwise; not for standard input)\n"
          "  --skip-bad          skip bad records or files; list them at the end\n"
          "  --quiet             no progress line, no summary\n"
          "  --threads N         decoding threads (default: CPUs, at most 8; convert\n"
          "                      edf decodes in N processes); the store is the same\n"
          "                      whatever N\n"
          "  --commit-bytes N    commit (a --resume point) every N bytes of data\n"
          "                      (default 4 MiB)\n"
          "  --index-by FIELD[,FIELD...]\n"
          "                      also store a bucket index by these sequence fields'\n"
          "                      lengths (the same as 'seqstore index --by' after)\n"
          "  --index-resolution R  its bucket width, R >= 1 (required with --index-by)\n"
          "  --index-name NAME   its name (default: the --index-by text); --append\n"
          "                      also rebuilds the indices the store already has\n"
          "  --shard K/N|auto    write only shard K (0-based) of N: the examples whose\n"
          "                      first byte is in the K-th of N equal byte ranges of\n"
          "                      all inputs (whole files; a large text/jsonl file is\n"
          "                      cut at line boundaries); shards 0..N-1 in order hold\n"
          "                      exactly the examples of one conversion; a word\n"
          "                      vocabulary is counted over every input by every shard\n"
          "                      (auto: K/N = rank/world size from RANK/WORLD_SIZE,\n"
          "                      OMPI_COMM_WORLD_RANK/_SIZE or SLURM_PROCID/NTASKS)\n"
          "  -h, --help          this help\n"
          "exit status: 0 ok, 1 error (bad input, I/O, STORE exists without --force),\n"
          "2 usage error (a bad option or argument)\n",
          out);
}

static void general_usage(FILE *out) {
    fputs("usage: seqstore convert KIND INPUT... -o STORE [options]\n\nkinds:\n", out);
    ss__conv_print_kinds(out);
    fputs("\n'seqstore convert KIND --help' (or 'seqstore help convert KIND') lists KIND's\n"
          "own options; man seqstore-convert has them all.\n\n",
          out);
    common_usage(out);
}

/* Value of an option given as "--opt VALUE" or "--opt=VALUE" (or "-oVALUE"). */
static const char *opt_value(int argc, char **argv, int *i, const char *arg, size_t namelen) {
    if (arg[namelen] == '=') return arg + namelen + 1;
    if (arg[namelen] && arg[1] != '-') return arg + namelen; /* -oSTORE */
    if (*i + 1 >= argc) return NULL;
    return argv[++*i];
}

static int is_opt(const char *arg, const char *name) {
    size_t n = strlen(name);
    return !strncmp(arg, name, n) && (arg[n] == 0 || arg[n] == '=');
}

/* The --index-* options go together; the name must fit an attribute name. */
static int check_index_options(ss_conv *c) {
    const ss_conv *o = c;
    if (!o->index_by && (o->index_resolution || o->index_name))
        return ss__conv_usage_error(c, "--index-resolution and --index-name need --index-by");
    if (o->index_by && !o->index_resolution)
        return ss__conv_usage_error(c, "--index-by needs --index-resolution R (R >= 1)");
    if (!o->index_by) return 0;
    const char *name = o->index_name ? o->index_name : o->index_by;
    if (strlen(SS_BUCKET_ATTR_PREFIX) + strlen(name) > SS_MAX_ATTR_NAME)
        return ss__conv_usage_error(c, "index name '%s' is longer than %zu bytes", name,
                                    (size_t)SS_MAX_ATTR_NAME - strlen(SS_BUCKET_ATTR_PREFIX));
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return ss__conv_usage_error(
                c, "index name '%s' may hold only printable ASCII without spaces", name);
    return 0;
}

/* Remove the common options from argv[2..]; the rest goes to rest[] after KIND. */
static int parse_common(ss_conv *c, int argc, char **argv, char **rest, int *nrest, int *help,
                        const char **scratch) {
    int n = 0;
    rest[n++] = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            for (; i < argc; i++) rest[n++] = argv[i];
            break;
        }
        if (is_opt(a, "--output") || !strncmp(a, "-o", 2)) {
            c->opts.output = opt_value(argc, argv, &i, a, a[1] == '-' ? 8 : 2);
            if (!c->opts.output || !*c->opts.output)
                return ss__conv_usage_error(c, "-o/--output needs a STORE path");
        } else if (!strcmp(a, "--force")) {
            c->opts.force = 1;
        } else if (!strcmp(a, "--append")) {
            c->opts.append = 1;
        } else if (!strcmp(a, "--resume")) {
            c->opts.resume = 1;
        } else if (!strcmp(a, "--skip-bad")) {
            c->opts.skip_bad = 1;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            c->opts.quiet = 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = 1;
        } else if (is_opt(a, "--threads")) {
            uint64_t v;
            const char *s = opt_value(argc, argv, &i, a, 9);
            if (ss__conv_parse_u64(c, "--threads", s, 1, 256, &v)) return 2;
            c->opts.threads = (int)v;
        } else if (is_opt(a, "--index-by")) {
            c->index_by = opt_value(argc, argv, &i, a, 10);
            if (!c->index_by || !*c->index_by)
                return ss__conv_usage_error(c, "--index-by needs FIELD[,FIELD...]");
        } else if (is_opt(a, "--index-resolution")) {
            const char *s = opt_value(argc, argv, &i, a, 18);
            if (ss__conv_parse_u64(c, "--index-resolution", s, 1, UINT64_MAX, &c->index_resolution))
                return 2;
        } else if (is_opt(a, "--index-name")) {
            c->index_name = opt_value(argc, argv, &i, a, 12);
            if (!c->index_name || !*c->index_name)
                return ss__conv_usage_error(c, "--index-name needs a NAME");
        } else if (is_opt(a, "--shard")) {
            if (ss__conv_parse_shard(c, opt_value(argc, argv, &i, a, 7))) return 2;
        } else if (is_opt(a, "--scratch")) {
            *scratch = opt_value(argc, argv, &i, a, 9);
            if (!*scratch || !**scratch)
                return ss__conv_usage_error(c, "--scratch needs a DIR");
        } else if (is_opt(a, "--commit-bytes")) {
            const char *s = opt_value(argc, argv, &i, a, 14);
            if (ss__conv_parse_u64(c, "--commit-bytes", s, 1, UINT64_MAX, &c->commit_bytes))
                return 2;
        } else {
            rest[n++] = argv[i];
        }
    }
    rest[n] = NULL;
    *nrest = n;
    return check_index_options(c);
}


int ss__cmd_convert(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        general_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const ss_converter *conv = ss__conv_find(argv[1]);
    if (!conv) {
        fprintf(stderr, "seqstore convert: unknown kind '%s'; the kinds are:\n", argv[1]);
        ss__conv_print_kinds(stderr);
        return 2;
    }
    ss_conv *c = ss__conv_new(conv, argc, argv);
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!c || !rest) {
        ss__conv_free(c);
        free(rest);
        fputs("seqstore convert: out of memory\n", stderr);
        return 1;
    }
    c->note_store = ss__cli_note_store; /* their lock files go when the command ends */
    c->note_leftover = ss__cli_note_leftover;
    int nrest = 0, help = 0, skip = 0;
    const char *scratch = NULL;
#ifdef SS_HAVE_REMOTE
    ss__url_output *url_out = NULL; /* -o s3://...: the upload after the conversion */
#endif
    int rc = parse_common(c, argc, argv, rest, &nrest, &help, &scratch);
    if (!rc && help) {
        conv->usage(stdout);
        fputc('\n', stdout);
        common_usage(stdout);
    } else if (!rc) {
        if (!c->opts.output)
            rc = ss__conv_usage_error(c, "no output store (-o STORE)");
        else if (c->opts.force && (c->opts.append || c->opts.resume))
            rc = ss__conv_usage_error(c, "--force excludes --append and --resume");
        else if (c->shard_n && c->opts.append)
            rc = ss__conv_usage_error(c, "--shard writes a new shard store; it excludes --append");
        else if (scratch && !ss_is_url(c->opts.output))
            rc = ss__conv_usage_error(c, "--scratch is for an output URL (-o s3://...)");
        else if (ss_is_url(c->opts.output)) {
#ifdef SS_HAVE_REMOTE
            rc = ss__convert_url_begin(&url_out, &skip, c, c->opts.output, scratch);
#else
            fprintf(stderr, "seqstore convert: -o %s: this seqstore was built without remote "
                            "datasets (cmake -DSS_REMOTE=ON, which needs libcurl and expat)\n",
                    c->opts.output);
            rc = SS_EXIT_ERROR;
#endif
        } else if (c->opts.resume)
            c->opts.append = ss__conv_probe_interrupted_append(c);
    }
    if (!rc && !help && !skip) rc = ss__conv_run(c, nrest, rest);
#ifdef SS_HAVE_REMOTE
    if (url_out) rc = ss__convert_url_end(url_out, rc);
#endif
    free(rest);
    ss__conv_free(c);
    return rc;
}

