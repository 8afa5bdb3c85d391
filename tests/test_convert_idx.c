/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_idx.c - the IDX header parser and `seqstore convert idx`.
 *
 * Real data: Debian's dataset-fashion-mnist, checked image by image against an
 * independent read of the decompressed IDX bytes (plain zlib, fixed offsets),
 * plus known labels. Synthetic files cover big-endian element types, gzip,
 * truncation, count mismatches and --skip-bad. */
#include "idx.h"
#include "testutil.h"

#include <string.h>
#include <sys/wait.h>
#include <zlib.h>

#define FMNIST "/usr/share/datasets/fashion-mnist/"

/* ------------------------------------------------------------- helpers */

/* Run the CLI with `args`; stderr goes to a file whose text is returned in `err`. */
/* `seqstore ARGS --quiet`; stderr into err. */
static int run_cli(char *err, size_t errlen, const char *args) {
    return ss_test_cli(err, errlen, NULL, "%s --quiet", args);
}

/* The whole decompressed content of a (gzip or plain) file. */
static unsigned char *slurp_gz(const char *path, size_t *len) {
    gzFile gz = gzopen(path, "rb");
    size_t cap = 1 << 20, n = 0;
    unsigned char *buf = malloc(cap);
    int r;
    CHECK(gz && buf);
    while ((r = gzread(gz, buf + n, (unsigned)(cap - n))) > 0) {
        n += (size_t)r;
        if (n == cap) {
            buf = realloc(buf, cap *= 2);
            CHECK(buf);
        }
    }
    gzclose(gz);
    *len = n;
    return buf;
}

static uint32_t rd_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void wr_be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

