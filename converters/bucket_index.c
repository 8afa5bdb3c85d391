/* SPDX-License-Identifier: BSD-2-Clause */
/* bucket_index.c - the bucket indices a conversion builds once its store is
 * finished (--index-by, and with --append the store's own). */
#include "conv_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------- bucket indices */

/* Add (or, for a name already listed, replace) an index to build at finish.
 * Returns 0 or 1 (error printed). */
int ss__conv_add_index(ss_conv *c, const char *name, const uint32_t *fields, size_t nkeys,
                       uint64_t resolution) {
    conv_index *x = NULL;
    for (uint32_t k = 0; k < c->nindices; k++)
        if (!strcmp(c->indices[k].name, name)) x = &c->indices[k];
    if (!x) {
        conv_index *p = realloc(c->indices, (c->nindices + 1) * sizeof *p);
        char *n = strdup(name);
        if (!p || !n) {
            if (p) c->indices = p;
            free(n);
            return ss__conv_error(c, "out of memory");
        }
        c->indices = p;
        x = &c->indices[c->nindices++];
        x->name = n;
    }
    memcpy(x->fields, fields, nkeys * sizeof *fields);
    x->nkeys = nkeys;
    x->resolution = resolution;
    return 0;
}

/* --append: remember every bucket index of the existing store (its keys and
 * resolution), to rebuild it once the new examples are in. */
int ss__conv_collect_indices(ss_conv *c, const ss_store *s) {
    size_t plen = strlen(SS_BUCKET_ATTR_PREFIX);
    uint64_t n = ss_attr_count(s);
    for (uint64_t k = 0; k < n; k++) {
        ss_attr a;
        if (ss_attr_at(&a, s, k)) return ss__conv_ss_error(c, "cannot read the attributes");
        if (strncmp(a.name, SS_BUCKET_ATTR_PREFIX, plen) || !a.name[plen]) continue;
        const char *name = a.name + plen;
        ss_bucket *b;
        if (ss_bucket_open(&b, s, name)) { /* e.g. stale already: left as it is */
            ss__conv_clear_progress(c);
            fprintf(stderr,
                    "seqstore convert: warning: bucket index '%s' is not rebuilt (%s); "
                    "rebuild it with 'seqstore index'\n",
                    name, ss_error_message());
            continue;
        }
        uint32_t fields[SS_BUCKET_MAX_KEYS];
        size_t nkeys = ss_bucket_keys(fields, b);
        uint64_t res = ss_bucket_resolution(b);
        ss_bucket_free(b);
        if (ss__conv_add_index(c, name, fields, nkeys, res)) return 1;
    }
    return 0;
}

/* --index-by: the key fields among the converter's sequence fields. Returns 0
 * or 1 (error printed). */
int ss__conv_resolve_index(ss_conv *c, uint32_t fields[SS_BUCKET_MAX_KEYS], size_t *nkeys) {
    const char *p = c->index_by;
    *nkeys = 0;
    for (;;) {
        size_t len = strcspn(p, ",");
        uint32_t k = 0;
        while (k < c->nfields &&
               (strlen(c->fields[k].name) != len || strncmp(c->fields[k].name, p, len) != 0))
            k++;
        if (len == 0) return ss__conv_error(c, "--index-by: empty field name");
        if (k == c->nfields)
            return ss__conv_error(c, "--index-by: this conversion has no field '%.*s'", (int)len,
                                  p);
        if (!c->fields[k].sequence)
            return ss__conv_error(c, "--index-by: field '%s' is not a sequence field",
                                  c->fields[k].name);
        if (*nkeys == SS_BUCKET_MAX_KEYS)
            return ss__conv_error(c, "--index-by takes at most %d fields", SS_BUCKET_MAX_KEYS);
        fields[(*nkeys)++] = k;
        if (!p[len]) break;
        p += len + 1;
    }
    return 0;
}

/* After the store is finished: build and store every listed index. */
int ss__conv_build_indices(ss_conv *c) {
    for (uint32_t k = 0; k < c->nindices; k++) {
        const conv_index *x = &c->indices[k];
        ss_bucket_options bo = SS_BUCKET_OPTIONS_INIT;
        bo.resolution = x->resolution;
        if (ss_bucket_save(c->opts.output, x->name, x->fields, x->nkeys, &bo))
            return ss__conv_ss_error(c,
                                     "'%s' is complete but its bucket index '%s' could not be "
                                     "built (rebuild it with 'seqstore index')",
                                     c->opts.output, x->name);
    }
    return 0;
}

/* --append: the store must exist, be complete and have our schema. */
