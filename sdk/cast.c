/* SPDX-License-Identifier: BSD-2-Clause */
/* cast.c - element type casts: saturating integers, round-to-nearest-
 * even floats, IEEE binary16 and bfloat16, per-channel affine maps. */
#include "cast.h"
#include "internal.h"

/* The conversion loops are the hot path of collation: GCC's -O2 cost model
 * ("very cheap") leaves them scalar, so ask for the full vectoriser here. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ f16 / bf16 */

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Round |x| (finite, > 0) to a binary format with `mant` fraction bits and
 * exponent bias `bias`; returns the bits without sign. Overflow gives inf.
 * Exact arithmetic: scaling by powers of two never rounds here because the
 * double has far more precision than the target. */
static uint16_t round_small(double a, int mant, int bias) {
    int e2;
    (void)frexp(a, &e2); /* a = f * 2^e2, f in [0.5, 1) */
    int e = e2 - 1;      /* a in [2^e, 2^(e+1)) */
    int emin = 1 - bias;
    int q = (e < emin ? emin : e) - mant; /* exponent of the unit in the last place */
    double m = ldexp(a, -q);              /* exact */
    double fl = floor(m), diff = m - fl;
    if (diff > 0.5 || (diff == 0.5 && fmod(fl, 2.0) != 0.0)) fl += 1.0;
    uint64_t r = (uint64_t)fl;
    uint64_t bits;
    if (e < emin) {
        bits = r; /* subnormal; r == 2^mant becomes the smallest normal by itself */
    } else {
        /* r in [2^mant, 2^(mant+1)]; a carry into the exponent happens by itself */
        bits = ((uint64_t)(e + bias) << mant) + (r - ((uint64_t)1 << mant));
    }
    uint64_t inf = (uint64_t)((2 * bias + 1)) << mant; /* all-ones exponent */
    if (bits >= inf) bits = inf;
    return (uint16_t)bits;
}

static uint16_t f16_from_double(double x) {
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isnan(x)) return sign | 0x7e00;
    if (isinf(x)) return sign | 0x7c00;
    if (x == 0) return sign;
    return sign | round_small(fabs(x), 10, 15);
}

static uint16_t bf16_from_double(double x) {
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isnan(x)) return sign | 0x7fc0;
    if (isinf(x)) return sign | 0x7f80;
    if (x == 0) return sign;
    return sign | round_small(fabs(x), 7, 127);
}

static float f16_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0) {
        float f = (float)m * 0x1p-24f; /* exact */
        return sign ? -f : f;
    }
    if (e == 31) return f32_from_bits(sign | 0x7f800000u | (m << 13));
    return f32_from_bits(sign | ((e + 112) << 23) | (m << 13));
}

static float bf16_to_float(uint16_t h) {
    return f32_from_bits((uint32_t)h << 16);
}

uint16_t ss_f16_from_float(float x) {
    return f16_from_double(x);
}

float ss_f16_to_float(uint16_t h) {
    return f16_to_float(h);
}

