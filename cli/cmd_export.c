/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_export.c - `seqstore export`: a store's examples as JSON Lines or .npy files. */
#include "commands.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const export_usage =
    "usage: seqstore export STORE --format jsonl|npy -o OUT [--force] [--field F]...\n"
    "       seqstore export megatron STORE PREFIX [--field F] [--force]\n"
    "                       [--range A:B | --split NAME] [--nolock]\n"
    "\n"
    "  jsonl  OUT is a file ('-': stdout): one JSON object per example, as\n"
    "         'seqstore cat --json' prints them\n"
    "  npy    OUT is a directory: OUT/FIELD/NNNNNNNNNN.npy, one file per example\n"
    "         (NNNNNNNNNN its index, zero-padded), little-endian, C order, shape\n"
    "         (T, row shape...) for a sequence field and the row shape for a fixed\n"
    "         one; 'seqstore convert npy OUT/FIELD/*.npy' reads a sequence field\n"
    "         back (f16/bf16: <f2 and raw 16-bit words <u2)\n"
    "  --force    replace an existing OUT: the jsonl file, or in an npy OUT the\n"
    "             NNNNNNNNNN.npy files of the exported fields (without it, an existing\n"
    "             file or a non-empty directory is refused, exit 1)\n"
    "  --field F  export field F (repeatable; default: every field but 'source')\n"
    "  --range, --split, --nolock as for 'seqstore cat'\n";

/* The .npy descr of a dtype (little-endian). */
static const char *npy_descr(ss_dtype t) {
    static const char *const d[] = {
        [SS_U8] = "|u1",  [SS_I8] = "|i1",   [SS_U16] = "<u2", [SS_I16] = "<i2",
        [SS_U32] = "<u4", [SS_I32] = "<i4",  [SS_U64] = "<u8", [SS_I64] = "<i8",
        [SS_F16] = "<f2", [SS_BF16] = "<u2", [SS_F32] = "<f4", [SS_F64] = "<f8"};
    return (unsigned)t < sizeof d / sizeof d[0] && d[t] ? d[t] : NULL;
}

/* Write one .npy (version 1.0): the header padded so the data starts at a
 * multiple of 64 bytes, then the bytes as stored (seqstore is little-endian). */
static int npy_write(const char *path, const ss_field *f, const ss_view *v) {
    char shape[160], head[256];
    uint64_t dims[SS_MAX_DIMS + 1];
    uint32_t nd = 0;
    if (f->sequence) dims[nd++] = v->length;
    for (uint32_t d = 0; d < f->ndim; d++) dims[nd++] = f->dims[d];
    size_t n = 0; /* a Python tuple: (), (n,), (a, b) */
    for (uint32_t d = 0; d < nd; d++)
        n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%" PRIu64, d ? ", " : "", dims[d]);
    if (nd == 1) snprintf(shape + n, sizeof shape - n, ",");
    if (nd == 0) shape[0] = 0;
    int hl = snprintf(head, sizeof head, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                      npy_descr(f->dtype), shape);
    size_t total = (size_t)(10 + hl + 1 + 63) / 64 * 64; /* magic+version+len, header, '\n' */
    memset(head + hl, ' ', total - 10 - (size_t)hl - 1);
    head[total - 10 - 1] = '\n';
    unsigned char pre[10] = {0x93,
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             1,
                             0,
                             (unsigned char)((total - 10) & 0xFF),
                             (unsigned char)((total - 10) >> 8)};
    FILE *out = fopen(path, "wb");
    if (!out) return -1;
    size_t bytes = (size_t)(v->length * v->row_bytes);
    int ok = fwrite(pre, 1, 10, out) == 10 && fwrite(head, 1, total - 10, out) == total - 10 &&
             fwrite(v->data, 1, bytes, out) == bytes;
    return (fclose(out) == 0 && ok) ? 0 : -1;
}

typedef struct export_args {
    const char *store, *format, *out, *range, *split;
    const char *fields[64];
    int nfields, nolock, force;
} export_args;

static int export_parse(int argc, char **argv, export_args *a) {
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], **val = NULL;
        if (!strcmp(s, "--format"))
            val = &a->format;
        else if (!strcmp(s, "-o") || !strcmp(s, "--output"))
            val = &a->out;
        else if (!strcmp(s, "--range"))
            val = &a->range;
        else if (!strcmp(s, "--split"))
            val = &a->split;
        else if (!strcmp(s, "--nolock"))
            a->nolock = 1;
        else if (!strcmp(s, "--force"))
            a->force = 1;
        else if (!strcmp(s, "--field")) {
            if (a->nfields == 64) return ss__cli_usage_error("export", "too many --field");
            val = &a->fields[a->nfields++];
        } else if (s[0] == '-' && s[1])
            return ss__cli_usage_error("export", "unknown option '%s'", s);
        else if (a->store)
            return ss__cli_usage_error("export", "expected one STORE");
        else
            a->store = s;
        if (val) {
            if (i + 1 >= argc) return ss__cli_usage_error("export", "option '%s' needs a value", s);
            *val = argv[++i];
        }
    }
    if (!a->store || !a->format || !a->out)
        return ss__cli_usage_error("export", "STORE, --format and -o OUT are required");
    if (strcmp(a->format, "jsonl") && strcmp(a->format, "npy"))
        return ss__cli_usage_error("export", "--format is jsonl or npy, not '%s'", a->format);
    return 0;
}

/* Without --force, OUT must not hold anything the export would replace: no
 * jsonl file there, and for npy no directory with entries in it (an empty
 * one is fine). Prints the refusal and returns SS_EXIT_ERROR. */
