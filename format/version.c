/* SPDX-License-Identifier: BSD-2-Clause */
/* version.c - the library's version. */
#include "seqstore.h"

const char *ss_version(void) {
    return SS_VERSION_STRING;
}
