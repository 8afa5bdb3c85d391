/* SPDX-License-Identifier: BSD-2-Clause */
/* test_cast.c - ss_cast_rows: f16/bf16 bit patterns, saturation,
 * rounding, affine maps, every dtype pair against a plain reference. */
#include "seqstore.h"
#include "testutil.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- reference */

static const ss_dtype all_dtypes[] = {SS_U8,  SS_I8,  SS_U16, SS_I16, SS_U32, SS_I32,
                                      SS_U64, SS_I64, SS_F16, SS_F32, SS_F64, SS_BF16};
#define NDT (sizeof all_dtypes / sizeof all_dtypes[0])

/* Value of binary16 / bfloat16 bits, written from the definition. */
static double ref_small_value(uint16_t h, int mant, int expbits) {
    int bias = (1 << (expbits - 1)) - 1;
    int e = (h >> mant) & ((1 << expbits) - 1);
    int m = h & ((1 << mant) - 1);
    double s = (h >> 15) ? -1.0 : 1.0;
    if (e == (1 << expbits) - 1) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp(m, 1 - bias - mant);
    return s * ldexp((1 << mant) + m, e - bias - mant);
}

/* Nearest binary16/bfloat16 to x by binary search over the positive codes
 * (their values increase with the code), ties to the even code. */
static uint16_t ref_small_round(double x, int mant, int expbits) {
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    uint16_t inf = (uint16_t)(((1 << expbits) - 1) << mant);
    if (isnan(x)) return 0xffff; /* any NaN: compared by class below */
    double a = fabs(x);
    uint16_t lo = 0, hi = (uint16_t)(inf - 1); /* largest finite */
    double maxv = ref_small_value(hi, mant, expbits);
    double half_ulp = (maxv - ref_small_value((uint16_t)(hi - 1), mant, expbits)) / 2;
    if (a >= maxv + half_ulp) return sign | inf;
    if (a >= maxv) return sign | hi;
    while (hi - lo > 1) { /* value(lo) <= a < value(hi) */
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if (ref_small_value(mid, mant, expbits) <= a)
            lo = mid;
        else
            hi = mid;
    }
    double dl = a - ref_small_value(lo, mant, expbits), dh = ref_small_value(hi, mant, expbits) - a;
    uint16_t r = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
    return sign | r;
}

static int is_int(ss_dtype d) {
    return d <= SS_I64;
}

/* Exact value of element i of a buffer, as long double (exact for every
 * 64-bit integer with x87 long double; NaN for NaN). */
static long double ref_load(const void *p, ss_dtype d, size_t i) {
    const unsigned char *b = (const unsigned char *)p + i * ss_dtype_size(d);
    switch (d) {
    case SS_U8:
        return *(const uint8_t *)b;
    case SS_I8:
        return *(const int8_t *)b;
    case SS_U16: {
        uint16_t v;
        memcpy(&v, b, 2);
        return v;
    }
    case SS_I16: {
        int16_t v;
        memcpy(&v, b, 2);
        return v;
    }
    case SS_U32: {
        uint32_t v;
        memcpy(&v, b, 4);
        return v;
    }
    case SS_I32: {
        int32_t v;
        memcpy(&v, b, 4);
        return v;
    }
    case SS_U64: {
        uint64_t v;
        memcpy(&v, b, 8);
        return v;
    }
    case SS_I64: {
        int64_t v;
        memcpy(&v, b, 8);
        return v;
    }
    case SS_F16: {
        uint16_t v;
        memcpy(&v, b, 2);
        return ref_small_value(v, 10, 5);
    }
    case SS_BF16: {
        uint16_t v;
        memcpy(&v, b, 2);
        return ref_small_value(v, 7, 8);
    }
    case SS_F32: {
        float v;
        memcpy(&v, b, 4);
        return v;
    }
    case SS_F64: {
        double v;
        memcpy(&v, b, 8);
        return v;
    }
    }
    return 0;
}

