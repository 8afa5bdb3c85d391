/* SPDX-License-Identifier: BSD-2-Clause */
/* recmeta.c - recording metadata per example (see recmeta.h). */
#include "recmeta.h"
#include "errmsg.h"

#include "convert.h"
#include "seqstore/meta.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const NAMES[3] = {"subject", "session", "recording"};

static int names_add(ss_namelist *l, const char *s, size_t len) {
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) return -1;
        l->v = v, l->cap = cap;
    }
    if (!(l->v[l->n] = strndup(s, len))) return -1;
    l->n++;
    return 0;
}

/* Id of `s` in `l`, added when new; UINT32_MAX when out of memory. */
static uint32_t names_id(ss_namelist *l, const char *s) {
    for (uint32_t k = 0; k < l->n; k++)
        if (!strcmp(l->v[k], s)) return k;
    return names_add(l, s, strlen(s)) ? UINT32_MAX : l->n - 1;
}

int ss__recmeta_option(ss_recmeta *m, const char *opt, const char *val) {
    if (strcmp(opt, "--meta")) return 0;
    m->on = 1;
    m->csv = strcmp(val, "header") ? val : NULL;
    return 1;
}

static char *trim(char *s) {
    char *e;
    while (*s == ' ' || *s == '\t') s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n')) e--;
    *e = '\0';
    return s;
}

/* Split a CSV line at commas (no quoting) into at most `max` cells. */
static int split(char *line, char **cell, int max) {
    int n = 0;
    for (char *p = line; n < max;) {
        char *c = strchr(p, ',');
        if (c) *c = '\0';
        cell[n++] = trim(p);
        if (!c) break;
        p = c + 1;
    }
    return n;
}

static int add_row(ss_recmeta *m, char *const vals[4]) {
    if (m->nrows == m->caprows) {
        uint32_t cap = m->caprows ? 2 * m->caprows : 64;
        char **v = realloc(m->rows, (size_t)cap * 4 * sizeof *v);
        if (!v) return -1;
        m->rows = v, m->caprows = cap;
    }
    for (int k = 0; k < 4; k++)
        if (!(m->rows[(size_t)m->nrows * 4 + k] = strdup(vals[k] ? vals[k] : ""))) return -1;
    m->nrows++;
    return 0;
}

int ss__recmeta_load_csv(ss_recmeta *m, char *err, size_t errlen) {
    if (!m->csv) return 0;
    FILE *f = fopen(m->csv, "r");
    if (!f) return ss__errbuf(err, errlen, "cannot open '%s': %s", m->csv, strerror(errno));
    char *line = NULL, *cell[16];
    size_t cap = 0;
    int col[4] = {-1, -1, -1, -1}, ncol = 0, rc = 0;
    for (uint64_t no = 1; rc == 0 && getline(&line, &cap, f) >= 0; no++) {
        int n = split(line, cell, 16);
        if (no == 1) {
            ncol = n;
            for (int k = 0; k < n; k++) {
                if (!strcasecmp(cell[k], "path")) col[0] = k;
                for (int j = 0; j < 3; j++)
                    if (!strcasecmp(cell[k], NAMES[j])) col[j + 1] = k, m->has_col[j] = 1;
            }
            if (col[0] < 0 || !(m->has_col[0] || m->has_col[1] || m->has_col[2]))
                rc = ss__errbuf(err, errlen,
                                "%s:1: the header line must name `path` and at least one of "
                                "subject, session, recording",
                                m->csv);
            continue;
        }
        if (n == 1 && !*cell[0]) continue; /* blank line */
        if (n != ncol) {
            rc = ss__errbuf(err, errlen, "%s:%llu: %d cells, the header has %d", m->csv,
                            (unsigned long long)no, n, ncol);
            break;
        }
        char *vals[4];
        for (int k = 0; k < 4; k++) vals[k] = col[k] >= 0 ? cell[col[k]] : NULL;
        if (add_row(m, vals)) rc = ss__errbuf(err, errlen, "out of memory");
    }
    if (rc == 0 && ferror(f))
        rc = ss__errbuf(err, errlen, "cannot read '%s': %s", m->csv, strerror(errno));
    if (rc == 0 && m->nrows == 0) rc = ss__errbuf(err, errlen, "%s: no rows", m->csv);
    free(line);
    fclose(f);
    return rc;
}

int ss__recmeta_load_store(ss_recmeta *m, const ss_store *st) {
    for (int j = 0; m->on && j < 3; j++) {
        uint32_t fi;
        ss_lines *l = NULL;
        if (ss_field_index(&fi, st, NAMES[j]) || ss_lines_open(&l, st, fi, "names")) continue;
        for (uint64_t k = 0; k < ss_lines_count(l); k++) {
            size_t n;
            const char *s = NULL;
            if (ss_lines_get(&s, &n, l, k) || names_add(&m->names[j], s, n))
                return ss_lines_free(l), -1;
        }
        ss_lines_free(l);
    }
    return 0;
}

uint32_t ss__recmeta_fields(const ss_recmeta *m, ss_field *f, uint32_t n) {
    if (!m->on) return n;
    for (int j = 0; j < 3; j++) {
        memset(&f[n], 0, sizeof f[n]);
        f[n].name = NAMES[j];
        f[n++].dtype = SS_U32;
    }
    return n;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int ss__recmeta_place(ss_recmeta *m, const char *path, const char *subject, const char *session,
                      char *err, size_t errlen) {
    const char *v[3] = {subject ? subject : "", session ? session : "", base_name(path)};
    if (m->csv) {
        char **row = NULL;
        for (uint32_t i = 0; !row && i < m->nrows; i++)
            if (!strcmp(m->rows[(size_t)i * 4], path)) row = &m->rows[(size_t)i * 4];
        for (uint32_t i = 0; !row && i < m->nrows; i++)
            if (!strcmp(base_name(m->rows[(size_t)i * 4]), base_name(path)))
                row = &m->rows[(size_t)i * 4];
        if (!row) return ss__errbuf(err, errlen, "no row for this file in %s", m->csv);
        for (int j = 0; j < 3; j++)
            if (m->has_col[j]) v[j] = row[j + 1];
    }
    for (int j = 0; j < 3; j++)
        if ((m->ids[j] = names_id(&m->names[j], v[j])) == UINT32_MAX)
            return ss__errbuf(err, errlen, "out of memory");
    return 0;
}

int ss__recmeta_finish(ss_conv *c, const ss_recmeta *m) {
    for (int j = 0; m->on && j < 3; j++) {
        size_t cap = 1, len = 0;
        for (uint32_t k = 0; k < m->names[j].n; k++) cap += strlen(m->names[j].v[k]) + 1;
        char *t = malloc(cap), name[32];
        if (!t) return ss__conv_error(c, "out of memory");
        t[0] = '\0';
        for (uint32_t k = 0; k < m->names[j].n; k++)
            len += (size_t)snprintf(t + len, cap - len, "%s%s", k ? "\n" : "", m->names[j].v[k]);
        snprintf(name, sizeof name, "%s.names", NAMES[j]);
        int rc = ss__conv_set_attr(c, name, SS_ATTR_TEXT, t, len);
        free(t);
        if (rc) return 1;
    }
    return 0;
}

void ss__recmeta_free(ss_recmeta *m) {
    for (size_t i = 0; i < (size_t)m->nrows * 4; i++) free(m->rows[i]);
    free(m->rows);
    for (int j = 0; j < 3; j++) {
        for (uint32_t k = 0; k < m->names[j].n; k++) free(m->names[j].v[k]);
        free(m->names[j].v);
    }
    memset(m, 0, sizeof *m);
}
