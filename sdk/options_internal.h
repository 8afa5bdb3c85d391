/* SPDX-License-Identifier: BSD-2-Clause */
/* options_internal.h - reading versioned options structs (not installed).
 *
 * The rule (seqstore.h, "Options"): a function reads only the fields of the
 * version the caller's struct declares, so a struct compiled against an older
 * header is accepted, completed with the defaults of the newer fields; an
 * unknown version is refused. */
#ifndef SS_OPTIONS_INTERNAL_H
#define SS_OPTIONS_INTERNAL_H

#include "seqstore.h"

/* *dst = *src read by src->version (1 or 2); SS_EINVAL for another version. */
int ss__sampler_options_read(ss_sampler_options *dst, const ss_sampler_options *src);

/* *dst = element k of the caller's array `fields`, whose elements all have
 * the version of fields[0] (one header compiled them) and hence its size.
 * SS_EINVAL for an unknown version or an element of another version. */
int ss__collate_field_read(ss_collate_field *dst, const ss_collate_field *fields, uint32_t k);

#endif