static void int_range(ss_dtype d, long double *lo, long double *hi) {
    switch (d) {
    case SS_U8:
        *lo = 0;
        *hi = UINT8_MAX;
        break;
    case SS_I8:
        *lo = INT8_MIN;
        *hi = INT8_MAX;
        break;
    case SS_U16:
        *lo = 0;
        *hi = UINT16_MAX;
        break;
    case SS_I16:
        *lo = INT16_MIN;
        *hi = INT16_MAX;
        break;
    case SS_U32:
        *lo = 0;
        *hi = UINT32_MAX;
        break;
    case SS_I32:
        *lo = INT32_MIN;
        *hi = INT32_MAX;
        break;
    case SS_U64:
        *lo = 0;
        *hi = (long double)UINT64_MAX;
        break;
    default:
        *lo = (long double)INT64_MIN;
        *hi = (long double)INT64_MAX;
        break;
    }
}

/* The expected bytes of converting value v (exact) to dtype d. */
static void ref_store(void *p, ss_dtype d, long double v) {
    unsigned char *b = p;
    if (is_int(d)) {
        long double lo, hi, r = isnan(v) ? 0 : nearbyintl(v);
        int_range(d, &lo, &hi);
        if (r < lo) r = lo;
        if (r > hi) r = hi;
        switch (d) {
        case SS_U8: {
            uint8_t x = (uint8_t)r;
            memcpy(b, &x, 1);
            break;
        }
        case SS_I8: {
            int8_t x = (int8_t)r;
            memcpy(b, &x, 1);
            break;
        }
        case SS_U16: {
            uint16_t x = (uint16_t)r;
            memcpy(b, &x, 2);
            break;
        }
        case SS_I16: {
            int16_t x = (int16_t)r;
            memcpy(b, &x, 2);
            break;
        }
        case SS_U32: {
            uint32_t x = (uint32_t)r;
            memcpy(b, &x, 4);
            break;
        }
        case SS_I32: {
            int32_t x = (int32_t)r;
            memcpy(b, &x, 4);
            break;
        }
        case SS_U64: {
            uint64_t x = (uint64_t)r;
            memcpy(b, &x, 8);
            break;
        }
        default: {
            int64_t x = (int64_t)r;
            memcpy(b, &x, 8);
            break;
        }
        }
        return;
    }
    switch (d) {
    case SS_F16: {
        uint16_t x = ref_small_round((double)v, 10, 5);
        memcpy(b, &x, 2);
        break;
    }
    case SS_BF16: {
        uint16_t x = ref_small_round((double)v, 7, 8);
        memcpy(b, &x, 2);
        break;
    }
    case SS_F32: {
        float x = (float)v;
        memcpy(b, &x, 4);
        break;
    }
    default: {
        double x = (double)v;
        memcpy(b, &x, 8);
        break;
    }
    }
}

/* Equal element bytes, treating any two NaNs of a float dtype as equal. */
static int same_elem(const void *a, const void *b, ss_dtype d) {
    size_t n = ss_dtype_size(d);
    if (memcmp(a, b, n) == 0) return 1;
    if (is_int(d)) return 0;
    long double x = ref_load(a, d, 0), y = ref_load(b, d, 0);
    return isnan(x) && (isnan(y) || (d != SS_F32 && d != SS_F64 && memcmp(b, "\xff\xff", 2) == 0));
}

