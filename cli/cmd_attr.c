/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_attr.c - `seqstore attr`: list, read, set and remove a store's attributes. */
#include "commands.h"
#include "utf8.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const attr_usage =
    "usage: seqstore attr list STORE [--json] [--nolock]\n"
    "       seqstore attr get STORE NAME [--json] [--nolock]\n"
    "       seqstore attr set STORE NAME --text TEXT\n"
    "       seqstore attr set STORE NAME --file PATH [--type text|bytes]\n"
    "       seqstore attr set STORE NAME --values V,V,... --type DTYPE\n"
    "       seqstore attr rm STORE NAME\n"
    "\n"
    "Attributes are named values stored with the examples (spec/FORMAT.md §7):\n"
    "text (UTF-8), bytes, or a typed array (u8, i8, u16, i16, u32, i32, u64, i64,\n"
    "f32, f64).\n"
    "\n"
    "  list   name, type, size and a preview of every attribute\n"
    "  get    the value: text and bytes exactly as stored (e.g. export the\n"
    "         vocabulary: 'seqstore attr get S.ss vocab > vocab.txt'), arrays\n"
    "         one element per line (floats with enough digits to read back\n"
    "         exactly); --json: {name, type, bytes, value} as in 'info --json'\n"
    "  set    set or replace an attribute (text must be valid UTF-8)\n"
    "  rm     remove an attribute\n"
    "Names starting with 'ss.' hold splits and bucket indices: use 'seqstore split'\n"
    "and 'seqstore index' for them.\n";

typedef struct attr_args {
    const char *pos[3];
    int npos, json, nolock;
    const char *text, *file, *values, *type;
} attr_args;

static int attr_parse_args(int argc, char **argv, attr_args *a) {
    memset(a, 0, sizeof *a);
    for (int i = 2; i < argc; i++) {
        const char *s = argv[i];
        const char **val = NULL;
        if (!strcmp(s, "--json"))
            a->json = 1;
        else if (!strcmp(s, "--nolock"))
            a->nolock = 1;
        else if (!strcmp(s, "--text"))
            val = &a->text;
        else if (!strcmp(s, "--file"))
            val = &a->file;
        else if (!strcmp(s, "--values"))
            val = &a->values;
        else if (!strcmp(s, "--type"))
            val = &a->type;
        else if (s[0] == '-' && s[1] == '-')
            return ss__cli_usage_error("attr", "unknown option '%s'", s);
        else if (a->npos == 3)
            return ss__cli_usage_error("attr", "too many arguments");
        else
            a->pos[a->npos++] = s;
        if (val) {
            if (i + 1 >= argc) return ss__cli_usage_error("attr", "option '%s' needs a value", s);
            *val = argv[++i];
        }
    }
    return 0;
}

static void attr_print_elements(const ss_attr *at) {
    size_t es = ss_dtype_size((ss_dtype)at->type);
    for (uint64_t off = 0; es && off + es <= at->size; off += es) {
        const void *p = (const char *)at->data + off;
        if (at->type == SS_F32 || at->type == SS_F16 || at->type == SS_BF16)
            printf("%.9g\n", ss__cli_element_double(p, (ss_dtype)at->type));
        else if (at->type == SS_F64)
            printf("%.17g\n", ss__cli_element_double(p, SS_F64));
        else {
            json_t *j = ss__json_element(p, (ss_dtype)at->type);
            const char *t = json_is_string(j) ? json_string_value(j) : NULL;
            if (t)
                printf("%s\n", t);
            else
                printf("%" JSON_INTEGER_FORMAT "\n", json_integer_value(j));
            json_decref(j);
        }
    }
}

