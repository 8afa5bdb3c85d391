/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_index.c - `seqstore index`: build a bucket index sorted by example lengths
 * (and dispatch --samples to cmd_index_samples.c). */
#include "commands.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int index_build(int argc, char **argv);

static const char *const index_usage =
    "usage: seqstore index STORE --by FIELD[,FIELD...] --resolution R [--name NAME] [--force]\n"
    "       seqstore index STORE --samples L --by FIELD [--seed S] [--num-samples N | --epochs E]\n"
    "                      [--eod ID [--append-eod]] [--force]\n"
    "       seqstore index list STORE [--json] [--nolock]\n"
    "       seqstore index rm STORE NAME\n"
    "\n"
    "Store a bucket index (attribute ss.bucket.NAME): a permutation of all\n"
    "examples sorted by their lengths in the given fields (lexicographically:\n"
    "the first field, then the next; ties by index), cut into buckets where\n"
    "floor(length / R) changes in any field. Training loops read it zero-copy\n"
    "(ss_bucket_open) for bucket-sorted orders and within-bucket batches.\n"
    "\n"
    "  --by FIELDS       1 to 4 sequence fields, comma-separated, most significant\n"
    "                    first (e.g. 'src,tgt')\n"
    "  --resolution R    bucket width in time steps, R >= 1 (1: exact lengths)\n"
    "  --name NAME       index name; default: the --by text\n"
    "  --force           replace an existing index of that name\n"
    "\n"
    "With --samples, store instead the LM sample index of token field FIELD\n"
    "(seqstore/lm.h, SS_LM_MEGATRON: Megatron-Core GPTDataset's document, sample\n"
    "and shuffle indices) as the section ss.lm.FIELD.L<L>.seed<S>.samples<N>\n"
    ".epochs<E>.append<0|1>; ss_lm_create() and seqstore.lm with the same\n"
    "options then use it instead of building it (on a dataset: in its sections\n"
    "store).\n"
    "  --samples L       tokens per sample (Megatron's seq_length), 2 or more\n"
    "  --seed S          Megatron's random_seed, 0..2^32-1 (default 0)\n"
    "  --num-samples N   samples asked for (default: one epoch)\n"
    "  --epochs E        or: E epochs of the documents\n"
    "  --eod ID          end-of-document token id (default: the store's FIELD.eos,\n"
    "                    which 'convert text --eos' writes)\n"
    "  --append-eod      append ID to every document (the store's do not end with it)\n"
    "  list              every stored index: name, keys, resolution, buckets\n"
    "  rm                remove index NAME\n"
    "  -h, --help        this text\n";

static int index_list(int argc, char **argv) {
    int json = 0, nolock = 0;
    const char *path = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--nolock"))
            nolock = 1;
        else if (argv[i][0] == '-' && argv[i][1])
            return ss__cli_usage_error("index", "unknown option '%s'", argv[i]);
        else if (path)
            return ss__cli_usage_error("index", "list needs one STORE");
        else
            path = argv[i];
    }
    if (!path) return ss__cli_usage_error("index", "list needs STORE");
    ss_store *s;
    if (ss__cli_open(&s, "index", path, nolock ? SS_OPEN_NOLOCK : 0)) return SS_EXIT_ERROR;
    size_t plen = strlen(SS_BUCKET_ATTR_PREFIX);
    json_t *list = json ? json_array() : NULL;
    int rc = SS_EXIT_OK, failed = 0;
    if (!json) printf("%-20s %-24s %10s %10s\n", "NAME", "BY", "RESOLUTION", "BUCKETS");
    for (uint64_t k = 0; k < ss_attr_count(s) && rc == SS_EXIT_OK; k++) {
        ss_attr at;
        ss_bucket *b;
        int orc = ss_attr_at(&at, s, k);
        if (orc != 0 && orc != SS_ECORRUPT) { /* SS_ECORRUPT: named, listed below */
            rc = ss__cli_store_error("index", "list");
            break;
        }
        if (strncmp(at.name, SS_BUCKET_ATTR_PREFIX, plen) != 0) continue;
        const char *name = at.name + plen;
        if (!orc) orc = ss_bucket_open(&b, s, name);
        if (orc != 0) { /* listed with the reason; stale (after an append) is no error */
            if (!json) printf("%-20s (%s)\n", name, ss_error_message());
            if (json) {
                json_t *o = json_object();
                json_object_set_new(o, "name", json_string(name));
                json_object_set_new(o, "error", json_string(ss_error_message()));
                json_array_append_new(list, o);
            }
            if (orc != SS_ESTATE && orc != SS_EVERSION) {
                fprintf(stderr, "seqstore index: %s\n", ss_error_message());
                failed = 1;
            }
            continue;
        }
        uint32_t keys[SS_BUCKET_MAX_KEYS];
        size_t nk = ss_bucket_keys(keys, b);
        char by[256] = "";
        json_t *jk = json_array();
        for (size_t i = 0, n = 0; i < nk; i++) {
            ss_field f;
            ss_field_info(&f, s, keys[i]);
            n += (size_t)snprintf(by + n, n < sizeof by ? sizeof by - n : 0, "%s%s", i ? "," : "",
                                  f.name);
            json_array_append_new(jk, json_string(f.name));
        }
        if (json) {
            json_t *o = json_object();
            json_object_set_new(o, "name", json_string(name));
            json_object_set_new(o, "by", jk);
            json_object_set_new(o, "resolution", json_integer((json_int_t)ss_bucket_resolution(b)));
            json_object_set_new(o, "buckets", json_integer((json_int_t)ss_bucket_count(b)));
            json_object_set_new(o, "examples", json_integer((json_int_t)ss_bucket_size(b)));
            json_array_append_new(list, o);
        } else {
            json_decref(jk);
            printf("%-20s %-24s %10" PRIu64 " %10" PRIu64 "\n", name, by, ss_bucket_resolution(b),
                   ss_bucket_count(b));
        }
        ss_bucket_free(b);
    }
    if (json && rc == SS_EXIT_OK) ss__json_print(list);
    json_decref(list);
    ss_close(s);
    return rc == SS_EXIT_OK && failed ? SS_EXIT_ERROR : rc;
}

