/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_split.c - `seqstore split`: add, list and show named index-range splits. */
#include "commands.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char *const split_usage =
    "usage: seqstore split add STORE NAME RANGES [--force]\n"
    "       seqstore split kfold STORE K [--shuffle] [--seed S] [--prefix P] [--force]\n"
    "       seqstore split list STORE [--json] [--nolock]\n"
    "       seqstore split show STORE NAME [--json] [--nolock]\n"
    "       seqstore split rm STORE NAME\n"
    "\n"
    "Named splits are selections of examples stored in the store (attribute\n"
    "ss.split.NAME), usable by name from the SDK (ss_split_load) and the CLI.\n"
    "\n"
    "RANGES is a comma-separated list of half-open ranges A:B or single indices A,\n"
    "e.g. '0:800,900:1000'. A negative bound counts from the end ('-100:' is the\n"
    "last 100 examples); an omitted start is 0, an omitted end is the count.\n"
    "Ranges must not overlap and must lie inside the store: a range that does not\n"
    "is a usage error (exit 2), as for 'cat --range' and 'export --range'.\n"
    "\n"
    "  add     store RANGES as split NAME (--force replaces an existing split)\n"
    "  kfold   store K folds as P0.train, P0.valid, ..., P{K-1}.valid (P defaults\n"
    "          to 'fold'); contiguous folds, or a seeded shuffled assignment\n"
    "  list    print every split: name, example count, ranges\n"
    "  show    print one split's example count and ranges\n"
    "  rm      remove split NAME\n"
    "\n"
    "options: --json  machine-readable output; --nolock  read without a lock file\n"
    "(read-only media; no writer may run); -h, --help  this text\n";

typedef struct split_args {
    const char *pos[4];
    int npos;
    int json, force, shuffle, nolock;
    uint64_t seed;
    const char *prefix;
} split_args;

/* Manual parsing: ranges such as "-100:" must not be taken for options. */
static int split_parse_args(int argc, char **argv, split_args *a) {
    memset(a, 0, sizeof *a);
    a->prefix = "fold";
    int only_pos = 0;
    for (int i = 2; i < argc; i++) {
        const char *s = argv[i];
        if (!only_pos && strcmp(s, "--") == 0) {
            only_pos = 1;
        } else if (!only_pos && strcmp(s, "--json") == 0) {
            a->json = 1;
        } else if (!only_pos && strcmp(s, "--nolock") == 0) {
            a->nolock = 1;
        } else if (!only_pos && strcmp(s, "--force") == 0) {
            a->force = 1;
        } else if (!only_pos && strcmp(s, "--shuffle") == 0) {
            a->shuffle = 1;
        } else if (!only_pos && strcmp(s, "--seed") == 0) {
            if (ss__cli_number("split", "--seed", i + 1 < argc ? argv[i + 1] : NULL, 0, UINT64_MAX,
                               &a->seed))
                return SS_EXIT_USAGE;
            i++;
        } else if (!only_pos && strcmp(s, "--prefix") == 0) {
            if (i + 1 >= argc) return ss__cli_usage_error("split", "--prefix needs a value");
            a->prefix = argv[++i];
        } else if (!only_pos && s[0] == '-' && s[1] == '-') {
            return ss__cli_usage_error("split", "unknown option '%s'", s);
        } else {
            if (a->npos == 4) return ss__cli_usage_error("split", "too many arguments");
            a->pos[a->npos++] = s;
        }
    }
    return 0;
}

/* 0 when the store has no split `name` (or --force replaces it); else
 * SS_EXIT_ERROR, printed: it exists, or exists and cannot be read. */
static int split_refuse_existing(const ss_store *s, const char *name, int force) {
    char key[SS_MAX_ATTR_NAME + 16], what[SS_MAX_ATTR_NAME + 16];
    snprintf(key, sizeof key, "%s%s", SS_SPLIT_ATTR_PREFIX, name);
    snprintf(what, sizeof what, "split '%s'", name);
    return force ? 0 : ss__cli_refuse_existing("split", s, key, what);
}

