/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_dataset.c - `seqstore dataset build`: write the manifest of a dataset
 * of shards (spec/FORMAT.md §13) after checking the shards. */
#include "commands.h"
#include "manifest.h"
#include "sections.h"
#ifdef SS_HAVE_REMOTE
#include "remote_cli.h"
#endif

#include <dirent.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

typedef struct ds_shard {
    char *name; /* relative to DIR */
    ss_store *s;
    uint32_t k, n; /* its source.shard K/N, or n = 0 */
} ds_shard;

static void usage(void) {
    printf("usage: seqstore dataset build DIR [SHARD...] [--verify]\n"
           "       seqstore dataset build s3://BUCKET/PREFIX [SHARD...] --scratch DIR\n"
           "       seqstore dataset push DIR URL  (see dataset push --help)\n       seqstore dataset pull URL DIR\n\n"
           "Check the shard stores of the dataset directory DIR and write its manifest\n"
           "DIR/" SS_MANIFEST_NAME " (atomically). Without SHARD names, the shards are the\n"
           "*.ss files of DIR (but " SS_SECTIONS_NAME "), ordered by their source.shard attribute K/N (written by\n"
           "`seqstore convert ... --shard K/N`), which must be exactly 0/N .. N-1/N.\n"
           "With SHARD names (paths relative to DIR), the shards are those, in that order.\n"
           "Every shard must be complete, with the first one's schema and the same\n"
           "attributes (but convert.options, source.shard and the per-shard ss.* ones).\n"
           "A dataset is then opened like a store: `seqstore info DIR`, ss_open(DIR).\n"
           "It also writes DIR/" SS_SECTIONS_NAME ": every sequence field's lengths over\n"
           "the whole dataset, and later the splits and bucket indices that `seqstore\n"
           "split DIR` and `seqstore index DIR` make (kept when the manifest is unchanged).\n"
           "With a URL, the shards are those `seqstore convert ... -o URL/NAME.ss --scratch\n"
           "DIR` wrote to DIR and uploaded: the manifest is built in DIR from them, and\n"
           "then shards missing under the URL, the sections store and the manifest (last)\n"
           "are uploaded, as `seqstore dataset push --resume DIR URL` does. Named shards\n"
           "that DIR lacks (converted on other nodes) are first downloaded into DIR.\n"
           "  --verify   also recompute every checksum of every shard (reads all data)\n"
           "  --scratch DIR  with a URL: the local directory of the shards (default:\n"
           "             $SEQSTORE_SCRATCH_DIR)\n"
           "exit codes: 0 ok, 1 error, 2 usage error, 3 a shard is corrupt\n");
}

/* "K/N" of the shard's source.shard attribute, if any (else d->n = 0).
 * @return 0, or SS_EXIT_ERROR (printed) when it is damaged. */
static int read_shard_attr(ds_shard *d) {
    ss_attr a;
    char buf[40];
    int found;
    d->n = 0;
    if (ss__cli_attr_find(&a, &found, "dataset", d->s, "source.shard")) return SS_EXIT_ERROR;
    if (!found || a.type != SS_ATTR_TEXT || a.size >= sizeof buf) return 0;
    memcpy(buf, a.data, a.size);
    buf[a.size] = 0;
    char *slash = strchr(buf, '/');
    uint64_t k, n;
    if (!slash) return 0;
    *slash = 0;
    if (ss__parse_u64(buf, 0, UINT32_MAX, &k) || ss__parse_u64(slash + 1, 1, UINT32_MAX, &n) ||
        k >= n)
        return 0;
    d->k = (uint32_t)k;
    d->n = (uint32_t)n;
    return 0;
}

static int by_shard(const void *a, const void *b) {
    const ds_shard *x = a, *y = b;
    return x->k < y->k ? -1 : x->k > y->k;
}

/* The *.ss files of `dir`, sorted by name (ordered by source.shard later). */
static int list_dir(const char *dir, ds_shard **out, size_t *n) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    size_t cap = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 4 || strcmp(e->d_name + len - 3, ".ss") ||
            !strcmp(e->d_name, SS_SECTIONS_NAME)) /* the dataset's own, not a shard */
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            ds_shard *p = realloc(*out, cap * sizeof *p);
            if (!p) break;
            *out = p;
        }
        (*out)[*n] = (ds_shard){strdup(e->d_name), NULL, 0, 0};
        if ((*out)[*n].name) ++*n;
    }
    closedir(d);
    return 0;
}

/* Attributes that every shard of a dataset must share. */
static int shared_attr(const char *name) {
    return strcmp(name, "convert.options") && strcmp(name, "source.shard") &&
           strncmp(name, "ss.", 3);
}

