/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_export_megatron.c - `seqstore export megatron STORE PREFIX`: write one field of
 * a store as a Megatron-LM / fairseq indexed dataset (PREFIX.bin +
 * PREFIX.idx, see megatron.h) that Megatron's MMapIndexedDataset reads. */
#include "commands.h"
#include "megatron.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void export_usage(FILE *out) {
    fputs("usage: seqstore export megatron STORE PREFIX [options]\n"
          "Write field F of every example as one sequence of PREFIX.bin + PREFIX.idx\n"
          "(Megatron-LM / fairseq MMIDIDX version 1).\n"
          "  --field F   the field (default 'tokens'); a sequence field of u8, i8, u16,\n"
          "              i16, i32, i64, f32 or f64 with scalar rows\n"
          "  --force     replace existing PREFIX.bin / PREFIX.idx\n"
          "Documents: the attribute 'megatron.doc_idx' when it fits the store (a store\n"
          "written by 'convert megatron'), else a new document wherever the field\n"
          "'document' changes, else one document per example.\n",
          out);
}

static const char *const CMD = "export";

/* The document indices: from the attribute, the `document` field, or one per
 * example. @return the array (count in *n), NULL on error (printed). */
static uint64_t *doc_indices(const ss_store *s, size_t *n) {
    uint64_t count = ss_count(s);
    uint32_t df = SS_FIELD_NONE;
    ss_field fi;
    if (ss_field_index(&df, s, "document") == 0 &&
        (ss_field_info(&fi, s, df) || fi.sequence || fi.dtype != SS_U64 || fi.ndim))
        df = SS_FIELD_NONE;
    ss_attr a;
    int found;
    if (ss__cli_attr_find(&a, &found, CMD, s, "megatron.doc_idx")) return NULL;
    if (found && a.type == SS_U64 && a.size >= 8 && a.size % 8 == 0) {
        const uint64_t *d = a.data;
        size_t m = (size_t)(a.size / 8), k = 0, ok = d[0] == 0;
        for (size_t j = 1; ok && j < m; j++) ok = d[j] >= d[j - 1] && d[j] <= count;
        for (uint64_t i = 0; ok && i < count && df != SS_FIELD_NONE; i++) {
            while (k + 1 < m && d[k + 1] <= i) k++;
            ss_view v;
            ok = ss_get(&v, s, df, i) == 0 && *(const uint64_t *)v.data == k;
        }
        if (ok) {
            uint64_t *out = malloc(a.size);
            if (out) memcpy(out, d, a.size), *n = m;
            return out;
        }
    }
    uint64_t *out = malloc((count + 1) * sizeof *out), prev = 0;
    if (!out) return NULL;
    size_t m = 0;
    out[m++] = 0;
    for (uint64_t i = 0; i < count; i++) {
        ss_view v;
        uint64_t d = i;
        if (df != SS_FIELD_NONE) {
            if (ss_get(&v, s, df, i)) {
                ss__cli_store_error(CMD, "example %" PRIu64, i);
                free(out);
                return NULL;
            }
            d = *(const uint64_t *)v.data;
        }
        if (i && d != prev) out[m++] = i;
        prev = d;
    }
    if (count) out[m++] = count;
    *n = m;
    return out;
}

static int write_file(const char *path, FILE *f, int rc) {
    if (fclose(f) && !rc) {
        fprintf(stderr, "seqstore export: %s: %s\n", path, strerror(errno));
        return 1;
    }
    return rc;
}