static int refuse_existing_out(const export_args *a) {
    struct stat st;
    if (a->force || !strcmp(a->out, "-") || stat(a->out, &st) != 0) return 0;
    if (S_ISDIR(st.st_mode) && strcmp(a->format, "npy") == 0) {
        DIR *d = opendir(a->out);
        int empty = 1;
        for (struct dirent *e; d && empty && (e = readdir(d));)
            empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
        if (d) closedir(d);
        if (empty) return 0;
    } else if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        return 0; /* a device or a pipe (/dev/null, a FIFO): nothing to lose */
    }
    fprintf(stderr, "seqstore export: %s exists (use --force to replace it)\n", a->out);
    return SS_EXIT_ERROR;
}

/* --force into an npy OUT: remove the files of a previous export of this
 * field (names of 10 digits and .npy only), so that OUT/FIELD/ holds this
 * export's examples and no others. */
static int clear_npy_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    char path[4200];
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n != 14 || strcmp(e->d_name + 10, ".npy") != 0 ||
            strspn(e->d_name, "0123456789") != 10)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0) {
            fprintf(stderr, "seqstore export: cannot remove '%s': %s\n", path, strerror(errno));
            rc = SS_EXIT_ERROR;
        }
    }
    closedir(d);
    return rc;
}

/* jsonl: exactly `seqstore cat --json` with the same selection, into OUT. */
static int export_jsonl(const export_args *a) {
    char *args[64 * 2 + 12];
    int n = 0;
    args[n++] = "cat";
    args[n++] = "--json";
    for (int k = 0; k < a->nfields; k++) args[n++] = "--field", args[n++] = (char *)a->fields[k];
    if (a->range) args[n++] = "--range", args[n++] = (char *)a->range;
    if (a->split) args[n++] = "--split", args[n++] = (char *)a->split;
    if (a->nolock) args[n++] = "--nolock";
    args[n++] = (char *)a->store;
    args[n] = NULL;
    if (strcmp(a->out, "-") != 0 && !freopen(a->out, "w", stdout)) {
        fprintf(stderr, "seqstore export: cannot write '%s': %s\n", a->out, strerror(errno));
        return SS_EXIT_ERROR;
    }
    int rc = ss__cmd_cat(n, args);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "seqstore export: cannot write '%s'\n", a->out);
        return SS_EXIT_ERROR;
    }
    return rc;
}

static int export_field_npy(const ss_store *s, const export_args *a, uint32_t f,
                            const ss_selection *sel, uint64_t lo, uint64_t hi) {
    ss_field def;
    ss_field_info(&def, s, f);
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/%s", a->out, def.name);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "seqstore export: cannot create '%s': %s\n", dir, strerror(errno));
        return SS_EXIT_ERROR;
    }
    if (a->force && clear_npy_dir(dir)) return SS_EXIT_ERROR;
    for (uint64_t pos = lo; pos < hi; pos++) {
        uint64_t i = pos;
        ss_view v;
        if (sel) ss_selection_index(&i, sel, pos);
        if (ss_get(&v, s, f, i)) return ss__cli_store_error("export", "example %" PRIu64, i);
        snprintf(path, sizeof path, "%s/%010" PRIu64 ".npy", dir, i);
        if (npy_write(path, &def, &v)) {
            fprintf(stderr, "seqstore export: cannot write '%s': %s\n", path, strerror(errno));
            return SS_EXIT_ERROR;
        }
    }
    return SS_EXIT_OK;
}

static int export_npy(const export_args *a) {
    if (mkdir(a->out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "seqstore export: cannot create '%s': %s\n", a->out, strerror(errno));
        return SS_EXIT_ERROR;
    }
    ss_store *s;
    if (ss__cli_open(&s, "export", a->store, a->nolock ? SS_OPEN_NOLOCK : 0)) return SS_EXIT_ERROR;
    ss_selection *sel = NULL;
    uint64_t lo = 0, hi = ss_count(s);
    int rc = SS_EXIT_OK;
    if (a->split && a->range)
        rc = ss__cli_usage_error("export", "--split and --range exclude each other");
    else if (a->split && ss_split_load(&sel, s, a->split))
        rc = ss__cli_store_error("export", "--split %s", a->split);
    else if (a->range && ss__cli_parse_range(a->range, ss_count(s), &lo, &hi))
        rc = ss__cli_usage_error("export", "--range '%s' is not A:B within %" PRIu64 " examples",
                                 a->range, ss_count(s));
    if (sel) hi = ss_selection_count(sel);
    for (int k = 0; rc == SS_EXIT_OK && k < a->nfields; k++)
        if (ss_field_index(&(uint32_t){0}, s, a->fields[k]))
            rc = ss__cli_store_error("export", "--field %s", a->fields[k]);
    for (uint32_t f = 0; rc == SS_EXIT_OK && f < ss_field_count(s); f++) {
        ss_field def;
        ss_field_info(&def, s, f);
        int want = a->nfields == 0 && strcmp(def.name, "source") != 0;
        for (int k = 0; k < a->nfields; k++) want |= !strcmp(a->fields[k], def.name);
        if (want) rc = export_field_npy(s, a, f, sel, lo, hi);
    }
    ss_selection_free(sel);
    ss_close(s);
    return rc;
}

int ss__cmd_export(int argc, char **argv) {
    /* `export megatron STORE PREFIX` writes the pair of files Megatron reads */
    if (argc >= 2 && !strcmp(argv[1], "megatron")) return ss__cmd_export_megatron(argc, argv);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(export_usage, stdout);
            return SS_EXIT_OK;
        }
    }
    export_args a;
    int rc = export_parse(argc, argv, &a);
    if (rc || (rc = refuse_existing_out(&a))) return rc;
    return strcmp(a.format, "jsonl") == 0 ? export_jsonl(&a) : export_npy(&a);
}