static int index_rm(int argc, char **argv) {
    if (argc != 4) return ss__cli_usage_error("index", "rm needs STORE NAME");
    char key[SS_MAX_ATTR_NAME + 16], what[SS_MAX_ATTR_NAME + 16];
    snprintf(key, sizeof key, "%s%s", SS_BUCKET_ATTR_PREFIX, argv[3]);
    snprintf(what, sizeof what, "index '%s'", argv[3]);
    return ss__cli_remove_attr("index", argv[2], key, what);
}

int ss__cmd_index(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(index_usage, stdout);
            return SS_EXIT_OK;
        }
    }
    if (argc > 1 && !strcmp(argv[1], "list")) return index_list(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "rm")) return index_rm(argc, argv);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--samples") || !strncmp(argv[i], "--samples=", 10))
            return ss__cmd_index_samples(argc, argv);
    return index_build(argc, argv);
}

static int index_build(int argc, char **argv) {
    static const struct option longopts[] = {
        {"by", required_argument, 0, 'b'},   {"resolution", required_argument, 0, 'r'},
        {"name", required_argument, 0, 'n'}, {"force", no_argument, 0, 'f'},
        {"help", no_argument, 0, 'h'},       {0, 0, 0, 0}};
    const char *by = NULL, *name = NULL, *res_text = NULL;
    int c, force = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":b:r:n:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'b':
            by = optarg;
            break;
        case 'r':
            res_text = optarg;
            break;
        case 'n':
            name = optarg;
            break;
        case 'f':
            force = 1;
            break;
        default:
            return ss__cli_bad_option("index", c, argv);
        }
    }
    if (optind + 1 != argc) return ss__cli_usage_error("index", "expected one STORE argument");
    if (!by) return ss__cli_usage_error("index", "--by FIELD[,FIELD] is required");
    if (!res_text) return ss__cli_usage_error("index", "--resolution R is required");
    uint64_t res;
    if (ss__cli_number("index", "--resolution", res_text, 1, UINT64_MAX, &res))
        return SS_EXIT_USAGE;
    if (!name) name = by;
    const char *path = argv[optind];

    ss_store *s;
    if (ss__cli_open(&s, "index", path, 0)) return SS_EXIT_ERROR;
    uint32_t fields[SS_BUCKET_MAX_KEYS];
    size_t nkeys = 0;
    char buf[512];
    if (strlen(by) >= sizeof buf) {
        ss_close(s);
        return ss__cli_usage_error("index", "--by is too long");
    }
    strcpy(buf, by);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (nkeys == SS_BUCKET_MAX_KEYS) {
            ss_close(s);
            return ss__cli_usage_error("index", "--by takes at most %d fields", SS_BUCKET_MAX_KEYS);
        }
        uint32_t f;
        ss_field def;
        if (ss_field_index(&f, s, tok)) {
            ss_close(s);
            fprintf(stderr, "seqstore index: unknown field '%s' in %s\n", tok, path);
            return SS_EXIT_ERROR;
        }
        ss_field_info(&def, s, f);
        if (!def.sequence) {
            ss_close(s);
            fprintf(stderr,
                    "seqstore index: field '%s' is fixed (one row per example, all of length "
                    "1): --by takes sequence fields\n",
                    tok);
            return SS_EXIT_ERROR;
        }
        fields[nkeys++] = f;
    }
    char key[SS_MAX_ATTR_NAME + 16], what[SS_MAX_ATTR_NAME + 16];
    snprintf(key, sizeof key, "%s%s", SS_BUCKET_ATTR_PREFIX, name);
    snprintf(what, sizeof what, "index '%s'", name);
    int refused = nkeys && !force && ss__cli_refuse_existing("index", s, key, what);
    ss_close(s);
    if (nkeys == 0) return ss__cli_usage_error("index", "--by names no field");
    if (refused) return SS_EXIT_ERROR;
    ss_bucket_options bo = SS_BUCKET_OPTIONS_INIT;
    bo.resolution = res;
    if (ss_bucket_save(path, name, fields, nkeys, &bo))
        return ss__cli_store_error("index", "build '%s'", name);

    if (ss__cli_open(&s, "index", path, 0)) return SS_EXIT_ERROR;
    ss_bucket *b;
    if (ss_bucket_open(&b, s, name)) {
        ss_close(s);
        return ss__cli_store_error("index", "reopen '%s'", name);
    }
    uint64_t n = ss_bucket_size(b), nb = ss_bucket_count(b);
    printf("index '%s': %" PRIu64 " example%s in %" PRIu64 " bucket%s (resolution %" PRIu64
           ", by %s)\n",
           name, n, n == 1 ? "" : "s", nb, nb == 1 ? "" : "s", res, by);
    ss_bucket_free(b);
    ss_close(s);
    return SS_EXIT_OK;
}
