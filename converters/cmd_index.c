/* cmd_index.c - `seqstore index`: build a bucket index sorted by example lengths. */
#include "commands.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const index_usage =
    "usage: seqstore index STORE --by FIELD[,FIELD...] --resolution R [--name NAME]\n"
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
    "  -h, --help        this text\n";

int ss_cmd_index(int argc, char **argv) {
    static const struct option longopts[] = {{"by", required_argument, 0, 'b'},
                                             {"resolution", required_argument, 0, 'r'},
                                             {"name", required_argument, 0, 'n'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    const char *by = NULL, *name = NULL, *res_text = NULL;
    int c;
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
        case 'h':
            fputs(index_usage, stdout);
            return SS_EXIT_OK;
        default:
            return ss_cli_bad_option("index", c, argv);
        }
    }
    if (optind + 1 != argc) return ss_cli_usage_error("index", "expected one STORE argument");
    if (!by) return ss_cli_usage_error("index", "--by FIELD[,FIELD] is required");
    if (!res_text) return ss_cli_usage_error("index", "--resolution R is required");
    uint64_t res;
    if (ss_cli_number("index", "--resolution", res_text, 1, UINT64_MAX, &res)) return SS_EXIT_USAGE;
    if (!name) name = by;
    const char *path = argv[optind];

    ss_store *s;
    if (ss_cli_open(&s, "index", path, 0)) return SS_EXIT_ERROR;
    uint32_t fields[SS_BUCKET_MAX_KEYS];
    size_t nkeys = 0;
    char buf[512];
    if (strlen(by) >= sizeof buf) {
        ss_close(s);
        return ss_cli_usage_error("index", "--by is too long");
    }
    strcpy(buf, by);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (nkeys == SS_BUCKET_MAX_KEYS) {
            ss_close(s);
            return ss_cli_usage_error("index", "--by takes at most %d fields", SS_BUCKET_MAX_KEYS);
        }
        int f = ss_field_index(s, tok);
        if (f < 0) {
            ss_close(s);
            fprintf(stderr, "seqstore index: unknown field '%s' in %s\n", tok, path);
            return SS_EXIT_ERROR;
        }
        fields[nkeys++] = (uint32_t)f;
    }
    ss_close(s);
    if (nkeys == 0) return ss_cli_usage_error("index", "--by names no field");
    if (ss_bucket_save(path, name, fields, nkeys, res))
        return ss_cli_store_error("index", "build '%s'", name);

    if (ss_cli_open(&s, "index", path, 0)) return SS_EXIT_ERROR;
    ss_bucket *b;
    if (ss_bucket_open(&b, s, name)) {
        ss_close(s);
        return ss_cli_store_error("index", "reopen '%s'", name);
    }
    printf("index '%s': %" PRIu64 " examples in %" PRIu64 " buckets (resolution %" PRIu64
           ", by %s)\n",
           name, ss_bucket_size(b), ss_bucket_count(b), res, by);
    ss_bucket_free(b);
    ss_close(s);
    return SS_EXIT_OK;
}