uint16_t ss_bf16_from_float(float x) {
    /* From the float bits: round to nearest even on the low 16 bits. */
    uint32_t u = f32_bits(x);
    if (isnan(x)) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

float ss_bf16_to_float(uint16_t h) {
    return bf16_to_float(h);
}

/* ------------------------------------------------------- element loads */

/* Every source loads into one of three intermediates: int64_t (signed
 * integers, category i), uint64_t (unsigned, u) or double (floats, f). */
#define LD_U8(x) ((uint64_t)(x))
#define LD_U16(x) ((uint64_t)(x))
#define LD_U32(x) ((uint64_t)(x))
#define LD_U64(x) ((uint64_t)(x))
#define LD_I8(x) ((int64_t)(x))
#define LD_I16(x) ((int64_t)(x))
#define LD_I32(x) ((int64_t)(x))
#define LD_I64(x) ((int64_t)(x))
#define LD_F16(x) ((double)f16_to_float(x))
#define LD_BF16(x) ((double)bf16_to_float(x))
#define LD_F32(x) ((double)(x))
#define LD_F64(x) ((double)(x))

/* ------------------------------------------------------- element stores */

/* Float to integer: round to nearest even (the default rounding mode), then
 * saturate; NaN gives 0. `lo` and `hi` are the range as doubles, `hi_excl`
 * the first double above the range (exact powers of two). */
#define F2I(T, v, lo, hi_excl, tmin, tmax)                                                         \
    do {                                                                                           \
        double r_ = nearbyint(v);                                                                  \
        if (r_ != r_) return 0;                                                                    \
        if (r_ <= (lo)) return (tmin);                                                             \
        if (r_ >= (hi_excl)) return (tmax);                                                        \
        return (T)r_;                                                                              \
    } while (0)

#define SINT_STORES(N, T, MIN, MAX, HI_EXCL)                                                       \
    static inline T st_##N##_i(int64_t v) {                                                        \
        return v < (MIN) ? (T)(MIN) : v > (MAX) ? (T)(MAX) : (T)v;                                 \
    }                                                                                              \
    static inline T st_##N##_u(uint64_t v) {                                                       \
        return v > (uint64_t)(MAX) ? (T)(MAX) : (T)v;                                              \
    }                                                                                              \
    static inline T st_##N##_f(double v) {                                                         \
        F2I(T, v, (double)(MIN), HI_EXCL, (T)(MIN), (T)(MAX));                                     \
    }

#define UINT_STORES(N, T, MAX, HI_EXCL)                                                            \
    static inline T st_##N##_i(int64_t v) {                                                        \
        return v < 0 ? (T)0 : (uint64_t)v > (MAX) ? (T)(MAX) : (T)v;                               \
    }                                                                                              \
    static inline T st_##N##_u(uint64_t v) {                                                       \
        return v > (MAX) ? (T)(MAX) : (T)v;                                                        \
    }                                                                                              \
    static inline T st_##N##_f(double v) {                                                         \
        F2I(T, v, 0.0, HI_EXCL, (T)0, (T)(MAX));                                                   \
    }

SINT_STORES(I8, int8_t, INT8_MIN, INT8_MAX, 128.0)
SINT_STORES(I16, int16_t, INT16_MIN, INT16_MAX, 32768.0)
SINT_STORES(I32, int32_t, INT32_MIN, INT32_MAX, 2147483648.0)
SINT_STORES(I64, int64_t, INT64_MIN, INT64_MAX, 9223372036854775808.0)
UINT_STORES(U8, uint8_t, UINT8_MAX, 256.0)
UINT_STORES(U16, uint16_t, UINT16_MAX, 65536.0)
UINT_STORES(U32, uint32_t, UINT32_MAX, 4294967296.0)
UINT_STORES(U64, uint64_t, UINT64_MAX, 18446744073709551616.0)

#define FLOAT_STORES(N, T, CONV)                                                                   \
    static inline T st_##N##_i(int64_t v) {                                                        \
        return CONV((double)v);                                                                    \
    }                                                                                              \
    static inline T st_##N##_u(uint64_t v) {                                                       \
        return CONV((double)v);                                                                    \
    }                                                                                              \
    static inline T st_##N##_f(double v) {                                                         \
        return CONV(v);                                                                            \
    }

#define CONV_F32(v) ((float)(v))
#define CONV_F64(v) (v)
FLOAT_STORES(F32, float, CONV_F32)
FLOAT_STORES(F64, double, CONV_F64)
FLOAT_STORES(F16, uint16_t, f16_from_double)
FLOAT_STORES(BF16, uint16_t, bf16_from_double)

/* Integer to float directly (not through double), so that int64 to f32
 * rounds once. */
static inline float st_F32_i_direct(int64_t v) {
    return (float)v;
}

/* ------------------------------------------------------- kernels */

