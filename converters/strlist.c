/* SPDX-License-Identifier: BSD-2-Clause */
/* strlist.c - lists of owned strings and `--list FILE` (see strlist.h). */
#include "strlist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ss__strlist_addn(ss__strlist *l, const char *s, size_t len) {
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? 2 * l->cap : 64;
        char **nv = realloc(l->v, cap * sizeof *nv);
        if (!nv) return 1;
        l->v = nv, l->cap = cap;
    }
    if (!(l->v[l->n] = strndup(s, len))) return 1;
    l->n++;
    return 0;
}

int ss__strlist_add(ss__strlist *l, const char *s) {
    return ss__strlist_addn(l, s, strlen(s));
}

void ss__strlist_free(ss__strlist *l) {
    for (uint32_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int is_space(char ch) {
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

int ss__conv_read_list(ss_conv *c, ss__strlist *l, const char *path) {
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    if (!f) return ss__conv_error(c, "cannot open '%s': %s", path, strerror(errno));
    while (rc == 0 && getline(&line, &cap, f) >= 0) {
        const char *s = line, *e = line + strlen(line);
        while (is_space(*s)) s++;
        while (e > s && is_space(e[-1])) e--;
        if (e > s && ss__strlist_addn(l, s, (size_t)(e - s))) rc = ss__conv_error(c,
                                                                                  "out of memory");
    }
    /* getline's -1 is the end of the file or an error (a directory, EIO) */
    if (rc == 0 && ferror(f)) rc = ss__conv_error(c, "cannot read '%s': %s", path, strerror(errno));
    free(line);
    fclose(f);
    return rc;
}
