/* cmd_cat.c - `seqstore cat`: print examples as text. */
#include "commands.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SS_CAT_MAX_FIELDS 16

/* How one field is printed. */
typedef struct ss_cat_field {
    uint32_t index;
    ss_field def;
    int as_text;               /* byte or code point tokens: print the characters */
    const char **vocab;        /* token strings by id, or NULL */
    const uint32_t *vocab_len; /* their byte lengths */
    uint64_t vocab_size;
} ss_cat_field;

static double ss_half_to_double(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

static void ss_print_element(const void *p, ss_dtype t) {
    switch (t) {
    case SS_U8:
        printf("%u", *(const uint8_t *)p);
        break;
    case SS_I8:
        printf("%d", *(const int8_t *)p);
        break;
    case SS_U16:
        printf("%u", *(const uint16_t *)p);
        break;
    case SS_I16:
        printf("%d", *(const int16_t *)p);
        break;
    case SS_U32:
        printf("%" PRIu32, *(const uint32_t *)p);
        break;
    case SS_I32:
        printf("%" PRId32, *(const int32_t *)p);
        break;
    case SS_U64:
        printf("%" PRIu64, *(const uint64_t *)p);
        break;
    case SS_I64:
        printf("%" PRId64, *(const int64_t *)p);
        break;
    case SS_F16:
        printf("%g", ss_half_to_double(*(const uint16_t *)p));
        break;
    case SS_BF16: {
        uint32_t bits = (uint32_t)(*(const uint16_t *)p) << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        printf("%g", (double)f);
        break;
    }
    case SS_F32:
        printf("%g", (double)*(const float *)p);
        break;
    case SS_F64:
        printf("%g", *(const double *)p);
        break;
    }
}

static uint64_t ss_token_id(const void *p, ss_dtype t) {
    switch (t) {
    case SS_U8:
        return *(const uint8_t *)p;
    case SS_U16:
        return *(const uint16_t *)p;
    case SS_U32:
        return *(const uint32_t *)p;
    case SS_U64:
        return *(const uint64_t *)p;
    default:
        return UINT64_MAX;
    }
}

/* Print a code point or byte as UTF-8, escaping control characters. */
static void ss_print_char(uint64_t c) {
    if (c == '\n')
        printf("\\n");
    else if (c == '\t')
        printf("\\t");
    else if (c == '\\')
        printf("\\\\");
    else if (c < 32 || c == 127)
        printf("\\x%02x", (unsigned)c);
    else if (c < 0x80 || c > 0x10FFFF)
        putchar((int)(c & 0xFF));
    else if (c < 0x800)
        printf("%c%c", (int)(0xC0 | c >> 6), (int)(0x80 | (c & 63)));
    else if (c < 0x10000)
        printf("%c%c%c", (int)(0xE0 | c >> 12), (int)(0x80 | ((c >> 6) & 63)),
               (int)(0x80 | (c & 63)));
    else
        printf("%c%c%c%c", (int)(0xF0 | c >> 18), (int)(0x80 | ((c >> 12) & 63)),
               (int)(0x80 | ((c >> 6) & 63)), (int)(0x80 | (c & 63)));
}

static void ss_print_view(const ss_cat_field *f, const ss_view *v) {
    size_t es = ss_dtype_size(v->dtype);
    uint64_t per_row = v->row_bytes / es;
    const unsigned char *p = v->data;
    for (uint64_t r = 0; r < v->length; r++) {
        for (uint64_t k = 0; k < per_row; k++, p += es) {
            uint64_t id = ss_token_id(p, v->dtype);
            if (f->as_text && per_row == 1) {
                if (v->dtype == SS_U8 && id >= 0x80)
                    putchar((int)id); /* UTF-8 byte */
                else
                    ss_print_char(id);
                continue;
            }
            if (r || k) putchar(k ? ',' : ' ');
            if (f->vocab && id < f->vocab_size)
                fwrite(f->vocab[id], 1, f->vocab_len[id], stdout);
            else
                ss_print_element(p, v->dtype);
        }
    }
}

/* Split a TEXT attribute into lines (the vocabulary, the source files). */
static uint64_t ss_split_lines(const ss_attr *a, const char ***lines, const uint32_t **lens) {
    const char *p = a->data, *end = p + a->size;
    uint64_t n = 0;
    for (const char *q = p; q < end; q++) n += *q == '\n';
    if (a->size && end[-1] != '\n') n++;
    const char **l = malloc((n + 1) * sizeof *l);
    uint32_t *ln = malloc((n + 1) * sizeof *ln);
    if (!l || !ln) {
        free(l);
        free(ln);
        return 0;
    }
    for (uint64_t i = 0; i < n; i++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        l[i] = p;
        ln[i] = (uint32_t)(nl - p);
        p = nl + 1;
    }
    *lines = l;
    *lens = ln;
    return n;
}

static void ss_cat_prepare(const ss_store *s, ss_cat_field *f, int raw) {
    char name[SS_MAX_NAME + 32];
    ss_attr a;
    snprintf(name, sizeof name, "%s.tokens", f->def.name);
    if (!raw && ss_attr_get(s, name, &a) == 0 && a.type == SS_ATTR_TEXT &&
        ((a.size == 5 && memcmp(a.data, "bytes", 5) == 0) ||
         (a.size == 5 && memcmp(a.data, "chars", 5) == 0)))
        f->as_text = 1;
    snprintf(name, sizeof name, "%s.vocab", f->def.name);
    if (!raw && (ss_attr_get(s, name, &a) == 0 || ss_attr_get(s, "vocab", &a) == 0) &&
        (a.type == SS_ATTR_TEXT || a.type == SS_ATTR_BYTES)) /* bytes: not all UTF-8 */
        f->vocab_size = ss_split_lines(&a, &f->vocab, &f->vocab_len);
}

/* One bound of a range: v >= 0 as is, v < 0 counts from the end of n; in
 * unsigned arithmetic so that no value of v can overflow. -1 if outside [0, n]. */
static int ss_range_bound(int64_t v, uint64_t n, uint64_t *out) {
    uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    if (mag > n) return -1;
    *out = v < 0 ? n - mag : mag;
    return 0;
}

/* Parse "A:B" with Python-style negative and open ends against n examples,
 * or a single index A (one example). */
static int ss_parse_range(const char *text, uint64_t n, uint64_t *a, uint64_t *b) {
    char buf[64];
    const char *colon = strchr(text, ':');
    int64_t v;
    if (strlen(text) >= sizeof buf) return -1;
    if (!colon) {
        if (ss_parse_i64(text, &v) || ss_range_bound(v, n, a) || *a == n) return -1;
        *b = *a + 1;
        return 0;
    }
    memcpy(buf, text, (size_t)(colon - text));
    buf[colon - text] = 0;
    *a = 0;
    *b = n;
    if (buf[0] && (ss_parse_i64(buf, &v) || ss_range_bound(v, n, a))) return -1;
    if (colon[1] && (ss_parse_i64(colon + 1, &v) || ss_range_bound(v, n, b))) return -1;
    return *b < *a ? -1 : 0;
}

static void ss_cat_usage(FILE *out) {
    fprintf(out, "usage: seqstore cat STORE [--field F]... [--range A:B | --split NAME] "
                 "[--with-source] [--raw]\n\n"
                 "Print one example per line. Token fields are printed through the store's\n"
                 "vocabulary (attribute FIELD.vocab or vocab), byte and character tokens as\n"
                 "text, anything else as numbers (rows separated by spaces, the elements of\n"
                 "a row by commas). Several fields are separated by tabs.\n\n"
                 "  --field F      print field F (repeatable; default: every field but 'source')\n"
                 "  --range A:B    examples A to B-1; negative counts from the end, ends may be\n"
                 "                 open ('-10:' is the last ten); a single number is one example\n"
                 "  --split NAME   the examples of the stored split NAME (seqstore split)\n"
                 "  --with-source  start each line with FILE:LINE the example came from\n"
                 "  --raw          numbers only, no vocabulary\n"
                 "  --nolock       open without a lock file\n");
}

static int ss_print_source(const ss_store *s, uint64_t i, const char **files, const uint32_t *flen,
                           uint64_t nfiles) {
    int f = ss_field_index(s, "source");
    ss_view v;
    if (f < 0 || ss_get(s, (uint32_t)f, i, &v) || v.row_bytes != 16) {
        printf("?\t");
        return 0;
    }
    uint64_t src[2];
    memcpy(src, v.data, sizeof src);
    if (src[0] >= 1 && src[0] <= nfiles)
        fwrite(files[src[0] - 1], 1, flen[src[0] - 1], stdout);
    else
        printf("#%" PRIu64, src[0]);
    printf(":%" PRIu64 "\t", src[1]);
    return 0;
}

int ss_cmd_cat(int argc, char **argv) {
    static const struct option longopts[] = {
        {"field", required_argument, 0, 'f'}, {"range", required_argument, 0, 'r'},
        {"with-source", no_argument, 0, 's'}, {"raw", no_argument, 0, 'R'},
        {"nolock", no_argument, 0, 'n'},      {"help", no_argument, 0, 'h'},
        {"split", required_argument, 0, 'S'}, {0, 0, 0, 0}};
    const char *names[SS_CAT_MAX_FIELDS], *range = NULL, *split = NULL;
    int nnames = 0, with_source = 0, raw = 0, c;
    ss_selection *sel = NULL;
    unsigned flags = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:r:h", longopts, NULL)) != -1) {
        if (c == 'f') {
            if (nnames == SS_CAT_MAX_FIELDS) return ss_cli_usage_error("cat", "too many --field");
            names[nnames++] = optarg;
        } else if (c == 'r')
            range = optarg;
        else if (c == 'S')
            split = optarg;
        else if (c == 's')
            with_source = 1;
        else if (c == 'R')
            raw = 1;
        else if (c == 'n')
            flags |= SS_OPEN_NOLOCK;
        else if (c == 'h') {
            ss_cat_usage(stdout);
            return SS_EXIT_OK;
        } else
            return ss_cli_bad_option("cat", c, argv);
    }
    if (optind != argc - 1) return ss_cli_usage_error("cat", "expected one STORE");
    ss_store *s;
    if (ss_cli_open(&s, "cat", argv[optind], flags)) return SS_EXIT_ERROR;
    ss_cat_field fields[SS_CAT_MAX_FIELDS];
    int nf = 0, rc = SS_EXIT_OK;
    memset(fields, 0, sizeof fields);
    for (uint32_t i = 0; nnames == 0 && i < ss_field_count(s) && nf < SS_CAT_MAX_FIELDS; i++) {
        ss_field d;
        ss_field_info(s, i, &d);
        if (strcmp(d.name, "source") != 0) fields[nf++].index = i;
    }
    for (int k = 0; k < nnames; k++) {
        int idx = ss_field_index(s, names[k]);
        if (idx < 0) {
            rc = ss_cli_store_error("cat", "--field %s", names[k]);
            goto done;
        }
        fields[nf++].index = (uint32_t)idx;
    }
    for (int k = 0; k < nf; k++) {
        ss_field_info(s, fields[k].index, &fields[k].def);
        ss_cat_prepare(s, &fields[k], raw);
    }
    uint64_t a = 0, b = ss_count(s);
    if (split && range) {
        rc = ss_cli_usage_error("cat", "--split and --range exclude each other");
        goto done;
    }
    if (split && ss_split_load(&sel, s, split) != 0) {
        rc = ss_cli_store_error("cat", "--split %s", split);
        goto done;
    }
    if (sel) b = ss_selection_count(sel);
    if (range && ss_parse_range(range, ss_count(s), &a, &b)) {
        rc = ss_cli_usage_error("cat", "--range '%s' is not A:B within %" PRIu64 " examples", range,
                                ss_count(s));
        goto done;
    }
    const char **files = NULL;
    const uint32_t *flen = NULL;
    uint64_t nfiles = 0;
    ss_attr fa;
    if (with_source && ss_attr_get(s, "source.files", &fa) == 0)
        nfiles = ss_split_lines(&fa, &files, &flen);
    for (uint64_t pos = a; pos < b; pos++) {
        uint64_t i = pos;
        if (sel) ss_selection_index(sel, pos, &i);
        if (with_source) ss_print_source(s, i, files, flen, nfiles);
        for (int k = 0; k < nf; k++) {
            ss_view v;
            if (ss_get(s, fields[k].index, i, &v)) {
                rc = ss_cli_store_error("cat", "example %" PRIu64, i);
                break;
            }
            if (k) putchar('\t');
            ss_print_view(&fields[k], &v);
        }
        putchar('\n');
        if (rc) break;
    }
    free(files);
    free((void *)flen);
done:
    ss_selection_free(sel);
    for (int k = 0; k < nf; k++) {
        free(fields[k].vocab);
        free((void *)fields[k].vocab_len);
    }
    ss_close(s);
    return rc;
}
