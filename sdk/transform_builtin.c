/* SPDX-License-Identifier: BSD-2-Clause */
/* transform_builtin.c - the built-in transforms (see seqstore/transform.h):
 * standardisation, random crop, Gaussian noise, token masking, token
 * dropout, label remapping. */
#include "internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* User data of every built-in: the target field plus parameters. */
typedef struct builtin {
    uint32_t field;
    uint64_t n;     /* channels / max length / table size */
    double a, b, c; /* probabilities, sigma */
    int64_t v;      /* mask value */
    double *scale, *offset;
    int64_t *table;
} builtin;

static void builtin_free(void *p) {
    builtin *b = p;
    if (!b) return;
    free(b->scale);
    free(b->offset);
    free(b->table);
    free(b);
}

static int builtin_new(ss_transform *out, const char *what, uint32_t field, builtin **b) {
    ss_transform init = SS_TRANSFORM_INIT;
    if (out) *out = init;
    *b = NULL;
    if (!out) return ss__fail(SS_EINVAL, "%s: NULL argument", what);
    if (field == SS_FIELD_NONE) return ss__fail(SS_EINVAL, "%s: field is SS_FIELD_NONE", what);
    *b = calloc(1, sizeof **b);
    if (!*b) return ss__fail(SS_ENOMEM, "%s: out of memory", what);
    (*b)->field = field;
    out->name = what;
    out->user = *b;
    out->free_user = builtin_free;
    out->field = field;
    return 0;
}

static ss_example_field *target(ss_example *ex, const builtin *b, const char *what, int *rc) {
    ss_example_field *e = ss_example_get_field(ex, b->field);
    *rc = e ? 0 : ss_transform_error(ex, "%s: field %u is not an output field", what, b->field);
    return e;
}

/* Integer element access (for token and label transforms). */
static int is_int(ss_dtype d) {
    return d >= SS_U8 && d <= SS_I64;
}

static int64_t get_int(const void *p, ss_dtype d, uint64_t i) {
    const unsigned char *q = p;
    switch (d) {
    case SS_U8:
        return ((const uint8_t *)q)[i];
    case SS_I8:
        return ((const int8_t *)q)[i];
    case SS_U16:
        return ((const uint16_t *)q)[i];
    case SS_I16:
        return ((const int16_t *)q)[i];
    case SS_U32:
        return ((const uint32_t *)q)[i];
    case SS_I32:
        return ((const int32_t *)q)[i];
    case SS_U64:
        return (int64_t)((const uint64_t *)q)[i];
    default:
        return ((const int64_t *)q)[i];
    }
}

static void set_int(void *p, ss_dtype d, uint64_t i, int64_t v) {
    /* saturate through the conversion routine */
    ss_cast_rows((unsigned char *)p + i * ss_dtype_size(d), d, &v, SS_I64, 1, 1, NULL, NULL);
}

/* ----------------------------------------------------------- standardize */

static int standardize_fn(void *user, ss_example *ex, ss_rng *rng) {
    (void)rng;
    const builtin *b = user;
    int rc;
    ss_example_field *e = target(ex, b, "standardize", &rc);
    if (!e) return rc;
    if (e->row_elements != b->n)
        return ss_transform_error(
            ex, "standardize field '%s': rows have %" PRIu64 " elements, the statistics %" PRIu64,
            e->name, e->row_elements, b->n);
    if (!e->out) return ss_transform_error(ex, "standardize: no output buffer");
    return ss_cast_rows(e->out, SS_F32, e->data, e->dtype, e->length, e->row_elements, b->scale,
                        b->offset);
}

int ss_transform_standardize(ss_transform *out, uint32_t field, const double *mean,
                             const double *std, uint64_t channels) {
    builtin *b;
    if (!mean || !std || channels == 0) {
        if (out) {
            ss_transform init = SS_TRANSFORM_INIT;
            *out = init;
        }
        return ss__fail(SS_EINVAL, "standardize: mean and std of >= 1 channels are required");
    }
    for (uint64_t c = 0; c < channels; c++)
        if (!(std[c] > 0) || !isfinite(std[c]) || !isfinite(mean[c]))
            return ss__fail(SS_EINVAL, "standardize: channel %" PRIu64 ": mean %g, std %g", c,
                            mean[c], std[c]);
    int rc = builtin_new(out, "standardize", field, &b);
    if (rc) return rc;
    b->n = channels;
    b->scale = malloc(channels * sizeof(double));
    b->offset = malloc(channels * sizeof(double));
    if (!b->scale || !b->offset) {
        ss_transform_release(out);
        return ss__fail(SS_ENOMEM, "standardize: out of memory");
    }
    for (uint64_t c = 0; c < channels; c++) {
        b->scale[c] = 1.0 / std[c];
        b->offset[c] = -mean[c] / std[c];
    }
    out->example = standardize_fn;
    out->dtype = SS_F32;
    return 0;
}

