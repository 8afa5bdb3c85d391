/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_npy.c - the .npy header parser and `seqstore convert npy`.
 *
 * The test writes its own .npy files (versions 1-3, both byte orders) with a
 * plain writer below and checks the store's values against the values it
 * wrote; bad headers must fail with their specific messages. */
#include "npy.h"
#include "testutil.h"

#include <string.h>
#include <sys/wait.h>

/* `seqstore ARGS --quiet`; stderr into err. */
static int run_cli(char *err, size_t errlen, const char *args) {
    return ss_test_cli(err, errlen, NULL, "%s --quiet", args);
}

/* A .npy image in `out` (returns its size): version `major`, the dict text as
 * given, padded with spaces and '\n' to a multiple of 64, then `data`. */
static size_t npy_bytes(unsigned char *out, int major, const char *dict, const void *data,
                        size_t dlen) {
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
    size_t total = (pre + dl + 1 + 63) / 64 * 64, hlen = total - pre;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)major, out[7] = 0;
    out[8] = (unsigned char)hlen, out[9] = (unsigned char)(hlen >> 8);
    if (major != 1) out[10] = (unsigned char)(hlen >> 16), out[11] = (unsigned char)(hlen >> 24);
    memcpy(out + pre, dict, dl);
    memset(out + pre + dl, ' ', hlen - dl - 1);
    out[total - 1] = '\n';
    if (dlen) memcpy(out + total, data, dlen);
    return total + dlen;
}

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    CHECK(f);
    CHECK(fwrite(data, 1, len, f) == len);
    CHECK(fclose(f) == 0);
}

static int parse(ss_npy_header *h, const char *dict, int major) {
    static unsigned char buf[4096];
    size_t n = npy_bytes(buf, major, dict, NULL, 0);
    return ss__npy_parse_header(h, buf, n);
}

/* --------------------------------------------------------- the parser */

static void test_parser(void) {
    ss_npy_header h;
    CHECK_OK(parse(&h, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 1));
    CHECK(h.major == 1 && h.dtype == SS_F32 && h.elem_size == 4 && !h.swap);
    CHECK(h.ndim == 2 && h.shape[0] == 3 && h.shape[1] == 4 && h.count == 12);
    CHECK_EQ_U64(h.data_offset, 128);
    CHECK_OK(parse(&h, "{\"shape\": (7,), \"fortran_order\": False, \"descr\": \">i2\"}", 2));
    CHECK(h.major == 2 && h.dtype == SS_I16 && h.swap && h.ndim == 1 && h.shape[0] == 7);
    CHECK_OK(parse(&h, "{'descr': '|u1', 'fortran_order': False, 'shape': (), }", 3));
    CHECK(h.major == 3 && h.dtype == SS_U8 && h.ndim == 0 && h.count == 1);
    CHECK_OK(parse(&h, "{'descr': '|b1', 'fortran_order': False, 'shape': (2L, 0L, 5L), }", 1));
    CHECK(h.dtype == SS_U8 && h.ndim == 3 && h.count == 0);
    const char *names[] = {"<i1", "<i8", "<u2", "<u4", ">u8", "<f2", ">f8", "=f4"};
    const ss_dtype want[] = {SS_I8, SS_I64, SS_U16, SS_U32, SS_U64, SS_F16, SS_F64, SS_F32};
    for (int k = 0; k < 8; k++) {
        char d[128];
        snprintf(d, sizeof d, "{'descr': '%s', 'fortran_order': False, 'shape': (1,), }", names[k]);
        CHECK_OK(parse(&h, d, 1));
        CHECK_EQ_U64(h.dtype, want[k]);
        CHECK_EQ_U64(h.swap, names[k][0] == '>');
    }

    /* each bad header with its message */
    struct {
        const char *dict, *msg;
    } bad[] = {
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (3, 4), }", "Fortran order"},
        {"{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", "object arrays"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }",
         "structured dtype at byte 20"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", "unsupported .npy dtype"},
        {"{'descr': '<U5', 'fortran_order': False, 'shape': (3,), }", "unsupported .npy dtype"},
        {"{'descr': '<f16', 'fortran_order': False, 'shape': (3,), }", "unsupported .npy dtype"},
        {"{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (3,), }", "unsupported"},
        {"{'descr': '<f4', 'shape': (3,), }", "lacks 'fortran_order'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3 4), }",
         "expected ',' or ')' at byte 63"},
        {"{'descr': '<f4', 'fortran_order': Nope, 'shape': (3,), }", "True or False at byte 44"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}",
         "unknown .npy header key 'x'"},
        {"['descr', '<f4']", "expected '{' at byte 10"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }",
         "overflows"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (999999999999999999999999,), }",
         "too large"},
        {"{'descr': '<f4", "unterminated string"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int rc = parse(&h, bad[k].dict, 1);
        if (rc != SS_EINPUT || !strstr(ss_error_message(), bad[k].msg)) {
            fprintf(stderr, "bad header %zu: rc %d, message '%s', expected '%s'\n", k, rc,
                    ss_error_message(), bad[k].msg);
            exit(1);
        }
    }
    /* the preamble */
    unsigned char buf[256];
    size_t n =
        npy_bytes(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", NULL, 0);
    CHECK_RC(ss__npy_parse_header(&h, buf, 9), SS_EINPUT);
    CHECK(strstr(ss_error_message(), "truncated .npy preamble"));
    CHECK_RC(ss__npy_parse_header(&h, buf, n - 1), SS_EINPUT);
    CHECK(strstr(ss_error_message(), "127 of 128 bytes"));
    buf[6] = 4;
    CHECK_RC(ss__npy_parse_header(&h, buf, n), SS_EINPUT);
    CHECK(strstr(ss_error_message(), "version 4.0 at byte 6"));
    buf[6] = 1, buf[1] = 'X';
    CHECK_RC(ss__npy_parse_header(&h, buf, n), SS_EINPUT);
    CHECK(strstr(ss_error_message(), "bad magic"));
    /* a version-2 header length beyond the limit is refused before any allocation */
    npy_bytes(buf, 2, "{}", NULL, 0);
    buf[11] = 0x40;
    CHECK_RC(ss__npy_parse_header(&h, buf, 64), SS_EINPUT);
}

