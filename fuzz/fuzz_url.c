/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_url.c - libFuzzer target for the dataset URL parser (remote/url.c).
 * An accepted URL keeps its promises: a known scheme, a shown form without
 * the query string or a trailing '/', a valid bucket for s3://, object
 * names that join under it. */
#include "remote_impl.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    ss__url u;
    if (ss__url_parse(&u, text) == 0) {
        if (u.scheme < SS__URL_S3 || u.scheme > SS__URL_FILE) abort();
        if (!u.base || !u.shown || !u.query) abort();
        if (u.scheme != SS__URL_FILE && strchr(u.shown, '?')) abort();
        size_t n = strlen(u.shown);
        if (u.scheme != SS__URL_FILE && n && u.shown[n - 1] == '/') abort();
        if (u.scheme == SS__URL_S3) {
            size_t b = strlen(u.bucket);
            if (b < 3 || b > 63 || strstr(u.base, "//")) abort();
        }
        char *o = NULL;
        if (ss__url_object_shown(&o, &u, "part-0.ss") != 0 || !strstr(o, "part-0.ss")) abort();
        free(o);
        ss__url_free(&u);
    } else if (u.base || u.shown || u.bucket) {
        abort(); /* a failure leaves nothing to free */
    }
    free(text);
    return 0;
}