int ss_standardize_compute(double *mean, double *std, const ss_store *s, const ss_selection *sel,
                           uint32_t field) {
    if (!mean || !std || !s) return ss__fail(SS_EINVAL, "ss_standardize_compute: NULL argument");
    ss_field info;
    int rc = ss_field_info(&info, s, field);
    if (rc) return ss__context(rc, "ss_standardize_compute");
    uint64_t re = 1;
    for (uint32_t k = 0; k < info.ndim; k++) re *= info.dims[k];
    double *row = malloc(re * sizeof *row), *sum = calloc(re, sizeof *sum),
           *sq = calloc(re, sizeof *sq);
    rc = row && sum && sq ? 0 : ss__fail(SS_ENOMEM, "ss_standardize_compute: out of memory");
    uint64_t n = sel ? ss_selection_count(sel) : ss_count(s), steps = 0;
    for (uint64_t i = 0; !rc && i < n; i++) {
        uint64_t ix = i;
        if (sel) rc = ss_selection_index(&ix, sel, i);
        ss_view v;
        if (!rc) rc = ss_get(&v, s, field, ix);
        for (uint64_t t = 0; !rc && t < v.length; t++) {
            ss_cast_rows(row, SS_F64, (const unsigned char *)v.data + t * v.row_bytes, v.dtype, 1,
                         re, NULL, NULL);
            for (uint64_t c = 0; c < re; c++) {
                sum[c] += row[c];
                sq[c] += row[c] * row[c];
            }
            steps++;
        }
    }
    if (!rc && steps == 0)
        rc = ss__fail(SS_EINVAL, "ss_standardize_compute: field '%s' has no data in the selection",
                      info.name);
    for (uint64_t c = 0; !rc && c < re; c++) {
        mean[c] = sum[c] / (double)steps;
        double var = sq[c] / (double)steps - mean[c] * mean[c];
        std[c] = sqrt(var > 0 ? var : 0);
    }
    free(row);
    free(sum);
    free(sq);
    return rc;
}

static void norm_names(char *m, char *sd, size_t cap, const char *field, const char *prefix) {
    if (prefix) {
        snprintf(m, cap, "%s.mean", prefix);
        snprintf(sd, cap, "%s.std", prefix);
    } else {
        snprintf(m, cap, "ss.norm.%s.mean", field);
        snprintf(sd, cap, "ss.norm.%s.std", field);
    }
}

int ss_standardize_save(const char *path, uint32_t field, const char *split, const char *prefix) {
    if (!path) return ss__fail(SS_EINVAL, "ss_standardize_save: NULL argument");
    ss_store *s = NULL;
    ss_selection *sel = NULL;
    double *mean = NULL, *std = NULL;
    uint64_t re = 0;
    int rc = ss_open(&s, path, SS_OPEN_VERIFY); /* statistics from unchecked data would persist */
    if (!rc && split) rc = ss_split_load(&sel, s, split);
    ss_field info;
    char fname[SS_MAX_NAME + 1] = "";
    if (!rc) rc = ss_field_info(&info, s, field);
    if (!rc) {
        re = ss_field_row_bytes(s, field) / ss_dtype_size(info.dtype); /* elements per row */
        snprintf(fname, sizeof fname, "%s", info.name);
    }
    if (!rc) {
        mean = malloc(re * sizeof *mean);
        std = malloc(re * sizeof *std);
        if (!mean || !std) rc = ss__fail(SS_ENOMEM, "ss_standardize_save: out of memory");
    }
    if (!rc) rc = ss_standardize_compute(mean, std, s, sel, field);
    ss_selection_free(sel);
    ss_close(s);
    char m[SS_MAX_ATTR_NAME + 64], sd[SS_MAX_ATTR_NAME + 64];
    norm_names(m, sd, sizeof m, fname, prefix);
    ss_writer *w = NULL;
    if (!rc) rc = ss_writer_open(&w, path, NULL, NULL);
    if (!rc) rc = ss_writer_set_attr(w, m, SS_F64, mean, re * sizeof(double));
    if (!rc) rc = ss_writer_set_attr(w, sd, SS_F64, std, re * sizeof(double));
    if (!rc) rc = ss_writer_finish(w);
    ss_writer_free(w);
    free(mean);
    free(std);
    return rc ? ss__context(rc, "ss_standardize_save '%s'", path) : 0;
}

