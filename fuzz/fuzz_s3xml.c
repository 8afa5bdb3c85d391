/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_s3xml.c - libFuzzer target for the S3 response reader
 * (remote/s3xml.c, expat): an <Error>'s Code and Message and an
 * InitiateMultipartUploadResult's UploadId, from any bytes. The text found
 * is NUL-terminated within its buffer; a failure leaves it empty. */
#include "remote_impl.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const uint8_t *data, size_t size, const char *element, size_t cap) {
    char out[256];
    memset(out, 'x', sizeof out);
    int rc = ss__xml_text(out, cap, (const char *)data, size, element);
    if (strnlen(out, cap) >= cap) abort();
    if (rc && out[0]) abort();
    if (rc && rc != SS_ENOTFOUND && rc != SS_ECORRUPT && rc != SS_ENOMEM) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    one(data, size, "Code", 128);
    one(data, size, "Message", 256);
    one(data, size, "UploadId", 7);
    return 0;
}