/* X(name, C type, load category) for sources; X(name, C type, affine type)
 * for destinations: the affine map is computed in float for f32/f16/bf16
 * outputs and in double for the others. */
#define SS_SRC_TYPES(X, ...)                                                                       \
    X(U8, uint8_t, u, __VA_ARGS__)                                                                 \
    X(I8, int8_t, i, __VA_ARGS__)                                                                  \
    X(U16, uint16_t, u, __VA_ARGS__)                                                               \
    X(I16, int16_t, i, __VA_ARGS__)                                                                \
    X(U32, uint32_t, u, __VA_ARGS__)                                                               \
    X(I32, int32_t, i, __VA_ARGS__)                                                                \
    X(U64, uint64_t, u, __VA_ARGS__)                                                               \
    X(I64, int64_t, i, __VA_ARGS__)                                                                \
    X(F16, uint16_t, f, __VA_ARGS__)                                                               \
    X(F32, float, f, __VA_ARGS__)                                                                  \
    X(F64, double, f, __VA_ARGS__)                                                                 \
    X(BF16, uint16_t, f, __VA_ARGS__)

#define SS_DST_TYPES(X, ...)                                                                       \
    X(U8, uint8_t, double, d, __VA_ARGS__)                                                         \
    X(I8, int8_t, double, d, __VA_ARGS__)                                                          \
    X(U16, uint16_t, double, d, __VA_ARGS__)                                                       \
    X(I16, int16_t, double, d, __VA_ARGS__)                                                        \
    X(U32, uint32_t, double, d, __VA_ARGS__)                                                       \
    X(I32, int32_t, double, d, __VA_ARGS__)                                                        \
    X(U64, uint64_t, double, d, __VA_ARGS__)                                                       \
    X(I64, int64_t, double, d, __VA_ARGS__)                                                        \
    X(F16, uint16_t, float, f, __VA_ARGS__)                                                        \
    X(F32, float, float, f, __VA_ARGS__)                                                           \
    X(F64, double, double, d, __VA_ARGS__)                                                         \
    X(BF16, uint16_t, float, f, __VA_ARGS__)

typedef ss__conv_fn conv_fn;
typedef void (*aff_fn)(void *restrict dst, const void *restrict src, size_t n_rows,
                       const ss__affine *a);

/* On x86-64 with GCC each kernel is also built for AVX2 and picked at load
 * time (wider integer widening and int-to-float conversions). Each starts
 * on 64 bytes, so its loops sit alike in every build: code added elsewhere
 * in the library moved cvp_U16_I64.avx2 from 32 to 16 mod 32 and made
 * token collation 18% slower (9.8 -> 11.6 us a batch of 128 rows, 1 thread,
 * the same collate.c and cast.c). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) &&    \
    !defined(__SANITIZE_THREAD__) /* ThreadSanitizer runs after the resolvers: they crash */
#define SS_KERNEL_ATTR __attribute__((target_clones("avx2", "default"), aligned(64)))
#else
#define SS_KERNEL_ATTR
#endif

/* Plain kernel dst[i] = store(load(src[i])). */
#define KERNEL(D, DT, AT, AK, S, ST, SC)                                                           \
    SS_KERNEL_ATTR static void cv_##S##_##D(void *restrict dst, const void *restrict src,          \
                                            size_t n) {                                            \
        DT *restrict d = dst;                                                                      \
        const ST *restrict s = src;                                                                \
        for (size_t i = 0; i < n; i++) d[i] = st_##D##_##SC(LD_##S(s[i]));                         \
    }
#define KERNELS_FOR_SRC(S, ST, SC, unused) SS_DST_TYPES(KERNEL, S, ST, SC)
SS_SRC_TYPES(KERNELS_FOR_SRC, 0)

/* Fused padded kernels: `lead` pad elements, n converted ones, `trail` pad
 * elements, in one call and one pass over the output row (what a padded
 * batch-major row is; no separate fill call per segment). The pad is
 * stored through an unsigned integer of the element's size so that its bits
 * (a NaN's payload too) are copied exactly. */