/* Write PREFIX.bin and the sizes; then PREFIX.idx. */
static int write_dataset(const ss_store *s, uint32_t field, uint8_t code, const char *prefix,
                         const uint64_t *doc, size_t ndoc) {
    char bin[4096], idx[4096];
    snprintf(bin, sizeof bin, "%s.bin", prefix);
    snprintf(idx, sizeof idx, "%s.idx", prefix);
    uint64_t count = ss_count(s), rowb = ss_field_row_bytes(s, field), ptr = 0;
    FILE *fb = fopen(bin, "wb");
    if (!fb) return fprintf(stderr, "seqstore export: %s: %s\n", bin, strerror(errno)), 1;
    FILE *fi = fopen(idx, "wb");
    if (!fi) {
        fprintf(stderr, "seqstore export: %s: %s\n", idx, strerror(errno));
        return write_file(bin, fb, 1);
    }
    uint8_t h[MG_HEADER_BYTES] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0}, b8[8];
    ss__mg_put_u64(h + 9, 1);
    h[17] = code;
    ss__mg_put_u64(h + 18, count);
    ss__mg_put_u64(h + 26, ndoc);
    int rc = fwrite(h, 1, sizeof h, fi) != sizeof h;
    for (uint64_t i = 0; i < count && !rc; i++) { /* sizes, and the .bin */
        ss_view v;
        if (ss_get(&v, s, field, i)) {
            rc = ss__cli_store_error(CMD, "example %" PRIu64, i);
            break;
        }
        if (v.length > INT32_MAX) {
            fprintf(stderr,
                    "seqstore export: example %" PRIu64 " has %" PRIu64
                    " elements; Megatron's lengths are int32\n",
                    i, v.length);
            rc = 1;
            break;
        }
        ss__mg_put_u32(b8, (uint32_t)v.length);
        rc = fwrite(b8, 1, 4, fi) != 4 || fwrite(v.data, 1, v.length * rowb, fb) != v.length * rowb;
    }
    for (uint64_t i = 0; i < count && !rc; i++) { /* pointers */
        ss__mg_put_u64(b8, ptr);
        ptr += ss_length(s, field, i) * rowb;
        rc = fwrite(b8, 1, 8, fi) != 8;
    }
    for (size_t k = 0; k < ndoc && !rc; k++) {
        ss__mg_put_u64(b8, doc[k]);
        rc = fwrite(b8, 1, 8, fi) != 8;
    }
    if (rc && !ferror(fb) && !ferror(fi))
        rc = 1; /* message already printed */
    else if (rc)
        fprintf(stderr, "seqstore export: write error: %s\n", strerror(errno));
    rc = write_file(bin, fb, rc);
    return write_file(idx, fi, rc);
}

static int export_megatron(int argc, char **argv) {
    const char *field_name = "tokens", *pos[2];
    int npos = 0, force = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            export_usage(stdout);
            return SS_EXIT_OK;
        } else if (!strcmp(argv[i], "--field")) {
            if (i + 1 >= argc) return ss__cli_usage_error(CMD, "--field needs a field name");
            field_name = argv[++i];
        } else if (!strcmp(argv[i], "--force")) {
            force = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return ss__cli_usage_error(CMD, "unknown option '%s'", argv[i]);
        } else if (npos == 2) {
            return ss__cli_usage_error(CMD, "too many arguments");
        } else {
            pos[npos++] = argv[i];
        }
    }
    if (npos != 2) return ss__cli_usage_error(CMD, "needs STORE and PREFIX");
    char path[4096];
    for (int k = 0; k < 2 && !force; k++) {
        snprintf(path, sizeof path, "%s.%s", pos[1], k ? "idx" : "bin");
        if (access(path, F_OK) == 0) {
            fprintf(stderr, "seqstore export: %s exists (--force replaces it)\n", path);
            return SS_EXIT_ERROR;
        }
    }
    ss_store *s;
    if (ss__cli_open(&s, CMD, pos[0], 0)) return SS_EXIT_ERROR;
    int rc = SS_EXIT_ERROR;
    uint32_t f = SS_FIELD_NONE;
    ss_field_index(&f, s, field_name); /* stays SS_FIELD_NONE when there is none */
    ss_field fi;
    uint8_t code = 0;
    uint64_t *doc = NULL;
    size_t ndoc = 0;
    if (f == SS_FIELD_NONE) {
        fprintf(stderr, "seqstore export: %s: no field '%s'\n", pos[0], field_name);
    } else if (ss_field_info(&fi, s, f) || !fi.sequence || fi.ndim) {
        fprintf(stderr, "seqstore export: field '%s' is not a sequence of scalars\n", field_name);
    } else if (!(code = ss__mg_code_of_dtype(fi.dtype))) {
        fprintf(stderr,
                "seqstore export: field '%s' is %s: Megatron has u8, i8, u16, i16, "
                "i32, i64, f32 and f64\n",
                field_name, ss_dtype_name(fi.dtype));
    } else if (!(doc = doc_indices(s, &ndoc))) {
        fprintf(stderr, "seqstore export: cannot build the document indices\n");
    } else {
        rc = write_dataset(s, f, code, pos[1], doc, ndoc);
    }
    free(doc);
    ss_close(s);
    return rc;
}

int ss__cmd_export_megatron(int argc, char **argv) {
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            export_usage(stdout);
            return SS_EXIT_OK;
        }
    return export_megatron(argc, argv);
}
