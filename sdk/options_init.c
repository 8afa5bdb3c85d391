/* SPDX-License-Identifier: BSD-2-Clause */
/* options_init.c - ss_..._init() beside every SS_..._INIT macro of the SDK. */
#include "internal.h"

#include <string.h>

/* One function per _INIT macro: the defaults for a caller that cannot expand
 * the macro (a binding in another language). Only the version this library
 * was built with is filled in: an older struct is smaller than this one. */
#define SS__OPTIONS_INIT(fn, type, version_, init)                                                 \
    int fn(type *out, unsigned version) {                                                          \
        if (!out) return ss__fail(SS_EINVAL, #fn ": out is NULL");                                 \
        if (version != (version_))                                                                 \
            return ss__fail(SS_EINVAL, #fn ": version %u is not %u", version,                      \
                            (unsigned)(version_));                                                 \
        static const type defaults_ = init; /* static: padding zeroed too */                    \
        memcpy(out, &defaults_, sizeof *out);                                                      \
        return 0;                                                                                  \
    }

SS__OPTIONS_INIT(ss_batch_options_init, ss_batch_options,
                 SS_BATCH_OPTIONS_VERSION, SS_BATCH_OPTIONS_INIT)
SS__OPTIONS_INIT(ss_bucket_options_init, ss_bucket_options,
                 SS_BUCKET_OPTIONS_VERSION, SS_BUCKET_OPTIONS_INIT)
SS__OPTIONS_INIT(ss_split_options_init, ss_split_options,
                 SS_SPLIT_OPTIONS_VERSION, SS_SPLIT_OPTIONS_INIT)
SS__OPTIONS_INIT(ss_lanes_options_init, ss_lanes_options,
                 SS_LANES_OPTIONS_VERSION, SS_LANES_OPTIONS_INIT)
SS__OPTIONS_INIT(ss_window_options_init, ss_window_options,
                 SS_WINDOW_OPTIONS_VERSION, SS_WINDOW_OPTIONS_INIT)
SS__OPTIONS_INIT(ss_collate_field_init, ss_collate_field,
                 SS_COLLATE_FIELD_VERSION, SS_COLLATE_FIELD_INIT)
SS__OPTIONS_INIT(ss_collator_options_init, ss_collator_options,
                 SS_COLLATOR_OPTIONS_VERSION, SS_COLLATOR_OPTIONS_INIT)
SS__OPTIONS_INIT(ss_loader_options_init, ss_loader_options,
                 SS_LOADER_OPTIONS_VERSION, SS_LOADER_OPTIONS_INIT)
SS__OPTIONS_INIT(ss_blend_loader_options_init, ss_blend_loader_options,
                 SS_BLEND_LOADER_OPTIONS_VERSION, SS_BLEND_LOADER_OPTIONS_INIT)
SS__OPTIONS_INIT(ss_sampler_options_init, ss_sampler_options,
                 SS_SAMPLER_OPTIONS_VERSION, SS_SAMPLER_OPTIONS_INIT)
SS__OPTIONS_INIT(ss_blend_options_init, ss_blend_options,
                 SS_BLEND_OPTIONS_VERSION, SS_BLEND_OPTIONS_INIT)
SS__OPTIONS_INIT(ss_kfold_options_init, ss_kfold_options,
                 SS_KFOLD_OPTIONS_VERSION, SS_KFOLD_OPTIONS_INIT)
SS__OPTIONS_INIT(ss_stream_options_init, ss_stream_options,
                 SS_STREAM_OPTIONS_VERSION, SS_STREAM_OPTIONS_INIT)
SS__OPTIONS_INIT(ss_transform_init, ss_transform,
                 SS_TRANSFORM_VERSION, SS_TRANSFORM_INIT)
SS__OPTIONS_INIT(ss_token_mask_options_init, ss_token_mask_options,
                 SS_TOKEN_MASK_OPTIONS_VERSION, SS_TOKEN_MASK_OPTIONS_INIT)
SS__OPTIONS_INIT(ss_lm_options_init, ss_lm_options, SS_LM_OPTIONS_VERSION, SS_LM_OPTIONS_INIT)