#define FILLT_U8 uint8_t
#define FILLT_I8 uint8_t
#define FILLT_U16 uint16_t
#define FILLT_I16 uint16_t
#define FILLT_U32 uint32_t
#define FILLT_I32 uint32_t
#define FILLT_U64 uint64_t
#define FILLT_I64 uint64_t
#define FILLT_F16 uint16_t
#define FILLT_BF16 uint16_t
#define FILLT_F32 uint32_t
#define FILLT_F64 uint64_t

#define PKERNEL(D, DT, AT, AK, S, ST, SC)                                                          \
    SS_KERNEL_ATTR static void cvp_##S##_##D(void *restrict dst, const void *restrict src,         \
                                             size_t lead, size_t n, size_t trail,                  \
                                             const void *restrict pad) {                           \
        _Static_assert(sizeof(FILLT_##D) == sizeof(DT), "pad type");                               \
        FILLT_##D p, *restrict f = dst;                                                            \
        memcpy(&p, pad, sizeof p);                                                                 \
        for (size_t i = 0; i < lead; i++) f[i] = p;                                                \
        DT *restrict d = (DT *)dst + lead;                                                         \
        const ST *restrict s = src;                                                                \
        for (size_t i = 0; i < n; i++) d[i] = st_##D##_##SC(LD_##S(s[i]));                         \
        f += lead + n;                                                                             \
        for (size_t i = 0; i < trail; i++) f[i] = p;                                               \
    }
#define PKERNELS_FOR_SRC(S, ST, SC, unused) SS_DST_TYPES(PKERNEL, S, ST, SC)
SS_SRC_TYPES(PKERNELS_FOR_SRC, 0)

/* The same for equal dtypes: a copy between the fills. */
#define PCOPY(N, T)                                                                                \
    SS_KERNEL_ATTR static void cvp_copy##N(void *restrict dst, const void *restrict src,           \
                                           size_t lead, size_t n, size_t trail,                    \
                                           const void *restrict pad) {                             \
        T p, *restrict f = dst;                                                                    \
        memcpy(&p, pad, sizeof p);                                                                 \
        for (size_t i = 0; i < lead; i++) f[i] = p;                                                \
        if (n) memcpy(f + lead, src, n * sizeof p);                                                \
        f += lead + n;                                                                             \
        for (size_t i = 0; i < trail; i++) f[i] = p;                                               \
    }
PCOPY(1, uint8_t)
PCOPY(2, uint16_t)
PCOPY(4, uint32_t)
PCOPY(8, uint64_t)

/* The affine maps' load of a source as AT, equal to (AT)(double)x: direct
 * where the double step cannot round (what lets the compiler vectorise). */
#define ALD_U8(AT, x) ((AT)(x))
#define ALD_I8(AT, x) ((AT)(x))
#define ALD_U16(AT, x) ((AT)(x))
#define ALD_I16(AT, x) ((AT)(x))
#define ALD_U32(AT, x) ((AT)(x))
#define ALD_I32(AT, x) ((AT)(x))
#define ALD_U64(AT, x) ((AT)(double)(x))
#define ALD_I64(AT, x) ((AT)(double)(x))
#define ALD_F16(AT, x) ((AT)f16_to_float(x))
#define ALD_BF16(AT, x) ((AT)bf16_to_float(x))
#define ALD_F32(AT, x) ((AT)(x))
#define ALD_F64(AT, x) ((AT)(x))

/* Affine kernels straight to f32 (computed in float) and f64 (in double):
 * d = (AT)(double)src * scale + offset. Other outputs go through these (see
 * affine_generic), which gives the same values as a direct kernel would. */
#define AKERNEL(S, ST, SC, D, DT, AT, AK)                                                          \
    SS_KERNEL_ATTR static void cva_##S##_##D(void *restrict dst, const void *restrict src,         \
                                             size_t n_rows, const ss__affine *a) {                 \
        DT *restrict d = dst;                                                                      \
        const ST *restrict s = src;                                                                \
        const AT *restrict sc = a->scale_##AK, *restrict of = a->offset_##AK;                      \
        size_t k = a->rows_per_period, p = a->period;                                              \
        for (size_t b = 0; b < n_rows / k; b++, d += p, s += p)                                    \
            for (size_t j = 0; j < p; j++) d[j] = ALD_##S(AT, s[j]) * sc[j] + of[j];               \
        size_t rest = (n_rows % k) * a->row_elements;                                              \
        for (size_t j = 0; j < rest; j++) d[j] = ALD_##S(AT, s[j]) * sc[j] + of[j];                \
    }
