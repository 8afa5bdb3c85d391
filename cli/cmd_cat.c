/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_cat.c - `seqstore cat`: print examples as text. */
#include "commands.h"
#include "utf8.h"

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
    case SS_BF16:
    case SS_F32: /* 9 significant digits read back as the same float */
        printf("%.9g", ss__cli_element_double(p, t));
        break;
    case SS_F64: /* 17 as the same double */
        printf("%.17g", ss__cli_element_double(p, t));
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

/* A text field as a JSON string: bytes (UTF-8 text) or code points. */
static void ss_json_view_text(json_t *o, const char *key, const ss_view *v) {
    size_t es = ss_dtype_size(v->dtype);
    if (v->dtype == SS_U8) {
        ss__json_set_text(o, key, v->data, (size_t)v->length);
        return;
    }
    char *buf = malloc(4 * v->length + 1);
    size_t n = 0;
    for (uint64_t i = 0; buf && i < v->length; i++) {
        uint64_t c = ss_token_id((const char *)v->data + i * es, v->dtype);
        size_t k = c <= 0x10FFFF ? ss__utf8_encode(buf + n, (uint32_t)c) : 0;
        if (!k) k = ss__utf8_encode(buf + n, 0xFFFD); /* not a code point */
        n += k;
    }
    json_object_set_new(o, key, buf ? json_stringn(buf, n) : json_null());
    free(buf);
}

/* One field of one example as JSON: text as a string, vocabulary tokens as a
 * list of strings, numbers as a list (one element per row) or a list of rows
 * (rows of several elements); a fixed field is its one row. */
static void ss_json_view(json_t *o, const ss_cat_field *f, const ss_view *v) {
    size_t es = ss_dtype_size(v->dtype);
    uint64_t per_row = v->row_bytes / es;
    const unsigned char *p = v->data;
    if (f->as_text && per_row == 1) {
        ss_json_view_text(o, f->def.name, v);
        return;
    }
    json_t *list = json_array();
    for (uint64_t r = 0; r < v->length; r++) {
        json_t *row = per_row == 1 ? list : json_array();
        for (uint64_t k = 0; k < per_row; k++, p += es) {
            uint64_t id = ss_token_id(p, v->dtype);
            if (f->vocab && id < f->vocab_size)
                json_array_append_new(row, ss__json_text(f->vocab[id], f->vocab_len[id], NULL));
            else
                json_array_append_new(row, ss__json_element(p, v->dtype));
        }
        if (row != list) json_array_append_new(list, row);
    }
    if (!f->def.sequence && json_array_size(list) == 1) { /* the row itself */
        json_t *one = json_incref(json_array_get(list, 0));
        json_decref(list);
        list = one;
    }
    json_object_set_new(o, f->def.name, list);
}

/* Split a TEXT attribute into lines (the vocabulary, the source files).
 * 0, or SS_EXIT_ERROR (printed) when out of memory. */
