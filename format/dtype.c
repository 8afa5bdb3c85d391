/* SPDX-License-Identifier: BSD-2-Clause */
/* dtype.c - element types: sizes and names. */
#include "internal.h"

#include <string.h>

static const struct {
    const char *name;
    size_t size;
} ss_dtypes[] = {
    [SS_U8] = {"u8", 1},   [SS_I8] = {"i8", 1},   [SS_U16] = {"u16", 2}, [SS_I16] = {"i16", 2},
    [SS_U32] = {"u32", 4}, [SS_I32] = {"i32", 4}, [SS_U64] = {"u64", 8}, [SS_I64] = {"i64", 8},
    [SS_F16] = {"f16", 2}, [SS_F32] = {"f32", 4}, [SS_F64] = {"f64", 8}, [SS_BF16] = {"bf16", 2},
};

#define SS_NDTYPES (sizeof ss_dtypes / sizeof ss_dtypes[0])

size_t ss_dtype_size(ss_dtype dtype) {
    return (unsigned)dtype < SS_NDTYPES ? ss_dtypes[dtype].size : 0;
}

const char *ss_dtype_name(ss_dtype dtype) {
    return (unsigned)dtype < SS_NDTYPES ? ss_dtypes[dtype].name : NULL;
}

int ss_dtype_parse(ss_dtype *out, const char *name) {
    for (unsigned k = 1; name && k < SS_NDTYPES; k++) {
        if (strcmp(ss_dtypes[k].name, name) == 0) {
            *out = (ss_dtype)k;
            return 0;
        }
    }
    return ss__fail(SS_EINVAL,
                    "unknown dtype '%s' (expected u8, i8, u16, i16, u32, i32, u64, "
                    "i64, f16, bf16, f32 or f64)",
                    name ? name : "(null)");
}