#define AKERNELS_FOR_SRC(S, ST, SC, unused)                                                        \
    AKERNEL(S, ST, SC, F32, float, float, f)                                                       \
    AKERNEL(S, ST, SC, F64, double, double, d)
SS_SRC_TYPES(AKERNELS_FOR_SRC, 0)

#define TABLE_ENTRY(D, DT, AT, AK, S, ST, SC) [SS_##S][SS_##D] = cv_##S##_##D,
#define TABLE_FOR_SRC(S, ST, SC, unused) SS_DST_TYPES(TABLE_ENTRY, S, ST, SC)
static const conv_fn conv_table[13][13] = {SS_SRC_TYPES(TABLE_FOR_SRC, 0)};

#define PTABLE_ENTRY(D, DT, AT, AK, S, ST, SC) [SS_##S][SS_##D] = cvp_##S##_##D,
#define PTABLE_FOR_SRC(S, ST, SC, unused) SS_DST_TYPES(PTABLE_ENTRY, S, ST, SC)
static const ss__pad_fn pad_table[13][13] = {SS_SRC_TYPES(PTABLE_FOR_SRC, 0)};

#define ATABLE_FOR_SRC(S, ST, SC, unused) [SS_##S] = {cva_##S##_F32, cva_##S##_F64},
static const aff_fn aff_table[13][2] = {SS_SRC_TYPES(ATABLE_FOR_SRC, 0)};

/* Affine map to any other output: in chunks, to f32 (f16 and bf16 outputs:
 * computed in float) or f64 (integer outputs: in double) on the stack, then
 * converted. Each chunk starts on a row boundary, where the pattern starts. */
static void affine_generic(void *dst, ss_dtype dst_dtype, const void *src, ss_dtype src_dtype,
                           size_t n_rows, const ss__affine *a) {
    double tmp[1024];
    int in_float = dst_dtype == SS_F16 || dst_dtype == SS_BF16;
    ss_dtype mid = in_float ? SS_F32 : SS_F64;
    size_t E = a->row_elements, ssz = ss_dtype_size(src_dtype), dsz = ss_dtype_size(dst_dtype);
    const unsigned char *s = src;
    unsigned char *d = dst;
    if (E > 1024) { /* one row at a time does not fit: elementwise through the map */
        for (size_t r = 0; r < n_rows; r++)
            for (size_t c = 0; c < E; c++, s += ssz, d += dsz) {
                double v;
                conv_table[src_dtype][SS_F64](&v, s, 1);
                if (in_float) {
                    float f = (float)v * a->scale_f[c] + a->offset_f[c];
                    conv_table[SS_F32][dst_dtype](d, &f, 1);
                } else {
                    v = v * a->scale_d[c] + a->offset_d[c];
                    conv_table[SS_F64][dst_dtype](d, &v, 1);
                }
            }
        return;
    }
    size_t per = 1024 / E;
    for (size_t r = 0; r < n_rows; r += per) {
        size_t nr = n_rows - r < per ? n_rows - r : per;
        aff_table[src_dtype][in_float ? 0 : 1](tmp, s, nr, a);
        conv_table[mid][dst_dtype](d, tmp, nr * E);
        s += nr * E * ssz;
        d += nr * E * dsz;
    }
}