int ss_transform_standardize_attr(ss_transform *out, const ss_store *s, uint32_t field,
                                  const char *prefix) {
    if (out) {
        ss_transform init = SS_TRANSFORM_INIT;
        *out = init;
    }
    if (!out || !s) return ss__fail(SS_EINVAL, "ss_transform_standardize_attr: NULL");
    ss_field info;
    int rc = ss_field_info(&info, s, field);
    if (rc) return ss__context(rc, "ss_transform_standardize_attr");
    char m[SS_MAX_ATTR_NAME + 64], sd[SS_MAX_ATTR_NAME + 64];
    norm_names(m, sd, sizeof m, info.name, prefix);
    ss_attr am, as;
    rc = ss_attr_get(&am, s, m);
    if (!rc) rc = ss_attr_get(&as, s, sd);
    if (rc) return ss__context(rc, "standardize field '%s'", info.name);
    if (am.type != SS_F64 || as.type != SS_F64 || am.size != as.size || am.size % 8 || !am.size)
        return ss__fail(SS_EINVAL,
                        "standardize: attributes '%s' and '%s' must be f64 arrays of "
                        "the same size",
                        m, sd);
    uint64_t n = am.size / 8;
    double *mean = malloc(n * sizeof *mean), *std = malloc(n * sizeof *std);
    if (!mean || !std) rc = ss__fail(SS_ENOMEM, "standardize: out of memory");
    if (!rc) {
        memcpy(mean, am.data, n * 8);
        memcpy(std, as.data, n * 8);
        rc = ss_transform_standardize(out, field, mean, std, n);
    }
    free(mean);
    free(std);
    return rc;
}

/* ------------------------------------------------------------ random crop */

static int crop_fn(void *user, ss_example *ex, ss_rng *rng) {
    const builtin *b = user;
    int rc;
    ss_example_field *e = target(ex, b, "random_crop", &rc);
    if (!e) return rc;
    if (!e->sequence || e->length <= b->n) return 0;
    uint64_t start = ss_random_below(rng, e->length - b->n + 1);
    memmove(e->data, (unsigned char *)e->data + start * e->row_bytes, b->n * e->row_bytes);
    e->length = b->n;
    return 0;
}

int ss_transform_random_crop(ss_transform *out, uint32_t field, uint64_t max_length) {
    builtin *b;
    if (max_length == 0) {
        if (out) {
            ss_transform init = SS_TRANSFORM_INIT;
            *out = init;
        }
        return ss__fail(SS_EINVAL, "random_crop: max_length is 0");
    }
    int rc = builtin_new(out, "random_crop", field, &b);
    if (rc) return rc;
    b->n = max_length;
    out->example = crop_fn;
    return 0;
}

/* --------------------------------------------------------- gaussian noise */

static int noise_fn(void *user, ss_example *ex, ss_rng *rng) {
    const builtin *b = user;
    int rc;
    ss_example_field *e = target(ex, b, "gaussian_noise", &rc);
    if (!e) return rc;
    uint64_t n = e->length * e->row_elements;
    if (e->dtype == SS_F32) {
        float *x = e->data;
        for (uint64_t i = 0; i < n; i++) x[i] += (float)(b->a * ss_random_normal(rng));
    } else if (e->dtype == SS_F64) {
        double *x = e->data;
        for (uint64_t i = 0; i < n; i++) x[i] += b->a * ss_random_normal(rng);
    } else {
        return ss_transform_error(ex, "gaussian_noise: field '%s' has dtype %s, not f32 or f64",
                                  e->name, ss_dtype_name(e->dtype));
    }
    return 0;
}

int ss_transform_gaussian_noise(ss_transform *out, uint32_t field, double sigma) {
    builtin *b;
    if (!(sigma >= 0) || !isfinite(sigma)) {
        if (out) {
            ss_transform init = SS_TRANSFORM_INIT;
            *out = init;
        }
        return ss__fail(SS_EINVAL, "gaussian_noise: sigma %g", sigma);
    }
    int rc = builtin_new(out, "gaussian_noise", field, &b);
    if (rc) return rc;
    b->a = sigma;
    out->example = noise_fn;
    return 0;
}

/* ------------------------------------------------------------- token mask */

static int mask_fn(void *user, ss_example *ex, ss_rng *rng) {
    const builtin *b = user;
    int rc;
    ss_example_field *e = target(ex, b, "token_mask", &rc);
    if (!e) return rc;
    if (!is_int(e->dtype))
        return ss_transform_error(ex, "token_mask: field '%s' has dtype %s, not an integer",
                                  e->name, ss_dtype_name(e->dtype));
    uint64_t n = e->length * e->row_elements;
    double mask_below = 1.0 - b->b - b->c, random_below = 1.0 - b->c;
    for (uint64_t i = 0; i < n; i++) {
        if (ss_random_uniform(rng) >= b->a) continue;
        double v = ss_random_uniform(rng);
        if (v < mask_below)
            set_int(e->data, e->dtype, i, b->v);
        else if (v < random_below)
            set_int(e->data, e->dtype, i, (int64_t)ss_random_below(rng, b->n));
    }
    return 0;
}