static int same_attrs(const ds_shard *a, const ds_shard *b) {
    for (int pass = 0; pass < 2; pass++) {
        const ds_shard *x = pass ? b : a, *y = pass ? a : b;
        for (uint64_t j = 0; j < ss_attr_count(x->s); j++) {
            ss_attr p, q;
            if (ss_attr_at(&p, x->s, j)) return ss__cli_store_error("dataset", "%s", x->name);
            if (!shared_attr(p.name)) continue;
            int rc = ss_attr_get(&q, y->s, p.name);
            if (rc && rc != SS_ENOTFOUND) /* damaged: not "differs" */
                return ss__cli_store_error("dataset", "shard '%s'", y->name);
            if (rc || q.type != p.type || q.size != p.size || memcmp(p.data, q.data, p.size)) {
                fprintf(stderr,
                        "seqstore dataset: shard '%s': attribute '%s' differs from shard "
                        "'%s' (the shards of a dataset share their attributes)\n",
                        b->name, p.name, a->name);
                return SS_EXIT_ERROR;
            }
        }
    }
    return 0;
}

static int open_shard(const char *dir, ds_shard *d, unsigned flags) {
    char *path = NULL;
    if (asprintf(&path, "%s/%s", dir, d->name) < 0) return SS_EXIT_ERROR;
    /* mapped at its size, not 1 TiB: thousands of maps in a row cost their
     * page tables at every open and close */
    int rc = ss__open_shard(&d->s, path, SS_OPEN_NOLOCK | flags);
    free(path);
    if (rc) return ss__cli_store_error("dataset", "shard '%s'", d->name);
    return read_shard_attr(d);
}

static void close_shard(ds_shard *d) {
    ss_close(d->s);
    d->s = NULL;
}

/* Without names: every *.ss file's source.shard, then the order K = 0..N-1.
 * Each shard is closed again: a dataset may have more shards than a process
 * may hold open files or maps. */
static int order_shards(const char *dir, ds_shard *sh, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int rc = open_shard(dir, &sh[i], 0);
        close_shard(&sh[i]);
        if (rc) return rc;
    }
    for (size_t i = 0; i < n; i++)
        if (!sh[i].n || sh[i].n != sh[0].n) {
            fprintf(stderr,
                    "seqstore dataset: '%s' has no source.shard K/N (or another N than "
                    "'%s'): name the shards in order\n",
                    sh[i].name, sh[0].name);
            return SS_EXIT_ERROR;
        }
    qsort(sh, n, sizeof *sh, by_shard);
    for (size_t i = 0; i < n; i++)
        if (sh[i].k != i || n != sh[0].n) {
            fprintf(stderr,
                    "seqstore dataset: the shards are not exactly 0/%u .. %u/%u: %s "
                    "(missing or duplicate shard)\n",
                    sh[0].n, sh[0].n - 1, sh[0].n, sh[i].name);
            return SS_EXIT_ERROR;
        }
    return 0;
}

/* Shard i (open) checked against the first, verified with --verify, added to
 * the manifest and its lengths to the dataset's. */
static int add_shard(ss_manifest *m, ss_global_lengths *g, const ds_shard *sh, size_t i,
                     int verify) {
    const ss_store *s = sh[i].s;
    if (i) {
        int rc = same_attrs(&sh[0], &sh[i]);
        if (rc) return rc;
    }
    uint64_t problems = 0;
    if (verify && ss_verify(&problems, sh[i].s, NULL, NULL)) {
        fprintf(stderr, "seqstore dataset: shard '%s': %s\n", sh[i].name, ss_error_message());
        return SS_EXIT_CORRUPT;
    }
    uint64_t digest, rows[SS_MAX_FIELDS] = {0};
    for (uint32_t f = 0; f < m->nfields; f++) rows[f] = ss_flat_size(s, f);
    if (ss__store_header_digest(&digest, s) ||
        ss__manifest_add(m, sh[i].name, ss_count(s), digest, rows) ||
        ss__manifest_check_shard(m, (uint32_t)i, s) || ss__global_lengths_add(g, s))
        return ss__cli_store_error("dataset", "shard '%s'", sh[i].name);
    if (!ss__store_has_content_digest(s))
        fprintf(stderr,
                "seqstore dataset: note: shard '%s' was written by an older seqstore, "
                "without a content digest: the manifest binds its counts, not its bytes "
                "(convert it again to bind them)\n",
                sh[i].name);
    return 0;
}

static int build_sections(const char *dir, ss_manifest *m, const ss_global_lengths *g);

/* One pass over the shards in order, each open only while it is checked
 * (the first throughout, the reference of the others): the cost is per
 * shard plus a copy of each shard's stored lengths, never a pass over its
 * examples. */
static int build_manifest(const char *dir, ds_shard *sh, size_t n, int verify) {
    ss_manifest m;
    ss_global_lengths g;
    memset(&g, 0, sizeof g);
    int rc = open_shard(dir, &sh[0], verify ? SS_OPEN_VERIFY : 0);
    if (rc) return rc;
    ss__manifest_init(&m, sh[0].s);
    g.nfields = m.nfields;
    for (size_t i = 0; i < n && !rc; i++) {
        if (i) rc = open_shard(dir, &sh[i], verify ? SS_OPEN_VERIFY : 0);
        if (!rc) rc = add_shard(&m, &g, sh, i, verify);
        if (i) close_shard(&sh[i]);
    }
    if (!rc) rc = build_sections(dir, &m, &g);
    if (!rc && ss__manifest_write(&m, dir)) rc = ss__cli_store_error("dataset", "%s", dir);
    if (!rc)
        printf("%s: %u shards, %llu examples\n", dir, m.nshards, (unsigned long long)m.examples);
    ss__manifest_free(&m);
    ss__global_lengths_free(&g);
    close_shard(&sh[0]);
    return rc;
}