static int split_add(const split_args *a) {
    if (a->npos != 3) return ss__cli_usage_error("split", "add needs STORE NAME RANGES");
    ss_store *s;
    if (ss__cli_open(&s, "split", a->pos[0], 0)) return SS_EXIT_ERROR;
    uint64_t count = ss_count(s);
    int refused = split_refuse_existing(s, a->pos[1], a->force);
    ss_close(s);
    if (refused) return SS_EXIT_ERROR;
    ss_selection *sel;
    int prc = ss_selection_parse(&sel, a->pos[2], count);
    if (prc == SS_EINVAL || prc == SS_ERANGE) /* as `cat --range`: a usage error */
        return ss__cli_usage_error("split", "ranges '%s': %s", a->pos[2], ss_error_message());
    if (prc) return ss__cli_store_error("split", "ranges '%s'", a->pos[2]);
    int rc = ss_split_save(a->pos[0], a->pos[1], sel);
    uint64_t n = ss_selection_count(sel);
    ss_selection_free(sel);
    if (rc) return ss__cli_store_error("split", "add '%s'", a->pos[1]);
    printf("split '%s': %" PRIu64 " example%s\n", a->pos[1], n, n == 1 ? "" : "s");
    return SS_EXIT_OK;
}

static int split_kfold(const split_args *a) {
    if (a->npos != 2) return ss__cli_usage_error("split", "kfold needs STORE K");
    uint64_t k;
    if (ss__cli_number("split", "K", a->pos[1], 2, 100000, &k)) return SS_EXIT_USAGE;
    ss_store *s;
    if (ss__cli_open(&s, "split", a->pos[0], 0)) return SS_EXIT_ERROR;
    uint64_t count = ss_count(s);
    char name[SS_MAX_ATTR_NAME + 1];
    for (uint64_t i = 0; i < k && !a->force; i++) {
        for (int v = 0; v < 2; v++) {
            snprintf(name, sizeof name, "%s%" PRIu64 ".%s", a->prefix, i, v ? "valid" : "train");
            if (split_refuse_existing(s, name, 0)) {
                ss_close(s);
                return SS_EXIT_ERROR;
            }
        }
    }
    ss_close(s);
    if (k > count) {
        fprintf(stderr,
                "seqstore split: %" PRIu64 " folds need at least %" PRIu64
                " examples; '%s' holds %" PRIu64 "\n",
                k, k, a->pos[0], count);
        return SS_EXIT_ERROR;
    }
    ss_selection *all;
    if (ss_selection_all(&all, count)) return ss__cli_store_error("split", "out of memory");
    ss_writer *w;
    if (ss_sections_writer_open(&w, a->pos[0])) {
        ss_selection_free(all);
        return ss__cli_store_error("split", "open '%s' for writing", a->pos[0]);
    }
    ss_kfold_options ko = SS_KFOLD_OPTIONS_INIT;
    ko.shuffle = a->shuffle;
    ko.seed = a->seed;
    int rc = 0;
    for (uint64_t i = 0; i < k && !rc; i++) {
        ss_selection *tr = NULL, *va = NULL;
        rc = ss_selection_kfold(&tr, &va, all, (uint32_t)k, (uint32_t)i, &ko);
        snprintf(name, sizeof name, "%s%" PRIu64 ".train", a->prefix, i);
        if (!rc) rc = ss_split_set(w, name, tr);
        snprintf(name, sizeof name, "%s%" PRIu64 ".valid", a->prefix, i);
        if (!rc) rc = ss_split_set(w, name, va);
        if (!rc)
            printf("%s%" PRIu64 ": train %" PRIu64 ", valid %" PRIu64 "\n", a->prefix, i,
                   ss_selection_count(tr), ss_selection_count(va));
        ss_selection_free(tr);
        ss_selection_free(va);
    }
    if (!rc) rc = ss_writer_finish(w);
    ss_writer_free(w);
    ss_selection_free(all);
    if (rc)
        return ss__cli_store_error("split", "cannot store %" PRIu64 " folds in '%s'", k, a->pos[0]);
    return SS_EXIT_OK;
}

/* Text of a selection in a fresh malloc'ed string (NULL on failure). */
static char *selection_text(const ss_selection *sel) {
    size_t len = 0;
    ss_selection_format(NULL, 0, &len, sel);
    char *buf = malloc(len + 1);
    if (buf && ss_selection_format(buf, len + 1, NULL, sel)) {
        free(buf);
        return NULL;
    }
    return buf;
}

static json_t *split_json(const char *name, const ss_selection *sel) {
    json_t *o = json_object(), *r = json_array();
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "count", json_integer((json_int_t)ss_selection_count(sel)));
    const ss_range *rg = ss_selection_ranges(sel);
    for (size_t i = 0; i < ss_selection_range_count(sel); i++) {
        json_t *p = json_array();
        json_array_append_new(p, json_integer((json_int_t)rg[i].start));
        json_array_append_new(p, json_integer((json_int_t)rg[i].end));
        json_array_append_new(r, p);
    }
    json_object_set_new(o, "ranges", r);
    return o;
}