static int ss_split_lines(const ss_attr *a, const char ***lines, const uint32_t **lens,
                          uint64_t *count) {
    const char *p = a->data, *end = p + a->size;
    uint64_t n = 0;
    for (const char *q = p; q < end; q++) n += *q == '\n';
    if (a->size && end[-1] != '\n') n++;
    const char **l = malloc((n + 1) * sizeof *l);
    uint32_t *ln = malloc((n + 1) * sizeof *ln);
    if (!l || !ln) {
        free(l);
        free(ln);
        fprintf(stderr, "seqstore cat: attribute '%s': out of memory for %" PRIu64 " lines\n",
                a->name, n);
        return SS_EXIT_ERROR;
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
    *count = n;
    return 0;
}

/* How field f prints: as text, through a vocabulary, or as numbers. A
 * damaged attribute among those it looks at is an error (printed), never a
 * reason to print token ids instead of words. */
static int ss_cat_prepare(const ss_store *s, ss_cat_field *f, int raw) {
    char name[SS_MAX_NAME + 32];
    ss_attr a;
    int found;
    if (raw) return 0;
    snprintf(name, sizeof name, "%s.tokens", f->def.name);
    if (ss__cli_attr_find(&a, &found, "cat", s, name)) return SS_EXIT_ERROR;
    if (found && a.type == SS_ATTR_TEXT && a.size == 5 &&
        (memcmp(a.data, "bytes", 5) == 0 || memcmp(a.data, "chars", 5) == 0))
        f->as_text = 1;
    /* EDF+ annotations are UTF-8 text in a u8 field (stores without .tokens) */
    if (f->def.dtype == SS_U8 && f->def.sequence && !strcmp(f->def.name, "annotations")) {
        if (ss__cli_attr_find(&a, &found, "cat", s, "convert.converter")) return SS_EXIT_ERROR;
        if (found && a.size == 3 && !memcmp(a.data, "edf", 3)) f->as_text = 1;
    }
    snprintf(name, sizeof name, "%s.vocab", f->def.name);
    if (ss__cli_attr_find(&a, &found, "cat", s, name)) return SS_EXIT_ERROR;
    if (!found && ss__cli_attr_find(&a, &found, "cat", s, "vocab")) return SS_EXIT_ERROR;
    if (found && (a.type == SS_ATTR_TEXT || a.type == SS_ATTR_BYTES)) /* bytes: not all UTF-8 */
        return ss_split_lines(&a, &f->vocab, &f->vocab_len, &f->vocab_size);
    return 0;
}

static void ss_cat_usage(FILE *out) {
    fprintf(out, "usage: seqstore cat STORE [--field F]... [--range A:B | --split NAME] "
                 "[--with-source] [--raw] [--json]\n\n"
                 "Print one example per line. Token fields are printed through the store's\n"
                 "vocabulary (attribute FIELD.vocab or vocab), byte and character tokens as\n"
                 "text, anything else as numbers (rows separated by spaces, the elements of\n"
                 "a row by commas; f32 with 9 significant digits, f64 with 17: they read\n"
                 "back exactly). Several fields are separated by tabs.\n\n"
                 "  --field F      print field F (repeatable; default: every field but 'source')\n"
                 "  --range A:B    examples A to B-1; negative counts from the end, ends may be\n"
                 "                 open ('-10:' is the last ten); a single number is one example\n"
                 "  --split NAME   the examples of the stored split NAME (seqstore split)\n"
                 "  --with-source  start each line with FILE:LINE the example came from\n"
                 "  --raw          numbers only, no vocabulary\n"
                 "  --json         one JSON object per line (JSON Lines): \"index\", \"source\"\n"
                 "                 ({\"file\", \"line\"}, with --with-source) and one key per\n"
                 "                 field: text as a string, tokens as a list of strings,\n"
                 "                 numbers as a list (a list of rows when a row has several\n"
                 "                 elements; a fixed field is its one row). Floats carry 17\n"
                 "                 digits and read back exactly; text that is not UTF-8 gets\n"
                 "                 U+FFFD and a FIELD_base64 key with the exact bytes\n"
                 "                 (tokens that are not UTF-8: U+FFFD; --raw gives ids)\n"
                 "  --nolock       open without a lock file\n");
}

static int ss_print_source(const ss_store *s, uint64_t i, const char **files, const uint32_t *flen,
                           uint64_t nfiles) {
    uint32_t f;
    ss_view v;
    int has = ss_field_index(&f, s, "source") == 0;
    if (has && ss_get(&v, s, f, i))
        return ss__cli_store_error("cat", "example %" PRIu64 " (--with-source)", i);
    if (!has || v.row_bytes != 16) { /* no source field of this layout */
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

/* The source files, for --with-source. */
typedef struct ss_cat_sources {
    int on;
    const char **files;
    const uint32_t *flen;
    uint64_t nfiles;
} ss_cat_sources;

static int ss_json_source(json_t *o, const ss_store *s, uint64_t i, const ss_cat_sources *src) {
    uint32_t f;
    ss_view v;
    uint64_t loc[2];
    int has = ss_field_index(&f, s, "source") == 0;
    if (has && ss_get(&v, s, f, i))
        return ss__cli_store_error("cat", "example %" PRIu64 " (--with-source)", i);
    if (!has || v.row_bytes != 16) { /* no source field of this layout */
        json_object_set_new(o, "source", json_null());
        return 0;
    }
    memcpy(loc, v.data, sizeof loc);
    json_t *js = json_object();
    if (loc[0] >= 1 && loc[0] <= src->nfiles)
        ss__json_set_text(js, "file", src->files[loc[0] - 1], src->flen[loc[0] - 1]);
    else
        json_object_set_new(js, "file", json_integer((json_int_t)loc[0]));
    json_object_set_new(js, "line", json_integer((json_int_t)loc[1]));
    json_object_set_new(o, "source", js);
    return 0;
}

/* Print example i: a line of tab-separated fields, or a JSON object on one line. */
static int ss_cat_example(const ss_store *s, const ss_cat_field *fields, int nf, uint64_t i,
                          const ss_cat_sources *src, int json) {
    json_t *o = json ? json_object() : NULL;
    int rc = 0;
    if (o) json_object_set_new(o, "index", json_integer((json_int_t)i));
    if (src->on && o)
        rc = ss_json_source(o, s, i, src);
    else if (src->on)
        rc = ss_print_source(s, i, src->files, src->flen, src->nfiles);
    for (int k = 0; k < nf && !rc; k++) {
        ss_view v;
        if (ss_get(&v, s, fields[k].index, i)) {
            rc = ss__cli_store_error("cat", "example %" PRIu64, i);
        } else if (o) {
            ss_json_view(o, &fields[k], &v);
        } else {
            if (k) putchar('\t');
            ss_print_view(&fields[k], &v);
        }
    }
    if (o && !rc) json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    putchar('\n');
    return rc;
}

int ss__cmd_cat(int argc, char **argv) {
    static const struct option longopts[] = {{"field", required_argument, 0, 'f'},
                                             {"range", required_argument, 0, 'r'},
                                             {"with-source", no_argument, 0, 's'},
                                             {"raw", no_argument, 0, 'R'},
                                             {"nolock", no_argument, 0, 'n'},
                                             {"help", no_argument, 0, 'h'},
                                             {"split", required_argument, 0, 'S'},
                                             {"json", no_argument, 0, 'j'},
                                             {0, 0, 0, 0}};
    const char *names[SS_CAT_MAX_FIELDS], *range = NULL, *split = NULL;
    int nnames = 0, with_source = 0, raw = 0, json = 0, c;
    ss_selection *sel = NULL;
    unsigned flags = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:r:h", longopts, NULL)) != -1) {
        if (c == 'f') {
            if (nnames == SS_CAT_MAX_FIELDS) return ss__cli_usage_error("cat", "too many --field");
            names[nnames++] = optarg;
        } else if (c == 'r')
            range = optarg;
        else if (c == 'S')
            split = optarg;
        else if (c == 's')
            with_source = 1;
        else if (c == 'R')
            raw = 1;
        else if (c == 'j')
            json = 1;
        else if (c == 'n')
            flags |= SS_OPEN_NOLOCK;
        else if (c == 'h') {
            ss_cat_usage(stdout);
            return SS_EXIT_OK;
        } else
            return ss__cli_bad_option("cat", c, argv);
    }
    if (optind != argc - 1) return ss__cli_usage_error("cat", "expected one STORE");
    ss_store *s;
    if (ss__cli_open(&s, "cat", argv[optind], flags)) return SS_EXIT_ERROR;
    ss_cat_field fields[SS_CAT_MAX_FIELDS];
    int nf = 0, rc = SS_EXIT_OK;
    memset(fields, 0, sizeof fields);
    for (uint32_t i = 0; nnames == 0 && i < ss_field_count(s) && nf < SS_CAT_MAX_FIELDS; i++) {
        ss_field d;
        ss_field_info(&d, s, i);
        if (strcmp(d.name, "source") != 0) fields[nf++].index = i;
    }
    for (int k = 0; k < nnames; k++) {
        uint32_t idx;
        if (ss_field_index(&idx, s, names[k])) {
            rc = ss__cli_store_error("cat", "--field %s", names[k]);
            goto done;
        }
        fields[nf++].index = idx;
    }
    for (int k = 0; k < nf && rc == SS_EXIT_OK; k++) {
        ss_field_info(&fields[k].def, s, fields[k].index);
        rc = ss_cat_prepare(s, &fields[k], raw);
    }
    if (rc) goto done;
    uint64_t a = 0, b = ss_count(s);
    if (split && range) {
        rc = ss__cli_usage_error("cat", "--split and --range exclude each other");
        goto done;
    }
    if (split && ss_split_load(&sel, s, split) != 0) {
        rc = ss__cli_store_error("cat", "--split %s", split);
        goto done;
    }
    if (sel) b = ss_selection_count(sel);
    if (range && ss__cli_parse_range(range, ss_count(s), &a, &b)) {
        rc = ss__cli_usage_error("cat", "--range '%s' is not A:B within %" PRIu64 " examples",
                                 range,
                                 ss_count(s));
        goto done;
    }
    ss_cat_sources src = {with_source, NULL, NULL, 0};
    ss_attr fa;
    int found = 0;
    if (with_source && ss__cli_attr_find(&fa, &found, "cat", s, "source.files")) {
        rc = SS_EXIT_ERROR;
        goto done;
    }
    if (found && ss_split_lines(&fa, &src.files, &src.flen, &src.nfiles)) {
        rc = SS_EXIT_ERROR;
        goto done;
    }
    for (uint64_t pos = a; pos < b && rc == SS_EXIT_OK; pos++) {
        uint64_t i = pos;
        if (sel) ss_selection_index(&i, sel, pos);
        rc = ss_cat_example(s, fields, nf, i, &src, json);
    }
    free(src.files);
    free((void *)src.flen);
done:
    ss_selection_free(sel);
    for (int k = 0; k < nf; k++) {
        free(fields[k].vocab);
        free((void *)fields[k].vocab_len);
    }
    ss_close(s);
    return rc;
}
