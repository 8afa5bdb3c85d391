/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_awsconf.c - libFuzzer target for the reader of AWS's config and
 * credentials files (remote/awsconf.c): any bytes give a value without a
 * line break or surrounding blanks, or an error, never both. */
#include "remote_impl.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const uint8_t *data, size_t size, const char *section, const char *key) {
    char *v = (char *)1;
    int rc = ss__ini_get(&v, (const char *)data, size, section, key);
    if (rc) {
        if (v) abort();
        return;
    }
    if (!v) return;
    size_t n = strlen(v);
    if (strchr(v, '\n') || (n && (v[0] == ' ' || v[n - 1] == ' ' || v[n - 1] == '\t'))) abort();
    free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    one(data, size, "default", "region");
    one(data, size, "profile ci", "aws_secret_access_key");
    return 0;
}