static int bad_prob(double p) {
    return !(p >= 0 && p <= 1);
}

int ss_transform_token_mask(ss_transform *out, uint32_t field,
                            const ss_token_mask_options *options) {
    builtin *b;
    ss_token_mask_options o = SS_TOKEN_MASK_OPTIONS_INIT;
    if (options) o = *options;
    const char *bad = o.version != SS_TOKEN_MASK_OPTIONS_VERSION ? "bad options version"
                      : bad_prob(o.prob) || bad_prob(o.random_prob) || bad_prob(o.keep_prob) ||
                              o.random_prob + o.keep_prob > 1
                          ? "probabilities must lie in [0, 1] with random_prob + keep_prob <= 1"
                      : o.random_prob > 0 && o.vocab == 0 ? "vocab is 0 but random_prob > 0"
                                                          : NULL;
    if (bad) {
        if (out) {
            ss_transform init = SS_TRANSFORM_INIT;
            *out = init;
        }
        return ss__fail(SS_EINVAL, "token_mask: %s", bad);
    }
    int rc = builtin_new(out, "token_mask", field, &b);
    if (rc) return rc;
    b->a = o.prob;
    b->b = o.random_prob;
    b->c = o.keep_prob;
    b->v = o.mask_value;
    b->n = o.vocab;
    out->example = mask_fn;
    return 0;
}

/* ------------------------------------------------------------- token drop */

static int drop_fn(void *user, ss_example *ex, ss_rng *rng) {
    const builtin *b = user;
    int rc;
    ss_example_field *e = target(ex, b, "token_drop", &rc);
    if (!e) return rc;
    if (!e->sequence) return 0;
    unsigned char *x = e->data;
    uint64_t kept = 0;
    for (uint64_t t = 0; t < e->length; t++) {
        if (ss_random_uniform(rng) < b->a) continue;
        if (kept != t) memmove(x + kept * e->row_bytes, x + t * e->row_bytes, e->row_bytes);
        kept++;
    }
    e->length = kept;
    return 0;
}

int ss_transform_token_drop(ss_transform *out, uint32_t field, double prob) {
    builtin *b;
    if (bad_prob(prob)) {
        if (out) {
            ss_transform init = SS_TRANSFORM_INIT;
            *out = init;
        }
        return ss__fail(SS_EINVAL, "token_drop: probability %g outside [0, 1]", prob);
    }
    int rc = builtin_new(out, "token_drop", field, &b);
    if (rc) return rc;
    b->a = prob;
    out->example = drop_fn;
    return 0;
}

/* -------------------------------------------------------------- label map */

static int label_fn(void *user, ss_example *ex, ss_rng *rng) {
    (void)rng;
    const builtin *b = user;
    int rc;
    ss_example_field *e = target(ex, b, "label_map", &rc);
    if (!e) return rc;
    if (!is_int(e->dtype))
        return ss_transform_error(ex, "label_map: field '%s' has dtype %s, not an integer", e->name,
                                  ss_dtype_name(e->dtype));
    uint64_t n = e->length * e->row_elements;
    for (uint64_t i = 0; i < n; i++) {
        int64_t x = get_int(e->data, e->dtype, i);
        if (x < 0 || (uint64_t)x >= b->n)
            return ss_transform_error(
                ex, "label_map: field '%s' holds label %" PRId64 ", outside the table of %" PRIu64,
                e->name, x, b->n);
        set_int(e->data, e->dtype, i, b->table[x]);
    }
    return 0;
}

int ss_transform_label_map(ss_transform *out, uint32_t field, const int64_t *table, uint64_t n) {
    builtin *b;
    if (!table || n == 0) {
        if (out) {
            ss_transform init = SS_TRANSFORM_INIT;
            *out = init;
        }
        return ss__fail(SS_EINVAL, "label_map: an empty table");
    }
    int rc = builtin_new(out, "label_map", field, &b);
    if (rc) return rc;
    b->n = n;
    b->table = malloc(n * sizeof *b->table);
    if (!b->table) {
        ss_transform_release(out);
        return ss__fail(SS_ENOMEM, "label_map: out of memory");
    }
    memcpy(b->table, table, n * sizeof *table);
    out->example = label_fn;
    return 0;
}