static int split_print(const char *name, const ss_selection *sel, int json, json_t *list) {
    if (json) {
        json_t *o = split_json(name, sel);
        if (list) {
            json_array_append_new(list, o);
        } else {
            ss__json_print(o);
            json_decref(o);
        }
        return 0;
    }
    char *text = selection_text(sel);
    if (!text) return -1;
    printf("%-20s %12" PRIu64 "  %s\n", name, ss_selection_count(sel), text);
    free(text);
    return 0;
}

static int split_list(const split_args *a) {
    if (a->npos != 1) return ss__cli_usage_error("split", "list needs STORE");
    ss_store *s;
    if (ss__cli_open(&s, "split", a->pos[0], a->nolock ? SS_OPEN_NOLOCK : 0)) return SS_EXIT_ERROR;
    json_t *list = a->json ? json_array() : NULL;
    size_t plen = strlen(SS_SPLIT_ATTR_PREFIX);
    int rc = 0;
    if (!a->json) printf("%-20s %12s  %s\n", "NAME", "EXAMPLES", "RANGES");
    for (uint64_t k = 0; k < ss_attr_count(s) && !rc; k++) {
        ss_attr at;
        if ((rc = ss_attr_at(&at, s, k)) != 0) break;
        if (strncmp(at.name, SS_SPLIT_ATTR_PREFIX, plen) != 0) continue;
        ss_selection *sel;
        if ((rc = ss_split_load(&sel, s, at.name + plen)) != 0) break;
        if (split_print(at.name + plen, sel, a->json, list)) rc = SS_ENOMEM;
        ss_selection_free(sel);
    }
    if (!rc && list) {
        ss__json_print(list);
    }
    json_decref(list);
    ss_close(s);
    if (rc) return ss__cli_store_error("split", "list '%s'", a->pos[0]);
    return SS_EXIT_OK;
}

static int split_show(const split_args *a) {
    if (a->npos != 2) return ss__cli_usage_error("split", "show needs STORE NAME");
    ss_store *s;
    if (ss__cli_open(&s, "split", a->pos[0], a->nolock ? SS_OPEN_NOLOCK : 0)) return SS_EXIT_ERROR;
    ss_selection *sel;
    int rc = ss_split_load(&sel, s, a->pos[1]);
    if (!rc) {
        if (a->json) {
            split_print(a->pos[1], sel, 1, NULL);
        } else {
            char *text = selection_text(sel);
            if (text)
                printf("split %s: %" PRIu64 " of %" PRIu64 " example%s in %zu range%s\n%s\n",
                       a->pos[1], ss_selection_count(sel), ss_count(s), ss_count(s) == 1 ? "" : "s",
                       ss_selection_range_count(sel), ss_selection_range_count(sel) == 1 ? "" : "s",
                       text);
            else
                rc = SS_ENOMEM;
            free(text);
        }
        ss_selection_free(sel);
    }
    ss_close(s);
    if (rc) return ss__cli_store_error("split", "show '%s'", a->pos[1]);
    return SS_EXIT_OK;
}

static int split_rm(const split_args *a) {
    if (a->npos != 2) return ss__cli_usage_error("split", "rm needs STORE NAME");
    char key[SS_MAX_ATTR_NAME + 16], what[SS_MAX_ATTR_NAME + 16];
    snprintf(key, sizeof key, "%s%s", SS_SPLIT_ATTR_PREFIX, a->pos[1]);
    snprintf(what, sizeof what, "split '%s'", a->pos[1]);
    return ss__cli_remove_attr("split", a->pos[0], key, what);
}

int ss__cmd_split(int argc, char **argv) {
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(split_usage, stdout);
            return SS_EXIT_OK;
        }
    }
    if (argc < 2)
        return ss__cli_usage_error("split", "missing subcommand (add, kfold, list, show, rm)");
    split_args a;
    int rc = split_parse_args(argc, argv, &a);
    if (rc) return rc;
    const char *sub = argv[1];
    int writes = !strcmp(sub, "add") || !strcmp(sub, "kfold") || !strcmp(sub, "rm");
    if (a.nolock && writes)
        return ss__cli_usage_error("split", "--nolock applies to list and show (%s writes)", sub);
    if (strcmp(sub, "rm") == 0) return split_rm(&a);
    if (strcmp(sub, "add") == 0) return split_add(&a);
    if (strcmp(sub, "kfold") == 0) return split_kfold(&a);
    if (strcmp(sub, "list") == 0) return split_list(&a);
    if (strcmp(sub, "show") == 0) return split_show(&a);
    return ss__cli_usage_error("split", "unknown subcommand '%s'", sub);
}