static int attr_list_get(const attr_args *a, int get) {
    if (a->npos != (get ? 2 : 1))
        return ss__cli_usage_error("attr", get ? "get needs STORE NAME" : "list needs STORE");
    if (a->text || a->file || a->values || a->type)
        return ss__cli_usage_error("attr", "--text, --file, --values and --type belong to 'set'");
    ss_store *s;
    if (ss__cli_open(&s, "attr", a->pos[0], a->nolock ? SS_OPEN_NOLOCK : 0)) return SS_EXIT_ERROR;
    int rc = SS_EXIT_OK;
    ss_attr at;
    if (get) {
        if (ss_attr_get(&at, s, a->pos[1]) != 0) {
            rc = ss__cli_store_error("attr", "get");
        } else if (a->json) {
            json_t *j = ss__json_attr(&at);
            ss__json_print(j);
            json_decref(j);
        } else if (at.type == SS_ATTR_TEXT || at.type == SS_ATTR_BYTES) {
            fwrite(at.data, 1, (size_t)at.size, stdout);
        } else {
            attr_print_elements(&at);
        }
    } else {
        json_t *list = a->json ? json_array() : NULL;
        for (uint64_t k = 0; k < ss_attr_count(s) && rc == SS_EXIT_OK; k++) {
            if (ss_attr_at(&at, s, k) != 0) {
                rc = ss__cli_store_error("attr", "list");
            } else if (list) {
                json_array_append_new(list, ss__json_attr(&at));
            } else {
                printf("%-24s %-5s %8" PRIu64 " byte%s", at.name, ss__cli_attr_type_name(at.type),
                       at.size, at.size == 1 ? " " : "s");
                ss__cli_print_attr_preview(&at);
                putchar('\n');
            }
        }
        if (list && rc == SS_EXIT_OK) ss__json_print(list);
        json_decref(list);
    }
    ss_close(s);
    return rc;
}

/* Parse "V,V,..." into elements of dtype t (malloc'ed in *out). */
static int attr_parse_values(const char *text, ss_dtype t, unsigned char **out, size_t *size) {
    size_t es = ss_dtype_size(t), n = 1;
    for (const char *p = text; *p; p++) n += *p == ',';
    unsigned char *buf = malloc(n * es);
    char *copy = strdup(text);
    if (!buf || !copy) {
        free(buf);
        free(copy);
        return ss__cli_store_error("attr", "out of memory");
    }
    size_t k = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save), k++) {
        int bad = 0;
        if (t == SS_F32 || t == SS_F64) {
            char *end;
            double d = strtod(tok, &end);
            bad = end == tok || *end;
            float f = (float)d;
            memcpy(buf + k * es, t == SS_F32 ? (void *)&f : (void *)&d, es);
        } else {
            int sgn = t == SS_I8 || t == SS_I16 || t == SS_I32 || t == SS_I64;
            int bits = (int)es * 8;
            int64_t v = 0;
            uint64_t u = 0;
            if (sgn) {
                int64_t lim = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
                bad = ss__parse_i64(tok, &v) || v > lim || v < -lim - 1;
                u = (uint64_t)v;
            } else {
                bad = ss__parse_u64(tok, 0, bits == 64 ? UINT64_MAX : (1ull << bits) - 1, &u);
            }
            for (size_t b = 0; b < es; b++) buf[k * es + b] = (unsigned char)(u >> (8 * b));
        }
        if (bad) {
            int rc = ss__cli_usage_error("attr", "'%s' is not a %s value", tok, ss_dtype_name(t));
            free(buf);
            free(copy);
            return rc;
        }
    }
    free(copy);
    *out = buf;
    *size = k * es;
    return 0;
}