/* --------------------------------------------------- the converter */

static void test_roundtrip(void) {
    enum { NFILES = 7, R0 = 3, R1 = 2 };
    static unsigned char file[1 << 16];
    static float vals[NFILES][200][R0][R1];
    uint64_t T[NFILES], seed = 42;
    char args[8192], err[8192];
    int n = 0;
    char store[512], good[512], badp[512];
    snprintf(store, sizeof store, "%s", ss_test_path("npy.ss"));
    n += snprintf(args + n, sizeof args - (size_t)n, "convert npy");
    for (int f = 0; f < NFILES; f++) {
        char dict[256], path[64];
        T[f] = f == 3 ? 0 : 1 + ss_test_rand(&seed) % 200;
        for (uint64_t t = 0; t < T[f]; t++)
            for (int a = 0; a < R0; a++)
                for (int b = 0; b < R1; b++)
                    vals[f][t][a][b] = (float)(int64_t)(ss_test_rand(&seed) % 20001) / 7.0f - 1000;
        /* odd files big-endian; versions cycle 1, 2, 3 */
        int big = f % 2, major = 1 + f % 3;
        unsigned char data[200 * R0 * R1 * 4];
        memcpy(data, vals[f], T[f] * R0 * R1 * 4);
        if (big)
            for (size_t i = 0; i < T[f] * R0 * R1; i++) {
                unsigned char *p = data + 4 * i, x;
                x = p[0], p[0] = p[3], p[3] = x, x = p[1], p[1] = p[2], p[2] = x;
            }
        snprintf(dict, sizeof dict,
                 "{'descr': '%cf4', 'fortran_order': False, 'shape': (%llu, %d, %d), }",
                 big ? '>' : '<', (unsigned long long)T[f], R0, R1);
        size_t len = npy_bytes(file, major, dict, data, T[f] * R0 * R1 * 4);
        snprintf(path, sizeof path, "a%d.npy", f);
        write_file(ss_test_path(path), file, len);
        n += snprintf(args + n, sizeof args - (size_t)n, " %s", ss_test_path(path));
    }
    snprintf(args + n, sizeof args - (size_t)n, " --field x -o %s", store);
    CHECK_EQ_U64(run_cli(err, sizeof err, args), 0);
    /* --shard K/N: the shards in order hold the same examples (whole files) */
    snprintf(args + n, sizeof args - (size_t)n, " --field x");
    ss_test_convert_shards(NULL, args, store, "npy-shard");

    ss_store *s;
    ss_field fi;
    ss_view v;
    CHECK_OK(ss_open(&s, store, 0));
    CHECK_EQ_U64(ss_count(s), NFILES);
    CHECK_OK(ss_field_info(&fi, s, 0));
    CHECK(!strcmp(fi.name, "x") && fi.dtype == SS_F32 && fi.sequence && fi.ndim == 2);
    CHECK(fi.dims[0] == R0 && fi.dims[1] == R1);
    for (int f = 0; f < NFILES; f++) {
        CHECK_OK(ss_get(&v, s, 0, (uint64_t)f));
        CHECK_EQ_U64(v.length, T[f]);
        if (T[f]) CHECK(memcmp(v.data, vals[f], T[f] * R0 * R1 * 4) == 0);
    }
    ss_close(s);

    /* bad files: wrong trailing shape, wrong dtype, Fortran order, truncated data */
    snprintf(good, sizeof good, "%s", ss_test_path("a0.npy"));
    struct {
        const char *dict;
        size_t dlen;
        const char *msg;
    } bad[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 3), }", 48,
         "trailing shape (2,3) differs from the first file's (3,2)"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 2), }", 96,
         "dtype f64 differs from the first file's f32"},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3, 2), }", 48, "Fortran order"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 2), }", 40,
         "truncated: the header declares 12 elements of 4 bytes, more than the 40 bytes the file "
         "holds after its header"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 2), }", 52,
         "trailing bytes after the data, at byte 176"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4, "0-d array"},
    };
    snprintf(badp, sizeof badp, "%s", ss_test_path("bad.npy"));
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        static unsigned char zeros[128];
        size_t len = npy_bytes(file, 1, bad[k].dict, zeros, bad[k].dlen);
        write_file(badp, file, len);
        snprintf(args, sizeof args, "convert npy %s %s -o %s --force", good, badp, store);
        if (run_cli(err, sizeof err, args) != 1 || !strstr(err, badp) || !strstr(err, bad[k].msg)) {
            fprintf(stderr, "bad file %zu: expected '%s', got: %s\n", k, bad[k].msg, err);
            exit(1);
        }
        /* --skip-bad: the good file is converted, the bad one listed */
        snprintf(args, sizeof args, "convert npy %s %s %s -o %s --force --skip-bad", good, badp,
                 good, store);
        CHECK_EQ_U64(run_cli(err, sizeof err, args), 0);
        CHECK(strstr(err, bad[k].msg));
        CHECK_OK(ss_open(&s, store, 0));
        CHECK_EQ_U64(ss_count(s), 2);
        ss_close(s);
    }
}

int main(void) {
    test_parser();
    test_roundtrip();
    printf("test_convert_npy: ok\n");
    return 0;
}
