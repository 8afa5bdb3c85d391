/* SPDX-License-Identifier: BSD-2-Clause */
/* strlist.h - a growable list of owned strings, and `--list FILE` (one input
 * path a line) of the signal converters (edf, biosig, audio). */
#ifndef SS_STRLIST_H
#define SS_STRLIST_H

#include "convert.h"

#include <stddef.h>
#include <stdint.h>

typedef struct ss__strlist {
    char **v;
    uint32_t n, cap;
} ss__strlist;

/* Append a copy of s[0, len) (ss__strlist_add: of the string s).
 * @return 0, or 1 out of memory (the list unchanged). */
int ss__strlist_addn(ss__strlist *l, const char *s, size_t len);
int ss__strlist_add(ss__strlist *l, const char *s);
/* Free the strings and the list; it is empty after. */
void ss__strlist_free(ss__strlist *l);

/* `--list FILE`: add each line of `path` that is not blank, without the
 * spaces, tabs and line ends around it. @return 0 or 1 (printed: the file
 * cannot be opened or read, or out of memory). */
int ss__conv_read_list(ss_conv *c, ss__strlist *l, const char *path);

#endif