/* The sections store (spec/FORMAT.md §13.1), bound to the manifest about to
 * be written: written before it, so a reader of the new manifest finds its
 * sections. */
static int build_sections(const char *dir, ss_manifest *m, const ss_global_lengths *g) {
    char *text = NULL;
    size_t len = 0;
    ss_manifest parsed = {0};
    int rc = ss__manifest_format(m, &text, &len);
    if (!rc) rc = ss__manifest_parse(&parsed, text, len); /* its checksum line */
    m->checksum = parsed.checksum;
    ss__manifest_free(&parsed);
    free(text);
    uint64_t kept = 0, dropped = 0;
    if (!rc) rc = ss__sections_build(dir, m, g, &kept, &dropped);
    if (rc) return ss__cli_store_error("dataset", "%s", dir);
    if (kept) printf("%s: kept %llu splits and bucket indices\n", dir, (unsigned long long)kept);
    if (dropped)
        fprintf(stderr,
                "seqstore dataset: %s: dropped %llu splits and bucket indices of the previous "
                "build (they numbered other examples); make them again\n",
                dir, (unsigned long long)dropped);
    return 0;
}

static int dataset_build(int argc, char **argv) {
    static const struct option longopts[] = {{"verify", no_argument, 0, 'v'},
                                             {"scratch", required_argument, 0, 's'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    int verify = 0, c;
    const char *scratch = NULL;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'v')
            verify = 1;
        else if (c == 's')
            scratch = optarg;
        else if (c == 'h') {
            usage();
            return SS_EXIT_OK;
        } else
            return ss__cli_bad_option("dataset", c, argv);
    }
    if (optind >= argc) return ss__cli_usage_error("dataset", "expected: build DIR [SHARD...]");
    const char *dir = argv[optind++];
#ifdef SS_HAVE_REMOTE
    const char *url = NULL; /* a dataset URL: DIR is then the scratch directory */
#endif
    if (scratch && !ss_is_url(dir))
        return ss__cli_usage_error("dataset", "--scratch is for a dataset URL (s3://...)");
    if (ss_is_url(dir)) {
#ifdef SS_HAVE_REMOTE
        url = dir;
        if (!(dir = ss__cli_scratch_dir(scratch)))
            return ss__cli_usage_error("dataset", "build %s needs --scratch DIR (or "
                                                  "SEQSTORE_SCRATCH_DIR): the local directory "
                                                  "the shards were converted in", url);
#else
        fprintf(stderr, "seqstore dataset: build %s: this seqstore was built without remote "
                        "datasets (cmake -DSS_REMOTE=ON, which needs libcurl and expat)\n", dir);
        return SS_EXIT_ERROR;
#endif
    }
    ds_shard *sh = NULL;
    size_t n = 0;
    int ordered = optind < argc;
    if (ordered) {
        sh = calloc((size_t)(argc - optind), sizeof *sh);
        for (int i = optind; sh && i < argc; i++) sh[n++].name = strdup(argv[i]);
    } else if (list_dir(dir, &sh, &n)) {
        fprintf(stderr, "seqstore dataset: cannot read the directory '%s'\n", dir);
        return SS_EXIT_ERROR;
    }
    int rc = !n        ? ss__cli_usage_error("dataset", "no shard (*.ss) in '%s'", dir)
             : ordered ? 0
                       : order_shards(dir, sh, n);
#ifdef SS_HAVE_REMOTE
    if (!rc && url && ordered) { /* named shards converted on other nodes */
        char **names = calloc(n, sizeof *names);
        for (size_t i = 0; names && i < n; i++) names[i] = sh[i].name;
        rc = names ? ss__cli_fetch_missing(dir, url, names, n) : SS_EXIT_ERROR;
        free(names);
    }
#endif
    if (!rc) rc = build_manifest(dir, sh, n, verify);
#ifdef SS_HAVE_REMOTE
    if (!rc && url) rc = ss__cli_push(dir, url, 1, 0);
#endif
    for (size_t i = 0; i < n; i++) {
        ss_close(sh[i].s);
        free(sh[i].name);
    }
    free(sh);
    return rc;
}

int ss__cmd_dataset(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "build")) return dataset_build(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "push") || !strcmp(argv[1], "pull"))) {
#ifdef SS_HAVE_REMOTE
        return ss__cmd_dataset_remote(argc - 1, argv + 1);
#else
        fprintf(stderr, "seqstore dataset: %s: this seqstore was built without remote datasets "
                        "(cmake -DSS_REMOTE=ON, which needs libcurl and expat)\n", argv[1]);
        return SS_EXIT_ERROR;
#endif
    }
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage();
        return SS_EXIT_OK;
    }
    return ss__cli_usage_error("dataset", "expected 'dataset build DIR [SHARD...]', 'dataset push DIR URL' or "
                                            "'dataset pull URL DIR'");
}
