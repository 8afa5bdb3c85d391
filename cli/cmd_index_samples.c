/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_index_samples.c - `seqstore index STORE --samples L`: build the
 * Megatron-layout LM sample index of a token field (seqstore/lm.h) and
 * store it as a section, so that opening it later costs no index build. */
#include "commands.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Options after `index`; 0 or an exit code (usage errors printed). */
static int parse(int argc, char **argv, ss_lm_options *o, const char **field, int *force) {
    static const struct option longopts[] = {
        {"samples", required_argument, 0, 'L'},    {"by", required_argument, 0, 'b'},
        {"seed", required_argument, 0, 's'},       {"num-samples", required_argument, 0, 'N'},
        {"epochs", required_argument, 0, 'E'},     {"eod", required_argument, 0, 'e'},
        {"append-eod", no_argument, 0, 'a'},       {"force", no_argument, 0, 'f'},
        {0, 0, 0, 0}};
    const char *opt_name[128] = {['L'] = "--samples", ['s'] = "--seed", ['N'] = "--num-samples",
                                 ['E'] = "--epochs"};
    uint64_t max[128] = {['L'] = (1ull << 31) - 2, ['s'] = UINT32_MAX, ['N'] = UINT64_MAX,
                         ['E'] = UINT64_MAX};
    uint64_t *dst[128] = {['L'] = &o->seq_length, ['s'] = &o->seed, ['N'] = &o->num_samples,
                          ['E'] = &o->num_epochs};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        if (c > 0 && c < 128 && dst[c]) {
            if (ss__cli_number("index", opt_name[c], optarg, c == 'L' ? 2 : c == 's' ? 0 : 1,
                               max[c], dst[c]))
                return SS_EXIT_USAGE;
        } else if (c == 'b') {
            *field = optarg;
        } else if (c == 'a') {
            o->flags |= SS_LM_APPEND_EOD;
        } else if (c == 'f') {
            *force = 1;
        } else if (c == 'e') {
            char *end;
            errno = 0;
            long long v = strtoll(optarg, &end, 10);
            if (!*optarg || *end || errno || v < 0)
                return ss__cli_usage_error("index", "--eod: '%s' is not a token id (0 or more)",
                                           optarg);
            o->eod = v;
        } else {
            return ss__cli_bad_option("index", c, argv);
        }
    }
    if (optind + 1 != argc) return ss__cli_usage_error("index", "expected one STORE argument");
    if (!*field) return ss__cli_usage_error("index", "--samples needs --by FIELD (the tokens)");
    if (o->num_samples && o->num_epochs)
        return ss__cli_usage_error("index", "give --num-samples or --epochs, not both");
    if ((o->flags & SS_LM_APPEND_EOD) && o->eod == SS_LM_EOD_FROM_STORE)
        return ss__cli_usage_error("index", "--append-eod needs --eod ID (the token appended)");
    return SS_EXIT_OK;
}

int ss__cmd_index_samples(int argc, char **argv) {
    ss_lm_options o = SS_LM_OPTIONS_INIT;
    const char *field = NULL;
    int force = 0;
    int rc = parse(argc, argv, &o, &field, &force);
    if (rc) return rc;
    const char *path = argv[optind];
    char name[SS_LM_INDEX_NAME_MAX];
    if (ss_lm_index_name(name, sizeof name, field, &o))
        return ss__cli_usage_error("index", "field name '%s' is too long for a stored index", field);
    ss_store *s;
    if (ss__cli_open(&s, "index", path, 0)) return SS_EXIT_ERROR;
    char what[SS_MAX_ATTR_NAME + 80];
    snprintf(what, sizeof what, "sample index '%s'", name);
    int refused = !force && ss__cli_refuse_existing("index", s, name, what);
    ss_close(s);
    if (refused) return SS_EXIT_ERROR;
    if (ss_lm_save(path, field, &o)) return ss__cli_store_error("index", "build '%s'", name);

    /* reopened as a training loop would: the stored index must be the one used */
    ss_lm *lm = NULL;
    uint32_t f;
    ss_lm_info info;
    if (ss__cli_open(&s, "index", path, 0)) return SS_EXIT_ERROR;
    rc = ss_field_index(&f, s, field);
    if (!rc) rc = ss_lm_create(&lm, s, f, &o);
    if (!rc) rc = ss_lm_get_info(&info, lm);
    if (rc) {
        ss_lm_free(lm);
        ss_close(s);
        return ss__cli_store_error("index", "reopen '%s'", name);
    }
    ss_lm_free(lm);
    ss_close(s);
    if (!info.stored) {
        fprintf(stderr, "seqstore index: '%s' was written but not used when reopened\n", name);
        return SS_EXIT_ERROR;
    }
    printf("sample index '%s': %" PRIu64 " samples of %" PRIu64 " tokens over %" PRIu64
           " epoch%s of %" PRIu64 " documents (%" PRIu64 " tokens each)\n",
           name, info.num_samples, o.seq_length, info.num_epochs, info.num_epochs == 1 ? "" : "s",
           info.documents, info.tokens_per_epoch);
    return SS_EXIT_OK;
}