static void write_file(const char *path, const void *data, size_t len, int gzip) {
    if (gzip) {
        gzFile gz = gzopen(path, "wb");
        CHECK(gz);
        CHECK(gzwrite(gz, data, (unsigned)len) == (int)len);
        CHECK(gzclose(gz) == Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        CHECK(f);
        CHECK(fwrite(data, 1, len, f) == len);
        CHECK(fclose(f) == 0);
    }
}

/* --------------------------------------------------------- the parser */

static void test_parser(void) {
    unsigned char h[4 + 4 * 9] = {0, 0, 0x08, 3};
    ss_idx_header ih;
    size_t need;
    wr_be32(h + 4, 60000), wr_be32(h + 8, 28), wr_be32(h + 12, 28);
    CHECK_OK(ss__idx_header_size(&need, h, 4));
    CHECK_EQ_U64(need, 16);
    CHECK_OK(ss__idx_parse_header(&ih, h, 16));
    CHECK_EQ_U64(ih.dtype, SS_U8);
    CHECK_EQ_U64(ih.elem_size, 1);
    CHECK_EQ_U64(ih.ndim, 3);
    CHECK_EQ_U64(ih.dims[0], 60000);
    CHECK_EQ_U64(ih.item_elems, 784);
    CHECK_EQ_U64(ih.header_bytes, 16);

    /* every type byte */
    const unsigned char types[] = {0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E};
    const ss_dtype dts[] = {SS_U8, SS_I8, SS_I16, SS_I32, SS_F32, SS_F64};
    for (int k = 0; k < 6; k++) {
        h[2] = types[k];
        CHECK_OK(ss__idx_parse_header(&ih, h, 16));
        CHECK_EQ_U64(ih.dtype, dts[k]);
        CHECK_EQ_U64(ih.elem_size, ss_dtype_size(dts[k]));
    }
    h[2] = 0x08;

    /* bad inputs, each with its message */
    CHECK_RC(ss__idx_parse_header(&ih, h, 3), SS_EINPUT);
    CHECK(strstr(ss_error_message(), "truncated IDX header"));
    CHECK_RC(ss__idx_parse_header(&ih, h, 15), SS_EINPUT);
    CHECK(strstr(ss_error_message(), "15 of 16 bytes"));
    h[1] = 1;
    CHECK_RC(ss__idx_parse_header(&ih, h, 16), SS_EINPUT);
    CHECK(strstr(ss_error_message(), "magic"));
    h[1] = 0, h[2] = 0x0A;
    CHECK_RC(ss__idx_parse_header(&ih, h, 16), SS_EINPUT);
    CHECK(strstr(ss_error_message(), "type 0x0a at byte 2"));
    h[2] = 0x08, h[3] = 0;
    CHECK_RC(ss__idx_parse_header(&ih, h, 16), SS_EINPUT);
    CHECK(strstr(ss_error_message(), "at byte 3"));
    h[3] = 9;
    CHECK_RC(ss__idx_parse_header(&ih, h, sizeof h), SS_EINPUT);
    h[3] = 3;
    wr_be32(h + 12, 0);
    CHECK_RC(ss__idx_parse_header(&ih, h, 16), SS_EINPUT);
    CHECK(strstr(ss_error_message(), "dimension 2 (at byte 12) is 0"));
    /* an item of 2^32 * 2^32 elements is refused, not overflowed */
    wr_be32(h + 8, 0xFFFFFFFFu), wr_be32(h + 12, 0xFFFFFFFFu);
    CHECK_RC(ss__idx_parse_header(&ih, h, 16), SS_EINPUT);

    /* byte order: big-endian i16 and f32 to host */
    unsigned char be[6] = {0x01, 0x02, 0xFF, 0xFE, 0x80, 0x00};
    int16_t v[3];
    ss__idx_to_host(be, 3, 2);
    memcpy(v, be, sizeof v);
    CHECK(v[0] == 0x0102 && v[1] == -2 && v[2] == (int16_t)0x8000);
    unsigned char bf[4] = {0x3F, 0xC0, 0x00, 0x00}; /* 1.5f */
    float fv;
    ss__idx_to_host(bf, 1, 4);
    memcpy(&fv, bf, 4);
    CHECK(fv == 1.5f);
}

/* ---------------------------------------------------- Fashion-MNIST */

static void test_fashion_mnist(void) {
    char err[4096], args[2048];
    char store[512];
    snprintf(store, sizeof store, "%s", ss_test_path("fm_t10k.ss"));
    size_t ilen, llen;
    unsigned char *img = slurp_gz(FMNIST "t10k-images-idx3-ubyte.gz", &ilen);
    unsigned char *lab = slurp_gz(FMNIST "t10k-labels-idx1-ubyte.gz", &llen);
    /* an independent read of the IDX bytes: magic 0x00000803, 10000 x 28 x 28 */
    CHECK_EQ_U64(rd_be32(img), 0x803);
    CHECK_EQ_U64(rd_be32(img + 4), 10000);
    CHECK_EQ_U64(rd_be32(lab), 0x801);
    CHECK_EQ_U64(ilen, 16 + 10000 * 784);
    CHECK_EQ_U64(llen, 8 + 10000);
    /* known labels: the first test items are ankle boot, pullover, trouser, trouser, shirt */
    const unsigned char known[5] = {9, 2, 1, 1, 6};
    CHECK(memcmp(lab + 8, known, 5) == 0);

    snprintf(args, sizeof args,
             "convert idx " FMNIST "t10k-images-idx3-ubyte.gz --labels " FMNIST
             "t10k-labels-idx1-ubyte.gz --label-names T-shirt,Trouser,Pullover,Dress,Coat,"
             "Sandal,Shirt,Sneaker,Bag,Ankle_boot -o %s",
             store);
    CHECK_EQ_U64(run_cli(err, sizeof err, args), 0);
    /* --shard K/N: items sliced by number, the labels following */
    *strstr(args, " -o ") = '\0';
    ss_test_convert_shards(NULL, args, store, "idx-shard");

    ss_store *s;
    ss_view v;
    ss_attr a;
    CHECK_OK(ss_open(&s, store, 0));
    CHECK_EQ_U64(ss_count(s), 10000);
    uint32_t fi = ss_test_field(s, "image"), fl = ss_test_field(s, "label");
    for (uint64_t k = 0; k < 10000; k++) {
        CHECK_OK(ss_get(&v, s, (uint32_t)fi, k));
        CHECK_EQ_U64(v.length, 784);
        CHECK_EQ_U64(v.row_bytes, 1);
        CHECK_EQ_U64(v.dtype, SS_U8);
        CHECK(memcmp(v.data, img + 16 + k * 784, 784) == 0);
        CHECK_OK(ss_get(&v, s, (uint32_t)fl, k));
        CHECK_EQ_U64(*(const uint8_t *)v.data, lab[8 + k]);
    }
    CHECK_OK(ss_attr_get(&a, s, "label.names"));
    CHECK(a.type == SS_ATTR_TEXT && a.size > 9 && memcmp(a.data, "T-shirt\nTrouser\n", 16) == 0);
    CHECK_OK(ss_attr_get(&a, s, "image.shape"));
    CHECK(a.type == SS_U32 && a.size == 8);
    CHECK(((const uint32_t *)a.data)[0] == 28 && ((const uint32_t *)a.data)[1] == 28);
    ss_close(s);

    /* --layout rows: 28 steps of 28 pixels, same bytes */
    snprintf(args, sizeof args,
             "convert idx " FMNIST "t10k-images-idx3-ubyte.gz --layout rows -o %s --force", store);
    CHECK_EQ_U64(run_cli(err, sizeof err, args), 0);
    CHECK_OK(ss_open(&s, store, 0));
    CHECK_EQ_U64(ss_count(s), 10000);
    CHECK_EQ_U64(ss_field_count(s), 2); /* image + the framework's source */
    for (uint64_t k = 0; k < 10000; k += 997) {
        CHECK_OK(ss_get(&v, s, 0, k));
        CHECK_EQ_U64(v.length, 28);
        CHECK_EQ_U64(v.row_bytes, 28);
        CHECK(memcmp(v.data, img + 16 + k * 784, 784) == 0);
    }
    ss_close(s);
    free(img);
    free(lab);
}

/* ------------------------------------------------- synthetic inputs */

/* IDX file of n items of [r][c] i16 values k*1000 + i - 500 (big-endian);
 */
static size_t make_i16(unsigned char *buf, uint32_t n, uint32_t r, uint32_t c) {
    size_t pos = 16;
    buf[0] = buf[1] = 0, buf[2] = 0x0B, buf[3] = 3;
    wr_be32(buf + 4, n), wr_be32(buf + 8, r), wr_be32(buf + 12, c);
    for (uint32_t k = 0; k < n; k++)
        for (uint32_t i = 0; i < r * c; i++) {
            int16_t val = (int16_t)((int)(k * 1000 + i) - 500);
            buf[pos++] = (unsigned char)((uint16_t)val >> 8);
            buf[pos++] = (unsigned char)val;
        }
    return pos;
}

static void test_synthetic(void) {
    static unsigned char buf[16 + 6 * 3 * 5 * 2];
    unsigned char labels[8 + 6] = {0, 0, 0x08, 1, 0, 0, 0, 6, 5, 4, 3, 2, 1, 0};
    char err[4096], args[2048];
    char img[512], lab[512], store[512];
    snprintf(img, sizeof img, "%s", ss_test_path("i16.idx.gz"));
    snprintf(lab, sizeof lab, "%s", ss_test_path("lab.idx"));
    snprintf(store, sizeof store, "%s", ss_test_path("syn.ss"));
    size_t len = make_i16(buf, 6, 3, 5);
    ss_store *s;
    ss_view v;

    write_file(img, buf, len, 1);
    write_file(lab, labels, sizeof labels, 0);
    snprintf(args, sizeof args, "convert idx %s --labels %s -o %s", img, lab, store);
    CHECK_EQ_U64(run_cli(err, sizeof err, args), 0);
    CHECK_OK(ss_open(&s, store, 0));
    CHECK_EQ_U64(ss_count(s), 6);
    for (uint64_t k = 0; k < 6; k++) {
        CHECK_OK(ss_get(&v, s, 0, k));
        CHECK_EQ_U64(v.dtype, SS_I16);
        CHECK_EQ_U64(v.length, 15);
        for (int i = 0; i < 15; i++)
            CHECK(((const int16_t *)v.data)[i] == (int16_t)((int)(k * 1000) + i - 500));
        CHECK_OK(ss_get(&v, s, 1, k));
        CHECK_EQ_U64(*(const uint8_t *)v.data, 5 - k);
    }
    ss_close(s);

    /* truncated: the 5th item is cut short -> an error naming file, item and byte */
    write_file(img, buf, len - 7, 0);
    snprintf(args, sizeof args, "convert idx %s --labels %s -o %s --force", img, lab, store);
    CHECK_EQ_U64(run_cli(err, sizeof err, args), 1);
    CHECK(strstr(err, img) && strstr(err, "truncated: item 6 of 6 at byte 166"));
    /* --skip-bad: the 5 whole items are kept and the bad one is listed */
    snprintf(args, sizeof args, "convert idx %s --labels %s -o %s --force --skip-bad", img, lab,
             store);
    CHECK_EQ_U64(run_cli(err, sizeof err, args), 0);
    CHECK(strstr(err, "truncated: item 6"));
    CHECK_OK(ss_open(&s, store, 0));
    CHECK_EQ_U64(ss_count(s), 5);
    ss_close(s);

    /* a count mismatch between images and labels */
    write_file(img, buf, len, 0);
    labels[7] = 5;
    write_file(lab, labels, sizeof labels - 1, 0);
    snprintf(args, sizeof args, "convert idx %s --labels %s -o %s --force", img, lab, store);
    CHECK_EQ_U64(run_cli(err, sizeof err, args), 1);
    CHECK(strstr(err, "5 labels") && strstr(err, "has 6 images"));

    /* not an IDX file */
    write_file(img, "hello world, not idx", 20, 0);
    snprintf(args, sizeof args, "convert idx %s -o %s --force", img, store);
    CHECK_EQ_U64(run_cli(err, sizeof err, args), 1);
    CHECK(strstr(err, img) && strstr(err, "not an IDX file"));

    /* a bad option is a usage error */
    snprintf(args, sizeof args, "convert idx %s --layout diagonal -o %s --force", img, store);
    CHECK_EQ_U64(run_cli(err, sizeof err, args), 2);
}

int main(void) {
    test_parser();
    test_fashion_mnist();
    test_synthetic();
    printf("test_convert_idx: ok\n");
    return 0;
}