/* int64 -> f32 through double would round twice; use the direct conversion. */
static void cv_I64_F32_direct(void *restrict dst, const void *restrict src, size_t n) {
    float *restrict d = dst;
    const int64_t *restrict s = src;
    for (size_t i = 0; i < n; i++) d[i] = st_F32_i_direct(s[i]);
}

static void cv_U64_F32_direct(void *restrict dst, const void *restrict src, size_t n) {
    float *restrict d = dst;
    const uint64_t *restrict s = src;
    for (size_t i = 0; i < n; i++) d[i] = (float)s[i];
}

/* f32 -> bf16 from the float bits (same result as through double: the double
 * holds the float exactly), much faster. */
static void cv_F32_BF16_fast(void *restrict dst, const void *restrict src, size_t n) {
    uint16_t *restrict d = dst;
    const float *restrict s = src;
    for (size_t i = 0; i < n; i++) d[i] = ss_bf16_from_float(s[i]);
}

/* ------------------------------------------------------- public entry points */

int ss__dtype_valid(ss_dtype d) {
    return d >= SS_U8 && d <= SS_BF16;
}

int ss__affine_init(ss__affine *a, uint64_t row_elements, const double *scale,
                    const double *offset) {
    memset(a, 0, sizeof *a);
    if (row_elements == 0) row_elements = 1;
    size_t k = row_elements >= 256 ? 1 : (size_t)((256 + row_elements - 1) / row_elements);
    size_t p = (size_t)row_elements * k;
    a->row_elements = (size_t)row_elements;
    a->rows_per_period = k;
    a->period = p;
    a->scale_f = malloc(p * sizeof(float));
    a->offset_f = malloc(p * sizeof(float));
    a->scale_d = malloc(p * sizeof(double));
    a->offset_d = malloc(p * sizeof(double));
    if (!a->scale_f || !a->offset_f || !a->scale_d || !a->offset_d) {
        ss__affine_free(a);
        return ss__fail(SS_ENOMEM, "affine map of %llu channels: out of memory",
                        (unsigned long long)row_elements);
    }
    for (size_t j = 0; j < p; j++) {
        size_t c = j % (size_t)row_elements;
        a->scale_d[j] = scale ? scale[c] : 1.0;
        a->offset_d[j] = offset ? offset[c] : 0.0;
        a->scale_f[j] = (float)a->scale_d[j];
        a->offset_f[j] = (float)a->offset_d[j];
    }
    return 0;
}

void ss__affine_free(ss__affine *a) {
    if (!a) return;
    free(a->scale_f);
    free(a->offset_f);
    free(a->scale_d);
    free(a->offset_d);
    memset(a, 0, sizeof *a);
}

/* memcpy as a conversion kernel, for equal dtypes (sizes in elements). */
static void copy1(void *restrict dst, const void *restrict src, size_t n) {
    memcpy(dst, src, n);
}
static void copy2(void *restrict dst, const void *restrict src, size_t n) {
    memcpy(dst, src, 2 * n);
}
static void copy4(void *restrict dst, const void *restrict src, size_t n) {
    memcpy(dst, src, 4 * n);
}
static void copy8(void *restrict dst, const void *restrict src, size_t n) {
    memcpy(dst, src, 8 * n);
}

ss__conv_fn ss__cast_kernel(ss_dtype dst_dtype, ss_dtype src_dtype) {
    if (src_dtype == dst_dtype) {
        size_t es = ss_dtype_size(src_dtype);
        return es == 1 ? copy1 : es == 2 ? copy2 : es == 4 ? copy4 : copy8;
    }
    if (dst_dtype == SS_F32 && src_dtype == SS_I64) return cv_I64_F32_direct;
    if (dst_dtype == SS_F32 && src_dtype == SS_U64) return cv_U64_F32_direct;
    if (dst_dtype == SS_BF16 && src_dtype == SS_F32) return cv_F32_BF16_fast;
    return conv_table[src_dtype][dst_dtype];
}

