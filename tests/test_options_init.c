/* SPDX-License-Identifier: BSD-2-Clause */
/* test_options_init.c - every ss_..._init() function gives exactly its
 * SS_..._INIT macro's defaults, refuses another version and a NULL out. */
#include "testutil.h"

#include <string.h>

/* A static object's padding is zero (C11 6.7.9), as the library's copy's. */
#define CHECK_INIT(fn, type, init, ver)                                                          \
    do {                                                                                           \
        static const type want_ = init;                                                            \
        type got_;                                                                                 \
        memset(&got_, 0xA5, sizeof got_);                                                          \
        CHECK_OK(fn(&got_, ver));                                                                  \
        CHECK(memcmp(&want_, &got_, sizeof got_) == 0);                                            \
        CHECK(got_.version == (ver));                                                              \
        CHECK_RC(fn(&got_, (ver) + 1), SS_EINVAL);                                                 \
        CHECK(strstr(ss_error_message(), #fn) != NULL);                                            \
        CHECK_RC(fn(&got_, 0), SS_EINVAL);                                                         \
        CHECK_RC(fn(NULL, ver), SS_EINVAL);                                                        \
        n_checked++;                                                                               \
    } while (0)

int main(void) {
    int n_checked = 0;
    CHECK_INIT(ss_writer_options_init, ss_writer_options,
               SS_WRITER_OPTIONS_INIT, SS_WRITER_OPTIONS_VERSION);
    CHECK_INIT(ss_batch_options_init, ss_batch_options,
               SS_BATCH_OPTIONS_INIT, SS_BATCH_OPTIONS_VERSION);
    CHECK_INIT(ss_bucket_options_init, ss_bucket_options,
               SS_BUCKET_OPTIONS_INIT, SS_BUCKET_OPTIONS_VERSION);
    CHECK_INIT(ss_split_options_init, ss_split_options,
               SS_SPLIT_OPTIONS_INIT, SS_SPLIT_OPTIONS_VERSION);
    CHECK_INIT(ss_lanes_options_init, ss_lanes_options,
               SS_LANES_OPTIONS_INIT, SS_LANES_OPTIONS_VERSION);
    CHECK_INIT(ss_window_options_init, ss_window_options,
               SS_WINDOW_OPTIONS_INIT, SS_WINDOW_OPTIONS_VERSION);
    CHECK_INIT(ss_collate_field_init, ss_collate_field,
               SS_COLLATE_FIELD_INIT, SS_COLLATE_FIELD_VERSION);
    CHECK_INIT(ss_collator_options_init, ss_collator_options,
               SS_COLLATOR_OPTIONS_INIT, SS_COLLATOR_OPTIONS_VERSION);
    CHECK_INIT(ss_loader_options_init, ss_loader_options,
               SS_LOADER_OPTIONS_INIT, SS_LOADER_OPTIONS_VERSION);
    CHECK_INIT(ss_blend_loader_options_init, ss_blend_loader_options,
               SS_BLEND_LOADER_OPTIONS_INIT, SS_BLEND_LOADER_OPTIONS_VERSION);
    CHECK_INIT(ss_sampler_options_init, ss_sampler_options,
               SS_SAMPLER_OPTIONS_INIT, SS_SAMPLER_OPTIONS_VERSION);
    CHECK_INIT(ss_blend_options_init, ss_blend_options,
               SS_BLEND_OPTIONS_INIT, SS_BLEND_OPTIONS_VERSION);
    CHECK_INIT(ss_kfold_options_init, ss_kfold_options,
               SS_KFOLD_OPTIONS_INIT, SS_KFOLD_OPTIONS_VERSION);
    CHECK_INIT(ss_stream_options_init, ss_stream_options,
               SS_STREAM_OPTIONS_INIT, SS_STREAM_OPTIONS_VERSION);
    CHECK_INIT(ss_transform_init, ss_transform,
               SS_TRANSFORM_INIT, SS_TRANSFORM_VERSION);
    CHECK_INIT(ss_token_mask_options_init, ss_token_mask_options,
               SS_TOKEN_MASK_OPTIONS_INIT, SS_TOKEN_MASK_OPTIONS_VERSION);
    CHECK_INIT(ss_lm_options_init, ss_lm_options, SS_LM_OPTIONS_INIT, SS_LM_OPTIONS_VERSION);
    CHECK_EQ_U64(n_checked, 17); /* one per _INIT macro of the headers */
    return 0;
}
