/* SPDX-License-Identifier: BSD-2-Clause */
/* error.c - error codes, their texts, and the per-thread error message. */
#include "internal.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char ss_message[1024];

const char *ss_strerror(int code) {
    switch (code) {
#define SS_ERROR_CASE_(name, value, message)                                                       \
    case value:                                                                                    \
        return message;
        SS_ERROR_TABLE(SS_ERROR_CASE_)
#undef SS_ERROR_CASE_
    }
    return "unknown error";
}

const char *ss_error_name(int code) {
    switch (code) {
#define SS_ERROR_NAME_(name, value, message)                                                       \
    case value:                                                                                    \
        return #name;
        SS_ERROR_TABLE(SS_ERROR_NAME_)
#undef SS_ERROR_NAME_
    }
    return "SS_UNKNOWN";
}

const char *ss_error_message(void) {
    return ss_message;
}

int ss__fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ss_message, sizeof ss_message, fmt, ap);
    va_end(ap);
    return code;
}

int ss__context(int code, const char *fmt, ...) {
    char prefix[512], old[sizeof ss_message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, ss_message, sizeof old);
    size_t n = strlen(prefix);
    if (n > sizeof ss_message - 3) n = sizeof ss_message - 3;
    memcpy(ss_message, prefix, n);
    memcpy(ss_message + n, ": ", 2);
    size_t rest = sizeof ss_message - n - 3;
    size_t m = strnlen(old, rest);
    memcpy(ss_message + n + 2, old, m);
    ss_message[n + 2 + m] = '\0';
    return code;
}

int ss__lmdb_fail(int rc, const char *what) {
    int code = SS_EIO;
    if (rc == ENOMEM)
        code = SS_ENOMEM;
    else if (rc == MDB_NOTFOUND || rc == ENOENT)
        code = SS_ENOTFOUND;
    else if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH)
        code = SS_ENOTSTORE;
    else if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND)
        code = SS_ECORRUPT;
    else if (rc == MDB_READERS_FULL || rc == EAGAIN || rc == EBUSY)
        code = SS_EBUSY;
    return ss__fail(code, "%s: %s", what, mdb_strerror(rc));
}