/* The value `set` stores, from --text, --file or --values. */
static int attr_value(const attr_args *a, uint32_t *type, unsigned char **data, size_t *size) {
    if (!!a->text + !!a->file + !!a->values != 1)
        return ss__cli_usage_error("attr", "set takes one of --text, --file, --values");
    if (a->values) {
        ss_dtype t;
        if (!a->type || ss_dtype_parse(&t, a->type) != 0 || t == SS_F16 || t == SS_BF16)
            return ss__cli_usage_error("attr", "--values needs --type u8|i8|u16|i16|u32|i32|u64|"
                                              "i64|f32|f64");
        *type = (uint32_t)t;
        return attr_parse_values(a->values, t, data, size);
    }
    *type = SS_ATTR_TEXT;
    if (a->type && !strcmp(a->type, "bytes") && a->file)
        *type = SS_ATTR_BYTES;
    else if (a->type && strcmp(a->type, "text") != 0)
        return ss__cli_usage_error("attr", "--type %s does not apply to %s", a->type,
                                   a->text ? "--text" : "--file (text or bytes)");
    if (a->text) {
        *size = strlen(a->text);
        *data = (unsigned char *)strdup(a->text);
    } else {
        FILE *f = fopen(a->file, "rb");
        if (!f) return ss__cli_usage_error("attr", "cannot open '%s'", a->file);
        size_t cap = 1 << 16, n = 0;
        unsigned char *buf = malloc(cap);
        for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;)
            if ((n += r) == cap) buf = realloc(buf, cap *= 2);
        int err = ferror(f);
        fclose(f);
        if (!buf || err) {
            free(buf);
            fprintf(stderr, "seqstore attr: cannot read '%s'\n", a->file);
            return SS_EXIT_ERROR;
        }
        *data = buf;
        *size = n;
    }
    if (!*data) return ss__cli_store_error("attr", "out of memory");
    if (*type == SS_ATTR_TEXT && !ss__utf8_valid(*data, *size)) {
        free(*data);
        return ss__cli_usage_error("attr", "the text is not valid UTF-8 (store it with --file "
                                          "PATH --type bytes)");
    }
    return 0;
}

static int attr_set_rm(const attr_args *a, int set) {
    if (a->npos != 2)
        return ss__cli_usage_error("attr", set ? "set needs STORE NAME" : "rm needs STORE NAME");
    const char *name = a->pos[1];
    if (!strncmp(name, "ss.", 3))
        return ss__cli_usage_error("attr",
                                   "'%s' is reserved for splits and indices (see "
                                   "'seqstore split', 'seqstore index')",
                                   name);
    if (a->nolock || a->json)
        return ss__cli_usage_error("attr", "--nolock and --json apply to "
                                          "list and get");
    uint32_t type = 0;
    unsigned char *data = NULL;
    size_t size = 0;
    int rc;
    if (set && (rc = attr_value(a, &type, &data, &size)) != 0) return rc;
    if (!set) {
        if (a->text || a->file || a->values || a->type)
            return ss__cli_usage_error("attr", "rm takes no value options");
        char what[SS_MAX_ATTR_NAME + 32];
        snprintf(what, sizeof what, "attribute '%s'", name);
        return ss__cli_remove_attr("attr", a->pos[0], name, what);
    }
    ss_writer *w;
    ss__cli_note_store(a->pos[0], 0);
    if (ss_writer_open(&w, a->pos[0], NULL, NULL)) {
        free(data);
        return ss__cli_store_error("attr", "open '%s' for writing", a->pos[0]);
    }
    rc = ss_writer_set_attr(w, name, type, data, size);
    if (!rc) rc = ss_writer_finish(w);
    ss_writer_free(w);
    free(data);
    if (rc) return ss__cli_store_error("attr", "set '%s'", name);
    return SS_EXIT_OK;
}

int ss__cmd_attr(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(attr_usage, stdout);
            return SS_EXIT_OK;
        }
    }
    if (argc < 2) return ss__cli_usage_error("attr", "missing subcommand (list, get, set, rm)");
    attr_args a;
    int rc = attr_parse_args(argc, argv, &a);
    if (rc) return rc;
    const char *sub = argv[1];
    if (!strcmp(sub, "list")) return attr_list_get(&a, 0);
    if (!strcmp(sub, "get")) return attr_list_get(&a, 1);
    if (!strcmp(sub, "set")) return attr_set_rm(&a, 1);
    if (!strcmp(sub, "rm")) return attr_set_rm(&a, 0);
    return ss__cli_usage_error("attr", "unknown subcommand '%s'", sub);
}