/* Random element bytes of dtype d: special values, boundaries, random bits. */
static void random_elem(void *p, ss_dtype d, uint64_t *rng) {
    uint64_t r = ss_test_rand(rng);
    size_t n = ss_dtype_size(d);
    switch (r % 4) {
    case 0: { /* random bits */
        uint64_t bits = ss_test_rand(rng);
        memcpy(p, &bits, n);
        return;
    }
    case 1: { /* small integer or half-integer values */
        double v = (double)((int64_t)(ss_test_rand(rng) % 1001) - 500) / 2;
        ref_store(p, d, v);
        return;
    }
    case 2: { /* near the boundaries of every integer type */
        static const double edges[] = {
            0,     -1,     127,    128,   -128,  -129,        255,         256,    32767,
            32768, -32768, -32769, 65535, 65536, 0.5,         1.5,         2.5,    -0.5,
            -2.5,  65519., 65520., 1e10,  -1e10, 4294967295., 4294967296., 9.3e18, 1.9e19};
        double v = edges[ss_test_rand(rng) % (sizeof edges / sizeof edges[0])];
        ref_store(p, d, v);
        return;
    }
    default: { /* a wide-ranging float */
        double v = ldexp((double)(ss_test_rand(rng) % 100000) / 1000.0 - 50,
                         (int)(ss_test_rand(rng) % 80) - 40);
        ref_store(p, d, v);
    }
    }
}

/* ---------------------------------------------------------------- tests */

static void test_known_bits(void) {
    /* binary16 */
    CHECK_EQ_U64(ss_f16_from_float(1.0f), 0x3c00);
    CHECK_EQ_U64(ss_f16_from_float(-2.0f), 0xc000);
    CHECK_EQ_U64(ss_f16_from_float(0.5f), 0x3800);
    CHECK_EQ_U64(ss_f16_from_float(65504.0f), 0x7bff);          /* largest finite */
    CHECK_EQ_U64(ss_f16_from_float(65519.0f), 0x7bff);          /* rounds down */
    CHECK_EQ_U64(ss_f16_from_float(65520.0f), 0x7c00);          /* ties to even: inf */
    CHECK_EQ_U64(ss_f16_from_float(0x1p-14f), 0x0400);          /* smallest normal */
    CHECK_EQ_U64(ss_f16_from_float(0x1p-24f), 0x0001);          /* smallest subnormal */
    CHECK_EQ_U64(ss_f16_from_float(0x1p-25f), 0x0000);          /* tie to even: 0 */
    CHECK_EQ_U64(ss_f16_from_float(0x1.8p-25f), 0x0001);        /* above the tie */
    CHECK_EQ_U64(ss_f16_from_float(0x1.8p-24f), 0x0002);        /* 1.5 ulp: tie to even 2 */
    CHECK_EQ_U64(ss_f16_from_float(1.0f + 0x1p-11f), 0x3c00);   /* tie: even */
    CHECK_EQ_U64(ss_f16_from_float(1.0f + 0x1.8p-10f), 0x3c02); /* 1.5 ulp tie: even */
    CHECK_EQ_U64(ss_f16_from_float(0.333333343f), 0x3555);
    CHECK_EQ_U64(ss_f16_from_float(-0.0f), 0x8000);
    CHECK_EQ_U64(ss_f16_from_float(INFINITY), 0x7c00);
    CHECK_EQ_U64(ss_f16_from_float(-INFINITY), 0xfc00);
    CHECK((ss_f16_from_float(NAN) & 0x7c00) == 0x7c00 && (ss_f16_from_float(NAN) & 0x3ff) != 0);
    CHECK(ss_f16_to_float(0x3c00) == 1.0f);
    CHECK(ss_f16_to_float(0x7bff) == 65504.0f);
    CHECK(ss_f16_to_float(0x0001) == 0x1p-24f);
    CHECK(ss_f16_to_float(0x03ff) == 0x1.ff8p-15f);
    CHECK(ss_f16_to_float(0xfc00) == -INFINITY);
    CHECK(isnan(ss_f16_to_float(0x7e00)));
    /* bfloat16 */
    CHECK_EQ_U64(ss_bf16_from_float(1.0f), 0x3f80);
    CHECK_EQ_U64(ss_bf16_from_float(-2.0f), 0xc000);
    CHECK_EQ_U64(ss_bf16_from_float(3.140625f), 0x4049);
    CHECK_EQ_U64(ss_bf16_from_float(1.0f + 0x1p-8f), 0x3f80);   /* tie: even */
    CHECK_EQ_U64(ss_bf16_from_float(1.0f + 0x1.8p-7f), 0x3f82); /* tie: even (up) */
    CHECK_EQ_U64(ss_bf16_from_float(1.0f + 0x1.2p-8f), 0x3f81); /* above the tie */
    CHECK_EQ_U64(ss_bf16_from_float(0x1.fffffep127f), 0x7f80);  /* overflow to inf */
    CHECK((ss_bf16_from_float(NAN) & 0x7f80) == 0x7f80 && (ss_bf16_from_float(NAN) & 0x7f) != 0);
    CHECK(ss_bf16_to_float(0x3f80) == 1.0f);
    CHECK(ss_bf16_to_float(0x4049) == 3.140625f);
    /* through ss_cast_rows */
    float f[4] = {1.0f, 65520.0f, -0x1p-24f, 0.1f};
    uint16_t h[4], bh[4];
    CHECK_OK(ss_cast_rows(h, SS_F16, f, SS_F32, 1, 4, NULL, NULL));
    CHECK_EQ_U64(h[0], 0x3c00);
    CHECK_EQ_U64(h[1], 0x7c00);
    CHECK_EQ_U64(h[2], 0x8001);
    CHECK_EQ_U64(h[3], 0x2e66);
    CHECK_OK(ss_cast_rows(bh, SS_BF16, f, SS_F32, 1, 4, NULL, NULL));
    CHECK_EQ_U64(bh[0], 0x3f80);
    CHECK_EQ_U64(bh[3], 0x3dcd);
    /* f64 -> f16 rounds once: 1 + 2^-11 + 2^-40 is just above the tie */
    double d = 1.0 + 0x1p-11 + 0x1p-40;
    CHECK_OK(ss_cast_rows(h, SS_F16, &d, SS_F64, 1, 1, NULL, NULL));
    CHECK_EQ_U64(h[0], 0x3c01);
    /* f64 -> bf16 likewise (through float it would round to the tie and then to even) */
    d = 1.0 + 0x1p-8 + 0x1p-40;
    CHECK_OK(ss_cast_rows(h, SS_BF16, &d, SS_F64, 1, 1, NULL, NULL));
    CHECK_EQ_U64(h[0], 0x3f81);
    /* f16 -> f32 -> f16 round trip of every code */
    for (uint32_t c = 0; c < 65536; c++) {
        uint16_t in = (uint16_t)c, back;
        float x;
        CHECK_OK(ss_cast_rows(&x, SS_F32, &in, SS_F16, 1, 1, NULL, NULL));
        CHECK_OK(ss_cast_rows(&back, SS_F16, &x, SS_F32, 1, 1, NULL, NULL));
        if (!isnan(x))
            CHECK_EQ_U64(back, in);
        else
            CHECK((back & 0x7c00) == 0x7c00 && (back & 0x3ff));
    }
}