ss__pad_fn ss__cast_pad_kernel(ss_dtype dst_dtype, ss_dtype src_dtype) {
    if (src_dtype == dst_dtype) {
        size_t es = ss_dtype_size(src_dtype);
        return es == 1 ? cvp_copy1 : es == 2 ? cvp_copy2 : es == 4 ? cvp_copy4 : cvp_copy8;
    }
    /* the pairs ss__cast_kernel() converts another way than the table */
    if ((dst_dtype == SS_F32 && (src_dtype == SS_I64 || src_dtype == SS_U64)) ||
        (dst_dtype == SS_BF16 && src_dtype == SS_F32))
        return NULL;
    return pad_table[src_dtype][dst_dtype];
}

void ss__cast(void *dst, ss_dtype dst_dtype, const void *src, ss_dtype src_dtype, uint64_t n_rows,
              uint64_t row_elements, const ss__affine *a) {
    size_t n = (size_t)(n_rows * row_elements);
    if (n == 0) return;
    if (a) {
        if (dst_dtype == SS_F32 || dst_dtype == SS_F64)
            aff_table[src_dtype][dst_dtype == SS_F32 ? 0 : 1](dst, src, (size_t)n_rows, a);
        else
            affine_generic(dst, dst_dtype, src, src_dtype, (size_t)n_rows, a);
        return;
    }
    if (src_dtype == dst_dtype) {
        if (dst != src) memcpy(dst, src, n * ss_dtype_size(src_dtype));
        return;
    }
    ss__cast_kernel(dst_dtype, src_dtype)(dst, src, n);
}

int ss_cast_rows(void *dst, ss_dtype dst_dtype, const void *src, ss_dtype src_dtype,
                 uint64_t n_rows, uint64_t row_elements, const double *scale,
                 const double *offset) {
    if (!ss__dtype_valid(dst_dtype))
        return ss__fail(SS_EINVAL, "ss_cast_rows: unknown destination dtype %d", (int)dst_dtype);
    if (!ss__dtype_valid(src_dtype))
        return ss__fail(SS_EINVAL, "ss_cast_rows: unknown source dtype %d", (int)src_dtype);
    if (n_rows == 0 || row_elements == 0) return 0;
    if (!dst || !src) return ss__fail(SS_EINVAL, "ss_cast_rows: NULL buffer");
    if (!scale && !offset) {
        ss__cast(dst, dst_dtype, src, src_dtype, n_rows, row_elements, NULL);
        return 0;
    }
    ss__affine a;
    int rc = ss__affine_init(&a, row_elements, scale, offset);
    if (rc) return rc;
    ss__cast(dst, dst_dtype, src, src_dtype, n_rows, row_elements, &a);
    ss__affine_free(&a);
    return 0;
}

void ss__fill(void *dst, const void *elem, size_t size, uint64_t n) {
    unsigned char *d = dst;
    const unsigned char *e = elem;
    int zero = 1;
    for (size_t i = 0; i < size; i++) zero &= e[i] == 0;
    if (zero) {
        memset(d, 0, (size_t)n * size);
        return;
    }
    switch (size) {
    case 1:
        memset(d, e[0], (size_t)n);
        return;
    case 2: {
        uint16_t v;
        memcpy(&v, e, 2);
        for (uint64_t i = 0; i < n; i++) memcpy(d + 2 * i, &v, 2);
        return;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, e, 4);
        for (uint64_t i = 0; i < n; i++) memcpy(d + 4 * i, &v, 4);
        return;
    }
    case 8: {
        uint64_t v;
        memcpy(&v, e, 8);
        for (uint64_t i = 0; i < n; i++) memcpy(d + 8 * i, &v, 8);
        return;
    }
    default:
        for (uint64_t i = 0; i < n; i++) memcpy(d + size * i, e, size);
    }
}

