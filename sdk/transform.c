/* SPDX-License-Identifier: BSD-2-Clause */
/* transform.c - transform pipelines, the random numbers handed to transforms,
 * and example helpers (see seqstore/transform.h). */
#include "internal.h"
#include "rng.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A transform with its own copy of its name. */
typedef struct entry {
    ss_transform t;
    char *name;
} entry;

struct ss_pipeline {
    entry *e;
    uint32_t n, cap;
};

uint64_t ss_random_next(ss_rng *r) {
    return ss__rng_next(r);
}

uint64_t ss_random_below(ss_rng *r, uint64_t n) {
    return ss__rng_below(r, n);
}

double ss_random_uniform(ss_rng *r) {
    return ss__rng_uniform(r);
}

double ss_random_normal(ss_rng *r) {
    return ss__rng_normal(r);
}

ss_example_field *ss_example_get_field(ss_example *ex, uint32_t field) {
    if (!ex) return NULL;
    for (uint32_t k = 0; k < ex->nfields; k++)
        if (ex->fields[k].field == field) return &ex->fields[k];
    return NULL;
}

int ss_transform_error(ss_example *ex, const char *fmt, ...) {
    if (ex && fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ex->message, sizeof ex->message, fmt, ap);
        va_end(ap);
    }
    return SS_ECALLBACK;
}

void ss_transform_release(ss_transform *t) {
    if (!t) return;
    if (t->free_user && t->user) t->free_user(t->user);
    t->user = NULL;
}

int ss_pipeline_create(ss_pipeline **out) {
    if (!out) return ss__fail(SS_EINVAL, "ss_pipeline_create: out is NULL");
    *out = calloc(1, sizeof **out);
    return *out ? 0 : ss__fail(SS_ENOMEM, "ss_pipeline_create: out of memory");
}

void ss_pipeline_free(ss_pipeline *p) {
    if (!p) return;
    for (uint32_t k = 0; k < p->n; k++) {
        ss_transform_release(&p->e[k].t);
        free(p->e[k].name);
    }
    free(p->e);
    free(p);
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int check_transform(const ss_transform *t) {
    if (t->version != SS_TRANSFORM_VERSION)
        return ss__fail(SS_EINVAL, "ss_pipeline_add: transform version %u is not %u", t->version,
                        SS_TRANSFORM_VERSION);
    const char *name = t->name ? t->name : "transform";
    if (!t->example == !t->batch)
        return ss__fail(SS_EINVAL,
                        "ss_pipeline_add: transform '%s' needs exactly one of "
                        "example and batch callbacks",
                        name);
    int declares = t->dtype != 0 || t->reshape;
    if (declares && t->batch)
        return ss__fail(SS_EINVAL,
                        "ss_pipeline_add: transform '%s': a per-batch transform cannot declare a "
                        "new dtype or shape",
                        name);
    if (declares && t->field == SS_FIELD_NONE)
        return ss__fail(SS_EINVAL,
                        "ss_pipeline_add: transform '%s' declares a new dtype or shape but names "
                        "no field",
                        name);
    if (t->dtype != 0 && ss_dtype_size(t->dtype) == 0)
        return ss__fail(SS_EINVAL, "ss_pipeline_add: transform '%s': unknown dtype %d", name,
                        (int)t->dtype);
    if (t->reshape) {
        if (t->ndim > SS_MAX_DIMS)
            return ss__fail(SS_EINVAL, "ss_pipeline_add: transform '%s': ndim %u > %d", name,
                            t->ndim, SS_MAX_DIMS);
        for (uint32_t k = 0; k < t->ndim; k++)
            if (t->dims[k] == 0)
                return ss__fail(SS_EINVAL, "ss_pipeline_add: transform '%s': dims[%u] is 0", name,
                                k);
    }
    return 0;
}

int ss_pipeline_add(ss_pipeline *p, const ss_transform *t) {
    if (!t) return ss__fail(SS_EINVAL, "ss_pipeline_add: transform is NULL");
    ss_transform copy = *t;
    if (!p) { /* the pipeline takes the transform even when it fails: no leak */
        ss_transform_release(&copy);
        return ss__fail(SS_EINVAL, "ss_pipeline_add: pipeline is NULL");
    }
    int rc = check_transform(t);
    if (rc == 0 && p->n == p->cap) {
        uint32_t cap = p->cap ? 2 * p->cap : 8;
        entry *e = realloc(p->e, cap * sizeof *e);
        if (!e)
            rc = ss__fail(SS_ENOMEM, "ss_pipeline_add: out of memory");
        else {
            p->e = e;
            p->cap = cap;
        }
    }
    entry en = {copy, NULL};
    if (rc == 0) {
        en.name = dup_str(t->name ? t->name : "transform");
        if (!en.name) rc = ss__fail(SS_ENOMEM, "ss_pipeline_add: out of memory");
    }
    if (rc) {
        free(en.name);
        ss_transform_release(&copy);
        return rc;
    }
    en.t.name = en.name;
    p->e[p->n++] = en;
    return 0;
}

uint32_t ss_pipeline_count(const ss_pipeline *p) {
    return p ? p->n : 0;
}

const ss_transform *ss_pipeline_get(const ss_pipeline *p, uint32_t k) {
    return p && k < p->n ? &p->e[k].t : NULL;
}