static void test_saturation(void) {
    int16_t s16[6] = {-5, 0, 255, 256, 32767, -32768};
    uint8_t u8[6];
    CHECK_OK(ss_cast_rows(u8, SS_U8, s16, SS_I16, 2, 3, NULL, NULL));
    const uint8_t want_u8[6] = {0, 0, 255, 255, 255, 0};
    CHECK(memcmp(u8, want_u8, 6) == 0);
    uint32_t u32[3] = {70000, 5, 4294967295u};
    int16_t i16[3];
    CHECK_OK(ss_cast_rows(i16, SS_I16, u32, SS_U32, 1, 3, NULL, NULL));
    CHECK(i16[0] == 32767 && i16[1] == 5 && i16[2] == 32767);
    uint64_t u64[2] = {UINT64_MAX, 7};
    int64_t i64[2];
    CHECK_OK(ss_cast_rows(i64, SS_I64, u64, SS_U64, 1, 2, NULL, NULL));
    CHECK(i64[0] == INT64_MAX && i64[1] == 7);
    float fl[8] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 1e20f, -1e20f, NAN};
    int32_t i32[8];
    CHECK_OK(ss_cast_rows(i32, SS_I32, fl, SS_F32, 1, 8, NULL, NULL));
    const int32_t want_i32[8] = {0, 2, 2, 0, -2, INT32_MAX, INT32_MIN, 0};
    CHECK(memcmp(i32, want_i32, sizeof want_i32) == 0);
    double dd[3] = {1e30, -1e30, 9223372036854775807.0};
    CHECK_OK(ss_cast_rows(i64, SS_I64, dd, SS_F64, 1, 2, NULL, NULL));
    CHECK(i64[0] == INT64_MAX && i64[1] == INT64_MIN);
    CHECK_OK(ss_cast_rows(u64, SS_U64, dd, SS_F64, 1, 2, NULL, NULL));
    CHECK(u64[0] == UINT64_MAX && u64[1] == 0);
    uint16_t tok[4] = {0, 1, 65535, 300};
    int64_t tok64[4];
    CHECK_OK(ss_cast_rows(tok64, SS_I64, tok, SS_U16, 1, 4, NULL, NULL));
    CHECK(tok64[0] == 0 && tok64[1] == 1 && tok64[2] == 65535 && tok64[3] == 300);
}