void ss__scalar_to(void *dst, ss_dtype dtype, double value) {
    ss__cast(dst, dtype, &value, SS_F64, 1, 1, NULL);
}

/* ------------------------------------------------------- exact scalars */

/* An integer as sign and magnitude, so int64 and uint64 values compare
 * without overflow. */
typedef struct {
    int neg;
    uint64_t mag;
} int_value;

static int int_fits(ss_dtype dtype, int_value v) {
    unsigned bits = 8 * (unsigned)ss_dtype_size(dtype);
    int is_signed = dtype == SS_I8 || dtype == SS_I16 || dtype == SS_I32 || dtype == SS_I64;
    uint64_t max = is_signed    ? (UINT64_C(1) << (bits - 1)) - 1
                   : bits == 64 ? UINT64_MAX
                                : (UINT64_C(1) << bits) - 1;
    if (!v.neg) return v.mag <= max;
    if (v.mag == 0) return 1;
    return is_signed && v.mag <= max + 1;
}

/* Store an in-range integer: two's complement, native byte order. */
static void int_store(void *dst, ss_dtype dtype, int_value v) {
    uint64_t bits = v.neg ? 0 - v.mag : v.mag;
    switch (ss_dtype_size(dtype)) {
    case 1:
        *(uint8_t *)dst = (uint8_t)bits;
        break;
    case 2: {
        uint16_t x = (uint16_t)bits;
        memcpy(dst, &x, 2);
    } break;
    case 4: {
        uint32_t x = (uint32_t)bits;
        memcpy(dst, &x, 4);
    } break;
    default:
        memcpy(dst, &bits, 8);
    }
}

static int is_int_dtype(ss_dtype d) {
    return d >= SS_U8 && d <= SS_I64;
}

int ss__scalar_exact(void *dst, ss_dtype dtype, ss_value_kind kind, double f, int64_t i,
                     uint64_t u) {
    if (kind == SS_VALUE_F64 && !is_int_dtype(dtype)) {
        ss__scalar_to(dst, dtype, f); /* float to float: rounded, as any cast */
        return 0;
    }
    int_value v = {0, 0};
    if (kind == SS_VALUE_I64) {
        v.neg = i < 0;
        v.mag = v.neg ? 0 - (uint64_t)i : (uint64_t)i;
    } else if (kind == SS_VALUE_U64) {
        v.mag = u;
    } else if (kind == SS_VALUE_F64) {
        /* 2^64 is exactly representable; everything below it converts. */
        if (!isfinite(f) || f != trunc(f) || fabs(f) >= 18446744073709551616.0) return SS_ERANGE;
        v.neg = f < 0;
        v.mag = (uint64_t)fabs(f);
    } else {
        return SS_ERANGE;
    }
    if (is_int_dtype(dtype)) {
        if (!int_fits(dtype, v)) return SS_ERANGE;
        int_store(dst, dtype, v);
        return 0;
    }
    /* An integer into a float dtype: exact when it comes back unchanged. */
    double d = v.neg ? -(double)v.mag : (double)v.mag, back;
    if (fabs(d) >= 18446744073709551616.0 || (uint64_t)fabs(d) != v.mag) return SS_ERANGE;
    ss__scalar_to(dst, dtype, d);
    ss__cast(&back, SS_F64, dst, dtype, 1, 1, NULL);
    return back == d ? 0 : SS_ERANGE;
}

void ss__scalar_print(char *buf, size_t cap, ss_value_kind kind, double f, int64_t i, uint64_t u) {
    if (kind == SS_VALUE_I64)
        snprintf(buf, cap, "%lld", (long long)i);
    else if (kind == SS_VALUE_U64)
        snprintf(buf, cap, "%llu", (unsigned long long)u);
    else if (kind == SS_VALUE_F64)
        snprintf(buf, cap, "%.17g", f);
    else
        snprintf(buf, cap, "(unknown value kind %d)", (int)kind);
}
