/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_manifest.c - libFuzzer target for the dataset manifest parser
 * (format/manifest.c, spec/FORMAT.md §13). The syntax is strict (one
 * spelling per manifest), so every accepted input must format back to
 * exactly its own bytes, and its promises must hold. Each input is parsed
 * as it is and with a correct checksum line appended: random bytes almost
 * never carry a valid XXH3, and the syntax behind it deserves the search. */
#include "manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const char *data, size_t size) {
    ss_manifest m;
    if (ss__manifest_parse(&m, data, size) != 0) {
        if (m.shards || m.nshards) abort(); /* failure leaves nothing to free */
        return;
    }
    uint64_t sum = 0;
    for (uint32_t k = 0; k < m.nshards; k++) {
        const char *p = m.shards[k].path;
        if (!p[0] || p[0] == '/' || strstr(p, "//") || strchr(p, '\n') || strchr(p, '\\')) abort();
        sum += m.shards[k].count;
    }
    if (sum != m.examples || m.nfields < 1 || m.nfields > SS_MAX_FIELDS || m.nshards < 1) abort();
    char *text;
    size_t len;
    if (ss__manifest_format(&m, &text, &len) != 0) abort();
    if (len != size || memcmp(text, data, size) != 0) abort();
    free(text);
    ss__manifest_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    one((const char *)data, size);
    char *fixed = malloc(size + 26);
    if (!fixed) return 0;
    memcpy(fixed, data, size);
    int n = snprintf(fixed + size, 26, "checksum %016llx\n",
                     (unsigned long long)XXH3_64bits(data, size));
    one(fixed, size + (size_t)n);
    free(fixed);
    return 0;
}