static void test_affine(void) {
    /* EDF-style: physical = digital * gain + offset, per channel */
    int16_t dig[2][3] = {{100, -200, 32767}, {-32768, 0, 1}};
    double gain[3] = {0.5, 0.25, 1.0 / 3.0}, off[3] = {1.0, 0.0, -2.0};
    float phys[2][3];
    CHECK_OK(ss_cast_rows(phys, SS_F32, dig, SS_I16, 2, 3, gain, off));
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++) {
            float want = (float)dig[r][c] * (float)gain[c] + (float)off[c];
            CHECK(memcmp(&phys[r][c], &want, 4) == 0);
        }
    CHECK(phys[0][0] == 51.0f && phys[0][1] == -50.0f && phys[1][1] == 0.0f);
    /* double output computed in double */
    double physd[2][3];
    CHECK_OK(ss_cast_rows(physd, SS_F64, dig, SS_I16, 2, 3, gain, NULL));
    CHECK(physd[0][2] == 32767.0 * (1.0 / 3.0));
    /* integer output: rounded and saturated after the map */
    int8_t small[2][3];
    CHECK_OK(ss_cast_rows(small, SS_I8, dig, SS_I16, 2, 3, gain, off));
    CHECK(small[0][0] == 51 && small[0][1] == -50 && small[0][2] == 127 && small[1][0] == -128);
    /* offset only: scale 1 */
    uint8_t u[4] = {0, 1, 2, 3};
    double o1[1] = {-1.5};
    float fo[4];
    CHECK_OK(ss_cast_rows(fo, SS_F32, u, SS_U8, 4, 1, NULL, o1));
    CHECK(fo[0] == -1.5f && fo[3] == 1.5f);
    /* f16 and bf16 outputs: computed in float, then rounded once */
    uint16_t hh[2][3];
    CHECK_OK(ss_cast_rows(hh, SS_F16, dig, SS_I16, 2, 3, gain, off));
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++)
            CHECK_EQ_U64(hh[r][c],
                         ss_f16_from_float((float)dig[r][c] * (float)gain[c] + (float)off[c]));
    CHECK_EQ_U64(hh[0][0], 0x5260); /* 51 */
    CHECK_OK(ss_cast_rows(hh, SS_BF16, dig, SS_I16, 2, 3, gain, off));
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++)
            CHECK_EQ_U64(hh[r][c],
                         ss_bf16_from_float((float)dig[r][c] * (float)gain[c] + (float)off[c]));
    /* rows wider than the conversion chunk (1500 channels), u8 -> i32 in double */
    enum { WIDE = 1500 };
    static uint8_t wsrc[3][WIDE];
    static int32_t wdst[3][WIDE];
    static double wg[WIDE], wo[WIDE];
    for (int c = 0; c < WIDE; c++) {
        wg[c] = c % 2 ? 0.5 : -3.0;
        wo[c] = c % 3 ? 0.25 : 0.0;
        for (int r = 0; r < 3; r++) wsrc[r][c] = (uint8_t)(r * 7 + c);
    }
    CHECK_OK(ss_cast_rows(wdst, SS_I32, wsrc, SS_U8, 3, WIDE, wg, wo));
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < WIDE; c++)
            CHECK(wdst[r][c] == (int32_t)nearbyint((double)wsrc[r][c] * wg[c] + wo[c]));
    /* many rows over a short channel count (exercises the repeated pattern) */
    enum { R = 1000, C = 7 };
    static int16_t src[R][C];
    static float dst[R][C];
    double g[C], of[C];
    uint64_t rng = 5;
    for (int c = 0; c < C; c++) {
        g[c] = (double)(ss_test_rand(&rng) % 1000) / 77.0;
        of[c] = (double)(ss_test_rand(&rng) % 1000) / 13.0 - 30;
    }
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) src[r][c] = (int16_t)ss_test_rand(&rng);
    for (uint64_t n = 0; n <= R; n += 37) {
        memset(dst, 0xab, sizeof dst);
        CHECK_OK(ss_cast_rows(dst, SS_F32, src, SS_I16, n, C, g, of));
        for (uint64_t r = 0; r < R; r++)
            for (int c = 0; c < C; c++) {
                if (r < n) {
                    float want = (float)src[r][c] * (float)g[c] + (float)of[c];
                    CHECK(memcmp(&dst[r][c], &want, 4) == 0);
                } else {
                    uint32_t bits;
                    memcpy(&bits, &dst[r][c], 4);
                    CHECK_EQ_U64(bits, 0xabababab); /* nothing written beyond n rows */
                }
            }
    }
}

/* Every dtype pair, random values, against the long-double reference. */
static void test_all_pairs(void) {
    enum { N = 3000 };
    static unsigned char src[N * 8], dst[N * 8], want[8];
    uint64_t rng = 42;
    for (size_t a = 0; a < NDT; a++) {
        ss_dtype sd = all_dtypes[a];
        for (size_t i = 0; i < N; i++) random_elem(src + i * ss_dtype_size(sd), sd, &rng);
        for (size_t b = 0; b < NDT; b++) {
            ss_dtype dd = all_dtypes[b];
            CHECK_OK(ss_cast_rows(dst, dd, src, sd, N / 3, 3, NULL, NULL));
            for (size_t i = 0; i < N; i++) {
                long double v = ref_load(src, sd, i);
                ref_store(want, dd, v);
                if (dd == SS_F32 && !is_int(sd)) { /* one rounding from the exact value */
                    float x = (float)v;
                    memcpy(want, &x, 4);
                }
                if (!same_elem(dst + i * ss_dtype_size(dd), want, dd)) {
                    fprintf(stderr, "%s -> %s element %zu (%Lg) mismatch\n", ss_dtype_name(sd),
                            ss_dtype_name(dd), i, v);
                    CHECK(0);
                }
            }
        }
    }
}

static void test_errors(void) {
    char buf[16] = {0};
    CHECK_RC(ss_cast_rows(buf, (ss_dtype)0, buf, SS_U8, 1, 1, NULL, NULL), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "destination dtype") != NULL);
    CHECK_RC(ss_cast_rows(buf, SS_U8, buf, (ss_dtype)99, 1, 1, NULL, NULL), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "source dtype") != NULL);
    CHECK_RC(ss_cast_rows(NULL, SS_U8, buf, SS_U8, 1, 1, NULL, NULL), SS_EINVAL);
    CHECK_OK(ss_cast_rows(NULL, SS_U8, NULL, SS_U8, 0, 5, NULL, NULL));
}

int main(void) {
    test_known_bits();
    test_saturation();
    test_affine();
    test_all_pairs();
    test_errors();
    printf("test_convert: ok\n");
    return 0;
}
